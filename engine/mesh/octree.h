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
    size_t blocks, rebuilt_blocks; /* chunk blocks (one chunk's nodes and interior) in the box; rebuilt now */
    size_t seams, rebuilt_seams;   /* seam groups in the box; rebuilt now */
} q_lod_result;

/* Meshes the cells owned by box (dc.h ownership rule) with each chunk at the
 * level `level` gives it (NULL: all at LOD0). The box is meshed in pieces of
 * one chunk, so any size within the terrain limits works. Fails with the
 * codes of q_dc_mesh, Q_ERR_TOO_LARGE over Q_LOD_MAX_CHUNKS or Q_ERR_MEMORY. */
q_status q_lod_build(const q_terrain *t, q_box box, q_surface surface, float scale, q_lod_level_fn level, void *ud,
                     q_lod_result *out, char *err, size_t errlen);

/* Cache of the parts of a build, kept between builds. Three kinds of entry,
 * each rebuilt only when what it was built from changed:
 *  - piece (per chunk): the chunk's LOD0 leaves and triangles from dc.c;
 *    stale once q_lod_cache_invalidate names a box near it (or when the
 *    chunk's part of the build box changes);
 *  - block (per chunk): the chunk's octree nodes at its level and its
 *    interior triangles; stale when the level or a piece of chunk + {0,1}^3
 *    changed;
 *  - seam (per 2x2x2 group of chunks): the triangles between its chunks;
 *    stale when a piece or block of the group changed.
 * So a viewer move rebuilds the blocks whose level changed and the seams
 * around them, an edit the pieces it touched and the blocks and seams
 * around those. The mesh is then joined from all blocks and seams in chunk
 * order: the result equals q_lod_build's for the same terrain, box and
 * levels, whatever was cached and however many threads ran.
 *
 * The cache does not read the change log: the caller reports edits with
 * q_lod_cache_invalidate (mesh/clipmap.h does, from q_terrain_changes_since).
 * A cache is used by one build at a time; pieces, blocks and seams are built
 * in parallel on jobs (may be NULL). */
typedef struct q_lod_cache q_lod_cache;
struct q_jobs;
q_lod_cache *q_lod_cache_create(void);
void q_lod_cache_destroy(q_lod_cache *c);
/* Voxels in box changed: pieces within 3 voxels of it are remeshed next build. */
void q_lod_cache_invalidate(q_lod_cache *c, q_box box);
void q_lod_cache_invalidate_all(q_lod_cache *c);
/* Makes a build running on another thread stop soon with an error, and every
 * later build fail: for tearing the cache down. Thread-safe. */
void q_lod_cache_cancel(q_lod_cache *c);
q_status q_lod_build_cached(q_lod_cache *cache, struct q_jobs *jobs, const q_terrain *t, q_box box,
                            q_surface surface, float scale, q_lod_level_fn level, void *ud, q_lod_result *out,
                            char *err, size_t errlen);

#endif
