/* Contact manifolds between colliders (collide.h), shared with the terrain
 * narrowphase through collide_internal.h.
 *
 * Every convex collider is either a rounded core (sphere: a point, capsule: a
 * segment, plus a radius) or a polytope (box, hull, and the terrain's
 * triangles). Pairs:
 *  - core vs core (sphere-sphere, sphere-capsule, capsule-capsule): closest
 *    points of the core segments; parallel capsules get two points.
 *  - core vs polytope (sphere-box, capsule-box, sphere/capsule-hull): GJK
 *    distance between the core and the polytope while apart; SAT over the
 *    polytope's faces (and edge x segment axes) when the core is inside. A
 *    capsule lying on a face gets two points (segment clipped to the face).
 *  - polytope vs polytope (box-box, box-hull, hull-hull): SAT over the faces
 *    of both and the cross products of edge pairs; face axes are preferred
 *    unless an edge axis separates clearly more. A face axis gives the
 *    incident face clipped against the reference face's side planes (up to 4
 *    points kept: deepest, then largest area), an edge axis one point.
 * Feature ids: (reference face, incident face, clip feature) for faces,
 * edge pair for edges, segment end for capsules: stable while the same
 * features touch. No allocation: polygons are clipped in stack buffers
 * (faces of more than Q_CLIP_MAX vertices are truncated). */
#include "core/vec3.h"
#include "physics/collide_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define Q_CLIP_MAX 64

