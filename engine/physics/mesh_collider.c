/* Colliders from triangle meshes: a convex decomposition (geom/hacd.h) made
 * into a compound of hulls, or a single hull when one part is enough. Used
 * by "mesh" bodies, shattered fragments that are not convex, and terrain
 * islands turned into bodies. */
#include "core/alloc.h"
#include "geom/hacd.h"
#include "mesh/mesh.h"
#include "physics/shape.h"

#include <stdio.h>
#include <string.h>

/* The hull of the mesh's vertices when the mesh is closed and its volume
 * is the hull's (within 1e-3): a convex mesh needs no decomposition. */
static q_collider *convex_hull_of(const q_mesh *m)
{
    if (m->vertex_count < 4 || !q_mesh_is_closed(m))
        return NULL;
    double volume = q_mesh_volume(m);
    double *pts = q_alloc(m->vertex_count * 3 * sizeof *pts);
    if (!pts || !(volume > 0)) {
        q_free(pts, m->vertex_count * 3 * sizeof *pts);
        return NULL;
    }
    for (size_t i = 0; i < m->vertex_count * 3; i++)
        pts[i] = m->positions[i];
    char err[128];
    q_collider *h = q_collider_hull(pts, m->vertex_count, err, sizeof err);
    q_free(pts, m->vertex_count * 3 * sizeof *pts);
    if (h && !(q_collider_mass(h).volume <= volume * (1 + 1e-3))) {
        q_collider_free(h);
        h = NULL;
    }
    return h;
}

q_collider *q_collider_from_mesh(const q_mesh *m, size_t max_parts, char *err, size_t errlen)
{
    q_collider *convex = convex_hull_of(m);
    if (convex)
        return convex;
    q_hacd_params p = q_default_hacd_params();
    p.max_hulls = max_parts;
    q_hacd_result r;
    if (q_hacd(m, &p, &r, err, errlen) != Q_OK)
        return NULL;
    size_t solid = 0;
    for (size_t i = 0; i < r.hull_count; i++)
        solid += r.hulls[i].shape == Q_HULL_SOLID;
    q_collider *out = NULL;
    if (solid == 0) {
        snprintf(err, errlen, "the mesh has no volume (its convex parts are all flat)");
    } else if (solid == 1) {
        for (size_t i = 0; i < r.hull_count && !out; i++)
            if (r.hulls[i].shape == Q_HULL_SOLID)
                out = q_collider_hull(r.hulls[i].points, r.hulls[i].point_count, err, errlen);
    } else {
        q_collider_part *parts = q_calloc(solid, sizeof *parts);
        size_t n = 0;
        bool ok = parts != NULL;
        for (size_t i = 0; ok && i < r.hull_count; i++) {
            if (r.hulls[i].shape != Q_HULL_SOLID)
                continue;
            parts[n].shape = q_collider_hull(r.hulls[i].points, r.hulls[i].point_count, err, errlen);
            parts[n].local = (q_xform){{0, 0, 0}, {0, 0, 0, 1}};
            ok = parts[n++].shape != NULL;
        }
        if (ok) {
            out = q_collider_compound(parts, (uint32_t)n, err, errlen);
        } else {
            for (size_t i = 0; parts && i < n; i++)
                q_collider_free(parts[i].shape);
            if (!parts)
                snprintf(err, errlen, "out of memory");
        }
        q_free(parts, solid * sizeof *parts);
    }
    q_hacd_free(&r);
    return out;
}
