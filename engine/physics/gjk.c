/* GJK distance and EPA penetration between convex sets (collide_internal.h),
 * and q_gjk_distance (collide.h). No allocation: simplices and the EPA
 * polytope live on the stack.
 *
 * GJK: the closest point of the simplex to the origin is found by trying
 * every face of the simplex (at most 15 subsets): the closest point of a
 * subset's affine hull that has non-negative barycentric coordinates and the
 * smallest norm is the simplex's closest point. Plain and robust at this
 * size. EPA: expanding polytope from GJK's final tetrahedron (grown to one
 * when GJK ends on a lower simplex), up to 64 vertices. */
#include "physics/collide_internal.h"

#include <math.h>
#include <string.h>

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

void q_convex_from_collider(q_convex *c, const q_collider *s, const q_xform *x)
{
    c->x = *x;
    c->radius = 0;
    if (s->kind == Q_COLLIDER_SPHERE || s->kind == Q_COLLIDER_CAPSULE) {
        c->s = NULL;
        c->radius = s->radius;
        if (s->kind == Q_COLLIDER_SPHERE || s->half_height == 0) {
            c->n = 1;
            memcpy(c->pts[0], x->p, sizeof c->pts[0]);
        } else {
            double up[3] = {0, s->half_height, 0}, a[3], b[3] = {0, -s->half_height, 0};
            q_xform_point(x, up, a);
            q_xform_point(x, b, c->pts[1]);
            memcpy(c->pts[0], a, sizeof a);
            c->n = 2;
        }
    } else {
        c->s = s;
        c->n = 0;
    }
}

void q_convex_support(const q_convex *c, const double d[3], double out[3])
{
    if (c->s) {
        q_collider_support(c->s, &c->x, d, out);
        return;
    }
    int best = 0;
    double bd = dot3(c->pts[0], d);
    for (int i = 1; i < c->n; i++) {
        double v = dot3(c->pts[i], d);
        if (v > bd) {
            bd = v;
            best = i;
        }
    }
    memcpy(out, c->pts[best], 3 * sizeof(double));
}

typedef struct simplex {
    double w[4][3], a[4][3], b[4][3];
    int n;
} simplex;

/* Closest point to the origin of the affine hull of the points in mask, as
 * barycentric lambda; false if degenerate. */
static bool affine_closest(const simplex *s, int mask, double lam[4])
{
    int idx[4] = {0, 0, 0, 0}, k = 0;
    for (int i = 0; i < s->n; i++)
        if (mask & (1 << i))
            idx[k++] = i;
    for (int i = 0; i < 4; i++)
        lam[i] = 0;
    if (k == 1) {
        lam[idx[0]] = 1;
        return true;
    }
    /* unknowns l1..l(k-1); l0 = 1 - sum. (p_i - p_0) . (p_0 + sum l_j (p_j - p_0)) = 0 */
    double e[3][3], M[3][3], r[3];
    const double *p0 = s->w[idx[0]];
    for (int i = 1; i < k; i++)
        sub3(s->w[idx[i]], p0, e[i - 1]);
    int m = k - 1;
    for (int i = 0; i < m; i++) {
        r[i] = -dot3(e[i], p0);
        for (int j = 0; j < m; j++)
            M[i][j] = dot3(e[i], e[j]);
    }
    double x[3];
    if (m == 1) {
        if (!(M[0][0] > 1e-300))
            return false;
        x[0] = r[0] / M[0][0];
    } else if (m == 2) {
        double det = M[0][0] * M[1][1] - M[0][1] * M[1][0];
        if (!(fabs(det) > 1e-14 * M[0][0] * M[1][1]) || det == 0)
            return false;
        x[0] = (r[0] * M[1][1] - M[0][1] * r[1]) / det;
        x[1] = (M[0][0] * r[1] - M[1][0] * r[0]) / det;
    } else {
        double det = M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1]) -
                     M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0]) +
                     M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0]);
        if (!(fabs(det) > 1e-14 * M[0][0] * M[1][1] * M[2][2]) || det == 0)
            return false;
        for (int c = 0; c < 3; c++) {
            double A[3][3];
            memcpy(A, M, sizeof A);
            for (int i = 0; i < 3; i++)
                A[i][c] = r[i];
            x[c] = (A[0][0] * (A[1][1] * A[2][2] - A[1][2] * A[2][1]) - A[0][1] * (A[1][0] * A[2][2] - A[1][2] * A[2][0]) +
                    A[0][2] * (A[1][0] * A[2][1] - A[1][1] * A[2][0])) /
                   det;
        }
    }
    double sum = 0;
    for (int i = 0; i < m; i++) {
        lam[idx[i + 1]] = x[i];
        sum += x[i];
    }
    lam[idx[0]] = 1 - sum;
    return true;
}