static double dot3(const double a[3], const double b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static void sub3(const double a[3], const double b[3], double o[3])
{
    o[0] = a[0] - b[0];
    o[1] = a[1] - b[1];
    o[2] = a[2] - b[2];
}
static void cross3(const double a[3], const double b[3], double o[3])
{
    double x = a[1] * b[2] - a[2] * b[1], y = a[2] * b[0] - a[0] * b[2], z = a[0] * b[1] - a[1] * b[0];
    o[0] = x;
    o[1] = y;
    o[2] = z;
}
static double norm3(const double a[3]) { return sqrt(dot3(a, a)); }

/* ---- polytopes ---- */

static const int box_face_verts[6][4] = {
    /* face 2a + (sign > 0): vertex index bit a set for +; CCW from outside */
    {0, 4, 6, 2}, /* -x */
    {1, 3, 7, 5}, /* +x */
    {0, 1, 5, 4}, /* -y */
    {2, 6, 7, 3}, /* +y */
    {0, 2, 3, 1}, /* -z */
    {4, 5, 7, 6}, /* +z */
};
static const int box_edges[12][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 2}, {1, 3},
                                     {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};

void q_poly_from_collider(q_poly *p, const q_collider *s, const q_xform *x)
{
    memset(p, 0, offsetof(q_poly, hv));
    p->s = s;
    p->x = *x;
    if (s->kind == Q_COLLIDER_BOX) {
        /* rotation matrix columns from the quaternion */
        const double *q = x->q;
        double xx = q[0] * q[0], yy = q[1] * q[1], zz = q[2] * q[2], xy = q[0] * q[1], xz = q[0] * q[2],
               yz = q[1] * q[2], wx = q[3] * q[0], wy = q[3] * q[1], wz = q[3] * q[2];
        double ax[3][3] = {{1 - 2 * (yy + zz), 2 * (xy + wz), 2 * (xz - wy)},
                           {2 * (xy - wz), 1 - 2 * (xx + zz), 2 * (yz + wx)},
                           {2 * (xz + wy), 2 * (yz - wx), 1 - 2 * (xx + yy)}};
        memcpy(p->baxis, ax, sizeof ax);
        double e[3][3];
        for (int a = 0; a < 3; a++)
            for (int k = 0; k < 3; k++)
                e[a][k] = ax[a][k] * s->half[a];
        for (int i = 0; i < 8; i++)
            for (int k = 0; k < 3; k++)
                p->bv[i][k] = x->p[k] + ((i & 1) ? e[0][k] : -e[0][k]) + ((i & 2) ? e[1][k] : -e[1][k]) +
                              ((i & 4) ? e[2][k] : -e[2][k]);
        memcpy(p->c, x->p, sizeof p->c);
        p->nf = 6;
        p->ne = 12;
        return;
    } else {
        p->nf = s->hull->face_count;
        p->ne = s->hull->edge_count;
        if (s->hull->vertex_count <= Q_POLY_HULL_MAX) {
            p->hn = s->hull->vertex_count;
            for (uint32_t i = 0; i < p->hn; i++)
                q_xform_point(x, s->hull->vertices + 3 * i, p->hv[i]);
        }
    }
    double l[3] = {(s->min[0] + s->max[0]) / 2, (s->min[1] + s->max[1]) / 2, (s->min[2] + s->max[2]) / 2};
    q_xform_point(x, l, p->c);
}

void q_poly_from_triangle(q_poly *p, const double a[3], const double b[3], const double c[3])
{
    memset(p, 0, offsetof(q_poly, hv));
    memcpy(p->bv[0], a, 3 * sizeof(double));
    memcpy(p->bv[1], b, 3 * sizeof(double));
    memcpy(p->bv[2], c, 3 * sizeof(double));
    double e1[3], e2[3];
    sub3(b, a, e1);
    sub3(c, a, e2);
    cross3(e1, e2, p->tn);
    double l = norm3(p->tn);
    for (int k = 0; k < 3; k++)
        p->tn[k] = l > 0 ? p->tn[k] / l : (k == 1);
    for (int k = 0; k < 3; k++)
        p->c[k] = (a[k] + b[k] + c[k]) / 3;
    p->nf = 1;
    p->ne = 3;
}

static void poly_support(const q_poly *p, const double d[3], double out[3])
{
    if (p->hn) {
        uint32_t best = 0;
        double bd = dot3(p->hv[0], d);
        for (uint32_t i = 1; i < p->hn; i++) {
            double v = dot3(p->hv[i], d);
            if (v > bd) {
                bd = v;
                best = i;
            }
        }
        memcpy(out, p->hv[best], 3 * sizeof(double));
        return;
    }
    if (p->s && p->s->kind == Q_COLLIDER_HULL) {
        q_collider_support(p->s, &p->x, d, out);
        return;
    }
    int n = p->s ? 8 : 3, best = 0;
    double bd = dot3(p->bv[0], d);
    for (int i = 1; i < n; i++) {
        double v = dot3(p->bv[i], d);
        if (v > bd) {
            bd = v;
            best = i;
        }
    }
    memcpy(out, p->bv[best], 3 * sizeof(double));
}

/* Half width of a box along d. */
static double box_radius(const q_poly *p, const double d[3])
{
    const double *h = p->s->half;
    return h[0] * fabs(dot3(p->baxis[0], d)) + h[1] * fabs(dot3(p->baxis[1], d)) + h[2] * fabs(dot3(p->baxis[2], d));
}

static double poly_max(const q_poly *p, const double d[3])
{
    if (p->s && p->s->kind == Q_COLLIDER_BOX)
        return dot3(p->c, d) + box_radius(p, d);
    if (!p->s)
        return fmax(dot3(p->bv[0], d), fmax(dot3(p->bv[1], d), dot3(p->bv[2], d)));
    double o[3];
    poly_support(p, d, o);
    return dot3(o, d);
}

static double poly_min(const q_poly *p, const double d[3])
{
    if (p->s && p->s->kind == Q_COLLIDER_BOX)
        return dot3(p->c, d) - box_radius(p, d);
    if (!p->s)
        return fmin(dot3(p->bv[0], d), fmin(dot3(p->bv[1], d), dot3(p->bv[2], d)));
    double nd[3] = {-d[0], -d[1], -d[2]}, o[3];
    poly_support(p, nd, o);
    return dot3(o, d);
}

/* World plane of face f: outward unit normal n, offset d. */
static void poly_face_plane(const q_poly *p, uint32_t f, double n[3], double *d)
{
    if (!p->s) {
        memcpy(n, p->tn, 3 * sizeof(double));
        *d = dot3(n, p->bv[0]);
    } else if (p->s->kind == Q_COLLIDER_BOX) {
        int a = (int)f / 2;
        double sg = (f & 1) ? 1 : -1;
        for (int k = 0; k < 3; k++)
            n[k] = sg * p->baxis[a][k];
        *d = dot3(n, p->x.p) + p->s->half[a];
    } else {
        const double *pl = p->s->hull->planes + 4 * f;
        q_xform_vector(&p->x, pl, n);
        *d = pl[3] + dot3(n, p->x.p);
    }
}

/* World polygon of face f (CCW seen from outside); returns the count. */
static int poly_face_polygon(const q_poly *p, uint32_t f, double (*out)[3], int cap)
{
    if (!p->s) {
        for (int i = 0; i < 3; i++)
            memcpy(out[i], p->bv[i], 3 * sizeof(double));
        return 3;
    }
    if (p->s->kind == Q_COLLIDER_BOX) {
        for (int i = 0; i < 4; i++)
            memcpy(out[i], p->bv[box_face_verts[f][i]], 3 * sizeof(double));
        return 4;
    }
    const q_hull_data *h = p->s->hull;
    uint32_t s0 = h->face_start[f], c = h->face_start[f + 1] - s0;
    if ((int)c > cap)
        c = (uint32_t)cap;
    for (uint32_t i = 0; i < c; i++)
        q_xform_point(&p->x, h->vertices + 3 * h->face_vertices[s0 + i], out[i]);
    return (int)c;
}

static void poly_edge(const q_poly *p, uint32_t e, double a[3], double b[3])
{
    if (!p->s) {
        memcpy(a, p->bv[e], 3 * sizeof(double));
        memcpy(b, p->bv[(e + 1) % 3], 3 * sizeof(double));
    } else if (p->s->kind == Q_COLLIDER_BOX) {
        memcpy(a, p->bv[box_edges[e][0]], 3 * sizeof(double));
        memcpy(b, p->bv[box_edges[e][1]], 3 * sizeof(double));
    } else {
        const q_hull_data *h = p->s->hull;
        q_xform_point(&p->x, h->vertices + 3 * h->edges[2 * e], a);
        q_xform_point(&p->x, h->vertices + 3 * h->edges[2 * e + 1], b);
    }
}

static void poly_center(const q_poly *p, double c[3]) { memcpy(c, p->c, 3 * sizeof(double)); }

/* ---- manifold helpers ---- */

static void add_point(q_manifold *m, const double pos[3], double sep, uint32_t id, q_contact_point *buf, int *n,
                      int cap)
{
    (void)m;
    if (*n >= cap)
        return;
    memcpy(buf[*n].position, pos, 3 * sizeof(double));
    buf[*n].separation = sep;
    buf[*n].id = id;
    (*n)++;
}

/* Keeps at most 4 of n points: the deepest, the farthest from it, then the
 * points that make the largest triangle and quadrilateral. */
void q_reduce_points(const double normal[3], q_contact_point *pts, int n, q_manifold *m)
{
    if (n <= Q_MANIFOLD_POINTS) {
        for (int i = 0; i < n; i++)
            m->points[i] = pts[i];
        m->count = (uint32_t)n;
        return;
    }
    int a = 0;
    for (int i = 1; i < n; i++)
        if (pts[i].separation < pts[a].separation)
            a = i;
    int b = -1;
    double best = -1;
    for (int i = 0; i < n; i++) {
        double d[3];
        sub3(pts[i].position, pts[a].position, d);
        if (i != a && dot3(d, d) > best) {
            best = dot3(d, d);
            b = i;
        }
    }
    int c = -1;
    best = -1;
    for (int i = 0; i < n; i++) {
        if (i == a || i == b)
            continue;
        double e1[3], e2[3], x[3];
        sub3(pts[b].position, pts[a].position, e1);
        sub3(pts[i].position, pts[a].position, e2);
        cross3(e1, e2, x);
        double ar = fabs(dot3(x, normal));
        if (ar > best) {
            best = ar;
            c = i;
        }
    }
    /* fourth: the point adding the most area on the far side of a triangle edge */
    int d = -1;
    best = -1;
    int tri[3] = {a, b, c};
    for (int i = 0; i < n; i++) {
        if (i == a || i == b || i == c)
            continue;
        for (int e = 0; e < 3; e++) {
            const double *p0 = pts[tri[e]].position, *p1 = pts[tri[(e + 1) % 3]].position;
            double e1[3], e2[3], x[3];
            sub3(p1, p0, e1);
            sub3(pts[i].position, p0, e2);
            cross3(e1, e2, x);
            /* triangle (a,b,c) orientation about the normal */
            double t1[3], t2[3], tx[3];
            sub3(pts[b].position, pts[a].position, t1);
            sub3(pts[c].position, pts[a].position, t2);
            cross3(t1, t2, tx);
            double sign = dot3(tx, normal) >= 0 ? -1 : 1;
            double ar = sign * dot3(x, normal);
            if (ar > best) {
                best = ar;
                d = i;
            }
        }
    }
    m->points[0] = pts[a];
    m->points[1] = pts[b];
    m->points[2] = pts[c];
    m->count = 3;
    if (d >= 0 && best > 0)
        m->points[m->count++] = pts[d];
}

/* ---- segments ---- */

/* Closest points between segments p1q1 and p2q2: parameters s, t. */
static void segment_closest(const double p1[3], const double q1[3], const double p2[3], const double q2[3],
                            double *s_out, double *t_out)
{
    double d1[3], d2[3], r[3];
    sub3(q1, p1, d1);
    sub3(q2, p2, d2);
    sub3(p1, p2, r);
    double a = dot3(d1, d1), e = dot3(d2, d2), f = dot3(d2, r), s, t;
    if (a <= 1e-300 && e <= 1e-300) {
        *s_out = *t_out = 0;
        return;
    }
    if (a <= 1e-300) {
        s = 0;
        t = fmin(1, fmax(0, f / e));
    } else {
        double c = dot3(d1, r);
        if (e <= 1e-300) {
            t = 0;
            s = fmin(1, fmax(0, -c / a));
        } else {
            double b = dot3(d1, d2), den = a * e - b * b;
            s = den > 1e-14 * a * e ? fmin(1, fmax(0, (b * f - c * e) / den)) : 0;
            t = (b * s + f) / e;
            if (t < 0) {
                t = 0;
                s = fmin(1, fmax(0, -c / a));
            } else if (t > 1) {
                t = 1;
                s = fmin(1, fmax(0, (b - c) / a));
            }
        }
    }
    *s_out = s;
    *t_out = t;
}

static void lerp3(const double a[3], const double b[3], double t, double o[3])
{
    for (int k = 0; k < 3; k++)
        o[k] = a[k] + (b[k] - a[k]) * t;
}

static void any_perpendicular(const double d[3], double o[3])
{
    double t[3] = {0, 1, 0};
    if (fabs(d[1]) > 0.9 * norm3(d)) {
        t[0] = 1;
        t[1] = 0;
    }
    cross3(d, t, o);
    double l = norm3(o);
    for (int k = 0; k < 3; k++)
        o[k] = l > 0 ? o[k] / l : (k == 1);
}

/* ---- core vs core ---- */

static int core_core(const q_convex *a, const q_convex *b, double margin, q_manifold *m)
{
    const double *p1 = a->pts[0], *q1 = a->n > 1 ? a->pts[1] : a->pts[0];
    const double *p2 = b->pts[0], *q2 = b->n > 1 ? b->pts[1] : b->pts[0];
    double s, t, ca[3], cb[3], d[3];
    segment_closest(p1, q1, p2, q2, &s, &t);
    lerp3(p1, q1, s, ca);
    lerp3(p2, q2, t, cb);
    sub3(cb, ca, d);
    double dist = norm3(d), r = a->radius + b->radius;
    if (dist - r > margin)
        return 0;
    double n[3];
    if (dist > 1e-12 * fmax(1, r))
        for (int k = 0; k < 3; k++)
            n[k] = d[k] / dist;
    else {
        double da[3], db[3];
        sub3(q1, p1, da);
        sub3(q2, p2, db);
        cross3(da, db, n);
        double l = norm3(n);
        if (l > 1e-12)
            for (int k = 0; k < 3; k++)
                n[k] /= l;
        else if (norm3(da) > 0)
            any_perpendicular(da, n);
        else if (norm3(db) > 0)
            any_perpendicular(db, n);
        else
            n[0] = 0, n[1] = 1, n[2] = 0;
    }
    memcpy(m->normal, n, sizeof n);
    m->count = 0;
    /* two points for parallel capsules */
    if (a->n > 1 && b->n > 1) {
        double da[3], db[3], x[3];
        sub3(q1, p1, da);
        sub3(q2, p2, db);
        cross3(da, db, x);
        double la = norm3(da), lb = norm3(db);
        if (norm3(x) < 0.02 * la * lb) {
            /* project b's ends on a's line, clip to a's extent */
            double t0 = dot3((double[3]){p2[0] - p1[0], p2[1] - p1[1], p2[2] - p1[2]}, da) / (la * la);
            double t1 = dot3((double[3]){q2[0] - p1[0], q2[1] - p1[1], q2[2] - p1[2]}, da) / (la * la);
            double lo = fmax(0, fmin(t0, t1)), hi = fmin(1, fmax(t0, t1));
            if (hi - lo > 1e-6) {
                for (int e = 0; e < 2; e++) {
                    double sa = e ? hi : lo, pa[3], pb[3], u, v;
                    lerp3(p1, q1, sa, pa);
                    /* closest on b to pa */
                    segment_closest(pa, pa, p2, q2, &u, &v);
                    lerp3(p2, q2, v, pb);
                    double sep = dot3((double[3]){pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]}, n) - r;
                    if (sep > margin)
                        continue;
                    q_contact_point *cp = &m->points[m->count++];
                    for (int k = 0; k < 3; k++)
                        cp->position[k] = pa[k] + n[k] * (a->radius + sep / 2);
                    cp->separation = sep;
                    cp->id = 0x10u + (uint32_t)e;
                }
                if (m->count > 0)
                    return 1;
            }
        }
    }
    q_contact_point *cp = &m->points[0];
    double sep = dist - r;
    for (int k = 0; k < 3; k++)
        cp->position[k] = ca[k] + n[k] * (a->radius + sep / 2);
    cp->separation = sep;
    cp->id = (s <= 0 ? 1u : s >= 1 ? 2u : 0u) | (t <= 0 ? 4u : t >= 1 ? 8u : 0u);
    m->count = 1;
    return 1;
}

