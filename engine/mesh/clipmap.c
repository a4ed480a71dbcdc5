/* Clipmap level selection and background rebuilds: see clipmap.h. */
#include "mesh/clipmap.h"

#include "core/alloc.h"
#include "core/jobs.h"
#include "voxel/material.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* What a mesh is built for: levels of the chunks [c0 - 1, c1] of the box
 * (the chunks octree.c asks about), in x-fastest order. */
typedef struct request {
    q_box box;
    float scale;
    uint64_t version; /* of the world's terrain */
    int8_t *levels;
    size_t nlevels, cap;
    int32_t lo[3], n[3];
} request;

typedef struct q_clipmap_state {
    q_lod_cache *cache;
    q_terrain *copy;     /* the worker's terrain: the world's at copy_version */
    bool copy_valid;
    uint64_t copy_version;
    q_voxel *chunk_buf;  /* one chunk, for copying */
    uint8_t *mat_buf, *occ_buf;
    /* a whole copy in progress, a few chunks per call: the chunks t had at
     * version copy_from, copied as they are when their turn comes; edits
     * after copy_from are replayed from the change log at the end */
    bool copying;
    int32_t (*copy_list)[3];
    size_t copy_n, copy_pos;
    uint64_t copy_from;

    request want; /* of the last q_clipmap_update */
    request job;  /* of the rebuild running or last run */
    bool has_job, running;
    atomic_bool done;
    pthread_t thread;
    q_lod_result job_out;
    q_status job_st;
    char job_err[256];

    request pub; /* of the published mesh */
    q_mesh *mesh;
    uint64_t serial;
} q_clipmap_state;

static void request_free(request *r)
{
    if (r->levels)
        q_free(r->levels, r->cap);
    memset(r, 0, sizeof *r);
}

static bool request_copy(request *dst, const request *src)
{
    if (dst->cap < src->nlevels) {
        int8_t *l = q_alloc(src->nlevels);
        if (!l)
            return false;
        if (dst->levels)
            q_free(dst->levels, dst->cap);
        dst->levels = l;
        dst->cap = src->nlevels;
    }
    int8_t *keep = dst->levels;
    size_t cap = dst->cap;
    *dst = *src;
    dst->levels = keep;
    dst->cap = cap;
    if (src->nlevels)
        memcpy(dst->levels, src->levels, src->nlevels);
    return true;
}

static bool request_equal(const request *a, const request *b)
{
    return memcmp(&a->box, &b->box, sizeof a->box) == 0 && a->scale == b->scale && a->version == b->version &&
           a->nlevels == b->nlevels && memcmp(a->lo, b->lo, sizeof a->lo) == 0 &&
           (a->nlevels == 0 || memcmp(a->levels, b->levels, a->nlevels) == 0);
}

q_clipmap *q_clipmap_create(void)
{
    q_clipmap *c = q_calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->state = q_calloc(1, sizeof *c->state);
    if (c->state) {
        c->state->cache = q_lod_cache_create();
        atomic_init(&c->state->done, false);
    }
    if (!c->state || !c->state->cache) {
        q_clipmap_destroy(c);
        return NULL;
    }
    for (int i = 0; i < Q_LOD_MAX_LEVEL; i++)
        c->distances[i] = 48.0 * (1 << i);
    return c;
}

void q_clipmap_destroy(q_clipmap *c)
{
    if (!c)
        return;
    q_clipmap_state *s = c->state;
    if (s) {
        if (s->running) {
            q_lod_cache_cancel(s->cache);
            pthread_join(s->thread, NULL);
            q_mesh_destroy(s->job_out.mesh);
        }
        q_lod_cache_destroy(s->cache);
        q_terrain_destroy(s->copy);
        q_free(s->copy_list, s->copy_n * sizeof *s->copy_list);
        q_free(s->chunk_buf, Q_CHUNK_VOXELS * sizeof(q_voxel));
        q_free(s->mat_buf, Q_CHUNK_VOXELS);
        q_free(s->occ_buf, Q_CHUNK_VOXELS);
        request_free(&s->want);
        request_free(&s->job);
        request_free(&s->pub);
        q_mesh_destroy(s->mesh);
        q_free(s, sizeof *s);
    }
    q_free(c, sizeof *c);
}

