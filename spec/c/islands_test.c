/* Terrain islands (voxel/islands.h) against a brute-force flood fill over a
 * dense copy of the whole terrain, after random edits (balls and blocks,
 * filled and carved, floating or not), with and without a chunk budget,
 * with floor and point anchors, and after extractions. TAP output. */
#include "core/alloc.h"
#include "mesh/dc.h"
#include "voxel/islands.h"
#include "voxel/material.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_no, failures;

static void report(const char *name, int ok)
{
    printf("%s %d - %s\n", ok ? "ok" : "not ok", ++test_no, name);
    failures += !ok;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double frand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)((rng >> 40) & 0xffffff) / (double)0x1000000;
}

/* The brute-force box: everything the tests write lies inside. */
static const q_box BOX = {{-8, -8, -8}, {104, 80, 104}};
#define NX 112
#define NY 88
#define NZ 112

typedef struct bf_island {
    int32_t seed[3];
    q_box box;
    uint64_t voxels;
} bf_island;

static int nbf;
static bf_island bf[4096];

static size_t idx(int x, int y, int z)
{
    return (size_t)x + NX * ((size_t)y + NY * (size_t)z);
}

/* Islands by brute force: anchored = solid voxels with y <= 0 (when floor)
 * or the given voxels, and everything face-connected to them. */
static void brute_force(const q_terrain *t, bool floor, const int32_t (*pts)[3], int npts)
{
    static uint8_t mat[NX * NY * NZ], occ[NX * NY * NZ], cls[NX * NY * NZ];
    static uint32_t stack[NX * NY * NZ];
    char err[128];
    q_terrain_read(t, BOX, mat, occ, err, sizeof err);
    for (size_t i = 0; i < (size_t)NX * NY * NZ; i++) {
        const q_material *m = q_material_get(mat[i]);
        cls[i] = occ[i] >= 128 && mat[i] && m && !m->liquid; /* 1 solid, 2 seen */
    }
    size_t top = 0;
    for (int z = 0; z < NZ; z++)
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++) {
                bool anchor = floor && y + BOX.min[1] <= 0;
                for (int p = 0; p < npts; p++)
                    anchor |= pts[p][0] == x + BOX.min[0] && pts[p][1] == y + BOX.min[1] &&
                              pts[p][2] == z + BOX.min[2];
                if (anchor && cls[idx(x, y, z)] == 1) {
                    cls[idx(x, y, z)] = 2;
                    stack[top++] = (uint32_t)idx(x, y, z);
                }
            }
    const long step[3] = {1, NX, (long)NX * NY};
    for (int pass = 0;; pass++) {
        while (top) {
            size_t v = stack[--top];
            int c[3] = {(int)(v % NX), (int)(v / NX % NY), (int)(v / NX / NY)};
            int n[3] = {NX, NY, NZ};
            if (pass) {
                bf_island *b = &bf[nbf - 1];
                b->voxels++;
                for (int a = 0; a < 3; a++) {
                    int w = c[a] + BOX.min[a];
                    b->box.min[a] = w < b->box.min[a] ? w : b->box.min[a];
                    b->box.max[a] = w + 1 > b->box.max[a] ? w + 1 : b->box.max[a];
                }
            }
            for (int a = 0; a < 3; a++)
                for (int d = -1; d <= 1; d += 2) {
                    if (c[a] + d < 0 || c[a] + d >= n[a])
                        continue;
                    size_t w = (size_t)((long)v + d * step[a]);
                    if (cls[w] == 1) {
                        cls[w] = 2;
                        stack[top++] = (uint32_t)w;
                    }
                }
        }
        if (pass == 0)
            nbf = 0;
        /* next unseen solid voxel in (z, y, x) order starts an island */
        size_t i = 0;
        static size_t scan;
        if (pass == 0)
            scan = 0;
        for (i = scan; i < (size_t)NX * NY * NZ && cls[i] != 1; i++) {
        }
        scan = i;
        if (i == (size_t)NX * NY * NZ)
            break;
        int c[3] = {(int)(i % NX), (int)(i / NX % NY), (int)(i / NX / NY)};
        bf_island *b = &bf[nbf++];
        for (int a = 0; a < 3; a++) {
            b->seed[a] = c[a] + BOX.min[a];
            b->box.min[a] = b->box.max[a] = c[a] + BOX.min[a];
        }
        b->voxels = 0;
        cls[i] = 2;
        stack[top++] = (uint32_t)i;
    }
}

