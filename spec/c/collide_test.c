/* Colliders and narrowphase against independent answers: closed-form and
 * Monte Carlo mass properties, GJK against closed forms and sampled
 * surfaces, box-box manifolds on known configurations, terrain contacts
 * against brute force over every triangle of the mesher's output, a box
 * sliding over flat terrain (no bumps), shape casts against sampling. TAP. */
#include "core/alloc.h"
#include "mesh/dc.h"
#include "physics/collide.h"
#include "physics/collide_internal.h"
#include "physics/terrain_physics.h"
#include "voxel/terrain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_no, failures;

static void report(const char *name, int ok)
{
    printf("%s %d - %s\n", ok ? "ok" : "not ok", ++test_no, name);
    failures += !ok;
}

static uint64_t state = 0x853c49e6748fea9bull;
static double drand(void)
{
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(state >> 11) / 9007199254740992.0;
}

static const q_xform IDENT = {{0, 0, 0}, {0, 0, 0, 1}};

static q_xform xf(double x, double y, double z, double ax, double ay, double az, double angle)
{
    double l = sqrt(ax * ax + ay * ay + az * az), s = sin(angle / 2);
    q_xform t = {{x, y, z}, {ax / l * s, ay / l * s, az / l * s, cos(angle / 2)}};
    return t;
}

static q_xform random_xform(double spread)
{
    double ax = drand() - 0.5, ay = drand() - 0.5, az = drand() - 0.5;
    return xf((drand() - 0.5) * spread, (drand() - 0.5) * spread, (drand() - 0.5) * spread, ax, ay, az + 1e-3,
              drand() * 6.28);
}