void q_clipmap_set_viewer(q_clipmap *c, const double voxel_pos[3])
{
    memcpy(c->viewer, voxel_pos, sizeof c->viewer);
    c->has_viewer = true;
}

bool q_clipmap_set_distances(q_clipmap *c, const double d[Q_LOD_MAX_LEVEL])
{
    for (int i = 0; i < Q_LOD_MAX_LEVEL; i++)
        if (!(isfinite(d[i]) && d[i] > 0 && (i == 0 || d[i] > d[i - 1])))
            return false;
    memcpy(c->distances, d, sizeof c->distances);
    return true;
}

int q_clipmap_level(const q_clipmap *c, const int32_t ch[3])
{
    if (!c->has_viewer)
        return 0;
    double d2 = 0;
    for (int a = 0; a < 3; a++) {
        double lo = (double)ch[a] * Q_LOD_CHUNK, hi = lo + Q_LOD_CHUNK, v = c->viewer[a];
        double e = v < lo ? lo - v : v > hi ? v - hi : 0;
        d2 += e * e;
    }
    double d = sqrt(d2);
    int L = 0;
    while (L < Q_LOD_MAX_LEVEL && d >= c->distances[L])
        L++;
    return L;
}

static int32_t chunk_of(int32_t v)
{
    return (int32_t)(v >= 0 ? v / Q_LOD_CHUNK : -((-(int64_t)v + Q_LOD_CHUNK - 1) / Q_LOD_CHUNK));
}

/* Fills s->want for box. An empty or out-of-limit box gets no levels (the
 * build reports the box). */
static bool make_request(q_clipmap *c, const q_terrain *t, q_box box, float scale)
{
    request *r = &c->state->want;
    r->box = box;
    r->scale = scale;
    r->version = q_terrain_version(t);
    r->nlevels = 0;
    memset(r->lo, 0, sizeof r->lo);
    memset(r->n, 0, sizeof r->n);
    uint64_t n = 1;
    for (int a = 0; a < 3; a++) {
        if (box.min[a] >= box.max[a] || box.min[a] < -Q_TERRAIN_LIMIT + 2 || box.max[a] > Q_TERRAIN_LIMIT - 2)
            return true;
        r->lo[a] = chunk_of(box.min[a]) - 1;
        r->n[a] = chunk_of(box.max[a] - 1) - r->lo[a] + 1;
        n *= (uint64_t)r->n[a];
    }
    if (n > 8 * (uint64_t)Q_LOD_MAX_CHUNKS)
        return true; /* refused by the build anyway */
    if (r->cap < n) {
        int8_t *l = q_alloc((size_t)n);
        if (!l)
            return false;
        if (r->levels)
            q_free(r->levels, r->cap);
        r->levels = l;
        r->cap = (size_t)n;
    }
    r->nlevels = (size_t)n;
    size_t i = 0;
    for (int32_t z = 0; z < r->n[2]; z++)
        for (int32_t y = 0; y < r->n[1]; y++)
            for (int32_t x = 0; x < r->n[0]; x++) {
                int32_t ch[3] = {r->lo[0] + x, r->lo[1] + y, r->lo[2] + z};
                r->levels[i++] = (int8_t)q_clipmap_level(c, ch);
            }
    return true;
}

static int job_level(void *ud, const int32_t ch[3])
{
    const request *r = ud;
    size_t i = 0;
    for (int a = 2; a >= 0; a--) {
        int32_t d = ch[a] - r->lo[a];
        if (d < 0 || d >= r->n[a])
            return 0;
        i = i * (size_t)r->n[a] + (size_t)d;
    }
    return r->levels[i];
}

/* ---- the worker's copy of the terrain ---- */

