/* Convex hulls (engine/geom/quickhull.h) side by side in one run with qhull
 * 2020.2 (libqhull_r, PEERS.md), one thread, same points.
 *
 * Points: n = 1k, 10k, 100k, uniform in the cube [-1, 1]^3 and uniform on
 * the unit sphere (every point a hull vertex up to qhull's merging), from a
 * fixed-seed xorshift generator.
 * Ours: q_hull with the default quantization distance (1e-6 of the
 * diagonal) into caller-owned arrays sized by q_hull_bound (allocated once,
 * outside the timing). qhull: qh_new_qhull with "qhull Qt" (triangulated
 * output, like ours), then qh_freeqhull + qh_memfreeshort, all timed (qhull
 * builds its own structures per call as q_hull does).
 * Figure: median of REPS runs, the two alternating. Vertex counts and
 * volumes of both are printed to show they computed the same hull.
 */
extern "C" {
#include "bench.h"
#include "geom/quickhull.h"
#include "mesh/mesh.h"
#include <libqhull_r/qhull_ra.h>
}

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

static std::vector<double> cube_points(size_t n)
{
    std::vector<double> p(3 * n);
    for (double &x : p)
        x = 2 * rnd() - 1;
    return p;
}

static std::vector<double> sphere_points(size_t n)
{
    std::vector<double> p(3 * n);
    for (size_t i = 0; i < n; i++) {
        double z = 2 * rnd() - 1, a = 2 * M_PI * rnd(), r = std::sqrt(1 - z * z);
        p[3 * i] = r * std::cos(a);
        p[3 * i + 1] = r * std::sin(a);
        p[3 * i + 2] = z;
    }
    return p;
}

struct qhull_out {
    int vertices;
    double volume;
};

static qhull_out run_qhull(std::vector<double> &p, bool measure)
{
    qhT qh_qh;
    qhT *qh = &qh_qh;
    qh_zero(qh, stderr);
    char flags[] = "qhull Qt";
    int code = qh_new_qhull(qh, 3, (int)(p.size() / 3), p.data(), False, flags, NULL, stderr);
    qhull_out o = {0, 0};
    if (code == 0) {
        o.vertices = qh->num_vertices;
        if (measure) {
            qh_getarea(qh, qh->facet_list);
            o.volume = qh->totvol;
        }
    }
    qh_freeqhull(qh, !qh_ALL);
    int curlong, totlong;
    qh_memfreeshort(qh, &curlong, &totlong);
    if (code != 0) {
        std::fprintf(stderr, "qhull failed (%d)\n", code);
        std::exit(1);
    }
    return o;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "out";
    bench_begin("hull", dir);
    bench_section("Convex hull: q_hull vs qhull (libqhull_r, \"qhull Qt\")");
    const size_t sizes[] = {1000, 10000, 100000};
    for (int kind = 0; kind < 2; kind++)
        for (size_t n : sizes) {
            std::vector<double> p = kind ? sphere_points(n) : cube_points(n);
            std::vector<uint32_t> verts(n), idx(q_hull_bound(n));
            int reps = n >= 100000 ? 5 : 11;
            std::vector<double> to, tq;
            q_hull_info info = {};
            for (int r = 0; r < reps; r++) {
                char err[256];
                double t0 = bench_now();
                q_status st = q_hull(p.data(), n, NULL, verts.data(), idx.data(), &info, err, sizeof err);
                to.push_back(bench_now() - t0);
                bench_check(st, "q_hull", err);
                t0 = bench_now();
                run_qhull(p, false);
                tq.push_back(bench_now() - t0);
            }
            qhull_out qo = run_qhull(p, true);
            /* our volume, by the divergence theorem over our triangles */
            double vol = 0;
            for (size_t t = 0; t + 2 < info.index_count; t += 3) {
                const double *a = &p[3 * verts[idx[t]]], *b = &p[3 * verts[idx[t + 1]]], *c = &p[3 * verts[idx[t + 2]]];
                vol += (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
                        a[2] * (b[0] * c[1] - b[1] * c[0])) / 6;
            }
            char what[96];
            std::snprintf(what, sizeof what, "%s, %zu points", kind ? "sphere" : "cube", n);
            bench_row(what, bench_median(to.data(), reps), to.data(), reps, "qhull", bench_median(tq.data(), reps),
                      tq.data(), reps, "s", 1e-3, "ms");
            bench_note("%s: vertices ours %zu / qhull %d; volume ours %.9f / qhull %.9f", what, info.vertex_count,
                       qo.vertices, vol, qo.volume);
        }
    bench_end();
    return 0;
}
