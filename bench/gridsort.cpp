/* Grid-sort ray casts (engine/geom/gridsort.h, seed 004) side by side in one
 * run with Quarry's loose kD tree (engine/physics/kdtree.h) and Embree 3.13
 * rtcIntersect1 (PEERS.md), on the same triangles and the same rays, one
 * thread everywhere.
 *
 * Input: q_terrain_generate Q_GEN_CAVES 128x64x128, seed 1, voxel units, and
 * two meshes of its solid surface (q_dc_mesh, scale 1):
 *  - region: the 64^3 box [32,96) x [0,64) x [32,96), origin at its corner
 *    (the kdtree.cpp region, ~21k triangles);
 *  - world: the whole box [0,128) x [0,64) x [0,128) in one call (it fits
 *    Q_DC_MAX_SAMPLES), absolute positions (~120k triangles).
 * All three structures index exactly these float positions and 32-bit
 * indices: the kD tree through q_kd_mesh, Embree through shared buffers (the
 * position array carries 16 bytes of padding, which Embree reads past the
 * last vertex), grid-sort copies the triangles at build.
 *
 * Directions D: "down" (0,-1,0), the sun straight down, and "slanted"
 * (0.3,-1,0.2) normalised. Grid-sort builds one structure per D and per
 * resolution (2048, the seed's finest grid, and 512). The kD tree and
 * Embree do not depend on D.
 *
 * Rays (unit directions, closest hit with t in [0, length]); the same arrays
 * go to every tracer:
 *  - along D: a 256x256 jittered grid over the mesh's x-z bounds at half its
 *    height; each ray starts one voxel above the mesh's top, moved back along
 *    D to meet its grid point, and runs along D to one voxel below the
 *    bottom. Traced by the grid-sort built for that D.
 *  - short ground probes: a random point of a random triangle moved 0.1 voxel
 *    along the triangle's outward normal, random direction, length uniform
 *    in [2, 4]. Traced by the grid-sort built for D down.
 *  - random: origin uniform in the mesh's bounds, random direction, length
 *    the bounds' diagonal. Traced by the grid-sort built for D down.
 * Tracers: q_gridsort_raycast and q_gridsort_raycast_batch (per resolution),
 * q_kdtree_raycast, rtcIntersect1 on scenes built at RTC_BUILD_QUALITY_LOW
 * and MEDIUM on rtcNewDevice("threads=1"). The batch takes one tmax for all
 * its rays: where lengths differ (short probes) it gets directions scaled by
 * each ray's length and tmax 1, and its t is scaled back. Each pass traces a
 * whole set; the order of the tracers rotates between passes; the figure is
 * the median of REPS_RAYS passes. Agreement is against q_kdtree_raycast:
 * same hit/miss and, for hits, |t - t_kd| <= 1e-4 voxel.
 *
 * Build: median of REPS_BUILD builds; grid-sort's time includes its input
 * checks and the triangle copy; Embree's includes creating the scene and
 * geometry. Freeing is not timed.
 *
 * Memory, bytes per triangle of what answers a ray: grid-sort is
 * q_gridsort_bytes (it holds its own triangle copy, 36 B/triangle); the kD
 * tree its words (q_kdtree_build_sorted on its own copy of the indices, which
 * it reorders) plus the mesh it indexes; Embree what its memory
 * monitor callback says the committed scene holds plus the same mesh. The
 * mesh is 12 B per vertex and 12 B per triangle (32-bit indices).
 */
extern "C" {
#include "bench.h"
#include "geom/gridsort.h"
#include "mesh/dc.h"
#include "physics/kdtree.h"
#include "voxel/terrain.h"
}

#include <embree3/rtcore.h>

#include "embree_ray.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int WX = 128, WY = 64, WZ = 128;
constexpr int REPS_BUILD = 5;
constexpr int REPS_RAYS = 5;
constexpr int GRID = 256; /* rays along D: GRID x GRID */
constexpr int N_SHORT = 100000, N_RANDOM = 20000;
constexpr double AGREE_EPS = 1e-4;
constexpr int N_RES = 2;
const int RESOLUTION[N_RES] = {2048, 512};
constexpr int N_DIR = 2;
const char *const DIR_NAME[N_DIR] = {"down", "slanted"};

/* ---- small helpers ---- */

