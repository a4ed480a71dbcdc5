/* Private to the rigid bodies: the body record, contact constraints and the
 * step stages shared by bodies.c (storage, API, queries), contacts.c (pairs
 * and constraints), solver.c and solver_wide.c (the solve, sleep). See
 * bodies.h for the design. */
#ifndef Q_BODIES_INTERNAL_H
#define Q_BODIES_INTERNAL_H

#include "core/array.h"
#include "core/vec3.h"
#include "physics/bodies.h"

/* Tolerances in metres and seconds. */
#define Q_LINEAR_SLOP 0.005       /* allowed overlap: keeps resting contacts warm */
#define Q_SPECULATIVE 0.02        /* contact margin of a body at rest */
#define Q_SLEEP_TIME 0.5          /* seconds below the sleep velocities */
#define Q_SLEEP_LINEAR 0.05       /* m/s */
#define Q_SLEEP_ANGULAR 0.05      /* rad/s */
#define Q_RESTITUTION_SPEED 1.0   /* approach speed below which nothing bounces */
#define Q_BREAK_SPEED 1.0         /* approach speed below which brittle bodies do not break */
#define Q_BUOY_CELLS 6            /* buoyancy samples per axis, at most */
#define Q_TERRAIN_MANIFOLDS 16    /* per body and step */
#define Q_FRAGMENT_GRACE 0.5      /* seconds before a fragment of a brittle body can break */
#define Q_BRITTLE_GENERATIONS 2   /* a body, its fragments and theirs break on their own; no further */

typedef struct q_body {
    q_collider *shape;
    char *name;
    uint8_t material;
    bool alive, is_static, sleeping;
    bool touching_terrain;       /* in the last step (one contact event per landing) */
    bool was_on_terrain;         /* step scratch */
    /* Placement: x is the world centre of mass; the shape frame's origin is
     * x - rotate(q, com). */
    double x[3], q[4];
    double com[3];              /* centre of mass in the shape frame */
    double v[3], w[3];
    double force[3], torque[3]; /* applied by scripts, until q_bodies_clear_forces */
    double water_force[3], water_torque[3]; /* buoyancy of this step */
    double mass, inv_mass;
    double inv_inertia_local[9]; /* shape-frame axes, about the centre of mass */
    double inv_inertia[9];       /* world axes, kept current with q */
    double radius;               /* farthest shape point from the centre of mass */
    double volume;
    double min[3], max[3];       /* world bounds of the shape */
    double sleep_time;
    uint32_t island;             /* sleeping island id (0 = none) */
    uint32_t unbreakable_steps;  /* a fresh fragment does not break again for a while */
    uint8_t generation;          /* breaks it came out of (fragments of fragments...) */
    /* Terrain contact reuse (contacts.c): last step's terrain patches stand
     * for this step's while the body has moved less than they allow. */
    double kept_x[3], kept_q[4]; /* the pose the kept patches are expressed at */
    double kept_reach;           /* how far they see: their query margin minus the motion since */
    double kept_near;            /* their least separation (at the kept pose) */
    uint32_t kept;               /* 1 + the body's index in last step's terrain list; 0: none */
    /* step scratch */
    double x0[3], q0[4];         /* at the start of the step */
    double margin;               /* contact margin for this step */
    double gmin[3], gmax[3];     /* bounds grown by margin */
    /* buoyancy samples: position relative to the centre of mass in the shape
     * frame's axes, and the volume each stands for */
    uint32_t sample_count;
    double (*samples)[4];
    double sample_height;        /* vertical extent of a sample cell (metres) */
} q_body;

/* One direction of a contact point's constraint (the normal or a tangent
 * d), precomputed at the step's start: the angular arms r x d of both
 * sides, the same through each side's world inverse inertia, and the
 * effective mass along d. */
typedef struct q_row {
    double ja[3], jb[3];
    double ia[3], ib[3];
    double mass;
} q_row;

typedef struct q_contact {
    double ra[3], rb[3];     /* anchors from the centres of mass, world axes at step start */
    double rb_local[3], ra_local[3]; /* the same in the bodies' frames, to follow rotation */
    double separation;       /* at step start, minus the anchors' normal offset */
    double normal_impulse, tangent_impulse[2], max_normal_impulse;
    double relative_velocity; /* normal velocity at step start (< 0 approaching) */
    double total_normal_impulse; /* over the step's substeps */
    uint32_t id;
} q_contact;

/* Key of a manifold, stable while the same features touch: body pairs use
 * (slot a | generation, slot b | generation, parts key), terrain manifolds
 * (body | generation, chunk key, cluster and part key). */
