/* Clipmap LOD (mesh/octree.h, mesh/clipmap.h) on a 1024x128x1024 hills world:
 *  - triangles drawn with the viewer in the middle against all chunks at LOD0;
 *  - the first build (every chunk meshed at LOD0, clustered, seams; on all
 *    threads) against the rebuild after the viewer crosses a chunk border
 *    (waiting, on all threads: only the blocks whose level changed and the
 *    seams around them) and after an edit near the viewer;
 *  - the same viewer move in the background: the longest time one
 *    q_clipmap_update(wait = false) call takes (what a frame pays) and the
 *    time until the new mesh is published, polling once per millisecond;
 *  - LOD1 of single 32^3 chunks against meshoptimizer's meshopt_simplify with
 *    locked borders (meshopt_SimplifyLockBorder) at the same triangle count,
 *    starting from the same LOD0 mesh: time and symmetric sampled Hausdorff
 *    distance to the LOD0 surface (vertices and triangle centroids of each
 *    mesh against the other's triangles, brute force), in voxels;
 *  - the same chunks through quadric edge collapse (mesh/simplify.h) in the
 *    same run: q_simplify on the same LOD0 mesh with locked borders at the
 *    same triangle count as meshopt, and q_lod_build with
 *    q_simplify_set_lod_mode(Q_LOD_COLLAPSE) (border nodes clustered and
 *    locked, interior collapsed to a quarter of LOD0).
 */
#include <meshoptimizer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include <time.h>

extern "C" {
#include "bench.h"
#include "core/alloc.h"
#include "core/jobs.h"
#include "mesh/clipmap.h"
#include "mesh/dc.h"
#include "mesh/octree.h"
#include "mesh/simplify.h"
#include "world/world.h"
}