struct Rng {
    uint64_t s;
    uint64_t next()
    {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return (double)(next() >> 11) * (1.0 / 9007199254740992.0); }
    double range(double lo, double hi) { return lo + (hi - lo) * uniform(); }
};

double median_of(std::vector<double> v)
{
    return v.empty() ? 0.0 : bench_median(v.data(), (int)v.size());
}

const char *met(bool ok)
{
    return ok ? "met" : "NOT met";
}

/* ---- meshes ---- */

struct Mesh {
    const char *name;
    std::vector<float> pos; /* 3 per vertex, then 4 floats of padding (Embree) */
    std::vector<uint32_t> idx;
    uint32_t nv = 0, nt = 0;
    double lo[3], hi[3];

    /* The kD tree's own copy of the indices, which its sorted build reorders
     * (as the physics cache does with its chunks); grid-sort and Embree keep
     * idx. Copied afresh by kd(). */
    mutable std::vector<uint32_t> own;
    q_kd_mesh kd() const
    {
        own = idx;
        q_kd_mesh m{};
        m.positions = pos.data();
        m.indices32 = own.data();
        m.triangle_count = nt;
        return m;
    }
    bool build_kd(q_kdtree *tree, const q_kd_mesh &km) const
    {
        return q_kdtree_build_sorted(tree, &km, nullptr, own.data(), nullptr);
    }
    double mesh_bytes() const { return 12.0 * nv + 12.0 * nt; }
};

Mesh mesh_box(const q_terrain *t, q_box box, const char *name)
{
    std::vector<float> pos(3 * q_dc_vertex_bound(box));
    std::vector<uint32_t> idx(q_dc_index_bound(box));
    q_dc_output out{};
    out.positions = pos.data();
    out.indices = idx.data();
    out.vertex_capacity = pos.size() / 3;
    out.index_capacity = idx.size();
    memcpy(out.origin, box.min, sizeof box.min);
    char err[256] = "";
    bench_check(q_dc_mesh(t, box, Q_SURFACE_SOLID, 1.0f, &out, NULL, err, sizeof err), "q_dc_mesh", err);
    Mesh m;
    m.name = name;
    m.nv = (uint32_t)out.vertex_count;
    m.nt = (uint32_t)(out.index_count / 3);
    m.pos.assign(pos.begin(), pos.begin() + 3 * m.nv);
    m.pos.resize(3 * m.nv + 4, 0.0f);
    m.idx.assign(idx.begin(), idx.begin() + 3 * m.nt);
    for (int a = 0; a < 3; a++)
        m.lo[a] = INFINITY, m.hi[a] = -INFINITY;
    for (uint32_t v = 0; v < m.nv; v++)
        for (int a = 0; a < 3; a++) {
            m.lo[a] = std::min(m.lo[a], (double)m.pos[3 * v + a]);
            m.hi[a] = std::max(m.hi[a], (double)m.pos[3 * v + a]);
        }
    return m;
}

/* ---- Embree ---- */

struct EmbreeMemory {
    long long live = 0; /* bytes the device holds now */
};

bool memory_monitor(void *user, ssize_t bytes, bool)
{
    static_cast<EmbreeMemory *>(user)->live += (long long)bytes;
    return true;
}

RTCScene embree_build(RTCDevice dev, const Mesh &m, RTCBuildQuality quality)
{
    RTCScene scene = rtcNewScene(dev);
    rtcSetSceneBuildQuality(scene, quality);
    RTCGeometry g = rtcNewGeometry(dev, RTC_GEOMETRY_TYPE_TRIANGLE);
    rtcSetGeometryBuildQuality(g, quality);
    rtcSetSharedGeometryBuffer(g, RTC_BUFFER_TYPE_VERTEX, 0, RTC_FORMAT_FLOAT3, m.pos.data(), 0, 3 * sizeof(float),
                               m.nv);
    rtcSetSharedGeometryBuffer(g, RTC_BUFFER_TYPE_INDEX, 0, RTC_FORMAT_UINT3, m.idx.data(), 0, 3 * sizeof(uint32_t),
                               m.nt);
    rtcCommitGeometry(g);
    rtcAttachGeometry(scene, g);
    rtcReleaseGeometry(g);
    rtcCommitScene(scene);
    return scene;
}

/* ---- builds ---- */

/* Grid-sort variants: index = dir * N_RES + res. */
constexpr int N_GS = N_DIR * N_RES;
enum Builder { B_KD = N_GS, B_EMBREE_LOW, B_EMBREE_MED, B_COUNT };