typedef struct q_constraint_key {
    uint64_t a, b;
    uint32_t c;
} q_constraint_key;

typedef struct q_constraint {
    q_constraint_key key;
    uint32_t a, b;            /* body slots; a == Q_TERRAIN when A is the terrain */
    double normal[3], t1[3], t2[3]; /* normal from A to B */
    double friction, restitution;
    uint8_t material;         /* of the other side, for events */
    bool touching, was_touching;
    /* A side is round (sphere, capsule): its contact point stays where the
     * surface meets the other side instead of turning with the body, so a
     * rolling ball's anchor does not lift off the ground within a step. */
    bool round_a, round_b;
    bool a_moves, b_moves;    /* a side that cannot move in this step takes no impulses */
    uint8_t colour;           /* solve colour (Q_COLOURS: none free; solved by one thread) */
    uint32_t count;
    q_contact points[Q_MANIFOLD_POINTS];
} q_constraint;
#define Q_TERRAIN UINT32_MAX

/* A body's bounds grown by its margin, for sweep and prune. */
typedef struct q_sweep_box {
    double min[3], max[3];
    uint32_t slot;
} q_sweep_box;

typedef struct q_pair {
    uint32_t a, b;
} q_pair;


/* The solver's own copies for one step (solver.c), laid out for its passes:
 * the moving bodies' state in one compact array (entry 0 is the immovable
 * ground: zero velocity, no inverse mass), and the constraints with their
 * points in solve order, so that a pass reads memory front to back. The
 * impulses go back to the q_constraint points after the solve. */
typedef struct q_solver_body {
    double v[3], w[3];
    double x[3], x0[3], q[4];
    double inv_inertia[9];
    double inv_mass;
    uint32_t slot;
} q_solver_body;

typedef struct q_solver_point {
    double anchor_a[3], anchor_b[3]; /* in the body's frame where it turns with it, else world */
    double separation;
    q_row rows[3];           /* normal, t1, t2 */
    double normal_impulse, tangent_impulse[2], max_normal_impulse, total_normal_impulse;
} q_solver_point;

typedef struct q_solver_constraint {
    uint32_t a, b;           /* q_solver_body indices (0: immovable) */
    uint32_t first, source;  /* first point in the solver's points; index in constraints */
    uint32_t count;
    bool turn_a, turn_b;     /* anchors follow the side's rotation */
    bool one_sided;          /* against an immovable side: the stiffer softness */
    double normal[3], t1[3], t2[3];
    double friction;
} q_solver_constraint;

/* Constraints are solved colour by colour: no two constraints of one colour
 * share a moving body, so a colour's constraints can be solved at once on
 * several threads, and the result is the same on any number of them.
 * Constraints that find no free colour among Q_COLOURS go last, solved by
 * one thread. */
#define Q_COLOURS 24

struct q_bodies {
    q_terrain_physics *tp;
    q_jobs *jobs;
    double voxel_size, gravity[3];
    int substeps;

    q_handle_pool handles;
    Q_ARRAY(q_body) bodies; /* by slot; dead slots have alive == false */
    size_t live, awake;
    uint32_t next_island;
    uint64_t terrain_version;
    /* read from a file: what the saved set's next edit check would have
     * done for changes made before it was written (bodies_io.c) */
    Q_ARRAY(uint32_t) wake_next;
    bool wake_all_next;