/* ---- core vs polytope ---- */

/* Clips segment [a, b] against the side planes of polygon poly (normal n);
 * false when nothing is left. */
static bool clip_segment_to_face(const double (*poly)[3], int np, const double n[3], double a[3], double b[3])
{
    double ta = 0, tb = 1, d[3];
    sub3(b, a, d);
    for (int i = 0; i < np; i++) {
        double e[3], sn[3];
        sub3(poly[(i + 1) % np], poly[i], e);
        cross3(e, n, sn);
        double off = dot3(sn, poly[i]);
        double da = dot3(sn, a) - off, dd = dot3(sn, d);
        /* keep where da + t dd <= 0 */
        if (dd == 0) {
            if (da > 0)
                return false;
            continue;
        }
        double t = -da / dd;
        if (dd > 0)
            tb = fmin(tb, t);
        else
            ta = fmax(ta, t);
        if (ta > tb)
            return false;
    }
    double a2[3], b2[3];
    lerp3(a, b, ta, a2);
    lerp3(a, b, tb, b2);
    memcpy(a, a2, sizeof a2);
    memcpy(b, b2, sizeof b2);
    return true;
}

/* Core C against polytope P; the manifold normal points from P to C.
 * flags: Q_NP_ONE_SIDED (P is a one-sided triangle: no axis below its
 * face), Q_NP_FACE_ONLY (use P's face 0 as the axis). */
/* t = num / den for a point on an edge, where 0 <= num <= den; 0 when the
 * edge has no length (den = 0: both ends are the same point). */
static double edge_t(double num, double den)
{
    return den > 0 ? num / den : 0;
}

/* The closest point to p on the three edges of abc. */
static void closest_on_edges(const double p[3], const double a[3], const double b[3], const double c[3],
                             double r[3])
{
    const double *ends[3][2] = {{a, b}, {b, c}, {c, a}};
    double best = INFINITY;
    for (int e = 0; e < 3; e++) {
        double u[3], w[3], q[3], d[3];
        sub3(ends[e][1], ends[e][0], u);
        sub3(p, ends[e][0], w);
        double uu = dot3(u, u);
        lerp3(ends[e][0], ends[e][1], edge_t(fmax(0, fmin(dot3(w, u), uu)), uu), q);
        sub3(p, q, d);
        if (dot3(d, d) < best) {
            best = dot3(d, d);
            memcpy(r, q, sizeof q);
        }
    }
}

/* Closest point of triangle abc to p (Ericson, Real-Time Collision
 * Detection 5.1.5); *region: 0 inside, else a corner or an edge. A
 * triangle without area (two equal corners, or all three on a line: the
 * mesher emits some) is the segment or point that is left: its regions
 * below would send p to a zero-length edge. */
static void closest_on_triangle(const double p[3], const double a[3], const double b[3], const double c[3],
                                double r[3], int *region)
{
    double ab[3], ac[3], ap[3], bp[3], cp[3], n[3];
    sub3(b, a, ab);
    sub3(c, a, ac);
    sub3(p, a, ap);
    *region = 1;
    cross3(ab, ac, n);
    double size = dot3(ab, ab) + dot3(ac, ac);
    if (!(dot3(n, n) > 1e-24 * size * size)) { /* sine of the angle at a under 1e-12, or NaN */
        closest_on_edges(p, a, b, c, r);
        return;
    }
    double d1 = dot3(ab, ap), d2 = dot3(ac, ap);
    if (d1 <= 0 && d2 <= 0) {
        memcpy(r, a, 3 * sizeof(double));
        return;
    }
    sub3(p, b, bp);
    double d3 = dot3(ab, bp), d4 = dot3(ac, bp);
    if (d3 >= 0 && d4 <= d3) {
        memcpy(r, b, 3 * sizeof(double));
        return;
    }
    double vc = d1 * d4 - d3 * d2;
    if (vc <= 0 && d1 >= 0 && d3 <= 0) {
        lerp3(a, b, d1 / (d1 - d3), r);
        return;
    }
    sub3(p, c, cp);
    double d5 = dot3(ab, cp), d6 = dot3(ac, cp);
    if (d6 >= 0 && d5 <= d6) {
        memcpy(r, c, 3 * sizeof(double));
        return;
    }
    double vb = d5 * d2 - d1 * d6;
    if (vb <= 0 && d2 >= 0 && d6 <= 0) {
        lerp3(a, c, d2 / (d2 - d6), r);
        return;
    }
    double va = d3 * d6 - d5 * d4;
    if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
        lerp3(b, c, (d4 - d3) / ((d4 - d3) + (d5 - d6)), r);
        return;
    }
    double den = 1 / (va + vb + vc), v = vb * den, w = vc * den;
    for (int k = 0; k < 3; k++)
        r[k] = a[k] + ab[k] * v + ac[k] * w;
    *region = 0;
}

/* Sphere against a one-sided triangle: the dedicated test. */
static int sphere_triangle(const q_poly *p, const q_convex *c, double margin, q_manifold *m)
{
    double q[3], d[3];
    int region;
    closest_on_triangle(c->pts[0], p->bv[0], p->bv[1], p->bv[2], q, &region);
    sub3(c->pts[0], q, d);
    double dist = norm3(d), h = dot3(d, p->tn), n[3], sep;
    if (region == 0 || dist == 0) {
        /* over or under the face: along its normal */
        if (h < 0 && region != 0)
            return 0;
        sep = h - c->radius;
        memcpy(n, p->tn, sizeof n);
    } else {
        if (h < 0)
            return 0; /* behind the triangle, beside it: another triangle's business */
        sep = dist - c->radius;
        for (int k = 0; k < 3; k++)
            n[k] = d[k] / dist;
    }
    if (sep > margin)
        return 0;
    memcpy(m->normal, n, sizeof n);
    q_contact_point *cp = &m->points[0];
    double qq[3];
    /* the triangle's surface point along n below the centre */
    for (int k = 0; k < 3; k++) {
        qq[k] = c->pts[0][k] - n[k] * (sep + c->radius);
        cp->position[k] = qq[k] + n[k] * sep / 2;
    }
    cp->separation = sep;
    cp->id = region == 0 ? 0u : 0xff00u;
    m->count = 1;
    return 1;
}

/* Closest points of segment s0-s1 and triangle t (pt on the triangle, ps
 * on the segment) and their distance; 0 when the segment meets the
 * triangle. The closest pair of a segment and a triangle that do not meet
 * has an end of the segment or an edge of the triangle in it: two point
 * queries and three segment pairs, in place of GJK for capsules on
 * terrain. */
static double segment_triangle(const double s0[3], const double s1[3], const q_poly *t, double pt[3], double ps[3])
{
    const double (*v)[3] = (const double(*)[3])t->bv;
    double d0 = dot3(t->tn, s0) - dot3(t->tn, v[0]), d1 = dot3(t->tn, s1) - dot3(t->tn, v[0]);
    if ((d0 <= 0 && d1 >= 0) || (d0 >= 0 && d1 <= 0)) {
        if (d0 != d1) {
            /* crosses the plane: inside the triangle? */
            double x[3], q[3];
            int region;
            lerp3(s0, s1, d0 / (d0 - d1), x);
            closest_on_triangle(x, v[0], v[1], v[2], q, &region);
            if (region == 0) {
                memcpy(pt, x, 3 * sizeof(double));
                memcpy(ps, x, 3 * sizeof(double));
                return 0;
            }
        }
    }
    double best = INFINITY;
    for (int e = 0; e < 2; e++) {
        const double *sp = e ? s1 : s0;
        double q[3], d[3];
        int region;
        closest_on_triangle(sp, v[0], v[1], v[2], q, &region);
        sub3(sp, q, d);
        if (dot3(d, d) < best) {
            best = dot3(d, d);
            memcpy(pt, q, sizeof q);
            memcpy(ps, sp, 3 * sizeof(double));
        }
    }
    for (int k = 0; k < 3; k++) {
        double a, b, x[3], y[3], d[3];
        segment_closest(v[k], v[(k + 1) % 3], s0, s1, &a, &b);
        lerp3(v[k], v[(k + 1) % 3], a, x);
        lerp3(s0, s1, b, y);
        sub3(y, x, d);
        if (dot3(d, d) < best) {
            best = dot3(d, d);
            memcpy(pt, x, sizeof x);
            memcpy(ps, y, sizeof y);
        }
    }
    return sqrt(best);
}

