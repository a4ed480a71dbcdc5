/* Voronoi fracture of a triangle mesh (design note 003, "Dividing the
 * model"): sites inside the mesh, denser near an impact point; Voronoi cells
 * by box cutting (voronoi.h); each cell's fragment is the mesh clipped by the
 * cell's bisector planes with every cut capped by a fan of interior
 * triangles. A closed input gives closed fragments (every directed edge
 * paired, by index) whose volumes add up to the mesh's.
 *
 * Caps: each cut's loop of boundary edges on the plane is closed by a fan
 * from the loop's centroid. Where the cut section is convex (boxes, spheres,
 * any convex mesh) the fan is an ordinary triangulation; where it is not
 * (a torus cut through its hole) some fan triangles are wound backwards and
 * overlap others: the signed area, hence volume, winding numbers and
 * closedness stay exact, but such caps draw with overlapping triangles.
 */
#ifndef Q_FRACTURE_H
#define Q_FRACTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "geom/voronoi.h"
#include "mesh/mesh.h"

#define Q_FRACTURE_MAX_PIECES 4096

typedef struct q_fracture_params {
    int pieces;            /* 1..Q_FRACTURE_MAX_PIECES sites (default 16) */
    uint64_t seed;         /* site generator seed (default 1) */
    bool has_at;           /* at is set: sites cluster around it */
    double at[3];          /* impact point, world units; must lie within one
                              bounding-box diagonal of the mesh's bounds */
    const double *points;  /* optional: pieces explicit sites (x, y, z), used
                              instead of generated ones; must lie within the
                              bounds (padded by 1e-3 of the diagonal) */
    q_voronoi_gpu_fn cells; /* optional: computes the cells instead of
                              q_voronoi_compute (e.g. q_voronoi_gpu) */
} q_fracture_params;

q_fracture_params q_default_fracture_params(void);

typedef struct q_fragment {
    q_mesh *mesh;          /* owned by the q_fracture until taken (set NULL) */
    bool convex;           /* every vertex on or behind every triangle's plane
                              (1e-6 of the mesh diagonal): hull it; else decompose */
    size_t interior_first; /* triangles from this one on are cut faces (interior
                              material); the ones before are the mesh's surface */
    int site;              /* index of the site whose cell made it */
    double volume;
} q_fragment;

typedef struct q_fracture {
    size_t count;          /* fragments (cells that hold part of the mesh) */
    q_fragment *pieces;
    size_t site_count;
    double *sites;         /* the sites used, x y z */
} q_fracture;

/* Shatters m. Generated sites lie inside m by ray parity (a closed mesh is
 * expected; an open one still shatters but may lose pieces). Returns NULL
 * and writes err for pieces out of range, non-finite or far-off at, sites
 * outside the bounds, a mesh without triangles or non-finite positions, or
 * when no site can be placed inside the mesh. Deterministic for the same
 * mesh and parameters. Free with q_fracture_free (frees meshes not taken). */
q_fracture *q_fracture_mesh(const q_mesh *m, const q_fracture_params *p, char *err, size_t errlen);
void q_fracture_free(q_fracture *f);

#endif
