/* Rigid bodies: Quarry's q_bodies (engine/physics/bodies.h) side by side in
 * one run with Bullet 3.24's btDiscreteDynamicsWorld (PEERS.md), on the same
 * terrain triangles, with the same boxes, the same fixed step and matched
 * solver work.
 *
 * Terrain. Quarry collides with its own terrain physics cache (8^3 chunk
 * meshes from q_dc_mesh). Bullet gets exactly those triangles: q_dc_mesh of
 * every 8^3 chunk box [c*8, c*8+8) for c in [-1, size/8] on each axis (the
 * surface closing the world's sides lies in the chunks just outside it),
 * moved to world positions (exact in float: the mesher snaps vertices to
 * 1/Q_DC_GRID voxel), merged into one btTriangleIndexVertexArray under one
 * btBvhTriangleMeshShape in a static body, with btGenerateInternalEdgeInfo
 * and btAdjustInternalEdgeContacts in the contact-added callback (Bullet's
 * own fix for bumps on internal edges, the counterpart of Quarry's edge
 * convexity). Voxel size 1 m.
 *
 * Scenes (fixed step 1/60 s, gravity -9.81 m/s^2 on Y, 300 steps = 5 s):
 *  - drop: q_terrain_generate hills 128x64x128 seed 1; 1000 unit boxes
 *    (rock) in a 10x10 grid of columns 4 m apart around the world's centre,
 *    10 per column 2.5 m apart starting 2 m above the surface (found by a
 *    ray), each with its own random rotation;
 *  - stack: flat terrain 64x32x64; 10x10 columns of 10 unit boxes, columns
 *    1.1 m apart (a 0.1 m gap), boxes touching within a column;
 *  - pyramid: the same flat terrain; one box deep, rows of 20, 19, ... 1
 *    boxes (210), 1.05 m apart in a row, each row centred on the one below.
 *
 * Matched work. Quarry: q_bodies_create(tp, jobs, 1.0, g, 4): four substeps,
 * each one biased solve pass and one relax pass over every contact, so 8
 * velocity passes per step, and one narrowphase per step. Bullet: one step of
 * 1/60 (stepSimulation(dt, 0)) with m_numIterations = 8, default solver
 * (sequential impulses, warm starting, split impulse), one narrowphase per
 * step. Substeps on Bullet's side (4 x 1/240 with 2 iterations) would run
 * its narrowphase four times, which is not the same work.
 * Materials as Quarry combines them: friction the geometric mean (Bullet's
 * product of per-body sqrt(friction)), restitution the larger of the two and
 * none below 1 m/s approach speed (Bullet's m_restitutionVelocityThreshold);
 * terrain contacts take the material of the triangle's first vertex (set in
 * the callback). Sleeping: Bullet's thresholds set to Quarry's (0.05 m/s,
 * 0.05 rad/s, 0.5 s); a second Bullet run keeps its defaults (0.8, 1.0 and
 * 2 s). Bullet's box has its default 0.04 m margin inside the half extents
 * (exact geometry).
 *
 * Threads. Quarry: jobs NULL (one thread) and q_jobs_create(1) (two).
 * Debian's Bullet is built without BT_THREADSAFE (btCreateDefaultTaskScheduler
 * returns NULL, btParallelFor runs inline), so btDiscreteDynamicsWorldMt
 * cannot use a second thread: two-thread rows compare with Bullet's one
 * thread, and the program checks that the scheduler is still missing.
 *
 * Timing: each q_bodies_step / stepSimulation on CLOCK_MONOTONIC (wall) and
 * CLOCK_PROCESS_CPUTIME_ID (CPU time of all threads: on a shared machine it
 * does not count the time other processes take). A run is one engine (one
 * thread count) through one scene; REPS runs per engine and scene, engines in
 * rotating order; rows give the median over runs of each run's mean and
 * worst step, and of the CPU mean over the first 0.5 s, when no body of
 * either engine can be asleep yet. Stage times: Quarry's q_bodies_get_stats;
 * Bullet's from overrides of updateAabbs, computeOverlappingPairs and
 * performDiscreteCollisionDetection. Quarry's terrain cache is warmed once per
 * terrain by a downward ray per voxel column (not timed; Bullet's BVH and
 * edge info are built up front, timed apart in a note).
 *
 * Drift (stack, pyramid): positions after 1 s (step 60) are the settled
 * ones; drift is the largest distance any box's centre moves from its
 * settled position over the next 4 s. Check: after the run, a ray straight
 * down onto the terrain at each box's X, Z (each engine's own ray against the
 * terrain) gives the surface height; a box whose centre is below it by more
 * than 0.05 m counts as under the surface.
 *
 * Usage: bodies OUTDIR [REPS (default 3)] [SCENE name prefix: drop, stack, pyr]
 */
