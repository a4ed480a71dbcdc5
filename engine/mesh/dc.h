/* Dual contouring of voxel terrain (see seed 002 and Ju et al. 2002).
 *
 * Samples are voxel centres: voxel (x, y, z) is sampled at (x+.5, y+.5, z+.5)
 * in voxel units. A sample is inside the solid surface when its material is
 * not liquid and its occupancy is >= 128 (density > 1/2); inside the water
 * surface when it is liquid with occupancy >= 128. Cell (i, j, k) is the cube
 * between samples (i..i+1, j..j+1, k..k+1), i.e. [i+.5, i+1.5]^3.
 *
 * An edge between two neighbouring samples is active when one is inside and
 * the other is not (for water: the other holds no solid at all, so the
 * water surface is not drawn against rock or partly filled shores). Its
 * crossing is where the densities, interpolated linearly along the edge,
 * cross 1/2. Each active cell gets one vertex, the minimiser of the QEF of its
 * crossings (qef.h), clamped to the cell; its material is the surface's
 * material on most of the cell's corners, ties going to the layer nearer the
 * surface. Each active edge gets one quad joining the vertices of the four cells
 * around it, split into two triangles along the shorter diagonal and wound so
 * that the front faces outward (counter-clockwise seen from outside).
 *
 * Ownership. The mesh of a box of samples [min, max) holds the quads of the
 * edges that start at a sample in the box (edge from p to p + axis). A
 * partition of a box therefore splits its quads exactly, and since a vertex
 * depends only on the samples around its cell (two samples either way),
 * the pieces have bit-identical vertex positions. This is what lets 8^3
 * physics chunks and 32^3 render chunks share the mesher.
 *
 * Vertices are snapped to a grid of 1/Q_DC_GRID voxel (invisible at 2^-11
 * voxel), so chunk meshes can store them exactly as 16-bit integers relative
 * to the chunk corner (physics/terrain_physics.c does).
 *
 * Positions are in voxel units times `scale` (pass the world's voxel_size to
 * get world units), relative to out->origin: a vertex of cell (i, j, k) lies
 * in ([i+.5, i+1.5] - origin)^3 * scale.
 */
#ifndef Q_DC_H
#define Q_DC_H

#include <stddef.h>
#include <stdint.h>

#include "voxel/terrain.h"

#define Q_DC_GRID 2048

typedef enum q_surface { Q_SURFACE_SOLID, Q_SURFACE_WATER } q_surface;

/* Caller-owned output. Arrays hold vertex_capacity vertices (positions and
 * normals: 3 floats each; materials: 1 byte each) and index_capacity
 * indices; counts are set by q_dc_mesh. */
typedef struct q_dc_output {
    float *positions;
    float *normals; /* unit, pointing out of the surface; may be NULL */
    uint8_t *materials; /* dominant non-air material of the cell; may be NULL */
    uint32_t *indices;  /* triangles, counter-clockwise from outside */
    size_t vertex_capacity, index_capacity;
    size_t vertex_count, index_count;
    int32_t origin[3]; /* voxel coordinates subtracted before scaling, so that
                          positions far from 0 keep float precision; zero for
                          absolute positions */
    int32_t *cells;    /* 3 per vertex: the cell (i, j, k) the vertex belongs to;
                          may be NULL (used by the LOD octrees, mesh/octree.h) */
} q_dc_output;

/* Largest vertex and index counts a box can produce. */
size_t q_dc_vertex_bound(q_box box);
size_t q_dc_index_bound(q_box box);

/* Bytes of scratch memory q_dc_mesh needs for a box (it allocates and frees
 * them itself unless given a buffer of at least this size). */
size_t q_dc_scratch_bytes(q_box box);

/* Largest box (in samples) one call accepts: scratch memory is about 8 bytes
 * per sample, so 2^22 samples (a 161^3 box) take ~40 MB. */
#define Q_DC_MAX_SAMPLES (1ull << 22)

/* Meshes the surface of the box [min, max) of samples. scratch may be NULL
 * (allocated per call) or point to q_dc_scratch_bytes(box) bytes. Fails with
 * Q_ERR_ARGUMENT for an inverted or out-of-limit box, Q_ERR_TOO_LARGE over
 * Q_DC_MAX_SAMPLES, Q_ERR_OUTPUT when the output arrays are too small
 * (counts are then 0; the bounds above are always enough), Q_ERR_MEMORY when
 * scratch cannot be allocated. An empty box gives an empty mesh. */
q_status q_dc_mesh(const q_terrain *t, q_box box, q_surface surface, float scale, q_dc_output *out,
                   void *scratch, char *err, size_t errlen);

#endif