int q_core_poly(const q_poly *p, const q_convex *c, double margin, unsigned flags, q_manifold *m)
{
    double n[3], sep_best = -INFINITY;
    int face = -1;
    bool have_axis = false;
    m->count = 0;
    if (!p->s && c->n == 1 && (flags & Q_NP_ONE_SIDED) && !(flags & Q_NP_FACE_ONLY))
        return sphere_triangle(p, c, margin, m);
    if (!(flags & Q_NP_FACE_ONLY)) {
        q_convex pc;
        pc.s = p->s;
        pc.x = p->x;
        pc.n = 3;
        pc.radius = 0;
        if (!p->s)
            memcpy(pc.pts, p->bv, 3 * sizeof pc.pts[0]);
        double pp[3], pcore[3];
        double dist = !p->s && c->n == 2 ? segment_triangle(c->pts[0], c->pts[1], p, pp, pcore)
                                         : q_gjk_core(&pc, c, pp, pcore);
        if (dist > 0) {
            if (dist - c->radius > margin)
                return 0;
            double d[3];
            sub3(pcore, pp, d);
            for (int k = 0; k < 3; k++)
                n[k] = d[k] / dist;
            if ((flags & Q_NP_ONE_SIDED) && dot3(n, p->tn) < 0) {
                /* behind a one-sided triangle: push along its face only
                 * when the core's closest point lies under the face */
                for (int i = 0; i < 3; i++) {
                    double e[3], sn[3], r[3];
                    sub3(p->bv[(i + 1) % 3], p->bv[i], e);
                    cross3(e, p->tn, sn);
                    sub3(pcore, p->bv[i], r);
                    if (dot3(sn, r) > 0)
                        return 0;
                }
                goto faces;
            }
            sep_best = dist - c->radius;
            have_axis = true;
            /* a face almost aligned with n? then use it (two points for capsules) */
            for (uint32_t f = 0; f < p->nf; f++) {
                double fn[3], fd;
                poly_face_plane(p, f, fn, &fd);
                if (dot3(fn, n) > 0.9999) {
                    face = (int)f;
                    break;
                }
            }
            if (face < 0 || c->n < 2) {
                if (face >= 0 && c->n < 2) {
                    /* sphere on a face: normal is the face's */
                    double fn[3], fd;
                    poly_face_plane(p, (uint32_t)face, fn, &fd);
                    memcpy(n, fn, sizeof fn);
                }
                memcpy(m->normal, n, sizeof n);
                q_contact_point *cp = &m->points[0];
                for (int k = 0; k < 3; k++)
                    cp->position[k] = pp[k] + n[k] * sep_best / 2;
                cp->separation = sep_best;
                cp->id = face >= 0 ? (uint32_t)face << 8 : 0xff00u;
                m->count = 1;
                return 1;
            }
            goto face_points;
        }
    }
faces:
    /* core inside (or forced): SAT over P's faces, edges x segment */
    for (uint32_t f = 0; f < p->nf; f++) {
        if ((flags & Q_NP_FACE_ONLY) && f > 0)
            break;
        double fn[3], fd;
        poly_face_plane(p, f, fn, &fd);
        double lo = INFINITY;
        for (int i = 0; i < c->n; i++)
            lo = fmin(lo, dot3(fn, c->pts[i]));
        double sep = lo - fd - c->radius;
        if (!have_axis || sep > sep_best) {
            sep_best = sep;
            memcpy(n, fn, sizeof fn);
            face = (int)f;
            have_axis = true;
        }
    }
    int edge = -1;
    if (c->n > 1 && !(flags & Q_NP_FACE_ONLY)) {
        double sd[3], pc[3];
        sub3(c->pts[1], c->pts[0], sd);
        poly_center(p, pc);
        for (uint32_t e = 0; e < p->ne; e++) {
            double ea[3], eb[3], ed[3], L[3];
            poly_edge(p, e, ea, eb);
            sub3(eb, ea, ed);
            cross3(ed, sd, L);
            double l = norm3(L);
            if (l < 1e-9 * norm3(ed) * norm3(sd))
                continue;
            for (int k = 0; k < 3; k++)
                L[k] /= l;
            /* both orientations */
            double c0 = dot3(L, c->pts[0]), c1 = dot3(L, c->pts[1]);
            double s1 = fmin(c0, c1) - poly_max(p, L) - c->radius, s2 = poly_min(p, L) - fmax(c0, c1) - c->radius;
            double tl = (flags & Q_NP_ONE_SIDED) ? dot3(L, p->tn) : 0;
            if (tl < 0)
                s1 = -INFINITY;
            if (tl > 0)
                s2 = -INFINITY;
            double sep = s1;
            if (s2 > s1) {
                sep = s2;
                for (int k = 0; k < 3; k++)
                    L[k] = -L[k];
            }
            (void)pc;
            if (sep > sep_best + 1e-9) {
                sep_best = sep;
                memcpy(n, L, sizeof L);
                edge = (int)e;
            }
        }
    }
    if (sep_best > margin)
        return 0;
    if (edge >= 0) {
        double ea[3], eb[3], s, t, x[3], y[3];
        poly_edge(p, (uint32_t)edge, ea, eb);
        segment_closest(ea, eb, c->pts[0], c->pts[1], &s, &t);
        lerp3(ea, eb, s, x);
        lerp3(c->pts[0], c->pts[1], t, y);
        memcpy(m->normal, n, sizeof n);
        q_contact_point *cp = &m->points[0];
        for (int k = 0; k < 3; k++)
            cp->position[k] = x[k] + n[k] * sep_best / 2;
        cp->separation = sep_best;
        cp->id = 0x10000u | (uint32_t)edge;
        m->count = 1;
        return 1;
    }
face_points:;
    double fn[3], fd, poly[Q_CLIP_MAX][3];
    poly_face_plane(p, (uint32_t)face, fn, &fd);
    memcpy(m->normal, fn, sizeof fn);
    int np = poly_face_polygon(p, (uint32_t)face, poly, Q_CLIP_MAX);
    double a[3], b[3];
    memcpy(a, c->pts[0], sizeof a);
    memcpy(b, c->pts[c->n > 1 ? 1 : 0], sizeof b);
    bool inside = clip_segment_to_face((const double(*)[3])poly, np, fn, a, b);
    if (!inside) {
        /* the core does not project on the face: use its deepest point */
        if (flags & Q_NP_CLIP_STRICT)
            return 0;
        memcpy(a, dot3(c->pts[0], fn) <= dot3(b, fn) ? c->pts[0] : b, sizeof a);
        memcpy(b, a, sizeof a);
    }
    int cnt = (c->n > 1 && (a[0] != b[0] || a[1] != b[1] || a[2] != b[2])) ? 2 : 1;
    for (int e = 0; e < cnt; e++) {
        const double *q = e ? b : a;
        double sep = dot3(fn, q) - fd - c->radius;
        if (sep > margin)
            continue;
        q_contact_point *cp = &m->points[m->count++];
        for (int k = 0; k < 3; k++)
            cp->position[k] = q[k] - fn[k] * (c->radius + sep / 2);
        cp->separation = sep;
        cp->id = (uint32_t)face << 8 | (uint32_t)e;
    }
    return m->count > 0;
}

/* ---- polytope vs polytope ---- */

static int clip_polygon(const double (*in)[3], const int *fin, int n, const double pn[3], double pd,
                        double (*out)[3], int *fout, int plane_id)
{
    int k = 0;
    for (int i = 0; i < n && k < Q_CLIP_MAX; i++) {
        const double *a = in[i], *b = in[(i + 1) % n];
        double da = dot3(pn, a) - pd, db = dot3(pn, b) - pd;
        if (da <= 0) {
            memcpy(out[k], a, 3 * sizeof(double));
            fout[k++] = fin[i];
        }
        if ((da < 0 && db > 0) || (da > 0 && db < 0)) {
            if (k >= Q_CLIP_MAX)
                break;
            lerp3(a, b, da / (da - db), out[k]);
            fout[k++] = 1024 + ((plane_id & 31) << 5) + (i & 31);
        }
    }
    return k;
}

/* Contacts with ref's face rf as reference and inc's most anti-parallel
 * face as incident; n is rf's outward normal; points are reported with the
 * given normal sign (flip: ref is B). */