#define _Static_assert static_assert /* C11 headers */
extern "C" {
#include "bench.h"
#include "core/jobs.h"
#include "mesh/dc.h"
#include "physics/bodies.h"
#include "physics/terrain_physics.h"
#include "voxel/material.h"
#include "voxel/terrain.h"
}
#undef _Static_assert

#include <BulletCollision/CollisionDispatch/btInternalEdgeUtility.h>
#include <LinearMath/btThreads.h>
#include <btBulletDynamicsCommon.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

constexpr double DT = 1.0 / 60.0;
constexpr int STEPS = 300;
constexpr int SETTLE = 60; /* drift is measured from the state after this many steps */
constexpr double GRAVITY[3] = {0, -9.81, 0};
constexpr int SUBSTEPS = 4;
constexpr int BULLET_ITERATIONS = 2 * SUBSTEPS; /* a solve and a relax pass per substep */
constexpr double SLEEP_LINEAR = 0.05, SLEEP_ANGULAR = 0.05, SLEEP_TIME = 0.5; /* bodies_internal.h */
constexpr double RESTITUTION_SPEED = 1.0;                                     /* Q_RESTITUTION_SPEED */
constexpr double BELOW_TOLERANCE = 0.05;
constexpr int AWAKE_STEPS = 30; /* 0.5 s: no body can fall asleep sooner, in either engine */

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
};

double median_of(std::vector<double> v)
{
    return v.empty() ? 0.0 : bench_median(v.data(), (int)v.size());
}

/* ---- terrain ---- */

struct World {
    const char *name;
    int size[3];
    q_terrain *terrain = nullptr;
    q_terrain_physics *tp = nullptr;
    /* the same triangles for Bullet, world positions */
    std::vector<float> pos;
    std::vector<int32_t> idx;
    std::vector<uint8_t> tri_material;
    double warm_s = 0;
    size_t warm_chunks = 0;
    World(const char *n, int x, int y, int z) : name(n), size{x, y, z} {}
};

void make_world(World &w, q_terrain_kind kind)
{
    char err[256] = "";
    w.terrain = q_terrain_create(NULL);
    if (!w.terrain) {
        fprintf(stderr, "bench: q_terrain_create failed\n");
        exit(1);
    }
    q_generate_def gd = q_default_generate_def();
    gd.kind = kind;
    memcpy(gd.size, w.size, sizeof gd.size);
    gd.seed = 1;
    bench_check(q_terrain_generate(w.terrain, &gd, err, sizeof err), "q_terrain_generate", err);
    w.tp = q_terrain_physics_create(w.terrain, 1.0, 0);
    if (!w.tp) {
        fprintf(stderr, "bench: q_terrain_physics_create failed\n");
        exit(1);
    }

    const q_box chunk = {{0, 0, 0}, {Q_PHYS_CHUNK, Q_PHYS_CHUNK, Q_PHYS_CHUNK}};
    std::vector<float> p(3 * q_dc_vertex_bound(chunk));
    std::vector<uint8_t> m(q_dc_vertex_bound(chunk));
    std::vector<uint32_t> ix(q_dc_index_bound(chunk));
    std::vector<unsigned char> scratch(q_dc_scratch_bytes(chunk));
    q_dc_output out{};
    out.positions = p.data();
    out.materials = m.data();
    out.indices = ix.data();
    out.vertex_capacity = m.size();
    out.index_capacity = ix.size();
    for (int cz = -1; cz <= w.size[2] / Q_PHYS_CHUNK; cz++)
        for (int cy = -1; cy <= w.size[1] / Q_PHYS_CHUNK; cy++)
            for (int cx = -1; cx <= w.size[0] / Q_PHYS_CHUNK; cx++) {
                int32_t o[3] = {cx * Q_PHYS_CHUNK, cy * Q_PHYS_CHUNK, cz * Q_PHYS_CHUNK};
                q_box b = {{o[0], o[1], o[2]}, {o[0] + Q_PHYS_CHUNK, o[1] + Q_PHYS_CHUNK, o[2] + Q_PHYS_CHUNK}};
                memcpy(out.origin, o, sizeof o);
                bench_check(q_dc_mesh(w.terrain, b, Q_SURFACE_SOLID, 1.0f, &out, scratch.data(), err, sizeof err),
                            "q_dc_mesh", err);
                int32_t base = (int32_t)(w.pos.size() / 3);
                for (size_t v = 0; v < out.vertex_count; v++)
                    for (int a = 0; a < 3; a++)
                        w.pos.push_back(p[3 * v + a] + (float)o[a]);
                for (size_t i = 0; i < out.index_count; i++)
                    w.idx.push_back(base + (int32_t)ix[i]);
                for (size_t t = 0; t < out.index_count / 3; t++)
                    w.tri_material.push_back(m[ix[3 * t]]);
            }

    /* Warm Quarry's cache of chunk meshes where boxes can land. */
    q_terrain_physics_stats before = q_terrain_physics_get_stats(w.tp);
    double t0 = bench_now();
    for (int z = 0; z < w.size[2]; z++)
        for (int x = 0; x < w.size[0]; x++) {
            double o[3] = {x + 0.5, w.size[1] + 10.0, z + 0.5}, d[3] = {0, -1, 0};
            q_ray_hit hit;
            q_terrain_physics_raycast(w.tp, o, d, w.size[1] + 20.0, Q_RAY_SOLID, &hit);
        }
    w.warm_s = bench_now() - t0;
    w.warm_chunks = q_terrain_physics_get_stats(w.tp).cached_chunks - before.cached_chunks;
}