static q_status copy_chunk(q_clipmap_state *s, const q_terrain *t, int32_t cx, int32_t cy, int32_t cz)
{
    if (!q_terrain_has_chunk(t, cx, cy, cz)) {
        if (q_terrain_has_chunk(s->copy, cx, cy, cz))
            return q_terrain_set_chunk(s->copy, cx, cy, cz, NULL, (q_voxel){Q_MATERIAL_AIR, 0});
        return Q_OK;
    }
    q_box b = {{cx * Q_CHUNK_SIZE, cy * Q_CHUNK_SIZE, cz * Q_CHUNK_SIZE}, {0, 0, 0}};
    for (int a = 0; a < 3; a++)
        b.max[a] = b.min[a] + Q_CHUNK_SIZE;
    char err[64];
    q_status st = q_terrain_read(t, b, s->mat_buf, s->occ_buf, err, sizeof err);
    if (st != Q_OK)
        return st;
    bool uniform = true;
    for (int i = 0; i < Q_CHUNK_VOXELS; i++) {
        s->chunk_buf[i] = (q_voxel){s->mat_buf[i], s->occ_buf[i]};
        uniform = uniform && s->mat_buf[i] == s->mat_buf[0] && s->occ_buf[i] == s->occ_buf[0];
    }
    return q_terrain_set_chunk(s->copy, cx, cy, cz, uniform ? NULL : s->chunk_buf, s->chunk_buf[0]);
}

typedef struct change_list {
    q_box *boxes;
    size_t n, cap;
    uint64_t chunks; /* chunks the boxes cover, counted with repeats */
    bool failed;
} change_list;

static void collect_change(void *ud, q_box b, uint64_t version)
{
    (void)version;
    change_list *l = ud;
    if (l->failed)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        q_box *nb = q_realloc(l->boxes, l->cap * sizeof(q_box), cap * sizeof(q_box));
        if (!nb) {
            l->failed = true;
            return;
        }
        l->boxes = nb;
        l->cap = cap;
    }
    l->boxes[l->n++] = b;
    uint64_t k = 1;
    for (int a = 0; a < 3; a++)
        k *= (uint64_t)((int64_t)chunk_of(b.max[a] - 1) - chunk_of(b.min[a]) + 1);
    l->chunks += k;
}

/* Copies the voxels of box from t: chunk by chunk, so each read fits the
 * one-chunk buffers. */
static q_status copy_box(q_clipmap_state *s, const q_terrain *t, q_box b)
{
    char err[64];
    for (int32_t cz = chunk_of(b.min[2]); cz <= chunk_of(b.max[2] - 1); cz++)
        for (int32_t cy = chunk_of(b.min[1]); cy <= chunk_of(b.max[1] - 1); cy++)
            for (int32_t cx = chunk_of(b.min[0]); cx <= chunk_of(b.max[0] - 1); cx++) {
                if (!q_terrain_has_chunk(t, cx, cy, cz) && !q_terrain_has_chunk(s->copy, cx, cy, cz))
                    continue; /* air in both */
                int32_t ch[3] = {cx, cy, cz};
                q_box sub;
                for (int a = 0; a < 3; a++) {
                    int32_t lo = ch[a] * Q_CHUNK_SIZE, hi = lo + Q_CHUNK_SIZE;
                    sub.min[a] = b.min[a] > lo ? b.min[a] : lo;
                    sub.max[a] = b.max[a] < hi ? b.max[a] : hi;
                }
                q_status st = q_terrain_read(t, sub, s->mat_buf, s->occ_buf, err, sizeof err);
                if (st == Q_OK)
                    st = q_terrain_write(s->copy, sub, s->mat_buf, s->occ_buf, err, sizeof err);
                if (st != Q_OK)
                    return st;
            }
    return Q_OK;
}

/* Past this many chunks an update copies the whole terrain again rather
 * than the edited boxes. */
#define COPY_ALL_CHUNKS 512
/* A call that does not wait copies at most this many chunks of a whole copy,
 * and stops after COPY_SECONDS (a dense chunk is 64 KB of fresh pages: from
 * 0.05 to 1 ms, depending on how dear page faults are). */
#define COPY_BUDGET 16
#define COPY_SECONDS 0.002

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Brings the copy to t's version and invalidates the cache where it changed.
 * *ready is false while a whole copy is still going (budget chunks per call;
 * SIZE_MAX finishes it). */