void gs_name(int g, char *buf, size_t n)
{
    snprintf(buf, n, "grid-sort D %s, %d", DIR_NAME[g / N_RES], RESOLUTION[g % N_RES]);
}

const char *const PEER_NAME[3] = {"q_kdtree_build_sorted", "Embree LOW", "Embree MEDIUM"};

struct Measured {
    double seconds;
    double bytes; /* everything a ray query reads, mesh included */
};

Measured build_once(int b, const Mesh &m, const float dirs[N_DIR][3], RTCDevice dev, EmbreeMemory *mem)
{
    Measured r = {0, 0};
    if (b < N_GS) {
        q_gridsort *gs;
        char err[256] = "";
        double t0 = bench_now();
        q_status st = q_gridsort_build(&gs, m.pos.data(), m.nv, m.idx.data(), 3 * (size_t)m.nt, dirs[b / N_RES],
                                       RESOLUTION[b % N_RES], err, sizeof err);
        r.seconds = bench_now() - t0;
        bench_check(st, "q_gridsort_build", err);
        r.bytes = (double)q_gridsort_bytes(gs);
        q_gridsort_free(gs);
    } else if (b == B_KD) {
        q_kd_mesh km = m.kd(); /* the copy is not timed */
        q_kdtree tree;
        double t0 = bench_now();
        bool ok = m.build_kd(&tree, km);
        r.seconds = bench_now() - t0;
        if (!ok) {
            fprintf(stderr, "bench: q_kdtree_build_sorted failed\n");
            exit(1);
        }
        r.bytes = (double)tree.word_count * sizeof(uint32_t) + m.mesh_bytes();
        q_kdtree_free(&tree);
    } else {
        long long before = mem->live;
        double t0 = bench_now();
        RTCScene s = embree_build(dev, m, b == B_EMBREE_LOW ? RTC_BUILD_QUALITY_LOW : RTC_BUILD_QUALITY_MEDIUM);
        r.seconds = bench_now() - t0;
        r.bytes = (double)(mem->live - before) + m.mesh_bytes();
        rtcReleaseScene(s);
    }
    return r;
}

/* ---- rays ---- */

struct RaySet {
    char name[96];
    char tag[24]; /* short name for table rows */
    int gs_dir;            /* which D's grid-sorts trace it */
    bool same_length;      /* every ray has length len[0] */
    std::vector<float> o, d; /* 3 floats per ray; d unit */
    std::vector<float> len;
    std::vector<float> d_scaled; /* d * len, for the batch when lengths differ */
    size_t size() const { return len.size(); }
    void add(const double org[3], const double dir[3], double length)
    {
        for (int k = 0; k < 3; k++) {
            o.push_back((float)org[k]);
            d.push_back((float)dir[k]);
        }
        len.push_back((float)length);
    }
    void finish()
    {
        same_length = true;
        for (float l : len)
            same_length = same_length && l == len[0];
        if (!same_length)
            for (size_t i = 0; i < size(); i++)
                for (int k = 0; k < 3; k++)
                    d_scaled.push_back(d[3 * i + k] * len[i]);
    }
};

void random_unit(Rng &rng, double d[3])
{
    double l2;
    do {
        for (int k = 0; k < 3; k++)
            d[k] = rng.range(-1, 1);
        l2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    } while (l2 > 1 || l2 < 1e-6);
    double l = std::sqrt(l2);
    for (int k = 0; k < 3; k++)
        d[k] /= l;
}

RaySet rays_along(Rng &rng, const Mesh &m, const double dir[3], int di)
{
    RaySet s;
    snprintf(s.name, sizeof s.name, "along D %s (%dx%d jittered grid)", DIR_NAME[di], GRID, GRID);
    snprintf(s.tag, sizeof s.tag, "along D %s", DIR_NAME[di]);
    s.gs_dir = di;
    double mid = 0.5 * (m.lo[1] + m.hi[1]);
    double back = (m.hi[1] + 1 - mid) / -dir[1];
    double length = (m.hi[1] - m.lo[1] + 2) / -dir[1];
    for (int j = 0; j < GRID; j++)
        for (int i = 0; i < GRID; i++) {
            double p[3] = {m.lo[0] + (m.hi[0] - m.lo[0]) * (i + rng.uniform()) / GRID, mid,
                           m.lo[2] + (m.hi[2] - m.lo[2]) * (j + rng.uniform()) / GRID};
            double o[3];
            for (int k = 0; k < 3; k++)
                o[k] = p[k] - dir[k] * back;
            s.add(o, dir, length);
        }
    s.finish();
    return s;
}

