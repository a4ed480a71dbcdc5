/* Terrain queries: Quarry's loose kD tree (engine/physics/kdtree.h) and bit
 * broadphase (engine/physics/terrain_physics.h) side by side in one run with
 * Bullet 3.24's btBvhTriangleMeshShape and Embree 3.13 (PEERS.md), on the
 * same triangles, the same rays and the same boxes, one thread everywhere.
 *
 * Input: q_terrain_generate Q_GEN_CAVES 128x64x128, seed 1, voxel units.
 *  - chunks: q_dc_mesh (solid surface) of every 8^3 box [c*8, c*8+8) inside
 *    the world with out.origin = c*8 (chunk-local positions, as the physics
 *    cache stores them) and at least one triangle; 16-bit indices for Quarry
 *    and Bullet (PHY_SHORT); Embree only takes 32-bit indices.
 *  - region: one q_dc_mesh call on the 64^3 box [32,96) x [0,64) x [32,96),
 *    origin at its corner; 32-bit indices for all three.
 * All three index exactly these arrays: Bullet through btTriangleIndexVertexArray,
 * Embree through shared buffers (the position array carries 16 bytes of
 * padding, which Embree reads past the last vertex).
 *
 * Build. Quarry: q_kdtree_build_sorted (the physics cache's build: it
 * reorders the mesh's indices so that leaves are runs of triangles) on its
 * own copy of the indices (copied untimed before each build; the peers keep
 * the mesher's) and the same float arrays, and for chunks
 * also on the physics cache's own storage ("int16": positions as int16 in
 * 1/Q_DC_GRID voxel via q_kd_mesh.qpositions, exact since the mesher snaps
 * to that grid). Bullet: btTriangleIndexVertexArray +
 * btBvhTriangleMeshShape(useQuantizedAabbCompression true / false); one pass
 * computing the mesh bounds is timed with it and handed over with
 * setPremadeAabb (without it the shape's constructor makes six support-vertex
 * passes instead). Embree: rtcNewScene, a triangle geometry with shared
 * buffers, rtcCommitScene at RTC_BUILD_QUALITY_LOW or MEDIUM (scene and
 * geometry quality), on rtcNewDevice("threads=1"). Freeing is not timed.
 * A chunk's time is the median of REPS_CHUNK passes; the table gives the
 * mean (total over chunks / count) and the median over chunks. Libraries run
 * in a fresh random order for every chunk and pass (every region pass), so
 * that none always follows the same one (whose code and data it would find
 * in cache or not). Chunk builds (microseconds) are wall-clock; region builds
 * (milliseconds) are timed in thread CPU time, like the ray passes.
 *
 * Memory, bytes per triangle including the mesh. The mesh is positions
 * (12 B/vertex), one material byte per vertex and indices (6 B/triangle at
 * 16 bits, 12 B at 32 bits): Quarry and Bullet with 16-bit indices (the
 * region's vertex count fits), Embree with the 32-bit indices it requires;
 * "int16" rows count 6 B a vertex for positions. Quarry's indices are its
 * own reordered copy, counted once like the peers'; it adds 24 B per quad
 * node (leaves store nothing). Bullet adds the capacity of its node arrays
 * (quantized 16 B, float 64 B per node) and subtree headers, read from the
 * btQuantizedBvh. Embree adds what its memory monitor callback
 * (rtcSetDeviceMemoryMonitorFunction) says the committed scene still holds
 * (there is no device property for it). Object headers are not counted.
 *
 * Rays, region only, unit directions, closest hit in [0, length]:
 *  - short: origin a random point of a random triangle moved by up to one
 *    voxel on each axis, random direction, length 4;
 *  - long: between random points on two different faces of the 64^3 box;
 *  - coherent: 256x256 parallel rays from a plane outside the region, in
 *    scanline order (an orthographic camera looking down at the terrain).
 * Quarry q_kdtree_raycast; Bullet performRaycast with a btTriangleRaycastCallback
 * that records the triangle (Bullet itself only reports hits nearer than the
 * best so far); Embree rtcIntersect1. Agreement: same hit/miss and, for
 * hits, |t - t_quarry| <= 1e-3 voxels. Each ray set is traced in REPS_TRACE
 * passes per library (libraries in rotating order), each pass timed in thread
 * CPU time (CLOCK_THREAD_CPUTIME_ID); the table gives the median pass.
 *
 * Engine path (what world:raycast runs): the same three ray sets traced with
 * q_terrain_physics_raycast (closest hit, Q_RAY_SOLID) on a q_terrain_physics
 * over the whole bench world (voxel size 1, 64 MiB cache budget): a 3D DDA
 * over the 8^3 physics chunks, skipping chunks whose broadphase masks are
 * empty, and each chunk's own small tree (the LRU cache's int16 meshes).
 * Each ray is moved to world coordinates (+32 on x and z) and clipped to the
 * region's box [32,96)x[0,64)x[32,96), which is all of the world the peers'
 * region trees hold: the engine traces the part of the segment inside the
 * box (a ray whose segment misses the box is traced with length 0 from its
 * origin), and its t is counted from the original origin. Long rays lie in
 * the box already; coherent rays start outside it (the region trees reject
 * that part by their bounds). The cache is warmed by one untimed pass over
 * every set, so every chunk the rays reach is built before timing; the
 * program checks that the timed passes built nothing (cached chunk count and
 * bytes unchanged, no eviction), so the timing is queries, not builds. The
 * engine takes its turn in the same rotation as the region tracers and its
 * rows are ratios to the peers' passes of the same run.
 * Checks: (1) the union of the meshes of the 512 8^3 chunks inside the region
 * (chunk-local positions moved to the region's corner, exact on the
 * 1/Q_DC_GRID grid) is the region mesh's triangle set (sorted vertex triples,
 * winding kept); (2) the engine against Embree MEDIUM on the union of every
 * chunk mesh of the world, on the clipped segments (same hit/miss, |dt| <=
 * 1e-3 voxels); (3) the engine against q_kdtree_raycast on the region tree
 * (full segments). The triangle sets differ only near the box's faces: a
 * chunk's triangles reach half a voxel past its box (cells straddle its
 * faces), so the region's own triangles reach half a voxel outside the box,
 * where the clipped segment does not go, and triangles of the chunks
 * around the region reach half a voxel into it. A difference with (3) counts as
 * explained only when the engine agrees with (2) and either the reference's
 * hit is a triangle of a chunk outside the region or the region tree's hit
 * point lies outside the box; every other difference is reported as a
 * failed check.
 *
 * AABB queries: boxes with random extents of 1-3 voxels per axis centred on
 * random surface points of the region: q_kdtree_query_aabb vs
 * processAllTriangles with a counting callback (REPS_TRACE passes, thread CPU
 * time, median).
 *
 * Broadphase: q_terrain_physics_broadphase on the whole world against a
 * per-voxel scan, q_terrain_read of the box's voxel range grown by 2 and a
 * test for a non-liquid voxel with occupancy >= 128 (the broadphase grows the
 * box by one voxel and its bits by one more, so both answer the same
 * question; the answers are compared). False positives are counted against
 * q_terrain_physics_overlap_box on the same boxes.
 */
#define _Static_assert static_assert /* kdtree.h is C11 */
extern "C" {
#include "bench.h"
#include "mesh/dc.h"
#include "physics/kdtree.h"
#include "physics/terrain_physics.h"
#include "voxel/material.h"
#include "voxel/terrain.h"
}
#undef _Static_assert

#include <BulletCollision/NarrowPhaseCollision/btRaycastCallback.h>
#include <btBulletCollisionCommon.h>
#include <embree3/rtcore.h>

#include "embree_ray.h"

#include <algorithm>
#include <iterator>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int WX = 128, WY = 64, WZ = 128;
constexpr int REPS_CHUNK = 5;  /* passes over all chunks */
constexpr int REPS_REGION = 7; /* region builds */
constexpr int REPS_RAYS = 3;   /* passes over query sets (AABB, broadphase) */
constexpr int REPS_TRACE = 7;  /* passes over each ray set and the AABB set (the VM is noisy) */
constexpr int N_SHORT = 100000, N_LONG = 20000, GRID = 256;
constexpr int N_AABB = 50000;
constexpr int N_BOXES = 100000; /* broadphase, per placement */
constexpr double AGREE_EPS = 1e-3;

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

double mean_of(const std::vector<double> &v)
{
    double s = 0;
    for (double x : v)
        s += x;
    return v.empty() ? 0.0 : s / (double)v.size();
}

/* ---- meshes ---- */