static bool same_as_brute_force(const q_islands *s, char *why, size_t n)
{
    if (q_islands_count(s) != (size_t)nbf) {
        snprintf(why, n, "%zu islands, brute force %d", q_islands_count(s), nbf);
        return false;
    }
    for (int i = 0; i < nbf; i++) {
        const q_island *a = q_islands_get(s, (size_t)i);
        if (memcmp(a->seed, bf[i].seed, sizeof a->seed) || memcmp(&a->box, &bf[i].box, sizeof a->box) ||
            a->voxels != bf[i].voxels) {
            snprintf(why, n, "island %d: seed %d %d %d voxels %llu, brute force seed %d %d %d voxels %llu", i,
                     a->seed[0], a->seed[1], a->seed[2], (unsigned long long)a->voxels, bf[i].seed[0],
                     bf[i].seed[1], bf[i].seed[2], (unsigned long long)bf[i].voxels);
            return false;
        }
    }
    return true;
}

static bool update(q_islands *s, const q_terrain *t, uint32_t budget)
{
    char err[128];
    bool done = false;
    for (int i = 0; i < 100000 && !done; i++)
        if (q_islands_update(s, t, budget, &done, err, sizeof err) != Q_OK)
            return false;
    return done;
}

static void random_edit(q_terrain *t, uint8_t rock)
{
    char err[128];
    q_edit e = {0};
    double r = 1 + frand() * 6;
    e.op = frand() < 0.45 ? Q_EDIT_FILL : Q_EDIT_CARVE;
    e.material = rock;
    e.shape.kind = frand() < 0.5 ? Q_SHAPE_BALL : Q_SHAPE_BLOCK;
    e.shape.center[0] = r + frand() * (96 - 2 * r);
    e.shape.center[1] = r + frand() * (70 - 2 * r);
    e.shape.center[2] = r + frand() * (96 - 2 * r);
    e.shape.radius = r;
    for (int a = 0; a < 3; a++)
        e.shape.size[a] = 1 + frand() * 2 * r;
    e.shape.rotation[0] = 1;
    q_terrain_edit(t, &e, err, sizeof err);
}

static void test_random(q_terrain_kind kind, uint32_t budget, const char *name)
{
    char err[128], why[256] = "";
    q_terrain *t = q_terrain_create(NULL);
    q_generate_def g = q_default_generate_def();
    g.kind = kind;
    g.size[0] = 96, g.size[1] = 48, g.size[2] = 96;
    g.seed = 7;
    q_terrain_generate(t, &g, err, sizeof err);
    q_islands *s = q_islands_create(NULL);
    uint8_t rock = (uint8_t)q_material_find("rock");
    bool ok = update(s, t, budget);
    brute_force(t, true, NULL, 0);
    ok = ok && same_as_brute_force(s, why, sizeof why);
    int edits = 0, max_islands = nbf;
    for (int round = 0; round < 60 && ok; round++) {
        int n = 1 + (int)(frand() * 3);
        for (int i = 0; i < n; i++, edits++)
            random_edit(t, rock);
        ok = update(s, t, budget);
        brute_force(t, true, NULL, 0);
        ok = ok && same_as_brute_force(s, why, sizeof why);
        max_islands = nbf > max_islands ? nbf : max_islands;
    }
    char msg[512];
    snprintf(msg, sizeof msg, "%s: %d random edits, up to %d islands, equal to brute force %s", name, edits,
             max_islands, why);
    report(msg, ok);
    q_islands_destroy(s);
    q_terrain_destroy(t);
}

/* Extraction removes exactly the island (and its skin), then the tracker
 * agrees with brute force again. */
