/* Voronoi cells (engine/geom/voronoi.h) side by side in one run with voro++
 * 0.4.6 (voro++-dev library, PEERS.md), one thread, same sites; and the
 * end-to-end shatter of a ~2k-triangle sphere into 32 pieces
 * (engine/geom/fracture.h: sites, cells, clipping, fragment meshes).
 *
 * Sites: 50, 1,000 and 10,000 uniform in the unit cube from a fixed-seed
 * xorshift generator. Ours: q_voronoi_compute (cells with vertices, faces,
 * neighbours and volumes, allocated for the caller). voro++: a container
 * with about 5 sites per block (its manual's advice), every cell computed
 * with neighbour information (voronoicell_neighbor) and its volume summed;
 * building the container is timed too. Figure: median of REPS runs, the two
 * alternating; per-cell time. Volumes of both are summed to show they
 * computed the same cells. A note gives the same medians in process CPU
 * time, which other work on a shared machine disturbs less than wall time.
 */
extern "C" {
#include "bench.h"
#include "geom/fracture.h"
#include "geom/voronoi.h"
#include "mesh/mesh.h"
}

#include <voro++/voro++.hh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <vector>

static double cpu_now(void)
{
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double median_of(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

static double voroxx(const std::vector<double> &s)
{
    int n = (int)(s.size() / 3), g = 1;
    while (g * g * g * 5 < n)
        g++;
    voro::container con(0, 1, 0, 1, 0, 1, g, g, g, false, false, false, 8);
    for (int i = 0; i < n; i++)
        con.put(i, s[3 * i], s[3 * i + 1], s[3 * i + 2]);
    voro::c_loop_all loop(con);
    voro::voronoicell_neighbor c;
    double vol = 0;
    if (loop.start())
        do {
            if (con.compute_cell(c, loop))
                vol += c.volume();
        } while (loop.inc());
    return vol;
}

/* UV sphere, radius 1: 2 * segs * (rings - 1) triangles. */
static q_mesh *sphere(int rings, int segs)
{
    size_t nv = 2 + (size_t)(rings - 1) * segs, nt = 2 * (size_t)segs * (rings - 1);
    q_mesh *m = q_mesh_create(nv, 3 * nt, false, false);
    float *p = m->positions;
    size_t k = 0;
    p[k++] = 0, p[k++] = 0, p[k++] = 1;
    for (int i = 1; i < rings; i++)
        for (int j = 0; j < segs; j++) {
            double th = M_PI * i / rings, ph = 2 * M_PI * j / segs;
            p[k++] = (float)(sin(th) * cos(ph)), p[k++] = (float)(sin(th) * sin(ph)), p[k++] = (float)cos(th);
        }
    p[k++] = 0, p[k++] = 0, p[k++] = -1;
    auto at = [&](int i, int j) { return (uint32_t)(1 + (i - 1) * segs + (j % segs)); };
    uint32_t *x = m->indices;
    size_t o = 0;
    for (int j = 0; j < segs; j++)
        x[o++] = 0, x[o++] = at(1, j), x[o++] = at(1, j + 1);
    for (int i = 1; i + 1 < rings; i++)
        for (int j = 0; j < segs; j++) {
            uint32_t a = at(i, j), b = at(i + 1, j), c = at(i + 1, j + 1), d = at(i, j + 1);
            x[o++] = a, x[o++] = b, x[o++] = c, x[o++] = a, x[o++] = c, x[o++] = d;
        }
    for (int j = 0; j < segs; j++)
        x[o++] = (uint32_t)(nv - 1), x[o++] = at(rings - 1, j + 1), x[o++] = at(rings - 1, j);
    return m;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "out";
    bench_begin("voronoi", dir);
    bench_section_inverse("Voronoi cells in a unit cube: q_voronoi_compute vs voro++ (per cell)");
    const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    for (int n : {50, 1000, 10000}) {
        std::vector<double> s(3 * (size_t)n);
        for (double &x : s)
            x = rnd();
        int reps = n <= 1000 ? 41 : 9;
        std::vector<double> to, tv, co, cv;
        double vo = 0, vv = 0;
        char err[128];
        for (int r = 0; r < reps; r++) {
            double t0 = bench_now(), c0 = cpu_now();
            q_voronoi *v = q_voronoi_compute(s.data(), (size_t)n, lo, hi, err, sizeof err);
            co.push_back((cpu_now() - c0) / n);
            to.push_back((bench_now() - t0) / n);
            if (!v) {
                fprintf(stderr, "voronoi: %s\n", err);
                return 1;
            }
            vo = 0;
            for (size_t i = 0; i < v->cell_count; i++)
                vo += v->cells[i].volume;
            q_voronoi_free(v);
            t0 = bench_now(), c0 = cpu_now();
            vv = voroxx(s);
            cv.push_back((cpu_now() - c0) / n);
            tv.push_back((bench_now() - t0) / n);
        }
        char what[64];
        snprintf(what, sizeof what, "%d sites", n);
        bench_row(what, bench_median(to.data(), reps), to.data(), reps, "voro++", bench_median(tv.data(), reps),
                  tv.data(), reps, "s", 1e-6, "us/cell");
        bench_note("%s: total volume ours %.12f / voro++ %.12f", what, vo, vv);
        bench_note("%s: CPU time per cell ours %.2f us / voro++ %.2f us (voro++/ours %.3f)", what,
                   1e6 * median_of(co), 1e6 * median_of(cv), median_of(cv) / median_of(co));
    }

    bench_section("Shatter a UV sphere (1,984 triangles) into 32 pieces, impact on its surface");
    q_mesh *m = sphere(32, 32);
    q_fracture_params p = q_default_fracture_params();
    p.pieces = 32;
    p.has_at = true;
    p.at[0] = 1;
    std::vector<double> ts;
    size_t frags = 0, tris = 0;
    double vol = 0;
    for (int r = 0; r < 41; r++) {
        p.seed = 1 + r;
        char err[128];
        double t0 = bench_now();
        q_fracture *f = q_fracture_mesh(m, &p, err, sizeof err);
        ts.push_back(bench_now() - t0);
        if (!f) {
            fprintf(stderr, "shatter: %s\n", err);
            return 1;
        }
        frags = f->count, tris = 0, vol = 0;
        for (size_t i = 0; i < f->count; i++) {
            tris += f->pieces[i].mesh->index_count / 3;
            vol += f->pieces[i].volume;
        }
        q_fracture_free(f);
    }
    bench_row("shatter 32", bench_median(ts.data(), 41), ts.data(), 41, "-", -1, nullptr, 0, "s", 1e-3, "ms");
    bench_note("last run: %zu fragments, %zu triangles, volume %.6f (mesh %.6f); target under 5 ms", frags, tris,
               vol, q_mesh_volume(m));
    q_mesh_destroy(m);
    bench_end();
    return 0;
}
