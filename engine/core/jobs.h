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

/* A team: fn(ctx, team) runs once on every thread (the caller's is thread
 * 0), all at the same time, so they may wait for each other in
 * q_team_sync; returns when all have returned. With jobs NULL it runs once,
 * on the caller, as a team of one. Must not be called from inside a job. */
typedef struct q_team q_team;
typedef void (*q_team_fn)(void *ctx, q_team *team);
void q_jobs_team(q_jobs *jobs, q_team_fn fn, void *ctx);
int q_team_thread(const q_team *team);
int q_team_size(const q_team *team);
/* Returns once every thread of the team has called it (a barrier: what one
 * thread wrote before it is seen by all after it). Spins a little, then
 * yields the core. */
void q_team_sync(q_team *team);

#endif
