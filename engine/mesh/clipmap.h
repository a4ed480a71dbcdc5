/* Clipmap LOD state of a world (seed 002): the viewer, the distance table and
 * the triangle counts of the last LOD mesh.
 *
 * A chunk (Q_LOD_CHUNK^3 cells, mesh/octree.h) is drawn at level L = the
 * number of table entries d_i (voxels) with d_i <= distance from the viewer
 * to the chunk's box, capped at Q_LOD_MAX_LEVEL (node size 16). The default
 * table is {48, 96, 192, 384} voxels. Seams between chunks of different
 * levels come out of the same build (octree.h), so any table is crack-free.
 */
#ifndef Q_CLIPMAP_H
#define Q_CLIPMAP_H

#include <stdbool.h>

#include "mesh/octree.h"

typedef struct q_clipmap {
    bool has_viewer;
    double viewer[3]; /* voxel units */
    double distances[Q_LOD_MAX_LEVEL]; /* voxels, increasing */
    q_lod_result last; /* counts of the last q_clipmap_mesh (mesh member not kept) */
    q_lod_cache *cache; /* per-chunk LOD0 data, kept between builds */
} q_clipmap;

q_clipmap *q_clipmap_create(void);
void q_clipmap_destroy(q_clipmap *c);
void q_clipmap_set_viewer(q_clipmap *c, const double voxel_pos[3]);
/* Distances must be finite, > 0 and increasing; false otherwise. */
bool q_clipmap_set_distances(q_clipmap *c, const double d[Q_LOD_MAX_LEVEL]);
/* Level of chunk ch for the current viewer (0 without a viewer). */
int q_clipmap_level(const q_clipmap *c, const int32_t ch[3]);
/* Builds the active meshes and seams of the box for the current viewer; the
 * counts are also kept in c->last. Only chunks edited since the last call are
 * remeshed at LOD0 (on jobs, may be NULL); the clustering is redone. */
q_status q_clipmap_mesh(q_clipmap *c, struct q_jobs *jobs, const q_terrain *t, q_box box, float scale,
                        q_lod_result *out, char *err, size_t errlen);

#endif
