/* Colliders: constructors, mass properties, bounds, support, containment,
 * raycasts, drawing triangles and transform helpers (shape.h). */
#include "physics/shape.h"

#include "core/alloc.h"
#include "core/hashmap.h"
#include "geom/quickhull.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- small vector helpers ---- */

static double dot3(const double a[3], const double b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static void cross3(const double a[3], const double b[3], double o[3])
{
    double x = a[1] * b[2] - a[2] * b[1], y = a[2] * b[0] - a[0] * b[2], z = a[0] * b[1] - a[1] * b[0];
    o[0] = x;
    o[1] = y;
    o[2] = z;
}

/* ---- transforms ---- */

static void quat_rotate(const double q[4], const double v[3], double o[3])
{
    double t[3] = {2 * (q[1] * v[2] - q[2] * v[1]), 2 * (q[2] * v[0] - q[0] * v[2]), 2 * (q[0] * v[1] - q[1] * v[0])};
    double x = v[0] + q[3] * t[0] + (q[1] * t[2] - q[2] * t[1]);
    double y = v[1] + q[3] * t[1] + (q[2] * t[0] - q[0] * t[2]);
    double z = v[2] + q[3] * t[2] + (q[0] * t[1] - q[1] * t[0]);
    o[0] = x;
    o[1] = y;
    o[2] = z;
}

void q_xform_vector(const q_xform *t, const double in[3], double out[3]) { quat_rotate(t->q, in, out); }

void q_xform_point(const q_xform *t, const double in[3], double out[3])
{
    quat_rotate(t->q, in, out);
    out[0] += t->p[0];
    out[1] += t->p[1];
    out[2] += t->p[2];
}

void q_xform_inverse_vector(const q_xform *t, const double in[3], double out[3])
{
    double c[4] = {-t->q[0], -t->q[1], -t->q[2], t->q[3]};
    quat_rotate(c, in, out);
}

void q_xform_inverse_point(const q_xform *t, const double in[3], double out[3])
{
    double d[3] = {in[0] - t->p[0], in[1] - t->p[1], in[2] - t->p[2]};
    q_xform_inverse_vector(t, d, out);
}

q_xform q_xform_mul(const q_xform *a, const q_xform *b)
{
    q_xform r;
    q_xform_point(a, b->p, r.p);
    const double *p = a->q, *q = b->q;
    r.q[0] = p[3] * q[0] + p[0] * q[3] + p[1] * q[2] - p[2] * q[1];
    r.q[1] = p[3] * q[1] - p[0] * q[2] + p[1] * q[3] + p[2] * q[0];
    r.q[2] = p[3] * q[2] + p[0] * q[1] - p[1] * q[0] + p[2] * q[3];
    r.q[3] = p[3] * q[3] - p[0] * q[0] - p[1] * q[1] - p[2] * q[2];
    return r;
}

/* ---- constructors ---- */

static q_collider *new_collider(q_collider_kind kind, char *err, size_t errlen)
{
    q_collider *s = q_calloc(1, sizeof *s);
    if (!s)
        snprintf(err, errlen, "out of memory");
    else
        s->kind = kind;
    return s;
}

static bool positive(double v) { return isfinite(v) && v > 0 && v < 1e12; }

q_collider *q_collider_sphere(double radius, char *err, size_t errlen)
{
    if (!positive(radius)) {
        snprintf(err, errlen, "sphere radius must be positive and finite (got %g)", radius);
        return NULL;
    }
    q_collider *s = new_collider(Q_COLLIDER_SPHERE, err, errlen);
    if (!s)
        return NULL;
    s->radius = radius;
    for (int k = 0; k < 3; k++) {
        s->min[k] = -radius;
        s->max[k] = radius;
    }
    return s;
}

q_collider *q_collider_box(const double half[3], char *err, size_t errlen)
{
    for (int k = 0; k < 3; k++)
        if (!positive(half[k])) {
            snprintf(err, errlen, "box half extents must be positive and finite (got %g)", half[k]);
            return NULL;
        }
    q_collider *s = new_collider(Q_COLLIDER_BOX, err, errlen);
    if (!s)
        return NULL;
    for (int k = 0; k < 3; k++) {
        s->half[k] = half[k];
        s->min[k] = -half[k];
        s->max[k] = half[k];
    }
    return s;
}

q_collider *q_collider_capsule(double radius, double half_height, char *err, size_t errlen)
{
    if (!positive(radius) || !(isfinite(half_height) && half_height >= 0 && half_height < 1e12)) {
        snprintf(err, errlen, "capsule radius must be positive and half height non-negative (got %g, %g)", radius,
                 half_height);
        return NULL;
    }
    q_collider *s = new_collider(Q_COLLIDER_CAPSULE, err, errlen);
    if (!s)
        return NULL;
    s->radius = radius;
    s->half_height = half_height;
    s->min[0] = s->min[2] = -radius;
    s->max[0] = s->max[2] = radius;
    s->min[1] = -half_height - radius;
    s->max[1] = half_height + radius;
    return s;
}

static size_t hull_bytes(uint32_t nv, uint32_t nf, uint32_t nfv, uint32_t ne)
{
    return sizeof(q_hull_data) + (size_t)nv * 3 * sizeof(double) + (size_t)nf * 4 * sizeof(double) +
           ((size_t)nf + 1 + nfv + 4 * (size_t)ne) * sizeof(uint32_t);
}

static void free_hull(q_hull_data *h)
{
    if (h)
        q_free(h, hull_bytes(h->vertex_count, h->face_count, h->face_start[h->face_count], h->edge_count));
}

/* A hull record with its arrays laid out after it (one block, freed by
 * free_hull); counts set, arrays zeroed. With the collider that holds it, or
 * NULL (and nothing allocated) with a message. */
static q_collider *new_hull(uint32_t nv, uint32_t nf, uint32_t nfv, uint32_t ne, char *err, size_t errlen)
{
    size_t hb = hull_bytes(nv, nf, nfv, ne);
    q_hull_data *h = q_calloc(1, hb);
    q_collider *s = h ? new_collider(Q_COLLIDER_HULL, err, errlen) : NULL;
    if (!s) {
        if (h)
            q_free(h, hb);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->vertex_count = nv;
    h->face_count = nf;
    h->edge_count = ne;
    h->vertices = (double *)(h + 1);
    h->planes = h->vertices + 3 * (size_t)nv;
    h->face_start = (uint32_t *)(h->planes + 4 * (size_t)nf);
    h->face_vertices = h->face_start + nf + 1;
    h->edges = h->face_vertices + nfv;
    h->edge_faces = h->edges + 2 * (size_t)ne;
    s->hull = h;
    return s;
}

/* Bounds of a hull's vertices into s->min, s->max. */
static void hull_bounds(q_collider *s)
{
    const q_hull_data *h = s->hull;
    for (int k = 0; k < 3; k++) {
        s->min[k] = INFINITY;
        s->max[k] = -INFINITY;
    }
    for (uint32_t i = 0; i < h->vertex_count; i++)
        for (int k = 0; k < 3; k++) {
            s->min[k] = fmin(s->min[k], h->vertices[3 * i + k]);
            s->max[k] = fmax(s->max[k], h->vertices[3 * i + k]);
        }
}

/* Whether a hull's arrays are consistent: indices in range, offsets
 * increasing, every number finite (a file must not crash the engine). */
static bool hull_data_valid(const q_hull_data *d)
{
    if (d->vertex_count < 4 || d->face_count < 4 || d->vertex_count > Q_HULL_MAX_POINTS ||
        d->face_count > 2 * Q_HULL_MAX_POINTS || d->edge_count > 3 * Q_HULL_MAX_POINTS || d->face_start[0] != 0)
        return false;
    for (uint32_t i = 0; i < 3 * d->vertex_count; i++)
        if (!isfinite(d->vertices[i]) || fabs(d->vertices[i]) > 1e12)
            return false;
    for (uint32_t i = 0; i < 4 * d->face_count; i++)
        if (!isfinite(d->planes[i]))
            return false;
    for (uint32_t f = 0; f < d->face_count; f++)
        if (d->face_start[f + 1] < d->face_start[f] + 3 || d->face_start[f + 1] > 6 * Q_HULL_MAX_POINTS)
            return false;
    for (uint32_t i = 0; i < d->face_start[d->face_count]; i++)
        if (d->face_vertices[i] >= d->vertex_count)
            return false;
    for (uint32_t e = 0; e < 2 * d->edge_count; e++)
        if (d->edges[e] >= d->vertex_count || d->edge_faces[e] >= d->face_count)
            return false;
    return true;
}

q_collider *q_collider_hull_data(const q_hull_data *d, char *err, size_t errlen)
{
    if (!hull_data_valid(d)) {
        snprintf(err, errlen, "inconsistent hull data");
        return NULL;
    }
    uint32_t nv = d->vertex_count, nf = d->face_count, nfv = d->face_start[nf], ne = d->edge_count;
    q_collider *s = new_hull(nv, nf, nfv, ne, err, errlen);
    if (!s)
        return NULL;
    q_hull_data *h = s->hull;
    memcpy(h->vertices, d->vertices, (size_t)nv * 3 * sizeof(double));
    memcpy(h->planes, d->planes, (size_t)nf * 4 * sizeof(double));
    memcpy(h->face_start, d->face_start, ((size_t)nf + 1) * sizeof(uint32_t));
    memcpy(h->face_vertices, d->face_vertices, (size_t)nfv * sizeof(uint32_t));
    memcpy(h->edges, d->edges, 2 * (size_t)ne * sizeof(uint32_t));
    memcpy(h->edge_faces, d->edge_faces, 2 * (size_t)ne * sizeof(uint32_t));
    hull_bounds(s);
    return s;
}

/* Union-find over triangles, for merging coplanar neighbours. */
static uint32_t uf_find(uint32_t *parent, uint32_t i)
{
    if (i == UINT32_MAX)
        return i;
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

q_collider *q_collider_hull(const double *points, size_t n, char *err, size_t errlen)
{
    if (n < 4) {
        snprintf(err, errlen, "a hull needs at least 4 points (got %zu)", n);
        return NULL;
    }
    if (n > Q_HULL_MAX_POINTS) {
        snprintf(err, errlen, "too many points for a hull (%zu)", n);
        return NULL;
    }
    for (size_t i = 0; i < 3 * n; i++)
        if (!isfinite(points[i]) || fabs(points[i]) > 1e12) {
            snprintf(err, errlen, "hull point %zu is not finite", i / 3 + 1);
            return NULL;
        }
    size_t ib = q_hull_bound(n);
    uint32_t *vin = q_alloc(n * sizeof(uint32_t)), *idx = q_alloc(ib * sizeof(uint32_t));
    q_collider *s = NULL;
    uint32_t *work = NULL;
    size_t work_bytes = 0;
    if (!vin || !idx) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    q_hull_info info;
    if (q_hull(points, n, NULL, vin, idx, &info, err, errlen) != Q_OK)
        goto done;
    if (info.shape != Q_HULL_SOLID) {
        snprintf(err, errlen, "hull points are %s: the hull has no volume",
                 info.shape == Q_HULL_POLYGON   ? "flat"
                 : info.shape == Q_HULL_SEGMENT ? "collinear"
                                                : "coincident");
        goto done;
    }
    uint32_t nv = (uint32_t)info.vertex_count, nt = (uint32_t)(info.index_count / 3);
    /* Local vertex positions and triangle normals. */
    work_bytes = (size_t)nt * (1 + 3 + 1 + 2) * sizeof(uint32_t) + (size_t)nt * 4 * sizeof(double) +
                 (size_t)nv * 3 * sizeof(double) + 8;
    work = q_alloc(work_bytes);
    if (!work) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    uint32_t *parent = work, *nbr = parent + nt, *group = nbr + 3 * (size_t)nt, *gfirst = group + nt;
    double *tplane = (double *)(gfirst + 2 * (size_t)nt + (nt & 1)), *pos = tplane + 4 * (size_t)nt;
    for (uint32_t i = 0; i < nv; i++)
        memcpy(pos + 3 * i, points + 3 * (size_t)vin[i], 3 * sizeof(double));
    double ext = 0;
    for (uint32_t i = 0; i < 3 * nv; i++)
        ext = fmax(ext, fabs(pos[i]));
    for (uint32_t t = 0; t < nt; t++) {
        const double *a = pos + 3 * idx[3 * t], *b = pos + 3 * idx[3 * t + 1], *c = pos + 3 * idx[3 * t + 2];
        double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        double nrm[3];
        cross3(e1, e2, nrm);
        double l = sqrt(dot3(nrm, nrm));
        for (int k = 0; k < 3; k++)
            tplane[4 * t + k] = l > 0 ? nrm[k] / l : 0;
        double cen[3] = {(a[0] + b[0] + c[0]) / 3, (a[1] + b[1] + c[1]) / 3, (a[2] + b[2] + c[2]) / 3};
        tplane[4 * t + 3] = dot3(tplane + 4 * t, cen);
        parent[t] = t;
    }
    /* Neighbours by edge: O(nt^2) over small hulls is too slow for big ones;
     * use a sort-free scheme: for each directed edge (a,b) find the triangle
     * with (b,a) through a per-vertex list. */
    {
        /* vertex -> triangles incident, CSR */
        uint32_t *cnt = q_calloc((size_t)nv + 1, sizeof(uint32_t)), *lst = q_alloc((size_t)nt * 3 * sizeof(uint32_t));
        if (!cnt || !lst) {
            q_free(cnt, ((size_t)nv + 1) * sizeof(uint32_t));
            q_free(lst, (size_t)nt * 3 * sizeof(uint32_t));
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        for (uint32_t i = 0; i < 3 * nt; i++)
            cnt[idx[i] + 1]++;
        for (uint32_t v = 0; v < nv; v++)
            cnt[v + 1] += cnt[v];
        uint32_t *fill = q_alloc((size_t)nv * sizeof(uint32_t));
        if (!fill) {
            q_free(cnt, ((size_t)nv + 1) * sizeof(uint32_t));
            q_free(lst, (size_t)nt * 3 * sizeof(uint32_t));
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        memcpy(fill, cnt, nv * sizeof(uint32_t));
        for (uint32_t i = 0; i < 3 * nt; i++)
            lst[fill[idx[i]]++] = i / 3;
        q_free(fill, (size_t)nv * sizeof(uint32_t));
        for (uint32_t t = 0; t < nt; t++)
            for (int k = 0; k < 3; k++) {
                uint32_t a = idx[3 * t + k], b = idx[3 * t + (k + 1) % 3];
                nbr[3 * t + k] = UINT32_MAX;
                for (uint32_t j = cnt[b]; j < cnt[b + 1]; j++) {
                    uint32_t u = lst[j];
                    for (int m = 0; m < 3; m++)
                        if (idx[3 * u + m] == b && idx[3 * u + (m + 1) % 3] == a)
                            nbr[3 * t + k] = u;
                }
            }
        q_free(cnt, ((size_t)nv + 1) * sizeof(uint32_t));
        q_free(lst, (size_t)nt * 3 * sizeof(uint32_t));
    }
    /* Merge neighbours whose planes agree (quickhull gives coplanar triangles
     * the same plane; allow for rounding). */
    double tol = fmax(info.epsilon * 4, ext * 1e-9);
    for (uint32_t t = 0; t < nt; t++)
        for (int k = 0; k < 3; k++) {
            uint32_t u = nbr[3 * t + k];
            if (u == UINT32_MAX || u < t)
                continue;
            const double *pt = tplane + 4 * t;
            bool same = dot3(pt, tplane + 4 * u) > 1 - 1e-9;
            for (int m = 0; m < 3 && same; m++)
                same = fabs(dot3(pt, pos + 3 * idx[3 * u + m]) - pt[3]) <= tol;
            if (same) {
                uint32_t ra = uf_find(parent, t), rb = uf_find(parent, u);
                if (ra != rb)
                    parent[ra < rb ? rb : ra] = ra < rb ? ra : rb;
            }
        }
    /* Faces: groups in order of their first triangle. Boundary edges of a
     * group are the triangle edges whose neighbour is in another group. */
    uint32_t nf = 0, nfv = 0;
    for (uint32_t t = 0; t < nt; t++)
        group[t] = UINT32_MAX;
    for (uint32_t t = 0; t < nt; t++) {
        uint32_t r = uf_find(parent, t);
        if (group[r] == UINT32_MAX)
            group[r] = nf++;
        for (int k = 0; k < 3; k++)
            if (uf_find(parent, nbr[3 * t + k]) != r)
                nfv++;
    }
    uint32_t ne = nfv / 2;
    s = new_hull(nv, nf, nfv, ne, err, errlen);
    if (!s)
        goto done;
    q_hull_data *h = s->hull;
    s->hull = NULL; /* attached again once the faces check out */
    memcpy(h->vertices, pos, (size_t)nv * 3 * sizeof(double));
    /* Walk each face's boundary: from a boundary edge (a, b) of triangle t,
     * the next boundary edge starts at b; rotate around b inside the group. */
    uint32_t out = 0, eo = 0;
    for (uint32_t f = 0; f < nf; f++)
        gfirst[2 * f] = UINT32_MAX;
    for (uint32_t t = 0; t < nt; t++) {
        uint32_t r = uf_find(parent, t), f = group[r];
        if (gfirst[2 * f] != UINT32_MAX)
            continue;
        for (uint32_t k = 0; k < 3; k++)
            if (uf_find(parent, nbr[3 * t + k]) != r) {
                gfirst[2 * f] = t;
                gfirst[2 * f + 1] = k;
                break;
            }
    }
    q_hashmap emap = {0};
    bool use_map = true;
    for (uint32_t f = 0; f < nf; f++) {
        h->face_start[f] = out;
        /* the first triangle of group f with a boundary edge */
        uint32_t t0 = gfirst[2 * f], k0 = gfirst[2 * f + 1];
        uint32_t r = uf_find(parent, t0), t = t0, k = k0;
        do {
            uint32_t a = idx[3 * t + k];
            h->face_vertices[out++] = a;
            if (out > nfv)
                break;
            /* next edge: starting at b = idx[t][k+1] */
            uint32_t kn = (k + 1) % 3;
            while (uf_find(parent, nbr[3 * t + kn]) == r) {
                /* cross into the neighbour over edge (b, c) of t: in it the
                 * edge runs (c, b); continue from b there */
                uint32_t u = nbr[3 * t + kn], b = idx[3 * t + kn];
                uint32_t m = 0;
                while (idx[3 * u + m] != b)
                    m++;
                t = u;
                kn = m;
            }
            k = kn;
        } while (!(t == t0 && k == k0));
        /* plane: Newell normal of the polygon, offset through its mean */
        uint32_t s0 = h->face_start[f], c = out - s0;
        double nrm[3] = {0, 0, 0}, cen[3] = {0, 0, 0};
        for (uint32_t i = 0; i < c; i++) {
            const double *p = pos + 3 * h->face_vertices[s0 + i], *q = pos + 3 * h->face_vertices[s0 + (i + 1) % c];
            nrm[0] += (p[1] - q[1]) * (p[2] + q[2]);
            nrm[1] += (p[2] - q[2]) * (p[0] + q[0]);
            nrm[2] += (p[0] - q[0]) * (p[1] + q[1]);
            for (int j = 0; j < 3; j++)
                cen[j] += p[j] / c;
        }
        double l = sqrt(dot3(nrm, nrm));
        for (int j = 0; j < 3; j++)
            h->planes[4 * f + j] = nrm[j] / l;
        /* the plane touches the farthest face vertex, so no vertex is outside */
        double d = -INFINITY;
        for (uint32_t i = 0; i < c; i++)
            d = fmax(d, dot3(h->planes + 4 * f, pos + 3 * h->face_vertices[s0 + i]));
        h->planes[4 * f + 3] = d;
        for (uint32_t i = 0; i < c; i++) {
            uint32_t a = h->face_vertices[s0 + i], b = h->face_vertices[s0 + (i + 1) % c];
            if (a < b && eo < ne) {
                h->edges[2 * eo] = a;
                h->edges[2 * eo + 1] = b;
                h->edge_faces[2 * eo] = f;
                h->edge_faces[2 * eo + 1] = UINT32_MAX;
                use_map = use_map && q_hashmap_set(&emap, (uint64_t)a << 32 | b, eo);
                eo++;
            }
        }
    }
    h->face_start[nf] = out;
    h->edge_count = eo;
    /* the second face of each edge: where it runs b -> a */
    for (uint32_t f = 0; f < nf && out == nfv; f++) {
        uint32_t s0 = h->face_start[f], c = h->face_start[f + 1] - s0;
        for (uint32_t i = 0; i < c; i++) {
            uint32_t a = h->face_vertices[s0 + i], b = h->face_vertices[s0 + (i + 1) % c];
            if (a < b)
                continue;
            if (use_map) {
                uint32_t e = q_hashmap_get(&emap, (uint64_t)b << 32 | a);
                if (e != Q_HASHMAP_EMPTY)
                    h->edge_faces[2 * e + 1] = f;
                continue;
            }
            for (uint32_t e = 0; e < eo; e++)
                if (h->edges[2 * e] == b && h->edges[2 * e + 1] == a) {
                    h->edge_faces[2 * e + 1] = f;
                    break;
                }
        }
    }
    q_hashmap_free(&emap);
    /* every edge must join two faces (near-degenerate input can leave one
     * alone; the narrowphase walks edge_faces) */
    bool paired = true;
    for (uint32_t e = 0; e < h->edge_count && paired; e++)
        paired = h->edge_faces[2 * e] < nf && h->edge_faces[2 * e + 1] < nf;
    if (out != nfv || !paired) {
        /* cannot happen on a closed mesh; refuse rather than keep a broken hull */
        h->edge_count = ne;
        h->face_start[nf] = nfv;
        free_hull(h);
        q_free(s, sizeof *s);
        s = NULL;
        snprintf(err, errlen, "hull faces could not be merged (non-manifold hull)");
        goto done;
    }
    s->hull = h;
    hull_bounds(s);
done:
    q_free(vin, n * sizeof(uint32_t));
    q_free(idx, ib * sizeof(uint32_t));
    if (work)
        q_free(work, work_bytes);
    return s;
}

q_collider *q_collider_compound(q_collider_part *parts, uint32_t count, char *err, size_t errlen)
{
    bool ok = count > 0 && count <= 65535;
    if (!ok)
        snprintf(err, errlen, "a compound needs 1 to 65535 parts (got %u)", count);
    for (uint32_t i = 0; ok && i < count; i++) {
        const q_xform *x = &parts[i].local;
        double qn = sqrt(x->q[0] * x->q[0] + x->q[1] * x->q[1] + x->q[2] * x->q[2] + x->q[3] * x->q[3]);
        if (!parts[i].shape || parts[i].shape->kind == Q_COLLIDER_COMPOUND) {
            snprintf(err, errlen, "compound part %u must be a convex shape", i + 1);
            ok = false;
        } else if (!isfinite(x->p[0] + x->p[1] + x->p[2]) || !(fabs(qn - 1) < 1e-6)) {
            snprintf(err, errlen, "compound part %u has a bad placement", i + 1);
            ok = false;
        }
    }
    q_collider *s = ok ? new_collider(Q_COLLIDER_COMPOUND, err, errlen) : NULL;
    q_collider_part *copy = s ? q_alloc(count * sizeof *copy) : NULL;
    if (!copy) {
        if (s) {
            snprintf(err, errlen, "out of memory");
            q_free(s, sizeof *s);
        }
        for (uint32_t i = 0; i < count; i++)
            q_collider_free(parts[i].shape);
        return NULL;
    }
    memcpy(copy, parts, count * sizeof *copy);
    s->parts = copy;
    s->part_count = count;
    for (int k = 0; k < 3; k++) {
        s->min[k] = INFINITY;
        s->max[k] = -INFINITY;
    }
    for (uint32_t i = 0; i < count; i++) {
        double mn[3], mx[3];
        q_collider_bounds(copy[i].shape, &copy[i].local, mn, mx);
        for (int k = 0; k < 3; k++) {
            s->min[k] = fmin(s->min[k], mn[k]);
            s->max[k] = fmax(s->max[k], mx[k]);
        }
    }
    return s;
}

void q_collider_free(q_collider *s)
{
    if (!s)
        return;
    if (s->hull)
        free_hull(s->hull);
    for (uint32_t i = 0; i < s->part_count; i++)
        q_collider_free(s->parts[i].shape);
    if (s->parts)
        q_free(s->parts, s->part_count * sizeof *s->parts);
    q_free(s, sizeof *s);
}

/* ---- mass ---- */

static void diag_inertia(q_mass_props *m, double x, double y, double z)
{
    memset(m->inertia, 0, sizeof m->inertia);
    m->inertia[0] = x;
    m->inertia[4] = y;
    m->inertia[8] = z;
}

q_mass_props q_collider_mass(const q_collider *s)
{
    q_mass_props m;
    memset(&m, 0, sizeof m);
    switch (s->kind) {
    case Q_COLLIDER_SPHERE: {
        double r = s->radius;
        m.volume = 4.0 / 3.0 * M_PI * r * r * r;
        double i = 0.4 * m.volume * r * r;
        diag_inertia(&m, i, i, i);
        break;
    }
    case Q_COLLIDER_BOX: {
        const double *h = s->half;
        m.volume = 8 * h[0] * h[1] * h[2];
        diag_inertia(&m, m.volume / 3 * (h[1] * h[1] + h[2] * h[2]), m.volume / 3 * (h[0] * h[0] + h[2] * h[2]),
                     m.volume / 3 * (h[0] * h[0] + h[1] * h[1]));
        break;
    }
    case Q_COLLIDER_CAPSULE: {
        double r = s->radius, hl = 2 * s->half_height;
        double mc = M_PI * r * r * hl, ms = 4.0 / 3.0 * M_PI * r * r * r;
        m.volume = mc + ms;
        double iy = mc * r * r / 2 + ms * 0.4 * r * r;
        double ix = mc * (hl * hl / 12 + r * r / 4) + ms * (0.4 * r * r + hl * hl / 4 + 3 * hl * r / 8);
        diag_inertia(&m, ix, iy, ix);
        break;
    }
    case Q_COLLIDER_HULL: {
        /* Tetrahedra from a reference point inside (the vertex mean) to each
         * face triangle; covariance from the canonical tetrahedron. */
        const q_hull_data *h = s->hull;
        double ref[3] = {0, 0, 0};
        for (uint32_t i = 0; i < h->vertex_count; i++)
            for (int k = 0; k < 3; k++)
                ref[k] += h->vertices[3 * i + k] / h->vertex_count;
        double vol = 0, com[3] = {0, 0, 0}, C[9] = {0};
        for (uint32_t f = 0; f < h->face_count; f++) {
            uint32_t s0 = h->face_start[f], c = h->face_start[f + 1] - s0;
            const double *p0 = h->vertices + 3 * h->face_vertices[s0];
            for (uint32_t i = 1; i + 1 < c; i++) {
                const double *p1 = h->vertices + 3 * h->face_vertices[s0 + i],
                             *p2 = h->vertices + 3 * h->face_vertices[s0 + i + 1];
                double a[3], b[3], d[3], bc[3];
                for (int k = 0; k < 3; k++) {
                    a[k] = p0[k] - ref[k];
                    b[k] = p1[k] - ref[k];
                    d[k] = p2[k] - ref[k];
                }
                cross3(b, d, bc);
                double det = dot3(a, bc);
                vol += det / 6;
                for (int k = 0; k < 3; k++)
                    com[k] += det / 24 * (a[k] + b[k] + d[k]);
                for (int r = 0; r < 3; r++)
                    for (int q = 0; q < 3; q++)
                        C[3 * r + q] += det / 120 *
                                        (a[r] * a[q] + b[r] * b[q] + d[r] * d[q] +
                                         (a[r] + b[r] + d[r]) * (a[q] + b[q] + d[q]));
            }
        }
        m.volume = vol;
        for (int k = 0; k < 3; k++)
            com[k] /= vol;
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++)
                C[3 * r + q] -= vol * com[r] * com[q];
        double tr = C[0] + C[4] + C[8];
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++)
                m.inertia[3 * r + q] = (r == q ? tr : 0) - C[3 * r + q];
        for (int k = 0; k < 3; k++)
            m.center[k] = com[k] + ref[k];
        break;
    }
    case Q_COLLIDER_COMPOUND: {
        q_mass_props pm[1];
        double total = 0, com[3] = {0, 0, 0};
        for (uint32_t i = 0; i < s->part_count; i++) {
            pm[0] = q_collider_mass(s->parts[i].shape);
            double c[3];
            q_xform_point(&s->parts[i].local, pm[0].center, c);
            total += pm[0].volume;
            for (int k = 0; k < 3; k++)
                com[k] += pm[0].volume * c[k];
        }
        for (int k = 0; k < 3; k++)
            com[k] /= total;
        for (uint32_t i = 0; i < s->part_count; i++) {
            pm[0] = q_collider_mass(s->parts[i].shape);
            const q_xform *x = &s->parts[i].local;
            double c[3], R[9];
            q_xform_point(x, pm[0].center, c);
            for (int col = 0; col < 3; col++) {
                double e[3] = {col == 0, col == 1, col == 2}, o[3];
                q_xform_vector(x, e, o);
                for (int r = 0; r < 3; r++)
                    R[3 * r + col] = o[r];
            }
            double d[3] = {c[0] - com[0], c[1] - com[1], c[2] - com[2]}, dd = dot3(d, d);
            for (int r = 0; r < 3; r++)
                for (int q = 0; q < 3; q++) {
                    double v = 0;
                    for (int a = 0; a < 3; a++)
                        for (int b = 0; b < 3; b++)
                            v += R[3 * r + a] * pm[0].inertia[3 * a + b] * R[3 * q + b];
                    m.inertia[3 * r + q] += v + pm[0].volume * ((r == q ? dd : 0) - d[r] * d[q]);
                }
        }
        m.volume = total;
        memcpy(m.center, com, sizeof com);
        break;
    }
    }
    return m;
}

/* ---- bounds, support ---- */

/* Local support of a convex (non-compound) shape; dir need not be unit. */
void q_collider_local_support(const q_collider *s, const double d[3], double o[3]);
void q_collider_local_support(const q_collider *s, const double d[3], double o[3])
{
    switch (s->kind) {
    case Q_COLLIDER_SPHERE:
    case Q_COLLIDER_CAPSULE: {
        double l = sqrt(dot3(d, d));
        double r = l > 0 ? s->radius / l : 0;
        o[0] = d[0] * r;
        o[1] = d[1] * r + (s->kind == Q_COLLIDER_CAPSULE ? (d[1] >= 0 ? s->half_height : -s->half_height) : 0);
        o[2] = d[2] * r;
        if (l == 0)
            o[0] = s->radius;
        break;
    }
    case Q_COLLIDER_BOX:
        for (int k = 0; k < 3; k++)
            o[k] = d[k] >= 0 ? s->half[k] : -s->half[k];
        break;
    case Q_COLLIDER_HULL: {
        const q_hull_data *h = s->hull;
        uint32_t best = 0;
        double bd = -INFINITY;
        for (uint32_t i = 0; i < h->vertex_count; i++) {
            double v = dot3(h->vertices + 3 * i, d);
            if (v > bd) {
                bd = v;
                best = i;
            }
        }
        memcpy(o, h->vertices + 3 * best, 3 * sizeof(double));
        break;
    }
    case Q_COLLIDER_COMPOUND: {
        double bd = -INFINITY;
        for (uint32_t i = 0; i < s->part_count; i++) {
            double p[3];
            q_collider_support(s->parts[i].shape, &s->parts[i].local, d, p);
            if (dot3(p, d) > bd) {
                bd = dot3(p, d);
                memcpy(o, p, sizeof p);
            }
        }
        break;
    }
    }
}

void q_collider_support(const q_collider *s, const q_xform *t, const double dir[3], double out[3])
{
    double ld[3], lp[3];
    q_xform_inverse_vector(t, dir, ld);
    q_collider_local_support(s, ld, lp);
    q_xform_point(t, lp, out);
}

void q_collider_bounds(const q_collider *s, const q_xform *t, double min[3], double max[3])
{
    switch (s->kind) {
    case Q_COLLIDER_SPHERE:
        for (int k = 0; k < 3; k++) {
            min[k] = t->p[k] - s->radius;
            max[k] = t->p[k] + s->radius;
        }
        return;
    case Q_COLLIDER_CAPSULE: {
        double ax[3], up[3] = {0, s->half_height, 0};
        q_xform_vector(t, up, ax);
        for (int k = 0; k < 3; k++) {
            min[k] = t->p[k] - fabs(ax[k]) - s->radius;
            max[k] = t->p[k] + fabs(ax[k]) + s->radius;
        }
        return;
    }
    case Q_COLLIDER_BOX: {
        double ext[3] = {0, 0, 0};
        for (int a = 0; a < 3; a++) {
            double e[3] = {a == 0 ? s->half[0] : 0, a == 1 ? s->half[1] : 0, a == 2 ? s->half[2] : 0}, o[3];
            q_xform_vector(t, e, o);
            for (int k = 0; k < 3; k++)
                ext[k] += fabs(o[k]);
        }
        for (int k = 0; k < 3; k++) {
            min[k] = t->p[k] - ext[k];
            max[k] = t->p[k] + ext[k];
        }
        return;
    }
    case Q_COLLIDER_HULL:
        for (int k = 0; k < 3; k++) {
            double d[3] = {k == 0, k == 1, k == 2}, o[3], nd[3] = {-d[0], -d[1], -d[2]};
            q_collider_support(s, t, d, o);
            max[k] = o[k];
            q_collider_support(s, t, nd, o);
            min[k] = o[k];
        }
        return;
    case Q_COLLIDER_COMPOUND:
        for (int k = 0; k < 3; k++) {
            min[k] = INFINITY;
            max[k] = -INFINITY;
        }
        for (uint32_t i = 0; i < s->part_count; i++) {
            q_xform x = q_xform_mul(t, &s->parts[i].local);
            double mn[3], mx[3];
            q_collider_bounds(s->parts[i].shape, &x, mn, mx);
            for (int k = 0; k < 3; k++) {
                min[k] = fmin(min[k], mn[k]);
                max[k] = fmax(max[k], mx[k]);
            }
        }
        return;
    }
}

/* ---- containment and rays (shape space) ---- */

static bool local_contains(const q_collider *s, const double p[3])
{
    switch (s->kind) {
    case Q_COLLIDER_SPHERE:
        return dot3(p, p) <= s->radius * s->radius;
    case Q_COLLIDER_BOX:
        return fabs(p[0]) <= s->half[0] && fabs(p[1]) <= s->half[1] && fabs(p[2]) <= s->half[2];
    case Q_COLLIDER_CAPSULE: {
        double y = fmax(-s->half_height, fmin(s->half_height, p[1]));
        return p[0] * p[0] + (p[1] - y) * (p[1] - y) + p[2] * p[2] <= s->radius * s->radius;
    }
    case Q_COLLIDER_HULL:
        for (uint32_t f = 0; f < s->hull->face_count; f++)
            if (dot3(s->hull->planes + 4 * f, p) > s->hull->planes[4 * f + 3])
                return false;
        return true;
    case Q_COLLIDER_COMPOUND:
        for (uint32_t i = 0; i < s->part_count; i++) {
            double lp[3];
            q_xform_inverse_point(&s->parts[i].local, p, lp);
            if (local_contains(s->parts[i].shape, lp))
                return true;
        }
        return false;
    }
    return false;
}

bool q_collider_contains(const q_collider *s, const q_xform *t, const double point[3])
{
    double lp[3];
    q_xform_inverse_point(t, point, lp);
    return local_contains(s, lp);
}

/* Ray against a sphere at c: smallest t >= 0 (0 inside), or -1. */
static double ray_sphere(const double o[3], const double d[3], const double c[3], double r)
{
    double m[3] = {o[0] - c[0], o[1] - c[1], o[2] - c[2]};
    double cc = dot3(m, m) - r * r;
    if (cc <= 0)
        return 0;
    double a = dot3(d, d), b = dot3(m, d);
    if (b >= 0 || a == 0)
        return -1;
    double disc = b * b - a * cc;
    if (disc < 0)
        return -1;
    return (-b - sqrt(disc)) / a;
}

static bool local_raycast(const q_collider *s, const double o[3], const double d[3], double tmax, double *th,
                          double n[3])
{
    switch (s->kind) {
    case Q_COLLIDER_SPHERE: {
        double c[3] = {0, 0, 0}, t = ray_sphere(o, d, c, s->radius);
        if (t < 0 || t > tmax)
            return false;
        *th = t;
        double p[3] = {o[0] + t * d[0], o[1] + t * d[1], o[2] + t * d[2]}, l = sqrt(dot3(p, p));
        for (int k = 0; k < 3; k++)
            n[k] = l > 0 ? p[k] / l : (k == 1);
        return true;
    }
    case Q_COLLIDER_BOX: {
        double t0 = 0, t1 = tmax;
        int axis = -1;
        double sign = 0;
        for (int k = 0; k < 3; k++) {
            if (d[k] == 0) {
                if (fabs(o[k]) > s->half[k])
                    return false;
                continue;
            }
            double a = (-s->half[k] - o[k]) / d[k], b = (s->half[k] - o[k]) / d[k];
            double sg = -1;
            if (a > b) {
                double x = a;
                a = b;
                b = x;
                sg = 1;
            }
            if (a > t0) {
                t0 = a;
                axis = k;
                sign = sg;
            }
            t1 = fmin(t1, b);
            if (t0 > t1)
                return false;
        }
        *th = t0;
        n[0] = n[1] = n[2] = 0;
        if (axis >= 0)
            n[axis] = sign;
        else
            n[1] = 1; /* inside */
        return true;
    }
    case Q_COLLIDER_CAPSULE: {
        if (local_contains(s, o)) {
            *th = 0;
            n[0] = n[2] = 0;
            n[1] = 1;
            return true;
        }
        double best = INFINITY, r = s->radius, h = s->half_height;
        /* infinite cylinder around Y, clipped to |y| <= h */
        double a = d[0] * d[0] + d[2] * d[2], b = o[0] * d[0] + o[2] * d[2], c = o[0] * o[0] + o[2] * o[2] - r * r;
        if (a > 0) {
            double disc = b * b - a * c;
            if (disc >= 0) {
                double t = (-b - sqrt(disc)) / a;
                if (t >= 0 && fabs(o[1] + t * d[1]) <= h)
                    best = t;
            }
        }
        for (int e = -1; e <= 1; e += 2) {
            double cc[3] = {0, e * h, 0}, t = ray_sphere(o, d, cc, r);
            if (t >= 0 && t < best)
                best = t;
        }
        if (!(best <= tmax))
            return false;
        *th = best;
        double p[3] = {o[0] + best * d[0], o[1] + best * d[1], o[2] + best * d[2]};
        double y = fmax(-h, fmin(h, p[1]));
        double v[3] = {p[0], p[1] - y, p[2]}, l = sqrt(dot3(v, v));
        for (int k = 0; k < 3; k++)
            n[k] = l > 0 ? v[k] / l : (k == 1);
        return true;
    }
    case Q_COLLIDER_HULL: {
        const q_hull_data *hd = s->hull;
        double t0 = 0, t1 = tmax;
        int face = -1;
        for (uint32_t f = 0; f < hd->face_count; f++) {
            const double *pl = hd->planes + 4 * f;
            double num = pl[3] - dot3(pl, o), den = dot3(pl, d);
            if (den == 0) {
                if (num < 0)
                    return false;
                continue;
            }
            double t = num / den;
            if (den < 0) {
                if (t > t0) {
                    t0 = t;
                    face = (int)f;
                }
            } else if (t < t1)
                t1 = t;
            if (t0 > t1)
                return false;
        }
        *th = t0;
        if (face >= 0)
            memcpy(n, hd->planes + 4 * face, 3 * sizeof(double));
        else {
            n[0] = n[2] = 0;
            n[1] = 1;
        }
        return true;
    }
    case Q_COLLIDER_COMPOUND: {
        bool hit = false;
        for (uint32_t i = 0; i < s->part_count; i++) {
            const q_xform *x = &s->parts[i].local;
            double lo[3], ld[3], t, ln[3];
            q_xform_inverse_point(x, o, lo);
            q_xform_inverse_vector(x, d, ld);
            if (local_raycast(s->parts[i].shape, lo, ld, tmax, &t, ln)) {
                tmax = t;
                *th = t;
                q_xform_vector(x, ln, n);
                hit = true;
            }
        }
        return hit;
    }
    }
    return false;
}

bool q_collider_raycast(const q_collider *s, const q_xform *t, const double origin[3], const double dir[3],
                        double tmax, double *t_hit, double normal[3])
{
    double lo[3], ld[3], ln[3], th;
    q_xform_inverse_point(t, origin, lo);
    q_xform_inverse_vector(t, dir, ld);
    if (!local_raycast(s, lo, ld, tmax, &th, ln))
        return false;
    *t_hit = th;
    q_xform_vector(t, ln, normal);
    return true;
}

/* ---- triangles ---- */

typedef struct tri_buf {
    double *v;
    uint32_t *i;
    uint32_t nv, nt, cv, ct;
} tri_buf;

#define SPHERE_SEG 16
#define SPHERE_RING 8

static void count_tris(const q_collider *s, uint32_t *nv, uint32_t *nt)
{
    switch (s->kind) {
    case Q_COLLIDER_BOX:
        *nv += 24;
        *nt += 12;
        break;
    case Q_COLLIDER_SPHERE:
    case Q_COLLIDER_CAPSULE:
        *nv += (SPHERE_RING + 2) * (SPHERE_SEG + 1);
        *nt += (SPHERE_RING + 1) * SPHERE_SEG * 2;
        break;
    case Q_COLLIDER_HULL:
        *nv += s->hull->face_start[s->hull->face_count];
        *nt += s->hull->face_start[s->hull->face_count] - 2 * s->hull->face_count;
        break;
    case Q_COLLIDER_COMPOUND:
        for (uint32_t i = 0; i < s->part_count; i++)
            count_tris(s->parts[i].shape, nv, nt);
        break;
    }
}

static void emit_tris(const q_collider *s, const q_xform *x, tri_buf *b)
{
    uint32_t base = b->nv;
    switch (s->kind) {
    case Q_COLLIDER_BOX: {
        for (int a = 0; a < 3; a++)
            for (int sg = -1; sg <= 1; sg += 2) {
                int u = (a + 1) % 3, w = (a + 2) % 3;
                double c[4][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
                uint32_t v0 = b->nv;
                for (int k = 0; k < 4; k++) {
                    double p[3];
                    p[a] = sg * s->half[a];
                    p[u] = c[k][sg > 0 ? 0 : 1] * s->half[u];
                    p[w] = c[k][sg > 0 ? 1 : 0] * s->half[w];
                    q_xform_point(x, p, b->v + 3 * b->nv++);
                }
                uint32_t q[6] = {0, 1, 2, 0, 2, 3};
                for (int k = 0; k < 6; k++)
                    b->i[3 * b->nt + k] = v0 + q[k];
                b->nt += 2;
            }
        break;
    }
    case Q_COLLIDER_SPHERE:
    case Q_COLLIDER_CAPSULE: {
        double h = s->kind == Q_COLLIDER_CAPSULE ? s->half_height : 0;
        /* rings from the top pole to the bottom; the equator doubled for capsules */
        for (int r = 0; r <= SPHERE_RING + 1; r++) {
            int rr = r <= SPHERE_RING / 2 ? r : r - 1;
            double th = M_PI * rr / SPHERE_RING, y = cos(th) * s->radius, rad = sin(th) * s->radius;
            double off = r <= SPHERE_RING / 2 ? h : -h;
            for (int k = 0; k <= SPHERE_SEG; k++) {
                double ph = 2 * M_PI * k / SPHERE_SEG;
                double p[3] = {rad * cos(ph), y + off, -rad * sin(ph)};
                q_xform_point(x, p, b->v + 3 * b->nv++);
            }
        }
        for (int r = 0; r <= SPHERE_RING; r++)
            for (int k = 0; k < SPHERE_SEG; k++) {
                uint32_t a = base + (uint32_t)(r * (SPHERE_SEG + 1) + k), c = a + SPHERE_SEG + 1;
                uint32_t q[6] = {a, c, c + 1, a, c + 1, a + 1};
                memcpy(b->i + 3 * b->nt, q, sizeof q);
                b->nt += 2;
            }
        break;
    }
    case Q_COLLIDER_HULL: {
        const q_hull_data *h = s->hull;
        for (uint32_t f = 0; f < h->face_count; f++) {
            uint32_t s0 = h->face_start[f], c = h->face_start[f + 1] - s0, v0 = b->nv;
            for (uint32_t k = 0; k < c; k++)
                q_xform_point(x, h->vertices + 3 * h->face_vertices[s0 + k], b->v + 3 * b->nv++);
            for (uint32_t k = 1; k + 1 < c; k++) {
                b->i[3 * b->nt] = v0;
                b->i[3 * b->nt + 1] = v0 + k;
                b->i[3 * b->nt + 2] = v0 + k + 1;
                b->nt++;
            }
        }
        break;
    }
    case Q_COLLIDER_COMPOUND:
        for (uint32_t i = 0; i < s->part_count; i++) {
            q_xform px = q_xform_mul(x, &s->parts[i].local);
            emit_tris(s->parts[i].shape, &px, b);
        }
        break;
    }
}

bool q_collider_triangles(const q_collider *s, double **vertices, uint32_t *vertex_count, uint32_t **indices,
                          uint32_t *triangle_count)
{
    uint32_t nv = 0, nt = 0;
    count_tris(s, &nv, &nt);
    tri_buf b = {q_alloc((size_t)nv * 3 * sizeof(double)), q_alloc((size_t)nt * 3 * sizeof(uint32_t)), 0, 0, nv, nt};
    if (!b.v || !b.i) {
        q_free(b.v, (size_t)nv * 3 * sizeof(double));
        q_free(b.i, (size_t)nt * 3 * sizeof(uint32_t));
        return false;
    }
    q_xform id = {{0, 0, 0}, {0, 0, 0, 1}};
    emit_tris(s, &id, &b);
    *vertices = b.v;
    *indices = b.i;
    *vertex_count = nv;
    *triangle_count = nt;
    return true;
}
