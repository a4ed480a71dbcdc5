/* Clipmap LOD state of a world (seed 002): the viewer, the distance table,
 * the last complete LOD mesh and the background rebuild that replaces it.
 *
 * A chunk (Q_LOD_CHUNK^3 cells, mesh/octree.h) is drawn at level L = the
 * number of table entries d_i (voxels) with d_i <= distance from the viewer
 * to the chunk's box, capped at Q_LOD_MAX_LEVEL (node size 16). The default
 * table is {48, 96, 192, 384} voxels. Seams between chunks of different
 * levels come out of the same build (octree.h), so any table is crack-free.
 *
 * Rebuilds. The clipmap keeps a q_lod_cache (octree.h), so a rebuild only
 * redoes the blocks whose level changed, the pieces an edit touched and the
 * seams around both. It runs on the clipmap's own worker thread, which
 * reads the clipmap's copy of the terrain, never the world's: before a
 * rebuild starts, the calling thread copies the boxes edited since the last
 * one (from q_terrain_changes_since). The whole terrain is copied the first
 * time, after more than 512 chunks' worth of edits or when the change log has
 * moved on: 16 chunks per call that does not wait, so the copy is spread over
 * calls (frames) and the rebuild starts once it is complete. Until the
 * rebuild completes, the previous mesh stays published, whole: its seams are
 * the ones built with its blocks. A finished rebuild is published by the
 * next q_clipmap_update.
 * The published mesh depends only on the terrain, box, scale and levels it
 * was requested for, never on thread count or timing.
 *
 * Memory: the terrain copy holds as many dense chunks as the world's
 * terrain, and the cache keeps every LOD0 leaf of the box (about 60 bytes per
 * LOD0 triangle).
 */
#ifndef Q_CLIPMAP_H
#define Q_CLIPMAP_H

#include <stdbool.h>

#include "mesh/octree.h"

typedef struct q_clipmap {
    bool has_viewer;
    double viewer[3]; /* voxel units */
    double distances[Q_LOD_MAX_LEVEL]; /* voxels, increasing */
    q_lod_result last; /* counts of the published mesh (mesh member not kept) */
    struct q_clipmap_state *state; /* worker, terrain copy, cache, published mesh */
} q_clipmap;

/* The published mesh. */
typedef struct q_clipmap_result {
    const q_mesh *mesh; /* chunks then seams (octree.h); NULL when empty or none yet */
    q_lod_result info;  /* its counts; info.mesh is NULL */
    q_box box;          /* the box it covers */
    uint64_t serial;    /* 0: nothing published yet; changes with every new mesh */
    bool current;       /* built for the viewer levels, terrain version and box of the
                           last q_clipmap_update; false while a newer one is pending */
} q_clipmap_result;

q_clipmap *q_clipmap_create(void);
/* Stops a running rebuild (it is abandoned) and frees everything. */
void q_clipmap_destroy(q_clipmap *c);
void q_clipmap_set_viewer(q_clipmap *c, const double voxel_pos[3]);
/* Distances must be finite, > 0 and increasing; false otherwise. */
bool q_clipmap_set_distances(q_clipmap *c, const double d[Q_LOD_MAX_LEVEL]);
/* Level of chunk ch for the current viewer (0 without a viewer). */
int q_clipmap_level(const q_clipmap *c, const int32_t ch[3]);

/* Asks for the LOD mesh of box (voxels; positions come out times scale) for
 * the current viewer and the terrain t. Publishes a finished rebuild first.
 * wait = false: never waits for meshing; when the published mesh is not the
 * one asked for and no rebuild runs, copies the edits of t (or the next 16
 * chunks of a whole copy) and starts one on the worker thread (a running one
 * is left to finish; a later call starts the one after it). Call it again
 * (once per frame) to publish it. wait = true: returns once the published mesh is
 * the one asked for (a running rebuild is joined, then the rest is built on
 * the calling thread with jobs, which may be NULL).
 * Returns Q_OK, or the failure of a build for this request (Q_ERR_ARGUMENT,
 * Q_ERR_TOO_LARGE for a bad box, Q_ERR_MEMORY; the previous mesh stays
 * published and the same request is not retried). */
q_status q_clipmap_update(q_clipmap *c, struct q_jobs *jobs, const q_terrain *t, q_box box, float scale, bool wait,
                          char *err, size_t errlen);
/* The published mesh; valid until the next q_clipmap_update or destroy. */
q_clipmap_result q_clipmap_get(const q_clipmap *c);

/* q_clipmap_update with wait = true, then a copy of the published mesh in
 * out->mesh (caller-owned, NULL when empty) with its counts. */
q_status q_clipmap_mesh(q_clipmap *c, struct q_jobs *jobs, const q_terrain *t, q_box box, float scale,
                        q_lod_result *out, char *err, size_t errlen);

#endif
