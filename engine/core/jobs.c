/* Job system: see jobs.h. One loop at a time; iterations are handed out with
 * an atomic counter, so cheap iterations cost one fetch-add each. */
#include "core/jobs.h"

#include "core/alloc.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#define Q_MAX_WORKERS 64

/* The barrier of the team running now. */
typedef struct team_state {
    atomic_uint arrived, generation;
    unsigned count;
} team_state;

struct q_team {
    team_state *state;
    int thread;
};

typedef struct worker {
    struct q_jobs *jobs;
    int index; /* 1.. (the caller of a team is 0) */
} worker;

struct q_jobs {
    pthread_t threads[Q_MAX_WORKERS];
    worker workers[Q_MAX_WORKERS];
    int nthreads;

    pthread_mutex_t submit; /* one loop at a time */
    pthread_mutex_t lock;
    pthread_cond_t wake, finished;
    unsigned long batch; /* bumped for each loop; workers wait for a change */
    bool quit;

    q_job_fn fn;
    q_team_fn team; /* set: the current batch is a team (q_jobs_team) */
    team_state team_state;
    void *ctx;
    int count;
    atomic_int next;
    int busy; /* workers still inside the current loop (under lock) */
};

static void run_iterations(q_jobs *j)
{
    for (;;) {
        int i = atomic_fetch_add(&j->next, 1);
        if (i >= j->count)
            return;
        j->fn(j->ctx, i);
    }
}

static void *worker_main(void *arg)
{
    const worker *w = arg;
    q_jobs *j = w->jobs;
    unsigned long seen = 0;
    pthread_mutex_lock(&j->lock);
    for (;;) {
        while (!j->quit && j->batch == seen)
            pthread_cond_wait(&j->wake, &j->lock);
        if (j->quit)
            break;
        seen = j->batch;
        q_team_fn team = j->team;
        pthread_mutex_unlock(&j->lock);
        if (team) {
            q_team t = {&j->team_state, w->index};
            team(j->ctx, &t);
        } else
            run_iterations(j);
        pthread_mutex_lock(&j->lock);
        if (--j->busy == 0)
            pthread_cond_signal(&j->finished);
    }
    pthread_mutex_unlock(&j->lock);
    return NULL;
}

q_jobs *q_jobs_create(int workers)
{
    if (workers < 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        workers = n > 1 ? (int)n - 1 : 0;
    }
    if (workers > Q_MAX_WORKERS)
        workers = Q_MAX_WORKERS;
    q_jobs *j = q_calloc(1, sizeof *j);
    if (!j)
        return NULL;
    pthread_mutex_init(&j->submit, NULL);
    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->wake, NULL);
    pthread_cond_init(&j->finished, NULL);
    for (int i = 0; i < workers; i++) {
        j->workers[i] = (worker){j, i + 1};
        if (pthread_create(&j->threads[i], NULL, worker_main, &j->workers[i]) != 0)
            break;
        j->nthreads++;
    }
    return j;
}

void q_jobs_destroy(q_jobs *j)
{
    if (!j)
        return;
    pthread_mutex_lock(&j->lock);
    j->quit = true;
    pthread_cond_broadcast(&j->wake);
    pthread_mutex_unlock(&j->lock);
    for (int i = 0; i < j->nthreads; i++)
        pthread_join(j->threads[i], NULL);
    pthread_cond_destroy(&j->wake);
    pthread_cond_destroy(&j->finished);
    pthread_mutex_destroy(&j->lock);
    pthread_mutex_destroy(&j->submit);
    q_free(j, sizeof *j);
}

void q_jobs_for(q_jobs *j, int count, q_job_fn fn, void *ctx)
{
    if (count <= 0)
        return;
    if (!j || j->nthreads == 0 || count == 1) {
        for (int i = 0; i < count; i++)
            fn(ctx, i);
        return;
    }
    pthread_mutex_lock(&j->submit);
    pthread_mutex_lock(&j->lock);
    j->fn = fn;
    j->team = NULL;
    j->ctx = ctx;
    j->count = count;
    atomic_store(&j->next, 0);
    j->busy = j->nthreads;
    j->batch++;
    pthread_cond_broadcast(&j->wake);
    pthread_mutex_unlock(&j->lock);

    run_iterations(j);

    pthread_mutex_lock(&j->lock);
    while (j->busy > 0)
        pthread_cond_wait(&j->finished, &j->lock);
    pthread_mutex_unlock(&j->lock);
    pthread_mutex_unlock(&j->submit);
}

int q_jobs_threads(const q_jobs *j)
{
    return j ? j->nthreads + 1 : 1;
}

void q_jobs_team(q_jobs *j, q_team_fn fn, void *ctx)
{
    if (!j || j->nthreads == 0) {
        team_state one = {.count = 1};
        q_team t = {&one, 0};
        fn(ctx, &t);
        return;
    }
    pthread_mutex_lock(&j->submit);
    pthread_mutex_lock(&j->lock);
    j->team = fn;
    j->ctx = ctx;
    atomic_store(&j->team_state.arrived, 0);
    j->team_state.count = (unsigned)j->nthreads + 1;
    j->busy = j->nthreads;
    j->batch++;
    pthread_cond_broadcast(&j->wake);
    pthread_mutex_unlock(&j->lock);

    q_team t = {&j->team_state, 0};
    fn(ctx, &t);

    pthread_mutex_lock(&j->lock);
    while (j->busy > 0)
        pthread_cond_wait(&j->finished, &j->lock);
    j->team = NULL;
    pthread_mutex_unlock(&j->lock);
    pthread_mutex_unlock(&j->submit);
}

int q_team_thread(const q_team *t) { return t->thread; }

int q_team_size(const q_team *t) { return (int)t->state->count; }

void q_team_sync(q_team *t)
{
    team_state *b = t->state;
    if (b->count <= 1)
        return;
    unsigned gen = atomic_load(&b->generation);
    if (atomic_fetch_add(&b->arrived, 1) + 1 == b->count) {
        atomic_store(&b->arrived, 0);
        atomic_fetch_add(&b->generation, 1);
        return;
    }
    for (unsigned spins = 0; atomic_load(&b->generation) == gen; spins++)
        if (spins >= 2000)
            sched_yield();
}