static q_status sync_copy(q_clipmap_state *s, const q_terrain *t, size_t budget, bool *ready)
{
    *ready = false;
    if (!s->copy) {
        s->copy = q_terrain_create(NULL);
        s->chunk_buf = q_alloc(Q_CHUNK_VOXELS * sizeof(q_voxel));
        s->mat_buf = q_alloc(Q_CHUNK_VOXELS);
        s->occ_buf = q_alloc(Q_CHUNK_VOXELS);
        if (!s->copy || !s->chunk_buf || !s->mat_buf || !s->occ_buf)
            return Q_ERR_MEMORY;
    }
    for (;;) {
        uint64_t v = q_terrain_version(t);
        if (!s->copying) {
            if (s->copy_valid && v == s->copy_version) {
                *ready = true;
                return Q_OK;
            }
            change_list l = {0};
            q_status st = Q_OK;
            if (s->copy_valid && q_terrain_changes_since(t, s->copy_version, collect_change, &l) && !l.failed &&
                l.chunks <= COPY_ALL_CHUNKS) {
                for (size_t i = 0; i < l.n && st == Q_OK; i++) {
                    q_lod_cache_invalidate(s->cache, l.boxes[i]);
                    st = copy_box(s, t, l.boxes[i]);
                }
                if (l.boxes)
                    q_free(l.boxes, l.cap * sizeof(q_box));
                if (st != Q_OK) {
                    s->copy_valid = false;
                    return st;
                }
                s->copy_version = v;
                *ready = true;
                return Q_OK;
            }
            if (l.boxes)
                q_free(l.boxes, l.cap * sizeof(q_box));
            /* start a whole copy */
            size_t n = q_terrain_chunk_count(t);
            q_chunk_view *views = n ? q_alloc(n * sizeof *views) : NULL;
            q_free(s->copy_list, s->copy_n * sizeof *s->copy_list);
            s->copy_list = n ? q_alloc(n * sizeof *s->copy_list) : NULL;
            s->copy_n = s->copy_list ? n : 0;
            if (n && (!views || !s->copy_list)) {
                q_free(views, n * sizeof *views);
                s->copy_valid = false;
                return Q_ERR_MEMORY;
            }
            q_terrain_chunk_views(t, views);
            for (size_t i = 0; i < n; i++) {
                s->copy_list[i][0] = views[i].cx;
                s->copy_list[i][1] = views[i].cy;
                s->copy_list[i][2] = views[i].cz;
            }
            q_free(views, n * sizeof *views);
            q_terrain_clear(s->copy);
            q_lod_cache_invalidate_all(s->cache);
            s->copy_valid = false;
            s->copying = true;
            s->copy_pos = 0;
            s->copy_from = v;
        }
        bool limited = budget != SIZE_MAX;
        double start = limited ? seconds() : 0;
        for (; s->copy_pos < s->copy_n && budget > 0; s->copy_pos++, budget -= limited) {
            const int32_t *ch = s->copy_list[s->copy_pos];
            q_status st = copy_chunk(s, t, ch[0], ch[1], ch[2]);
            if (st != Q_OK) {
                s->copying = false;
                return st;
            }
            if (limited && seconds() - start > COPY_SECONDS)
                budget = 1; /* this one was the last */
        }
        if (s->copy_pos < s->copy_n)
            return Q_OK;
        /* done: edits made meanwhile are in the log after copy_from */
        s->copying = false;
        s->copy_valid = true;
        s->copy_version = s->copy_from;
    }
}

/* ---- rebuilds ---- */

static void run_job(q_clipmap_state *s, q_jobs *jobs)
{
    s->job_st = q_lod_build_cached(s->cache, jobs, s->copy, s->job.box, Q_SURFACE_SOLID, s->job.scale, job_level,
                                   &s->job, &s->job_out, s->job_err, sizeof s->job_err);
}

static void *worker_main(void *arg)
{
    q_clipmap_state *s = arg;
    run_job(s, NULL);
    atomic_store(&s->done, true);
    return NULL;
}