double surface_y(const World &w, double x, double z)
{
    double o[3] = {x, w.size[1] + 10.0, z}, d[3] = {0, -1, 0};
    q_ray_hit hit;
    if (!q_terrain_physics_raycast(w.tp, o, d, w.size[1] + 20.0, Q_RAY_SOLID, &hit)) {
        fprintf(stderr, "bench: no terrain under (%g, %g)\n", x, z);
        exit(1);
    }
    return hit.position[1];
}

/* ---- scenes ---- */

struct Box {
    double p[3], q[4]; /* centre, unit quaternion x y z w */
};

struct Scene {
    const char *name;
    World *world;
    std::vector<Box> boxes;
    bool drift; /* report drift (resting scenes) */
};

Scene drop_scene(World &w)
{
    Scene s{"drop 1000 boxes on hills", &w, {}, false};
    Rng rng{42};
    for (int i = 0; i < 10; i++)
        for (int k = 0; k < 10; k++) {
            double x = w.size[0] * 0.5 + (i - 4.5) * 4.0, z = w.size[2] * 0.5 + (k - 4.5) * 4.0;
            double ground = surface_y(w, x, z);
            for (int j = 0; j < 10; j++) {
                Box b{{x, ground + 2.0 + j * 2.5, z}, {0, 0, 0, 1}};
                /* uniform random rotation (Shoemake) */
                double u1 = rng.uniform(), u2 = 2 * M_PI * rng.uniform(), u3 = 2 * M_PI * rng.uniform();
                double a = std::sqrt(1 - u1), c = std::sqrt(u1);
                b.q[0] = a * std::sin(u2), b.q[1] = a * std::cos(u2), b.q[2] = c * std::sin(u3),
                b.q[3] = c * std::cos(u3);
                s.boxes.push_back(b);
            }
        }
    return s;
}

Scene stack_scene(World &w)
{
    Scene s{"stack 10x10x10 on flat ground", &w, {}, true};
    double cx = w.size[0] * 0.5, cz = w.size[2] * 0.5, ground = surface_y(w, cx, cz);
    for (int i = 0; i < 10; i++)
        for (int k = 0; k < 10; k++)
            for (int j = 0; j < 10; j++)
                s.boxes.push_back(Box{{cx + (i - 4.5) * 1.1, ground + 0.5 + j, cz + (k - 4.5) * 1.1}, {0, 0, 0, 1}});
    return s;
}

Scene pyramid_scene(World &w)
{
    Scene s{"pyramid 210 boxes (base 20) on flat ground", &w, {}, true};
    double cx = w.size[0] * 0.5, cz = w.size[2] * 0.5, ground = surface_y(w, cx, cz);
    for (int r = 0; r < 20; r++) {
        int n = 20 - r;
        for (int k = 0; k < n; k++)
            s.boxes.push_back(Box{{cx + (k - 0.5 * (n - 1)) * 1.05, ground + 0.5 + r, cz}, {0, 0, 0, 1}});
    }
    return s;
}

/* ---- one run ---- */

struct Run {
    std::vector<double> step_s, cpu_s; /* per step: wall, CPU time of the process (all threads) */
    double mean_s = 0, worst_s = 0, cpu_mean_s = 0, cpu_worst_s = 0, awake_cpu_s = 0;
    int worst_step = 0;
    double drift = 0;
    double moved = 0; /* largest distance from the initial placement at the end */
    size_t asleep = 0, below = 0, off = 0, nonfinite = 0;
    double stage_s[3] = {0, 0, 0}; /* broadphase, narrowphase, rest, summed over steps */
    size_t contacts = 0;           /* contact points after the last step */
    uint64_t hash = 0;
};

