/* Rigid bodies through the C API, against closed forms and invariants: free
 * fall, resting on flat terrain (height = surface + half size, asleep), a
 * 10-box stack's drift, a floating block's draft against the density ratio,
 * and bit-equal hashes whatever the thread count. TAP. */
#include "core/bytes.h"
#include "core/jobs.h"
#include "physics/bodies.h"
#include "physics/bodies_internal.h"
#include "physics/terrain_physics.h"
#include "world/world.h"
#include "voxel/material.h"
#include "voxel/terrain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int test_no, failures;

static void report(const char *name, int ok)
{
    printf("%s %d - %s\n", ok ? "ok" : "not ok", ++test_no, name);
    failures += !ok;
}

typedef struct scene {
    q_jobs *jobs;
    q_terrain *terrain;
    q_terrain_physics *tp;
    q_bodies *bodies;
} scene;

static const double GRAVITY[3] = {0, -9.81, 0};

static scene make_scene(int threads, q_terrain_kind kind, bool water, double water_level)
{
    scene s;
    s.jobs = threads > 1 ? q_jobs_create(threads - 1) : NULL;
    s.terrain = q_terrain_create(s.jobs);
    if (kind != (q_terrain_kind)-1) {
        q_generate_def g = q_default_generate_def();
        g.kind = kind;
        g.size[0] = 96, g.size[1] = 48, g.size[2] = 96;
        g.has_water = water;
        g.water_level = water_level;
        char err[256];
        if (q_terrain_generate(s.terrain, &g, err, sizeof err) != Q_OK)
            printf("# generate: %s\n", err);
    }
    s.tp = q_terrain_physics_create(s.terrain, 1.0, 0);
    s.bodies = q_bodies_create(s.tp, s.jobs, 1.0, GRAVITY, 4);
    return s;
}

static void free_scene(scene *s)
{
    q_bodies_destroy(s->bodies);
    q_terrain_physics_destroy(s->tp);
    q_terrain_destroy(s->terrain);
    q_jobs_destroy(s->jobs);
}

static q_handle add_box(scene *s, double hx, double hy, double hz, double x, double y, double z, const char *mat)
{
    char err[256];
    double half[3] = {hx, hy, hz};
    q_body_def d = q_default_body_def();
    d.shape = q_collider_box(half, err, sizeof err);
    d.position[0] = x, d.position[1] = y, d.position[2] = z;
    d.material = (uint8_t)q_material_find(mat);
    q_handle h = q_body_create(s->bodies, &d, err, sizeof err);
    if (q_handle_is_null(h))
        printf("# body: %s\n", err);
    return h;
}

static double surface_height(scene *s, double x, double z)
{
    double o[3] = {x, 200, z}, d[3] = {0, -1, 0};
    q_ray_hit hit;
    return q_terrain_physics_raycast(s->tp, o, d, 400, Q_RAY_SOLID, &hit) ? hit.position[1] : NAN;
}

static void run(scene *s, int steps)
{
    for (int i = 0; i < steps; i++)
        q_bodies_step(s->bodies, 1.0 / 60);
}

static void test_free_fall(void)
{
    scene s = make_scene(1, (q_terrain_kind)-1, false, 0);
    char err[256];
    q_body_def d = q_default_body_def();
    d.shape = q_collider_sphere(0.5, err, sizeof err);
    d.position[1] = 100;
    q_handle h = q_body_create(s.bodies, &d, err, sizeof err);
    run(&s, 120);
    q_body_state st;
    q_body_get(s.bodies, h, &st);
    double t = 2.0, y = 100 - 0.5 * 9.81 * t * t, vy = -9.81 * t;
    printf("# free fall: y %.4f (closed form %.4f), vy %.4f (%.4f)\n", st.position[1], y, st.velocity[1], vy);
    report("free fall matches y0 - g t^2 / 2 within 0.5%", fabs(st.position[1] - y) < 0.005 * fabs(100 - y));
    report("free fall velocity matches -g t", fabs(st.velocity[1] - vy) < 1e-9 * 9.81 * t + 1e-9);
    free_scene(&s);
}

static void test_rest(void)
{
    scene s = make_scene(1, Q_GEN_FLAT, false, 0);
    double ground = surface_height(&s, 40.3, 40.7);
    q_handle h = add_box(&s, 0.5, 0.5, 0.5, 40.3, ground + 3, 40.7, "rock");
    run(&s, 240);
    q_body_state st;
    q_body_get(s.bodies, h, &st);
    printf("# rest: y %.4f surface %.4f sleeping %d v %.2g\n", st.position[1], ground, st.sleeping,
           st.velocity[1]);
    report("a box rests on flat ground at surface + half size (5 mm)", fabs(st.position[1] - (ground + 0.5)) < 0.005);
    report("the resting box falls asleep", st.sleeping);
    free_scene(&s);
}

