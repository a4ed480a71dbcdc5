/* Mesher speed: q_dc_mesh (engine/mesh/dc.h) per 32^3 render chunk of
 * generated hills-and-caves terrain, side by side in the same run with
 * OpenVDB 10's volumeToMesh (PEERS.md: the dual method, no sharp features)
 * on the same occupancy. Both run on one thread (tbb::global_control).
 *
 * World: q_terrain_generate, Q_GEN_CAVES, 256x64x256, seed 1. Every 32^3
 * chunk box whose mesh is not empty is measured.
 *
 * Quarry: q_dc_mesh(Q_SURFACE_SOLID, scale 1) with positions, normals and
 * materials (what terrain:mesh asks for), a reused scratch buffer of
 * q_dc_scratch_bytes and reused output arrays sized by q_dc_vertex_bound /
 * q_dc_index_bound. The call reads the box grown by 2 from the terrain and
 * converts it to densities itself: that is extraction from Quarry's own
 * structure, and also Quarry's end-to-end figure.
 *
 * OpenVDB: a FloatGrid over the same samples the mesher reads (the box grown
 * by 2 on every side, q_terrain_read), value 0.5 - density with density =
 * occupancy/255 for non-liquid materials and 0 otherwise, isovalue 0.
 * volumeToMesh counts values below the isovalue as inside, so solid is
 * inside exactly where the mesher says so (occupancy >= 128, density > 1/2).
 * The grid is built with tools::copyFromDense at tolerance 0 (air becomes
 * inactive background: the usual sparse form) and marked as a level set so
 * faces wind outward; its transform puts sample (x, y, z) at the voxel
 * centre (x+.5, y+.5, z+.5), as the mesher does. Two extractions:
 *  - whole grid: tools::volumeToMesh(grid, points, tris, quads, 0, 0), the
 *    call as documented. It meshes every sign change of the grid, including
 *    walls wherever solid reaches the grid's edge (outside a grid is
 *    background, i.e. air), so it outputs several times the triangles.
 *  - chunk only: tools::VolumeToMesh with setSurfaceMask(the chunk's box),
 *    which keeps the quads of the edges that start in the mask: the same
 *    ownership rule as q_dc_mesh, so exactly the same quads (checked
 *    below). The output is copied into the same vectors as volumeToMesh
 *    does.
 * The fair comparison is q_dc_mesh against chunk-only extraction from a grid
 * already built (each library meshing from its own structure). End-to-end
 * adds the OpenVDB side's q_terrain_read, the float conversion and the grid
 * build (the grid's destruction is not timed).
 *
 * Statistics: REPS passes over all chunks, alternating which library goes
 * first. A chunk's time is the median of its REPS repetitions; the table
 * shows the median and the mean over chunks, and the tsv samples are the
 * per-chunk times. OpenVDB triangles = triangles + 2 * quads.
 *
 * Reference: q_dc_mesh on every 8^3 physics-chunk box with surface (us),
 * against OpenVDB chunk-only extraction of the same box.
 *
 * Memory: malloc is told to keep freed memory (see main); set
 * QUARRY_BENCH_DEFAULT_MALLOC=1 to measure with glibc's defaults, under
 * which OpenVDB pays page faults for its per-call trees.
 */
extern "C" {
#include "bench.h"
#include "mesh/dc.h"
#include "voxel/material.h"
#include "voxel/terrain.h"
#include "world/world.h"
}

#include <openvdb/openvdb.h>
#include <openvdb/tools/Dense.h>
#include <openvdb/tools/VolumeToMesh.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <malloc.h>
#include <vector>

/* Use the library's own build of the mesher (as volumeToMesh does), which
 * also spares this file a minute of compiling. */
extern template void openvdb::tools::VolumeToMesh::operator()<openvdb::FloatGrid>(const openvdb::FloatGrid &);

namespace {

using openvdb::BoolGrid;
using openvdb::Coord;
using openvdb::CoordBBox;
using openvdb::FloatGrid;
using openvdb::Vec3I;
using openvdb::Vec3s;
using openvdb::Vec4I;

constexpr int WX = 256, WY = 64, WZ = 256;
constexpr int REPS = 5;       /* passes over the 32^3 chunks */
constexpr int REPS_SMALL = 3; /* passes over the 8^3 boxes */

enum Timer { T_QUARRY, T_READ, T_BUILD, T_WHOLE, T_MASKED, T_COUNT };

struct Box {
    q_box box;
    size_t q_tris, whole_tris, masked_tris;
    double q_area, masked_area;
    double t[T_COUNT][REPS];
};

/* Quarry's reused output and scratch, sized for the largest box measured. */
struct Quarry {
    std::vector<float> positions, normals;
    std::vector<uint8_t> materials;
    std::vector<uint32_t> indices;
    std::vector<unsigned char> scratch;
    q_dc_output out;