/* Replaces the simplex by the sub-simplex holding its closest point v. */
static bool simplex_closest(simplex *s, double v[3], double lam_out[4])
{
    double best = INFINITY, bl[4] = {0};
    int bm = 0;
    for (int mask = 1; mask < (1 << s->n); mask++) {
        double lam[4];
        if (!affine_closest(s, mask, lam))
            continue;
        bool ok = true;
        for (int i = 0; i < s->n; i++)
            if ((mask & (1 << i)) && lam[i] < -1e-12)
                ok = false;
        if (!ok)
            continue;
        double p[3] = {0, 0, 0};
        for (int i = 0; i < s->n; i++)
            for (int c = 0; c < 3; c++)
                p[c] += lam[i] * s->w[i][c];
        double d = dot3(p, p);
        if (d < best) {
            best = d;
            bm = mask;
            memcpy(bl, lam, sizeof bl);
            memcpy(v, p, 3 * sizeof(double));
        }
    }
    if (!bm)
        return false;
    simplex t;
    t.n = 0;
    for (int i = 0; i < s->n; i++)
        if (bm & (1 << i)) {
            memcpy(t.w[t.n], s->w[i], sizeof t.w[0]);
            memcpy(t.a[t.n], s->a[i], sizeof t.a[0]);
            memcpy(t.b[t.n], s->b[i], sizeof t.b[0]);
            lam_out[t.n] = bl[i];
            t.n++;
        }
    *s = t;
    return true;
}

static void support_pair(const q_convex *a, const q_convex *b, const double d[3], double w[3], double pa[3],
                         double pb[3])
{
    double nd[3] = {-d[0], -d[1], -d[2]};
    q_convex_support(a, d, pa);
    q_convex_support(b, nd, pb);
    sub3(pa, pb, w);
}

/* GJK on A - B; fills the final simplex. Returns the distance (0 overlap). */
static double gjk_run(const q_convex *a, const q_convex *b, simplex *s, double pa[3], double pb[3])
{
    double v[3], d[3];
    /* initial direction: between reference points */
    double ca[3], cb[3], x0[3] = {1, 0, 0};
    q_convex_support(a, x0, ca);
    q_convex_support(b, x0, cb);
    sub3(ca, cb, v);
    if (dot3(v, v) == 0)
        v[0] = 1;
    s->n = 0;
    double lam[4] = {1, 0, 0, 0};
    double scale = 0;
    for (int iter = 0; iter < 64; iter++) {
        d[0] = -v[0];
        d[1] = -v[1];
        d[2] = -v[2];
        double w[3], wa[3], wb[3];
        support_pair(a, b, d, w, wa, wb);
        scale = fmax(scale, dot3(w, w));
        double vv = dot3(v, v);
        if (s->n > 0 && vv - dot3(v, w) <= 1e-10 * vv)
            break; /* no progress: v is the closest point */
        bool dup = false;
        for (int i = 0; i < s->n; i++)
            if (s->w[i][0] == w[0] && s->w[i][1] == w[1] && s->w[i][2] == w[2])
                dup = true;
        if (dup)
            break;
        memcpy(s->w[s->n], w, sizeof w);
        memcpy(s->a[s->n], wa, sizeof wa);
        memcpy(s->b[s->n], wb, sizeof wb);
        s->n++;
        double nv[3];
        if (!simplex_closest(s, nv, lam))
            break;
        memcpy(v, nv, sizeof nv);
        if (s->n == 4 || dot3(v, v) <= 1e-24 * fmax(scale, 1e-300))
            return 0;
    }
    double lam2[4];
    simplex_closest(s, v, lam2);
    for (int c = 0; c < 3; c++) {
        pa[c] = pb[c] = 0;
        for (int i = 0; i < s->n; i++) {
            pa[c] += lam2[i] * s->a[i][c];
            pb[c] += lam2[i] * s->b[i][c];
        }
    }
    double dist = sqrt(dot3(v, v));
    return dist <= 1e-12 * sqrt(scale) ? 0 : dist;
}

double q_gjk_core(const q_convex *a, const q_convex *b, double pa[3], double pb[3])
{
    simplex s;
    return gjk_run(a, b, &s, pa, pb);
}