RaySet rays_short(Rng &rng, const Mesh &m)
{
    RaySet s;
    snprintf(s.name, sizeof s.name, "short ground probes (2-4 voxels)");
    snprintf(s.tag, sizeof s.tag, "short probes");
    s.gs_dir = 0;
    for (int i = 0; i < N_SHORT; i++) {
        uint32_t tri = (uint32_t)(rng.next() % m.nt);
        const float *a = &m.pos[3 * m.idx[3 * tri]], *b = &m.pos[3 * m.idx[3 * tri + 1]],
                    *c = &m.pos[3 * m.idx[3 * tri + 2]];
        double e1[3], e2[3];
        for (int k = 0; k < 3; k++)
            e1[k] = (double)b[k] - a[k], e2[k] = (double)c[k] - a[k];
        /* Counter-clockwise seen from outside (dc.h): e1 x e2 points out. */
        double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        double nl = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (!(nl > 0)) {
            i--;
            continue;
        }
        double u = rng.uniform(), v = rng.uniform();
        if (u + v > 1)
            u = 1 - u, v = 1 - v;
        double o[3], d[3];
        for (int k = 0; k < 3; k++)
            o[k] = a[k] + u * e1[k] + v * e2[k] + 0.1 * n[k] / nl;
        random_unit(rng, d);
        s.add(o, d, rng.range(2, 4));
    }
    s.finish();
    return s;
}

RaySet rays_random(Rng &rng, const Mesh &m)
{
    RaySet s;
    snprintf(s.name, sizeof s.name, "random (origin in bounds, long)");
    snprintf(s.tag, sizeof s.tag, "random");
    s.gs_dir = 0;
    double diag = std::sqrt((m.hi[0] - m.lo[0]) * (m.hi[0] - m.lo[0]) + (m.hi[1] - m.lo[1]) * (m.hi[1] - m.lo[1]) +
                            (m.hi[2] - m.lo[2]) * (m.hi[2] - m.lo[2]));
    for (int i = 0; i < N_RANDOM; i++) {
        double o[3], d[3];
        for (int k = 0; k < 3; k++)
            o[k] = rng.range(m.lo[k], m.hi[k]);
        random_unit(rng, d);
        s.add(o, d, diag);
    }
    s.finish();
    return s;
}

/* Tracers of one set: grid-sort (resolution r) single and batch, then the
 * kD tree and Embree. */
enum Tracer { T_GS_BATCH_END = 2 * N_RES, T_KD = T_GS_BATCH_END, T_EMBREE_LOW, T_EMBREE_MED, T_COUNT };

void tracer_name(int tr, char *buf, size_t n)
{
    if (tr < T_GS_BATCH_END)
        snprintf(buf, n, "%s, %d", tr % 2 ? "q_gridsort_raycast_batch" : "q_gridsort_raycast", RESOLUTION[tr / 2]);
    else
        snprintf(buf, n, "%s",
                 tr == T_KD ? "q_kdtree_raycast" : tr == T_EMBREE_LOW ? "Embree LOW" : "Embree MEDIUM");
}

struct Structures {
    const Mesh *mesh;
    q_kd_mesh km;
    q_kdtree tree;
    q_gridsort *gs[N_DIR][N_RES];
    RTCScene low, med;
};