static void publish(q_clipmap *c)
{
    q_clipmap_state *s = c->state;
    if (s->job_st != Q_OK || !request_copy(&s->pub, &s->job)) {
        q_mesh_destroy(s->job_out.mesh);
        s->job_out.mesh = NULL;
        if (s->job_st == Q_OK) {
            s->job_st = Q_ERR_MEMORY;
            snprintf(s->job_err, sizeof s->job_err, "out of memory");
        }
        return;
    }
    q_mesh_destroy(s->mesh);
    s->mesh = s->job_out.mesh;
    c->last = s->job_out;
    c->last.mesh = NULL;
    s->job_out.mesh = NULL;
    s->serial++;
}

static void join_worker(q_clipmap *c)
{
    q_clipmap_state *s = c->state;
    pthread_join(s->thread, NULL);
    s->running = false;
    publish(c);
}

q_status q_clipmap_update(q_clipmap *c, q_jobs *jobs, const q_terrain *t, q_box box, float scale, bool wait,
                          char *err, size_t errlen)
{
    q_clipmap_state *s = c->state;
    if (s->running && atomic_load(&s->done))
        join_worker(c);
    if (!make_request(c, t, box, scale)) {
        snprintf(err, errlen, "out of memory");
        return Q_ERR_MEMORY;
    }
    if (s->running) {
        if (!wait)
            return Q_OK;
        join_worker(c);
    }
    if (s->serial && request_equal(&s->pub, &s->want))
        return Q_OK;
    if (s->has_job && request_equal(&s->job, &s->want)) { /* this request failed: do not retry it */
        snprintf(err, errlen, "%s", s->job_err);
        return s->job_st;
    }
    bool ready;
    q_status st = sync_copy(s, t, wait ? SIZE_MAX : COPY_BUDGET, &ready);
    if (st != Q_OK) {
        snprintf(err, errlen, st == Q_ERR_MEMORY ? "out of memory" : "copying the terrain failed");
        return st;
    }
    if (!ready)
        return Q_OK; /* the copy goes on with the next call */
    if (!request_copy(&s->job, &s->want)) {
        snprintf(err, errlen, "out of memory");
        return Q_ERR_MEMORY;
    }
    s->has_job = true;
    memset(&s->job_out, 0, sizeof s->job_out);
    if (!wait && s->job.nlevels) { /* no levels: an empty or refused box, answered at once */
        atomic_store(&s->done, false);
        if (pthread_create(&s->thread, NULL, worker_main, s) == 0) {
            s->running = true;
            return Q_OK;
        }
        /* no thread: build here */
    }
    run_job(s, jobs);
    publish(c);
    if (s->job_st != Q_OK)
        snprintf(err, errlen, "%s", s->job_err);
    return s->job_st;
}

q_clipmap_result q_clipmap_get(const q_clipmap *c)
{
    const q_clipmap_state *s = c->state;
    q_clipmap_result r = {0};
    r.mesh = s->mesh;
    r.info = c->last;
    r.box = s->pub.box;
    r.serial = s->serial;
    r.current = s->serial && request_equal(&s->pub, &s->want);
    return r;
}

q_status q_clipmap_mesh(q_clipmap *c, struct q_jobs *jobs, const q_terrain *t, q_box box, float scale,
                        q_lod_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    q_status st = q_clipmap_update(c, jobs, t, box, scale, true, err, errlen);
    if (st != Q_OK)
        return st;
    *out = c->last;
    const q_mesh *m = c->state->mesh;
    if (m && m->vertex_count) {
        out->mesh = q_mesh_create(m->vertex_count, m->index_count, true, true);
        if (!out->mesh) {
            snprintf(err, errlen, "out of memory");
            return Q_ERR_MEMORY;
        }
        memcpy(out->mesh->positions, m->positions, 3 * m->vertex_count * sizeof(float));
        memcpy(out->mesh->normals, m->normals, 3 * m->vertex_count * sizeof(float));
        memcpy(out->mesh->materials, m->materials, m->vertex_count);
        memcpy(out->mesh->indices, m->indices, m->index_count * sizeof(uint32_t));
    }
    return Q_OK;
}
