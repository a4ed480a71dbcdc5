/* Grid-sort ray casts (seed 004, "Grid-Sort RayCasts").
 *
 * A stack of 2D grids over the plane perpendicular to a direction D: the
 * finest has up to `resolution` square cells along its longer side, each
 * coarser level halves both counts down to a single cell. A triangle goes
 * into the finest level where its footprint covers fewer than 12 cells,
 * and into each of those cells (rasterized row by row, with a small pad).
 * Levels that hold nothing store nothing, and a level with under 1/16 of
 * its cells in use hands its triangles to the next coarser one. Every
 * cell's list lives in one shared array, sorted by the triangles' centres
 * along D, with the running "max to the left" and "min to the right" of
 * their extents along D, so that a ray binary searches its own extent
 * along D in a crowded cell.
 *
 * A ray is clipped to the bounds and walked cell by cell through each level,
 * front to back, stopping once the next cell starts beyond the closest hit.
 * Hits come from q_ray_triangle (physics/kdtree.h) on the mesh's own float
 * vertices, so they agree bit for bit with a brute-force loop and with the kD
 * tree. The structure is meant for many rays along or near D (a sun
 * direction, a down ray), which visit one cell per level; other rays work
 * too but walk many cells.
 */
#ifndef Q_GRIDSORT_H
#define Q_GRIDSORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "voxel/terrain.h"

#define Q_GRIDSORT_MAX_RESOLUTION 2048
#define Q_GRIDSORT_MAX_TRIANGLES (1u << 26)

typedef struct q_gridsort q_gridsort;

/* Builds a grid sort over the triangles (indices: 3 per triangle, 0-based
 * into positions, 3 floats per vertex). The triangles are copied, so the
 * arrays may be freed afterwards. dir (any length > 0) is the sort axis D;
 * resolution (1..Q_GRIDSORT_MAX_RESOLUTION) the cell count of the finest
 * level along its longer side. Returns Q_OK and *out, or an error with a
 * message in err: Q_ERR_ARGUMENT (zero or non-finite dir, bad resolution,
 * index out of range, non-finite position, index_count not a multiple of
 * 3), Q_ERR_TOO_LARGE (over Q_GRIDSORT_MAX_TRIANGLES), Q_ERR_MEMORY. An empty
 * mesh is fine: every ray misses. Free with q_gridsort_free. */
q_status q_gridsort_build(q_gridsort **out, const float *positions, size_t vertex_count, const uint32_t *indices,
                          size_t index_count, const float dir[3], int resolution, char *err, size_t errlen);
void q_gridsort_free(q_gridsort *gs);

/* Bytes held by the structure: triangles, grids, cell lists. */
size_t q_gridsort_bytes(const q_gridsort *gs);
uint32_t q_gridsort_triangle_count(const q_gridsort *gs);
/* The copied vertices of triangle i (9 floats: a, b, c). */
const float *q_gridsort_triangle(const q_gridsort *gs, uint32_t i);
/* Levels kept (non-empty) and the finest level's cell counts. */
void q_gridsort_info(const q_gridsort *gs, int *levels_kept, int *cells_u, int *cells_v);

/* Closest hit of the ray origin + t * dir with t in [0, tmax] (units of
 * |dir|; dir need not be unit length). Triangles are two-sided; equal t
 * goes to the lower triangle index. Returns false for a miss, a zero or
 * non-finite dir or origin. Thread-safe: the structure is not written. */
bool q_gridsort_raycast(const q_gridsort *gs, const float origin[3], const float dir[3], float tmax, float *t_out,
                        uint32_t *triangle_out);

/* n rays (3 floats each in origins and dirs) against the same tmax; writes
 * each ray's t to t_out (caller-owned, n floats), or -1 for a miss. Uses a
 * per-call scratch table so that a triangle met in several cells is tested
 * once per ray. Returns the number of hits. */
size_t q_gridsort_raycast_batch(const q_gridsort *gs, const float *origins, const float *dirs, size_t n, float tmax,
                                float *t_out);

#endif