static int face_contact(const q_poly *ref, uint32_t rf, const q_poly *inc, double margin, bool flip, double sat,
                        q_manifold *m)
{
    double n[3], d;
    poly_face_plane(ref, rf, n, &d);
    uint32_t inf = 0;
    double lo = INFINITY;
    if (inc->s && inc->s->kind == Q_COLLIDER_HULL) {
        /* in the hull's frame: one rotation instead of one per face */
        const double *pl = inc->s->hull->planes;
        double nl[3];
        quat_rotate_inv(inc->x.q, n, nl);
        for (uint32_t f = 0; f < inc->nf; f++)
            if (dot3(pl + 4 * f, nl) < lo) {
                lo = dot3(pl + 4 * f, nl);
                inf = f;
            }
    } else {
        for (uint32_t f = 0; f < inc->nf; f++) {
            double fn[3], fd;
            poly_face_plane(inc, f, fn, &fd);
            if (dot3(fn, n) < lo) {
                lo = dot3(fn, n);
                inf = f;
            }
        }
    }
    double ra[Q_CLIP_MAX][3], bufa[Q_CLIP_MAX][3], bufb[Q_CLIP_MAX][3];
    int fa[Q_CLIP_MAX], fb[Q_CLIP_MAX];
    int nr = poly_face_polygon(ref, rf, ra, Q_CLIP_MAX);
    int ni = poly_face_polygon(inc, inf, bufa, Q_CLIP_MAX);
    for (int i = 0; i < ni; i++)
        fa[i] = i;
    double (*cur)[3] = bufa, (*nxt)[3] = bufb;
    int *fc = fa, *fx = fb;
    for (int i = 0; i < nr && ni > 0; i++) {
        double e[3], sn[3];
        sub3(ra[(i + 1) % nr], ra[i], e);
        cross3(e, n, sn);
        double l = norm3(sn);
        if (l == 0)
            continue;
        for (int k = 0; k < 3; k++)
            sn[k] /= l;
        ni = clip_polygon((const double(*)[3])cur, fc, ni, sn, dot3(sn, ra[i]), nxt, fx, i);
        double (*t)[3] = cur;
        cur = nxt;
        nxt = t;
        int *tf = fc;
        fc = fx;
        fx = tf;
    }
    q_contact_point pts[Q_CLIP_MAX];
    int np = 0;
    for (int i = 0; i < ni; i++) {
        double sep = dot3(n, cur[i]) - d;
        if (sep > margin)
            continue;
        double pos[3];
        for (int k = 0; k < 3; k++)
            pos[k] = cur[i][k] - n[k] * sep / 2;
        uint32_t id = (flip ? 0x80000000u : 0) | (rf & 0x3ffu) << 21 | (inf & 0x3ffu) << 11 | ((uint32_t)fc[i] & 0x7ffu);
        add_point(m, pos, sep, id, pts, &np, Q_CLIP_MAX);
    }
    /* deep overlaps: the incident face may miss the deepest point (or the
     * reference face altogether); add the incident shape's deepest point */
    double shallowest = INFINITY;
    for (int i = 0; i < np; i++)
        shallowest = fmin(shallowest, pts[i].separation);
    if (sat <= margin && (np == 0 || shallowest > sat + 1e-9 + 1e-6 * fabs(sat))) {
        double neg[3] = {-n[0], -n[1], -n[2]}, sp[3], pos[3];
        poly_support(inc, neg, sp);
        double sep = dot3(n, sp) - d;
        for (int k = 0; k < 3; k++)
            pos[k] = sp[k] - n[k] * sep / 2;
        if (np == Q_CLIP_MAX)
            np--;
        add_point(m, pos, sep, (flip ? 0x80000000u : 0) | (rf & 0x3ffu) << 21 | 0x7ffu, pts, &np, Q_CLIP_MAX);
    }
    if (np == 0)
        return 0;
    double nn[3] = {flip ? -n[0] : n[0], flip ? -n[1] : n[1], flip ? -n[2] : n[2]};
    memcpy(m->normal, nn, sizeof nn);
    q_reduce_points(n, pts, np, m);
    return 1;
}

/* Supporting edge of p parallel to dir, farthest along L. */
static void support_edge(const q_poly *p, const double dir[3], const double L[3], double a[3], double b[3])
{
    double best = -INFINITY;
    double ld = norm3(dir);
    for (uint32_t e = 0; e < p->ne; e++) {
        double ea[3], eb[3], ed[3], x[3];
        poly_edge(p, e, ea, eb);
        sub3(eb, ea, ed);
        cross3(ed, dir, x);
        if (norm3(x) > 1e-6 * norm3(ed) * ld)
            continue;
        double v = dot3(ea, L) + dot3(eb, L);
        if (v > best) {
            best = v;
            memcpy(a, ea, 3 * sizeof(double));
            memcpy(b, eb, 3 * sizeof(double));
        }
    }
}

static int edge_contact(const q_poly *a, const q_poly *b, const double L[3], const double da[3], const double db[3],
                        double sep, uint32_t ia, uint32_t ib, q_manifold *m);

/* Box against box: the 15 axes in closed form (Gottschalk's OBB test, in
 * A's frame), then the shared face clipping or edge contact. */
static int box_box(const q_poly *a, const q_poly *b, double margin, q_manifold *m)
{
    const double *ha = a->s->half, *hb = b->s->half;
    double R[3][3], AR[3][3], d[3], t[3];
    sub3(b->c, a->c, d);
    for (int i = 0; i < 3; i++) {
        t[i] = dot3(d, a->baxis[i]);
        for (int j = 0; j < 3; j++) {
            R[i][j] = dot3(a->baxis[i], b->baxis[j]);
            AR[i][j] = fabs(R[i][j]) + 1e-12;
        }
    }
    double sa = -INFINITY, sb = -INFINITY, se = -INFINITY;
    uint32_t fa = 0, fb = 0;
    for (int i = 0; i < 3; i++) {
        double sep = fabs(t[i]) - (ha[i] + hb[0] * AR[i][0] + hb[1] * AR[i][1] + hb[2] * AR[i][2]);
        if (sep > margin)
            return 0;
        if (sep > sa) {
            sa = sep;
            fa = (uint32_t)(2 * i + (t[i] > 0));
        }
    }
    for (int j = 0; j < 3; j++) {
        double tb = t[0] * R[0][j] + t[1] * R[1][j] + t[2] * R[2][j];
        double sep = fabs(tb) - (hb[j] + ha[0] * AR[0][j] + ha[1] * AR[1][j] + ha[2] * AR[2][j]);
        if (sep > margin)
            return 0;
        if (sep > sb) {
            sb = sep;
            fb = (uint32_t)(2 * j + (tb > 0 ? 0 : 1));
        }
    }
    int ei = -1, ej = -1;
    for (int i = 0; i < 3; i++) {
        int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
        for (int j = 0; j < 3; j++) {
            int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            double len = sqrt(fmax(0, 1 - R[i][j] * R[i][j]));
            if (len < 1e-6)
                continue;
            double tl = t[i2] * R[i1][j] - t[i1] * R[i2][j];
            double ra = ha[i1] * AR[i2][j] + ha[i2] * AR[i1][j], rb = hb[j1] * AR[i][j2] + hb[j2] * AR[i][j1];
            double sep = (fabs(tl) - ra - rb) / len;
            if (sep > margin)
                return 0;
            if (sep > se) {
                se = sep;
                ei = i;
                ej = j;
            }
        }
    }
    double tol = 1e-3 * fmax(1e-3, fmin(norm3(d), 1.0)), face_sep = fmax(sa, sb);
    if (ei >= 0 && se > face_sep + tol) {
        double L[3];
        cross3(a->baxis[ei], b->baxis[ej], L);
        double l = norm3(L);
        for (int k = 0; k < 3; k++)
            L[k] /= l;
        if (dot3(L, d) < 0)
            for (int k = 0; k < 3; k++)
                L[k] = -L[k];
        return edge_contact(a, b, L, a->baxis[ei], b->baxis[ej], se, (uint32_t)ei * 4, (uint32_t)ej * 4, m);
    }
    if (sb > sa + tol)
        return face_contact(b, fb, a, margin, true, sb, m);
    return face_contact(a, fa, b, margin, false, sa, m);
}

static int edge_contact(const q_poly *a, const q_poly *b, const double L[3], const double da[3], const double db[3],
                        double sep, uint32_t ia, uint32_t ib, q_manifold *m)
{
    double a0[3], a1[3], b0[3], b1[3], nl[3] = {-L[0], -L[1], -L[2]}, s, t, x[3], y[3];
    support_edge(a, da, L, a0, a1);
    support_edge(b, db, nl, b0, b1);
    segment_closest(a0, a1, b0, b1, &s, &t);
    lerp3(a0, a1, s, x);
    lerp3(b0, b1, t, y);
    memcpy(m->normal, L, 3 * sizeof(double));
    q_contact_point *cp = &m->points[0];
    for (int k = 0; k < 3; k++)
        cp->position[k] = (x[k] + y[k]) / 2;
    cp->separation = sep;
    cp->id = 0x40000000u | (ia & 0x7fffu) << 15 | (ib & 0x7fffu);
    m->count = 1;
    return 1;
}

/* The deepest axis of each kind found by the separating axis test: faces
 * of A (sa, fa) and of B (sb, fb), and the best edge pair (se, axis L from
 * A to B, edge vectors da, db, edge indices ia, ib). */
typedef struct sat_axes {
    double sa, sb, se;
    uint32_t fa, fb, ia, ib;
    double L[3], da[3], db[3];
} sat_axes;

/* Contacts from the axes: faces preferred, an edge axis must separate
 * clearly more. cd: from A's centre to B's. */
