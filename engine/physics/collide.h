/* Narrowphase: contact manifolds between shapes, and between a shape and the
 * terrain's triangles (seed 000: contacts per body-chunk pair, manifolds of
 * up to 4 points). Also shape casts (swept shapes) for queries.
 *
 * Convention: a manifold's normal points from A to B; a contact point's
 * separation is the signed distance between the two surfaces along the
 * normal (negative when they overlap). Points with separation below the
 * margin passed in are reported, so the solver can use them as speculative
 * contacts (continuous collision for fast bodies).
 */
#ifndef Q_COLLIDE_H
#define Q_COLLIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "physics/shape.h"
#include "physics/terrain_physics.h"

#define Q_MANIFOLD_POINTS 4

typedef struct q_contact_point {
    double position[3]; /* world, midway between the two surfaces */
    double separation;  /* signed distance along the normal; < 0 overlapping */
    uint32_t id;        /* feature pair id, stable while the same features touch */
} q_contact_point;

typedef struct q_manifold {
    double normal[3]; /* unit, from A to B */
    uint32_t count;   /* 0..Q_MANIFOLD_POINTS */
    uint32_t key;     /* which parts touch (compounds: part_a << 16 | part_b) */
    q_contact_point points[Q_MANIFOLD_POINTS];
} q_manifold;

/* Manifolds between two shapes (one per touching pair of convex parts for
 * compounds; at most cap). Returns the number written. */
int q_collide_shapes(const q_collider *a, const q_xform *ta, const q_collider *b, const q_xform *tb, double margin,
                     q_manifold *out, int cap);

/* One manifold per (body, physics chunk) pair with the terrain as A: the
 * normal points from the terrain towards the body. Internal edges between
 * triangles (within a chunk and across chunk borders) never push sideways
 * or up against a flat surface's motion: edges whose neighbour is coplanar,
 * concave or convex by under 1 degree are internal, and a contact on one
 * takes the triangle's face normal (collide_terrain.c has the rule).
 * Where the triangles of one chunk face clearly different ways (a floor and
 * a wall), the chunk gives one manifold per normal cluster (at most 3),
 * m.key 0, 1, 2. A body whose lowest point is inside a FULL chunk (solid,
 * no triangles) gets one point there with normal +Y and separation minus
 * its depth below the chunk's top (m.key 3); so does a body with no
 * triangle near it whose centre is inside the solid, its depth measured to
 * the surface above. Compound parts add part << 16
 * to m.key. Point ids hash the triangle and its feature (those two points:
 * Q_TERRAIN_ID_FULL and Q_TERRAIN_ID_BURIED below). Not thread-safe
 * (the chunk cache is built on demand). */
typedef struct q_terrain_manifold {
    int32_t cx, cy, cz; /* physics chunk (Q_PHYS_CHUNK voxels) */
    uint8_t material;   /* terrain material at the deepest point */
    q_manifold m;
} q_terrain_manifold;

/* Point ids of the two contacts that come from no triangle: a lowest point
 * inside a FULL chunk, and a buried body's point (found by its ray up to the
 * surface above, the only ray a terrain query casts). */
#define Q_TERRAIN_ID_FULL 0xfffffff0u
#define Q_TERRAIN_ID_BURIED 0xfffffff1u

/* Contacts of a shape placed by t against the solid terrain surface within
 * margin. Returns the number of manifolds (at most cap). At most 1024
 * triangles are considered per call (a shape of about 20 voxels across on
 * rough ground); no heap allocation except a chunk's first mesh build. */
size_t q_collide_terrain(q_terrain_physics *tp, const q_collider *s, const q_xform *t, double margin,
                         q_terrain_manifold *out, size_t cap);
/* The same, without the broadphase test first: for callers that already
 * know the shape's bounds grown by at most margin touch solid (the answer
 * is then the same). */
size_t q_collide_terrain_near(q_terrain_physics *tp, const q_collider *s, const q_xform *t, double margin,
                              q_terrain_manifold *out, size_t cap);

/* Builds (into the terrain physics cache) the chunk meshes that
 * q_collide_terrain with the same arguments would read, so that the call
 * can then run on a frozen cache (physics_internal.h q_tp_freeze) from any
 * thread. The buried-body fallback may still read other chunks (a ray up
 * to 64 voxels): a frozen call that misses one says so (q_tp_take_missed). */
void q_collide_terrain_warm(q_terrain_physics *tp, const q_collider *s, const q_xform *t, double margin);

/* Shape casts: the shape moves by translation from `from` to from.p + delta
 * (rotation fixed). The first time of impact fraction in [0, 1], the world
 * contact point and the normal (facing the moving shape) are returned. */
typedef struct q_cast_hit {
    double fraction;
    double position[3];
    double normal[3];
    uint8_t material; /* terrain casts */
} q_cast_hit;
/* Casts use conservative advancement with GJK distances (to 1e-6 of the
 * shape's size); a shape already touching at the start hits at fraction 0. */
bool q_shapecast_terrain(q_terrain_physics *tp, const q_collider *s, const q_xform *from, const double delta[3],
                         q_cast_hit *hit);
bool q_shapecast_shape(const q_collider *s, const q_xform *from, const double delta[3], const q_collider *target,
                       const q_xform *target_xform, q_cast_hit *hit);

/* GJK distance between two convex shapes (not compounds): >= 0 when apart
 * (with the closest points), or a negative value when they overlap (the
 * penetration depth from EPA, with the points of deepest penetration). */
double q_gjk_distance(const q_collider *a, const q_xform *ta, const q_collider *b, const q_xform *tb, double pa[3],
                      double pb[3]);

#endif
