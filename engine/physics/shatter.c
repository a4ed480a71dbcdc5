/* Shattering bodies into Voronoi fragments (bodies.h: q_body_shatter), and
 * the brittle-material breakages found in a step. */
#include "core/alloc.h"
#include "core/vec3.h"
#include "geom/fracture.h"
#include "mesh/mesh.h"
#include "physics/bodies_internal.h"
#include "voxel/material.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

q_shatter_params q_default_shatter_params(void)
{
    q_shatter_params p;
    memset(&p, 0, sizeof p);
    p.pieces = 16;
    p.seed = 1;
    return p;
}

/* The body's shape as a closed mesh in shape space. */
static q_mesh *shape_mesh(const q_collider *s)
{
    double *v = NULL;
    uint32_t *idx = NULL, nv = 0, nt = 0;
    if (!q_collider_triangles(s, &v, &nv, &idx, &nt))
        return NULL;
    q_mesh *m = q_mesh_create(nv, (size_t)nt * 3, false, false);
    if (m) {
        for (size_t i = 0; i < (size_t)nv * 3; i++)
            m->positions[i] = (float)v[i];
        memcpy(m->indices, idx, (size_t)nt * 3 * sizeof *idx);
    }
    q_free(v, (size_t)nv * 3 * sizeof(double));
    q_free(idx, (size_t)nt * 3 * sizeof(uint32_t));
    return m;
}

/* A fragment's collider: a hull when it is convex (always, when the body's
 * shape was: a convex shape cut by convex cells), else its decomposition. */
static q_collider *fragment_collider(const q_fragment *f, bool convex_body, char *err, size_t errlen)
{
    if (!f->convex && !convex_body)
        return q_collider_from_mesh(f->mesh, 16, err, errlen);
    size_t n = f->mesh->vertex_count;
    double *pts = q_alloc(n * 3 * sizeof *pts);
    if (!pts) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n * 3; i++)
        pts[i] = f->mesh->positions[i];
    q_collider *c = q_collider_hull(pts, n, err, errlen);
    q_free(pts, n * 3 * sizeof *pts);
    return c;
}

static bool check_params(const q_shatter_params *p, char *err, size_t errlen)
{
    if (p->pieces < 1 || p->pieces > Q_FRACTURE_MAX_PIECES) {
        snprintf(err, errlen, "pieces must be in 1..%d, got %d", Q_FRACTURE_MAX_PIECES, p->pieces);
        return false;
    }
    if (!(isfinite(p->burst) && p->burst >= 0)) {
        snprintf(err, errlen, "burst must be finite and >= 0");
        return false;
    }
    if (!v3_finite(p->impulse) || (p->has_at && !v3_finite(p->at))) {
        snprintf(err, errlen, "impulse and at must be finite");
        return false;
    }
    if (p->gpu && !q_voronoi_gpu) {
        snprintf(err, errlen, "gpu = true needs the host program with a GL 4.3 context");
        return false;
    }
    return true;
}

size_t q_body_shatter(q_bodies *b, q_handle h, const q_shatter_params *p, q_handle *out, size_t cap, char *err,
                      size_t errlen)
{
    q_body *body = q_bodies_get(b, h);
    if (!body) {
        snprintf(err, errlen, "body was destroyed");
        return 0;
    }
    if (body->is_static) {
        snprintf(err, errlen, "static bodies do not shatter");
        return 0;
    }
    if (!check_params(p, err, errlen))
        return 0;
    q_xform frame = q_body_frame(body);
    q_fracture_params fp = q_default_fracture_params();
    fp.pieces = p->pieces;
    fp.seed = p->seed;
    fp.cells = p->gpu ? q_voronoi_gpu : NULL;
    double at_world[3];
    v3_copy(at_world, p->has_at ? p->at : body->x);
    if (p->has_at) {
        fp.has_at = true;
        q_xform_inverse_point(&frame, p->at, fp.at);
    }
    q_mesh *mesh = shape_mesh(body->shape);
    q_fracture *f = mesh ? q_fracture_mesh(mesh, &fp, err, errlen) : NULL;
    q_mesh_destroy(mesh);
    if (!f) {
        if (!mesh)
            snprintf(err, errlen, "out of memory");
        return 0;
    }
    /* Everything the fragments inherit, read before the body goes. */
    q_body parent = *body;
    char *name = body->name;
    q_body_def def = q_default_body_def();
    def.material = parent.material;
    def.name = name;
    memcpy(def.rotation, parent.q, sizeof def.rotation);
    v3_copy(def.position, frame.p);
    double total_mass = 0;
    for (size_t i = 0; i < f->count; i++)
        total_mass += f->pieces[i].volume * q_material_get(parent.material)->density;

    size_t made_cap = f->count ? f->count : 1;
    q_handle *made = q_alloc(made_cap * sizeof *made);
    size_t n = 0;
    for (size_t i = 0; made && i < f->count; i++) {
        const q_fragment *frag = &f->pieces[i];
        if (!(frag->volume > 1e-9 * parent.volume))
            continue;
        char ferr[128];
        def.shape = fragment_collider(frag, parent.shape->kind != Q_COLLIDER_COMPOUND, ferr, sizeof ferr);
        if (!def.shape)
            continue;
        /* The fragment moves as that part of the body did. */
        q_mass_props mp = q_collider_mass(def.shape);
        double c[3], r[3], wr[3];
        q_xform_point(&frame, mp.center, c);
        v3_sub(r, c, parent.x);
        v3_cross(wr, parent.w, r);
        v3_add(def.velocity, parent.v, wr);
        v3_copy(def.angular_velocity, parent.w);
        if (total_mass > 0) {
            v3_madd(def.velocity, p->impulse, 1 / total_mass);
            double away[3];
            v3_sub(away, c, at_world);
            if (v3_normalize(away) > 0)
                v3_madd(def.velocity, away, p->burst / total_mass);
        }
        q_handle fh = q_body_create(b, &def, ferr, sizeof ferr);
        if (!q_handle_is_null(fh)) {
            /* it was just made by an impact that may still be going on */
            double dt = b->dt > 0 ? b->dt : 1.0 / 60;
            q_body *fb = q_bodies_get(b, fh);
            fb->unbreakable_steps = (uint32_t)ceil(Q_FRAGMENT_GRACE / dt);
            fb->generation = (uint8_t)(parent.generation < 255 ? parent.generation + 1 : 255);
            made[n++] = fh;
        }
    }
    q_fracture_free(f);
    if (n == 0) {
        snprintf(err, errlen, made ? "no fragment could be made" : "out of memory");
        q_free(made, made_cap * sizeof *made);
        return 0;
    }
    q_body_destroy(b, h);
    for (size_t i = 0; i < n && i < cap; i++)
        out[i] = made[i];
    q_free(made, made_cap * sizeof *made);
    return n;
}

size_t q_bodies_breakages(const q_bodies *b, const q_breakage **out)
{
    *out = b->breakages.data;
    return b->breakages.count;
}