static int sat_contact(const q_poly *a, const q_poly *b, double margin, const double cd[3], const sat_axes *x,
                       q_manifold *m)
{
    double tol = 1e-3 * fmax(1e-3, fmin(norm3(cd), 1.0)), face_sep = fmax(x->sa, x->sb);
    if (x->se > face_sep + tol)
        return edge_contact(a, b, x->L, x->da, x->db, x->se, x->ia, x->ib, m);
    if (x->sb > x->sa + tol)
        return face_contact(b, x->fb, a, margin, true, x->sb, m);
    return face_contact(a, x->fa, b, margin, false, x->sa, m);
}

/* A triangle (a) against a box (b): the same axes, in the same order and
 * with the same choices as the general loop of q_poly_poly, computed in the
 * box's frame, where its faces are the coordinate axes and its projection
 * radius is sum(h_k |L_k|). About a fifth of the general loop's work; rigid
 * bodies on terrain spend most of their narrowphase here. */
static int triangle_box(const q_poly *a, const q_poly *b, double margin, unsigned flags, q_manifold *m)
{
    const double *h = b->s->half;
    double p[3][3], n[3], cd[3];
    for (int i = 0; i < 3; i++) {
        double r[3];
        sub3(a->bv[i], b->c, r);
        for (int k = 0; k < 3; k++)
            p[i][k] = dot3(r, b->baxis[k]);
    }
    for (int k = 0; k < 3; k++)
        n[k] = dot3(a->tn, b->baxis[k]);
    sub3(b->c, a->c, cd);
    sat_axes x = {-INFINITY, -INFINITY, -INFINITY, 0, 0, 0, 0, {0}, {0}, {0}};
    /* A's face: the box's lowest point against the triangle's plane */
    x.sa = -dot3(n, p[0]) - (h[0] * fabs(n[0]) + h[1] * fabs(n[1]) + h[2] * fabs(n[2]));
    if (x.sa > margin)
        return 0;
    /* B's faces 2k (-axis k) and 2k + 1 (+axis k) */
    for (uint32_t f = 0; f < 6; f++) {
        int k = (int)f / 2;
        double sg = (f & 1) ? 1 : -1;
        if ((flags & Q_NP_ONE_SIDED) && sg * n[k] > 0)
            continue;
        double lo = fmin(sg * p[0][k], fmin(sg * p[1][k], sg * p[2][k]));
        double sep = lo - h[k];
        if (sep > x.sb) {
            x.sb = sep;
            x.fb = f;
        }
        if (sep > margin)
            return 0;
    }
    /* edges: triangle edge i against box edge direction k (edge 4k) */
    for (uint32_t i = 0; i < 3; i++) {
        double e[3];
        sub3(p[(i + 1) % 3], p[i], e);
        double el = norm3(e);
        for (int k = 0; k < 3; k++) {
            /* e x axis_k, then unit length */
            double L[3] = {k == 0 ? 0 : k == 1 ? -e[2] : e[1], k == 0 ? e[2] : k == 1 ? 0 : -e[0],
                           k == 0 ? -e[1] : k == 1 ? e[0] : 0};
            double l = norm3(L);
            if (l < 1e-6 * el)
                continue;
            for (int c = 0; c < 3; c++)
                L[c] /= l;
            double rb = h[0] * fabs(L[0]) + h[1] * fabs(L[1]) + h[2] * fabs(L[2]);
            double d0 = dot3(p[0], L), d1 = dot3(p[1], L), d2 = dot3(p[2], L);
            double tmin = fmin(d0, fmin(d1, d2)), tmax = fmax(d0, fmax(d1, d2));
            double s1 = -rb - tmax, s2 = tmin - rb;
            if (flags & Q_NP_ONE_SIDED) {
                double tl = dot3(L, n);
                if (tl < 0)
                    s1 = -INFINITY;
                if (tl > 0)
                    s2 = -INFINITY;
                if (s1 == -INFINITY && s2 == -INFINITY)
                    continue;
            }
            double sep = s1, sign = 1;
            /* the centre line in this frame runs from the centroid to 0 */
            double cl = -(d0 + d1 + d2) / 3;
            if (s2 > s1 || (s2 == s1 && cl < 0)) {
                sep = s2;
                sign = -1;
            }
            if (sep > margin)
                return 0;
            if (sep > x.se) {
                x.se = sep;
                for (int c = 0; c < 3; c++)
                    x.L[c] = sign * (L[0] * b->baxis[0][c] + L[1] * b->baxis[1][c] + L[2] * b->baxis[2][c]);
                sub3(a->bv[(i + 1) % 3], a->bv[i], x.da);
                sub3(b->bv[box_edges[4 * k][1]], b->bv[box_edges[4 * k][0]], x.db);
                x.ia = i;
                x.ib = (uint32_t)(4 * k);
            }
        }
    }
    return sat_contact(a, b, margin, cd, &x, m);
}

/* A triangle (a) against a hull (b), in the hull's frame (no rotation per
 * query). Edge pairs are pruned on the Gauss map as for two hulls: the
 * triangle, a flat polygon, maps to its normal n and to -n, and edge i to
 * the half great circle from n to -n through u, the edge's outward normal
 * in the triangle's plane. A hull edge (faces f1, f2) yields a face of the
 * Minkowski difference when the arc between -f1 and -f2 crosses that half
 * circle; the crossing point is the face's normal, and the separation along
 * it needs no support query. The general loop tries every edge pair with two
 * support queries each (about 20x the work for a 30-vertex hull).
 *
 * The deepest separation over all axes lies on a face of the Minkowski
 * difference, so where that face is one the general loop also tries (not
 * the triangle's back, and with Q_NP_ONE_SIDED no axis pointing below it),
 * both give the same answer. Otherwise (a hull behind the triangle's plane)
 * this returns -1 and the general loop decides. */
static int triangle_hull(const q_poly *a, const q_poly *b, double margin, unsigned flags, q_manifold *m)
{
    const q_hull_data *h = b->s->hull;
    const double *q = b->x.q;
    const bool one = (flags & Q_NP_ONE_SIDED) != 0;
    double p[3][3], n[3], c[3], cd[3];
    for (int i = 0; i < 3; i++) {
        double r[3];
        sub3(a->bv[i], b->x.p, r);
        quat_rotate_inv(q, r, p[i]);
    }
    quat_rotate_inv(q, a->tn, n);
    for (int k = 0; k < 3; k++)
        c[k] = (p[0][k] + p[1][k] + p[2][k]) / 3;
    sub3(b->c, a->c, cd);
    sat_axes x = {-INFINITY, -INFINITY, -INFINITY, 0, 0, 0, 0, {0}, {0}, {0}};
    /* the deepest separation over every face of the Minkowski difference,
     * and whether the general loop would try that axis */
    double deepest = -INFINITY;
    bool tried = true;
#define NOTE_AXIS(sep, ok)                                                                                            \
    do {                                                                                                              \
        if ((sep) > deepest) {                                                                                        \
            deepest = (sep);                                                                                          \
            tried = (ok);                                                                                             \
        }                                                                                                             \
        if ((ok) && (sep) > margin)                                                                                   \
            return 0;                                                                                                 \
    } while (0)
    /* the triangle's face and its back */
    double lo = INFINITY, hi = -INFINITY;
    for (uint32_t i = 0; i < h->vertex_count; i++) {
        double d = dot3(h->vertices + 3 * i, n);
        lo = fmin(lo, d);
        hi = fmax(hi, d);
    }
    double plane = dot3(n, p[0]);
    x.sa = lo - plane;
    NOTE_AXIS(x.sa, true);
    NOTE_AXIS(plane - hi, false);
    for (uint32_t f = 0; f < h->face_count; f++) {
        const double *pl = h->planes + 4 * f;
        bool ok = !(one && dot3(pl, n) > 0);
        double sep = fmin(dot3(pl, p[0]), fmin(dot3(pl, p[1]), dot3(pl, p[2]))) - pl[3];
        if (ok && sep > x.sb) {
            x.sb = sep;
            x.fb = f;
        }
        NOTE_AXIS(sep, ok);
    }
    double bestL[3] = {0, 0, 0}, best_ea[3] = {0, 0, 0}, best_eb[3] = {0, 0, 0};
    for (uint32_t i = 0; i < 3; i++) {
        const double *a0 = p[i], *a1 = p[(i + 1) % 3];
        double e[3], u[3], mid[3];
        sub3(a1, a0, e);
        cross3(e, n, u); /* in the plane, perpendicular to the edge */
        for (int k = 0; k < 3; k++)
            mid[k] = (a0[k] + a1[k]) / 2 - c[k];
        if (dot3(u, mid) < 0)
            for (int k = 0; k < 3; k++)
                u[k] = -u[k];
        double el = norm3(e);
        for (uint32_t j = 0; j < h->edge_count; j++) {
            const double *f1 = h->planes + 4 * h->edge_faces[2 * j], *f2 = h->planes + 4 * h->edge_faces[2 * j + 1];
            /* the arc from -f1 to -f2 against the plane of the half circle (normal e) */
            double s1 = -dot3(f1, e), s2 = -dot3(f2, e);
            if (!(s1 * s2 < 0))
                continue;
            double t = s1 / (s1 - s2), g[3];
            for (int k = 0; k < 3; k++)
                g[k] = -(f1[k] + t * (f2[k] - f1[k]));
            if (!(dot3(g, u) > 0))
                continue;
            const double *b0 = h->vertices + 3 * h->edges[2 * j], *b1 = h->vertices + 3 * h->edges[2 * j + 1];
            double eb[3], L[3];
            sub3(b1, b0, eb);
            cross3(e, eb, L);
            double l = norm3(L);
            if (l < 1e-6 * el * norm3(eb))
                continue;
            double sg = dot3(L, g) < 0 ? -1 : 1;
            for (int k = 0; k < 3; k++)
                L[k] *= sg / l;
            double diff[3];
            sub3(b0, a0, diff);
            double sep = dot3(L, diff);
            bool ok = !(one && dot3(L, n) < 0);
            if (ok && sep > x.se) {
                x.se = sep;
                memcpy(bestL, L, sizeof L);
                memcpy(best_ea, e, sizeof e);
                memcpy(best_eb, eb, sizeof eb);
                x.ia = i;
                x.ib = j;
            }
            NOTE_AXIS(sep, ok);
        }
    }
#undef NOTE_AXIS
    if (!tried)
        return -1;
    if (x.se > -INFINITY) {
        quat_rotate(q, bestL, x.L);
        quat_rotate(q, best_ea, x.da);
        quat_rotate(q, best_eb, x.db);
    }
    return sat_contact(a, b, margin, cd, &x, m);
}