    explicit Quarry(q_box largest)
        : positions(3 * q_dc_vertex_bound(largest)), normals(3 * q_dc_vertex_bound(largest)),
          materials(q_dc_vertex_bound(largest)), indices(q_dc_index_bound(largest)),
          scratch(q_dc_scratch_bytes(largest)), out()
    {
        out.positions = positions.data();
        out.normals = normals.data();
        out.materials = materials.data();
        out.indices = indices.data();
        out.vertex_capacity = materials.size();
        out.index_capacity = indices.size();
    }
};

/* OpenVDB's side: the read samples, the dense float field and the output. */
struct Peer {
    std::vector<uint8_t> mat, occ;
    std::vector<float> field;
    std::vector<Vec3s> points;
    std::vector<Vec3I> tris;
    std::vector<Vec4I> quads;
    openvdb::math::Transform::Ptr transform;
    bool liquid[256];
};

q_box grow(q_box b, int n)
{
    for (int a = 0; a < 3; a++) {
        b.min[a] -= n;
        b.max[a] += n;
    }
    return b;
}

CoordBBox bbox_of(q_box b)
{
    return CoordBBox(Coord(b.min[0], b.min[1], b.min[2]), Coord(b.max[0] - 1, b.max[1] - 1, b.max[2] - 1));
}

size_t quarry_mesh(const q_terrain *t, q_box box, Quarry &q)
{
    char err[256] = "";
    bench_check(q_dc_mesh(t, box, Q_SURFACE_SOLID, 1.0f, &q.out, q.scratch.data(), err, sizeof err), "q_dc_mesh",
                err);
    return q.out.index_count / 3;
}

/* q_terrain_read of the box grown by 2, converted to 0.5 - solid density. */
void peer_read(const q_terrain *t, q_box region, Peer &p)
{
    size_t n = (size_t)q_box_volume(region);
    p.mat.resize(n);
    p.occ.resize(n);
    p.field.resize(n);
    char err[256] = "";
    bench_check(q_terrain_read(t, region, p.mat.data(), p.occ.data(), err, sizeof err), "q_terrain_read", err);
    for (size_t i = 0; i < n; i++)
        p.field[i] = 0.5f - (p.liquid[p.mat[i]] ? 0.0f : (float)p.occ[i] / 255.0f);
}

FloatGrid::Ptr peer_build(q_box region, Peer &p)
{
    FloatGrid::Ptr g = FloatGrid::create(0.5f); /* background: air */
    g->setGridClass(openvdb::GRID_LEVEL_SET);
    g->setTransform(p.transform);
    openvdb::tools::Dense<float, openvdb::tools::LayoutXYZ> dense(bbox_of(region), p.field.data());
    openvdb::tools::copyFromDense(dense, *g, 0.0f, true);
    return g;
}

void peer_mesh_whole(const FloatGrid &g, Peer &p)
{
    openvdb::tools::volumeToMesh(g, p.points, p.tris, p.quads, 0.0, 0.0);
}

/* What volumeToMesh does, with a surface mask set. */
void peer_mesh_masked(const FloatGrid &g, const BoolGrid::Ptr &mask, Peer &p)
{
    openvdb::tools::VolumeToMesh mesher(0.0, 0.0);
    mesher.setSurfaceMask(mask);
    mesher(g);
    p.points.clear();
    p.points.resize(mesher.pointListSize());
    std::copy(mesher.pointList().get(), mesher.pointList().get() + mesher.pointListSize(), p.points.begin());
    openvdb::tools::PolygonPoolList &pools = mesher.polygonPoolList();
    size_t nq = 0, nt = 0;
    for (size_t i = 0; i < mesher.polygonPoolListSize(); i++) {
        nq += pools[i].numQuads();
        nt += pools[i].numTriangles();
    }
    p.quads.clear();
    p.quads.resize(nq);
    p.tris.clear();
    p.tris.resize(nt);
    size_t iq = 0, it = 0;
    for (size_t i = 0; i < mesher.polygonPoolListSize(); i++) {
        for (size_t k = 0; k < pools[i].numQuads(); k++)
            p.quads[iq++] = pools[i].quad(k);
        for (size_t k = 0; k < pools[i].numTriangles(); k++)
            p.tris[it++] = pools[i].triangle(k);
    }
}

size_t peer_tris(const Peer &p)
{
    return p.tris.size() + 2 * p.quads.size();
}

double tri_area(const float *a, const float *b, const float *c)
{
    double u[3], v[3];
    for (int k = 0; k < 3; k++) {
        u[k] = (double)b[k] - a[k];
        v[k] = (double)c[k] - a[k];
    }
    double x = u[1] * v[2] - u[2] * v[1], y = u[2] * v[0] - u[0] * v[2], z = u[0] * v[1] - u[1] * v[0];
    return 0.5 * std::sqrt(x * x + y * y + z * z);
}

double quarry_area(const Quarry &q)
{
    double s = 0;
    for (size_t i = 0; i < q.out.index_count; i += 3)
        s += tri_area(&q.out.positions[3 * q.out.indices[i]], &q.out.positions[3 * q.out.indices[i + 1]],
                      &q.out.positions[3 * q.out.indices[i + 2]]);
    return s;
}

double peer_area(const Peer &p)
{
    double s = 0;
    for (const Vec3I &t : p.tris)
        s += tri_area(p.points[t[0]].asPointer(), p.points[t[1]].asPointer(), p.points[t[2]].asPointer());
    for (const Vec4I &q : p.quads) {
        s += tri_area(p.points[q[0]].asPointer(), p.points[q[1]].asPointer(), p.points[q[2]].asPointer());
        s += tri_area(p.points[q[0]].asPointer(), p.points[q[2]].asPointer(), p.points[q[3]].asPointer());
    }
    return s;
}

BoolGrid::Ptr make_mask(q_box box, const Peer &p)
{
    BoolGrid::Ptr m = BoolGrid::create(false);
    m->setTransform(p.transform); /* equal transforms: the mask is read voxel for voxel */
    m->fill(bbox_of(box), true, true);
    return m;
}

/* Every box of the given size in the world whose mesh is not empty, with
 * its triangle counts and areas (an untimed first pass, which also warms
 * both libraries up). */
std::vector<Box> find_boxes(const q_terrain *t, int size, Quarry &q, Peer &p)
{
    std::vector<Box> boxes;
    for (int z = 0; z < WZ; z += size)
        for (int y = 0; y < WY; y += size)
            for (int x = 0; x < WX; x += size) {
                Box b = {};
                b.box = q_box{{x, y, z}, {x + size, y + size, z + size}};
                b.q_tris = quarry_mesh(t, b.box, q);
                if (b.q_tris == 0)
                    continue;
                b.q_area = quarry_area(q);
                BoolGrid::Ptr mask = make_mask(b.box, p);
                q_box region = grow(b.box, 2);
                peer_read(t, region, p);
                FloatGrid::Ptr g = peer_build(region, p);
                peer_mesh_whole(*g, p);
                b.whole_tris = peer_tris(p);
                peer_mesh_masked(*g, mask, p);
                b.masked_tris = peer_tris(p);
                b.masked_area = peer_area(p);
                boxes.push_back(b);
            }
    return boxes;
}

void time_pass(const q_terrain *t, std::vector<Box> &boxes, int rep, bool whole, Quarry &q, Peer &p)
{
    for (Box &b : boxes) {
        BoolGrid::Ptr mask = make_mask(b.box, p); /* untimed */
        for (int turn = 0; turn < 2; turn++) {
            if ((turn == 0) == (rep % 2 == 0)) {
                double t0 = bench_now();
                quarry_mesh(t, b.box, q);
                b.t[T_QUARRY][rep] = bench_now() - t0;
                continue;
            }
            q_box region = grow(b.box, 2);
            double t0 = bench_now();
            peer_read(t, region, p);
            double t1 = bench_now();
            FloatGrid::Ptr g = peer_build(region, p);
            double t2 = bench_now();
            peer_mesh_masked(*g, mask, p);
            double t3 = bench_now();
            b.t[T_READ][rep] = t1 - t0;
            b.t[T_BUILD][rep] = t2 - t1;
            b.t[T_MASKED][rep] = t3 - t2;
            if (whole) {
                peer_mesh_whole(*g, p);
                b.t[T_WHOLE][rep] = bench_now() - t3;
            }
        }
    }
}

/* Per-box time: the median over the repetitions of the sum of the timers. */
std::vector<double> per_box(const std::vector<Box> &boxes, std::initializer_list<Timer> timers, int reps)
{
    std::vector<double> v;
    for (const Box &b : boxes) {
        double s[REPS];
        for (int r = 0; r < reps; r++) {
            s[r] = 0;
            for (Timer k : timers)
                s[r] += b.t[k][r];
        }
        v.push_back(bench_median(s, reps));
    }
    return v;
}

double median_of(std::vector<double> v)
{
    return bench_median(v.data(), (int)v.size());
}

double mean_of(const std::vector<double> &v)
{
    double s = 0;
    for (double x : v)
        s += x;
    return s / (double)v.size();
}

/* Two rows, median and mean over boxes, of our per-box times against the
 * baseline's. */
void time_rows(const char *what, const std::vector<double> &ours, const char *baseline,
               const std::vector<double> &base, double scale, const char *unit)
{
    char label[160];
    int n = (int)ours.size();
    snprintf(label, sizeof label, "%s: median", what);
    bench_row(label, median_of(ours), ours.data(), n, baseline, median_of(base), base.data(), n, "s", scale, unit);
    snprintf(label, sizeof label, "%s: mean", what);
    bench_row(label, mean_of(ours), ours.data(), n, baseline, mean_of(base), base.data(), n, "s", scale, unit);
}

std::vector<double> tri_counts(const std::vector<Box> &boxes, size_t Box::*field)
{
    std::vector<double> v;
    for (const Box &b : boxes)
        v.push_back((double)(b.*field));
    return v;
}

void tri_rows(const char *what, const std::vector<double> &ours, const char *baseline,
              const std::vector<double> &base)
{
    char label[160];
    snprintf(label, sizeof label, "%s: median", what);
    bench_row(label, median_of(ours), NULL, 0, baseline, median_of(base), NULL, 0, "triangles", 1, "");
    snprintf(label, sizeof label, "%s: mean", what);
    bench_row(label, mean_of(ours), NULL, 0, baseline, mean_of(base), NULL, 0, "triangles", 1, "");
}

} // namespace

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    /* OpenVDB allocates and frees its trees (hundreds of KiB) on every call.
     * By default glibc hands such blocks back to the kernel, and the next
     * call pays a page fault per page, which costs ~15 us on the VMs these
     * runs come from and tripled OpenVDB's time. Keep freed memory in the
     * process, as an engine's allocator would. q_dc_mesh allocates nothing
     * here (scratch and output are reused), so this only helps OpenVDB. */
    const bool default_malloc = getenv("QUARRY_BENCH_DEFAULT_MALLOC") != NULL;
    if (!default_malloc) {
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
    }
    tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
    openvdb::initialize();

    char err[256] = "";
    q_world_def wd = q_default_world_def();
    q_world *w = q_world_create(&wd, err, sizeof err);
    if (!w) {
        fprintf(stderr, "bench: q_world_create: %s\n", err);
        return 1;
    }
    q_generate_def gd = q_default_generate_def();
    gd.kind = Q_GEN_CAVES;
    gd.size[0] = WX, gd.size[1] = WY, gd.size[2] = WZ;
    gd.seed = 1;
    bench_check(q_terrain_generate(q_world_terrain(w), &gd, err, sizeof err), "q_terrain_generate", err);
    const q_terrain *t = q_world_terrain(w);

    Quarry q(q_box{{0, 0, 0}, {32, 32, 32}});
    Peer p;
    for (int m = 0; m < 256; m++)
        p.liquid[m] = m < q_material_count() && q_material_get(m)->liquid;
    p.transform = openvdb::math::Transform::createLinearTransform(1.0);
    p.transform->postTranslate(openvdb::Vec3d(0.5, 0.5, 0.5));

    /* ---- 32^3 render chunks ---- */
    std::vector<Box> chunks = find_boxes(t, 32, q, p);
    for (int rep = 0; rep < REPS; rep++)
        time_pass(t, chunks, rep, true, q, p);

    std::vector<double> tq = per_box(chunks, {T_QUARRY}, REPS);
    std::vector<double> tm = per_box(chunks, {T_MASKED}, REPS);
    std::vector<double> tw = per_box(chunks, {T_WHOLE}, REPS);
    std::vector<double> e2e_m = per_box(chunks, {T_READ, T_BUILD, T_MASKED}, REPS);
    std::vector<double> e2e_w = per_box(chunks, {T_READ, T_BUILD, T_WHOLE}, REPS);
    std::vector<double> tread = per_box(chunks, {T_READ}, REPS);
    std::vector<double> tbuild = per_box(chunks, {T_BUILD}, REPS);

    bench_begin("mesh", dir);
    char title[200];
    snprintf(title, sizeof title,
             "Meshing: q_dc_mesh vs OpenVDB volumeToMesh, %zu 32^3 chunks of caves %dx%dx%d "
             "(per-chunk median of %d)",
             chunks.size(), WX, WY, WZ, REPS);
    bench_section_inverse(title);
    time_rows("ms/chunk, same quads", tq, "VolumeToMesh + chunk mask", tm, 1e-3, "ms");
    time_rows("ms/chunk, whole grid", tq, "volumeToMesh(grid)", tw, 1e-3, "ms");
    time_rows("ms/chunk end-to-end, same quads", tq, "read+build+mask mesh", e2e_m, 1e-3, "ms");
    time_rows("ms/chunk end-to-end, whole grid", tq, "read+build+volumeToMesh", e2e_w, 1e-3, "ms");
    std::vector<double> nq = tri_counts(chunks, &Box::q_tris);
    tri_rows("triangles/chunk, same quads", nq, "VolumeToMesh + chunk mask", tri_counts(chunks, &Box::masked_tris));
    tri_rows("triangles/chunk, whole grid", nq, "volumeToMesh(grid)", tri_counts(chunks, &Box::whole_tris));

    int faster = 0, same = 0;
    double qa = 0, ma = 0, tris = 0;
    std::vector<double> ratio, layer_q[2], layer_m[2];
    for (size_t i = 0; i < chunks.size(); i++) {
        ratio.push_back(tm[i] / tq[i]);
        int layer = chunks[i].box.min[1] >= 32;
        layer_q[layer].push_back(tq[i]);
        layer_m[layer].push_back(tm[i]);
        faster += tq[i] < tm[i];
        same += chunks[i].q_tris == chunks[i].masked_tris;
        qa += chunks[i].q_area;
        ma += chunks[i].masked_area;
        tris += (double)chunks[i].q_tris;
    }
    bench_note("base/ours > 1: Quarry is faster. Times: per chunk the median of %d repetitions; samples in the tsv",
               REPS);
    bench_note("are the per-chunk times. OpenVDB triangles = tris + 2 * quads; one thread on both sides.");
    bench_note("same quads: OpenVDB with setSurfaceMask(chunk box) keeps the edges that start in the box, the");
    bench_note("mesher's ownership rule; triangle counts equal in %d of %zu chunks, surface area %.4f x Quarry's.",
               same, chunks.size(), qa > 0 ? ma / qa : 0.0);
    bench_note("whole grid: volumeToMesh meshes all of the 36^3 samples read, with walls where solid meets the");
    bench_note("grid's edge. OpenVDB grid from the same samples: read + float conversion %.3f ms, copyFromDense",
               median_of(tread) * 1e3);
    bench_note("%.3f ms (medians). Quarry faster than chunk-mask extraction in %d of %zu chunks; Quarry costs",
               median_of(tbuild) * 1e3, faster, chunks.size());
    bench_note("%.3f us per output triangle on average (sum of chunk times / sum of triangles).",
               mean_of(tq) * (double)chunks.size() / tris * 1e6);
    bench_note("per-chunk ratio (chunk mask / Quarry): median %.3f, min %.3f, max %.3f. Medians, lower chunk",
               median_of(ratio), *std::min_element(ratio.begin(), ratio.end()),
               *std::max_element(ratio.begin(), ratio.end()));
    bench_note("layer (y 0..32, mostly solid): Quarry %.3f ms, mask %.3f ms; upper layer: %.3f ms, %.3f ms.",
               median_of(layer_q[0]) * 1e3, median_of(layer_m[0]) * 1e3, median_of(layer_q[1]) * 1e3,
               median_of(layer_m[1]) * 1e3);
    bench_note("%s", default_malloc ? "glibc malloc defaults (QUARRY_BENCH_DEFAULT_MALLOC set)"
                                    : "malloc keeps freed memory (mallopt; QUARRY_BENCH_DEFAULT_MALLOC=1 to disable)");

    /* ---- 8^3 physics chunks ---- */
    std::vector<Box> small = find_boxes(t, 8, q, p);
    for (int rep = 0; rep < REPS_SMALL; rep++)
        time_pass(t, small, rep, false, q, p);
    std::vector<double> sq = per_box(small, {T_QUARRY}, REPS_SMALL);
    std::vector<double> sm = per_box(small, {T_MASKED}, REPS_SMALL);
    snprintf(title, sizeof title, "Meshing 8^3 physics chunks: %zu boxes with surface (per-box median of %d)",
             small.size(), REPS_SMALL);
    bench_section_inverse(title);
    time_rows("us/box, same quads", sq, "VolumeToMesh + chunk mask", sm, 1e-6, "us");
    tri_rows("triangles/box", tri_counts(small, &Box::q_tris), "VolumeToMesh + chunk mask",
             tri_counts(small, &Box::masked_tris));
    bench_end();

    q_world_destroy(w);
    return 0;
}