double cpu_now()
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void finish_times(Run &r)
{
    double sum = 0, cpu = 0, awake = 0;
    for (int i = 0; i < (int)r.step_s.size(); i++) {
        sum += r.step_s[i], cpu += r.cpu_s[i];
        r.cpu_worst_s = std::max(r.cpu_worst_s, r.cpu_s[i]);
        if (i < AWAKE_STEPS)
            awake += r.cpu_s[i];
        if (r.step_s[i] > r.worst_s)
            r.worst_s = r.step_s[i], r.worst_step = i;
    }
    r.mean_s = sum / (double)r.step_s.size();
    r.cpu_mean_s = cpu / (double)r.step_s.size();
    r.awake_cpu_s = awake / AWAKE_STEPS;
}

void track_drift(Run &r, int step, std::vector<double> &settled, size_t i, const double p[3])
{
    if (step == SETTLE - 1) {
        memcpy(&settled[3 * i], p, 3 * sizeof(double));
    } else if (step >= SETTLE) {
        double dx = p[0] - settled[3 * i], dy = p[1] - settled[3 * i + 1], dz = p[2] - settled[3 * i + 2];
        r.drift = std::max(r.drift, std::sqrt(dx * dx + dy * dy + dz * dz));
    }
}

void check_position(Run &r, const World &w, const Box &initial, const double p[3], double surface, bool hit)
{
    double dx = p[0] - initial.p[0], dy = p[1] - initial.p[1], dz = p[2] - initial.p[2];
    r.moved = std::max(r.moved, std::sqrt(dx * dx + dy * dy + dz * dz));
    if (!std::isfinite(p[0]) || !std::isfinite(p[1]) || !std::isfinite(p[2])) {
        r.nonfinite++;
        return;
    }
    if (!hit || p[0] < 0 || p[2] < 0 || p[0] > w.size[0] || p[2] > w.size[2]) {
        r.off++;
        return;
    }
    if (p[1] < surface - BELOW_TOLERANCE)
        r.below++;
}

Run run_quarry(const Scene &s, q_jobs *jobs)
{
    World &w = *s.world;
    char err[256] = "";
    q_bodies *b = q_bodies_create(w.tp, jobs, 1.0, GRAVITY, SUBSTEPS);
    if (!b) {
        fprintf(stderr, "bench: q_bodies_create failed\n");
        exit(1);
    }
    uint8_t rock = (uint8_t)q_material_find("rock");
    std::vector<q_handle> hs;
    for (const Box &x : s.boxes) {
        const double half[3] = {0.5, 0.5, 0.5};
        q_body_def d = q_default_body_def();
        d.shape = q_collider_box(half, err, sizeof err);
        memcpy(d.position, x.p, sizeof d.position);
        memcpy(d.rotation, x.q, sizeof d.rotation);
        d.material = rock;
        q_handle h = q_body_create(b, &d, err, sizeof err);
        if (q_handle_is_null(h)) {
            fprintf(stderr, "bench: q_body_create: %s\n", err);
            exit(1);
        }
        hs.push_back(h);
    }
    Run r;
    std::vector<double> settled(3 * hs.size());
    for (int step = 0; step < STEPS; step++) {
        double c0 = cpu_now(), t0 = bench_now();
        q_bodies_step(b, DT);
        r.step_s.push_back(bench_now() - t0);
        r.cpu_s.push_back(cpu_now() - c0);
        q_bodies_stats st = q_bodies_get_stats(b);
        r.stage_s[0] += st.ms_broadphase * 1e-3;
        r.stage_s[1] += st.ms_narrowphase * 1e-3;
        r.stage_s[2] += r.step_s.back() - (st.ms_broadphase + st.ms_narrowphase) * 1e-3;
        if (s.drift)
            for (size_t i = 0; i < hs.size(); i++) {
                q_body_state bs;
                q_body_get(b, hs[i], &bs);
                track_drift(r, step, settled, i, bs.position);
            }
    }
    finish_times(r);
    for (size_t i = 0; i < hs.size(); i++) {
        q_body_state bs;
        q_body_get(b, hs[i], &bs);
        r.asleep += bs.sleeping;
        double o[3] = {bs.position[0], w.size[1] + 10.0, bs.position[2]}, d[3] = {0, -1, 0};
        q_ray_hit hit;
        bool ok = std::isfinite(o[0]) && std::isfinite(o[2]) &&
                  q_terrain_physics_raycast(w.tp, o, d, w.size[1] + 20.0, Q_RAY_SOLID, &hit);
        check_position(r, w, s.boxes[i], bs.position, ok ? hit.position[1] : 0.0, ok);
    }
    r.contacts = q_bodies_get_stats(b).contacts;
    r.hash = q_bodies_hash(b);
    q_bodies_destroy(b);
    return r;
}

/* ---- Bullet ---- */

