/* A small job system: a few worker threads run the iterations of a parallel
 * loop; the calling thread joins in and returns when all are done.
 *
 * Each iteration writes only its own output slot, and callers merge slots in
 * index order afterwards, so results never depend on thread scheduling.
 */
#ifndef Q_JOBS_H
#define Q_JOBS_H

typedef struct q_jobs q_jobs;
typedef void (*q_job_fn)(void *ctx, int index);

/* workers < 0: one per online core, minus the caller's. Returns NULL when
 * threads cannot be started; q_jobs_for then runs serially. */
q_jobs *q_jobs_create(int workers);
/* Joins the workers. NULL is allowed. */
void q_jobs_destroy(q_jobs *jobs);
/* Runs fn(ctx, i) for every i in [0, count) and waits for all of them. Safe to
 * call from several threads (loops then run one after the other); must not be
 * called from inside fn. jobs may be NULL (serial). */
void q_jobs_for(q_jobs *jobs, int count, q_job_fn fn, void *ctx);
/* Threads that take part in a loop, the caller included. */
int q_jobs_threads(const q_jobs *jobs);

#endif