static void test_extract(void)
{
    char err[128], why[256] = "";
    q_terrain *t = q_terrain_create(NULL);
    q_generate_def g = q_default_generate_def();
    g.kind = Q_GEN_HILLS;
    g.size[0] = 96, g.size[1] = 48, g.size[2] = 96;
    q_terrain_generate(t, &g, err, sizeof err);
    uint8_t rock = (uint8_t)q_material_find("rock");
    /* floating balls and blocks */
    for (int i = 0; i < 6; i++) {
        q_edit e = {.op = Q_EDIT_FILL, .material = rock};
        e.shape.kind = i & 1 ? Q_SHAPE_BLOCK : Q_SHAPE_BALL;
        e.shape.center[0] = 10 + i * 14, e.shape.center[1] = 70, e.shape.center[2] = 20 + i * 9;
        e.shape.radius = 2 + i * 0.7;
        e.shape.size[0] = e.shape.size[1] = e.shape.size[2] = 3 + i;
        e.shape.rotation[0] = 1;
        q_terrain_edit(t, &e, err, sizeof err);
    }
    q_islands *s = q_islands_create(NULL);
    bool ok = update(s, t, 0);
    brute_force(t, true, NULL, 0);
    ok = ok && same_as_brute_force(s, why, sizeof why) && nbf == 6;
    size_t before = q_islands_count(s);
    /* extract every other island, in reverse, in one step */
    bool each = true;
    uint64_t solid_left = 0;
    for (size_t i = before; i-- > 0;) {
        const q_island *isl = q_islands_get(s, i);
        if (i % 2) {
            solid_left += isl->voxels;
            continue;
        }
        q_box eb = q_islands_extract_box(isl);
        size_t n = (size_t)q_box_volume(eb);
        uint8_t *m = malloc(n), *o = malloc(n);
        uint64_t taken = 0, solid = 0;
        each &= q_islands_extract(s, t, i, m, o, &taken, err, sizeof err) == Q_OK;
        for (size_t j = 0; j < n; j++)
            solid += o[j] >= 128;
        each &= solid == isl->voxels && taken >= solid;
        /* nothing of it left in the terrain */
        uint8_t *m2 = malloc(n), *o2 = malloc(n);
        q_terrain_read(t, eb, m2, o2, err, sizeof err);
        for (size_t j = 0; j < n; j++)
            each &= !(m[j] && m2[j]);
        /* twice is refused */
        each &= q_islands_extract(s, t, i, m, o, NULL, err, sizeof err) == Q_ERR_ARGUMENT;
        free(m), free(o), free(m2), free(o2);
    }
    report("extract: every other island, solid voxel counts match, nothing left behind", each);
    ok = ok && update(s, t, 0);
    brute_force(t, true, NULL, 0);
    uint64_t bf_total = 0;
    for (int i = 0; i < nbf; i++)
        bf_total += bf[i].voxels;
    ok = ok && same_as_brute_force(s, why, sizeof why) && nbf == 3 && bf_total == solid_left;
    char msg[400];
    snprintf(msg, sizeof msg, "extract: tracker equals brute force afterwards %s", why);
    report(msg, ok);
    /* the terrain changing refuses extraction until the next update */
    q_edit e = {.op = Q_EDIT_CARVE};
    e.shape.kind = Q_SHAPE_BALL, e.shape.center[0] = 5, e.shape.center[1] = 5, e.shape.center[2] = 5;
    e.shape.radius = 2;
    q_terrain_edit(t, &e, err, sizeof err);
    uint8_t buf[1 << 16];
    report("extract after an edit without update is refused",
           q_islands_extract(s, t, 0, buf, buf, NULL, err, sizeof err) == Q_ERR_ARGUMENT);
    q_islands_destroy(s);
    q_terrain_destroy(t);
}

