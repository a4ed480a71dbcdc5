/* The world: owns the terrain (and, as they land, bodies and caches), the
 * fixed-step clock and the job system. Destroying it frees everything it owns.
 *
 * Worlds are addressed from scripts by generational handles (core/handle.h)
 * through a process-wide registry, so a script holding a destroyed world gets
 * an error instead of a dangling pointer.
 */
#ifndef Q_WORLD_H
#define Q_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "core/handle.h"
#include "voxel/terrain.h"

typedef struct q_world_def {
    double voxel_size; /* metres per voxel, > 0 (default 1) */
    double gravity[3]; /* m/s^2 (default 0, -9.81, 0) */
    double step;       /* fixed step in seconds, in (0, 1] (default 1/60) */
    int substeps;      /* solver substeps per step, 1..64 (default 4) */
    uint64_t seed;     /* for everything random in the world (default 1) */
    int threads;       /* worker threads; -1 = one per core less one (default) */
    size_t physics_cache; /* bytes for cached chunk meshes and kD trees (0 = 32 MiB) */
    bool auto_detach;  /* terrain islands become bodies on their own (default false) */
} q_world_def;

q_world_def q_default_world_def(void);

typedef struct q_world q_world;

/* Validates def and creates a world; NULL with a message on failure. */
q_world *q_world_create(const q_world_def *def, char *err, size_t errlen);
void q_world_destroy(q_world *w);

const q_world_def *q_world_get_def(const q_world *w);
q_terrain *q_world_terrain(q_world *w);
struct q_terrain_physics;
/* Ray and overlap queries against the terrain (physics/terrain_physics.h). */
struct q_terrain_physics *q_world_terrain_physics(q_world *w);
struct q_clipmap;
/* Clipmap LOD state (mesh/clipmap.h), created on first use and destroyed
 * with the world; NULL when out of memory. */
struct q_clipmap *q_world_clipmap(q_world *w);
struct q_bodies;
/* The world's rigid bodies (physics/bodies.h), stepped by q_world_step. */
struct q_bodies *q_world_bodies(q_world *w);
struct q_jobs;
/* The world's worker threads (core/jobs.h), for engine work done on its behalf. */
struct q_jobs *q_world_jobs(q_world *w);

/* Advances by whole fixed steps: adds dt (seconds, finite, >= 0) to an
 * accumulator and runs floor(acc / step) steps, at most Q_MAX_STEPS_PER_CALL
 * (the rest of the backlog is dropped so a stall cannot snowball). Returns
 * the steps run, or -1 for a bad dt. */
#define Q_MAX_STEPS_PER_CALL 240
int q_world_step(q_world *w, double dt);
/* What the steps of the last q_world_step call produced (cleared by the
 * next call): contacts that began (physics/bodies.h), in step order, and
 * bodies of brittle materials that shattered because a contact impulse beat
 * their material's strength. Handles in them may be stale by now (a body
 * that shattered in a later step of the same call). */
struct q_contact_event;
size_t q_world_contacts(const q_world *w, const struct q_contact_event **out);
typedef struct q_shatter_event {
    q_handle body;       /* destroyed */
    size_t first, count; /* its fragments: fragments[first .. first + count) */
    double at[3];        /* the contact that broke it */
    double impulse;
} q_shatter_event;
size_t q_world_shatters(const q_world *w, const q_shatter_event **out, const q_handle **fragments);
/* ---- detached terrain (detach.c) ---- */

struct q_islands;
/* The world's island tracker (voxel/islands.h), made on first use; NULL
 * when out of memory. */
struct q_islands *q_world_islands(q_world *w);

typedef struct q_detach_params {
    size_t max_hulls;      /* convex parts per body (default 16) */
    uint32_t chunk_budget; /* chunks relabelled per call (0 = no limit) */
    size_t max_bodies;     /* islands turned into bodies per call (0 = all) */
} q_detach_params;
q_detach_params q_default_detach_params(void);

/* Turns the terrain's islands (regions not connected to the anchors, in the
 * tracker's order) into rigid bodies: each island's voxels leave the
 * terrain; their surface (the mesher, on the island's box) is decomposed
 * into at most max_hulls convex parts; the body's mass is the sum of
 * occupancy x density x voxel_size^3 over its voxels and its material the
 * one with the largest share of that mass. Islands over the tracker's size
 * cap stay terrain (counted in *too_large, may be NULL). Returns the bodies
 * made; their handles are appended to the list q_world_detached reads. With
 * a chunk budget the connectivity update may need several calls before any
 * island is detached (*pending true, may be NULL). */
size_t q_world_detach_islands(q_world *w, const q_detach_params *p, size_t *too_large, bool *pending, char *err,
                              size_t errlen);
/* Bodies detached since the last q_world_step call began (auto_detach in
 * the steps, and manual calls after them). */