/* World face planes (nx, ny, nz, d) of a hull poly, into buf when it has
 * room, else into fresh memory (*heap set). NULL when out of memory. */
static double (*hull_planes(const q_poly *p, double (*buf)[4], uint32_t cap, bool *heap))[4]
{
    *heap = p->nf > cap;
    double (*pl)[4] = *heap ? malloc(p->nf * sizeof *pl) : buf;
    if (pl)
        for (uint32_t f = 0; f < p->nf; f++)
            poly_face_plane(p, f, pl[f], &pl[f][3]);
    return pl;
}

#define Q_HULL_PLANES_STACK 128

/* The face of p (world planes pl) along which `other` lies farthest out:
 * its separation and index. False as soon as one separates by more than
 * margin. */
static bool deepest_face(const q_poly *p, const double (*pl)[4], const q_poly *other, double margin, double *sep_out,
                         uint32_t *face_out)
{
    for (uint32_t f = 0; f < p->nf; f++) {
        double sep = poly_min(other, pl[f]) - pl[f][3];
        if (sep > *sep_out) {
            *sep_out = sep;
            *face_out = f;
        }
        if (sep > margin)
            return false;
    }
    return true;
}

/* Two hulls: SAT over both face sets, then edge pairs pruned on the Gauss
 * map (Gregorius, GDC 2013): only pairs whose face-normal arcs cross build
 * a face of the Minkowski difference, and their separation needs no support
 * query. World planes are computed once per call, not once per pair.
 * Returns 0 (no contact) also when a very large hull's planes cannot be
 * allocated. */
static int hull_hull(const q_poly *a, const q_poly *b, double margin, q_manifold *m)
{
    double bufa[Q_HULL_PLANES_STACK][4], bufb[Q_HULL_PLANES_STACK][4];
    bool heap_a, heap_b;
    double (*pa)[4] = hull_planes(a, bufa, Q_HULL_PLANES_STACK, &heap_a);
    double (*pb)[4] = hull_planes(b, bufb, Q_HULL_PLANES_STACK, &heap_b);
    int result = 0;
    if (!pa || !pb)
        goto done;
    double cd[3];
    sub3(b->c, a->c, cd);
    sat_axes x = {-INFINITY, -INFINITY, -INFINITY, 0, 0, 0, 0, {0}, {0}, {0}};
    if (!deepest_face(a, pa, b, margin, &x.sa, &x.fa) || !deepest_face(b, pb, a, margin, &x.sb, &x.fb))
        goto done;
    const q_hull_data *ha = a->s->hull, *hb = b->s->hull;
    for (uint32_t i = 0; i < a->ne; i++) {
        const double *na1 = pa[ha->edge_faces[2 * i]], *na2 = pa[ha->edge_faces[2 * i + 1]];
        double bxa[3], a0[3], a1[3], da[3] = {0, 0, 0};
        cross3(na2, na1, bxa);
        bool have_a = false;
        for (uint32_t j = 0; j < b->ne; j++) {
            /* B's normals enter negated (the Minkowski difference A - B) */
            const double *nb1 = pb[hb->edge_faces[2 * j]], *nb2 = pb[hb->edge_faces[2 * j + 1]];
            double cba = -dot3(nb1, bxa), dba = -dot3(nb2, bxa);
            if (!(cba * dba < 0))
                continue;
            double dxc[3];
            cross3(nb2, nb1, dxc); /* (-nb2) x (-nb1) */
            double adc = dot3(na1, dxc), bdc = dot3(na2, dxc);
            if (!(adc * bdc < 0 && cba * bdc > 0))
                continue;
            if (!have_a) {
                poly_edge(a, i, a0, a1);
                sub3(a1, a0, da);
                have_a = true;
            }
            double b0[3], b1[3], db[3], L[3];
            poly_edge(b, j, b0, b1);
            sub3(b1, b0, db);
            cross3(da, db, L);
            double l = norm3(L);
            if (l < 1e-6 * norm3(da) * norm3(db))
                continue;
            double rel[3], diff[3];
            sub3(a0, a->c, rel);
            double sg = dot3(L, rel) < 0 ? -1 : 1;
            for (int k = 0; k < 3; k++)
                L[k] *= sg / l;
            sub3(b0, a0, diff);
            double sep = dot3(L, diff);
            if (sep > margin)
                goto done;
            if (sep > x.se) {
                x.se = sep;
                memcpy(x.L, L, sizeof L);
                memcpy(x.da, da, sizeof da);
                memcpy(x.db, db, sizeof db);
                x.ia = i;
                x.ib = j;
            }
        }
    }
    result = sat_contact(a, b, margin, cd, &x, m);
done:
    if (heap_a)
        free(pa);
    if (heap_b)
        free(pb);
    return result;
}

int q_poly_poly(const q_poly *a, const q_poly *b, double margin, unsigned flags, q_manifold *m)
{
    m->count = 0;
    if (!flags && a->s && b->s && a->s->kind == Q_COLLIDER_BOX && b->s->kind == Q_COLLIDER_BOX)
        return box_box(a, b, margin, m);
    if (!a->s && b->s && b->s->kind == Q_COLLIDER_BOX && !(flags & Q_NP_FACE_ONLY))
        return triangle_box(a, b, margin, flags, m);
    if (!flags && a->s && b->s && a->s->kind == Q_COLLIDER_HULL && b->s->kind == Q_COLLIDER_HULL)
        return hull_hull(a, b, margin, m);
    if (!a->s && b->s && b->s->kind == Q_COLLIDER_HULL && !(flags & Q_NP_FACE_ONLY)) {
        int r = triangle_hull(a, b, margin, flags, m);
        if (r >= 0)
            return r;
        m->count = 0;
    }
    double ca[3], cb[3], cd[3];
    poly_center(a, ca);
    poly_center(b, cb);
    sub3(cb, ca, cd);
    /* faces of A */
    double sa = -INFINITY, sb = -INFINITY, se = -INFINITY;
    uint32_t fa = 0, fb = 0;
    for (uint32_t f = 0; f < a->nf; f++) {
        double n[3], d;
        poly_face_plane(a, f, n, &d);
        double sep = poly_min(b, n) - d;
        if (sep > sa) {
            sa = sep;
            fa = f;
        }
        if (sep > margin)
            return 0;
    }
    if (flags & Q_NP_FACE_ONLY)
        return face_contact(a, 0, b, margin, false, sa, m);
    for (uint32_t f = 0; f < b->nf; f++) {
        double n[3], d;
        poly_face_plane(b, f, n, &d);
        if ((flags & Q_NP_ONE_SIDED) && dot3(n, a->tn) > 0)
            continue; /* axis from A to B is -n: must not point below A's face */
        double sep = poly_min(a, n) - d;
        if (sep > sb) {
            sb = sep;
            fb = f;
        }
        if (sep > margin)
            return 0;
    }
    double ebest[3] = {0, 0, 0}, eda[3] = {0, 0, 0}, edb[3] = {0, 0, 0};
    uint32_t eia = 0, eib = 0;
    for (uint32_t i = 0; i < a->ne; i++) {
        /* boxes: only the 3 distinct directions */
        if (a->s && a->s->kind == Q_COLLIDER_BOX && (i % 4) != 0)
            continue;
        double a0[3], a1[3], da[3];
        poly_edge(a, i, a0, a1);
        sub3(a1, a0, da);
        for (uint32_t j = 0; j < b->ne; j++) {
            if (b->s && b->s->kind == Q_COLLIDER_BOX && (j % 4) != 0)
                continue;
            double b0[3], b1[3], db[3], L[3];
            poly_edge(b, j, b0, b1);
            sub3(b1, b0, db);
            cross3(da, db, L);
            double l = norm3(L);
            if (l < 1e-6 * norm3(da) * norm3(db))
                continue;
            for (int k = 0; k < 3; k++)
                L[k] /= l;
            /* both orientations: the separation along L or along -L */
            double s1 = poly_min(b, L) - poly_max(a, L), s2 = poly_min(a, L) - poly_max(b, L);
            bool one = (flags & Q_NP_ONE_SIDED) != 0;
            double tl = one ? dot3(L, a->tn) : 0;
            if (one && tl < 0)
                s1 = -INFINITY;
            if (one && tl > 0)
                s2 = -INFINITY;
            if (s1 == -INFINITY && s2 == -INFINITY)
                continue;
            double sep = s1;
            if (s2 > s1 || (s2 == s1 && dot3(L, cd) < 0)) {
                sep = s2;
                for (int k = 0; k < 3; k++)
                    L[k] = -L[k];
            }
            if (sep > margin)
                return 0;
            if (sep > se) {
                se = sep;
                memcpy(ebest, L, sizeof L);
                memcpy(eda, da, sizeof da);
                memcpy(edb, db, sizeof db);
                eia = i;
                eib = j;
            }
        }
    }
    sat_axes best = {sa, sb, se, fa, fb, eia, eib, {0}, {0}, {0}};
    memcpy(best.L, ebest, sizeof ebest);
    memcpy(best.da, eda, sizeof eda);
    memcpy(best.db, edb, sizeof edb);
    return sat_contact(a, b, margin, cd, &best, m);
}

