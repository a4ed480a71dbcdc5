/* Rigid bodies: storage, contacts, the solver, sleeping and buoyancy.
 *
 * A q_bodies set belongs to a world and collides its bodies with each other
 * and with the world's terrain (physics/collide.h). Bodies are addressed by
 * generational handles, so a script holding a destroyed body gets an error,
 * never a dangling pointer.
 *
 * Step. q_bodies_step advances by one fixed step dt:
 *   1. wake sleepers whose bounds a terrain edit touched (and drop the kept
 *      terrain contacts of the bodies near it, step 3);
 *   2. pairs: bodies sorted along X (sweep and prune, ties broken by slot),
 *      bounds grown by how far each body moves in the step;
 *   3. narrowphase (contacts.c; in parallel on the world's workers: every
 *      body and pair writes its own slots, so the result never depends on
 *      the thread count, and so are the constraints built from it): body-body
 *      manifolds and one manifold per (body, terrain chunk) pair, kept while
 *      the surfaces are closer than the distance they may close in the step
 *      (speculative contacts: a fast body cannot pass through a thin wall);
 *      a box or hull that has barely moved since its last terrain query
 *      keeps that query's contacts, moved along with it (contacts.c,
 *      "terrain contact reuse": valid while the query's wider margin
 *      covers the motion since; terrain edits drop them);
 *   4. contact impulses from the last step warm-start the matching points
 *      (same pair, same feature id);
 *   5. `substeps` times: gravity and buoyancy, warm start, a soft contact
 *      solve (a spring-damper bias on the penetration, Box2D v3's "soft
 *      step": 30 Hz between moving bodies, 60 Hz against the terrain and
 *      immovable bodies), position integration, and a relax pass without
 *      bias. Constraints are coloured so that no two of a colour share a
 *      moving body, and solved colour by colour, four of a colour at once
 *      in vector lanes (solver_wide.h; bit for bit the one-at-a-time
 *      arithmetic); with 256 or more of them the world's threads split each
 *      colour (the order, so the result, is the same on any number of
 *      threads);
 *   6. restitution from the approach speed before the step; islands of
 *      touching bodies fall asleep together after 0.5 s below the sleep
 *      velocities; events for new contacts.
 *
 * Friction is Coulomb with two tangent directions and the geometric mean of
 * the materials' coefficients; restitution the larger of the two.
 *
 * Water. Each body keeps sample points filling its shape (up to 6 per axis,
 * weighted to sum to its volume). Each step a sample's submerged fraction
 * comes from the water occupancy around it (a flat surface is found to the
 * sample's height, so a floating box's draft is exact); buoyancy acts at the
 * submerged centroid, with linear and angular drag in proportion.
 *
 * Determinism: bodies are processed in slot order, pairs in sorted order,
 * and every sum runs in the same order whatever the thread count, so equal
 * inputs give bit-equal states (q_bodies_hash).
 */
#ifndef Q_BODIES_H
#define Q_BODIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/handle.h"
#include "core/jobs.h"
#include "physics/collide.h"
#include "physics/shape.h"
#include "physics/terrain_physics.h"

/* Limits, enforced with errors. */
#define Q_BODIES_MAX 65536
#define Q_BODY_MAX_SPEED 2000.0   /* m/s; faster velocities are refused (set) or clamped (solver) */
#define Q_BODY_MAX_COORD 1.0e7    /* |position| in metres */
#define Q_BODY_MAX_FORCE 1.0e30   /* |accumulated force| (N) and torque (N m); more is refused */

typedef struct q_bodies q_bodies;

typedef struct q_body_def {
    q_collider *shape;         /* taken over by the body (freed with it, or on failure) */
    double position[3];     /* of the shape's frame origin */
    double rotation[4];     /* unit quaternion x, y, z, w */
    double velocity[3];     /* of the centre of mass */
    double angular_velocity[3];
    uint8_t material;       /* density, friction, restitution, strength */
    bool is_static;         /* never moves; infinite mass */
    double mass;            /* > 0: this mass instead of density x volume (the
                               inertia scales with it); 0 = from the material */
    const char *name;       /* copied; may be NULL */
} q_body_def;

