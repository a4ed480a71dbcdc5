/* C unit tests for engine/core, checked against brute force. TAP output:
 * one "ok N - name" or "not ok N - name" line per test. */
#include "core/alloc.h"
#include "core/array.h"
#include "core/digest.h"
#include "core/handle.h"
#include "core/hashmap.h"
#include "core/jobs.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_no;
static int failures;

static void report(const char *name, int ok)
{
    printf("%s %d - %s\n", ok ? "ok" : "not ok", ++test_no, name);
    failures += !ok;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Random inserts, overwrites and removals on a small key space, compared
 * after every operation with a plain array that maps key -> value. */
static int test_hashmap(void)
{
    enum { KEYS = 512 };
    uint32_t model[KEYS];
    for (int i = 0; i < KEYS; i++)
        model[i] = Q_HASHMAP_EMPTY;
    q_hashmap m = {0};
    int ok = 1;
    for (int step = 0; step < 200000 && ok; step++) {
        uint64_t key = rng() % KEYS;
        uint64_t stored = key * 0x10000000001ull; /* spread bits like chunk keys */
        if (rng() % 3) {
            uint32_t v = (uint32_t)(rng() % 1000000);
            ok &= q_hashmap_set(&m, stored, v);
            model[key] = v;
        } else {
            int had = model[key] != Q_HASHMAP_EMPTY;
            ok &= q_hashmap_remove(&m, stored) == had;
            model[key] = Q_HASHMAP_EMPTY;
        }
        if (step % 997 == 0) {
            uint32_t count = 0;
            for (int i = 0; i < KEYS; i++) {
                ok &= q_hashmap_get(&m, (uint64_t)i * 0x10000000001ull) == model[i];
                count += model[i] != Q_HASHMAP_EMPTY;
            }
            ok &= m.count == count;
        }
    }
    q_hashmap_free(&m);
    return ok;
}

static int test_handles(void)
{
    q_handle_pool pool = {0};
    q_handle hs[1000];
    int ok = 1;
    for (int i = 0; i < 1000; i++) {
        hs[i] = q_handle_alloc(&pool);
        ok &= !q_handle_is_null(hs[i]) && q_handle_valid(&pool, hs[i]);
    }
    for (int i = 0; i < 1000; i += 2)
        ok &= q_handle_release(&pool, hs[i]);
    for (int i = 0; i < 1000; i++)
        ok &= q_handle_valid(&pool, hs[i]) == (i % 2 == 1);
    ok &= !q_handle_release(&pool, hs[0]); /* double release refused */
    /* Reused slots get new generations: stale handles stay invalid. */
    for (int i = 0; i < 500; i++) {
        q_handle h = q_handle_alloc(&pool);
        ok &= q_handle_valid(&pool, h);
        for (int j = 0; j < 1000; j += 2)
            ok &= !q_handle_equal(h, hs[j]);
    }
    for (int i = 0; i < 1000; i += 2)
        ok &= !q_handle_valid(&pool, hs[i]);
    ok &= !q_handle_valid(&pool, Q_NULL_HANDLE);
    ok &= pool.live == 1000;
    q_handle_pool_free(&pool);
    return ok;
}

typedef struct sum_ctx {
    uint64_t out[10000];
    atomic_int calls;
} sum_ctx;

static void square(void *ctx, int i)
{
    sum_ctx *c = ctx;
    c->out[i] = (uint64_t)i * (uint64_t)i;
    atomic_fetch_add(&c->calls, 1);
}

static int test_jobs(void)
{
    int ok = 1;
    for (int workers = 0; workers <= 3; workers++) {
        q_jobs *j = q_jobs_create(workers);
        for (int round = 0; round < 50; round++) {
            static sum_ctx c;
            memset(&c, 0, sizeof c);
            int n = 1 + (int)(rng() % 10000);
            q_jobs_for(j, n, square, &c);
            ok &= atomic_load(&c.calls) == n;
            for (int i = 0; i < n; i++)
                ok &= c.out[i] == (uint64_t)i * (uint64_t)i;
        }
        q_jobs_destroy(j);
    }
    return ok;
}

static int test_array(void)
{
    Q_ARRAY(int) a = {0};
    int ok = 1;
    for (int i = 0; i < 100000; i++)
        ok &= q_array_push(&a, i * 3);
    ok &= a.count == 100000;
    for (int i = 0; i < 100000; i++)
        ok &= a.data[i] == i * 3;
    q_array_free(&a);
    ok &= a.data == NULL && a.count == 0;
    return ok;
}

static int test_digest(void)
{
    unsigned char buf[1000];
    for (int i = 0; i < 1000; i++)
        buf[i] = (unsigned char)rng();
    uint64_t whole = q_digest_of(buf, sizeof buf, 0);
    q_digest d;
    q_digest_init(&d, 0);
    q_digest_bytes(&d, buf, 400);
    q_digest_bytes(&d, buf + 400, 600);
    int ok = q_digest_final(&d) == whole;
    /* every single-bit change alters the digest */
    for (int i = 0; i < 1000 * 8; i += 7) {
        buf[i / 8] ^= (unsigned char)(1u << (i % 8));
        ok &= q_digest_of(buf, sizeof buf, 0) != whole;
        buf[i / 8] ^= (unsigned char)(1u << (i % 8));
    }
    ok &= q_digest_of(buf, 999, 0) != q_digest_of(buf, 1000, 0);
    ok &= q_digest_of(buf, 1000, 1) != whole;
    return ok;
}

static int test_alloc_accounting(void)
{
    size_t before = q_alloc_live_bytes();
    void *p = q_alloc(1234);
    int ok = q_alloc_live_bytes() == before + 1234;
    p = q_realloc(p, 1234, 99);
    ok &= q_alloc_live_bytes() == before + 99;
    q_free(p, 99);
    ok &= q_alloc_live_bytes() == before;
    ok &= q_calloc(SIZE_MAX / 2, 4) == NULL; /* overflow refused */
    return ok;
}

/* A team: every thread runs once, with a distinct index; after a
 * q_team_sync each thread sees what all the others wrote before it. Each
 * round, every thread writes its slot, syncs, checks that every slot holds
 * the round, and syncs again before the next round overwrites them. */
typedef struct team_check {
    int slots[8];
    int seen[8];
    int bad[8]; /* per thread: no shared counter */
} team_check;

static void team_rounds(void *ctx, q_team *t)
{
    team_check *c = ctx;
    int me = q_team_thread(t), n = q_team_size(t);
    c->seen[me]++;
    for (int round = 1; round <= 200; round++) {
        c->slots[me] = round;
        q_team_sync(t);
        for (int k = 0; k < n; k++)
            if (c->slots[k] != round)
                c->bad[me]++;
        q_team_sync(t);
    }
}

static int test_team(void)
{
    int ok = 1;
    for (int workers = 0; workers <= 3; workers++) {
        q_jobs *j = q_jobs_create(workers);
        for (int rep = 0; rep < 3; rep++) {
            team_check c;
            memset(&c, 0, sizeof c);
            q_jobs_team(j, team_rounds, &c);
            int n = q_jobs_threads(j);
            for (int k = 0; k < n; k++)
                ok &= c.seen[k] == 1 && c.bad[k] == 0;
            for (int k = n; k < 8; k++)
                ok &= c.seen[k] == 0;
        }
        q_jobs_destroy(j);
    }
    team_check c;
    memset(&c, 0, sizeof c);
    q_jobs_team(NULL, team_rounds, &c);
    return ok && c.seen[0] == 1 && c.bad[0] == 0;
}

int main(void)
{
    report("hashmap matches a brute-force model under random operations", test_hashmap());
    report("handles detect stale and double-released ids", test_handles());
    report("jobs run every iteration exactly once for 0..3 workers", test_jobs());
    report("a team runs once on every thread and its barrier orders writes, 0..3 workers", test_team());
    report("arrays grow and keep their contents", test_array());
    report("digest is streaming-invariant and bit-sensitive", test_digest());
    report("allocation hooks account live bytes", test_alloc_accounting());
    printf("1..%d\n", test_no);
    return failures ? 1 : 0;
}