/* t per ray, or -1 for a miss. */
void trace(int tr, const Structures &st, const RaySet &s, std::vector<float> &out)
{
    size_t n = s.size();
    out.resize(n);
    if (tr < T_GS_BATCH_END) {
        const q_gridsort *gs = st.gs[s.gs_dir][tr / 2];
        if (tr % 2) {
            if (s.same_length) {
                q_gridsort_raycast_batch(gs, s.o.data(), s.d.data(), n, s.len[0], out.data());
            } else {
                q_gridsort_raycast_batch(gs, s.o.data(), s.d_scaled.data(), n, 1.0f, out.data());
                for (size_t i = 0; i < n; i++)
                    if (out[i] >= 0)
                        out[i] *= s.len[i];
            }
        } else {
            for (size_t i = 0; i < n; i++) {
                float t;
                uint32_t tri;
                out[i] = q_gridsort_raycast(gs, &s.o[3 * i], &s.d[3 * i], s.len[i], &t, &tri) ? t : -1.0f;
            }
        }
    } else if (tr == T_KD) {
        for (size_t i = 0; i < n; i++) {
            float t;
            uint32_t tri;
            out[i] = q_kdtree_raycast(&st.tree, &st.km, &s.o[3 * i], &s.d[3 * i], s.len[i], &t, &tri) ? t : -1.0f;
        }
    } else {
        RTCScene scene = tr == T_EMBREE_LOW ? st.low : st.med;
        RTCIntersectContext ctx;
        rtcInitIntersectContext(&ctx);
        for (size_t i = 0; i < n; i++) {
            RTCRayHit rh;
            embree_closest(scene, ctx, &s.o[3 * i], &s.d[3 * i], s.len[i], rh);
            out[i] = rh.hit.geomID != RTC_INVALID_GEOMETRY_ID ? rh.ray.tfar : -1.0f;
        }
    }
}

bool agree(float a, float b)
{
    return (a >= 0) == (b >= 0) && (a < 0 || std::fabs((double)a - (double)b) <= AGREE_EPS);
}

/* Figures kept for the targets: [mesh][set][tracer] Mrays/s. */
constexpr int N_SETS = 4; /* along D down, along D slanted, short, random */

struct MeshFigures {
    double rate[N_SETS][T_COUNT];
    double build_s[B_COUNT];
};