struct Mesh {
    std::vector<float> pos; /* 3 per vertex, then 4 floats of padding (Embree) */
    std::vector<uint8_t> mat;
    std::vector<uint32_t> idx32;
    std::vector<uint16_t> idx16; /* empty when over 65536 vertices */
    std::vector<int16_t> qpos;   /* chunks: 1/Q_DC_GRID voxel units, as the physics cache stores them */
    uint32_t nv = 0, nt = 0;
    /* Quarry's own copy of the indices, which q_kdtree_build_sorted reorders
     * (the physics cache owns its chunks' meshes the same way); the peers
     * keep idx16 / idx32. */
    mutable std::vector<uint16_t> own16;
    mutable std::vector<uint32_t> own32;

    q_kd_mesh kd(bool use16, bool quantized) const
    {
        q_kd_mesh m{};
        m.positions = quantized ? nullptr : pos.data();
        m.qpositions = quantized ? qpos.data() : nullptr;
        m.qscale = 1.0f / Q_DC_GRID;
        m.indices16 = use16 ? idx16.data() : nullptr;
        m.indices32 = use16 ? nullptr : idx32.data();
        m.triangle_count = nt;
        return m;
    }
    /* The same mesh on Quarry's own indices, copied afresh from the peers'
     * (so that every build starts from the mesher's order). */
    q_kd_mesh kd_own(bool use16, bool quantized) const
    {
        q_kd_mesh m = kd(use16, quantized);
        if (use16) {
            own16 = idx16;
            m.indices16 = own16.data();
        } else {
            own32 = idx32;
            m.indices32 = own32.data();
        }
        return m;
    }
    bool build_sorted(q_kdtree *tree, const q_kd_mesh &km, uint32_t *order = nullptr) const
    {
        return q_kdtree_build_sorted(tree, &km, km.indices16 ? own16.data() : nullptr,
                                     km.indices16 ? nullptr : own32.data(), order);
    }
    /* Mesh arrays as stored: positions (12 B a vertex as floats, 6 as
     * int16), a material byte per vertex, indices. */
    double mesh_bytes(int index_bytes, bool quantized = false) const
    {
        return (quantized ? 7.0 : 13.0) * nv + 3.0 * index_bytes * nt;
    }
};

struct Mesher {
    std::vector<float> pos;
    std::vector<uint8_t> mat;
    std::vector<uint32_t> idx;
    std::vector<unsigned char> scratch;
    q_dc_output out;

    explicit Mesher(q_box largest)
        : pos(3 * q_dc_vertex_bound(largest)), mat(q_dc_vertex_bound(largest)), idx(q_dc_index_bound(largest)),
          scratch(q_dc_scratch_bytes(largest)), out()
    {
        out.positions = pos.data();
        out.materials = mat.data();
        out.indices = idx.data();
        out.vertex_capacity = mat.size();
        out.index_capacity = idx.size();
    }

    Mesh mesh(const q_terrain *t, q_box box)
    {
        char err[256] = "";
        memcpy(out.origin, box.min, sizeof box.min);
        bench_check(q_dc_mesh(t, box, Q_SURFACE_SOLID, 1.0f, &out, scratch.data(), err, sizeof err), "q_dc_mesh",
                    err);
        Mesh m;
        m.nv = (uint32_t)out.vertex_count;
        m.nt = (uint32_t)(out.index_count / 3);
        m.pos.assign(pos.begin(), pos.begin() + 3 * m.nv);
        m.pos.resize(3 * m.nv + 4, 0.0f);
        m.mat.assign(mat.begin(), mat.begin() + m.nv);
        m.idx32.assign(idx.begin(), idx.begin() + 3 * m.nt);
        if (m.nv <= 65536)
            m.idx16.assign(m.idx32.begin(), m.idx32.end());
        bool fits = true;
        for (uint32_t i = 0; i < 3 * m.nv; i++) {
            double g = std::lrint((double)m.pos[i] * Q_DC_GRID);
            fits = fits && g >= INT16_MIN && g <= INT16_MAX && (float)(g / Q_DC_GRID) == m.pos[i];
        }
        if (fits)
            for (uint32_t i = 0; i < 3 * m.nv; i++)
                m.qpos.push_back((int16_t)std::lrint((double)m.pos[i] * Q_DC_GRID));
        return m;
    }
};

/* ---- Bullet ---- */

/* Reads btQuantizedBvh's protected arrays through member pointers named in a
 * derived class (which C++ allows), without touching the object's type. */
struct BvhPeek : btQuantizedBvh {
    static size_t node_bytes(const btQuantizedBvh *b)
    {
        NodeArray btQuantizedBvh::*f = &BvhPeek::m_contiguousNodes;
        NodeArray btQuantizedBvh::*fl = &BvhPeek::m_leafNodes;
        QuantizedNodeArray btQuantizedBvh::*q = &BvhPeek::m_quantizedContiguousNodes;
        QuantizedNodeArray btQuantizedBvh::*ql = &BvhPeek::m_quantizedLeafNodes;
        BvhSubtreeInfoArray btQuantizedBvh::*h = &BvhPeek::m_SubtreeHeaders;
        return (size_t)((b->*f).capacity() + (b->*fl).capacity()) * sizeof(btOptimizedBvhNode) +
               (size_t)((b->*q).capacity() + (b->*ql).capacity()) * sizeof(btQuantizedBvhNode) +
               (size_t)(b->*h).capacity() * sizeof(btBvhSubtreeInfo);
    }
    static int node_count(const btQuantizedBvh *b)
    {
        int btQuantizedBvh::*c = &BvhPeek::m_curNodeIndex;
        return b->*c;
    }
};

struct BulletTree {
    btTriangleIndexVertexArray *array = nullptr;
    btBvhTriangleMeshShape *shape = nullptr;

    void build(const Mesh &m, bool use16, bool quantized)
    {
        btIndexedMesh im;
        im.m_numTriangles = (int)m.nt;
        im.m_triangleIndexBase = use16 ? (const unsigned char *)m.idx16.data() : (const unsigned char *)m.idx32.data();
        im.m_triangleIndexStride = use16 ? 3 * (int)sizeof(uint16_t) : 3 * (int)sizeof(uint32_t);
        im.m_numVertices = (int)m.nv;
        im.m_vertexBase = (const unsigned char *)m.pos.data();
        im.m_vertexStride = 3 * (int)sizeof(float);
        im.m_indexType = use16 ? PHY_SHORT : PHY_INTEGER;
        im.m_vertexType = PHY_FLOAT;
        array = new btTriangleIndexVertexArray();
        array->addIndexedMesh(im, im.m_indexType);
        float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (uint32_t v = 0; v < m.nv; v++)
            for (int a = 0; a < 3; a++) {
                lo[a] = std::min(lo[a], m.pos[3 * v + a]);
                hi[a] = std::max(hi[a], m.pos[3 * v + a]);
            }
        array->setPremadeAabb(btVector3(lo[0], lo[1], lo[2]), btVector3(hi[0], hi[1], hi[2]));
        shape = new btBvhTriangleMeshShape(array, quantized, true);
    }
    void release()
    {
        delete shape;
        delete array;
        shape = nullptr;
        array = nullptr;
    }
    size_t node_bytes() { return BvhPeek::node_bytes(shape->getOptimizedBvh()); }
    int node_count() { return BvhPeek::node_count(shape->getOptimizedBvh()); }
};

struct ClosestHit : btTriangleRaycastCallback {
    int triangle = -1;
    ClosestHit(const btVector3 &from, const btVector3 &to) : btTriangleRaycastCallback(from, to) {}
    btScalar reportHit(const btVector3 &, btScalar fraction, int, int triangle_index) override
    {
        triangle = triangle_index; /* only called when nearer than m_hitFraction */
        return fraction;
    }
};

struct CountTriangles : btTriangleCallback {
    size_t count = 0;
    void processTriangle(btVector3 *, int, int) override { count++; }
};

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
    rtcSetSharedGeometryBuffer(g, RTC_BUFFER_TYPE_INDEX, 0, RTC_FORMAT_UINT3, m.idx32.data(), 0, 3 * sizeof(uint32_t),
                               m.nt);
    rtcCommitGeometry(g);
    rtcAttachGeometry(scene, g);
    rtcReleaseGeometry(g);
    rtcCommitScene(scene);
    return scene;
}

/* ---- build timing ---- */

/* B_QUARRY indexes the float arrays the peers get; B_QUARRY_I16 (chunks only)
 * the 16-bit grid positions the physics cache really stores. */