static void test_anchors(void)
{
    char err[128], why[256] = "";
    q_terrain *t = q_terrain_create(NULL);
    q_generate_def g = q_default_generate_def();
    g.kind = Q_GEN_CAVES;
    g.size[0] = 96, g.size[1] = 48, g.size[2] = 96;
    q_terrain_generate(t, &g, err, sizeof err);
    uint8_t rock = (uint8_t)q_material_find("rock");
    q_islands *s = q_islands_create(NULL);
    bool ok = true;
    for (int round = 0; round < 12 && ok; round++) {
        int32_t pts[3][3];
        int npts = 1 + round % 3;
        for (int p = 0; p < npts; p++)
            for (int a = 0; a < 3; a++)
                pts[p][a] = (int32_t)(frand() * (a == 1 ? 60 : 96));
        bool floor = round % 2;
        q_islands_set_anchors(s, floor, (const int32_t(*)[3])pts, (size_t)npts);
        for (int i = 0; i < 3; i++)
            random_edit(t, rock);
        ok = update(s, t, round % 4 == 3 ? 2 : 0);
        brute_force(t, floor, (const int32_t(*)[3])pts, npts);
        ok = ok && same_as_brute_force(s, why, sizeof why);
        /* incremental with the same anchors */
        for (int i = 0; i < 3; i++)
            random_edit(t, rock);
        ok = ok && update(s, t, 0);
        brute_force(t, floor, (const int32_t(*)[3])pts, npts);
        ok = ok && same_as_brute_force(s, why, sizeof why);
    }
    char msg[400];
    snprintf(msg, sizeof msg, "point anchors (with and without the floor) equal brute force %s", why);
    report(msg, ok);
    q_islands_destroy(s);
    q_terrain_destroy(t);
}

/* Past the change log (more edits than it keeps), a regenerated terrain, a
 * material turning liquid, another terrain: each must still give the brute
 * force answer. */
static void test_resets(void)
{
    char err[128], why[256] = "";
    q_terrain *t = q_terrain_create(NULL);
    q_generate_def g = q_default_generate_def();
    g.kind = Q_GEN_HILLS;
    g.size[0] = 96, g.size[1] = 48, g.size[2] = 96;
    q_terrain_generate(t, &g, err, sizeof err);
    uint8_t rock = (uint8_t)q_material_find("rock");
    q_islands *s = q_islands_create(NULL);
    bool ok = update(s, t, 0);
    uint64_t v0 = q_terrain_version(t);
    for (int i = 0; i < Q_CHANGE_LOG_SIZE + 100; i++) {
        /* flip a random voxel (a change every time) */
        int32_t x = (int32_t)(frand() * 96), y = (int32_t)(frand() * 70), z = (int32_t)(frand() * 96);
        bool solid = q_terrain_get(t, x, y, z).occupancy > 0;
        q_terrain_fill_region(t, (q_box){{x, y, z}, {x + 1, y + 1, z + 1}}, solid ? 0 : rock, err, sizeof err);
    }
    ok = ok && q_terrain_version(t) - v0 == Q_CHANGE_LOG_SIZE + 100;
    bool full = update(s, t, 0) && q_islands_get_stats(s).full;
    brute_force(t, true, NULL, 0);
    if (!full)
        snprintf(why, sizeof why, "(not a full pass)");
    ok = ok && full;
    ok = ok && same_as_brute_force(s, why, sizeof why);
    int after_log = nbf;
    char msg[400];
    snprintf(msg, sizeof msg, "%d edits past the change log: %d islands, equal to brute force %s",
             Q_CHANGE_LOG_SIZE + 100, after_log, why);
    report(msg, ok);

    g.kind = Q_GEN_CAVES;
    g.seed = 11;
    q_terrain_generate(t, &g, err, sizeof err);
    ok = update(s, t, 0);
    brute_force(t, true, NULL, 0);
    ok = ok && same_as_brute_force(s, why, sizeof why);
    snprintf(msg, sizeof msg, "regenerated terrain equals brute force %s", why);
    report(msg, ok);

    /* a user material that is solid, then redefined as liquid */
    q_material goo = q_default_material();
    snprintf(goo.name, sizeof goo.name, "islands_goo");
    int gid = q_material_define(&goo, err, sizeof err);
    q_terrain_fill_region(t, (q_box){{40, 0, 40}, {44, 60, 44}}, (uint8_t)gid, err, sizeof err);
    q_terrain_fill_region(t, (q_box){{40, 60, 40}, {48, 64, 48}}, rock, err, sizeof err);
    ok = update(s, t, 0);
    brute_force(t, true, NULL, 0);
    int before = nbf;
    ok = ok && same_as_brute_force(s, why, sizeof why);
    goo.liquid = true;
    q_material_define(&goo, err, sizeof err);
    ok = ok && update(s, t, 0);
    brute_force(t, true, NULL, 0);
    ok = ok && same_as_brute_force(s, why, sizeof why) && nbf >= before + 1;
    snprintf(msg, sizeof msg, "a material turning liquid drops what it held (%d -> %d islands) %s", before, nbf, why);
    report(msg, ok);

    /* another terrain with the same tracker */
    q_terrain *t2 = q_terrain_create(NULL);
    q_terrain_fill_region(t2, (q_box){{0, 10, 0}, {3, 12, 3}}, rock, err, sizeof err);
    ok = update(s, t2, 0) && q_islands_count(s) == 1 && q_islands_get(s, 0)->voxels == 18;
    report("a tracker moved to another terrain starts over", ok);
    q_islands_destroy(s);
    q_terrain_destroy(t2);
    q_terrain_destroy(t);
}