static void test_stack(void)
{
    scene s = make_scene(1, Q_GEN_FLAT, false, 0);
    double ground = surface_height(&s, 50.5, 50.5);
    q_handle h[10];
    for (int i = 0; i < 10; i++)
        h[i] = add_box(&s, 0.5, 0.5, 0.5, 50.5, ground + 0.5 + i * 1.0, 50.5, "rock");
    double max_drift = 0;
    for (int step = 0; step < 600; step++) {
        run(&s, 1);
        for (int i = 0; i < 10; i++) {
            q_body_state st;
            q_body_get(s.bodies, h[i], &st);
            double dx = st.position[0] - 50.5, dz = st.position[2] - 50.5,
                   dy = st.position[1] - (ground + 0.5 + i);
            max_drift = fmax(max_drift, sqrt(dx * dx + dy * dy + dz * dz));
        }
    }
    printf("# stack: largest drift %.4f m over 10 s, awake %zu\n", max_drift, q_bodies_awake(s.bodies));
    report("a 10-box stack stands 10 s with drift under 0.05 m", max_drift < 0.05);
    free_scene(&s);
}

/* A 210-box pyramid (rows 1.05 m apart, each centred on the one below):
 * it settles without creeping sideways and falls asleep. */
static void test_pyramid(void)
{
    scene s = make_scene(1, Q_GEN_FLAT, false, 0);
    double ground = surface_height(&s, 48, 48);
    q_handle h[210];
    double settled[210][3];
    int n = 0;
    for (int row = 0; row < 20; row++)
        for (int k = 0; k < 20 - row; k++)
            h[n++] = add_box(&s, 0.5, 0.5, 0.5, 48 + (k - 0.5 * (19 - row)) * 1.05, ground + 0.5 + row, 48, "rock");
    double drift = 0, mean_dx = 0;
    int asleep_at = -1;
    for (int step = 0; step < 600; step++) {
        run(&s, 1);
        for (int i = 0; i < n; i++) {
            q_body_state st;
            q_body_get(s.bodies, h[i], &st);
            if (step == 59)
                memcpy(settled[i], st.position, sizeof settled[i]);
            if (step >= 60) {
                double d[3] = {st.position[0] - settled[i][0], st.position[1] - settled[i][1],
                               st.position[2] - settled[i][2]};
                drift = fmax(drift, sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
                if (step == 599)
                    mean_dx += d[0] / n;
            }
        }
        if (asleep_at < 0 && q_bodies_awake(s.bodies) == 0)
            asleep_at = step;
    }
    printf("# pyramid: drift %.4f m after settling, mean dx %.4f, asleep at step %d\n", drift, mean_dx, asleep_at);
    report("a 210-box pyramid moves under 5 cm after settling and does not creep sideways",
           drift < 0.05 && fabs(mean_dx) < 0.01);
    report("the pyramid falls asleep within 10 s", asleep_at >= 0);
    free_scene(&s);
}

static void test_float(void)
{
    scene s = make_scene(1, Q_GEN_FLAT, true, 30);
    double ground = surface_height(&s, 48.5, 48.5);
    q_handle wood = add_box(&s, 1, 0.5, 1, 48.5, 32, 48.5, "wood");
    q_handle rock = add_box(&s, 0.5, 0.5, 0.5, 44.5, 32, 44.5, "rock");
    run(&s, 600);
    q_body_state st, sr;
    q_body_get(s.bodies, wood, &st);
    q_body_get(s.bodies, rock, &sr);
    double ratio = q_material_get(q_material_find("wood"))->density / q_material_get(q_material_find("water"))->density;
    double draft = 30 - (st.position[1] - 0.5);
    printf("# float: ground %.2f wood y %.4f draft %.4f expected %.4f; rock y %.3f\n", ground, st.position[1], draft,
           ratio * 1.0, sr.position[1]);
    report("wood floats with its draft within 10% of the density ratio", fabs(draft - ratio) < 0.1 * ratio);
    report("rock sinks to the bottom", sr.position[1] < ground + 0.6);
    free_scene(&s);
}

static uint64_t scenario_hash(int threads)
{
    scene s = make_scene(threads, Q_GEN_HILLS, false, 0);
    for (int i = 0; i < 120; i++)
        add_box(&s, 0.4 + 0.1 * (i % 3), 0.5, 0.4, 20 + (i % 10) * 5.3, 45 + (i / 10) * 1.5, 20 + (i / 10) * 4.1,
                i % 2 ? "rock" : "wood");
    run(&s, 240);
    uint64_t h = q_bodies_hash(s.bodies);
    free_scene(&s);
    return h;
}

static void test_determinism(void)
{
    uint64_t one = scenario_hash(1), again = scenario_hash(1), two = scenario_hash(2), three = scenario_hash(3);
    printf("# hashes %016llx %016llx %016llx %016llx\n", (unsigned long long)one, (unsigned long long)again,
           (unsigned long long)two, (unsigned long long)three);
    report("equal runs give equal hashes", one == again);
    report("the hash does not depend on the thread count", one == two && one == three);
}

/* The solver's batches (four constraints of a colour at once,
 * physics/solver_wide.h) against its scalar passes, the reference they
 * mirror: boxes, balls, capsules and hulls of rock, wood and glass (bouncy)
 * thrown onto hills into piles that touch, 300 steps. The two paths must
 * give bit-equal hashes, on one thread and on three; the batched run must
 * really have used batches. */
enum { SOLVE_SCALAR, SOLVE_BATCHED, SOLVE_BATCHED_BASELINE };

static uint64_t batched_hash(int threads, int how, size_t *most_batches)
{
    scene s = make_scene(threads, Q_GEN_HILLS, false, 0);
    s.bodies->scalar_solve = how == SOLVE_SCALAR;
    s.bodies->wide_baseline = how == SOLVE_BATCHED_BASELINE;
    static const char *mats[3] = {"rock", "wood", "glass"};
    const double hull_pts[] = {-0.5, -0.4, -0.3, 0.5, -0.4, -0.3, 0, 0.5, -0.3, 0, 0, 0.6, 0.2, -0.3, 0.4, -0.3, 0.2, 0.1};
    char err[256];
    for (int i = 0; i < 160; i++) {
        q_body_def d = q_default_body_def();
        double half[3] = {0.3 + 0.1 * (i % 3), 0.4, 0.35};
        switch (i % 4) {
        case 0: d.shape = q_collider_box(half, err, sizeof err); break;
        case 1: d.shape = q_collider_sphere(0.45, err, sizeof err); break;
        case 2: d.shape = q_collider_capsule(0.3, 0.4, err, sizeof err); break;
        default: d.shape = q_collider_hull(hull_pts, 6, err, sizeof err); break;
        }
        d.position[0] = 30 + (i % 8) * 1.1;
        d.position[1] = 40 + (i / 8) * 1.2;
        d.position[2] = 30 + (i % 5) * 1.3;
        d.velocity[0] = (i % 7) - 3.0;
        d.angular_velocity[1] = (i % 5) * 0.7;
        d.material = (uint8_t)q_material_find(mats[i % 3]);
        if (q_handle_is_null(q_body_create(s.bodies, &d, err, sizeof err)))
            printf("# body: %s\n", err);
    }
    *most_batches = 0;
    for (int i = 0; i < 300; i++) {
        q_bodies_step(s.bodies, 1.0 / 60);
        if (s.bodies->wide_batches.count > *most_batches)
            *most_batches = s.bodies->wide_batches.count;
    }
    uint64_t h = q_bodies_hash(s.bodies);
    free_scene(&s);
    return h;
}

static void test_batched_solve(void)
{
    size_t batches[5];
    uint64_t scalar = batched_hash(1, SOLVE_SCALAR, &batches[0]), wide = batched_hash(1, SOLVE_BATCHED, &batches[1]),
             base = batched_hash(1, SOLVE_BATCHED_BASELINE, &batches[2]),
             scalar3 = batched_hash(3, SOLVE_SCALAR, &batches[3]), wide3 = batched_hash(3, SOLVE_BATCHED, &batches[4]);
    printf("# batched solve: scalar %016llx batched %016llx (up to %zu batches), baseline build %016llx, "
           "three threads %016llx %016llx\n",
           (unsigned long long)scalar, (unsigned long long)wide, batches[1], (unsigned long long)base,
           (unsigned long long)scalar3, (unsigned long long)wide3);
    report("the batched solve gives the scalar solve's hash, bit for bit", scalar == wide && batches[1] > 20 &&
                                                                              batches[0] == 0);
    report("... in its baseline (non-AVX2) build too", base == wide);
    report("... on three threads as well", scalar3 == wide && wide3 == wide);
}

static void test_shatter(void)
{
    scene s = make_scene(1, (q_terrain_kind)-1, false, 0);
    char err[256];
    double half[3] = {1, 0.5, 0.5};
    q_body_def d = q_default_body_def();
    d.shape = q_collider_box(half, err, sizeof err);
    d.position[0] = 3, d.position[1] = 10, d.position[2] = -2;
    d.velocity[0] = 3, d.velocity[1] = 1;
    d.angular_velocity[1] = 2, d.angular_velocity[2] = 0.5;
    q_handle h = q_body_create(s.bodies, &d, err, sizeof err);
    q_body_state st;
    q_body_get(s.bodies, h, &st);
    double mass = st.mass, momentum[3], spin[3];
    for (int a = 0; a < 3; a++)
        momentum[a] = st.mass * st.velocity[a];
    q_shatter_params p = q_default_shatter_params();
    p.pieces = 16;
    q_handle out[64];
    size_t n = q_body_shatter(s.bodies, h, &p, out, 64, err, sizeof err);
    double m = 0, mom[3] = {0, 0, 0}, worst_out = 0;
    for (size_t i = 0; i < n; i++) {
        q_body_state f;
        q_body_get(s.bodies, out[i], &f);
        m += f.mass;
        for (int a = 0; a < 3; a++)
            mom[a] += f.mass * f.velocity[a];
        /* every fragment lies inside the box it came from */
        double lo[3], hi[3];
        q_xform t;
        q_body_xform(s.bodies, out[i], &t);
        q_collider_bounds(q_body_shape(s.bodies, out[i]), &t, lo, hi);
        double box_lo[3] = {2, 9.5, -2.5}, box_hi[3] = {4, 10.5, -1.5};
        for (int a = 0; a < 3; a++)
            worst_out = fmax(worst_out, fmax(box_lo[a] - lo[a], hi[a] - box_hi[a]));
    }
    (void)spin;
    double dm = 0;
    for (int a = 0; a < 3; a++)
        dm = fmax(dm, fabs(mom[a] - momentum[a]));
    printf("# shatter: %zu fragments, mass %.6f of %.6f, momentum error %.3g, worst outside %.3g%s%s\n", n, m, mass, dm,
           worst_out, n ? "" : ": ", n ? "" : err);
    report("shatter makes 2..16 fragments and the body is gone", n >= 2 && n <= 16 && !q_body_valid(s.bodies, h));
    report("fragments' masses add up to the body's (1e-6)", fabs(m - mass) < 1e-6 * mass);
    /* fragments are float meshes: their centres are good to ~1e-8 */
    report("fragments' momentum equals the body's (1e-6)", dm < 1e-6 * mass * 3);
    report("fragments lie within the body's box", worst_out < 1e-9);
    free_scene(&s);
}

static void test_brittle(void)
{
    q_material glass = q_default_material();
    snprintf(glass.name, sizeof glass.name, "test_glass");
    glass.brittle = true;
    glass.strength = 200;
    glass.density = 2500;
    char err[256];
    int id = q_material_define(&glass, err, sizeof err);
    q_world_def wd = q_default_world_def();
    wd.threads = 0;
    q_world *w = q_world_create(&wd, err, sizeof err);
    q_generate_def g = q_default_generate_def();
    g.kind = Q_GEN_FLAT;
    g.size[0] = g.size[2] = 64, g.size[1] = 32;
    q_terrain_generate(q_world_terrain(w), &g, err, sizeof err);
    double half[3] = {0.5, 0.5, 0.5};
    q_body_def d = q_default_body_def();
    d.shape = q_collider_box(half, err, sizeof err);
    d.material = (uint8_t)id;
    d.position[0] = 30, d.position[1] = 40, d.position[2] = 30;
    q_handle h = q_body_create(q_world_bodies(w), &d, err, sizeof err);
    size_t shattered = 0, fragments = 0;
    for (int i = 0; i < 300 && !shattered; i++) {
        q_world_step(w, wd.step);
        const q_shatter_event *e;
        const q_handle *fr;
        shattered = q_world_shatters(w, &e, &fr);
        if (shattered) {
            fragments = e[0].count;
            printf("# brittle: broke at frame %llu, impulse %.1f > strength %.0f, %zu fragments\n",
                   (unsigned long long)q_world_frame(w), e[0].impulse, glass.strength, fragments);
            shattered = q_handle_equal(e[0].body, h);
        }
    }
    report("a brittle box dropped 16 m shatters on impact into Q_BRITTLE_PIECES or fewer fragments",
           shattered && fragments >= 2 && fragments <= Q_BRITTLE_PIECES && !q_body_valid(q_world_bodies(w), h));
    q_world_destroy(w);
}

static void test_detach(void)
{
    char err[256];
    q_world_def wd = q_default_world_def();
    wd.threads = 0;
    q_world *w = q_world_create(&wd, err, sizeof err);
    q_terrain *t = q_world_terrain(w);
    int rock = q_material_find("rock"), wood = q_material_find("wood");
    q_terrain_fill_region(t, (q_box){{0, 0, 0}, {48, 8, 48}}, (uint8_t)rock, err, sizeof err);
    /* a pillar of wood on rock, joined to the ground by one layer */
    q_terrain_fill_region(t, (q_box){{20, 8, 20}, {24, 9, 24}}, (uint8_t)rock, err, sizeof err);
    q_terrain_fill_region(t, (q_box){{20, 9, 20}, {24, 20, 24}}, (uint8_t)wood, err, sizeof err);
    q_detach_params p = q_default_detach_params();
    size_t big = 0;
    size_t none = q_world_detach_islands(w, &p, &big, NULL, err, sizeof err);
    report("nothing detaches from connected terrain", none == 0);
    /* cut the joint: the pillar floats free */
    q_terrain_fill_region(t, (q_box){{20, 8, 20}, {24, 9, 24}}, 0, err, sizeof err);
    uint8_t mat[4 * 11 * 4], occ[4 * 11 * 4];
    q_terrain_read(t, (q_box){{20, 9, 20}, {24, 20, 24}}, mat, occ, err, sizeof err);
    double expect = 0;
    for (size_t i = 0; i < sizeof occ; i++)
        expect += occ[i] / 255.0 * q_material_get(mat[i])->density;
    uint64_t before = q_terrain_hash(t);
    size_t made = q_world_detach_islands(w, &p, &big, NULL, err, sizeof err);
    const q_handle *hs;
    q_world_detached(w, &hs);
    q_body_state st;
    bool got = made == 1 && q_body_get(q_world_bodies(w), hs[0], &st);
    printf("# detach: %zu bodies, mass %.3f (voxels say %.3f), material %d (wood %d)\n", made, got ? st.mass : 0,
           expect, got ? st.material : -1, wood);
    report("cutting the joint detaches exactly the pillar", got);
    report("its mass is the sum of occupancy x density", got && fabs(st.mass - expect) < 1e-9 * expect);
    report("its material is the one with the most mass", got && st.material == wood);
    /* the terrain now equals one where the pillar was never built */
    q_terrain *plain = q_terrain_create(NULL);
    q_terrain_fill_region(plain, (q_box){{0, 0, 0}, {48, 8, 48}}, (uint8_t)rock, err, sizeof err);
    report("the terrain after the detach equals one where the pillar never was",
           q_terrain_hash(t) == q_terrain_hash(plain) && q_terrain_hash(t) != before);
    q_terrain_destroy(plain);
    double y0 = got ? st.position[1] : 0;
    for (int i = 0; i < 30; i++)
        q_world_step(w, wd.step);
    got = got && q_body_get(q_world_bodies(w), hs[0], &st);
    report("the detached pillar falls", got && st.position[1] < y0 - 0.5);
    q_world_destroy(w);
}

/* A copy of a written set, read back into a new set on the same terrain
 * (material ids unchanged); NULL with a message when the read fails. */
static q_bodies *read_copy(const scene *s, const q_buf *out, const char *what)
{
    q_bodies *copy = q_bodies_create(s->tp, NULL, 1.0, GRAVITY, 4);
    q_reader in = {out->data, out->size, 0, false};
    uint8_t identity[256];
    for (int k = 0; k < 256; k++)
        identity[k] = (uint8_t)k;
    char err[256];
    if (q_bodies_read(copy, &in, identity, q_material_count(), err, sizeof err))
        return copy;
    printf("# %s: %s\n", what, err);
    q_bodies_destroy(copy);
    return NULL;
}

/* Steps both sets; whether their hashes stay equal throughout. */
static bool step_alike(q_bodies *a, q_bodies *b, int steps)
{
    bool alike = q_bodies_hash(a) == q_bodies_hash(b);
    for (int i = 0; alike && i < steps; i++) {
        q_bodies_step(a, 1.0 / 60);
        q_bodies_step(b, 1.0 / 60);
        alike = q_bodies_hash(a) == q_bodies_hash(b);
    }
    return alike;
}

/* Turns the voxel layer under the 9x9 voxels around (40, 40) to air, one
 * voxel deep: a box resting there drops one voxel, and the solid below
 * stays within the broadphase's reach. */
static void dig_pit(scene *s, double ground)
{
    char err[256];
    q_box pit = {{36, (int32_t)ground - 1, 36}, {45, (int32_t)ground + 1, 45}};
    q_terrain_fill_region(s->terrain, pit, (uint8_t)q_material_find("air"), err, sizeof err);
}

/* A set written and read back continues bit for bit: shapes of every kind,
 * sleeping and awake bodies, and the contact cache. */
static void test_round_trip(void)
{
    scene s = make_scene(1, Q_GEN_HILLS, false, 0);
    char err[256];
    for (int i = 0; i < 40; i++) {
        q_body_def d = q_default_body_def();
        double half[3] = {0.5, 0.3 + 0.05 * (i % 4), 0.4};
        double pts[8 * 3];
        for (int k = 0; k < 8; k++)
            pts[3 * k] = (k & 1) * 0.8 + 0.1 * (k == 3), pts[3 * k + 1] = (k >> 1 & 1) * 0.7,
                    pts[3 * k + 2] = (k >> 2) * 0.9 - 0.05 * (k == 5);
        switch (i % 5) {
        case 0: d.shape = q_collider_box(half, err, sizeof err); break;
        case 1: d.shape = q_collider_sphere(0.45, err, sizeof err); break;
        case 2: d.shape = q_collider_capsule(0.3, 0.4, err, sizeof err); break;
        case 3: d.shape = q_collider_hull(pts, 8, err, sizeof err); break;
        default: {
            q_collider_part parts[2] = {{q_collider_box(half, err, sizeof err), {{-0.5, 0, 0}, {0, 0, 0, 1}}},
                                        {q_collider_sphere(0.4, err, sizeof err), {{0.5, 0.2, 0}, {0, 0, 0, 1}}}};
            d.shape = q_collider_compound(parts, 2, err, sizeof err);
        }
        }
        d.position[0] = 30 + (i % 8) * 3.1, d.position[1] = 50 + i * 0.7, d.position[2] = 30 + (i / 8) * 3.3;
        d.angular_velocity[0] = 0.3 * (i % 3);
        d.name = i % 2 ? "odd" : NULL;
        q_body_create(s.bodies, &d, err, sizeof err);
    }
    run(&s, 150);
    /* written while bodies are keeping their terrain contacts (contacts.c),
     * which the record carries */
    for (int i = 0; i < 300 && q_bodies_get_stats(s.bodies).terrain_kept == 0; i++)
        run(&s, 1);
    q_buf out = {0};
    bool wrote = q_bodies_write(s.bodies, &out);
    q_bodies *copy = wrote ? read_copy(&s, &out, "read") : NULL;
    bool read = copy != NULL;
    report("a written set reads back with an equal hash", read && q_bodies_hash(copy) == q_bodies_hash(s.bodies));
    int diverged = -1;
    size_t kept_first = 0, kept_copy = 0;
    for (int i = 0; read && i < 120 && diverged < 0; i++) {
        q_bodies_step(s.bodies, 1.0 / 60);
        q_bodies_step(copy, 1.0 / 60);
        if (i == 0) {
            kept_first = q_bodies_get_stats(s.bodies).terrain_kept;
            kept_copy = q_bodies_get_stats(copy).terrain_kept;
        }
        if (q_bodies_hash(copy) != q_bodies_hash(s.bodies))
            diverged = i;
    }
    printf("# round trip: %zu bytes for %zu bodies (%zu asleep); kept terrain contacts in the first step: %zu, "
           "copy %zu; diverged at step %d\n",
           out.size, q_bodies_count(s.bodies), q_bodies_count(s.bodies) - q_bodies_awake(s.bodies), kept_first,
           kept_copy, diverged);
    report("the copy keeps the same terrain contacts as the original", kept_first > 0 && kept_copy == kept_first);
    report("the copy steps bit for bit like the original for 2 s", read && diverged < 0);
    /* every truncation is refused cleanly */
    int refused = 0, tries = 0;
    for (size_t cut = 0; wrote && cut < out.size; cut += 1 + out.size / 97, tries++) {
        q_bodies *t = q_bodies_create(s.tp, NULL, 1.0, GRAVITY, 4);
        q_reader r = {out.data, cut, 0, false};
        uint8_t remap[256] = {0};
        refused += !q_bodies_read(t, &r, remap, 256, err, sizeof err) && q_bodies_count(t) == 0;
        q_bodies_destroy(t);
    }
    report("truncated records are refused and leave the set empty", refused == tries);
    q_buf_free(&out);
    q_bodies_destroy(copy);
    free_scene(&s);
}

/* The kept-contact tests' scene: flat ground, one thread, and a 1 m rock
 * box (*box) 5 cm above the ground (*ground, the surface's height) at
 * (40.3, 40.7). */
static scene flat_with_box(q_handle *box, double *ground)
{
    scene s = make_scene(1, Q_GEN_FLAT, false, 0);
    *ground = surface_height(&s, 40.3, 40.7);
    *box = add_box(&s, 0.5, 0.5, 0.5, 40.3, *ground + 0.55, 40.7, "rock");
    return s;
}

/* Kept terrain contacts (contacts.c): a box settling on flat ground keeps
 * its contacts instead of querying the terrain each step; it rests where a
 * fresh query puts it, and digging the ground away under it (while it is
 * still awake, keeping contacts) lets it fall at once. */
static void test_kept_contacts(void)
{
    double ground;
    q_handle h;
    scene s = flat_with_box(&h, &ground);
    size_t kept = 0;
    int steps = 0;
    q_body_state st;
    do {
        run(&s, 1);
        kept = q_bodies_get_stats(s.bodies).terrain_kept;
        q_body_get(s.bodies, h, &st);
    } while (++steps < 120 && !(kept > 0 && fabs(st.position[1] - (ground + 0.5)) < 0.002));
    /* the fresh query at its pose: the deepest point's separation */
    q_body *body = q_bodies_get(s.bodies, h);
    q_xform t = q_body_frame(body);
    q_terrain_manifold fresh[16];
    size_t nf = q_collide_terrain(s.tp, body->shape, &t, body->margin, fresh, 16);
    double deepest = INFINITY;
    for (size_t k = 0; k < nf; k++)
        for (uint32_t j = 0; j < fresh[k].m.count; j++)
            deepest = fmin(deepest, fresh[k].m.points[j].separation);
    printf("# kept: after %d steps, y %.4f (surface + 0.5 = %.4f), fresh deepest separation %.2g, awake %d\n", steps,
           st.position[1], ground + 0.5, deepest, !st.sleeping);
    report("a box settled on flat ground keeps its terrain contacts", kept == 1 && !st.sleeping &&
                                                                     fabs(st.position[1] - (ground + 0.5)) < 0.002);
    report("where a fresh query finds it touching (1 mm)", nf > 0 && fabs(deepest) < 1e-3);
    /* only dropping the kept contacts lets it fall into the pit */
    dig_pit(&s, ground);
    double before = st.position[1];
    run(&s, 30);
    q_body_get(s.bodies, h, &st);
    printf("# kept: 0.5 s after the dig, y %.4f (was %.4f)\n", st.position[1], before);
    report("ground dug away under a box keeping contacts lets it fall at once", st.position[1] < before - 0.5);
    free_scene(&s);
}

/* Kept contacts in a set written between steps: a kept body destroyed and
 * its slot taken by a static body, and the ground dug away under another
 * before writing. The record must read back, and the copy must step like
 * the original, which drops the dug-under body's contacts in its next
 * step (the copy never sees that edit as a change). */
static void test_kept_round_trip(void)
{
    double ground;
    q_handle a;
    scene s = flat_with_box(&a, &ground);
    q_handle gone = add_box(&s, 0.5, 0.5, 0.5, 50.3, ground + 0.55, 50.7, "rock");
    q_body_state sa, sc = {0};
    for (int i = 0; i < 120; i++) {
        run(&s, 1);
        q_body_get(s.bodies, a, &sa);
        if (q_bodies_get_stats(s.bodies).terrain_kept == 2 && fabs(sa.position[1] - (ground + 0.5)) < 0.002)
            break;
    }
    size_t kept = q_bodies_get_stats(s.bodies).terrain_kept;
    bool settled = !sa.sleeping && fabs(sa.position[1] - (ground + 0.5)) < 0.002;
    q_body_destroy(s.bodies, gone);
    char err[256];
    double half[3] = {0.5, 0.5, 0.5};
    q_body_def d = q_default_body_def();
    d.shape = q_collider_box(half, err, sizeof err);
    d.position[0] = 60, d.position[1] = ground + 0.5, d.position[2] = 60;
    d.is_static = true;
    q_handle st = q_body_create(s.bodies, &d, err, sizeof err);
    bool same_slot = q_handle_slot(st) == q_handle_slot(gone);
    dig_pit(&s, ground);
    q_buf out = {0};
    q_bodies *copy = q_bodies_write(s.bodies, &out) ? read_copy(&s, &out, "kept round trip") : NULL;
    bool read = copy != NULL, alike = read && step_alike(s.bodies, copy, 60);
    q_body_get(s.bodies, a, &sa);
    if (read)
        q_body_get(copy, a, &sc);
    printf("# kept round trip: %zu kept before, static body in the freed slot %d; box y %.3f / copy %.3f (was %.3f)\n",
           kept, same_slot, sa.position[1], sc.position[1], ground + 0.5);
    report("a set written with kept contacts of a destroyed body and an edited place reads back",
           read && kept == 2 && settled);
    report("and steps like the original, the box falling into the pit in both",
           alike && same_slot && sa.position[1] < ground - 0.3);
    q_buf_free(&out);
    q_bodies_destroy(copy);
    free_scene(&s);
}

/* A set written after the ground was dug away under a sleeping box, before
 * the next step: that step wakes the box in the original, and the copy
 * (which never sees the dig as a change) must wake it too. */
static void test_edit_wake(void)
{
    double ground;
    q_handle a;
    scene s = flat_with_box(&a, &ground);
    q_body_state sa, sc = {0};
    for (int i = 0; i < 600; i++) {
        run(&s, 1);
        q_body_get(s.bodies, a, &sa);
        if (sa.sleeping)
            break;
    }
    bool slept = sa.sleeping;
    dig_pit(&s, ground);
    q_buf out = {0};
    q_bodies *copy = q_bodies_write(s.bodies, &out) ? read_copy(&s, &out, "edit wake") : NULL;
    bool alike = copy && step_alike(s.bodies, copy, 60);
    q_body_get(s.bodies, a, &sa);
    if (copy)
        q_body_get(copy, a, &sc);
    printf("# edit wake: asleep before the dig %d; box y %.3f / copy %.3f (was %.3f)\n", slept, sa.position[1],
           sc.position[1], ground + 0.5);
    report("a set written after a dig under a sleeper wakes it in the copy as in the original",
           slept && alike && sa.position[1] < ground - 0.3);
    q_buf_free(&out);
    q_bodies_destroy(copy);
    free_scene(&s);
}

/* Through the world file: save, load, and both worlds go on alike. */
static void test_world_file(void)
{
    char err[256];
    q_world_def wd = q_default_world_def();
    wd.threads = 1;
    wd.auto_detach = true;
    q_world *w = q_world_create(&wd, err, sizeof err);
    q_generate_def g = q_default_generate_def();
    g.kind = Q_GEN_HILLS;
    g.size[0] = g.size[2] = 64, g.size[1] = 48;
    q_terrain_generate(q_world_terrain(w), &g, err, sizeof err);
    for (int i = 0; i < 30; i++) {
        double half[3] = {0.4, 0.4, 0.6};
        q_body_def d = q_default_body_def();
        d.shape = i % 2 ? q_collider_box(half, err, sizeof err) : q_collider_sphere(0.5, err, sizeof err);
        d.position[0] = 10 + (i % 6) * 7, d.position[1] = 50, d.position[2] = 10 + (i / 6) * 9;
        q_body_create(q_world_bodies(w), &d, err, sizeof err);
    }
    q_world_step(w, 1.5);
    char path[] = "/tmp/quarry_bodies_test_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    bool saved = q_world_save(w, path, err, sizeof err) == Q_OK;
    q_world *back = saved ? q_world_load(path, err, sizeof err) : NULL;
    if (!back)
        printf("# world file: %s\n", err);
    report("a world with bodies loads back with an equal hash", back && q_world_hash(back) == q_world_hash(w));
    report("the auto_detach flag survives the file", back && q_world_get_def(back)->auto_detach);
    bool alike = back != NULL;
    for (int i = 0; alike && i < 60; i++) {
        q_world_step(w, wd.step);
        q_world_step(back, wd.step);
        alike = q_world_hash(back) == q_world_hash(w);
    }
    report("the loaded world steps exactly like the saved one", alike);
    unlink(path);
    q_world_destroy(back);
    q_world_destroy(w);
}

int main(void)
{
    test_free_fall();
    test_rest();
    test_stack();
    test_pyramid();
    test_float();
    test_determinism();
    test_batched_solve();
    test_shatter();
    test_brittle();
    test_detach();
    test_round_trip();
    test_kept_contacts();
    test_kept_round_trip();
    test_edit_wake();
    test_world_file();
    printf("1..%d\n", test_no);
    return failures != 0;
}