enum Builder { B_QUARRY, B_BULLET_Q, B_BULLET_F, B_EMBREE_LOW, B_EMBREE_MED, B_QUARRY_I16, B_COUNT };
constexpr int B_PEERS_END = B_QUARRY_I16; /* peers are [1, B_PEERS_END) */
const char *const BUILDER_NAME[B_COUNT] = {"q_kdtree_build_sorted", "Bullet quantized", "Bullet float",
                                           "Embree LOW",     "Embree MEDIUM",    "q_kdtree_build_sorted int16"};

struct Measured {
    double seconds;
    double bytes;     /* structure bytes beyond the mesh */
    double nodes;
};

/* order[0, n) = the builders 0..n-1 in a random order (Fisher-Yates). */
void shuffle_builders(Rng &rng, Builder *order, int n)
{
    for (int i = 0; i < n; i++)
        order[i] = (Builder)i;
    for (int i = n - 1; i > 0; i--)
        std::swap(order[i], order[rng.next() % (uint64_t)(i + 1)]);
}

Measured build_once(Builder b, const Mesh &m, bool use16, RTCDevice dev, EmbreeMemory *mem, double (*now)())
{
    Measured r = {0, 0, 0};
    if (b == B_QUARRY || b == B_QUARRY_I16) {
        q_kd_mesh km = m.kd_own(use16, b == B_QUARRY_I16); /* the copy is not timed */
        q_kdtree tree;
        double t0 = now();
        bool ok = m.build_sorted(&tree, km);
        r.seconds = now() - t0;
        if (!ok) {
            fprintf(stderr, "bench: q_kdtree_build_sorted failed\n");
            exit(1);
        }
        r.nodes = tree.node_count;
        r.bytes = (double)tree.word_count * sizeof(uint32_t);
        q_kdtree_free(&tree);
    } else if (b == B_BULLET_Q || b == B_BULLET_F) {
        BulletTree bt;
        double t0 = now();
        bt.build(m, use16, b == B_BULLET_Q);
        r.seconds = now() - t0;
        r.nodes = bt.node_count();
        r.bytes = (double)bt.node_bytes();
        bt.release();
    } else {
        long long before = mem->live;
        double t0 = now();
        RTCScene s = embree_build(dev, m, b == B_EMBREE_LOW ? RTC_BUILD_QUALITY_LOW : RTC_BUILD_QUALITY_MEDIUM);
        r.seconds = now() - t0;
        r.bytes = (double)(mem->live - before);
        rtcReleaseScene(s);
    }
    return r;
}

/* Mesh bytes each library indexes: 16-bit indices except for Embree. */
double mesh_bytes_for(Builder b, const Mesh &m)
{
    return m.mesh_bytes(b == B_EMBREE_LOW || b == B_EMBREE_MED ? 4 : 2, b == B_QUARRY_I16);
}

/* ---- rays ---- */

struct Ray {
    float o[3], d[3], len;
};
struct Hit {
    bool hit;
    float t;
};

void random_surface_point(Rng &rng, const Mesh &m, double p[3])
{
    uint32_t tri = (uint32_t)(rng.next() % m.nt);
    double u = rng.uniform(), v = rng.uniform();
    if (u + v > 1)
        u = 1 - u, v = 1 - v;
    const float *a = &m.pos[3 * m.idx32[3 * tri]], *b = &m.pos[3 * m.idx32[3 * tri + 1]],
                *c = &m.pos[3 * m.idx32[3 * tri + 2]];
    for (int k = 0; k < 3; k++)
        p[k] = a[k] + u * (b[k] - a[k]) + v * (c[k] - a[k]);
}

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

Ray make_ray(const double o[3], const double e[3])
{
    Ray r;
    double d[3] = {e[0] - o[0], e[1] - o[1], e[2] - o[2]};
    double l = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    for (int k = 0; k < 3; k++) {
        r.o[k] = (float)o[k];
        r.d[k] = (float)(d[k] / l);
    }
    r.len = (float)l;
    return r;
}

std::vector<Ray> short_rays(Rng &rng, const Mesh &m)
{
    std::vector<Ray> rays;
    for (int i = 0; i < N_SHORT; i++) {
        double o[3], d[3], e[3];
        random_surface_point(rng, m, o);
        for (int k = 0; k < 3; k++)
            o[k] += rng.range(-1, 1);
        random_unit(rng, d);
        for (int k = 0; k < 3; k++)
            e[k] = o[k] + 4 * d[k];
        rays.push_back(make_ray(o, e));
    }
    return rays;
}

std::vector<Ray> long_rays(Rng &rng, double size)
{
    std::vector<Ray> rays;
    for (int i = 0; i < N_LONG; i++) {
        double p[2][3];
        int face[2];
        face[0] = (int)(rng.next() % 6);
        do
            face[1] = (int)(rng.next() % 6);
        while (face[1] == face[0]);
        for (int s = 0; s < 2; s++) {
            for (int k = 0; k < 3; k++)
                p[s][k] = rng.range(0, size);
            p[s][face[s] % 3] = face[s] < 3 ? 0 : size;
        }
        rays.push_back(make_ray(p[0], p[1]));
    }
    return rays;
}

std::vector<Ray> coherent_rays(double size)
{
    const double dir[3] = {-0.45, -0.6, -0.66}; /* looking down into the region */
    double dl = std::sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    double d[3] = {dir[0] / dl, dir[1] / dl, dir[2] / dl};
    double up[3] = {0, 1, 0};
    double u[3] = {d[1] * up[2] - d[2] * up[1], d[2] * up[0] - d[0] * up[2], d[0] * up[1] - d[1] * up[0]};
    double ul = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    for (double &x : u)
        x /= ul;
    double v[3] = {u[1] * d[2] - u[2] * d[1], u[2] * d[0] - u[0] * d[2], u[0] * d[1] - u[1] * d[0]};
    double c = size / 2, half = size * std::sqrt(3.0) / 2, len = 2 * size * std::sqrt(3.0);
    std::vector<Ray> rays;
    for (int j = 0; j < GRID; j++)
        for (int i = 0; i < GRID; i++) {
            double a = -half + 2 * half * (i + 0.5) / GRID, b = -half + 2 * half * (j + 0.5) / GRID;
            double o[3], e[3];
            for (int k = 0; k < 3; k++) {
                o[k] = c + a * u[k] + b * v[k] - d[k] * len / 2;
                e[k] = o[k] + d[k] * len;
            }
            rays.push_back(make_ray(o, e));
        }
    return rays;
}

/* R_ENGINE is the engine path (q_terrain_physics_raycast) on the world;
 * the others trace the region's own structures. Peers are [1, R_PEERS_END). */
enum Tracer { R_QUARRY, R_BULLET_Q, R_BULLET_F, R_EMBREE_LOW, R_EMBREE_MED, R_ENGINE, R_COUNT };
constexpr int R_PEERS_END = R_ENGINE;

/* A region ray in world coordinates, clipped to the region's box: the
 * engine traces o + t d, t in [0, len], and t0 + t is the region ray's t. */
struct EngineRay {
    double o[3], d[3], len, t0;
    bool clipped; /* the segment was shortened (or misses the box) */
};

constexpr double REGION_MIN[3] = {32, 0, 32}, REGION_MAX[3] = {96, 64, 96};
/* The box engine rays are clipped to: the region's, its bottom face raised
 * by 1/1024 voxel. The world's floor is a surface at y = 0 (solid above,
 * nothing below) that the engine holds (chunks at y = -8) and the region
 * mesh does not; a segment that touched y = 0 would hit it at its end. */
constexpr double CLIP_MIN[3] = {32, 1.0 / 1024, 32};

EngineRay engine_ray(const Ray &r)
{
    EngineRay e;
    double lo = 0, hi = r.len;
    for (int k = 0; k < 3; k++) {
        e.d[k] = (double)r.d[k];
        double o = (double)r.o[k] + REGION_MIN[k];
        double a = CLIP_MIN[k], b = REGION_MAX[k];
        if (e.d[k] == 0) {
            if (o < a || o > b)
                lo = 1, hi = 0;
            continue;
        }
        double ta = (a - o) / e.d[k], tb = (b - o) / e.d[k];
        lo = std::max(lo, std::min(ta, tb));
        hi = std::min(hi, std::max(ta, tb));
    }
    bool miss = !(lo <= hi);
    e.t0 = miss ? 0 : lo;
    e.len = miss ? 0 : hi - lo;
    e.clipped = miss || lo > 0 || hi < (double)r.len;
    for (int k = 0; k < 3; k++)
        e.o[k] = (double)r.o[k] + REGION_MIN[k] + e.d[k] * e.t0;
    return e;
}

struct RegionStructures {
    const Mesh *mesh;
    q_kd_mesh km;
    q_kdtree tree;
    BulletTree bq, bf;
    RTCScene low, med;
    q_terrain_physics *engine;
};