const btCollisionObject *g_terrain_object; /* of the world being stepped */
btScalar g_default_deactivation_time; /* read in main before any change */
const std::vector<uint8_t> *g_tri_material;

bool contact_added(btManifoldPoint &cp, const btCollisionObjectWrapper *w0, int part0, int index0,
                   const btCollisionObjectWrapper *w1, int part1, int index1)
{
    bool mesh_is_1 = w1->getCollisionObject() == g_terrain_object;
    const btCollisionObjectWrapper *mesh = mesh_is_1 ? w1 : w0, *other = mesh_is_1 ? w0 : w1;
    if (mesh->getCollisionObject() != g_terrain_object)
        return false;
    int part = mesh_is_1 ? part1 : part0, index = mesh_is_1 ? index1 : index0;
    btAdjustInternalEdgeContacts(cp, mesh, other, part, index);
    const q_material *tm = q_material_get((*g_tri_material)[(size_t)index]);
    double f = other->getCollisionObject()->getFriction(), e = other->getCollisionObject()->getRestitution();
    /* bodies carry sqrt of their material's values (see make_bullet_box) */
    cp.m_combinedFriction = (btScalar)std::sqrt(f * f * tm->friction);
    cp.m_combinedRestitution = (btScalar)std::max(e * e, (double)tm->restitution);
    return true;
}

/* btDiscreteDynamicsWorld with its collision stages timed (the overrides call
 * the base versions and change nothing else). */
struct TimedWorld : btDiscreteDynamicsWorld {
    double broadphase_s = 0, collision_s = 0;
    TimedWorld(btDispatcher *d, btBroadphaseInterface *b, btConstraintSolver *s, btCollisionConfiguration *c)
        : btDiscreteDynamicsWorld(d, b, s, c)
    {
    }
    void updateAabbs() override
    {
        double t0 = bench_now();
        btDiscreteDynamicsWorld::updateAabbs();
        broadphase_s += bench_now() - t0;
    }
    void computeOverlappingPairs() override
    {
        double t0 = bench_now();
        btDiscreteDynamicsWorld::computeOverlappingPairs();
        broadphase_s += bench_now() - t0;
    }
    void performDiscreteCollisionDetection() override
    {
        double t0 = bench_now();
        btDiscreteDynamicsWorld::performDiscreteCollisionDetection();
        collision_s += bench_now() - t0;
    }
};

struct BulletTerrain {
    btTriangleIndexVertexArray *array = nullptr;
    btBvhTriangleMeshShape *shape = nullptr;
    btTriangleInfoMap *info = nullptr;
    double build_s = 0, edges_s = 0;

    void build(const World &w)
    {
        btIndexedMesh im;
        im.m_numTriangles = (int)(w.idx.size() / 3);
        im.m_triangleIndexBase = (const unsigned char *)w.idx.data();
        im.m_triangleIndexStride = 3 * (int)sizeof(int32_t);
        im.m_numVertices = (int)(w.pos.size() / 3);
        im.m_vertexBase = (const unsigned char *)w.pos.data();
        im.m_vertexStride = 3 * (int)sizeof(float);
        im.m_indexType = PHY_INTEGER;
        im.m_vertexType = PHY_FLOAT;
        double t0 = bench_now();
        array = new btTriangleIndexVertexArray();
        array->addIndexedMesh(im, PHY_INTEGER);
        shape = new btBvhTriangleMeshShape(array, true, true);
        double t1 = bench_now();
        info = new btTriangleInfoMap();
        btGenerateInternalEdgeInfo(shape, info);
        build_s = t1 - t0;
        edges_s = bench_now() - t1;
    }
    void release()
    {
        delete shape;
        delete info;
        delete array;
    }
};