/* The way islands.h says to mesh an extracted island: a scratch terrain and
 * q_dc_mesh over the extract box. The mesh must be closed: every edge used
 * by exactly two triangles, in opposite directions. */
static bool closed_mesh(const q_dc_output *o)
{
    size_t nt = o->index_count / 3;
    uint64_t *e = malloc(3 * nt * sizeof *e);
    for (size_t t = 0; t < nt; t++)
        for (int k = 0; k < 3; k++)
            e[3 * t + k] = (uint64_t)o->indices[3 * t + k] << 32 | o->indices[3 * t + (k + 1) % 3];
    bool ok = nt > 0;
    for (size_t i = 0; i < 3 * nt && ok; i++) {
        uint64_t rev = e[i] >> 32 | e[i] << 32;
        int fwd = 0, back = 0;
        for (size_t j = 0; j < 3 * nt; j++) {
            fwd += e[j] == e[i];
            back += e[j] == rev;
        }
        ok = fwd == 1 && back == 1;
    }
    free(e);
    return ok;
}

static void test_mesh_extracted(void)
{
    char err[128];
    q_terrain *t = q_terrain_create(NULL);
    uint8_t rock = (uint8_t)q_material_find("rock");
    q_terrain_fill_region(t, (q_box){{0, 0, 0}, {32, 4, 32}}, rock, err, sizeof err);
    q_edit e = {.op = Q_EDIT_FILL, .material = rock};
    e.shape.kind = Q_SHAPE_BALL;
    e.shape.center[0] = 10.3, e.shape.center[1] = 14.6, e.shape.center[2] = 11.2, e.shape.radius = 4.3;
    q_terrain_edit(t, &e, err, sizeof err);
    q_islands *s = q_islands_create(NULL);
    bool ok = update(s, t, 0) && q_islands_count(s) == 1;
    if (ok) {
        q_box eb = q_islands_extract_box(q_islands_get(s, 0));
        size_t n = (size_t)q_box_volume(eb);
        uint8_t *m = malloc(n), *o = malloc(n);
        ok = q_islands_extract(s, t, 0, m, o, NULL, err, sizeof err) == Q_OK;
        q_terrain *scratch = q_terrain_create(NULL);
        ok = ok && q_terrain_write(scratch, eb, m, o, err, sizeof err) == Q_OK;
        q_dc_output out = {0};
        out.vertex_capacity = q_dc_vertex_bound(eb);
        out.index_capacity = q_dc_index_bound(eb);
        out.positions = malloc(out.vertex_capacity * 3 * sizeof(float));
        out.indices = malloc(out.index_capacity * sizeof(uint32_t));
        ok = ok && q_dc_mesh(scratch, eb, Q_SURFACE_SOLID, 1.0f, &out, NULL, err, sizeof err) == Q_OK;
        ok = ok && closed_mesh(&out);
        free(out.positions);
        free(out.indices);
        free(m);
        free(o);
        q_terrain_destroy(scratch);
    }
    report("an extracted ball meshed over its extract box in a scratch terrain is closed", ok);
    q_islands_destroy(s);
    q_terrain_destroy(t);
}

int main(void)
{
    size_t live = q_alloc_live_bytes();
    test_random(Q_GEN_HILLS, 0, "hills");
    test_random(Q_GEN_CAVES, 0, "caves");
    test_random(Q_GEN_CAVES, 3, "caves, 3 chunks per update");
    test_extract();
    test_anchors();
    test_resets();
    test_mesh_extracted();
    report("no leaks", q_alloc_live_bytes() == live);
    printf("1..%d\n", test_no);
    return failures != 0;
}
