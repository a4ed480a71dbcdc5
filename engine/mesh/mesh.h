/* Triangle meshes as values: what the mesher returns to scripts, what files
 * load into and what hulls and fragments will be made from.
 *
 * A q_mesh owns its arrays (q_alloc). Indices are 0-based triangles,
 * counter-clockwise seen from outside. normals and materials are optional
 * (NULL) per-vertex attributes.
 */
#ifndef Q_MESH_H
#define Q_MESH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "voxel/terrain.h"

typedef struct q_mesh {
    float *positions; /* 3 per vertex */
    float *normals;   /* 3 per vertex, or NULL */
    uint8_t *materials; /* 1 per vertex, or NULL */
    uint32_t *indices;
    size_t vertex_count, index_count;
} q_mesh;

/* Allocates a mesh with room for exactly these counts (attributes optional);
 * arrays are uninitialised. NULL when out of memory. */
q_mesh *q_mesh_create(size_t vertices, size_t indices, bool normals, bool materials);
void q_mesh_destroy(q_mesh *m);

/* Closed primitives centred on the origin (primitives.c), counter-clockwise
 * from outside, welded. A box of full extents size (12 triangles); a sphere
 * of the given radius, an icosahedron split detail times (20 * 4^detail
 * triangles; detail 0..7). NULL when out of memory. */
q_mesh *q_mesh_box(const double size[3]);
q_mesh *q_mesh_sphere(double radius, int detail);

/* Axis-aligned bounds; false for a mesh without vertices. */
bool q_mesh_bounds(const q_mesh *m, double min[3], double max[3]);
/* Signed volume by the divergence theorem (positive for a closed mesh wound
 * outward); meaningless for open meshes. */
double q_mesh_volume(const q_mesh *m);
double q_mesh_area(const q_mesh *m);
/* True when every directed edge appears exactly once and its reverse exactly
 * once: a closed, consistently oriented 2-manifold (by index). Degenerate
 * triangles (repeated index) make it false. */
bool q_mesh_is_closed(const q_mesh *m);
/* Writes Wavefront OBJ (v, vn when present, f with 1-based indices). */
q_status q_mesh_save_obj(const q_mesh *m, const char *path, char *err, size_t errlen);

#endif