/* matched_sleep: Quarry's sleep thresholds; otherwise Bullet's defaults. */
Run run_bullet(const Scene &s, BulletTerrain &bt, bool matched_sleep)
{
    World &w = *s.world;
    btDefaultCollisionConfiguration config;
    btCollisionDispatcher dispatcher(&config);
    btDbvtBroadphase broadphase;
    btSequentialImpulseConstraintSolver solver;
    TimedWorld world(&dispatcher, &broadphase, &solver, &config);
    world.setGravity(btVector3((btScalar)GRAVITY[0], (btScalar)GRAVITY[1], (btScalar)GRAVITY[2]));
    world.getSolverInfo().m_numIterations = BULLET_ITERATIONS;
    world.getSolverInfo().m_restitutionVelocityThreshold = (btScalar)RESTITUTION_SPEED;
    gDeactivationTime = matched_sleep ? (btScalar)SLEEP_TIME : g_default_deactivation_time;
    gContactAddedCallback = contact_added;

    btRigidBody::btRigidBodyConstructionInfo ti(0, nullptr, bt.shape);
    btRigidBody terrain(ti);
    terrain.setCollisionFlags(terrain.getCollisionFlags() | btCollisionObject::CF_CUSTOM_MATERIAL_CALLBACK);
    world.addRigidBody(&terrain);
    g_terrain_object = &terrain;
    g_tri_material = &w.tri_material;

    const q_material *rock = q_material_get(q_material_find("rock"));
    const btScalar mass = (btScalar)rock->density; /* a 1 m^3 box */
    btBoxShape box(btVector3(0.5, 0.5, 0.5));
    btVector3 inertia;
    box.calculateLocalInertia(mass, inertia);
    std::vector<btRigidBody *> bodies;
    for (const Box &x : s.boxes) {
        btRigidBody::btRigidBodyConstructionInfo ci(mass, nullptr, &box, inertia);
        ci.m_startWorldTransform.setOrigin(btVector3((btScalar)x.p[0], (btScalar)x.p[1], (btScalar)x.p[2]));
        ci.m_startWorldTransform.setRotation(
            btQuaternion((btScalar)x.q[0], (btScalar)x.q[1], (btScalar)x.q[2], (btScalar)x.q[3]));
        /* Bullet multiplies the two bodies' values: sqrt gives the geometric
         * mean of frictions between boxes, and restitution e for e == e. */
        ci.m_friction = (btScalar)std::sqrt(rock->friction);
        ci.m_restitution = (btScalar)std::sqrt(rock->restitution);
        if (matched_sleep) {
            ci.m_linearSleepingThreshold = (btScalar)SLEEP_LINEAR;
            ci.m_angularSleepingThreshold = (btScalar)SLEEP_ANGULAR;
        }
        btRigidBody *rb = new btRigidBody(ci);
        world.addRigidBody(rb);
        bodies.push_back(rb);
    }

    Run r;
    std::vector<double> settled(3 * bodies.size());
    for (int step = 0; step < STEPS; step++) {
        double bp = world.broadphase_s, cd = world.collision_s;
        double c0 = cpu_now(), t0 = bench_now();
        world.stepSimulation((btScalar)DT, 0);
        r.step_s.push_back(bench_now() - t0);
        r.cpu_s.push_back(cpu_now() - c0);
        r.stage_s[0] += world.broadphase_s - bp;
        r.stage_s[1] += (world.collision_s - cd) - (world.broadphase_s - bp);
        r.stage_s[2] += r.step_s.back() - (world.collision_s - cd);
        if (s.drift)
            for (size_t i = 0; i < bodies.size(); i++) {
                const btVector3 &c = bodies[i]->getCenterOfMassPosition();
                double p[3] = {c.x(), c.y(), c.z()};
                track_drift(r, step, settled, i, p);
            }
    }
    finish_times(r);
    for (size_t i = 0; i < bodies.size(); i++) {
        const btRigidBody *rb = bodies[i];
        const btVector3 &c = rb->getCenterOfMassPosition();
        double p[3] = {c.x(), c.y(), c.z()};
        r.asleep += rb->getActivationState() == ISLAND_SLEEPING;
        btVector3 from(c.x(), (btScalar)(w.size[1] + 10.0), c.z()), to(c.x(), (btScalar)-10.0, c.z());
        btCollisionWorld::ClosestRayResultCallback ray(from, to);
        ray.m_collisionFilterMask = btBroadphaseProxy::StaticFilter; /* the terrain only */
        world.rayTest(from, to, ray);
        check_position(r, w, s.boxes[i], p, ray.hasHit() ? ray.m_hitPointWorld.y() : 0.0, ray.hasHit());
    }
    for (int i = 0; i < dispatcher.getNumManifolds(); i++)
        r.contacts += (size_t)dispatcher.getManifoldByIndexInternal(i)->getNumContacts();
    for (btRigidBody *rb : bodies) {
        world.removeRigidBody(rb);
        delete rb;
    }
    world.removeRigidBody(&terrain);
    g_terrain_object = nullptr;
    return r;
}

/* ---- reporting ---- */

enum Engine { QUARRY_1, QUARRY_2, BULLET_1, BULLET_1_DEFAULT_SLEEP, ENGINES };
const char *const ENGINE_NAME[ENGINES] = {"Quarry, 1 thread", "Quarry, 2 threads", "Bullet 3.24, 1 thread",
                                          "Bullet 3.24, its default sleeping"};

struct Results {
    std::vector<Run> runs[ENGINES];
    template <typename F> std::vector<double> each(Engine e, F f) const
    {
        std::vector<double> v;
        for (const Run &r : runs[e])
            v.push_back(f(r));
        return v;
    }
};

