/* Convex hull invariants on random, spherical, gridded and degenerate point
 * sets: closed and welded, every triangle facing out, every input point
 * inside or within s of every face plane, flat and lower-dimensional shapes
 * detected; and the size limits of mesh import, which Lua cannot set. The
 * comparison with qhull is in spec/hull_spec.lua. TAP output; pass --time
 * to print hull times for 1k/10k/100k points in a cube and on a sphere. */
#include "core/alloc.h"
#include "geom/quickhull.h"
#include "geom/quickhull_lean.h"
#include "mesh/import.h"
#include "mesh/mesh.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static double gauss(void)
{
    double u = drand() + 1e-300, v = drand();
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* Largest signed distance of any point above any triangle plane of m
 * (relative to the triangle, in double), the number of triangles facing
 * towards the hull's centroid, and the smallest triangle area. */
typedef struct check {
    double worst_out;
    int inverted;
    double min_area;
} check;

/* Double positions of the hull's vertices (set by hull()), so that the
 * checks measure the algorithm and not the rounding of positions to float. */
static double *exact;
static size_t exact_cap;

static check check_hull(const q_mesh *m, const double *pts, size_t n, size_t stride)
{
    check c = {-INFINITY, 0, INFINITY};
    double cen[3] = {0, 0, 0};
    for (size_t i = 0; i < m->vertex_count; i++)
        for (int a = 0; a < 3; a++)
            cen[a] += exact[3 * i + a] / (double)m->vertex_count;
    for (size_t t = 0; t < m->index_count / 3; t++) {
        double p[3][3];
        for (int k = 0; k < 3; k++)
            for (int a = 0; a < 3; a++)
                p[k][a] = exact[3 * m->indices[3 * t + k] + a];
        double e1[3], e2[3], nn[3];
        for (int a = 0; a < 3; a++) {
            e1[a] = p[1][a] - p[0][a];
            e2[a] = p[2][a] - p[0][a];
        }
        nn[0] = e1[1] * e2[2] - e1[2] * e2[1];
        nn[1] = e1[2] * e2[0] - e1[0] * e2[2];
        nn[2] = e1[0] * e2[1] - e1[1] * e2[0];
        double l = sqrt(nn[0] * nn[0] + nn[1] * nn[1] + nn[2] * nn[2]);
        c.min_area = fmin(c.min_area, l / 2);
        if (l == 0) {
            c.inverted++;
            continue;
        }
        for (int a = 0; a < 3; a++)
            nn[a] /= l;
        double d0 = nn[0] * p[0][0] + nn[1] * p[0][1] + nn[2] * p[0][2];
        if (nn[0] * cen[0] + nn[1] * cen[1] + nn[2] * cen[2] - d0 >= 0)
            c.inverted++;
        for (size_t i = 0; i < n; i += stride) {
            const double *q = pts + 3 * i;
            double d = nn[0] * q[0] + nn[1] * q[1] + nn[2] * q[2] - d0;
            c.worst_out = fmax(c.worst_out, d);
        }
    }
    return c;
}

static q_mesh *hull(const double *pts, size_t n, double eps, q_hull_info *info)
{
    q_hull_def def = q_default_hull_def();
    def.epsilon = eps;
    q_status st;
    char err[128];
    q_hull_info local;
    info = info ? info : &local;
    q_mesh *m = q_hull_mesh(pts, n, &def, info, &st, err, sizeof err);
    if (!m) {
        printf("# hull failed: %s\n", err);
        return NULL;
    }
    /* Recover the input index of each vertex from q_hull itself. */
    uint32_t *verts = malloc(n * sizeof *verts), *idx = malloc((q_hull_bound(n) + 1) * sizeof *idx);
    q_hull_info again;
    q_hull(pts, n, &def, verts, idx, &again, err, sizeof err);
    if (exact_cap < again.vertex_count) {
        free(exact);
        exact_cap = again.vertex_count;
        exact = malloc(3 * exact_cap * sizeof *exact);
    }
    for (size_t i = 0; i < again.vertex_count; i++)
        memcpy(exact + 3 * i, pts + 3 * (size_t)verts[i], 3 * sizeof(double));
    free(verts);
    free(idx);
    return m;
}

static void solid_case(const char *name, const double *pts, size_t n, size_t expect_vertices)
{
    q_hull_info info;
    q_mesh *m = hull(pts, n, 0, &info);
    char label[160];
    if (!m) {
        snprintf(label, sizeof label, "%s: hull built", name);
        report(label, 0);
        return;
    }
    size_t stride = n > 4000 ? n / 4000 : 1;
    check c = check_hull(m, pts, n, stride);
    snprintf(label, sizeof label, "%s: solid, closed, %zu vertices", name, m->vertex_count);
    report(label, info.shape == Q_HULL_SOLID && q_mesh_is_closed(m) && info.skipped == 0 &&
                      (expect_vertices == 0 || m->vertex_count == expect_vertices));
    snprintf(label, sizeof label, "%s: no inverted face, volume > 0", name);
    report(label, c.inverted == 0 && q_mesh_volume(m) > 0);
    snprintf(label, sizeof label, "%s: every point within s (%.3g) of the hull (worst %.3g)", name, info.epsilon,
             c.worst_out);
    report(label, c.worst_out <= info.epsilon);
    if (c.inverted || c.worst_out > info.epsilon || !q_mesh_is_closed(m))
        printf("# %s: %zu tris, inverted %d, worst %.3g, min area %.3g skipped %zu\n", name, m->index_count / 3,
               c.inverted, c.worst_out, c.min_area, info.skipped);
    q_mesh_destroy(m);
}

static double *alloc_points(size_t n)
{
    return malloc(3 * n * sizeof(double));
}

static void test_solids(void)
{
    size_t n = 3000;
    double *p = alloc_points(200000);
    for (size_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++)
            p[3 * i + a] = drand() * 2 - 1;
    solid_case("random cube", p, n, 0);

    for (size_t i = 0; i < n; i++) {
        double g[3] = {gauss(), gauss(), gauss()};
        double l = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
        for (int a = 0; a < 3; a++)
            p[3 * i + a] = 5 * g[a] / l;
    }
    solid_case("sphere", p, n, n);

    /* A cube's grid: 11^3 points, only 8 corners are vertices. */
    size_t k = 0;
    for (int x = 0; x <= 10; x++)
        for (int y = 0; y <= 10; y++)
            for (int z = 0; z <= 10; z++) {
                p[3 * k] = x * 0.1;
                p[3 * k + 1] = y * 0.1;
                p[3 * k + 2] = z * 0.1;
                k++;
            }
    solid_case("cube grid", p, k, 8);

    /* The same grid's surface, each point moved up to s/4 off its face. */
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        double *q = p + 3 * i;
        int on = 0;
        for (int a = 0; a < 3; a++)
            on |= q[a] < 1e-9 || q[a] > 1 - 1e-9;
        if (!on)
            continue;
        for (int a = 0; a < 3; a++)
            p[3 * m + a] = q[a] + (drand() - 0.5) * 0.5e-6 * 1.7320508 * 0.999;
        m++;
    }
    solid_case("noisy cube surface", p, m, 0);

    /* Duplicates: every point of a random set four times. */
    for (size_t i = 0; i < 500; i++)
        for (int a = 0; a < 3; a++)
            p[3 * i + a] = drand();
    for (size_t i = 500; i < 2000; i++)
        memcpy(p + 3 * i, p + 3 * (i % 500), 3 * sizeof(double));
    solid_case("duplicates", p, 2000, 0);

    /* Scales from 1e-3 to 1e3 in random directions. */
    for (size_t i = 0; i < n; i++) {
        double g[3] = {gauss(), gauss(), gauss()};
        double r = pow(10, drand() * 6 - 3);
        for (int a = 0; a < 3; a++)
            p[3 * i + a] = r * g[a];
    }
    solid_case("scales 1e-3..1e3", p, n, 0);

    /* Far from the origin. */
    for (size_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++)
            p[3 * i + a] = 1000 + drand();
    solid_case("offset 1000", p, n, 0);

    /* Cylinder: two coplanar circles of 500 points. */
    for (size_t i = 0; i < 1000; i++) {
        double t = 6.283185307179586 * (double)(i % 500) / 500;
        p[3 * i] = cos(t);
        p[3 * i + 1] = sin(t);
        p[3 * i + 2] = i < 500 ? 0 : 0.3;
    }
    solid_case("cylinder", p, 1000, 1000);

    /* Points on a few planes: octahedron faces densely sampled. */
    for (size_t i = 0; i < n; i++) {
        double g[3] = {drand(), drand(), drand()};
        double sum = g[0] + g[1] + g[2];
        for (int a = 0; a < 3; a++)
            p[3 * i + a] = (drand() < 0.5 ? -1 : 1) * g[a] / sum;
    }
    solid_case("octahedron faces", p, n, 0);
    free(p);
}