void trace(Tracer which, RegionStructures &rs, const std::vector<Ray> &rays, const std::vector<EngineRay> &erays,
           std::vector<Hit> &out)
{
    out.resize(rays.size());
    if (which == R_ENGINE) {
        for (size_t i = 0; i < erays.size(); i++) {
            const EngineRay &e = erays[i];
            q_ray_hit h;
            out[i].hit = q_terrain_physics_raycast(rs.engine, e.o, e.d, e.len, Q_RAY_SOLID, &h);
            out[i].t = out[i].hit ? (float)(e.t0 + h.distance) : 0.0f;
        }
    } else if (which == R_QUARRY) {
        for (size_t i = 0; i < rays.size(); i++) {
            float t;
            uint32_t tri;
            out[i].hit = q_kdtree_raycast(&rs.tree, &rs.km, rays[i].o, rays[i].d, rays[i].len, &t, &tri);
            out[i].t = out[i].hit ? t : 0.0f;
        }
    } else if (which == R_BULLET_Q || which == R_BULLET_F) {
        btBvhTriangleMeshShape *shape = which == R_BULLET_Q ? rs.bq.shape : rs.bf.shape;
        for (size_t i = 0; i < rays.size(); i++) {
            const Ray &r = rays[i];
            btVector3 from(r.o[0], r.o[1], r.o[2]);
            btVector3 to(r.o[0] + r.d[0] * r.len, r.o[1] + r.d[1] * r.len, r.o[2] + r.d[2] * r.len);
            ClosestHit cb(from, to);
            shape->performRaycast(&cb, from, to);
            out[i].hit = cb.triangle >= 0;
            out[i].t = out[i].hit ? cb.m_hitFraction * r.len : 0.0f;
        }
    } else {
        RTCScene scene = which == R_EMBREE_LOW ? rs.low : rs.med;
        RTCIntersectContext ctx;
        rtcInitIntersectContext(&ctx);
        for (size_t i = 0; i < rays.size(); i++) {
            const Ray &r = rays[i];
            RTCRayHit rh;
            embree_closest(scene, ctx, r.o, r.d, r.len, rh);
            out[i].hit = rh.hit.geomID != RTC_INVALID_GEOMETRY_ID;
            out[i].t = out[i].hit ? rh.ray.tfar : 0.0f;
        }
    }
}

bool agree(const Hit &a, const Hit &b)
{
    return a.hit == b.hit && (!a.hit || std::fabs((double)a.t - (double)b.t) <= AGREE_EPS);
}

/* Closest hits of Embree on the clipped engine segments (the world
 * reference), with the hit triangle (-1 for a miss); t counted from the
 * region ray's origin like the engine's. */
void trace_reference(RTCScene scene, const std::vector<EngineRay> &erays, std::vector<Hit> &out,
                     std::vector<int64_t> &prim)
{
    out.resize(erays.size());
    prim.assign(erays.size(), -1);
    RTCIntersectContext ctx;
    rtcInitIntersectContext(&ctx);
    for (size_t i = 0; i < erays.size(); i++) {
        const EngineRay &e = erays[i];
        const float o[3] = {(float)e.o[0], (float)e.o[1], (float)e.o[2]};
        const float d[3] = {(float)e.d[0], (float)e.d[1], (float)e.d[2]};
        RTCRayHit rh;
        embree_closest(scene, ctx, o, d, (float)e.len, rh);
        out[i].hit = rh.hit.geomID != RTC_INVALID_GEOMETRY_ID;
        out[i].t = out[i].hit ? (float)(e.t0 + (double)rh.ray.tfar) : 0.0f;
        if (out[i].hit)
            prim[i] = rh.hit.primID;
    }
}

/* A triangle as its three vertices, rotated so that the smallest comes
 * first (the winding is kept): equal triangles compare equal whatever
 * vertex the mesher listed first. */
struct TriKey {
    float v[9];
    bool operator<(const TriKey &o) const { return std::lexicographical_compare(v, v + 9, o.v, o.v + 9); }
};

TriKey tri_key(const float *a, const float *b, const float *c, const double shift[3])
{
    const float *p[3] = {a, b, c};
    float q[3][3];
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < 3; k++)
            q[j][k] = (float)((double)p[j][k] + shift[k]); /* exact: grid values well within 2^24 steps */
    int first = 0;
    for (int j = 1; j < 3; j++)
        if (std::lexicographical_compare(q[j], q[j] + 3, q[first], q[first] + 3))
            first = j;
    TriKey key;
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < 3; k++)
            key.v[3 * j + k] = q[(first + j) % 3][k];
    return key;
}

bool chunk_in_region(const q_box &b)
{
    for (int k = 0; k < 3; k++)
        if (b.min[k] < REGION_MIN[k] || b.max[k] > REGION_MAX[k])
            return false;
    return true;
}

/* ---- broadphase ---- */

struct Box3 {
    double min[3], max[3];
};

std::vector<Box3> random_boxes(Rng &rng, int n, const std::vector<const Mesh *> *surface,
                               const std::vector<q_box> *origins)
{
    std::vector<Box3> boxes;
    for (int i = 0; i < n; i++) {
        double c[3];
        if (surface) {
            size_t k;
            do
                k = (size_t)(rng.next() % surface->size());
            while ((*surface)[k]->nt == 0);
            random_surface_point(rng, *(*surface)[k], c);
            for (int a = 0; a < 3; a++)
                c[a] += (*origins)[k].min[a];
        } else {
            c[0] = rng.range(0, WX), c[1] = rng.range(0, WY), c[2] = rng.range(0, WZ);
        }
        Box3 b;
        for (int a = 0; a < 3; a++) {
            double h = rng.range(0.5, 1.5);
            b.min[a] = c[a] - h;
            b.max[a] = c[a] + h;
        }
        boxes.push_back(b);
    }
    return boxes;
}

struct Scan {
    const q_terrain *t;
    bool liquid[256];
    std::vector<uint8_t> mat, occ;

    bool solid(const Box3 &b)
    {
        q_box box;
        for (int a = 0; a < 3; a++) {
            box.min[a] = (int32_t)std::floor(b.min[a]) - 2;
            box.max[a] = (int32_t)std::floor(b.max[a]) + 3;
        }
        char err[128] = "";
        bench_check(q_terrain_read(t, box, mat.data(), occ.data(), err, sizeof err), "q_terrain_read", err);
        size_t n = (size_t)q_box_volume(box);
        for (size_t i = 0; i < n; i++)
            if (occ[i] >= 128 && !liquid[mat[i]])
                return true;
        return false;
    }
};

struct BroadphaseFigures {
    double bp_ns, scan_ns;
    std::vector<double> bp_samples, scan_samples;
    size_t positives, exact_positives, false_pos, false_neg, disagree_scan;
};

BroadphaseFigures broadphase_run(q_terrain_physics *ph, Scan &scan, const std::vector<Box3> &boxes)
{
    BroadphaseFigures f = {};
    size_t n = boxes.size();
    std::vector<char> bp(n), sc(n);
    std::vector<double> tb, ts;
    for (int rep = 0; rep < REPS_RAYS; rep++) {
        double t0 = bench_now();
        for (size_t i = 0; i < n; i++)
            bp[i] = q_terrain_physics_broadphase(ph, boxes[i].min, boxes[i].max).solid;
        double t1 = bench_now();
        for (size_t i = 0; i < n; i++)
            sc[i] = scan.solid(boxes[i]);
        double t2 = bench_now();
        tb.push_back(t1 - t0);
        ts.push_back(t2 - t1);
    }
    f.bp_samples = tb;
    f.scan_samples = ts;
    f.bp_ns = median_of(tb) / (double)n * 1e9;
    f.scan_ns = median_of(ts) / (double)n * 1e9;
    for (size_t i = 0; i < n; i++) {
        double c[3], h[3];
        for (int a = 0; a < 3; a++) {
            c[a] = 0.5 * (boxes[i].min[a] + boxes[i].max[a]);
            h[a] = 0.5 * (boxes[i].max[a] - boxes[i].min[a]);
        }
        bool exact = q_terrain_physics_overlap_box(ph, c, h).solid;
        f.positives += bp[i] != 0;
        f.exact_positives += exact;
        f.false_pos += bp[i] && !exact;
        f.false_neg += !bp[i] && exact;
        f.disagree_scan += bp[i] != sc[i];
    }
    return f;
}

const char *short_name_of(int set)
{
    static const char *const names[3] = {"short", "long", "coherent"};
    return names[set];
}

