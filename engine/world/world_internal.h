/* Private to engine/world: the world record, shared by world.c (lifetime,
 * clock, stepping) and detach.c (terrain islands into bodies). */
#ifndef Q_WORLD_INTERNAL_H
#define Q_WORLD_INTERNAL_H

#include "core/array.h"
#include "core/jobs.h"
#include "physics/bodies.h"
#include "world/world.h"

struct q_world {
    q_world_def def;
    q_jobs *jobs;
    q_terrain *terrain;
    q_terrain_physics *physics;
    q_bodies *bodies;
    Q_ARRAY(q_contact_event) contacts; /* of the last q_world_step call */
    Q_ARRAY(q_shatter_event) shatters;
    Q_ARRAY(q_handle) fragments;
    Q_ARRAY(q_handle) detached;        /* since the last q_world_step call began */
    struct q_islands *islands;         /* made on first use (detach.c) */
    struct q_clipmap *clipmap; /* LOD state, made on first use (mesh/clipmap.h) */
    uint64_t frame;
    double accumulator;
    double profile[Q_PROFILE_COUNT];      /* frame in progress (world.h, frame profile) */
    double profile_last[Q_PROFILE_COUNT]; /* last completed frame */
    bool stepping;                        /* inside q_world_step */
};

/* detach.c: one auto_detach pass inside a step. */
void q_world_auto_detach(q_world *w);
void q_world_free_detach(q_world *w);

#endif