size_t q_world_detached(const q_world *w, const q_handle **out);
/* Each step of an auto_detach world relabels at most this many chunks. */
#define Q_AUTO_DETACH_CHUNKS 64

/* Brittle bodies smaller than this (cubic voxels) no longer shatter on
 * their own, so fragments of fragments stop somewhere; each break makes
 * Q_BRITTLE_PIECES fragments, which cannot break again for half a second
 * (bodies.h: the impact that made them is still going on). */
#define Q_BRITTLE_MIN_VOLUME 0.002
#define Q_BRITTLE_PIECES 12
double q_world_time(const q_world *w);       /* frames * step */
uint64_t q_world_frame(const q_world *w);    /* fixed steps run so far */
/* Restores the clock (used by the loader). */
void q_world_set_clock(q_world *w, uint64_t frame, double accumulator);
double q_world_accumulator(const q_world *w);

/* Digest of the voxels, the bodies and the clock: equal runs give equal values. */
uint64_t q_world_hash(const q_world *w);

/* ---- frame profile ----
 *
 * Wall-clock milliseconds per subsystem over one frame, a frame being the
 * time from the end of one q_world_step call to the end of the next (one
 * call per rendered frame, as the host's examples make). Stages inside a
 * step are summed over the steps of the call. Timers are read once per
 * stage or per call, never per item, and nothing simulated depends on them. */
typedef enum q_profile_stage {
    Q_PROFILE_STEP,        /* whole q_world_step calls */
    Q_PROFILE_BROADPHASE,  /* body stages (physics/bodies.h), inside steps */
    Q_PROFILE_NARROWPHASE,
    Q_PROFILE_SOLVER,
    Q_PROFILE_FRACTURE,    /* q_body_shatter: brittle breaks in steps and scripts' shatters */
    Q_PROFILE_DETACH,      /* q_world_detach_islands: auto_detach in steps and calls */
    Q_PROFILE_EDIT,        /* terrain edits; also the broadphase catching up with them in steps */
    Q_PROFILE_RAYCAST,     /* ray queries */
    Q_PROFILE_MESH,        /* render chunk meshes, baking and clipmap LOD work on the caller's thread */
    Q_PROFILE_CALLS,       /* scripts' engine calls, whole (the part of a frame that is not script) */
    Q_PROFILE_COUNT
} q_profile_stage;
/* Milliseconds since an arbitrary start (CLOCK_MONOTONIC). */
double q_profile_now(void);
/* Adds ms to the frame in progress; for callers outside the engine (bindings,
 * the renderer) that time the work they hand it. */
void q_world_profile_add(q_world *w, q_profile_stage stage, double ms);
/* Adds the time since t0 (q_profile_now) to stage and to Q_PROFILE_CALLS:
 * for bindings timing an engine call a script made. */
void q_world_profile_call(q_world *w, q_profile_stage stage, double t0);
/* The last completed frame's milliseconds per stage (out[Q_PROFILE_COUNT]). */
void q_world_profile(const q_world *w, double out[Q_PROFILE_COUNT]);

typedef struct q_world_stats {
    size_t chunks;       /* stored voxel chunks */
    size_t dense_chunks; /* of which with per-voxel memory */
    size_t voxel_bytes;  /* voxel storage and its tables */
    size_t memory;       /* everything the world holds */
    size_t bodies, awake;
    size_t body_pairs, manifolds, contacts; /* of the last step */
    double ms_broadphase, ms_narrowphase, ms_solver; /* body stages over the last frame (q_world_profile) */
    size_t broadphase_chunks, broadphase_bytes; /* terrain physics */
    size_t cached_chunks, cache_bytes, triangles, kd_nodes;
    size_t gridsort_batches;
} q_world_stats;
/* Not const: brings the physics data up to date first. */
q_world_stats q_world_get_stats(q_world *w);

/* ---- registry of worlds for scripting (thread-safe) ---- */

/* Registers a world and returns its handle (null when out of memory). */
q_handle q_world_register(q_world *w);
/* The world of a handle, or NULL once it was unregistered. */
q_world *q_world_lookup(q_handle h);
/* Forgets a handle; later lookups return NULL. */
void q_world_unregister(q_handle h);

/* ---- save files (save.c) ---- */

/* Writes the world to path atomically: a temporary file beside it is written,
 * fsync'd and renamed over path, so a crash leaves either the old file or the
 * new one, never a torn one. */
q_status q_world_save(const q_world *w, const char *path, char *err, size_t errlen);
/* Reads a world file; NULL with a message for a missing, truncated, corrupt
 * or foreign file (nothing partial is ever returned). Materials are matched
 * by name; names the process does not know are defined from the file. */
q_world *q_world_load(const char *path, char *err, size_t errlen);

/* Test hook: makes every save fail after `bytes` more bytes have been written
 * (negative disables). Lets specs prove a failed save leaves the old file. */
void q_world_debug_fail_save_after(long bytes);

#endif
