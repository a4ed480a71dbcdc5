/* HACD: hierarchical approximate convex decomposition of a triangle mesh.
 *
 * Follows Mamou and Ghorbel, "A simple and efficient approach for 3D mesh
 * approximate convex decomposition" (ICIP 2009), with the changes of design
 * note 001 (seeds/001): uniform surface sampling, a 2D/3D distinction and one
 * quantization distance.
 *
 *   1. The mesh is scaled so its largest bounding-box side is `scale` (1000
 *      by default); every distance parameter is in those units. Vertices
 *      within connect_dist are welded; triangles whose corners all weld into
 *      one point are dropped (two welded corners leave a segment, kept).
 *   2. Dual graph: one node (cluster) per triangle, an edge between
 *      triangles that share a mesh edge or a welded vertex, and between
 *      connected components closer than connect_dist.
 *   3. Surface samples on a uniform grid of spacing sample_spacing in each
 *      triangle's plane (a triangle that holds no grid point: samples along
 *      it, one per sample_spacing of its length), bucketed in a spatial
 *      grid. Each sample stands for a patch: the points of the grid three
 *      times finer in its cell, and the nearest points of the triangle's
 *      edges within 0.75 spacings (creases).
 *   4. Per graph edge, the predicted hull of the two clusters' hull points
 *      (q_hull with epsilon connect_dist, its lean build) and its concavity
 *      error:
 *        solid hull: for each sample of the same connected component inside
 *          the hull (within connect_dist), the distance along the sample's
 *          surface normal to the hull's boundary; the error is the longest
 *          (the evaluation stops once past the limit). Where a sample's
 *          patch could hold a longer ray than both that and the concavity
 *          (bounded from the patch radius and the angle between the
 *          sample's normal and each hull plane), the patch's points are
 *          tested too: a hull that takes in a strip of surface narrower than
 *          the sample spacing is rated by it, not by the samples just
 *          outside;
 *        flat hull (all points within connect_dist of a plane): the square
 *          root of the area the hull adds to the clusters' surface.
 *   5. Edges in a priority queue by error plus volume_weight times the cube
 *      root of the hull volume the merge adds (negative when the two hulls
 *      overlap; ties: least volume added). The first is merged while its
 *      error <= concavity, and the merged cluster's edges are evaluated
 *      again. Ordering by error alone leaves overlapping hulls of long
 *      surface strips (a torus: 1.3 times its volume in hulls); the volume
 *      term keeps hulls apart at the price of a few more.
 *   6. With max_hulls > 0, merging goes on past the concavity (cheapest
 *      first, errors evaluated without limit) until at most max_hulls
 *      clusters are left; separate components are never joined.
 *   7. Each output hull is the hull of all its cluster's vertices (the
 *      running hulls of a long chain of merges, each exact within s, can
 *      drift inward), so every vertex lies within about 2 s of its hull.
 *   8. With max_vertices > 0, a hull with more vertices keeps a subset
 *      chosen greedily, farthest point first (it then lies inside the full
 *      hull and may leave mesh vertices up to that detail outside).
 *
 * Input: any triangle soup; open, non-manifold and partly zero-area input
 * is decomposed; non-finite coordinates, out-of-range indices and meshes
 * without area are refused with Q_ERR_ARGUMENT. Orientation matters for the
 * 3D error: winding is made consistent across manifold edges within each
 * part (triangles joined by edges and vertices), and a part is turned
 * around when its signed volume about its area centroid is negative.
 *
 * For rigid bodies: each q_hacd_hull's points (or mesh) is one convex
 * piece in the mesh's own units; skip hulls whose shape is not
 * Q_HULL_SOLID (flat patches of open meshes) when a volume is needed.
 * Cost: about 0.16 s for 3700 triangles on one core (bench/RESULTS.md).
 */
#ifndef Q_HACD_H
#define Q_HACD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "geom/quickhull.h"
#include "mesh/mesh.h"

typedef struct q_hacd_params {
    double concavity;      /* largest concavity error accepted for a merge; default 10 */
    double connect_dist;   /* quantization distance: weld, coplanarity, component
                              connection; default 0.1 */
    double scale;          /* size of the cube the mesh is scaled into; default 1000 */
    double sample_spacing; /* grid spacing of surface samples; 0 = about 20000
                              samples over the surface (never below connect_dist) */
    double volume_weight;  /* merge order: error + volume_weight * cbrt(hull volume
                              added); default 0.1 (0 = by error alone) */
    size_t max_hulls;      /* 0 = no limit; else merge past the concavity down to this */
    size_t max_vertices;   /* 0 = no limit; else at most this many (>= 4) per hull */
    bool trace;            /* record every merge in q_hacd_result.trace */
} q_hacd_params;

/* Defaults of design note 001: concavity 10, connect_dist 0.1, scale 1000;
 * volume_weight 0.1, automatic sample spacing, no limits, no trace. */
q_hacd_params q_default_hacd_params(void);

typedef struct q_hacd_hull {
    double *points;        /* point_count (x, y, z) hull vertices, input units */
    size_t point_count;
    q_mesh *mesh;          /* the hull as a closed mesh (q_hull_mesh of points) */
    q_hull_shape shape;    /* Q_HULL_SOLID, or flat / degenerate clusters */
    double volume;         /* input units cubed; 0 unless solid */
    double concavity;      /* the cluster's error (as in step 4, no limit), scaled units */
    size_t triangle_count; /* input triangles in this cluster */
} q_hacd_hull;

typedef struct q_hacd_merge {
    uint32_t a, b; /* clusters merged, named by their representative input
                      triangle; the result is named a */
    double error;  /* concavity error of the merge, scaled units */
} q_hacd_merge;

typedef struct q_hacd_result {
    q_hacd_hull *hulls;
    size_t hull_count;
    double max_concavity; /* largest hull concavity, scaled units */
    double volume_ratio;  /* sum of hull volumes / mesh volume; NAN when the
                             (welded) mesh is not closed or has no volume */
    double time_ms;
    double scale_factor;  /* scaled = (input - centre) * scale_factor */
    double sample_spacing; /* the spacing used, scaled units */
    size_t samples;
    size_t merges;
    size_t components;    /* connected components of the dual graph */
    uint32_t *triangle_hull; /* per input triangle: index into hulls, or
                                UINT32_MAX for a dropped (collapsed) triangle */
    size_t triangle_count;
    q_hacd_merge *trace;  /* merges entries when params->trace, else NULL */
} q_hacd_result;

/* Decomposes m into convex hulls. p may be NULL (defaults). On success out
 * holds the hulls (free with q_hacd_free); on failure out is zeroed and err
 * says why: Q_ERR_ARGUMENT (no triangles, non-finite coordinate, index out
 * of range, parameter out of range, all vertices within connect_dist),
 * Q_ERR_TOO_LARGE (over Q_HULL_MAX_POINTS vertices or 2^31 triangles),
 * Q_ERR_MEMORY. Single-threaded; scratch memory is freed before returning. */
q_status q_hacd(const q_mesh *m, const q_hacd_params *p, q_hacd_result *out, char *err, size_t errlen);

/* Frees what q_hacd put in r and zeroes it; safe on a zeroed result. */
void q_hacd_free(q_hacd_result *r);

#endif