static void test_degenerate(void)
{
    double p[3 * 400];
    q_hull_info info;
    char err[128];
    q_status st;

    for (int i = 0; i < 50; i++)
        p[3 * i] = p[3 * i + 1] = p[3 * i + 2] = 2.5;
    q_mesh *m = hull(p, 50, 0, &info);
    report("equal points: one vertex", m && info.shape == Q_HULL_POINT && m->vertex_count == 1 && m->index_count == 0);
    q_mesh_destroy(m);

    for (int i = 0; i < 50; i++)
        for (int a = 0; a < 3; a++)
            p[3 * i + a] = (a + 1) * (double)(i * 37 % 50) / 7.0;
    m = hull(p, 50, 0, &info);
    report("collinear points: a segment of 2 vertices, no triangles",
           m && info.shape == Q_HULL_SEGMENT && m->vertex_count == 2 && m->index_count == 0 &&
               fabs(m->positions[0] - m->positions[3]) > 6.9);
    q_mesh_destroy(m);

    /* A tilted plane: a square grid with random points inside. */
    double u[3] = {0.6, 0.8, 0}, v[3] = {0, 0, 1}, o[3] = {3, -2, 7};
    int k = 0;
    for (int i = 0; i < 200; i++) {
        double a = i < 4 ? (i & 1) : drand(), b = i < 4 ? (i >> 1) : drand();
        for (int c = 0; c < 3; c++)
            p[3 * k + c] = o[c] + a * u[c] + b * v[c];
        k++;
    }
    m = hull(p, (size_t)k, 0, &info);
    report("coplanar points: a closed double-sided square, volume 0",
           m && info.shape == Q_HULL_POLYGON && m->vertex_count == 4 && m->index_count == 12 && q_mesh_is_closed(m) &&
               fabs(q_mesh_volume(m)) < 1e-6 && fabs(q_mesh_area(m) - 2) < 1e-5);
    q_mesh_destroy(m);

    /* Within s/2 of a plane tilted against the axes. */
    for (int i = 0; i < 300; i++) {
        double a = drand() * 2 - 1, b = drand() * 2 - 1, h = (drand() - 0.5) * 1e-6;
        for (int c = 0; c < 3; c++)
            p[3 * i + c] = a * u[c] + b * v[c] + h * (c == 0 ? 0.8 : c == 1 ? -0.6 : 0);
    }
    m = hull(p, 300, 0, &info);
    report("near-coplanar points: a polygon", m && info.shape == Q_HULL_POLYGON && q_mesh_is_closed(m));
    q_mesh_destroy(m);

    m = q_hull_mesh(p, 0, NULL, NULL, &st, err, sizeof err);
    report("no points: an argument error", !m && st == Q_ERR_ARGUMENT);
    p[4] = NAN;
    m = q_hull_mesh(p, 3, NULL, NULL, &st, err, sizeof err);
    report("NaN: an argument error naming the point", !m && st == Q_ERR_ARGUMENT && strstr(err, "point 2"));
    p[4] = INFINITY;
    m = q_hull_mesh(p, 3, NULL, NULL, &st, err, sizeof err);
    report("inf: an argument error", !m && st == Q_ERR_ARGUMENT);

    /* Tetrahedra of every small size: the hull's own minimum case. */
    double t[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    m = hull(t, 4, 0, &info);
    report("tetrahedron: 4 vertices, 4 triangles, volume 1/6",
           m && m->vertex_count == 4 && m->index_count == 12 && fabs(q_mesh_volume(m) - 1.0 / 6) < 1e-7);
    q_mesh_destroy(m);
}

/* Many small random sets with heavy duplication and near-degeneracy. */
static void test_fuzz(void)
{
    int bad = 0, skipped = 0;
    double p[3 * 64];
    for (int round = 0; round < 3000; round++) {
        int n = 4 + (int)(drand() * 60);
        int kind = round % 4;
        for (int i = 0; i < n; i++) {
            for (int a = 0; a < 3; a++)
                p[3 * i + a] = floor(drand() * (kind == 0 ? 3 : 6)); /* small integer grids */
            if (kind == 2)
                p[3 * i + 2] = p[3 * i] * 1e-7; /* nearly flat */
            if (kind == 3 && i > 3)
                for (int a = 0; a < 3; a++)
                    p[3 * i + a] = p[3 * (i % 4) + a] + (drand() - 0.5) * 2e-6; /* clusters of ~s */
        }
        q_hull_info info;
        q_mesh *m = hull(p, (size_t)n, 0, &info);
        if (!m) {
            bad++;
            continue;
        }
        skipped += info.skipped > 0;
        if (info.shape == Q_HULL_SOLID || info.shape == Q_HULL_POLYGON) {
            check c = check_hull(m, p, (size_t)n, 1);
            bool ok = q_mesh_is_closed(m) && c.worst_out <= info.epsilon &&
                      (info.shape == Q_HULL_POLYGON || (c.inverted == 0 && q_mesh_volume(m) > 0));
            if (!ok && bad < 3)
                printf("# fuzz round %d kind %d: shape %d closed %d worst %.3g inverted %d\n", round, kind, info.shape,
                       q_mesh_is_closed(m), c.worst_out, c.inverted);
            bad += !ok;
        }
        q_mesh_destroy(m);
    }
    report("3000 small degenerate sets: closed, outward, containing every point", bad == 0);
    printf("# pinched horizons skipped in %d sets\n", skipped);
}

/* The lean build (q_hull_def.lean, quickhull_lean.c) called directly on
 * small sets like HACD's (patches of curved surfaces, thin slabs a few s
 * thick, random clouds, clusters of ~s): it must succeed on nearly all of
 * them (else the fast path is dead code), and what it returns must be a
 * closed, outward hull holding every point within 3s (s for points not
 * within 2s of a vertex is checked inside it). Its vertices are input
 * points, so that is the convex hull within 3s; the full build's volume
 * must agree within the lean hull's area times 3s (this caught a full build
 * that flattened a set of four clusters 3s wide onto one plane). */
static void test_lean(void)
{
    int tried = 0, built = 0, bad = 0;
    double p[3 * Q_HULL_LEAN_MAX];
    const double s = 0.1; /* HACD's scale: a 1000 cube, connect_dist 0.1 */
    for (int round = 0; round < 4000; round++) {
        int n = 5 + (int)(drand() * (round % 8 == 0 ? Q_HULL_LEAN_MAX - 5 : 20));
        int kind = round % 5;
        double R = 50 + 400 * drand(), cap = 0.05 + 0.5 * drand();
        for (int i = 0; i < n; i++) {
            double *q = p + 3 * i;
            if (kind == 0) { /* a cap of a sphere: points of a curved mesh */
                double th = cap * sqrt(drand()), ph = 6.283185307179586 * drand();
                q[0] = R * sin(th) * cos(ph);
                q[1] = R * sin(th) * sin(ph);
                q[2] = R * cos(th);
            } else if (kind == 1) { /* a slab 2 to 10 s thick */
                q[0] = R * drand();
                q[1] = R * drand();
                q[2] = s * (2 + 8 * (round % 7) / 6.0) * drand();
            } else if (kind == 2) { /* a cloud */
                for (int a = 0; a < 3; a++)
                    q[a] = R * gauss();
            } else if (kind == 3) { /* clusters a few s wide */
                for (int a = 0; a < 3; a++)
                    q[a] = i < 4 ? R * drand() : p[3 * (i % 4) + a] + (drand() - 0.5) * 3 * s;
            } else { /* grid points: many coplanar and collinear */
                for (int a = 0; a < 3; a++)
                    q[a] = floor(drand() * 4) * R / 4;
            }
        }
        /* centre, and a tetrahedron of extreme points like q_hull's */
        double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (int i = 0; i < n; i++)
            for (int a = 0; a < 3; a++) {
                lo[a] = fmin(lo[a], p[3 * i + a]);
                hi[a] = fmax(hi[a], p[3 * i + a]);
            }
        for (int i = 0; i < n; i++)
            for (int a = 0; a < 3; a++)
                p[3 * i + a] -= 0.5 * (lo[a] + hi[a]);
        uint32_t t[4] = {0, 0, 0, 0};
        double best = -1;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) {
                double d2 = 0;
                for (int a = 0; a < 3; a++)
                    d2 += (p[3 * i + a] - p[3 * j + a]) * (p[3 * i + a] - p[3 * j + a]);
                if (d2 > best) {
                    best = d2;
                    t[0] = (uint32_t)i;
                    t[1] = (uint32_t)j;
                }
            }
        double e1[3], nn[3], ln = -1;
        for (int a = 0; a < 3; a++)
            e1[a] = p[3 * t[1] + a] - p[3 * t[0] + a];
        for (int i = 0; i < n; i++) {
            double e2[3], x[3];
            for (int a = 0; a < 3; a++)
                e2[a] = p[3 * i + a] - p[3 * t[0] + a];
            x[0] = e1[1] * e2[2] - e1[2] * e2[1];
            x[1] = e1[2] * e2[0] - e1[0] * e2[2];
            x[2] = e1[0] * e2[1] - e1[1] * e2[0];
            double l = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
            if (l > ln) {
                ln = l;
                t[2] = (uint32_t)i;
                memcpy(nn, x, sizeof nn);
            }
        }
        double hd = -1;
        for (int i = 0; i < n; i++) {
            double h = 0;
            for (int a = 0; a < 3; a++)
                h += nn[a] * (p[3 * i + a] - p[3 * t[0] + a]);
            if (fabs(h) / ln > hd) {
                hd = fabs(h) / ln;
                t[3] = (uint32_t)i;
            }
        }
        /* only solid sets (the flat checks come first in q_hull) */
        if (ln / sqrt(best) <= 4 * s || hd <= 4 * s)
            continue;
        tried++;
        uint32_t verts[Q_HULL_LEAN_MAX], idx[6 * Q_HULL_LEAN_MAX];
        q_hull_info info;
        if (!q_hull_lean(p, (size_t)n, s, t, verts, idx, &info))
            continue;
        built++;
        q_mesh *m = q_mesh_create(info.vertex_count, info.index_count, false, false);
        if (exact_cap < info.vertex_count) {
            free(exact);
            exact_cap = info.vertex_count;
            exact = malloc(3 * exact_cap * sizeof *exact);
        }
        for (size_t i = 0; i < info.vertex_count; i++)
            for (int a = 0; a < 3; a++) {
                exact[3 * i + a] = p[3 * (size_t)verts[i] + a];
                m->positions[3 * i + a] = (float)exact[3 * i + a];
            }
        memcpy(m->indices, idx, info.index_count * sizeof *idx);
        check c = check_hull(m, p, (size_t)n, 1);
        double vol = 0, area = 0;
        for (size_t k = 0; k < info.index_count; k += 3) {
            const double *A = exact + 3 * idx[k], *B = exact + 3 * idx[k + 1], *C = exact + 3 * idx[k + 2];
            double u[3], w[3], x[3];
            for (int a = 0; a < 3; a++) {
                u[a] = B[a] - A[a];
                w[a] = C[a] - A[a];
            }
            x[0] = u[1] * w[2] - u[2] * w[1];
            x[1] = u[2] * w[0] - u[0] * w[2];
            x[2] = u[0] * w[1] - u[1] * w[0];
            vol += (A[0] * x[0] + A[1] * x[1] + A[2] * x[2]) / 6;
            area += sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]) / 2;
        }
        q_hull_def def = q_default_hull_def();
        def.epsilon = s;
        q_hull_info full_info;
        q_status st;
        char err[128];
        q_mesh *full = q_hull_mesh(p, (size_t)n, &def, &full_info, &st, err, sizeof err);
        double full_vol = full ? q_mesh_volume(full) : NAN;
        q_mesh_destroy(full);
        bool ok = fabs(vol - full_vol) <= area * 3 * s + 1e-6 * fabs(vol) && info.shape == Q_HULL_SOLID && info.index_count == 6 * info.vertex_count - 12 &&
                  q_mesh_is_closed(m) && c.inverted == 0 && c.worst_out <= 3 * s;
        if (!ok && bad < 3)
            printf("# lean round %d kind %d n %d: closed %d inverted %d worst %.3g volume %.9g full build %.9g\n",
                   round, kind, n, q_mesh_is_closed(m), c.inverted, c.worst_out, vol, full_vol);
        bad += !ok;
        q_mesh_destroy(m);
    }
    char label[160];
    snprintf(label, sizeof label, "lean build: %d of %d small solid sets built (at least 95%%)", built, tried);
    report(label, tried > 2000 && built >= 0.95 * tried);
    report("lean build: closed, outward, every point within 3s, volume as the full build's", bad == 0);
}