    /* step data */
    Q_ARRAY(uint32_t) order;          /* SAP order (kept from step to step) */
    Q_ARRAY(q_sweep_box) sweep;       /* the bodies' grown bounds in SAP order */
    int sweep_axis;                   /* 0: X (see contacts.c, sweep) */
    Q_ARRAY(q_pair) pairs;
    Q_ARRAY(q_constraint) constraints, previous;
    Q_ARRAY(uint32_t) previous_table; /* last step's constraints by key (contacts.c, index_previous) */
    Q_ARRAY(uint32_t) colour_masks;   /* per body slot: colours it is in (solve scratch) */
    Q_ARRAY(uint32_t) solve_order;    /* constraint indices by colour */
    uint32_t colour_start[Q_COLOURS + 2]; /* colour c: solve_order[start[c], start[c + 1]) */
    Q_ARRAY(q_solver_body) solver_bodies;
    Q_ARRAY(uint32_t) solver_index;   /* per body slot: its q_solver_body (0: immovable) */
    Q_ARRAY(q_solver_constraint) solver_constraints; /* in solve order */
    Q_ARRAY(uint32_t) solver_of;      /* per constraint: its q_solver_constraint */
    Q_ARRAY(q_solver_point) solver_points;      /* of the last group (no colour) */
    Q_ARRAY(struct q_wide_batch) wide_batches;  /* coloured constraints, four a batch (solver_wide.h) */
    Q_ARRAY(struct q_wide_point) wide_points;
    uint32_t batch_start[Q_COLOURS + 1];        /* colour c: wide_batches[start[c], start[c + 1]) */
    bool scalar_solve; /* tests: every constraint through solver.c's scalar passes, none in batches */
    bool wide_baseline; /* tests: batches through the x86-64 baseline build, not the AVX2 one */
    uint32_t scalar_from;  /* solve positions from here on are solved one by one (the last group) */
    Q_ARRAY(q_manifold) pair_manifolds; /* Q_PAIR_MANIFOLDS per pair, filled in parallel */
    Q_ARRAY(int) pair_counts;
    Q_ARRAY(q_terrain_manifold) terrain_scratch; /* Q_TERRAIN_MANIFOLDS per body */
    Q_ARRAY(uint32_t) terrain_bodies;  /* moving bodies near solid terrain */
    Q_ARRAY(int) terrain_counts;       /* contact patches of each (merged manifolds) */
    Q_ARRAY(q_xform) frames;           /* per slot: q_body_frame at the step's start (contacts.c) */
    Q_ARRAY(uint32_t) terrain_reuse;   /* per terrain body: 1 + its index in the kept lists, or 0 */
    Q_ARRAY(q_terrain_manifold) kept_scratch; /* last step's terrain_scratch, counts and bodies */
    Q_ARRAY(int) kept_counts;
    Q_ARRAY(uint32_t) kept_bodies;
    Q_ARRAY(uint32_t) constraint_first; /* per terrain body, then per pair: its first constraint */
    Q_ARRAY(q_contact_event) events;
    Q_ARRAY(q_breakage) breakages;
    Q_ARRAY(uint32_t) parent;         /* islands (union-find) */
    Q_ARRAY(double) least;            /* per island root: shortest sleep time */
    size_t terrain_constraints;
    size_t terrain_kept;              /* terrain bodies whose patches were kept this step */
    double dt;                        /* of the last step (0 before the first) */
    double ms_broadphase, ms_narrowphase, ms_solver;
};
#define Q_PAIR_MANIFOLDS 8

/* What the next step's edit check will do to each body because of terrain
 * changes made since the last step began (bodies.c), for a record written
 * now: flags[slot] (b->bodies.count of them) gets Q_EDIT_WAKE for a
 * sleeper it wakes (with its island) and Q_EDIT_DROP for kept terrain
 * contacts it drops. False when the change log no longer reaches back: then
 * every body wakes and drops its kept contacts. */
enum { Q_EDIT_WAKE = 1, Q_EDIT_DROP = 2 };
bool q_bodies_edit_effects(const q_bodies *b, uint8_t *flags);

/* Whether a body moves in this step (alive, not static, not asleep). */
static inline bool q_body_moving(const q_body *body) { return body->alive && !body->is_static && !body->sleeping; }

/* Relative velocity of B against A at the point along the row's direction,
 * from the sides' linear and angular velocities. */
static inline double q_row_speed(const double va[3], const double wa[3], const double vb[3], const double wb[3],
                                 const q_row *row, const double d[3])
{
    return (vb[0] - va[0]) * d[0] + (vb[1] - va[1]) * d[1] + (vb[2] - va[2]) * d[2] + v3_dot(wb, row->jb) -
           v3_dot(wa, row->ja);
}

/* Frees what a body record owns and zeroes it. */
void q_body_free(q_body *body);
/* Fills the buoyancy samples from the shape, com and volume. */
bool q_body_make_samples(q_body *body);
/* The live body of a handle, or NULL. */
q_body *q_bodies_get(const q_bodies *b, q_handle h);
/* Recomputes the world inverse inertia and bounds after x or q changed. */
void q_body_update(q_body *body);
q_xform q_body_frame(const q_body *body);
/* Wakes a body and its sleeping island. */
void q_body_wake(q_bodies *b, q_body *body);

/* The step's stages: pairs and constraints (contacts.c), then the solve,
 * buoyancy and sleep (solver.c). */
void q_bodies_find_pairs(q_bodies *b, double dt);
void q_bodies_collide(q_bodies *b);
void q_bodies_solve(q_bodies *b, double dt);
void q_bodies_buoyancy(q_bodies *b, q_body *body, double dt);
void q_bodies_sleep(q_bodies *b, double dt);

#endif