static double dist3(const double a[3], const double b[3])
{
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

/* ---- mass ---- */

static bool close_rel(double a, double b, double tol) { return fabs(a - b) <= tol * fmax(fabs(b), 1e-12); }

/* Monte Carlo mass properties over the shape's bounds. */
static q_mass_props monte_carlo(const q_collider *s, int n)
{
    q_mass_props m;
    memset(&m, 0, sizeof m);
    double box = (s->max[0] - s->min[0]) * (s->max[1] - s->min[1]) * (s->max[2] - s->min[2]);
    double sum[3] = {0}, sq[9] = {0};
    int in = 0;
    for (int i = 0; i < n; i++) {
        double p[3];
        for (int k = 0; k < 3; k++)
            p[k] = s->min[k] + drand() * (s->max[k] - s->min[k]);
        if (!q_collider_contains(s, &IDENT, p))
            continue;
        in++;
        for (int k = 0; k < 3; k++) {
            sum[k] += p[k];
            for (int j = 0; j < 3; j++)
                sq[3 * k + j] += p[k] * p[j];
        }
    }
    m.volume = box * in / n;
    for (int k = 0; k < 3; k++)
        m.center[k] = sum[k] / in;
    double C[9];
    for (int k = 0; k < 9; k++)
        C[k] = m.volume * (sq[k] / in - m.center[k / 3] * m.center[k % 3]);
    double tr = C[0] + C[4] + C[8];
    for (int k = 0; k < 9; k++)
        m.inertia[k] = (k % 4 == 0 ? tr : 0) - C[k];
    return m;
}

static bool mass_close(q_mass_props a, q_mass_props b, double tol, double scale)
{
    bool ok = close_rel(a.volume, b.volume, tol);
    for (int k = 0; k < 3; k++)
        ok = ok && fabs(a.center[k] - b.center[k]) <= tol * scale;
    double big = fmax(fabs(b.inertia[0]), fmax(fabs(b.inertia[4]), fabs(b.inertia[8])));
    for (int k = 0; k < 9; k++)
        ok = ok && fabs(a.inertia[k] - b.inertia[k]) <= tol * big;
    return ok;
}

static void test_mass(void)
{
    char err[128];
    q_collider *s = q_collider_sphere(0.7, err, sizeof err);
    q_mass_props m = q_collider_mass(s);
    double v = 4.0 / 3 * M_PI * pow(0.7, 3);
    report("sphere mass: closed form", close_rel(m.volume, v, 1e-12) && close_rel(m.inertia[0], 0.4 * v * 0.49, 1e-12));
    report("sphere mass: Monte Carlo within 2%", mass_close(monte_carlo(s, 400000), m, 0.02, 0.7));
    q_collider_free(s);

    double h[3] = {0.5, 1.0, 1.5};
    s = q_collider_box(h, err, sizeof err);
    m = q_collider_mass(s);
    v = 8 * 0.5 * 1.0 * 1.5;
    report("box mass: closed form", close_rel(m.volume, v, 1e-12) &&
                                        close_rel(m.inertia[0], v / 12 * (4 + 9), 1e-12) &&
                                        close_rel(m.inertia[8], v / 12 * (1 + 4), 1e-12));
    q_collider_free(s);

    s = q_collider_capsule(0.5, 1.0, err, sizeof err);
    m = q_collider_mass(s);
    v = M_PI * 0.25 * 2 + 4.0 / 3 * M_PI * 0.125;
    report("capsule mass: closed form volume", close_rel(m.volume, v, 1e-12));
    report("capsule mass: Monte Carlo within 2%", mass_close(monte_carlo(s, 400000), m, 0.02, 1.0));
    q_collider_free(s);

    /* hull of a box's corners plus inner points: the box's closed form */
    double pts[3 * 40];
    int n = 0;
    for (int i = 0; i < 8; i++, n++) {
        pts[3 * n] = (i & 1) ? 0.5 : -0.5;
        pts[3 * n + 1] = (i & 2) ? 1.0 : -1.0;
        pts[3 * n + 2] = (i & 4) ? 1.5 : -1.5;
    }
    for (; n < 40; n++)
        for (int k = 0; k < 3; k++)
            pts[3 * n + k] = (drand() - 0.5) * h[k] * 1.9;
    s = q_collider_hull(pts, (size_t)n, err, sizeof err);
    q_collider *b = q_collider_box(h, err, sizeof err);
    report("hull of a box: 8 vertices, 6 quad faces, 12 edges",
           s && s->hull->vertex_count == 8 && s->hull->face_count == 6 && s->hull->edge_count == 12);
    report("hull of a box: mass equals the box's", s && mass_close(q_collider_mass(s), q_collider_mass(b), 1e-9, 1));
    q_collider_free(s);
    q_collider_free(b);

    /* random hulls against Monte Carlo */
    bool ok = true;
    for (int trial = 0; trial < 4; trial++) {
        n = 30;
        for (int i = 0; i < n; i++) {
            pts[3 * i] = 2 + drand() * 2;
            pts[3 * i + 1] = -1 + drand() * 0.8;
            pts[3 * i + 2] = drand() * 1.5;
        }
        s = q_collider_hull(pts, (size_t)n, err, sizeof err);
        if (!s) {
            ok = false;
            continue;
        }
        ok = ok && mass_close(monte_carlo(s, 400000), q_collider_mass(s), 0.02, 2);
        q_collider_free(s);
    }
    report("random hulls: mass properties within 2% of Monte Carlo", ok);

    double flat[12] = {0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1};
    s = q_collider_hull(flat, 4, err, sizeof err);
    report("flat hull refused with a message", !s && strstr(err, "flat"));
    report("negative box refused", !q_collider_box((double[3]){1, -1, 1}, err, sizeof err));

    /* compound of two boxes = one box */
    q_collider_part parts[2] = {{q_collider_box((double[3]){0.5, 1, 1.5}, err, sizeof err), xf(-0.5, 0, 0, 0, 1, 0, 0)},
                                {q_collider_box((double[3]){0.5, 1, 1.5}, err, sizeof err), xf(0.5, 0, 0, 0, 1, 0, 0)}};
    s = q_collider_compound(parts, 2, err, sizeof err);
    b = q_collider_box((double[3]){1, 1, 1.5}, err, sizeof err);
    report("compound of two half boxes: mass equals the whole box's",
           s && mass_close(q_collider_mass(s), q_collider_mass(b), 1e-9, 1));
    q_collider_free(s);
    q_collider_free(b);
}

/* ---- GJK ---- */

/* Sampled surface points of a shape (its drawing triangles). */
static int sample_surface(const q_collider *s, const q_xform *x, double (*out)[3], int n)
{
    double *v;
    uint32_t nv, *idx, nt;
    if (!q_collider_triangles(s, &v, &nv, &idx, &nt))
        return 0;
    for (int i = 0; i < n; i++) {
        uint32_t t = (uint32_t)(drand() * nt) % nt;
        double a = drand(), b = drand();
        if (a + b > 1)
            a = 1 - a, b = 1 - b;
        double p[3];
        for (int k = 0; k < 3; k++)
            p[k] = v[3 * idx[3 * t] + k] * (1 - a - b) + v[3 * idx[3 * t + 1] + k] * a + v[3 * idx[3 * t + 2] + k] * b;
        q_xform_point(x, p, out[i]);
    }
    q_free(v, (size_t)nv * 3 * sizeof(double));
    q_free(idx, (size_t)nt * 3 * sizeof(uint32_t));
    return n;
}

static q_collider *random_hull(double size)
{
    char err[128];
    double pts[3 * 24];
    for (int i = 0; i < 24; i++)
        for (int k = 0; k < 3; k++)
            pts[3 * i + k] = (drand() - 0.5) * size;
    return q_collider_hull(pts, 24, err, sizeof err);
}

static void test_gjk(void)
{
    char err[128];
    q_collider *s1 = q_collider_sphere(0.5, err, sizeof err), *s2 = q_collider_sphere(0.25, err, sizeof err);
    bool ok = true;
    for (int i = 0; i < 100; i++) {
        q_xform a = random_xform(4), b = random_xform(4);
        double pa[3], pb[3], d = q_gjk_distance(s1, &a, s2, &b, pa, pb);
        ok = ok && fabs(d - (dist3(a.p, b.p) - 0.75)) < 1e-9;
    }
    report("GJK sphere-sphere: closed form (apart and overlapping)", ok);

    q_collider *b1 = q_collider_box((double[3]){1, 0.5, 0.25}, err, sizeof err);
    ok = true;
    for (int i = 0; i < 100; i++) {
        /* point-like sphere against an axis-aligned box: closed form */
        q_xform x = {{(drand() - 0.5) * 6, (drand() - 0.5) * 6, (drand() - 0.5) * 6}, {0, 0, 0, 1}};
        double dd = 0, inside = INFINITY;
        const double h[3] = {1, 0.5, 0.25};
        for (int k = 0; k < 3; k++) {
            double e = fabs(x.p[k]) - h[k];
            dd += e > 0 ? e * e : 0;
            inside = fmin(inside, -e);
        }
        double expect = dd > 0 ? sqrt(dd) - 0.25 : -inside - 0.25;
        double pa[3], pb[3], d = q_gjk_distance(b1, &IDENT, s2, &x, pa, pb);
        ok = ok && fabs(d - expect) < 1e-7;
    }
    report("GJK box-sphere: closed form (apart and overlapping)", ok);

    ok = true;
    static double sa[3000][3], sb[3000][3];
    int worst = 0;
    for (int i = 0; i < 40; i++) {
        q_collider *h1 = i % 2 ? random_hull(2) : q_collider_box((double[3]){0.5, 0.7, 0.3}, err, sizeof err);
        q_collider *h2 = i % 3 ? random_hull(1.5) : q_collider_capsule(0.3, 0.5, err, sizeof err);
        q_xform a = random_xform(1), b = random_xform(1);
        b.p[0] += 3;
        double pa[3], pb[3], d = q_gjk_distance(h1, &a, h2, &b, pa, pb);
        sample_surface(h1, &a, sa, 3000);
        sample_surface(h2, &b, sb, 3000);
        double best = INFINITY;
        for (int u = 0; u < 3000; u++)
            for (int v = 0; v < 3000; v += 1)
                best = fmin(best, dist3(sa[u], sb[v]));
        /* exact distance <= sampled minimum, close to it; witnesses on the shapes */
        bool good = d > 0 && d <= best + 1e-9 && best - d < 0.05 && fabs(dist3(pa, pb) - d) < 1e-6;
        if (!good)
            worst++;
        ok = ok && good;
        q_collider_free(h1);
        q_collider_free(h2);
    }
    report("GJK hull/box/capsule pairs: distance <= sampled surface minimum and within 0.05 of it", ok);
    if (worst)
        printf("# %d bad pairs\n", worst);

    /* EPA: overlapping boxes along x */
    ok = true;
    for (int i = 0; i < 20; i++) {
        double o = 0.05 + drand() * 0.4;
        q_xform x = {{2 - o, (drand() - 0.5) * 0.2, (drand() - 0.5) * 0.1}, {0, 0, 0, 1}};
        double pa[3], pb[3], d = q_gjk_distance(b1, &IDENT, b1, &x, pa, pb);
        ok = ok && fabs(d + o) < 1e-6;
    }
    report("EPA box-box overlap depth: closed form", ok);
    q_collider_free(s1);
    q_collider_free(s2);
    q_collider_free(b1);
}

/* ---- box-box manifolds ---- */

static void test_box_box(void)
{
    char err[128];
    q_collider *b = q_collider_box((double[3]){0.5, 0.5, 0.5}, err, sizeof err);
    q_manifold m[2];
    q_xform top = {{0.1, 0.99, 0.05}, {0, 0, 0, 1}};
    int n = q_collide_shapes(b, &IDENT, b, &top, 0.02, m, 2);
    bool ok = n == 1 && m[0].count == 4 && fabs(m[0].normal[1] - 1) < 1e-12;
    for (uint32_t i = 0; ok && i < m[0].count; i++)
        ok = fabs(m[0].points[i].separation + 0.01) < 1e-12 && fabs(m[0].points[i].position[1] - 0.495) < 1e-12;
    report("box on box: 4 points, normal up, separation -0.01", ok);

    q_xform rot = xf(0, 0.99, 0, 0, 1, 0, M_PI / 4);
    n = q_collide_shapes(b, &IDENT, b, &rot, 0.02, m, 2);
    ok = n == 1 && m[0].count == 4 && fabs(m[0].normal[1] - 1) < 1e-9;
    double area = 0;
    static const int orders[3][4] = {{0, 1, 2, 3}, {0, 2, 1, 3}, {0, 1, 3, 2}};
    for (int o = 0; ok && o < 3; o++) {
        double a2 = 0;
        for (int i = 0; i < 4; i++) {
            const double *p = m[0].points[orders[o][i]].position, *q = m[0].points[orders[o][(i + 1) % 4]].position;
            a2 += p[0] * q[2] - q[0] * p[2];
        }
        area = fmax(area, fabs(a2));
    }
    for (uint32_t i = 0; ok && i < m[0].count; i++)
        ok = fabs(m[0].points[i].separation + 0.01) < 1e-9;
    /* octagon of area 2 (sqrt2 - 1) * ... : the 4 kept points span at least half of it */
    report("box on box turned 45 degrees: 4 of the 8 clip points, largest area kept", ok && fabs(area) / 2 > 0.4);
    if (!(ok && fabs(area) / 2 > 0.4))
        printf("# n %d count %u area %g\n", n, m[0].count, fabs(area) / 2);

    /* speculative: apart by 0.01 within margin 0.02, none beyond */
    q_xform apart = {{0, 1.01, 0}, {0, 0, 0, 1}}, far = {{0, 1.05, 0}, {0, 0, 0, 1}};
    n = q_collide_shapes(b, &IDENT, b, &apart, 0.02, m, 2);
    ok = n == 1 && m[0].count == 4 && fabs(m[0].points[0].separation - 0.01) < 1e-12;
    n = q_collide_shapes(b, &IDENT, b, &far, 0.02, m, 2);
    report("speculative contacts within the margin only", ok && n == 0);

    /* edge on edge: crossed edges, B turned 45 degrees about x and about y */
    q_xform e1 = xf(0, 0, 0, 0, 0, 1, M_PI / 4);
    q_xform e2 = xf(0, 2 * 0.70710678 - 0.02, 0, 1, 0, 0, M_PI / 4);
    n = q_collide_shapes(b, &e1, b, &e2, 0.02, m, 2);
    ok = n == 1 && m[0].count == 1 && fabs(m[0].normal[1] - 1) < 1e-6 && fabs(m[0].points[0].separation + 0.02) < 1e-6;
    report("crossed edges: one point, normal up, separation -0.02", ok);

    /* ids stable under a small motion */
    q_manifold m2[2];
    q_xform top2 = top;
    top2.p[0] += 0.01;
    q_collide_shapes(b, &IDENT, b, &top, 0.02, m, 2);
    q_collide_shapes(b, &IDENT, b, &top2, 0.02, m2, 2);
    ok = m[0].count == m2[0].count;
    for (uint32_t i = 0; ok && i < m[0].count; i++) {
        bool found = false;
        for (uint32_t j = 0; j < m2[0].count; j++)
            found |= m[0].points[i].id == m2[0].points[j].id && dist3(m[0].points[i].position, m2[0].points[j].position) < 0.02;
        ok = found;
    }
    report("feature ids stable under a small slide", ok);

    /* sphere, capsule pairs */
    q_collider *s = q_collider_sphere(0.5, err, sizeof err), *c = q_collider_capsule(0.25, 0.5, err, sizeof err);
    q_xform sx = {{0, 0.98, 0}, {0, 0, 0, 1}};
    n = q_collide_shapes(b, &IDENT, s, &sx, 0.02, m, 2);
    ok = n == 1 && m[0].count == 1 && fabs(m[0].points[0].separation + 0.02) < 1e-9 && fabs(m[0].normal[1] - 1) < 1e-9;
    report("sphere on box: one point, depth 0.02", ok);
    q_xform cx = xf(0.1, 0.74, 0, 0, 0, 1, M_PI / 2); /* lying along x */
    n = q_collide_shapes(b, &IDENT, c, &cx, 0.02, m, 2);
    ok = n == 1 && m[0].count == 2 && fabs(m[0].normal[1] - 1) < 1e-9;
    for (uint32_t i = 0; ok && i < 2; i++)
        ok = fabs(m[0].points[i].separation + 0.01) < 1e-9;
    report("capsule lying on box: two points clipped to the face", ok);
    q_xform c2 = xf(0.2, 0.45, 0, 0, 0, 1, M_PI / 2);
    n = q_collide_shapes(c, &cx, c, &c2, 0.02, m, 2);
    ok = n == 1 && m[0].count == 2 && fabs(m[0].normal[1] + 1) < 1e-9 && fabs(m[0].points[0].separation + 0.21) < 1e-9;
    report("parallel capsules: two points", ok);

    /* hull prism standing on the box: a face contact, 4 points kept */
    double pts[3 * 12];
    for (int i = 0; i < 12; i++) {
        pts[3 * i] = 0.3 * cos((i / 2) * 1.047);
        pts[3 * i + 1] = (i & 1) ? 0.2 : -0.2;
        pts[3 * i + 2] = 0.3 * sin((i / 2) * 1.047);
    }
    q_collider *h = q_collider_hull(pts, 12, err, sizeof err);
    q_xform hx = xf(0.05, 0.69, 0, 0, 1, 0, 0.3);
    n = h ? q_collide_shapes(b, &IDENT, h, &hx, 0.02, m, 2) : 0;
    ok = n == 1 && m[0].count == 4 && fabs(m[0].normal[1] - 1) < 1e-9;
    for (uint32_t i = 0; ok && i < m[0].count; i++)
        ok = fabs(m[0].points[i].separation + 0.01) < 1e-9;
    report("hexagonal hull prism on a box: 4 points of the 6, normal up, depth 0.01", ok);
    n = h ? q_collide_shapes(h, &hx, b, &IDENT, 0.02, m, 2) : 0;
    report("... and swapped: normal down", n == 1 && m[0].count == 4 && fabs(m[0].normal[1] + 1) < 1e-9);

    /* compound dumbbell lying on the box: one manifold per touching part */
    q_collider_part parts[3] = {{q_collider_sphere(0.2, err, sizeof err), xf(-0.3, 0, 0, 0, 1, 0, 0)},
                                {q_collider_sphere(0.2, err, sizeof err), xf(0.3, 0, 0, 0, 1, 0, 0)},
                                {q_collider_capsule(0.05, 0.3, err, sizeof err), xf(0, 0, 0, 0, 0, 1, M_PI / 2)}};
    q_collider *dumb = q_collider_compound(parts, 3, err, sizeof err);
    q_xform dx = {{0, 0.69, 0}, {0, 0, 0, 1}};
    q_manifold mm[4];
    n = dumb ? q_collide_shapes(dumb, &dx, b, &IDENT, 0.02, mm, 4) : 0;
    ok = n == 2 && mm[0].key == (0u << 16) && mm[1].key == (1u << 16) && mm[0].count == 1 &&
         fabs(mm[0].normal[1] + 1) < 1e-9 && fabs(mm[0].points[0].separation + 0.01) < 1e-9;
    report("compound dumbbell on a box: one manifold per touching part, keyed by part", ok);
    q_collider_free(dumb);
    q_collider_free(h);
    q_collider_free(s);
    q_collider_free(c);
    q_collider_free(b);
}

/* ---- terrain ---- */

typedef struct soup {
    double *v;
    uint32_t nt;
} soup;

static soup mesh_terrain(q_terrain *t, const int32_t size[3], double vs)
{
    q_box box = {{-1, -1, -1}, {size[0] + 1, size[1] + 1, size[2] + 1}};
    q_dc_output out;
    memset(&out, 0, sizeof out);
    out.vertex_capacity = q_dc_vertex_bound(box);
    out.index_capacity = q_dc_index_bound(box);
    out.positions = malloc(out.vertex_capacity * 3 * sizeof(float));
    out.indices = malloc(out.index_capacity * sizeof(uint32_t));
    char err[128];
    soup s = {NULL, 0};
    if (q_dc_mesh(t, box, Q_SURFACE_SOLID, (float)vs, &out, NULL, err, sizeof err) == Q_OK) {
        s.nt = (uint32_t)(out.index_count / 3);
        s.v = malloc(s.nt * 9 * sizeof(double));
        for (size_t i = 0; i < out.index_count; i++)
            for (int k = 0; k < 3; k++)
                s.v[3 * i + k] = (double)out.positions[3 * out.indices[i] + k] + out.origin[k] * vs;
    }
    free(out.positions);
    free(out.indices);
    return s;
}

static double point_triangle(const double p[3], const double *t, double out[3])
{
    /* Ericson's closest point on triangle */
    const double *a = t, *b = t + 3, *c = t + 6;
    double ab[3], ac[3], ap[3];
    for (int k = 0; k < 3; k++) {
        ab[k] = b[k] - a[k];
        ac[k] = c[k] - a[k];
        ap[k] = p[k] - a[k];
    }
#define D(x, y) (x[0] * y[0] + x[1] * y[1] + x[2] * y[2])
    double d1 = D(ab, ap), d2 = D(ac, ap), r[3];
    if (d1 <= 0 && d2 <= 0) {
        memcpy(r, a, sizeof r);
        goto done;
    }
    double bp[3] = {p[0] - b[0], p[1] - b[1], p[2] - b[2]}, d3 = D(ab, bp), d4 = D(ac, bp);
    if (d3 >= 0 && d4 <= d3) {
        memcpy(r, b, sizeof r);
        goto done;
    }
    double vc = d1 * d4 - d3 * d2;
    if (vc <= 0 && d1 >= 0 && d3 <= 0) {
        double v = d1 / (d1 - d3);
        for (int k = 0; k < 3; k++)
            r[k] = a[k] + v * ab[k];
        goto done;
    }
    double cp[3] = {p[0] - c[0], p[1] - c[1], p[2] - c[2]}, d5 = D(ab, cp), d6 = D(ac, cp);
    if (d6 >= 0 && d5 <= d6) {
        memcpy(r, c, sizeof r);
        goto done;
    }
    double vb = d5 * d2 - d1 * d6;
    if (vb <= 0 && d2 >= 0 && d6 <= 0) {
        double w = d2 / (d2 - d6);
        for (int k = 0; k < 3; k++)
            r[k] = a[k] + w * ac[k];
        goto done;
    }
    double va = d3 * d6 - d5 * d4;
    if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
        double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        for (int k = 0; k < 3; k++)
            r[k] = b[k] + w * (c[k] - b[k]);
        goto done;
    }
    {
        double den = 1 / (va + vb + vc), v = vb * den, w = vc * den;
        for (int k = 0; k < 3; k++)
            r[k] = a[k] + ab[k] * v + ac[k] * w;
    }
done:
#undef D
    if (out)
        memcpy(out, r, sizeof r);
    return dist3(p, r);
}