q_body_def q_default_body_def(void);

/* gravity: m/s^2; voxel_size: metres per voxel. The terrain physics and the
 * job system are borrowed and must outlive the set. */
q_bodies *q_bodies_create(q_terrain_physics *tp, q_jobs *jobs, double voxel_size, const double gravity[3],
                          int substeps);
void q_bodies_destroy(q_bodies *b);

/* Creates a body; the null handle with a message on bad input (non-finite or
 * out-of-range values, unknown material, a shape with no volume, too many
 * bodies). The shape is freed on failure. */
q_handle q_body_create(q_bodies *b, const q_body_def *def, char *err, size_t errlen);
/* False for a stale handle. Safe at any time outside q_bodies_step. */
bool q_body_destroy(q_bodies *b, q_handle h);
bool q_body_valid(const q_bodies *b, q_handle h);

/* The live bodies in creation-slot order; returns the count (writes at most cap). */
size_t q_bodies_list(const q_bodies *b, q_handle *out, size_t cap);
size_t q_bodies_count(const q_bodies *b);
size_t q_bodies_awake(const q_bodies *b);

/* State. Getters return false for a stale handle. Setters validate (finite,
 * |v| <= Q_BODY_MAX_SPEED, unit-normalised rotation) and wake the body; they
 * return false with a message in err. */
typedef struct q_body_state {
    double position[3], rotation[4], velocity[3], angular_velocity[3];
    double mass;         /* kg; 0 for static bodies */
    double center[3];    /* world centre of mass */
    uint8_t material;
    bool sleeping, is_static;
} q_body_state;
bool q_body_get(const q_bodies *b, q_handle h, q_body_state *out);
bool q_body_set_position(q_bodies *b, q_handle h, const double p[3], char *err, size_t errlen);
bool q_body_set_rotation(q_bodies *b, q_handle h, const double q[4], char *err, size_t errlen);
bool q_body_set_velocity(q_bodies *b, q_handle h, const double v[3], char *err, size_t errlen);
bool q_body_set_angular_velocity(q_bodies *b, q_handle h, const double w[3], char *err, size_t errlen);
const char *q_body_name(const q_bodies *b, q_handle h);
bool q_body_set_name(q_bodies *b, q_handle h, const char *name);
const q_collider *q_body_shape(const q_bodies *b, q_handle h);
/* Placement of the body's shape frame. */
bool q_body_xform(const q_bodies *b, q_handle h, q_xform *out);

/* Impulses change velocity now (N s); forces and torques (N, N m) add up
 * and act in every step until q_bodies_clear_forces (the world clears them
 * after each q_world_step call that ran steps, so a force applied once per
 * frame acts through the whole frame however many fixed steps it took).
 * `at` is a world point, or NULL for the centre of mass. All wake the
 * body; no effect on static bodies. */
bool q_body_apply_impulse(q_bodies *b, q_handle h, const double impulse[3], const double *at, char *err,
                          size_t errlen);
bool q_body_apply_force(q_bodies *b, q_handle h, const double force[3], const double *at, char *err,
                        size_t errlen);
bool q_body_apply_torque(q_bodies *b, q_handle h, const double torque[3], char *err, size_t errlen);

void q_bodies_clear_forces(q_bodies *b);

/* Wakes bodies whose bounds touch the box (world units). */
void q_bodies_wake_box(q_bodies *b, const double min[3], const double max[3]);

/* Advances one fixed step of dt seconds. */
void q_bodies_step(q_bodies *b, double dt);

/* Contacts that began during the last step, in a deterministic order; `b`
 * is the null handle for terrain. impulse is the normal impulse the solver
 * applied (N s), for brittle materials and scripts. */
typedef struct q_contact_event {
    q_handle a, b;
    double position[3];
    double normal[3];  /* from b (or the terrain) towards a */
    double impulse;
    double speed;      /* approach speed along the normal when it began */
    uint8_t material;  /* of b, or the terrain's */
} q_contact_event;
size_t q_bodies_events(const q_bodies *b, const q_contact_event **events);

/* Contact points of the last step (for debug drawing): world position,
 * normal (from A to B) and separation; returns the total count, writes at
 * most cap. */