namespace {

struct V {
    double x, y, z;
};
V sub(V a, V b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
double dot(V a, V b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
V madd(V a, V d, double t) { return {a.x + d.x * t, a.y + d.y * t, a.z + d.z * t}; }

/* Closest point on a triangle (Ericson 5.1.5). */
double point_tri(V p, V a, V b, V c)
{
    V ab = sub(b, a), ac = sub(c, a), ap = sub(p, a);
    double d1 = dot(ab, ap), d2 = dot(ac, ap);
    V q;
    if (d1 <= 0 && d2 <= 0)
        q = a;
    else {
        V bp = sub(p, b);
        double d3 = dot(ab, bp), d4 = dot(ac, bp);
        double vc = d1 * d4 - d3 * d2;
        if (d3 >= 0 && d4 <= d3)
            q = b;
        else if (vc <= 0 && d1 >= 0 && d3 <= 0)
            q = madd(a, ab, d1 / (d1 - d3));
        else {
            V cp = sub(p, c);
            double d5 = dot(ab, cp), d6 = dot(ac, cp);
            double vb = d5 * d2 - d1 * d6;
            double va = d3 * d6 - d5 * d4;
            if (d6 >= 0 && d5 <= d6)
                q = c;
            else if (vb <= 0 && d2 >= 0 && d6 <= 0)
                q = madd(a, ac, d2 / (d2 - d6));
            else if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0)
                q = madd(b, sub(c, b), (d4 - d3) / ((d4 - d3) + (d5 - d6)));
            else {
                double den = 1 / (va + vb + vc);
                q = madd(madd(a, ab, vb * den), ac, vc * den);
            }
        }
    }
    V e = sub(p, q);
    return std::sqrt(dot(e, e));
}

struct Mesh {
    std::vector<float> pos;
    std::vector<uint32_t> idx;
    V v(uint32_t i) const { return {pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]}; }
};

double one_sided(const Mesh &from, const Mesh &to)
{
    double worst = 0;
    auto dist = [&](V p) {
        double best = 1e30;
        for (size_t t = 0; t < to.idx.size(); t += 3)
            best = std::min(best, point_tri(p, to.v(to.idx[t]), to.v(to.idx[t + 1]), to.v(to.idx[t + 2])));
        return best;
    };
    for (size_t i = 0; i < from.pos.size() / 3; i++)
        worst = std::max(worst, dist(from.v((uint32_t)i)));
    for (size_t t = 0; t < from.idx.size(); t += 3) {
        V a = from.v(from.idx[t]), b = from.v(from.idx[t + 1]), c = from.v(from.idx[t + 2]);
        worst = std::max(worst, dist({(a.x + b.x + c.x) / 3, (a.y + b.y + c.y) / 3, (a.z + b.z + c.z) / 3}));
    }
    return worst;
}

double hausdorff(const Mesh &a, const Mesh &b) { return std::max(one_sided(a, b), one_sided(b, a)); }

Mesh from_q(const q_mesh *m)
{
    Mesh r;
    if (m) {
        r.pos.assign(m->positions, m->positions + 3 * m->vertex_count);
        r.idx.assign(m->indices, m->indices + m->index_count);
    }
    return r;
}

int uniform_level(void *ud, const int32_t *) { return *(int *)ud; }

} // namespace

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "out";
    char err[256];
    q_world_def wd = q_default_world_def();
    q_world *w = q_world_create(&wd, err, sizeof err);
    if (!w)
        bench_check(Q_ERR_MEMORY, "q_world_create", err);
    q_generate_def gd = q_default_generate_def();
    gd.kind = Q_GEN_HILLS;
    gd.size[0] = 1024;
    gd.size[1] = 128;
    gd.size[2] = 1024;
    gd.seed = 1;
    q_terrain *t = q_world_terrain(w);
    bench_check(q_terrain_generate(t, &gd, err, sizeof err), "q_terrain_generate", err);

    bench_begin("lod", dir);
    /* "lod1" as the second argument: only the per-chunk comparison below;
     * "collapse": the whole-world part with Q_LOD_COLLAPSE (simplify.h) */
    bool whole = !(argc > 2 && std::strcmp(argv[2], "lod1") == 0);
    bool collapse_world = argc > 2 && std::strcmp(argv[2], "collapse") == 0;
    if (whole) {
        if (collapse_world) {
            q_simplify_set_lod_mode(Q_LOD_COLLAPSE);
            bench_note("whole world built with Q_LOD_COLLAPSE (edge-collapsed chunk interiors at LOD1-2)");
        }
        q_clipmap *cm = q_world_clipmap(w);
        q_box box = {{-1, -1, -1}, {1025, 129, 1025}};
        double viewer[3] = {512, 64, 512};
        q_clipmap_set_viewer(cm, viewer);
        q_lod_result r;
        size_t live0 = q_alloc_live_bytes();
        double t0 = bench_now();
        bench_check(q_clipmap_mesh(cm, q_world_jobs(w), t, box, 1.0f, &r, err, sizeof err), "q_clipmap_mesh", err);
        double first = bench_now() - t0;
        size_t drawn = r.chunk_triangles + r.seam_triangles, lod0 = r.lod0_triangles;
        size_t clip_bytes =
            q_alloc_live_bytes() - live0 - (r.mesh ? r.mesh->vertex_count * 25 + r.mesh->index_count * 4 : 0);
        std::printf("per level:");
        for (int i = 0; i <= Q_LOD_MAX_LEVEL; i++)
            std::printf(" %zu", r.triangles_per_level[i]);
        std::printf(" seams %zu\n", r.seam_triangles);
        q_mesh_destroy(r.mesh);

        bench_section("Triangles drawn, 1024x128x1024 hills, viewer in the middle, default distances {48,96,192,384}");
        bench_row("clipmap LOD (chunks + seams)", (double)drawn, nullptr, 0, "all chunks at LOD0", (double)lod0,
                  nullptr, 0, "triangles", 1e6, "M tris");
        bench_note(
            "clipmap memory after the first build: %.0f MB (terrain copy + cache + published mesh; %.1f bytes per "
            "LOD0 triangle); the world's terrain: %.0f MB",
            (double)clip_bytes / 1e6, (double)clip_bytes / (double)lod0, (double)q_terrain_get_stats(t).bytes / 1e6);

        /* viewer crosses a chunk border: 5 moves of one chunk, waiting */
        const int REPS = 5;
        double moves[REPS];
        size_t rb = 0, rs = 0;
        for (int i = 0; i < REPS; i++) {
            viewer[0] += Q_LOD_CHUNK;
            q_clipmap_set_viewer(cm, viewer);
            t0 = bench_now();
            bench_check(q_clipmap_update(cm, q_world_jobs(w), t, box, 1.0f, true, err, sizeof err), "q_clipmap_update",
                        err);
            moves[i] = bench_now() - t0;
            q_clipmap_result res = q_clipmap_get(cm);
            if (res.info.remeshed_chunks != 0)
                bench_note("viewer move remeshed %zu chunks at LOD0", res.info.remeshed_chunks);
            rb += res.info.rebuilt_blocks;
            rs += res.info.rebuilt_seams;
            if (i == 0)
                std::printf("blocks %zu, seams %zu\n", res.info.blocks, res.info.seams);
        }
        double move = bench_median(moves, REPS);
        bench_section_inverse("Rebuild when the viewer crosses a chunk (waiting, all threads) vs first build");
        bench_row("viewer crosses a chunk", move, moves, REPS, "first build (LOD0 of every chunk + blocks + seams)",
                  first, &first, 1, "s", 1e-3, "ms");
        bench_note("blocks rebuilt per move %.1f, seams %.1f (mean of %d moves)", (double)rb / REPS, (double)rs / REPS,
                   REPS);

        /* an edit near the viewer: a ball of radius 6 carved on the surface */
        double edits[REPS];
        size_t er = 0, eb = 0;
        for (int i = 0; i < REPS; i++) {
            q_edit e = {};
            e.op = Q_EDIT_CARVE;
            e.shape.kind = Q_SHAPE_BALL;
            double h = 128;
            while (h > 0 && q_terrain_get(t, (int32_t)viewer[0] + 20 * i, (int32_t)h - 1, 500).material == 0)
                h -= 1;
            e.shape.center[0] = viewer[0] + 20 * i;
            e.shape.center[1] = h;
            e.shape.center[2] = 500;
            e.shape.radius = 6;
            bench_check(q_terrain_edit(t, &e, err, sizeof err), "q_terrain_edit", err);
            t0 = bench_now();
            bench_check(q_clipmap_update(cm, q_world_jobs(w), t, box, 1.0f, true, err, sizeof err), "q_clipmap_update",
                        err);
            edits[i] = bench_now() - t0;
            q_clipmap_result res = q_clipmap_get(cm);
            er += res.info.remeshed_chunks;
            eb += res.info.rebuilt_blocks;
        }
        double edit = bench_median(edits, REPS);
        bench_row("carve a ball (r = 6) near the viewer", edit, edits, REPS, "first build", first, &first, 1, "s", 1e-3,
                  "ms");
        bench_note("per edit: %.1f chunks remeshed at LOD0, %.1f blocks rebuilt (mean of %d)", (double)er / REPS,
                   (double)eb / REPS, REPS);

        /* In the background: the caller polls once per ms, as a frame would.
         * stall = the longest q_clipmap_update(wait = false) call, ready = time
         * until the new mesh is published. */
        auto background = [&](q_clipmap *c, double *stall, double *ready, size_t *polls) {
            uint64_t serial = q_clipmap_get(c).serial;
            *stall = 0;
            double b0 = bench_now();
            for (;;) {
                double c0 = bench_now();
                bench_check(q_clipmap_update(c, q_world_jobs(w), t, box, 1.0f, false, err, sizeof err),
                            "q_clipmap_update", err);
                double dt = bench_now() - c0;
                *stall = dt > *stall ? dt : *stall;
                ++*polls;
                if (q_clipmap_get(c).serial != serial)
                    break;
                struct timespec ms = {0, 1000000};
                nanosleep(&ms, nullptr);
            }
            *ready = bench_now() - b0;
            if (!q_clipmap_get(c).current)
                bench_note("background rebuild published a stale mesh");
        };
        double stall[REPS], ready[REPS], estall[REPS], eready[REPS];
        size_t polls = 0;
        for (int i = 0; i < REPS; i++) {
            viewer[0] -= Q_LOD_CHUNK;
            q_clipmap_set_viewer(cm, viewer);
            background(cm, &stall[i], &ready[i], &polls);
        }
        for (int i = 0; i < REPS; i++) {
            q_edit e = {};
            e.op = Q_EDIT_FILL;
            e.material = 2;
            e.shape.kind = Q_SHAPE_BALL;
            e.shape.center[0] = viewer[0] - 20 * i;
            e.shape.center[1] = 60;
            e.shape.center[2] = 530;
            e.shape.radius = 6;
            bench_check(q_terrain_edit(t, &e, err, sizeof err), "q_terrain_edit", err);
            background(cm, &estall[i], &eready[i], &polls);
        }
        /* a first build in the background: a new clipmap on the same terrain */
        q_clipmap *fresh = q_clipmap_create();
        q_clipmap_set_viewer(fresh, viewer);
        double fstall, fready;
        background(fresh, &fstall, &fready, &polls);
        q_clipmap_destroy(fresh);
        bench_section_inverse("In the background (clipmap worker thread, caller polls every ms) vs waiting");
        bench_row("viewer crosses a chunk: longest call (frame stall)", bench_median(stall, REPS), stall, REPS,
                  "waiting rebuild", move, moves, REPS, "s", 1e-3, "ms");
        bench_row("viewer crosses a chunk: until published", bench_median(ready, REPS), ready, REPS, "waiting rebuild",
                  move, moves, REPS, "s", 1e-3, "ms");
        bench_row("fill a ball (r = 6): longest call (frame stall)", bench_median(estall, REPS), estall, REPS,
                  "waiting rebuild", edit, edits, REPS, "s", 1e-3, "ms");
        bench_row("fill a ball (r = 6): until published", bench_median(eready, REPS), eready, REPS, "waiting rebuild",
                  edit, edits, REPS, "s", 1e-3, "ms");
        bench_row("first build: longest call (terrain copied)", fstall, &fstall, 1, "waiting first build", first,
                  &first, 1, "s", 1e-3, "ms");
        bench_row("first build: until published (worker alone)", fready, &fready, 1, "waiting first build", first,
                  &first, 1, "s", 1e-3, "ms");
        bench_note("%zu polls in all", polls);
    }

    q_simplify_set_lod_mode(Q_LOD_CLUSTER);
    /* LOD1 chunks vs meshopt_simplify with locked borders */
    bench_section_inverse("LOD1 of a 32^3 chunk vs meshopt_simplify (LockBorder) at the same triangle count, 8 chunks");
    std::vector<double> ours_t, mo_t, ours_h, mo_h, l0_t, ec_t, ec_h, hk_t, hk_h;
    size_t sum_l1 = 0, sum_ec = 0, sum_mo = 0, sum_hk = 0;
    int n_chunks = 0;
    for (int cz = 4; cz < 32 && n_chunks < 8; cz += 3)
        for (int cy = 0; cy < 4 && n_chunks < 8; cy++) {
            q_box cb = {{128, cy * 32, cz * 32}, {160, cy * 32 + 32, cz * 32 + 32}};
            int L0 = 0, L1 = 1;
            q_lod_result a, b;
            bench_check(q_lod_build(t, cb, Q_SURFACE_SOLID, 1.0f, uniform_level, &L0, &a, err, sizeof err), "lod0",
                        err);
            if (!a.mesh || a.mesh->index_count < 3000) {
                q_mesh_destroy(a.mesh);
                continue;
            }
            double s0 = bench_now();
            const int R = 5;
            double best = 1e30;
            for (int k = 0; k < R; k++) {
                s0 = bench_now();
                bench_check(q_lod_build(t, cb, Q_SURFACE_SOLID, 1.0f, uniform_level, &L1, &b, err, sizeof err), "lod1",
                            err);
                best = std::min(best, bench_now() - s0);
                if (k < R - 1)
                    q_mesh_destroy(b.mesh);
            }
            double l0best = 1e30;
            for (int k = 0; k < R; k++) {
                q_lod_result z;
                s0 = bench_now();
                bench_check(q_lod_build(t, cb, Q_SURFACE_SOLID, 1.0f, uniform_level, &L0, &z, err, sizeof err), "lod0",
                            err);
                l0best = std::min(l0best, bench_now() - s0);
                q_mesh_destroy(z.mesh);
            }
            /* the hook: LOD1 with the interior edge-collapsed */
            q_simplify_set_lod_mode(Q_LOD_COLLAPSE);
            q_lod_result hk = {};
            double hbest = 1e30;
            for (int k = 0; k < R; k++) {
                if (k)
                    q_mesh_destroy(hk.mesh);
                s0 = bench_now();
                bench_check(q_lod_build(t, cb, Q_SURFACE_SOLID, 1.0f, uniform_level, &L1, &hk, err, sizeof err),
                            "lod1 collapse", err);
                hbest = std::min(hbest, bench_now() - s0);
            }
            q_simplify_set_lod_mode(Q_LOD_CLUSTER);
            Mesh m0 = from_q(a.mesh), m1 = from_q(b.mesh), mh = from_q(hk.mesh);
            q_mesh_destroy(hk.mesh);
            /* meshopt from the same LOD0 mesh; time excludes the LOD0 meshing */
            std::vector<uint32_t> out(m0.idx.size());
            size_t target = m1.idx.size(), got = 0;
            double mbest = 1e30;
            for (int k = 0; k < R; k++) {
                s0 = bench_now();
                float e = 0;
                got = meshopt_simplify(out.data(), m0.idx.data(), m0.idx.size(), m0.pos.data(), m0.pos.size() / 3,
                                       3 * sizeof(float), target, 1.0f, meshopt_SimplifyLockBorder, &e);
                mbest = std::min(mbest, bench_now() - s0);
            }
            Mesh ms{m0.pos, std::vector<uint32_t>(out.begin(), out.begin() + (long)got)};
            /* our edge collapse from the same LOD0 mesh, same target, borders locked */
            std::vector<uint32_t> eout(m0.idx.size());
            std::vector<float> epos;
            size_t egot = 0;
            double ebest = 1e30;
            q_simplify_def sd = q_default_simplify_def();
            sd.target_index_count = target;
            for (int k = 0; k < R; k++) {
                epos = m0.pos;
                s0 = bench_now();
                egot = q_simplify(eout.data(), m0.idx.data(), m0.idx.size(), epos.data(), epos.size() / 3, &sd, nullptr,
                                  nullptr);
                ebest = std::min(ebest, bench_now() - s0);
            }
            if (egot == SIZE_MAX)
                bench_check(Q_ERR_MEMORY, "q_simplify", "out of memory");
            Mesh me{epos, std::vector<uint32_t>(eout.begin(), eout.begin() + (long)egot)};
            double h1 = hausdorff(m1, m0), hm = hausdorff(ms, m0), he = hausdorff(me, m0), hh = hausdorff(mh, m0);
            std::printf(
                "chunk %d: LOD0 %zu tris (%.3f ms); cluster %zu %.3f vox %.3f ms; collapse %zu %.3f vox %.3f ms; "
                "meshopt %zu %.3f vox %.3f ms; hook %zu %.3f vox %.3f ms\n",
                n_chunks, m0.idx.size() / 3, l0best * 1e3, m1.idx.size() / 3, h1, best * 1e3, egot / 3, he, ebest * 1e3,
                got / 3, hm, mbest * 1e3, mh.idx.size() / 3, hh, hbest * 1e3);
            l0_t.push_back(l0best);
            ec_t.push_back(ebest);
            ec_h.push_back(he);
            hk_t.push_back(hbest);
            hk_h.push_back(hh);
            sum_l1 += m1.idx.size() / 3;
            sum_ec += egot / 3;
            sum_mo += got / 3;
            sum_hk += mh.idx.size() / 3;
            ours_t.push_back(best);
            mo_t.push_back(mbest);
            ours_h.push_back(h1);
            mo_h.push_back(hm);
            q_mesh_destroy(a.mesh);
            q_mesh_destroy(b.mesh);
            n_chunks++;
        }
    if (n_chunks) {
        double ot = bench_median(ours_t.data(), n_chunks), mt = bench_median(mo_t.data(), n_chunks);
        double oh = *std::max_element(ours_h.begin(), ours_h.end()), mh = *std::max_element(mo_h.begin(), mo_h.end());
        bench_row("LOD1 time (incl. LOD0 meshing of the chunk)", ot, ours_t.data(), n_chunks,
                  "meshopt_simplify (LOD0 given)", mt, mo_t.data(), n_chunks, "s", 1e-3, "ms");
        bench_section("Hausdorff distance to LOD0, worst of the chunks (lower is better)");
        bench_row("LOD1 (octree clustering)", oh, nullptr, 0, "meshopt_simplify LockBorder", mh, nullptr, 0, "voxels",
                  1, "vox");
        double et = bench_median(ec_t.data(), n_chunks), lt = bench_median(l0_t.data(), n_chunks);
        double ht = bench_median(hk_t.data(), n_chunks);
        double eh = *std::max_element(ec_h.begin(), ec_h.end()), hh = *std::max_element(hk_h.begin(), hk_h.end());
        bench_section_inverse("Edge collapse (mesh/simplify.h) vs meshopt_simplify, same LOD0 mesh and target");
        bench_row("q_simplify, borders locked (LOD0 given)", et, ec_t.data(), n_chunks, "meshopt_simplify (LOD0 given)",
                  mt, mo_t.data(), n_chunks, "s", 1e-3, "ms");
        bench_row("LOD1 via q_lod_build, Q_LOD_COLLAPSE (incl. LOD0 meshing)", ht, hk_t.data(), n_chunks,
                  "LOD1 via q_lod_build, Q_LOD_CLUSTER", ot, ours_t.data(), n_chunks, "s", 1e-3, "ms");
        bench_row("LOD0 meshing of the chunk alone (q_lod_build at LOD0)", lt, l0_t.data(), n_chunks,
                  "LOD1 via q_lod_build, Q_LOD_CLUSTER", ot, ours_t.data(), n_chunks, "s", 1e-3, "ms");
        bench_section("Hausdorff distance to LOD0, edge collapse, worst of the chunks (lower is better)");
        bench_row("q_simplify, borders locked, same target", eh, nullptr, 0, "meshopt_simplify LockBorder", mh, nullptr,
                  0, "voxels", 1, "vox");
        bench_row("LOD1 via q_lod_build, Q_LOD_COLLAPSE", hh, nullptr, 0, "LOD1 via q_lod_build, Q_LOD_CLUSTER", oh,
                  nullptr, 0, "voxels", 1, "vox");
        bench_note("triangles, sum of the chunks: clustering %zu, q_simplify %zu, meshopt %zu, Q_LOD_COLLAPSE hook %zu",
                   sum_l1, sum_ec, sum_mo, sum_hk);
    }
    bench_note("LOD1 = nodes of size 2 (QEF of merged leaves); meshopt target = LOD1's index count, error 1.0");
    bench_end();
    q_world_destroy(w);
    return 0;
}