static double segment_triangle(const double a[3], const double b[3], const double *t)
{
    /* sampled along the segment then refined by golden section: distance is
     * convex along the segment */
    double lo = 0, hi = 1;
    for (int it = 0; it < 100; it++) {
        double m1 = lo + (hi - lo) * 0.382, m2 = lo + (hi - lo) * 0.618, p1[3], p2[3];
        for (int k = 0; k < 3; k++) {
            p1[k] = a[k] + (b[k] - a[k]) * m1;
            p2[k] = a[k] + (b[k] - a[k]) * m2;
        }
        if (point_triangle(p1, t, NULL) < point_triangle(p2, t, NULL))
            hi = m2;
        else
            lo = m1;
    }
    double p[3];
    for (int k = 0; k < 3; k++)
        p[k] = a[k] + (b[k] - a[k]) * (lo + hi) / 2;
    return point_triangle(p, t, NULL);
}

static double segment_segment(const double p1[3], const double q1[3], const double p2[3], const double q2[3])
{
    /* brute: golden section on s of the distance from p1 + s d1 to segment 2 */
    double lo = 0, hi = 1;
    double tri[9];
    for (int k = 0; k < 3; k++) {
        tri[k] = p2[k];
        tri[3 + k] = q2[k];
        tri[6 + k] = q2[k];
    }
    (void)tri;
    for (int it = 0; it < 80; it++) {
        double m1 = lo + (hi - lo) * 0.382, m2 = lo + (hi - lo) * 0.618, a[3], b[3];
        for (int k = 0; k < 3; k++) {
            a[k] = p1[k] + (q1[k] - p1[k]) * m1;
            b[k] = p1[k] + (q1[k] - p1[k]) * m2;
        }
        double da = point_triangle(a, tri, NULL), db = point_triangle(b, tri, NULL);
        if (da < db)
            hi = m2;
        else
            lo = m1;
    }
    double a[3];
    for (int k = 0; k < 3; k++)
        a[k] = p1[k] + (q1[k] - p1[k]) * (lo + hi) / 2;
    return point_triangle(a, tri, NULL);
}