typedef struct q_debug_contact {
    double position[3], normal[3], separation;
    bool terrain; /* A is the terrain */
} q_debug_contact;
size_t q_bodies_contacts(const q_bodies *b, q_debug_contact *out, size_t cap);

/* Queries. Rays test every awake or sleeping body whose bounds the ray
 * crosses; overlaps report bodies whose shape intersects the sphere or box. */
bool q_bodies_raycast(const q_bodies *b, const double origin[3], const double dir[3], double max_distance,
                      const q_handle *ignore, size_t ignore_count, q_handle *body, double *distance,
                      double normal[3]);
size_t q_bodies_overlap(const q_bodies *b, const q_collider *shape, const q_xform *t, q_handle *out, size_t cap);

/* ---- shattering (shatter.c) ---- */

typedef struct q_shatter_params {
    int pieces;          /* Voronoi sites, 1..Q_FRACTURE_MAX_PIECES (default 16) */
    uint64_t seed;       /* site generator seed (default 1) */
    bool has_at;         /* sites cluster around at (a world point) */
    double at[3];
    double burst;        /* N s, >= 0: spread over the fragments, pushing each
                            straight away from at (or the centre of mass) */
    double impulse[3];   /* N s: one impulse shared by all fragments in
                            proportion to their mass */
    bool gpu;            /* cells from q_voronoi_gpu (geom/voronoi.h) */
} q_shatter_params;
q_shatter_params q_default_shatter_params(void);

/* Replaces a dynamic body by fragment bodies (geom/fracture.h): its shape's
 * triangles are cut by Voronoi cells; convex fragments become hulls, others
 * compounds of their convex decomposition. Fragments keep the material, the
 * name and the motion of the part of the body they were (v + w x r), so
 * mass and momentum are conserved before burst and impulse; fragments too
 * small to hold a hull (under 1e-9 of the body's volume) are dropped.
 * Returns the number of fragments and writes up to cap handles; 0 with a
 * message (body unchanged) on bad parameters, a static or stale body, or
 * when the fracture fails. Not during q_bodies_step. */
size_t q_body_shatter(q_bodies *b, q_handle h, const q_shatter_params *p, q_handle *out, size_t cap, char *err,
                      size_t errlen);

/* Bodies of brittle materials (voxel/material.h) whose contact impulse in
 * the last step exceeded their material's strength in an impact (an
 * approach faster than 1 m/s: resting loads never break anything), at most one entry per
 * body, in event order: the body and the contact point. The world shatters
 * them after the step (world.h). */
typedef struct q_breakage {
    q_handle body;
    double at[3];
    double impulse;
} q_breakage;
size_t q_bodies_breakages(const q_bodies *b, const q_breakage **out);

/* ---- files (bodies_io.c) ---- */

struct q_buf;
struct q_reader;
/* Appends everything the set holds (handles with their generations, bodies
 * with their shapes and state, the contact cache that warm-starts the next
 * step) so that a set read back continues bit for bit as this one would.
 * False when out of memory. */
bool q_bodies_write(const q_bodies *b, struct q_buf *out);
/* Reads what q_bodies_write wrote into an empty set; material ids go
 * through remap (file id -> id here; material_count ids in the file).
 * False with a message for a truncated or inconsistent record (the set is
 * then left empty). Call after the terrain is restored: edits before this
 * call do not wake the bodies. */
bool q_bodies_read(q_bodies *b, struct q_reader *in, const uint8_t *remap, int material_count, char *err,
                   size_t errlen);

/* Digest of every body's state (bits of position, rotation, velocities,
 * sleeping) in slot order. */
uint64_t q_bodies_hash(const q_bodies *b);

typedef struct q_bodies_stats {
    size_t bodies, awake, pairs, manifolds, terrain_manifolds, contacts, bytes;
    size_t terrain_kept; /* bodies whose terrain contacts were kept, not queried, in the last step */
    double ms_broadphase, ms_narrowphase, ms_solver; /* last step */
} q_bodies_stats;
q_bodies_stats q_bodies_get_stats(const q_bodies *b);

#endif