static void test_import_limits(void)
{
    const char *box = "/usr/share/assimp/models/OBJ/box.obj";
    q_import_def def = q_default_import_def();
    q_status st;
    char err[256];
    q_mesh *m = q_mesh_import(box, &def, &st, err, sizeof err);
    report("import: box.obj loads with the defaults", m && m->vertex_count == 8 && m->index_count == 36);
    q_mesh_destroy(m);
    def.max_file_bytes = 100;
    m = q_mesh_import(box, &def, &st, err, sizeof err);
    report("import: a file over max_file_bytes is refused", !m && st == Q_ERR_TOO_LARGE && strstr(err, "limit"));
    def = q_default_import_def();
    def.max_vertices = 7;
    m = q_mesh_import(box, &def, &st, err, sizeof err);
    report("import: more than max_vertices is refused", !m && st == Q_ERR_TOO_LARGE);
    def = q_default_import_def();
    def.merge = -1;
    m = q_mesh_import(box, &def, &st, err, sizeof err);
    report("import: a negative merge distance is an argument error", !m && st == Q_ERR_ARGUMENT);
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void timing(void)
{
    size_t sizes[3] = {1000, 10000, 100000};
    double *p = alloc_points(100000);
    for (int shape = 0; shape < 2; shape++)
        for (int s = 0; s < 3; s++) {
            size_t n = sizes[s];
            for (size_t i = 0; i < n; i++) {
                double g[3] = {gauss(), gauss(), gauss()};
                double l = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
                for (int a = 0; a < 3; a++)
                    p[3 * i + a] = shape == 0 ? drand() : g[a] / l;
            }
            int reps = n < 10000 ? 50 : n < 100000 ? 10 : 3;
            double best = INFINITY;
            uint32_t *verts = malloc(n * sizeof *verts), *idx = malloc(q_hull_bound(n) * sizeof *idx);
            q_hull_info info;
            char err[128];
            for (int r = 0; r < reps; r++) {
                double t0 = seconds();
                q_hull(p, n, NULL, verts, idx, &info, err, sizeof err);
                best = fmin(best, seconds() - t0);
            }
            size_t nv = info.vertex_count;
            free(verts);
            free(idx);
            printf("# %s %6zu points: %8.3f ms (%zu vertices)\n", shape ? "sphere" : "cube  ", n, best * 1e3, nv);
        }
    free(p);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--time") == 0) {
        timing();
        return 0;
    }
    test_solids();
    test_degenerate();
    test_fuzz();
    test_lean();
    test_import_limits();
    report("no engine memory left allocated", q_alloc_live_bytes() == 0);
    printf("1..%d\n", test_no);
    return failures ? 1 : 0;
}
