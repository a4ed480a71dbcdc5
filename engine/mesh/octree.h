/* Level-of-detail meshes from chunk octrees of dual-contouring vertices
 * (seed 002: octrees built upward, simplified nodes of sizes 2..16, seams
 * between chunks of different LOD).
 *
 * Model. The world is cut into chunks of Q_LOD_CHUNK^3 cells. The leaves of a
 * chunk's octree are the LOD0 vertices of mesh/dc.h (one per surface patch of
 * an active cell) with the plane through the vertex along its normal. A node
 * of size 2^L (L = 1..Q_LOD_MAX_LEVEL, sizes 2..16) covers the cells
 * [n * 2^L, (n + 1) * 2^L) of its chunk; its QEF is the sum of its children's
 * (so of its leaves'), solved as in mesh/qef.h relative to the node and
 * clamped to the node's cube: the node is "simplified" regardless of error,
 * so every level exists.
 *
 * A chunk drawn at LOD L uses its nodes of size 2^L. The mesh of a set of
 * chunks at mixed LODs is the LOD0 mesh of dc.h with every leaf replaced by
 * its node at its own chunk's level (vertex clustering along the octrees):
 * triangles whose corners fall in one node vanish, triangles repeated with
 * opposite orientation cancel. Because the map from leaves to nodes is one
 * function applied to one closed LOD0 surface, the result is closed whatever
 * the mix of levels: every directed edge is matched by its reverse, so there
 * is no crack at any LOD border. Triangles whose three nodes lie in one chunk
 * form that chunk's mesh; the others (they join nodes of neighbouring chunks,
 * of the same or of different sizes) form the seam.
 */
#ifndef Q_OCTREE_H
#define Q_OCTREE_H

#include <stddef.h>
#include <stdint.h>

#include "mesh/dc.h"
#include "mesh/mesh.h"

#define Q_LOD_CHUNK 32
#define Q_LOD_MAX_LEVEL 4
/* Largest number of chunks one build spans (a 2048x256x2048 box):
 * larger boxes fail with Q_ERR_TOO_LARGE. */
#define Q_LOD_MAX_CHUNKS 32768

/* Level (0..Q_LOD_MAX_LEVEL) of the chunk with chunk coordinates c (cells
 * c * Q_LOD_CHUNK .. + Q_LOD_CHUNK). */
typedef int (*q_lod_level_fn)(void *ud, const int32_t c[3]);

typedef struct q_lod_result {
    q_mesh *mesh;           /* positions in voxels * scale, absolute; NULL if empty */
    size_t chunk_triangles; /* the first ones in mesh: chunk interiors */
    size_t seam_triangles;  /* the rest: seams between chunks */
    size_t triangles_per_level[Q_LOD_MAX_LEVEL + 1]; /* chunk interiors by their chunk's level */
    size_t lod0_triangles;  /* triangles of the LOD0 mesh of the same box */
    size_t remeshed_chunks; /* chunk pieces meshed by dc.c in this build (others came from the cache) */
} q_lod_result;

/* Meshes the cells owned by box (dc.h ownership rule) with each chunk at the
 * level `level` gives it (NULL: all at LOD0). The box is meshed in pieces of
 * one chunk, so any size within the terrain limits works. Fails with the
 * codes of q_dc_mesh or Q_ERR_MEMORY. */
q_status q_lod_build(const q_terrain *t, q_box box, q_surface surface, float scale, q_lod_level_fn level, void *ud,
                     q_lod_result *out, char *err, size_t errlen);

/* Cache of the per-chunk LOD0 leaves and triangles between builds. A build
 * takes the terrain's change log (q_terrain_changes_since) and remeshes only
 * the chunk pieces an edit touched (or whose box changed), in parallel on
 * jobs (may be NULL); a viewer move remeshes none and only re-clusters. */
typedef struct q_lod_cache q_lod_cache;
struct q_jobs;
q_lod_cache *q_lod_cache_create(void);
void q_lod_cache_destroy(q_lod_cache *c);
/* Pieces meshed by the last build. */
size_t q_lod_cache_remeshed(const q_lod_cache *c);
q_status q_lod_build_cached(q_lod_cache *cache, struct q_jobs *jobs, const q_terrain *t, q_box box,
                            q_surface surface, float scale, q_lod_level_fn level, void *ud, q_lod_result *out,
                            char *err, size_t errlen);

#endif