MeshFigures run_mesh(const Mesh &m, const float dirs[N_DIR][3], const double dirs_d[N_DIR][3], RTCDevice dev,
                     EmbreeMemory *emem, Rng &rng)
{
    MeshFigures f{};
    char title[256], label[200], peer[96];

    /* ---- builds ---- */
    std::vector<double> times[B_COUNT];
    double bytes[B_COUNT] = {0};
    for (int rep = 0; rep < REPS_BUILD; rep++)
        for (int bi = 0; bi < B_COUNT; bi++) {
            int b = (bi + rep) % B_COUNT; /* no builder always first */
            Measured r = build_once(b, m, dirs, dev, emem);
            times[b].push_back(r.seconds);
            bytes[b] = r.bytes;
        }
    for (int b = 0; b < B_COUNT; b++)
        f.build_s[b] = median_of(times[b]);

    snprintf(title, sizeof title, "Build on the %s mesh (%u tris, %u verts; median of %d), ms", m.name, m.nt, m.nv,
             REPS_BUILD);
    bench_section(title);
    for (int g = 0; g < N_GS; g++)
        for (int p = 0; p < 3; p++) {
            gs_name(g, label, sizeof label);
            bench_row(label, f.build_s[g], times[g].data(), REPS_BUILD, PEER_NAME[p], f.build_s[B_KD + p],
                      times[B_KD + p].data(), REPS_BUILD, "s", 1e-3, "ms");
        }
    bench_note("ours/base < 1: grid-sort builds faster. Embree's time includes creating the scene and geometry.");

    snprintf(title, sizeof title, "Memory on the %s mesh: bytes per triangle, all a ray reads", m.name);
    bench_section(title);
    for (int g = 0; g < N_GS; g++)
        for (int p = 0; p < 3; p += 2) {
            gs_name(g, label, sizeof label);
            snprintf(peer, sizeof peer, "%s", p == 0 ? "kD tree + mesh" : "Embree MEDIUM + mesh");
            bench_row(label, bytes[g] / m.nt, NULL, 0, peer, bytes[B_KD + p] / m.nt, NULL, 0, "bytes", 1, "B");
        }

    /* ---- structures for the rays ---- */
    Structures st{};
    st.mesh = &m;
    st.km = m.kd();
    if (!m.build_kd(&st.tree, st.km)) {
        fprintf(stderr, "bench: q_kdtree_build_sorted failed\n");
        exit(1);
    }
    for (int di = 0; di < N_DIR; di++)
        for (int ri = 0; ri < N_RES; ri++) {
            char err[256] = "";
            bench_check(q_gridsort_build(&st.gs[di][ri], m.pos.data(), m.nv, m.idx.data(), 3 * (size_t)m.nt,
                                         dirs[di], RESOLUTION[ri], err, sizeof err),
                        "q_gridsort_build", err);
        }
    st.low = embree_build(dev, m, RTC_BUILD_QUALITY_LOW);
    st.med = embree_build(dev, m, RTC_BUILD_QUALITY_MEDIUM);

    {
        char line[512];
        int at = 0;
        for (int di = 0; di < N_DIR; di++)
            for (int ri = 0; ri < N_RES; ri++) {
                int kept, cu, cv;
                q_gridsort_info(st.gs[di][ri], &kept, &cu, &cv);
                at += snprintf(line + at, sizeof line - (size_t)at, "%s%s/%d: %dx%d finest, %d levels kept",
                               at ? "; " : "", DIR_NAME[di], RESOLUTION[ri], cu, cv, kept);
            }
        bench_note("grid-sort %s", line);
        bench_note("kD tree: %u nodes, depth %u; Embree LOW %.1f / MEDIUM %.1f B/tri beyond the mesh (%.1f B/tri)",
                   st.tree.node_count, st.tree.depth, bytes[B_EMBREE_LOW] / m.nt - m.mesh_bytes() / m.nt,
                   bytes[B_EMBREE_MED] / m.nt - m.mesh_bytes() / m.nt, m.mesh_bytes() / m.nt);
    }

    RaySet sets[N_SETS] = {rays_along(rng, m, dirs_d[0], 0), rays_along(rng, m, dirs_d[1], 1), rays_short(rng, m),
                           rays_random(rng, m)};

    snprintf(title, sizeof title, "Rays on the %s mesh: grid-sort vs q_kdtree_raycast / rtcIntersect1, Mrays/s",
             m.name);
    bench_section(title);
    for (int si = 0; si < N_SETS; si++) {
        const RaySet &s = sets[si];
        std::vector<float> hits[T_COUNT];
        std::vector<double> samples[T_COUNT];
        for (int rep = 0; rep < REPS_RAYS; rep++)
            for (int ti = 0; ti < T_COUNT; ti++) {
                int tr = (ti + rep) % T_COUNT;
                double t0 = bench_now();
                trace(tr, st, s, hits[tr]);
                samples[tr].push_back(bench_now() - t0);
            }
        for (int tr = 0; tr < T_COUNT; tr++)
            f.rate[si][tr] = (double)s.size() / median_of(samples[tr]);
        for (int p = T_KD; p < T_COUNT; p += 2)
            for (int tr = 0; tr < T_GS_BATCH_END; tr++) {
                char who[96];
                tracer_name(tr, who, sizeof who);
                tracer_name(p, peer, sizeof peer);
                snprintf(label, sizeof label, "%s: %s", s.tag, who);
                bench_row(label, f.rate[si][tr], samples[tr].data(), REPS_RAYS, peer, f.rate[si][p],
                          samples[p].data(), REPS_RAYS, "rays/s", 1e6, "Mrays/s");
            }
        size_t n = s.size(), nhit = 0, all = 0, pair[T_COUNT] = {0};
        double maxdt[T_COUNT] = {0};
        for (size_t i = 0; i < n; i++) {
            float ref = hits[T_KD][i];
            nhit += ref >= 0;
            bool every = true;
            for (int tr = 0; tr < T_COUNT; tr++) {
                bool a = agree(hits[tr][i], ref);
                pair[tr] += a;
                every = every && a;
                if (a && ref >= 0)
                    maxdt[tr] = std::max(maxdt[tr], std::fabs((double)hits[tr][i] - ref));
            }
            all += every;
        }
        double dn = (double)n;
        bench_note("%s: %zu rays, %.1f%% hit (kD tree); gridsort built for D %s; Embree LOW %.3f Mrays/s;", s.name,
                   n, 100.0 * (double)nhit / dn, DIR_NAME[s.gs_dir], f.rate[si][T_EMBREE_LOW] / 1e6);
        bench_note("  kD tree / Embree MEDIUM %.3f. Agreement with q_kdtree_raycast (hit/miss, |dt| <= 1e-4), max |dt|:",
                   f.rate[si][T_KD] / f.rate[si][T_EMBREE_MED]);
        for (int tr = 0; tr < T_COUNT; tr++) {
            if (tr == T_KD)
                continue;
            char who[96];
            tracer_name(tr, who, sizeof who);
            bench_note("  %-32s %9.4f%%  %.2g", who, 100.0 * (double)pair[tr] / dn, maxdt[tr]);
        }
        bench_note("  all %d tracers agree on %.4f%% of rays (%s 99.9%%)", T_COUNT, 100.0 * (double)all / dn,
                   (double)all >= 0.999 * dn ? "at least" : "CHECK FAILED: under");
        if ((double)all < 0.999 * dn)
            fprintf(stderr, "bench: gridsort: ray agreement under 99.9%% for %s on the %s mesh\n", s.name, m.name);
    }
    bench_note("Rays: median of %d passes; tracer order rotates between passes.", REPS_RAYS);

    q_kdtree_free(&st.tree);
    for (int di = 0; di < N_DIR; di++)
        for (int ri = 0; ri < N_RES; ri++)
            q_gridsort_free(st.gs[di][ri]);
    rtcReleaseScene(st.low);
    rtcReleaseScene(st.med);
    return f;
}

} // namespace

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    double t_start = bench_now();

    q_terrain *t = bench_world(Q_GEN_CAVES, WX, WY, WZ, 1);

    RTCDevice dev = rtcNewDevice("threads=1");
    if (!dev) {
        fprintf(stderr, "bench: rtcNewDevice failed (error %d)\n", (int)rtcGetDeviceError(NULL));
        return 1;
    }
    EmbreeMemory emem;
    rtcSetDeviceMemoryMonitorFunction(dev, memory_monitor, &emem);

    const q_box region_box = {{32, 0, 32}, {96, 64, 96}};
    const q_box world_box = {{0, 0, 0}, {WX, WY, WZ}};
    Mesh meshes[2] = {mesh_box(t, region_box, "64^3 region"), mesh_box(t, world_box, "whole world")};
    q_terrain_destroy(t);

    double dirs_d[N_DIR][3] = {{0, -1, 0}, {0.3, -1, 0.2}};
    float dirs[N_DIR][3];
    for (int di = 0; di < N_DIR; di++) {
        double l = std::sqrt(dirs_d[di][0] * dirs_d[di][0] + dirs_d[di][1] * dirs_d[di][1] +
                             dirs_d[di][2] * dirs_d[di][2]);
        for (int k = 0; k < 3; k++) {
            dirs_d[di][k] /= l;
            dirs[di][k] = (float)dirs_d[di][k];
        }
    }

    /* Warm up Embree's device (thread-local allocators) before measuring it. */
    rtcReleaseScene(embree_build(dev, meshes[0], RTC_BUILD_QUALITY_MEDIUM));

    bench_begin("gridsort", dir);
    Rng rng = {20040517};
    MeshFigures figs[2];
    for (int mi = 0; mi < 2; mi++)
        figs[mi] = run_mesh(meshes[mi], dirs, dirs_d, dev, &emem, rng);

    /* ---- targets ---- */
    bench_section("Targets from the issue: rays along D, grid-sort at resolution 2048");
    bool kd_ok[2] = {true, true}, em_ok[2] = {true, true};
    char label[200];
    for (int mi = 0; mi < 2; mi++)
        for (int si = 0; si < N_DIR; si++)
            for (int tr = 0; tr < 2; tr++) {
                const double *r = figs[mi].rate[si];
                snprintf(label, sizeof label, "%s, D %s, %s: x kD tree", meshes[mi].name, DIR_NAME[si],
                         tr ? "batch" : "raycast");
                bench_row(label, r[tr] / r[T_KD], NULL, 0, "target", 1, NULL, 0, "ratio", 1, "x");
                snprintf(label, sizeof label, "%s, D %s, %s: x Embree MEDIUM", meshes[mi].name, DIR_NAME[si],
                         tr ? "batch" : "raycast");
                bench_row(label, r[tr] / r[T_EMBREE_MED], NULL, 0, "target", 0.5, NULL, 0, "ratio", 1, "x");
                kd_ok[mi] = kd_ok[mi] && r[tr] > r[T_KD];
                em_ok[mi] = em_ok[mi] && r[tr] >= 0.5 * r[T_EMBREE_MED];
            }
    bench_note("met when ours/base >= 1, for q_gridsort_raycast and q_gridsort_raycast_batch, both D");
    for (int mi = 0; mi < 2; mi++)
        bench_note("%s: ahead of the kD tree: %s; at least 0.5x Embree MEDIUM: %s", meshes[mi].name, met(kd_ok[mi]),
                   met(em_ok[mi]));
    bench_note("whole program: %.1f s", bench_now() - t_start);
    bench_end();

    rtcReleaseDevice(dev);
    return 0;
}