/* ---- convex pair dispatch ---- */

static bool is_core(const q_collider *s) { return s->kind == Q_COLLIDER_SPHERE || s->kind == Q_COLLIDER_CAPSULE; }

static void flip_manifold(q_manifold *m)
{
    for (int k = 0; k < 3; k++)
        m->normal[k] = -m->normal[k];
}

static int convex_pair(const q_collider *a, const q_xform *ta, const q_collider *b, const q_xform *tb, double margin,
                       q_manifold *m)
{
    m->count = 0;
    if (is_core(a) && is_core(b)) {
        q_convex ca, cb;
        q_convex_from_collider(&ca, a, ta);
        q_convex_from_collider(&cb, b, tb);
        return core_core(&ca, &cb, margin, m);
    }
    if (is_core(a) || is_core(b)) {
        bool swap = is_core(a);
        const q_collider *ps = swap ? b : a, *cs = swap ? a : b;
        q_poly p;
        q_convex c;
        q_poly_from_collider(&p, ps, swap ? tb : ta);
        q_convex_from_collider(&c, cs, swap ? ta : tb);
        int r = q_core_poly(&p, &c, margin, 0, m);
        if (r && swap)
            flip_manifold(m);
        return r;
    }
    q_poly pa, pb;
    q_poly_from_collider(&pa, a, ta);
    q_poly_from_collider(&pb, b, tb);
    return q_poly_poly(&pa, &pb, margin, 0, m);
}

static bool bounds_overlap(const q_collider *a, const q_xform *ta, const q_collider *b, const q_xform *tb,
                           double margin)
{
    double amin[3], amax[3], bmin[3], bmax[3];
    q_collider_bounds(a, ta, amin, amax);
    q_collider_bounds(b, tb, bmin, bmax);
    for (int k = 0; k < 3; k++)
        if (amin[k] > bmax[k] + margin || bmin[k] > amax[k] + margin)
            return false;
    return true;
}

int q_collide_shapes(const q_collider *a, const q_xform *ta, const q_collider *b, const q_xform *tb, double margin,
                     q_manifold *out, int cap)
{
    if (cap <= 0)
        return 0;
    if (a->kind != Q_COLLIDER_COMPOUND && b->kind != Q_COLLIDER_COMPOUND) {
        out[0].key = 0;
        return convex_pair(a, ta, b, tb, margin, &out[0]) ? 1 : 0;
    }
    uint32_t na = a->kind == Q_COLLIDER_COMPOUND ? a->part_count : 1;
    uint32_t nb = b->kind == Q_COLLIDER_COMPOUND ? b->part_count : 1;
    int n = 0;
    for (uint32_t i = 0; i < na && n < cap; i++) {
        const q_collider *sa = a->kind == Q_COLLIDER_COMPOUND ? a->parts[i].shape : a;
        q_xform xa = a->kind == Q_COLLIDER_COMPOUND ? q_xform_mul(ta, &a->parts[i].local) : *ta;
        if (nb > 1 && !bounds_overlap(sa, &xa, b, tb, margin))
            continue;
        for (uint32_t j = 0; j < nb && n < cap; j++) {
            const q_collider *sb = b->kind == Q_COLLIDER_COMPOUND ? b->parts[j].shape : b;
            q_xform xb = b->kind == Q_COLLIDER_COMPOUND ? q_xform_mul(tb, &b->parts[j].local) : *tb;
            if ((na > 1 || nb > 1) && !bounds_overlap(sa, &xa, sb, &xb, margin))
                continue;
            if (convex_pair(sa, &xa, sb, &xb, margin, &out[n])) {
                out[n].key = i << 16 | j;
                n++;
            }
        }
    }
    return n;
}

/* ---- shape casts ---- */

/* Conservative advancement of convex A (moving by delta) against convex B:
 * distances from q_gjk_core minus the radii. */
bool q_cast_convex(const q_convex *a0, const double delta[3], const q_convex *b, double tol, q_cast_hit *hit)
{
    q_convex a = *a0;
    double r = a.radius + b->radius, t = 0, len = norm3(delta);
    for (int iter = 0; iter < 64; iter++) {
        double pa[3], pb[3];
        double d = q_gjk_core(&a, b, pa, pb);
        double gap = d - r;
        if (gap <= tol) {
            double n[3];
            if (d > 0)
                for (int k = 0; k < 3; k++)
                    n[k] = (pa[k] - pb[k]) / d;
            else if (len > 0)
                for (int k = 0; k < 3; k++)
                    n[k] = -delta[k] / len;
            else
                n[0] = 0, n[1] = 1, n[2] = 0;
            hit->fraction = t;
            for (int k = 0; k < 3; k++) {
                hit->normal[k] = n[k];
                hit->position[k] = pb[k] + n[k] * b->radius;
            }
            if (d == 0 && t == 0)
                memcpy(hit->position, a.s ? a.x.p : a.pts[0], 3 * sizeof(double));
            return true;
        }
        double n[3] = {(pb[0] - pa[0]) / d, (pb[1] - pa[1]) / d, (pb[2] - pa[2]) / d};
        double speed = dot3(delta, n);
        if (speed <= 1e-12 * len)
            return false;
        double dt = gap / speed;
        t += dt;
        if (t > 1)
            return false;
        for (int k = 0; k < 3; k++) {
            a.x.p[k] = a0->x.p[k] + delta[k] * t;
            for (int i = 0; i < a0->n; i++)
                a.pts[i][k] = a0->pts[i][k] + delta[k] * t;
        }
    }
    return false;
}

static bool cast_convex_colliders(const q_collider *s, const q_xform *from, const double delta[3],
                                  const q_collider *target, const q_xform *tx, q_cast_hit *hit)
{
    q_convex a, b;
    q_convex_from_collider(&a, s, from);
    q_convex_from_collider(&b, target, tx);
    double size = fmax(s->max[0] - s->min[0], fmax(s->max[1] - s->min[1], s->max[2] - s->min[2]));
    return q_cast_convex(&a, delta, &b, 1e-6 * fmax(size, 1e-3), hit);
}

bool q_shapecast_shape(const q_collider *s, const q_xform *from, const double delta[3], const q_collider *target,
                       const q_xform *target_xform, q_cast_hit *hit)
{
    bool any = false;
    q_cast_hit h;
    hit->fraction = INFINITY;
    hit->material = 0;
    uint32_t na = s->kind == Q_COLLIDER_COMPOUND ? s->part_count : 1;
    uint32_t nb = target->kind == Q_COLLIDER_COMPOUND ? target->part_count : 1;
    for (uint32_t i = 0; i < na; i++) {
        const q_collider *sa = s->kind == Q_COLLIDER_COMPOUND ? s->parts[i].shape : s;
        q_xform xa = s->kind == Q_COLLIDER_COMPOUND ? q_xform_mul(from, &s->parts[i].local) : *from;
        for (uint32_t j = 0; j < nb; j++) {
            const q_collider *sb = target->kind == Q_COLLIDER_COMPOUND ? target->parts[j].shape : target;
            q_xform xb =
                target->kind == Q_COLLIDER_COMPOUND ? q_xform_mul(target_xform, &target->parts[j].local) : *target_xform;
            if (cast_convex_colliders(sa, &xa, delta, sb, &xb, &h) && h.fraction < hit->fraction) {
                h.material = 0;
                *hit = h;
                any = true;
            }
        }
    }
    return any;
}
