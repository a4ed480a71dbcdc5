/* Convex hulls of point sets: 3D quickhull with coplanar faces sharing one
 * plane, and a 2D quickhull for flat input.
 *
 * One quantization distance s governs every decision (design note 001):
 * a point is outside a plane only when it is more than s above it; a point
 * set within s of one plane is hulled in 2D; a new face whose corners are
 * within s of a neighbouring face's plane joins that plane, so inside or
 * outside is decided once per plane and coplanar triangles can never
 * disagree (the cause of inverted faces in the usual quickhull). Papers:
 * Barber, Dobkin, Huhdanpaa, "The quickhull algorithm for convex hulls"
 * (ACM TOMS 1996); Gregorius, "Implementing Quickhull" (GDC 2014).
 *
 * Results, by how many dimensions the points span at distance s:
 *   Q_HULL_POINT    all points within s of each other: one vertex, no triangles.
 *   Q_HULL_SEGMENT  all points within s of a line: the two end points, no
 *                   triangles.
 *   Q_HULL_POLYGON  all points within s of a plane: the convex polygon,
 *                   counter-clockwise about info->normal, triangulated on both
 *                   sides (front: fan from polygon vertex 0, wound
 *                   counter-clockwise seen from +normal; back: fan from vertex 1,
 *                   wound the other way). The two fans use different diagonals,
 *                   so the mesh is closed (every edge once in each direction);
 *                   its volume is 0 up to the points' distances from the plane.
 *   Q_HULL_SOLID    a closed, welded triangle mesh wound counter-clockwise seen
 *                   from outside. Each plane's region is re-triangulated from its
 *                   boundary after the build (the upper hull of its corners,
 *                   Delaunay among ties), so no vertex lies inside a plane's
 *                   region, and a vertex within s of the segment joining its
 *                   neighbours along the edge of two planes is dropped.
 *
 * Tolerances, for solids. Vertices are input points more than 2s apart: an
 * outside point within 2s of a hull vertex is not added (the direction of
 * an edge a few s long is noise at the scale of s, and its triangles could
 * face any way). Every other input point is at most s above the planes of
 * the hull. A triangle's own plane differs from its region's plane by the
 * tilt its corners allow (each within s of the plane): over a large flat
 * region with small triangles a far point can be a few s above it. Points
 * spread well beyond s (the default is 1e-6 of the extent) meet none of
 * this, and their hull matches qhull's vertices and volume.
 *
 * Known limit: point sets built from clusters a few s wide on nearly
 * coplanar planes can still, rarely, fold one triangle: a randomized stress
 * run over 16000 such sets (grids, spheres, cylinders, octahedra with noise
 * of order s, rotated, scaled) found one.
 */
#ifndef Q_QUICKHULL_H
#define Q_QUICKHULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mesh/mesh.h"

/* Inputs larger than this are refused with Q_ERR_TOO_LARGE. */
#define Q_HULL_MAX_POINTS (1u << 24)
/* The default quantization distance, relative to the input's size. */
#define Q_QUANTIZATION_RELATIVE 1e-6
/* The smallest quantization distance q_hull uses, relative to the bounding-box
 * diagonal: below it, rounding in double precision plane distances competes
 * with s. */
#define Q_HULL_EPSILON_FLOOR 1e-12

/* The default quantization distance for points with these bounds: 1e-6
 * times the bounding-box diagonal (mesh import welds vertices with the same
 * distance). Returns a positive number (the smallest normal double for a
 * box of size 0). */
double q_quantization_distance(const double min[3], const double max[3]);

/* Point sets up to this size take the lean build when q_hull_def.lean. */
#define Q_HULL_LEAN_MAX 128u

typedef struct q_hull_def {
    double epsilon; /* quantization distance s in input units; 0 = the default
                       above. Raised to Q_HULL_EPSILON_FLOOR of the diagonal. */
    bool lean;      /* false (default): the full build below. true, for callers
                       hulling many small sets (HACD): a solid of at most
                       Q_HULL_LEAN_MAX points is built incrementally without
                       shared planes or re-triangulation, on the stack, and
                       kept only when it passes a check (closed, every point
                       within s under every triangle's plane, 3s for points
                       within 2s of a vertex); else the full build runs. Same
                       shape decision and tolerances, several times faster at
                       ten points; coplanar triangles stay separate and
                       vertices within s of a hull edge may stay. */
} q_hull_def;

q_hull_def q_default_hull_def(void);

typedef enum q_hull_shape { Q_HULL_POINT = 0, Q_HULL_SEGMENT = 1, Q_HULL_POLYGON = 2, Q_HULL_SOLID = 3 } q_hull_shape;

typedef struct q_hull_info {
    q_hull_shape shape;
    size_t vertex_count; /* entries written to vertices */
    size_t index_count;  /* entries written to indices (3 per triangle) */
    double epsilon;      /* the quantization distance used */
    double normal[3];    /* Q_HULL_POLYGON: unit normal of the front side; else 0 */
    size_t skipped;      /* outside points that could not be added without
                            breaking the mesh (a pinched horizon, or a cone
                            that would shrink the hull; expected 0): each may
                            lie outside the hull by more than s */
} q_hull_info;

/* Room needed in q_hull's indices for point_count points: 6 * (n - 2) for
 * n >= 3, else 0. vertices needs point_count entries. */
size_t q_hull_bound(size_t point_count);

/* Convex hull of point_count points (x, y, z triples, finite). Writes the
 * input indices of the hull vertices (in increasing order for solids, polygon
 * order for polygons) to vertices and triangles as indices into vertices to
 * indices; fills info. def may be NULL (defaults). Scratch memory is freed
 * before returning.
 * Errors: Q_ERR_ARGUMENT (no points, a non-finite coordinate, a negative or
 * non-finite epsilon), Q_ERR_TOO_LARGE (over Q_HULL_MAX_POINTS), Q_ERR_MEMORY;
 * the message goes to err. */
q_status q_hull(const double *points, size_t point_count, const q_hull_def *def, uint32_t *vertices, uint32_t *indices,
                q_hull_info *info, char *err, size_t errlen);

/* q_hull into a new q_mesh; NULL on failure with *status and err set. info
 * may be NULL. Positions are rounded to float (relative error 6e-8 of the
 * coordinates): for points far from the origin compared with their extent,
 * pass an epsilon above that rounding, or hull them centred. */
q_mesh *q_hull_mesh(const double *points, size_t point_count, const q_hull_def *def, q_hull_info *info,
                    q_status *status, char *err, size_t errlen);

/* 2D quickhull (quickhull2d.c) of point_count (x, y) pairs with quantization
 * distance s > 0: a point is outside an edge only when more than s from its
 * line, and a vertex within s of the segment joining its neighbours is
 * dropped. Writes the input indices of the hull counter-clockwise to out
 * (room for point_count) and returns how many: 1 when all points are within
 * s of one another, 2 for a segment (both ends), otherwise a polygon.
 * Returns 0 when out of memory (or point_count is 0). */
size_t q_hull2d(const double *xy, size_t point_count, double s, uint32_t *out);

#endif