/* Distance between a box (half extents h, placed by x) and a triangle, when
 * apart: the minimum over box corners vs triangle, triangle corners vs box
 * and box edges vs triangle edges. */
static double box_triangle(const double h[3], const q_xform *x, const double *t)
{
    double c[8][3];
    for (int i = 0; i < 8; i++) {
        double l[3] = {(i & 1) ? h[0] : -h[0], (i & 2) ? h[1] : -h[1], (i & 4) ? h[2] : -h[2]};
        q_xform_point(x, l, c[i]);
    }
    double best = INFINITY;
    for (int i = 0; i < 8; i++)
        best = fmin(best, point_triangle(c[i], t, NULL));
    for (int j = 0; j < 3; j++) {
        double l[3], dd = 0;
        q_xform_inverse_point(x, t + 3 * j, l);
        for (int k = 0; k < 3; k++) {
            double e = fabs(l[k]) - h[k];
            dd += e > 0 ? e * e : 0;
        }
        best = fmin(best, sqrt(dd));
    }
    static const int E[12][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 2}, {1, 3},
                                 {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
    for (int e = 0; e < 12; e++)
        for (int j = 0; j < 3; j++)
            best = fmin(best, segment_segment(c[E[e][0]], c[E[e][1]], t + 3 * j, t + 3 * ((j + 1) % 3)));
    return best;
}

static double min_sep(const q_terrain_manifold *tm, size_t n)
{
    double s = INFINITY;
    for (size_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < tm[i].m.count; j++)
            s = fmin(s, tm[i].m.points[j].separation);
    return s;
}

static void test_terrain(void)
{
    char err[128];
    const double vs = 0.5;
    q_terrain *t = q_terrain_create(NULL);
    q_generate_def g = q_default_generate_def();
    g.kind = Q_GEN_HILLS;
    g.size[0] = 48, g.size[1] = 32, g.size[2] = 48;
    g.seed = 11;
    q_terrain_generate(t, &g, err, sizeof err);
    q_terrain_physics *tp = q_terrain_physics_create(t, vs, 0);
    soup s = mesh_terrain(t, g.size, vs);
    printf("# hills: %u triangles\n", s.nt);
    q_terrain_manifold out[32];
    const double margin = 0.1;
    char err2[128];
    q_collider *sphere = q_collider_sphere(0.4, err2, sizeof err2);
    q_collider *caps = q_collider_capsule(0.3, 0.4, err2, sizeof err2);
    int tested = 0, bad = 0, contacts = 0;
    double worst = 0;
    for (int i = 0; i < 400; i++) {
        /* a point near the surface: raycast down from above */
        double o[3] = {4 + drand() * 16, 15.9, 4 + drand() * 16}, d[3] = {0, -1, 0};
        q_ray_hit hit;
        if (!q_terrain_physics_raycast(tp, o, d, 20, Q_RAY_SOLID, &hit))
            continue;
        q_xform x = {{hit.position[0], hit.position[1] + 0.4 + (drand() - 0.6) * 0.3, hit.position[2]}, {0, 0, 0, 1}};
        double brute = INFINITY;
        for (uint32_t k = 0; k < s.nt; k++)
            brute = fmin(brute, point_triangle(x.p, s.v + 9 * k, NULL) - 0.4);
        size_t n = q_collide_terrain(tp, sphere, &x, margin, out, 32);
        double ms = min_sep(out, n);
        tested++;
        if (brute < margin) {
            contacts++;
            worst = fmax(worst, fabs(ms - brute));
            if (!(fabs(ms - brute) < 1e-4))
                bad++;
        } else if (n != 0)
            bad++;
    }
    report("sphere vs hills: deepest separation equals brute-force closest distance minus radius", bad == 0 && contacts > 100);
    printf("# %d positions, %d in contact, worst difference %.3g\n", tested, contacts, worst);

    bad = contacts = 0;
    worst = 0;
    for (int i = 0; i < 200; i++) {
        double o[3] = {4 + drand() * 16, 15.9, 4 + drand() * 16}, d[3] = {0, -1, 0};
        q_ray_hit hit;
        if (!q_terrain_physics_raycast(tp, o, d, 20, Q_RAY_SOLID, &hit))
            continue;
        q_xform x = random_xform(0);
        x.p[0] = hit.position[0];
        x.p[1] = hit.position[1] + 0.4 + (drand() - 0.6) * 0.3;
        x.p[2] = hit.position[2];
        double a[3], b[3], up[3] = {0, 0.4, 0}, dn[3] = {0, -0.4, 0};
        q_xform_point(&x, up, a);
        q_xform_point(&x, dn, b);
        double brute = INFINITY;
        for (uint32_t k = 0; k < s.nt; k++) {
            const double *tv = s.v + 9 * k;
            /* cheap reject */
            if (point_triangle(x.p, tv, NULL) > 2)
                continue;
            brute = fmin(brute, segment_triangle(a, b, tv) - 0.3);
        }
        size_t n = q_collide_terrain(tp, caps, &x, margin, out, 32);
        double ms = min_sep(out, n);
        if (brute < margin && brute > -0.25) {
            contacts++;
            worst = fmax(worst, fabs(ms - brute));
            if (!(fabs(ms - brute) < 1e-4))
                bad++;
        }
    }
    report("capsule vs hills: deepest separation equals brute-force segment distance minus radius", bad == 0 && contacts > 50);
    printf("# %d capsules in contact, worst difference %.3g\n", contacts, worst);

    /* boxes held apart from the hills: the reported separation never exceeds
     * the true distance (no missed contact) and is close to it */
    double bh[3] = {0.4, 0.25, 0.3};
    q_collider *box = q_collider_box(bh, err2, sizeof err2);
    bad = contacts = 0;
    worst = 0;
    int missed = 0;
    for (int i = 0; i < 300 && contacts < 100; i++) {
        double o[3] = {4 + drand() * 16, 15.9, 4 + drand() * 16}, d[3] = {0, -1, 0};
        q_ray_hit hit;
        if (!q_terrain_physics_raycast(tp, o, d, 20, Q_RAY_SOLID, &hit))
            continue;
        q_xform x = random_xform(0);
        for (int k = 0; k < 3; k++)
            x.p[k] = hit.position[k] + hit.normal[k] * (0.5 + drand() * 0.1);
        double brute = INFINITY;
        for (uint32_t k = 0; k < s.nt; k++) {
            const double *tv = s.v + 9 * k;
            if (point_triangle(x.p, tv, NULL) > 1.2)
                continue;
            brute = fmin(brute, box_triangle(bh, &x, tv));
        }
        if (!(brute > 1e-3 && brute < margin))
            continue;
        size_t n = q_collide_terrain(tp, box, &x, margin, out, 32);
        double ms = min_sep(out, n);
        contacts++;
        /* 1e-3: internal (coplanar, concave or under 1 degree convex) edges
         * give face-normal contacts, a little above the true distance */
        if (n == 0)
            missed++;
        else if (ms > brute + 1e-3)
            bad++;
        if (n == 0 || ms > brute + 1e-3)
            printf("# box: n %zu sep %.6f true %.6f\n", n, ms, brute);
        worst = fmax(worst, brute - ms);
    }
    report("box near hills (apart within the margin): a contact, separation <= true distance + 1e-3", bad == 0 && missed == 0 && contacts > 20);
    printf("# %d boxes, largest (true distance - separation) %.3g\n", contacts, worst);
    q_collider_free(box);

    /* shape cast: sphere dropped onto the hills against sampled distances */
    bad = 0;
    int casts = 0;
    for (int i = 0; i < 60; i++) {
        q_xform from = {{4 + drand() * 16, 15, 4 + drand() * 16}, {0, 0, 0, 1}};
        double delta[3] = {(drand() - 0.5) * 4, -14, (drand() - 0.5) * 4};
        q_cast_hit h;
        bool got = q_shapecast_terrain(tp, sphere, &from, delta, &h);
        /* brute force: the first sample fraction where the distance <= 0 */
        double first = -1;
        for (int k = 0; k <= 2000 && first < 0; k++) {
            double f = k / 2000.0, p[3] = {from.p[0] + delta[0] * f, from.p[1] + delta[1] * f, from.p[2] + delta[2] * f};
            double dmin = INFINITY;
            for (uint32_t j = 0; j < s.nt; j++) {
                const double *tv = s.v + 9 * j;
                if (fabs(tv[1] - p[1]) > 2 && fabs(tv[4] - p[1]) > 2)
                    continue;
                dmin = fmin(dmin, point_triangle(p, tv, NULL));
            }
            if (dmin <= 0.4)
                first = f;
        }
        casts++;
        if (first < 0 ? got : !(got && h.fraction <= first + 1e-9 && h.fraction >= first - 1.0 / 2000 - 1e-6))
            bad++;
    }
    report("sphere shape cast vs hills: fraction matches sampled first contact", bad == 0);

    /* box cast: the first sample within one step of touching (box-triangle
     * distances by brute force) */
    double cbh[3] = {0.3, 0.2, 0.25};
    q_collider *cbox = q_collider_box(cbh, err2, sizeof err2);
    bad = 0;
    for (int i = 0; i < 30; i++) {
        q_xform from = random_xform(0);
        from.p[0] = 4 + drand() * 16;
        from.p[1] = 15;
        from.p[2] = 4 + drand() * 16;
        double delta[3] = {(drand() - 0.5) * 2, -14, (drand() - 0.5) * 2};
        double step = sqrt(delta[0] * delta[0] + delta[1] * delta[1] + delta[2] * delta[2]) / 2000;
        q_cast_hit h;
        bool got = q_shapecast_terrain(tp, cbox, &from, delta, &h);
        double first = -1;
        for (int k = 0; k <= 2000 && first < 0; k++) {
            q_xform x = from;
            for (int c = 0; c < 3; c++)
                x.p[c] += delta[c] * k / 2000.0;
            for (uint32_t j = 0; j < s.nt && first < 0; j++) {
                const double *tv = s.v + 9 * j;
                if (fabs(tv[1] - x.p[1]) > 1.5 || fabs(tv[0] - x.p[0]) > 1.5 || fabs(tv[2] - x.p[2]) > 1.5)
                    continue;
                /* the box's bounding sphere first (radius 0.4387) */
                if (point_triangle(x.p, tv, NULL) > 0.44 + step)
                    continue;
                if (box_triangle(cbh, &x, tv) <= step)
                    first = k / 2000.0;
            }
        }
        if (first < 0 ? got : !(got && fabs(h.fraction - first) <= 1.0 / 2000 + 1e-6))
            bad++;
    }
    report("box shape cast vs hills: fraction within one sample step of the brute-force first contact", bad == 0);
    q_collider_free(cbox);
    q_collider_free(sphere);
    q_collider_free(caps);
    free(s.v);
    q_terrain_physics_destroy(tp);
    q_terrain_destroy(t);
}

static void test_sliding(void)
{
    char err[128];
    const double vs = 1.0;
    q_terrain *t = q_terrain_create(NULL);
    q_generate_def g = q_default_generate_def();
    g.kind = Q_GEN_FLAT;
    g.size[0] = 64, g.size[1] = 40, g.size[2] = 64;
    q_terrain_generate(t, &g, err, sizeof err);
    q_terrain_physics *tp = q_terrain_physics_create(t, vs, 0);
    double o[3] = {30.3, 39.5, 30.7}, d[3] = {0, -1, 0};
    (void)0;
    q_ray_hit hit;
    bool ok = q_terrain_physics_raycast(tp, o, d, 40, Q_RAY_SOLID, &hit);
    double ground = hit.position[1];
    printf("# flat ground at y = %.6f\n", ground);
    q_collider *boxes[3] = {q_collider_box((double[3]){0.5, 0.5, 0.5}, err, sizeof err),
                            q_collider_box((double[3]){1.3, 0.4, 0.7}, err, sizeof err),
                            q_collider_box((double[3]){0.2, 0.2, 0.2}, err, sizeof err)};
    q_collider *others[3] = {q_collider_sphere(0.5, err, sizeof err), q_collider_capsule(0.3, 0.6, err, sizeof err),
                             NULL};
    double pts[3 * 12];
    for (int i = 0; i < 12; i++) {
        pts[3 * i] = 0.6 * cos(i * 0.52);
        pts[3 * i + 1] = (i & 1) ? 0.3 : -0.3;
        pts[3 * i + 2] = 0.6 * sin(i * 0.52);
    }
    others[2] = q_collider_hull(pts, 12, err, sizeof err);
    int manifolds = 0, worst_count = 0;
    double worst = 0, worst_sep = 0;
    for (int shape = 0; shape < 6; shape++) {
        const q_collider *s = shape < 3 ? boxes[shape] : others[shape - 3];
        for (int yaw = 0; yaw < 4; yaw++) {
            q_xform x = xf(8, 0, 9.3, 0, 1, 0, yaw * 0.4);
            double down[3] = {0, -1, 0}, lo[3];
            q_collider_support(s, &x, down, lo);
            x.p[1] = ground - lo[1] + 0.002 - 0.004 * (yaw & 1); /* resting, slightly in or out */
            double expect = 0.002 - 0.004 * (yaw & 1);
            for (int step = 0; step < 800; step++) {
                x.p[0] += 0.0537; /* across 43 voxels: triangle edges and 5 chunk borders */
                x.p[2] += 0.0111;
                q_terrain_manifold out[16];
                size_t n = q_collide_terrain(tp, s, &x, 0.01, out, 16);
                if (n == 0)
                    worst_count++;
                for (size_t i = 0; i < n; i++) {
                    manifolds++;
                    worst = fmax(worst, 1 - out[i].m.normal[1]);
                    double deepest = min_sep(out, n);
                    for (uint32_t j = 0; j < out[i].m.count; j++) {
                        /* spheres and capsules: the deepest point of all chunks (others
                         * are neighbours' edge points at their true, larger distance) */
                        double e = fabs((shape < 3 || shape == 5 ? out[i].m.points[j].separation : deepest) - expect);
                        if (e > 1e-5 && e > worst_sep)
                            printf("# shape %d yaw %d step %d: separation %.6f expected %.6f\n", shape, yaw, step,
                                   out[i].m.points[j].separation, expect);
                        worst_sep = fmax(worst_sep, e);
                    }
                }
            }
        }
    }
    report("shapes sliding over flat terrain across triangle edges and chunk borders: every normal within 1e-3 of vertical",
           ok && worst < 1e-3 && worst_count == 0);
    report("... and every separation equals the height above the ground (boxes, hulls: every point; spheres, capsules: the deepest)", worst_sep < 1e-5);
    printf("# %d manifolds, worst 1 - n.y %.3g, worst separation error %.3g, steps without contact %d\n", manifolds,
           worst, worst_sep, worst_count);

    /* buried in a FULL chunk: one contact pushing up */
    q_xform deep = {{30, 12, 30}, {0, 0, 0, 1}};
    q_terrain_manifold out[8];
    size_t n = q_collide_terrain(tp, boxes[2], &deep, 0.01, out, 8);
    bool up = n >= 1;
    for (size_t i = 0; i < n; i++)
        up = up && out[i].m.normal[1] == 1 && out[i].m.points[0].separation < 0;
    report("a box buried in a full chunk gets a contact pushing up", up);
    /* deep in a chunk with a surface (ground at 20: chunk 2 spans 16..24) */
    q_xform deep2 = {{30.5, 17.5, 30.5}, {0, 0, 0, 1}};
    n = q_collide_terrain(tp, boxes[2], &deep2, 0.01, out, 8);
    q_collider_part dparts[2] = {{q_collider_sphere(0.3, err, sizeof err), xf(-0.5, 0, 0, 0, 1, 0, 0)},
                                 {q_collider_sphere(0.3, err, sizeof err), xf(0.5, 0, 0, 0, 1, 0, 0)}};
    q_collider *dumb = q_collider_compound(dparts, 2, err, sizeof err);
    q_xform dx = {{30.2, ground + 0.29, 30.1}, {0, 0, 0, 1}};
    q_terrain_manifold dm[8];
    size_t dn = dumb ? q_collide_terrain(tp, dumb, &dx, 0.005, dm, 8) : 0;
    bool dok = dn >= 2;
    uint32_t seen = 0;
    for (size_t i = 0; i < dn; i++) {
        seen |= 1u << (dm[i].m.key >> 16);
        dok = dok && dm[i].m.normal[1] > 0.999;
    }
    report("compound on terrain: manifolds for both parts, keyed by part", dok && seen == 3 && fabs(min_sep(dm, dn) + 0.01) < 1e-9);
    q_collider_free(dumb);
    report("a box buried under the surface, no triangle near: one contact up to the surface",
           n == 1 && out[0].m.normal[1] == 1 && fabs(out[0].m.points[0].separation + (ground - 17.3)) < 1e-4);
    for (int i = 0; i < 3; i++) {
        q_collider_free(boxes[i]);
        q_collider_free(others[i]);
    }
    q_terrain_physics_destroy(tp);
    q_terrain_destroy(t);
}

static void test_shapecast_shape(void)
{
    char err[128];
    q_collider *a = q_collider_box((double[3]){0.5, 0.3, 0.4}, err, sizeof err), *b = random_hull(2);
    int bad = 0;
    for (int i = 0; i < 40; i++) {
        q_xform from = random_xform(1), tx = random_xform(1);
        from.p[0] -= 4;
        double delta[3] = {8, (drand() - 0.5) * 2, (drand() - 0.5) * 2};
        q_cast_hit h;
        bool got = q_shapecast_shape(a, &from, delta, b, &tx, &h);
        double first = -1;
        for (int k = 0; k <= 4000 && first < 0; k++) {
            q_xform x = from;
            for (int c = 0; c < 3; c++)
                x.p[c] += delta[c] * k / 4000.0;
            double pa[3], pb[3];
            if (q_gjk_distance(a, &x, b, &tx, pa, pb) <= 0)
                first = k / 4000.0;
        }
        if (first < 0 ? got : !(got && h.fraction <= first + 1e-9 && h.fraction >= first - 1.0 / 4000 - 1e-6))
            bad++;
    }
    report("box shape cast against a hull: fraction matches sampled first overlap", bad == 0);
    if (bad)
        printf("# %d bad casts\n", bad);
    q_collider_free(a);
    q_collider_free(b);
}

/* Random pairs of every kind: finite unit normals, at most 4 points, a
 * manifold whenever GJK/EPA says they overlap, none for rounded pairs that
 * GJK puts beyond the margin, and the deepest separation equal to the
 * GJK/EPA distance. */
static void test_pairs(void)
{
    char err[128];
    q_collider *shapes[5] = {q_collider_sphere(0.4, err, sizeof err),
                             q_collider_box((double[3]){0.5, 0.3, 0.4}, err, sizeof err),
                             q_collider_capsule(0.25, 0.4, err, sizeof err), random_hull(1.2), random_hull(1.0)};
    int bad_form = 0, missing = 0, extra = 0, depth_bad = 0, compared = 0;
    double worst = 0;
    for (int i = 0; i < 20000; i++) {
        int ia = i % 5, ib = (i / 5) % 5;
        q_xform a = random_xform(0.2), b = random_xform(1.6);
        q_manifold m[2];
        int n = q_collide_shapes(shapes[ia], &a, shapes[ib], &b, 0.05, m, 2);
        double pa[3], pb[3], d = q_gjk_distance(shapes[ia], &a, shapes[ib], &b, pa, pb);
        double ms = INFINITY;
        for (int j = 0; j < n; j++) {
            double l = sqrt(m[j].normal[0] * m[j].normal[0] + m[j].normal[1] * m[j].normal[1] +
                            m[j].normal[2] * m[j].normal[2]);
            if (!(fabs(l - 1) < 1e-9) || m[j].count > 4 || m[j].count == 0)
                bad_form++;
            for (uint32_t k = 0; k < m[j].count; k++) {
                if (!isfinite(m[j].points[k].separation) || !isfinite(m[j].points[k].position[0]))
                    bad_form++;
                ms = fmin(ms, m[j].points[k].separation);
            }
        }
        if (d < -1e-3 && n == 0) {
            missing++;
            static double su[2000][3];
            sample_surface(shapes[ia], &a, su, 2000);
            int inside = 0;
            for (int k = 0; k < 2000; k++)
                inside += q_collider_contains(shapes[ib], &b, su[k]);
            q_manifold mx[2];
            int n2 = q_collide_shapes(shapes[ia], &a, shapes[ib], &b, 10, mx, 2);
            printf("# missing %d-%d d %.4f: %d of 2000 surface samples of A inside B; margin 10: n %d sep %.4f\n", ia, ib, d, inside, n2, n2 ? mx[0].points[0].separation : 0);
        }
        bool rounded = ia % 2 == 0 && ib % 2 == 0 && ia != 4 && ib != 4;
        if (rounded && d > 0.05 + 1e-9 && n > 0)
            extra++;
        if (n > 0 && d < 0.04) {
            compared++;
            double e = fabs(ms - d);
            worst = fmax(worst, e);
            if (e > 2e-3) {
                depth_bad++;
                double mtd = INFINITY, nb[3] = {0};
                for (int k = 0; k < 200000; k++) {
                    double L[3] = {drand() - 0.5, drand() - 0.5, drand() - 0.5}, nl[3], sa_[3], sb_[3];
                    double l = sqrt(L[0] * L[0] + L[1] * L[1] + L[2] * L[2]);
                    for (int c = 0; c < 3; c++)
                        L[c] /= l, nl[c] = -L[c];
                    q_collider_support(shapes[ia], &a, L, sa_);
                    q_collider_support(shapes[ib], &b, nl, sb_);
                    double v = (sa_[0] - sb_[0]) * L[0] + (sa_[1] - sb_[1]) * L[1] + (sa_[2] - sb_[2]) * L[2];
                    if (v < mtd) {
                        mtd = v;
                        memcpy(nb, L, sizeof nb);
                    }
                }
                printf("# off %d-%d d %.4f sep %.4f n %d count %u; sampled MTD %.4f along %.3f %.3f %.3f, normal %.3f %.3f %.3f\n", ia, ib, d, ms, n, m[0].count, mtd, nb[0], nb[1], nb[2], m[0].normal[0], m[0].normal[1], m[0].normal[2]);
            }
        }
    }
    report("random pairs: unit normals, 1..4 finite points", bad_form == 0);
    report("random pairs: a manifold whenever GJK/EPA finds an overlap", missing == 0);
    report("random rounded pairs: nothing beyond the margin", extra == 0);
    report("random pairs: deepest separation equals the GJK/EPA distance (within 2e-3)", depth_bad == 0);
    printf("# %d compared, %d off, worst %.3g, %d missing\n", compared, depth_bad, worst, missing);
    for (int i = 0; i < 5; i++)
        q_collider_free(shapes[i]);
}

/* Degenerate triangles (the mesher can emit a quad half with two equal
 * corners): a sphere or capsule against them gets the distance to what is
 * left of the triangle (a segment or a point), never NaN. Answers: the
 * closed-form distance from the core to that segment or point. */
static void test_degenerate_triangles(void)
{
    static const double tris[4][3][3] = {
        {{0, 0, 0}, {0, 0, 0}, {1, 0, 0}},     /* a = b */
        {{0, 0, 0}, {1, 0, 0}, {1, 0, 0}},     /* b = c */
        {{0, 0, 0}, {0.5, 0, 0}, {1, 0, 0}},   /* collinear */
        {{0.5, 0, 0}, {0.5, 0, 0}, {0.5, 0, 0}} /* a point */
    };
    char err[128];
    q_collider *sphere = q_collider_sphere(0.5, err, sizeof err);
    q_collider *capsule = q_collider_capsule(0.3, 0.4, err, sizeof err);
    int ok = sphere && capsule, cases = 0;
    for (int t = 0; t < 4 && ok; t++) {
        q_poly tp;
        q_poly_from_triangle(&tp, tris[t][0], tris[t][1], tris[t][2]);
        for (int k = 0; k < 2 && ok; k++) {
            /* centres above the segment's (or point's) middle, x = 0.5, and off its end, x = 1.4 */
            double x = k ? 1.4 : 0.5, nearest = t == 3 ? 0.5 : fmin(x, 1.0), h = 0.3;
            for (int shape = 0; shape < 2 && ok; shape++) {
                const q_collider *s = shape ? capsule : sphere;
                double lift = shape ? 0.4 : 0; /* the capsule stands: its lower core end at y = h */
                q_xform at = {{x, h + lift, 0}, {0, 0, 0, 1}};
                q_convex core;
                q_convex_from_collider(&core, s, &at);
                q_manifold m;
                double radius = shape ? 0.3 : 0.5, dx = x - nearest, want = sqrt(dx * dx + h * h) - radius;
                int hit = q_core_poly(&tp, &core, 1.0, Q_NP_ONE_SIDED, &m);
                ok = hit && m.count >= 1 && isfinite(m.normal[0]) && isfinite(m.normal[1]) && isfinite(m.normal[2]);
                double deepest = INFINITY; /* a standing capsule may add its upper end's point */
                for (uint32_t j = 0; ok && j < m.count; j++) {
                    ok = isfinite(m.points[j].position[0]) && isfinite(m.points[j].position[1]) &&
                         isfinite(m.points[j].position[2]) && isfinite(m.points[j].separation);
                    deepest = fmin(deepest, m.points[j].separation);
                }
                ok = ok && fabs(deepest - want) < 1e-9;
                if (!ok)
                    printf("# triangle %d, centre x %.1f, %s: hit %d, count %u, deepest separation %g (want %g)\n", t,
                           x, shape ? "capsule" : "sphere", hit, hit ? m.count : 0, deepest, want);
                cases++;
            }
        }
    }
    /* boxes (q_poly_poly) over the same triangles: bottom face 0.3 above them */
    double half[3] = {0.5, 0.5, 0.5};
    q_collider *box = q_collider_box(half, err, sizeof err);
    int box_ok = box != NULL;
    for (int t = 0; t < 4 && box_ok; t++) {
        q_poly tp, body;
        q_poly_from_triangle(&tp, tris[t][0], tris[t][1], tris[t][2]);
        q_xform at = {{0.6, 0.8, 0.1}, {0, 0, 0, 1}};
        q_poly_from_collider(&body, box, &at);
        q_manifold m;
        int hit = q_poly_poly(&tp, &body, 1.0, Q_NP_ONE_SIDED, &m);
        double deepest = INFINITY;
        box_ok = hit && m.count >= 1 && isfinite(m.normal[0]) && isfinite(m.normal[1]) && isfinite(m.normal[2]);
        for (uint32_t j = 0; box_ok && j < m.count; j++) {
            box_ok = isfinite(m.points[j].position[0]) && isfinite(m.points[j].separation);
            deepest = fmin(deepest, m.points[j].separation);
        }
        box_ok = box_ok && fabs(deepest - 0.3) < 1e-9;
        if (!box_ok)
            printf("# triangle %d, box: hit %d, count %u, deepest separation %g (want 0.3)\n", t, hit, hit ? m.count : 0,
                   deepest);
    }
    q_collider_free(sphere);
    q_collider_free(capsule);
    q_collider_free(box);
    report("spheres and capsules against degenerate triangles: finite, the distance to the segment or point", ok && cases == 16);
    report("boxes against degenerate triangles: finite, the distance to the segment or point", box_ok);
}

int main(void)
{
    size_t live = q_alloc_live_bytes();
    test_mass();
    test_gjk();
    test_box_box();
    test_pairs();
    test_terrain();
    test_sliding();
    test_shapecast_shape();
    test_degenerate_triangles();
    report("no leaks", q_alloc_live_bytes() == live);
    printf("1..%d\n", test_no);
    return failures ? 1 : 0;
}
