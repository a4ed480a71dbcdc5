/* Quadric edge-collapse simplification of indexed triangle meshes
 * (Garland and Heckbert 1997, "Surface Simplification Using Quadric Error
 * Metrics"; seed 002 uses the same idea after Grund, Derzapf and Guthe 2011,
 * "Instant Level-of-Detail").
 *
 * Each vertex carries the sum of the area-weighted plane quadrics of its
 * triangles. Edges are collapsed cheapest first (a binary heap of costs,
 * stale entries skipped by per-vertex version stamps) to the point that
 * minimises the summed quadric, or to the better endpoint or the midpoint
 * when that point is ill-conditioned or far from the edge. A collapse is
 * rejected when it would flip or flatten a triangle, break the link
 * condition (so a closed 2-manifold stays closed), leave a vertex of fewer
 * than three triangles, or move or remove a locked vertex. A free vertex may
 * still collapse onto a locked one (the locked one stays exactly where it
 * is), so the ring next to a locked border simplifies too.
 *
 * Used by mesh/octree.c for chunk interiors at LOD 1 and 2 when
 * q_simplify_set_lod_mode(Q_LOD_COLLAPSE) is in force: leaves of cells on
 * the chunk's faces stay clustered into their nodes (seams join only those)
 * and are locked, the other leaves are collapsed to the triangle count that
 * clustering gives. From LOD 3 (nodes of 8) nearly every node touches a face,
 * so those levels stay clustered.
 */
#ifndef Q_SIMPLIFY_H
#define Q_SIMPLIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct q_simplify_def {
    /* Stop once the mesh has at most this many indices (3 per triangle). */
    size_t target_index_count;
    /* Per vertex, nonzero: never moved or removed. NULL: none. */
    const uint8_t *locked;
    /* Also lock every vertex on an edge that is not shared by exactly two
     * oppositely wound triangles (open borders, non-manifold edges).
     * Default true. */
    bool lock_border;
} q_simplify_def;

typedef struct q_simplify_stats {
    size_t collapses;
    size_t rejected; /* collapses refused (flip, link, valence, locked) */
    double max_cost; /* largest quadric cost accepted, squared length * area */
} q_simplify_stats;

q_simplify_def q_default_simplify_def(void);

/* Simplifies the triangles indices[0..index_count) over positions (3 floats
 * per vertex, vertex_count vertices). Writes the kept triangles to out
 * (capacity index_count; may be indices itself) and returns their index
 * count, or SIZE_MAX when out of memory (out and positions then untouched).
 * Vertices that survive a collapse get their new position in positions;
 * remap (optional, vertex_count entries) receives for each vertex the
 * vertex it ended in (itself when kept or unused). stats may be NULL.
 * Triangles keep their winding; those with a repeated or out-of-range index
 * are dropped; unused vertices are left as they are. */
size_t q_simplify(uint32_t *out, const uint32_t *indices, size_t index_count, float *positions, size_t vertex_count,
                  const q_simplify_def *def, uint32_t *remap, q_simplify_stats *stats);

/* How mesh/octree.c simplifies chunk interiors at LOD 1 and 2:
 * Q_LOD_CLUSTER (the default: every leaf replaced by its node's QEF vertex)
 * or Q_LOD_COLLAPSE (face leaves clustered and locked, inside edge-collapsed
 * from the LOD0 leaves to the same count). Process-wide; a build reads it
 * once at its start and cached blocks built the other way are rebuilt.
 * Thread-safe. */
typedef enum q_lod_mode { Q_LOD_CLUSTER = 0, Q_LOD_COLLAPSE = 1 } q_lod_mode;
void q_simplify_set_lod_mode(q_lod_mode mode);
q_lod_mode q_simplify_lod_mode(void);

#endif