const char *met(bool ok)
{
    return ok ? "met" : "NOT met";
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

    /* ---- meshes ---- */
    const q_box region_box = {{32, 0, 32}, {96, 64, 96}};
    Mesher mesher(region_box);
    std::vector<Mesh> chunks;
    std::vector<q_box> chunk_boxes;
    for (int cz = 0; cz < WZ / 8; cz++)
        for (int cy = 0; cy < WY / 8; cy++)
            for (int cx = 0; cx < WX / 8; cx++) {
                q_box b = {{cx * 8, cy * 8, cz * 8}, {cx * 8 + 8, cy * 8 + 8, cz * 8 + 8}};
                Mesh m = mesher.mesh(t, b);
                if (m.nt == 0)
                    continue;
                if (m.idx16.empty() || m.qpos.empty()) {
                    fprintf(stderr, "bench: an 8^3 chunk does not fit 16-bit indices and positions\n");
                    return 1;
                }
                chunks.push_back(std::move(m));
                chunk_boxes.push_back(b);
            }
    Mesh region = mesher.mesh(t, region_box);
    if (region.idx16.empty()) {
        fprintf(stderr, "bench: the region has over 65536 vertices; 16-bit accounting is wrong\n");
        return 1;
    }
    size_t chunk_tris = 0, chunk_verts = 0;
    for (const Mesh &m : chunks)
        chunk_tris += m.nt, chunk_verts += m.nv;

    /* Warm up Embree's device (thread-local allocators) before measuring it. */
    {
        RTCScene s = embree_build(dev, chunks[0], RTC_BUILD_QUALITY_MEDIUM);
        rtcReleaseScene(s);
    }

    /* ---- chunk builds ---- */
    /* times[b][chunk][rep] */
    std::vector<std::vector<std::vector<double>>> times(
        B_COUNT, std::vector<std::vector<double>>(chunks.size(), std::vector<double>(REPS_CHUNK)));
    double chunk_bytes[B_COUNT] = {0}, chunk_nodes[B_COUNT] = {0};
    Rng order_rng = {777};
    for (int rep = 0; rep < REPS_CHUNK; rep++)
        for (size_t c = 0; c < chunks.size(); c++) {
            /* A fresh random order per chunk and pass: each library runs
             * first, and after each other one, about equally often. (A
             * rotation kept the same predecessor for each library: the int16
             * build always ran right after Embree MEDIUM, whose code and data
             * had just evicted ours, and the float one after the int16 one,
             * which had warmed them: 0.7x the int16 speed against 0.97x when
             * the two alternate.) */
            Builder order[B_COUNT];
            shuffle_builders(order_rng, order, B_COUNT);
            for (Builder b : order) {
                Measured r = build_once(b, chunks[c], true, dev, &emem, bench_now);
                times[b][c][rep] = r.seconds;
                if (rep == 0) {
                    chunk_bytes[b] += r.bytes + mesh_bytes_for(b, chunks[c]);
                    chunk_nodes[b] += r.nodes;
                }
            }
        }
    std::vector<double> chunk_time[B_COUNT];
    for (int b = 0; b < B_COUNT; b++)
        for (size_t c = 0; c < chunks.size(); c++)
            chunk_time[b].push_back(median_of(times[b][c]));

    /* ---- region builds ---- */
    std::vector<double> region_time[B_COUNT];
    double region_bytes[B_COUNT] = {0}, region_nodes[B_COUNT] = {0};
    for (int rep = 0; rep < REPS_REGION; rep++) {
        Builder order[B_PEERS_END]; /* the region's positions do not fit int16 */
        shuffle_builders(order_rng, order, B_PEERS_END);
        for (Builder b : order) {
            /* Milliseconds each: thread CPU time, as for rays. */
            Measured r = build_once(b, region, false, dev, &emem, bench_thread_now);
            region_time[b].push_back(r.seconds);
            region_bytes[b] = r.bytes + mesh_bytes_for(b, region);
            region_nodes[b] = r.nodes;
        }
    }

    bench_begin("kdtree", dir);
    char title[256], label[200];
    snprintf(title, sizeof title,
             "Tree build: %zu 8^3 chunks of caves %dx%dx%d (%zu tris, %.1f per chunk; per-chunk median of %d)",
             chunks.size(), WX, WY, WZ, chunk_tris, (double)chunk_tris / (double)chunks.size(), REPS_CHUNK);
    bench_section(title);
    for (int b = 1; b < B_PEERS_END; b++) {
        std::vector<double> &q = chunk_time[B_QUARRY], &p = chunk_time[b];
        bench_row("ms/chunk, mean (total / count)", mean_of(q), q.data(), (int)q.size(), BUILDER_NAME[b],
                  mean_of(p), p.data(), (int)p.size(), "s", 1e-3, "ms");
        bench_row("ms/chunk, median", median_of(q), NULL, 0, BUILDER_NAME[b], median_of(p), NULL, 0, "s", 1e-3,
                  "ms");
    }
    {
        std::vector<double> &q = chunk_time[B_QUARRY_I16], &p = chunk_time[B_BULLET_Q];
        bench_row("int16 positions (engine's form): ms/chunk, mean", mean_of(q), q.data(), (int)q.size(),
                  BUILDER_NAME[B_BULLET_Q], mean_of(p), NULL, 0, "s", 1e-3, "ms");
        bench_row("int16 positions (engine's form): ms/chunk, median", median_of(q), NULL, 0,
                  BUILDER_NAME[B_BULLET_Q], median_of(p), NULL, 0, "s", 1e-3, "ms");
    }
    bench_note("ours/base < 1: Quarry builds faster. Bullet's time includes one pass for the mesh bounds");
    bench_note("(setPremadeAabb); Embree's includes creating the scene and geometry. Frees are not timed.");
    bench_note("Rows without 'int16' index the same float arrays as the peers; 'int16' is the physics cache's");
    bench_note("storage (positions in 1/%d voxel, decoded in q_kdtree_build).", Q_DC_GRID);

    snprintf(title, sizeof title, "Tree build: 64^3 region [32,96)x[0,64)x[32,96) (%u tris, %u verts; median of %d)",
             region.nt, region.nv, REPS_REGION);
    bench_section(title);
    for (int b = 1; b < B_PEERS_END; b++)
        bench_row("ms/region", median_of(region_time[B_QUARRY]), region_time[B_QUARRY].data(), REPS_REGION,
                  BUILDER_NAME[b], median_of(region_time[b]), region_time[b].data(), REPS_REGION, "s", 1e-3, "ms");

    bench_section("Memory: bytes per triangle, mesh included (13 B/vertex + indices; Quarry 24 B/quad node)");
    bench_row("B/tri, all chunks, int16 positions (engine's form)", chunk_bytes[B_QUARRY_I16] / (double)chunk_tris,
              NULL, 0, BUILDER_NAME[B_BULLET_Q], chunk_bytes[B_BULLET_Q] / (double)chunk_tris, NULL, 0, "bytes", 1,
              "B");
    for (int b = 1; b < B_PEERS_END; b++) {
        bench_row("B/tri, all chunks", chunk_bytes[B_QUARRY] / (double)chunk_tris, NULL, 0, BUILDER_NAME[b],
                  chunk_bytes[b] / (double)chunk_tris, NULL, 0, "bytes", 1, "B");
        bench_row("B/tri, region", region_bytes[B_QUARRY] / region.nt, NULL, 0, BUILDER_NAME[b],
                  region_bytes[b] / region.nt, NULL, 0, "bytes", 1, "B");
    }
    bench_note("mesh part: chunks %.2f B/tri with float positions, %.2f with int16 (7 B/vertex, %zu verts), region",
               (13.0 * (double)chunk_verts + 6.0 * (double)chunk_tris) / (double)chunk_tris,
               (7.0 * (double)chunk_verts + 6.0 * (double)chunk_tris) / (double)chunk_tris, chunk_verts);
    bench_note("%.2f B/tri (floats; 16-bit indices as its %u vertices fit). Embree needs 32-bit", region.mesh_bytes(2) / region.nt, region.nv);
    bench_note("indices (+6 B/tri). Quad nodes per triangle: Quarry %.2f (chunks) / %.2f (region); Bullet nodes %.2f / %.2f.",
               chunk_nodes[B_QUARRY] / (double)chunk_tris, region_nodes[B_QUARRY] / region.nt,
               chunk_nodes[B_BULLET_Q] / (double)chunk_tris, region_nodes[B_BULLET_Q] / region.nt);
    bench_note("Bullet: capacity of btQuantizedBvh's node arrays and subtree headers. Embree: bytes its memory");
    bench_note("monitor callback reports held after rtcCommitScene (its allocator reserves blocks).");

    /* ---- rays ---- */
    RegionStructures rs;
    rs.mesh = &region;
    rs.km = region.kd_own(false, false);
    std::vector<uint32_t> region_order(region.nt);
    if (!region.build_sorted(&rs.tree, rs.km, region_order.data())) {
        fprintf(stderr, "bench: q_kdtree_build_sorted failed\n");
        return 1;
    }
    rs.bq.build(region, false, true);
    rs.bf.build(region, false, false);
    rs.low = embree_build(dev, region, RTC_BUILD_QUALITY_LOW);
    rs.med = embree_build(dev, region, RTC_BUILD_QUALITY_MEDIUM);

    /* The engine path: the whole world's physics data, and as its
     * reference Embree on every chunk mesh of the world (world coordinates,
     * exact on the grid) with each triangle's chunk inside the region or not. */
    rs.engine = q_terrain_physics_create(t, 1.0, (size_t)64 << 20);
    if (!rs.engine || !q_terrain_physics_sync(rs.engine)) {
        fprintf(stderr, "bench: q_terrain_physics_create/sync failed\n");
        return 1;
    }
    Mesh world;
    std::vector<char> world_inside;
    size_t chunks_in_region = 0, only_region = 0, only_chunks = 0;
    {
        std::vector<TriKey> from_region, from_chunks;
        const double none[3] = {0, 0, 0};
        for (uint32_t i = 0; i < region.nt; i++)
            from_region.push_back(tri_key(&region.pos[3 * region.idx32[3 * i]], &region.pos[3 * region.idx32[3 * i + 1]],
                                          &region.pos[3 * region.idx32[3 * i + 2]], none));
        /* Every chunk within one chunk of the region, those outside the
         * world included: the engine also sees the world's floor (a surface
         * at y = 0 meshed by the chunks at y = -8, which the region mesh does
         * not hold). */
        for (int c = 0; c < 10 * 10 * 10; c++) {
            const int cx = 3 + c % 10, cy = -1 + c / 10 % 10, cz = 3 + c / 100;
            const q_box box = {{cx * 8, cy * 8, cz * 8}, {cx * 8 + 8, cy * 8 + 8, cz * 8 + 8}};
            const Mesh m = mesher.mesh(t, box);
            bool inside = chunk_in_region(box);
            double to_region[3];
            for (int k = 0; k < 3; k++)
                to_region[k] = box.min[k] - REGION_MIN[k];
            chunks_in_region += inside;
            for (uint32_t i = 0; i < m.nt; i++) {
                world.idx32.push_back(m.idx32[3 * i] + world.nv);
                world.idx32.push_back(m.idx32[3 * i + 1] + world.nv);
                world.idx32.push_back(m.idx32[3 * i + 2] + world.nv);
                world_inside.push_back(inside);
                if (inside)
                    from_chunks.push_back(tri_key(&m.pos[3 * m.idx32[3 * i]], &m.pos[3 * m.idx32[3 * i + 1]],
                                                  &m.pos[3 * m.idx32[3 * i + 2]], to_region));
            }
            for (uint32_t v = 0; v < m.nv; v++)
                for (int k = 0; k < 3; k++)
                    world.pos.push_back((float)((double)m.pos[3 * v + k] + box.min[k]));
            world.nv += m.nv;
            world.nt += m.nt;
        }
        world.pos.resize(3 * world.nv + 4, 0.0f);
        std::sort(from_region.begin(), from_region.end());
        std::sort(from_chunks.begin(), from_chunks.end());
        std::vector<TriKey> diff;
        std::set_difference(from_region.begin(), from_region.end(), from_chunks.begin(), from_chunks.end(),
                            std::back_inserter(diff));
        only_region = diff.size();
        diff.clear();
        std::set_difference(from_chunks.begin(), from_chunks.end(), from_region.begin(), from_region.end(),
                            std::back_inserter(diff));
        only_chunks = diff.size();
    }
    RTCScene world_scene = embree_build(dev, world, RTC_BUILD_QUALITY_MEDIUM);

    Rng rng = {12345};
    struct RaySet {
        const char *name;
        std::vector<Ray> rays;
        std::vector<EngineRay> erays;
    } sets[3] = {{"short (4 voxels, near the surface)", short_rays(rng, region), {}},
                 {"long (face to face)", long_rays(rng, 64), {}},
                 {"coherent (256x256 parallel grid)", coherent_rays(64), {}}};
    for (RaySet &set : sets)
        for (const Ray &r : set.rays)
            set.erays.push_back(engine_ray(r));
    /* Warm the cache: every chunk any of the rays reaches is built now. */
    {
        std::vector<Hit> warm;
        for (const RaySet &set : sets)
            trace(R_ENGINE, rs, set.rays, set.erays, warm);
    }
    const q_terrain_physics_stats warm_stats = q_terrain_physics_get_stats(rs.engine);
    const char *const TRACER_NAME[R_COUNT] = {"q_kdtree_raycast", "Bullet quantized", "Bullet float", "Embree LOW",
                                              "Embree MEDIUM", "q_terrain_physics_raycast"};
    double ray_rate[3][R_COUNT];
    bench_section("Closest-hit rays on the 64^3 region: q_kdtree_raycast vs performRaycast / rtcIntersect1, Mrays/s");
    for (int s = 0; s < 3; s++) {
        const std::vector<Ray> &rays = sets[s].rays;
        const std::vector<EngineRay> &erays = sets[s].erays;
        std::vector<Hit> hits[R_COUNT];
        std::vector<double> samples[R_COUNT];
        for (int rep = 0; rep < REPS_TRACE; rep++)
            for (int ri = 0; ri < R_COUNT; ri++) {
                Tracer r = (Tracer)((ri + rep) % R_COUNT);
                double t0 = bench_thread_now();
                trace(r, rs, rays, erays, hits[r]);
                samples[r].push_back(bench_thread_now() - t0);
            }
        for (int r = 0; r < R_COUNT; r++)
            ray_rate[s][r] = (double)rays.size() / median_of(samples[r]);
        for (int r = 1; r < R_PEERS_END; r++) {
            snprintf(label, sizeof label, "%s", sets[s].name);
            bench_row(label, ray_rate[s][R_QUARRY], samples[R_QUARRY].data(), REPS_TRACE, TRACER_NAME[r],
                      ray_rate[s][r], samples[r].data(), REPS_TRACE, "rays/s", 1e6, "Mrays/s");
        }
        for (int r = 1; r < R_PEERS_END; r++) {
            snprintf(label, sizeof label, "engine path: %s", short_name_of(s));
            bench_row(label, ray_rate[s][R_ENGINE], samples[R_ENGINE].data(), REPS_TRACE, TRACER_NAME[r],
                      ray_rate[s][r], samples[r].data(), REPS_TRACE, "rays/s", 1e6, "Mrays/s");
        }
        size_t nhit = 0, all = 0, pair[R_COUNT] = {0};
        for (size_t i = 0; i < rays.size(); i++) {
            nhit += hits[R_QUARRY][i].hit;
            bool every = true;
            for (int r = 1; r < R_PEERS_END; r++) {
                bool a = agree(hits[R_QUARRY][i], hits[r][i]);
                pair[r] += a;
                every = every && a;
            }
            all += every;
        }
        double n = (double)rays.size();
        bench_note("%zu rays, %.1f%% hit. Agreement with Quarry (hit/miss, |dt| <= 1e-3): Bullet q %.4f%%,",
                   rays.size(), 100.0 * (double)nhit / n, 100.0 * (double)pair[R_BULLET_Q] / n);
        bench_note("  Bullet f %.4f%%, Embree LOW %.4f%%, MEDIUM %.4f%%; all five agree on %.4f%% (%s 99.9%%)",
                   100.0 * (double)pair[R_BULLET_F] / n, 100.0 * (double)pair[R_EMBREE_LOW] / n,
                   100.0 * (double)pair[R_EMBREE_MED] / n, 100.0 * (double)all / n,
                   (double)all >= 0.999 * n ? "at least" : "CHECK FAILED: under");
        if ((double)all < 0.999 * n)
            fprintf(stderr, "bench: kdtree: ray agreement under 99.9%% for %s rays\n", sets[s].name);

        /* The engine against its world reference and the region tree. */
        std::vector<Hit> ref;
        std::vector<int64_t> ref_prim;
        trace_reference(world_scene, erays, ref, ref_prim);
        size_t clipped = 0, ehit = 0, with_ref = 0, with_tree = 0, outside_tri = 0, outside_box = 0, unexplained = 0;
        for (size_t i = 0; i < rays.size(); i++) {
            const Hit &e = hits[R_ENGINE][i], &q = hits[R_QUARRY][i];
            clipped += erays[i].clipped;
            ehit += e.hit;
            bool a_ref = agree(e, ref[i]), a_tree = agree(e, q);
            with_ref += a_ref;
            with_tree += a_tree;
            if (a_tree)
                continue;
            bool box_out = false;
            for (int k = 0; k < 3 && q.hit; k++) {
                double x = (double)rays[i].o[k] + (double)rays[i].d[k] * (double)q.t + REGION_MIN[k];
                box_out = box_out || x < CLIP_MIN[k] || x > REGION_MAX[k];
            }
            if (a_ref && ref[i].hit && !world_inside[(size_t)ref_prim[i]])
                outside_tri++;
            else if (a_ref && box_out)
                outside_box++;
            else
                unexplained++;
        }
        bench_note("engine path: %.1f%% hit, %zu of %zu rays clipped by the region's box. Agreement (hit/miss, |dt| <= 1e-3):",
                   100.0 * (double)ehit / n, clipped, rays.size());
        bench_note("  with Embree MEDIUM on the world's chunk meshes (clipped segments) %.4f%%%s; with q_kdtree_raycast",
                   100.0 * (double)with_ref / n, (double)with_ref >= 0.999 * n ? "" : " -- CHECK FAILED (under 99.9%)");
        bench_note("  on the region %.4f%%: differing rays %zu hit a triangle outside the region first, %zu have the region's",
                   100.0 * (double)with_tree / n, outside_tri, outside_box);
        bench_note("  hit outside the box, %zu unexplained%s", unexplained,
                   (double)unexplained > 0.001 * n ? " -- CHECK FAILED (over 0.1%)" : "");
        if ((double)with_ref < 0.999 * n || (double)unexplained > 0.001 * n)
            fprintf(stderr, "bench: kdtree: the engine path disagrees on %s rays\n", sets[s].name);
    }
    {
        q_terrain_physics_stats after = q_terrain_physics_get_stats(rs.engine);
        bool same = after.cached_chunks == warm_stats.cached_chunks && after.cache_bytes == warm_stats.cache_bytes &&
                    after.kd_nodes == warm_stats.kd_nodes;
        bench_note("engine path: the world through q_terrain_physics (8^3 chunk trees); rays in world coordinates clipped");
        bench_note("  to the region's box; cache warmed by an untimed pass: %zu chunk meshes, %zu triangles, %.2f MB, the same",
                   warm_stats.cached_chunks, warm_stats.triangles, (double)warm_stats.cache_bytes / 1e6);
        bench_note("  after the timed passes (%s). Triangles: the %zu 8^3 chunks inside the region hold the region's",
                   same ? "nothing built during them" : "CHECK FAILED: the cache changed", chunks_in_region);
        bench_note("  %u triangles exactly (%zu only in the region mesh, %zu only in the chunks)%s.", region.nt,
                   only_region, only_chunks, only_region || only_chunks ? " -- CHECK FAILED" : "");
        if (!same || only_region || only_chunks)
            fprintf(stderr, "bench: kdtree: engine path cache or triangle check failed\n");
    }

    {
        /* The sorted build against the plain one (own index copy and order
         * map) on the peers' untouched indices: the same tree, so every ray
         * gives the same hit, the same t (bit for bit) and the same triangle
         * once the sorted build's order maps it back. */
        q_kd_mesh plain_km = region.kd(false, false);
        q_kdtree plain;
        if (!q_kdtree_build(&plain, &plain_km)) {
            fprintf(stderr, "bench: q_kdtree_build failed\n");
            return 1;
        }
        size_t differ = 0, checked = 0;
        for (int s = 0; s < 3; s++)
            for (const Ray &r : sets[s].rays) {
                float ta = 0, tb = 0;
                uint32_t ia = 0, ib = 0;
                bool ha = q_kdtree_raycast(&rs.tree, &rs.km, r.o, r.d, r.len, &ta, &ia);
                bool hb = q_kdtree_raycast(&plain, &plain_km, r.o, r.d, r.len, &tb, &ib);
                differ += ha != hb || (ha && (ta != tb || region_order[ia] != ib));
                checked++;
            }
        q_kdtree_free(&plain);
        bench_note("Sorted build (the region's own indices reordered) vs q_kdtree_build on the mesher's order: %zu of %zu",
                   differ, checked);
        bench_note("  rays differ in hit, t or triangle (mapped through the sorted build's order)%s.",
                   differ ? " -- CHECK FAILED" : "");
        if (differ)
            fprintf(stderr, "bench: kdtree: sorted and plain builds differ on %zu rays\n", differ);
    }

    {
        size_t branches = 0, overlapping = 0;
        double overlap = 0;
        std::vector<q_kd_ref> unvisited = {q_kd_root()};
        while (!unvisited.empty()) {
            q_kd_ref r = unvisited.back();
            unvisited.pop_back();
            if (q_kd_is_leaf(r))
                continue;
            branches++;
            float p0 = q_kdtree_plane(&rs.tree, r, 0), p1 = q_kdtree_plane(&rs.tree, r, 1);
            if (p0 > p1) {
                overlapping++;
                overlap += p0 - p1;
            }
            q_kd_ref c[2];
            q_kd_children(&rs.tree, r, c);
            unvisited.push_back(c[0]);
            unvisited.push_back(c[1]);
        }
        bench_note("Rays: median of %d passes. Region tree: %u quad nodes, %zu branches, depth %u; children overlap in %.1f%% of", REPS_TRACE,
                   rs.tree.node_count, branches, rs.tree.depth, 100.0 * (double)overlapping / (double)branches);
        bench_note("  branches (by %.3f voxels on average where they do).",
                   overlapping ? overlap / (double)overlapping : 0.0);
    }

    /* ---- AABB queries ---- */
    {
        std::vector<Box3> boxes;
        for (int i = 0; i < N_AABB; i++) {
            double c[3];
            random_surface_point(rng, region, c);
            Box3 b;
            for (int a = 0; a < 3; a++) {
                double h = rng.range(0.5, 1.5);
                b.min[a] = c[a] - h;
                b.max[a] = c[a] + h;
            }
            boxes.push_back(b);
        }
        std::vector<uint32_t> buf(region.nt);
        std::vector<size_t> nq(boxes.size()), nb(boxes.size()), nf(boxes.size());
        std::vector<double> sq, sb, sf;
        for (int rep = 0; rep < REPS_TRACE; rep++) {
            double t0 = bench_thread_now();
            for (size_t i = 0; i < boxes.size(); i++) {
                float mn[3] = {(float)boxes[i].min[0], (float)boxes[i].min[1], (float)boxes[i].min[2]};
                float mx[3] = {(float)boxes[i].max[0], (float)boxes[i].max[1], (float)boxes[i].max[2]};
                nq[i] = q_kdtree_query_aabb(&rs.tree, &rs.km, mn, mx, buf.data(), buf.size());
            }
            double t1 = bench_thread_now();
            for (int k = 0; k < 2; k++) {
                btBvhTriangleMeshShape *shape = k == 0 ? rs.bq.shape : rs.bf.shape;
                std::vector<size_t> &out = k == 0 ? nb : nf;
                double u0 = bench_thread_now();
                for (size_t i = 0; i < boxes.size(); i++) {
                    CountTriangles cb;
                    shape->processAllTriangles(&cb, btVector3((float)boxes[i].min[0], (float)boxes[i].min[1],
                                                              (float)boxes[i].min[2]),
                                               btVector3((float)boxes[i].max[0], (float)boxes[i].max[1],
                                                         (float)boxes[i].max[2]));
                    out[i] = cb.count;
                }
                (k == 0 ? sb : sf).push_back(bench_thread_now() - u0);
            }
            sq.push_back(t1 - t0);
        }
        double n = (double)boxes.size();
        bench_section("AABB queries on the 64^3 region: q_kdtree_query_aabb vs processAllTriangles, queries/s");
        bench_row("boxes of 1-3 voxels at surface points", n / median_of(sq), sq.data(), REPS_TRACE,
                  "Bullet quantized", n / median_of(sb), sb.data(), REPS_TRACE, "queries/s", 1e6, "Mq/s");
        bench_row("boxes of 1-3 voxels at surface points", n / median_of(sq), sq.data(), REPS_TRACE, "Bullet float",
                  n / median_of(sf), sf.data(), REPS_TRACE, "queries/s", 1e6, "Mq/s");
        double tq = 0, tb = 0;
        size_t same_f = 0;
        for (size_t i = 0; i < boxes.size(); i++) {
            tq += (double)nq[i], tb += (double)nb[i];
            same_f += nq[i] == nf[i];
        }
        bench_note("triangles per query: Quarry %.2f, Bullet quantized %.2f (quantized leaf bounds are looser);",
                   tq / n, tb / n);
        bench_note("Quarry's count equals Bullet float's (exact triangle bounds) on %.3f%% of queries.",
                   100.0 * (double)same_f / n);
    }

    /* ---- broadphase ---- */
    q_terrain_physics *ph = q_terrain_physics_create(t, 1.0, 0);
    if (!ph || !q_terrain_physics_sync(ph)) {
        fprintf(stderr, "bench: q_terrain_physics_create/sync failed\n");
        return 1;
    }
    Scan scan;
    scan.t = t;
    for (int m = 0; m < 256; m++)
        scan.liquid[m] = m < q_material_count() && q_material_get(m)->liquid;
    scan.mat.resize(10 * 10 * 10);
    scan.occ.resize(10 * 10 * 10);
    std::vector<const Mesh *> surface;
    for (const Mesh &m : chunks)
        surface.push_back(&m);
    std::vector<Box3> uniform_boxes = random_boxes(rng, N_BOXES, nullptr, nullptr);
    std::vector<Box3> surface_boxes = random_boxes(rng, N_BOXES, &surface, &chunk_boxes);
    BroadphaseFigures bu = broadphase_run(ph, scan, uniform_boxes);
    BroadphaseFigures bs = broadphase_run(ph, scan, surface_boxes);
    q_terrain_physics_stats st = q_terrain_physics_get_stats(ph);
    double world_voxels = (double)WX * WY * WZ;

    bench_section("Broadphase: boxes of 1-3 voxels, ns/query (median of 3 passes over 100k boxes)");
    bench_row("ns/query, uniform in the world", bu.bp_ns, bu.bp_samples.data(), REPS_RAYS,
              "q_terrain_read + voxel scan", bu.scan_ns, bu.scan_samples.data(), REPS_RAYS, "ns", 1, "ns");
    bench_row("ns/query, at surface points", bs.bp_ns, bs.bp_samples.data(), REPS_RAYS,
              "q_terrain_read + voxel scan", bs.scan_ns, bs.scan_samples.data(), REPS_RAYS, "ns", 1, "ns");
    bench_row("broadphase bytes per world voxel", (double)st.broadphase_bytes / world_voxels, NULL, 0,
              "dense occupancy bytes", 1.0, NULL, 0, "bytes", 1, "B");
    const BroadphaseFigures *bf2[2] = {&bu, &bs};
    const char *where[2] = {"uniform", "surface"};
    for (int k = 0; k < 2; k++) {
        const BroadphaseFigures &f = *bf2[k];
        double n = (double)N_BOXES;
        size_t exact_neg = (size_t)N_BOXES - f.exact_positives;
        bench_note("%s: broadphase positive %.2f%%, exact (overlap_box) positive %.2f%%; false positives %.2f%% of",
                   where[k], 100.0 * (double)f.positives / n, 100.0 * (double)f.exact_positives / n,
                   f.positives ? 100.0 * (double)f.false_pos / (double)f.positives : 0.0);
        bench_note("  positives, %.2f%% of exact negatives; false negatives %zu; answers differing from the scan %zu",
                   exact_neg ? 100.0 * (double)f.false_pos / (double)exact_neg : 0.0, f.false_neg, f.disagree_scan);
    }
    bench_note("broadphase: %zu chunk entries, %zu bytes for %.0f voxels", st.broadphase_chunks,
               st.broadphase_bytes, world_voxels);

    /* ---- targets ---- */
    double su_mean = mean_of(chunk_time[B_BULLET_Q]) / mean_of(chunk_time[B_QUARRY]);
    double su_median = median_of(chunk_time[B_BULLET_Q]) / median_of(chunk_time[B_QUARRY]);
    double su_mean16 = mean_of(chunk_time[B_BULLET_Q]) / mean_of(chunk_time[B_QUARRY_I16]);
    double su_median16 = median_of(chunk_time[B_BULLET_Q]) / median_of(chunk_time[B_QUARRY_I16]);
    double bpt_chunks16 = chunk_bytes[B_QUARRY_I16] / (double)chunk_tris;
    double su_region = median_of(region_time[B_BULLET_Q]) / median_of(region_time[B_QUARRY]);
    double bpt_chunks = chunk_bytes[B_QUARRY] / (double)chunk_tris, bpt_region = region_bytes[B_QUARRY] / region.nt;
    bench_section("Targets from the issue");
    bench_row("build speed-up vs Bullet quantized, chunks mean", su_mean, NULL, 0, "target", 4, NULL, 0, "ratio", 1,
              "x");
    bench_row("build speed-up vs Bullet quantized, chunks median", su_median, NULL, 0, "target", 4, NULL, 0, "ratio",
              1, "x");
    bench_row("build speed-up, chunks mean, int16 positions", su_mean16, NULL, 0, "target", 4, NULL, 0, "ratio", 1,
              "x");
    bench_row("build speed-up, chunks median, int16 positions", su_median16, NULL, 0, "target", 4, NULL, 0,
              "ratio", 1, "x");
    bench_row("build speed-up vs Bullet quantized, region", su_region, NULL, 0, "target", 4, NULL, 0, "ratio", 1,
              "x");
    bench_row("bytes per triangle, chunks, int16 positions (at most)", bpt_chunks16, NULL, 0, "target", 24.5, NULL, 0,
              "bytes", 1, "B");
    bench_row("bytes per triangle, chunks, float positions (at most)", bpt_chunks, NULL, 0, "target", 24.5, NULL, 0, "bytes", 1, "B");
    bench_row("bytes per triangle, region (at most)", bpt_region, NULL, 0, "target", 24.5, NULL, 0, "bytes", 1, "B");
    /* The ray targets of one Quarry tracer (the region tree, then the engine path). */
    for (int tracer : {(int)R_QUARRY, (int)R_ENGINE}) {
        const char *prefix = tracer == R_ENGINE ? "engine path, " : "";
        for (int s = 0; s < 3; s++) {
            snprintf(label, sizeof label, "%srays %s: x Bullet quantized", prefix, short_name_of(s));
            bench_row(label, ray_rate[s][tracer] / ray_rate[s][R_BULLET_Q], NULL, 0, "target", 3, NULL, 0, "ratio",
                      1, "x");
            snprintf(label, sizeof label, "%srays %s: x Embree MEDIUM", prefix, short_name_of(s));
            bench_row(label, ray_rate[s][tracer] / ray_rate[s][R_EMBREE_MED], NULL, 0, "target", 0.5, NULL, 0,
                      "ratio", 1, "x");
        }
    }
    bool build_ok = su_mean >= 4 && su_median >= 4 && su_region >= 4 && su_mean16 >= 4 && su_median16 >= 4;
    bool bytes_ok = bpt_chunks16 <= 24.5;
    bool bullet_ok = true, embree_ok = true, engine_bullet_ok = true, engine_embree_ok = true;
    for (int s = 0; s < 3; s++) {
        bullet_ok = bullet_ok && ray_rate[s][R_QUARRY] >= 3 * ray_rate[s][R_BULLET_Q];
        embree_ok = embree_ok && ray_rate[s][R_QUARRY] >= 0.5 * ray_rate[s][R_EMBREE_MED];
        engine_bullet_ok = engine_bullet_ok && ray_rate[s][R_ENGINE] >= 3 * ray_rate[s][R_BULLET_Q];
        engine_embree_ok = engine_embree_ok && ray_rate[s][R_ENGINE] >= 0.5 * ray_rate[s][R_EMBREE_MED];
    }
    bench_note("met when ours/base >= 1 (speed-ups, ray ratios) or <= 1 (bytes)");
    bench_note("build >= 4x Bullet quantized (every row): %s; <= 24.5 B/tri (engine's chunk storage): %s;",
               met(build_ok), met(bytes_ok));
    bench_note("rays >= 3x Bullet quantized (every set): %s; rays >= 0.5x Embree MEDIUM (every set): %s",
               met(bullet_ok), met(embree_ok));
    bench_note("engine path (8^3 chunk trees): rays >= 3x Bullet quantized (every set): %s; >= 0.5x Embree MEDIUM: %s",
               met(engine_bullet_ok), met(engine_embree_ok));
    bench_note("whole program: %.1f s", bench_now() - t_start);
    bench_end();

    q_terrain_physics_destroy(ph);
    q_terrain_physics_destroy(rs.engine);
    rtcReleaseScene(world_scene);
    q_kdtree_free(&rs.tree);
    rs.bq.release();
    rs.bf.release();
    rtcReleaseScene(rs.low);
    rtcReleaseScene(rs.med);
    rtcReleaseDevice(dev);
    q_terrain_destroy(t);
    return 0;
}