/* ---- EPA ---- */

#define EPA_VERTS 128
#define EPA_FACES 256

typedef struct epa_face {
    int v[3];
    double n[3], d;
    bool live;
} epa_face;

static bool epa_make_face(const double (*w)[3], epa_face *f, int a, int b, int c)
{
    f->v[0] = a;
    f->v[1] = b;
    f->v[2] = c;
    double e1[3], e2[3];
    sub3(w[b], w[a], e1);
    sub3(w[c], w[a], e2);
    cross3(e1, e2, f->n);
    double l = sqrt(dot3(f->n, f->n));
    if (!(l > 0))
        return false;
    for (int k = 0; k < 3; k++)
        f->n[k] /= l;
    f->d = dot3(f->n, w[a]);
    f->live = true;
    return true;
}

bool q_epa_core(const q_convex *a, const q_convex *b, double normal[3], double *depth, double pa[3], double pb[3])
{
    simplex s;
    double ta[3], tb[3];
    if (gjk_run(a, b, &s, ta, tb) > 0)
        return false;
    double w[EPA_VERTS][3], wa[EPA_VERTS][3], wb[EPA_VERTS][3];
    int nv = s.n;
    for (int i = 0; i < nv; i++) {
        memcpy(w[i], s.w[i], sizeof w[i]);
        memcpy(wa[i], s.a[i], sizeof wa[i]);
        memcpy(wb[i], s.b[i], sizeof wb[i]);
    }
    /* grow to a tetrahedron with volume */
    static const double dirs[14][3] = {{1, 0, 0},  {-1, 0, 0}, {0, 1, 0},   {0, -1, 0},  {0, 0, 1},
                                       {0, 0, -1}, {1, 1, 1},  {-1, -1, -1}, {1, -1, 1}, {-1, 1, -1},
                                       {1, 1, -1}, {-1, -1, 1}, {-1, 1, 1},  {1, -1, -1}};
    for (int di = 0; nv < 4 && di < 14; di++) {
        double d[3];
        memcpy(d, dirs[di], sizeof d);
        if (nv == 3) { /* along the triangle's normal, both ways */
            double e1[3], e2[3];
            sub3(w[1], w[0], e1);
            sub3(w[2], w[0], e2);
            cross3(e1, e2, d);
            if (di & 1)
                for (int k = 0; k < 3; k++)
                    d[k] = -d[k];
        }
        double p[3], qa[3], qb[3];
        support_pair(a, b, d, p, qa, qb);
        /* accept if it adds a dimension */
        bool ok;
        if (nv == 0)
            ok = true;
        else if (nv == 1) {
            double e[3];
            sub3(p, w[0], e);
            ok = dot3(e, e) > 1e-20;
        } else if (nv == 2) {
            double e1[3], e2[3], c[3];
            sub3(w[1], w[0], e1);
            sub3(p, w[0], e2);
            cross3(e1, e2, c);
            ok = dot3(c, c) > 1e-20 * dot3(e1, e1) * dot3(e2, e2);
        } else {
            double e1[3], e2[3], e3[3], c[3];
            sub3(w[1], w[0], e1);
            sub3(w[2], w[0], e2);
            sub3(p, w[0], e3);
            cross3(e1, e2, c);
            ok = fabs(dot3(c, e3)) > 1e-12 * sqrt(dot3(c, c) * dot3(e3, e3));
        }
        if (ok) {
            memcpy(w[nv], p, sizeof p);
            memcpy(wa[nv], qa, sizeof qa);
            memcpy(wb[nv], qb, sizeof qb);
            nv++;
        }
    }
    if (nv < 4)
        return false;
    epa_face f[EPA_FACES];
    int nf = 0;
    static const int tet[4][3] = {{0, 1, 2}, {0, 3, 1}, {0, 2, 3}, {1, 3, 2}};
    double vol[3], e1[3], e2[3], e3[3];
    sub3(w[1], w[0], e1);
    sub3(w[2], w[0], e2);
    sub3(w[3], w[0], e3);
    cross3(e1, e2, vol);
    bool flip = dot3(vol, e3) > 0;
    for (int i = 0; i < 4; i++) {
        int x = tet[i][0], y = flip ? tet[i][2] : tet[i][1], z = flip ? tet[i][1] : tet[i][2];
        if (!epa_make_face((const double(*)[3])w, &f[nf], x, y, z))
            return false;
        nf++;
    }
    int best = 0;
    for (int iter = 0; iter < EPA_VERTS; iter++) {
        best = -1;
        for (int i = 0; i < nf; i++)
            if (f[i].live && (best < 0 || f[i].d < f[best].d))
                best = i;
        if (best < 0)
            return false;
        double p[3], qa[3], qb[3];
        support_pair(a, b, f[best].n, p, qa, qb);
        double gain = dot3(p, f[best].n) - f[best].d;
        if (gain <= 1e-9 * fmax(1, fabs(f[best].d)) || nv == EPA_VERTS)
            break;
        /* remove visible faces, collect the horizon */
        int edges[EPA_FACES * 3][2], ne = 0;
        for (int i = 0; i < nf; i++) {
            if (!f[i].live || dot3(f[i].n, p) - f[i].d <= 0)
                continue;
            f[i].live = false;
            for (int k = 0; k < 3; k++) {
                int u = f[i].v[k], v = f[i].v[(k + 1) % 3], found = -1;
                for (int j = 0; j < ne; j++)
                    if (edges[j][0] == v && edges[j][1] == u)
                        found = j;
                if (found >= 0)
                    edges[found][0] = edges[--ne][0], edges[found][1] = edges[ne][1];
                else {
                    edges[ne][0] = u;
                    edges[ne][1] = v;
                    ne++;
                }
            }
        }
        /* compact faces */
        int k = 0;
        for (int i = 0; i < nf; i++)
            if (f[i].live)
                f[k++] = f[i];
        nf = k;
        if (nf + ne > EPA_FACES)
            break;
        memcpy(w[nv], p, sizeof p);
        memcpy(wa[nv], qa, sizeof qa);
        memcpy(wb[nv], qb, sizeof qb);
        for (int j = 0; j < ne; j++)
            if (epa_make_face((const double(*)[3])w, &f[nf], edges[j][0], edges[j][1], nv))
                nf++;
        nv++;
    }
    if (best < 0)
        return false;
    /* witness: barycentric of the origin's projection on the face */
    epa_face *bf = &f[best];
    double pr[3] = {bf->n[0] * bf->d, bf->n[1] * bf->d, bf->n[2] * bf->d};
    const double *A = w[bf->v[0]], *B = w[bf->v[1]], *C = w[bf->v[2]];
    double v0[3], v1[3], v2[3];
    sub3(B, A, v0);
    sub3(C, A, v1);
    sub3(pr, A, v2);
    double d00 = dot3(v0, v0), d01 = dot3(v0, v1), d11 = dot3(v1, v1), d20 = dot3(v2, v0), d21 = dot3(v2, v1);
    double den = d00 * d11 - d01 * d01;
    double l1 = den != 0 ? (d11 * d20 - d01 * d21) / den : 0, l2 = den != 0 ? (d00 * d21 - d01 * d20) / den : 0,
           l0 = 1 - l1 - l2;
    for (int c = 0; c < 3; c++) {
        pa[c] = l0 * wa[bf->v[0]][c] + l1 * wa[bf->v[1]][c] + l2 * wa[bf->v[2]][c];
        pb[c] = l0 * wb[bf->v[0]][c] + l1 * wb[bf->v[1]][c] + l2 * wb[bf->v[2]][c];
        /* moving B by n * depth puts the origin on the face of A - B */
        normal[c] = bf->n[c];
    }
    *depth = fmax(0, bf->d);
    return true;
}

double q_gjk_distance(const q_collider *a, const q_xform *ta, const q_collider *b, const q_xform *tb, double pa[3],
                      double pb[3])
{
    q_convex ca, cb;
    q_convex_from_collider(&ca, a, ta);
    q_convex_from_collider(&cb, b, tb);
    double r = ca.radius + cb.radius;
    double d = q_gjk_core(&ca, &cb, pa, pb);
    if (d > 0) {
        double n[3] = {(pb[0] - pa[0]) / d, (pb[1] - pa[1]) / d, (pb[2] - pa[2]) / d};
        for (int k = 0; k < 3; k++) {
            pa[k] += n[k] * ca.radius;
            pb[k] -= n[k] * cb.radius;
        }
        return d - r;
    }
    double n[3], depth;
    if (!q_epa_core(&ca, &cb, n, &depth, pa, pb)) {
        memcpy(pa, ta->p, 3 * sizeof(double));
        memcpy(pb, tb->p, 3 * sizeof(double));
        return -r;
    }
    for (int k = 0; k < 3; k++) {
        pa[k] += n[k] * ca.radius;
        pb[k] -= n[k] * cb.radius;
    }
    return -(depth + r);
}