std::string list(const std::vector<double> &v, double scale, const char *fmt)
{
    std::string t;
    char buf[64];
    for (double x : v) {
        snprintf(buf, sizeof buf, fmt, x / scale);
        t += (t.empty() ? "" : ", ") + std::string(buf);
    }
    return t;
}

/* One table row from a per-run figure of two engines (medians over runs). */
template <typename F>
void row(const Results &res, const char *what, Engine ours, Engine base, F f, const char *unit, double scale,
         const char *shown)
{
    std::vector<double> a = res.each(ours, f), b = res.each(base, f);
    bench_row(what, median_of(a), a.data(), (int)a.size(), ENGINE_NAME[base], median_of(b), b.data(), (int)b.size(),
              unit, scale, shown);
}

bool report(const Scene &s, const Results &res)
{
    char title[256];
    snprintf(title, sizeof title, "%s: %zu boxes, %zu terrain tris, %d steps of 1/60 s (median of %zu runs)", s.name,
             s.boxes.size(), s.world->idx.size() / 3, STEPS, res.runs[QUARRY_1].size());
    bench_section_inverse(title);
    auto mean = [](const Run &r) { return r.mean_s; };
    auto worst = [](const Run &r) { return r.worst_s; };
    auto cpu = [](const Run &r) { return r.cpu_mean_s; };
    auto cpu_worst = [](const Run &r) { return r.cpu_worst_s; };
    auto awake = [](const Run &r) { return r.awake_cpu_s; };
    auto drift = [](const Run &r) { return r.drift; };
    row(res, "1 thread: ms/step, mean", QUARRY_1, BULLET_1, mean, "s", 1e-3, "ms");
    row(res, "1 thread: ms/step, worst step", QUARRY_1, BULLET_1, worst, "s", 1e-3, "ms");
    row(res, "1 thread: CPU ms/step, mean", QUARRY_1, BULLET_1, cpu, "s", 1e-3, "ms");
    row(res, "1 thread: CPU ms/step, worst step", QUARRY_1, BULLET_1, cpu_worst, "s", 1e-3, "ms");
    row(res, "1 thread: CPU ms/step, first 0.5 s (all awake)", QUARRY_1, BULLET_1, awake, "s", 1e-3, "ms");
    row(res, "2 threads (Bullet 1): ms/step, mean", QUARRY_2, BULLET_1, mean, "s", 1e-3, "ms");
    row(res, "2 threads (Bullet 1): ms/step, worst step", QUARRY_2, BULLET_1, worst, "s", 1e-3, "ms");
    row(res, "2 threads (Bullet 1): CPU ms/step, mean", QUARRY_2, BULLET_1, cpu, "s", 1e-3, "ms");
    row(res, "1 thread: CPU ms/step, mean", QUARRY_1, BULLET_1_DEFAULT_SLEEP, cpu, "s", 1e-3, "ms");
    if (s.drift) {
        row(res, "drift over 4 s after settling 1 s, largest", QUARRY_1, BULLET_1, drift, "m", 1e-3, "mm");
        row(res, "drift over 4 s after settling 1 s, largest", QUARRY_1, BULLET_1_DEFAULT_SLEEP, drift, "m", 1e-3,
            "mm");
    }

    for (int e = 0; e < ENGINES; e++) {
        Engine en = (Engine)e;
        const Run &last = res.runs[e].back();
        std::vector<double> st[3];
        for (const Run &r : res.runs[e])
            for (int k = 0; k < 3; k++)
                st[k].push_back(r.stage_s[k] / STEPS);
        bench_note("%s: ms/step by stage: broadphase %.3f, narrowphase %.3f, solver and the rest %.3f; "
                   "mean per run %s ms; worst step %s ms at step %d (last run); at the end %zu of %zu asleep, "
                   "%zu contact points; largest distance from the start %.3f m%s%s",
                   ENGINE_NAME[e], median_of(st[0]) * 1e3, median_of(st[1]) * 1e3, median_of(st[2]) * 1e3,
                   list(res.each(en, mean), 1e-3, "%.2f").c_str(), list(res.each(en, worst), 1e-3, "%.1f").c_str(),
                   last.worst_step, last.asleep, s.boxes.size(), last.contacts, last.moved,
                   s.drift ? "; drift per run (mm) " : "",
                   s.drift ? list(res.each(en, drift), 1e-3, "%.1f").c_str() : "");
    }
    bool quarry_ok = true, bullet_ok = true, same = true;
    size_t below[ENGINES] = {0}, off[ENGINES] = {0}, nonfinite[ENGINES] = {0};
    for (int e = 0; e < ENGINES; e++)
        for (const Run &r : res.runs[e]) {
            bool ok = r.below == 0 && r.nonfinite == 0 && r.off == 0;
            (e == BULLET_1 || e == BULLET_1_DEFAULT_SLEEP ? bullet_ok : quarry_ok) &= ok;
            below[e] = std::max(below[e], r.below);
            off[e] = std::max(off[e], r.off);
            nonfinite[e] = std::max(nonfinite[e], r.nonfinite);
        }
    for (const Run &r : res.runs[QUARRY_1])
        for (int e = QUARRY_1; e <= QUARRY_2; e++)
            for (const Run &o : res.runs[e])
                same &= o.hash == r.hash;
    printf("  check: boxes under the surface (ray down at each box, > %.2f m below) / off the terrain / non-finite, "
           "worst run: Quarry %zu/%zu/%zu, Bullet %zu/%zu/%zu and %zu/%zu/%zu: %s\n",
           BELOW_TOLERANCE, std::max(below[QUARRY_1], below[QUARRY_2]), std::max(off[QUARRY_1], off[QUARRY_2]),
           std::max(nonfinite[QUARRY_1], nonfinite[QUARRY_2]), below[BULLET_1], off[BULLET_1], nonfinite[BULLET_1],
           below[BULLET_1_DEFAULT_SLEEP], off[BULLET_1_DEFAULT_SLEEP], nonfinite[BULLET_1_DEFAULT_SLEEP],
           quarry_ok && bullet_ok ? "ok" : quarry_ok ? "Bullet FAILED" : "Quarry FAILED");
    printf("  check: Quarry's final hash equal over all runs, 1 and 2 threads (%016llx): %s\n",
           (unsigned long long)res.runs[QUARRY_1][0].hash, same ? "ok" : "FAILED");
    return quarry_ok && same;
}
} // namespace

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    if (reps < 1)
        reps = 1;
    const char *only = argc > 3 ? argv[3] : nullptr; /* a scene name prefix, for profiling */
    double t_start = bench_now();
    g_default_deactivation_time = gDeactivationTime;

    /* Without BT_THREADSAFE Bullet offers no scheduler but the sequential one. */
    bool bullet_mt = btCreateDefaultTaskScheduler() != nullptr;

    World hills("hills", 128, 64, 128);
    World flat("flat", 64, 32, 64);
    make_world(hills, Q_GEN_HILLS);
    make_world(flat, Q_GEN_FLAT);
    BulletTerrain bt_hills, bt_flat;
    bt_hills.build(hills);
    bt_flat.build(flat);

    std::vector<Scene> scenes = {drop_scene(hills), stack_scene(flat), pyramid_scene(flat)};
    q_jobs *jobs = q_jobs_create(1);
    if (!jobs) {
        fprintf(stderr, "bench: q_jobs_create(1) failed\n");
        return 1;
    }

    bench_begin("bodies", dir);
    printf("\nRigid bodies vs Bullet 3.24: Quarry %d substeps (solve + relax each), Bullet %d iterations, "
           "one step of 1/60 s\n",
           SUBSTEPS, BULLET_ITERATIONS);
    printf("  terrain: hills %zu tris (Bullet BVH %.1f ms, edge info %.1f ms; Quarry cache warmed %.1f ms, %zu chunks), "
           "flat %zu tris\n",
           hills.idx.size() / 3, bt_hills.build_s * 1e3, bt_hills.edges_s * 1e3, hills.warm_s * 1e3,
           hills.warm_chunks, flat.idx.size() / 3);
    printf("  Bullet's btCreateDefaultTaskScheduler(): %s\n",
           bullet_mt ? "present, but this program runs Bullet on one thread only"
                     : "NULL (built without BT_THREADSAFE): no two-thread Bullet; 2-thread rows compare with 1");
    bool ok = true;
    for (const Scene &s : scenes) {
        if (only && strncmp(s.name, only, strlen(only)) != 0)
            continue;
        BulletTerrain &bt = s.world == &hills ? bt_hills : bt_flat;
        Results res;
        for (int rep = 0; rep < reps; rep++)
            for (int k = 0; k < ENGINES; k++) {
                Engine e = (Engine)((k + rep) % ENGINES);
                if (e == BULLET_1 || e == BULLET_1_DEFAULT_SLEEP)
                    res.runs[e].push_back(run_bullet(s, bt, e == BULLET_1));
                else
                    res.runs[e].push_back(run_quarry(s, e == QUARRY_2 ? jobs : nullptr));
            }
        ok &= report(s, res);
    }
    bench_end();
    printf("\nbodies: %.1f s in all\n", bench_now() - t_start);

    q_jobs_destroy(jobs);
    bt_hills.release();
    bt_flat.release();
    for (World *w : {&hills, &flat}) {
        q_terrain_physics_destroy(w->tp);
        q_terrain_destroy(w->terrain);
    }
    return ok ? 0 : 1;
}
