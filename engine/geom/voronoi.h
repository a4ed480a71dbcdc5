/* Voronoi cells of point sites inside a box, by box cutting (design note
 * 003): each cell starts as the box around its site and is cut by the
 * bisector plane of each neighbour, nearest blocks of a uniform grid first,
 * until the next block of the grid is farther than twice the largest
 * distance from the site to a cell vertex; no later bisector can reach the
 * cell then. The cell is kept as vertices, edges and planes (every vertex
 * joins three edges and three planes), never rebuilt by a general hull;
 * faces are read off its edges at the end.
 */
#ifndef Q_VORONOI_H
#define Q_VORONOI_H

#include <stdbool.h>
#include <stddef.h>

/* Neighbour ids of faces on the box walls, as voro++ numbers them. */
enum { Q_VORONOI_WALL_X0 = -1, Q_VORONOI_WALL_X1 = -2, Q_VORONOI_WALL_Y0 = -3,
       Q_VORONOI_WALL_Y1 = -4, Q_VORONOI_WALL_Z0 = -5, Q_VORONOI_WALL_Z1 = -6 };

typedef struct q_voronoi_cell {
    double site[3];
    double volume;
    int vertex_count;
    double *vertices;     /* 3 per vertex, world coordinates */
    int face_count;
    int *face_start;      /* face f has vertices face_vertices[face_start[f] .. face_start[f+1]) */
    int *face_vertices;   /* counter-clockwise seen from outside the cell */
    int *face_neighbor;   /* site index (0-based) across face f, or a Q_VORONOI_WALL_* id */
} q_voronoi_cell;

typedef struct q_voronoi {
    size_t cell_count; /* one per site, in site order */
    q_voronoi_cell *cells;
    /* Storage of all cells' arrays when q_voronoi_compute made them (one
     * block of doubles, one of ints; the cells point into them). NULL when
     * each cell's arrays were allocated on their own (q_voronoi_free then
     * frees them cell by cell). */
    double *doubles;
    size_t doubles_cap;
    int *ints;
    size_t ints_cap;
} q_voronoi;

/* Computes the cells of count sites (x, y, z triples) clipped to the box
 * [min, max]. Returns NULL and writes err when a site is non-finite or
 * outside the box, two sites coincide, the box is empty, or memory runs out.
 * Free the result with q_voronoi_free. */
q_voronoi *q_voronoi_compute(const double *sites, size_t count, const double min[3], const double max[3],
                             char *err, size_t errlen);
void q_voronoi_free(q_voronoi *v);

/* The bisector half-space of face f of cell c: points x with
 * dot(n, x) <= d are on the cell's side. */
void q_voronoi_face_plane(const q_voronoi *v, size_t c, int f, double n[3], double *d);

/* The neighbour grid of q_voronoi_compute, for other implementations of
 * the same algorithm (the GPU path): blocks of side h from origin, n[k]
 * along axis k, block (x, y, z) numbered (z * n[1] + y) * n[0] + x, about
 * two sites each; block b holds sites ids[start[b] .. start[b + 1]), whose
 * positions are pts (x, y, z each) in that order. tab lists the block
 * offsets up to tab_r[k] blocks along axis k, sorted by lb, the least
 * squared distance (in block widths) between points of two blocks that far
 * apart; a cell visits them in that order, one group of equal lb at a time,
 * and the blocks beyond the table in rings of growing radius. */
typedef struct q_voronoi_offset {
    int d[3], lb;
} q_voronoi_offset;

typedef struct q_voronoi_grid {
    double origin[3], h;
    int n[3];
    size_t blocks, count;
    int *start, *ids;
    double *pts;
    q_voronoi_offset *tab;
    int ntab, tab_r[3];
} q_voronoi_grid;

/* Builds the grid of count sites in the box [min, max] (sites checked by
 * the caller). false when memory runs out; free with q_voronoi_grid_free. */
bool q_voronoi_grid_build(q_voronoi_grid *g, const double *sites, size_t count, const double min[3],
                          const double max[3]);
void q_voronoi_grid_free(q_voronoi_grid *g);

/* Signature of another implementation of q_voronoi_compute with the same
 * contract (the host's GPU path installs one for quarry.voronoi{gpu=true}). */
typedef q_voronoi *(*q_voronoi_gpu_fn)(const double *sites, size_t count, const double min[3],
                                       const double max[3], char *err, size_t errlen);

/* The GPU implementation when the program has one and a GL context is
 * current (the host's engine/render/voronoi_gpu.c sets it at load time);
 * NULL otherwise. quarry.voronoi(..., {gpu = true}) calls it. */
extern q_voronoi_gpu_fn q_voronoi_gpu;

#endif
