/* Terrain physics data (seed 000): a bit broadphase over 8^3 physics chunks
 * and a lazily built, size-bounded cache of chunk meshes with loose kD trees;
 * ray and overlap queries against exactly the triangles the mesher makes.
 *
 * Broadphase. Per physics chunk two masks, solid and water, of 8^3 bits (one
 * uint64_t per Y slice, bit x + 8 z). A bit is set when any sample in the
 * voxel's 3^3 neighbourhood is inside the surface: exactly the voxels whose
 * box the chunk's triangles (or the solid itself) can reach, since a mesh
 * vertex stays in its cell. Masks are built from the chunk's 10^3 voxel box
 * with shifts and ORs. A chunk with no bits stores nothing; a chunk whose 10^3
 * box is all inside is tagged FULL (no triangles, but it overlaps).
 *
 * Sync. Every query first brings the data up to the terrain's version
 * through the change log: broadphase chunks within one voxel of a changed box
 * are rebuilt at once, cached meshes within two voxels are dropped (a mesh
 * vertex depends on samples two voxels away). So an edit is seen by the very
 * next query.
 *
 * Units. Queries take world positions (metres); the voxel size scales.
 * Chunk meshes are stored relative to the chunk's corner so that float
 * precision does not depend on where the chunk is.
 */
#ifndef Q_TERRAIN_PHYSICS_H
#define Q_TERRAIN_PHYSICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "voxel/terrain.h"

#define Q_PHYS_CHUNK 8

typedef struct q_terrain_physics q_terrain_physics;

/* cache_bytes: budget for cached chunk meshes and trees (0 = default 32 MiB).
 * The terrain is borrowed and must outlive this object. */
q_terrain_physics *q_terrain_physics_create(q_terrain *t, double voxel_size, size_t cache_bytes);
void q_terrain_physics_destroy(q_terrain_physics *p);

/* Brings the broadphase and the cache up to the terrain's current version;
 * queries call it themselves. False when out of memory (the data is then
 * rebuilt from scratch on the next call). */
bool q_terrain_physics_sync(q_terrain_physics *p);

typedef struct q_overlap {
    bool solid, water;
} q_overlap;

/* Broadphase only: whether the box (world units), grown by one voxel, touches
 * voxels whose neighbourhood holds solid or water. Never false where a
 * triangle of the surface intersects the box or the box is inside. */
q_overlap q_terrain_physics_broadphase(q_terrain_physics *p, const double min[3], const double max[3]);

/* Exact overlaps: true when a triangle of the surface intersects the shape or
 * the shape's centre is inside the solid (water) region. */
q_overlap q_terrain_physics_overlap_sphere(q_terrain_physics *p, const double center[3], double radius);
q_overlap q_terrain_physics_overlap_box(q_terrain_physics *p, const double center[3], const double half[3]);

enum { Q_RAY_SOLID = 1, Q_RAY_WATER = 2 };

typedef struct q_ray_hit {
    double position[3];
    double normal[3]; /* unit, facing the ray's origin */
    double distance;  /* metres from the origin */
    uint8_t material;
    bool water;
} q_ray_hit;

/* Closest hit along origin + t dir, t in [0, max_distance] (dir is
 * normalised here; it must be non-zero and finite). */
bool q_terrain_physics_raycast(q_terrain_physics *p, const double origin[3], const double dir[3],
                               double max_distance, unsigned flags, q_ray_hit *hit);
/* Every hit, nearest first, up to cap (returns the total count). */
size_t q_terrain_physics_raycast_all(q_terrain_physics *p, const double origin[3], const double dir[3],
                                     double max_distance, unsigned flags, q_ray_hit *hits, size_t cap);

/* n rays (6 doubles each: origin, direction) against the same max_distance;
 * out[i] is the hit distance or -1. Large batches of nearly parallel solid
 * rays (at least Q_BATCH_GRIDSORT_MIN rays within 10 degrees of their mean
 * direction, e.g. sun rays) go through a grid sort (geom/gridsort.h) built
 * over the terrain they can reach, which pays for its build at that size;
 * others are cast one by one. Either way the hits are the mesher's
 * triangles. Returns the number of hits. */
#define Q_BATCH_GRIDSORT_MIN 32768
size_t q_terrain_physics_raycast_batch(q_terrain_physics *p, const double *rays, size_t n, double max_distance,
                                       unsigned flags, double *out);

typedef struct q_terrain_physics_stats {
    size_t broadphase_chunks; /* stored entries (masks or FULL tags) */
    size_t broadphase_bytes;
    size_t cached_chunks;     /* chunks with a mesh and tree in the cache */
    size_t cache_bytes;
    size_t triangles;         /* in cached meshes */
    size_t kd_nodes;
    size_t gridsort_batches;  /* ray batches served by a grid sort so far */
} q_terrain_physics_stats;
q_terrain_physics_stats q_terrain_physics_get_stats(q_terrain_physics *p);

#endif
