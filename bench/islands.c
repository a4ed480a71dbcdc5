/* Island checks after one edit (voxel/islands.h) against a full flood fill
 * of the same world, in two world sizes: the check should cost what the
 * edited neighbourhood costs, the flood fill what the world costs.
 *
 * Worlds: generated hills, 256x64x256 and 1024x128x1024 voxels. After the
 * tracker's first (full) update, each repetition edits one place on the
 * surface and times q_islands_update alone:
 *   carve   a ball of radius 4 centred on the surface (no island appears)
 *   float   a ball of radius 3 filled 12 voxels above the surface (one
 *           island appears; it is extracted untimed before the next one)
 * The 40 places are spread over the whole world on a grid; a second row
 * gives the mean over 300 random places (carves and fills alternating). The baseline is a plain
 * flood fill of the whole world written here: q_terrain_read of the world
 * box in slabs into a byte per voxel, then a breadth-first fill over faces
 * from every solid voxel at y = 0, then one fill per remaining island. Its
 * island count must match the tracker's.
 */
#include "bench.h"

#include "core/jobs.h"
#include "voxel/islands.h"
#include "voxel/material.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EDITS 40
#define RANDOM_EDITS 300
#define FLOOD_REPS 3
#define HEADROOM 32 /* voxels above the generated box that edits may fill */

typedef struct world_case {
    const char *name;
    q_terrain_kind kind;
    int32_t size[3];
} world_case;

/* ---- the baseline: full flood fill ---- */

static size_t full_flood_fill(const q_terrain *t, const int32_t size[3], double *fill_only)
{
    const int32_t nx = size[0], ny = size[1] + HEADROOM, nz = size[2];
    const size_t n = (size_t)nx * (size_t)ny * (size_t)nz;
    uint8_t *cls = bench_xmalloc(n);
    bool solid_mat[Q_MATERIAL_MAX] = {false};
    for (int m = 1; m < q_material_count(); m++)
        solid_mat[m] = !q_material_get(m)->liquid;
    /* read in z slabs (q_terrain_read takes at most 2^26 voxels) */
    int32_t slab = (int32_t)((1u << 26) / ((size_t)nx * (size_t)ny));
    uint8_t *mat = bench_xmalloc((size_t)nx * (size_t)ny * (size_t)slab);
    uint8_t *occ = bench_xmalloc((size_t)nx * (size_t)ny * (size_t)slab);
    char err[256] = "";
    for (int32_t z0 = 0; z0 < nz; z0 += slab) {
        int32_t z1 = z0 + slab < nz ? z0 + slab : nz;
        q_box b = {{0, 0, z0}, {nx, ny, z1}};
        bench_check(q_terrain_read(t, b, mat, occ, err, sizeof err), "q_terrain_read", err);
        size_t m = (size_t)q_box_volume(b), base = (size_t)nx * (size_t)ny * (size_t)z0;
        for (size_t i = 0; i < m; i++)
            cls[base + i] = occ[i] >= 128 && solid_mat[mat[i]];
    }
    free(mat);
    free(occ);
    double t0 = bench_now();
    size_t cap = 1 << 20, top = 0;
    uint32_t *stack = bench_xmalloc(cap * sizeof *stack);
    const size_t sy = (size_t)nx, sz = (size_t)nx * (size_t)ny;
    size_t islands = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t start = 0; start < n; start++) {
            size_t y = start / sy % (size_t)ny;
            if (cls[start] != 1 || (pass == 0 && y != 0))
                continue;
            islands += pass;
            cls[start] = 2;
            stack[top++] = (uint32_t)start;
            while (top) {
                size_t v = stack[--top];
                size_t x = v % sy, vy = v / sy % (size_t)ny, z = v / sz;
                size_t nb[6];
                int k = 0;
                if (x > 0) nb[k++] = v - 1;
                if (x + 1 < (size_t)nx) nb[k++] = v + 1;
                if (vy > 0) nb[k++] = v - sy;
                if (vy + 1 < (size_t)ny) nb[k++] = v + sy;
                if (z > 0) nb[k++] = v - sz;
                if (z + 1 < (size_t)nz) nb[k++] = v + sz;
                for (int j = 0; j < k; j++) {
                    if (cls[nb[j]] != 1)
                        continue;
                    cls[nb[j]] = 2;
                    if (top == cap) {
                        cap *= 2;
                        stack = realloc(stack, cap * sizeof *stack);
                        if (!stack) {
                            fprintf(stderr, "bench: out of memory\n");
                            exit(1);
                        }
                    }
                    stack[top++] = (uint32_t)nb[j];
                }
            }
        }
    }
    *fill_only = bench_now() - t0;
    free(stack);
    free(cls);
    return islands;
}

/* ---- edits ---- */

static int32_t surface_y(const q_terrain *t, int32_t x, int32_t z, int32_t top)
{
    for (int32_t y = top; y > 0; y--) {
        q_voxel v = q_terrain_get(t, x, y, z);
        if (v.occupancy >= 128)
            return y;
    }
    return 0;
}

static void ball(q_terrain *t, q_edit_op op, double x, double y, double z, double r, uint8_t mat)
{
    char err[256] = "";
    q_edit e = {.op = op, .material = mat};
    e.shape.kind = Q_SHAPE_BALL;
    e.shape.center[0] = x, e.shape.center[1] = y, e.shape.center[2] = z;
    e.shape.radius = r;
    bench_check(q_terrain_edit(t, &e, err, sizeof err), "q_terrain_edit", err);
}

static double timed_update(q_islands *s, const q_terrain *t, q_islands_stats *st)
{
    char err[256] = "";
    bool done = false;
    double t0 = bench_now();
    bench_check(q_islands_update(s, t, 0, &done, err, sizeof err), "q_islands_update", err);
    double dt = bench_now() - t0;
    if (!done) {
        fprintf(stderr, "bench: update not done without a budget\n");
        exit(1);
    }
    *st = q_islands_get_stats(s);
    return dt;
}

static void run_case(const world_case *wc, q_jobs *jobs)
{
    char err[256] = "", what[160];
    q_terrain *t = q_terrain_create(jobs);
    q_generate_def gd = q_default_generate_def();
    gd.kind = wc->kind;
    memcpy(gd.size, wc->size, sizeof gd.size);
    gd.seed = 1;
    bench_check(q_terrain_generate(t, &gd, err, sizeof err), "q_terrain_generate", err);
    uint8_t rock = (uint8_t)q_material_find("rock");

    q_islands *s = q_islands_create(NULL);
    q_islands_stats st;
    double first = timed_update(s, t, &st);
    size_t base_islands = q_islands_count(s);
    q_islands_stats first_st = st;
    double voxel_bytes = (double)q_terrain_get_stats(t).bytes;

    /* baseline: full flood fill, FLOOD_REPS times */
    double flood[FLOOD_REPS], fill[FLOOD_REPS];
    size_t flood_islands = 0;
    for (int r = 0; r < FLOOD_REPS; r++) {
        double t0 = bench_now();
        flood_islands = full_flood_fill(t, wc->size, &fill[r]);
        flood[r] = bench_now() - t0;
    }
    if (flood_islands != base_islands)
        bench_note("%s: flood fill found %zu islands, tracker %zu", wc->name, flood_islands, base_islands);

    double carve[EDITS], flt[EDITS];
    size_t relabelled[2] = {0, 0}, visited[2] = {0, 0}, cand[2] = {0, 0};
    bool agree = true;
    for (int i = 0; i < EDITS; i++) {
        /* places on an 8x5 grid over the world, off chunk corners */
        int32_t x = (int32_t)((i % 8 + 0.5) * wc->size[0] / 8) + 7;
        int32_t z = (int32_t)((i / 8 + 0.5) * wc->size[2] / 5) + 11;
        int32_t y = surface_y(t, x, z, wc->size[1] + HEADROOM - 1);
        ball(t, Q_EDIT_CARVE, x + 0.3, y + 0.2, z + 0.4, 4.0, 0);
        carve[i] = timed_update(s, t, &st);
        relabelled[0] += st.relabelled, visited[0] += st.visited, cand[0] += st.candidates;
        /* carving into caves may cut a piece loose: count against the flood */
        size_t after_carve = q_islands_count(s);

        /* the ball floats 8 voxels over the highest ground around it */
        int32_t top = y;
        for (int32_t dz = -5; dz <= 5; dz++)
            for (int32_t dx = -5; dx <= 5; dx++) {
                int32_t h = surface_y(t, x + dx, z + dz, wc->size[1] + HEADROOM - 1);
                top = h > top ? h : top;
            }
        ball(t, Q_EDIT_FILL, x + 0.3, top + 11.2, z + 0.4, 3.0, rock);
        flt[i] = timed_update(s, t, &st);
        relabelled[1] += st.relabelled, visited[1] += st.visited, cand[1] += st.candidates;
        if (q_islands_count(s) != after_carve + 1) {
            agree = false;
            bench_note("%s: edit %d: %zu islands after the floating fill, %zu before", wc->name, i,
                       q_islands_count(s), after_carve);
        }
        y = top;
        /* extract the new island (untimed), then bring the tracker back */
        for (size_t k = 0; k < q_islands_count(s); k++) {
            const q_island *isl = q_islands_get(s, k);
            if (isl->box.min[1] < y + 5)
                continue;
            q_box eb = q_islands_extract_box(isl);
            size_t n = (size_t)q_box_volume(eb);
            uint8_t *m = bench_xmalloc(n), *o = bench_xmalloc(n);
            bench_check(q_islands_extract(s, t, k, m, o, NULL, err, sizeof err), "q_islands_extract", err);
            free(m);
            free(o);
            break;
        }
        timed_update(s, t, &st);
        if (q_islands_count(s) != after_carve) {
            agree = false;
            bench_note("%s: edit %d: %zu islands after extraction, %zu before the fill", wc->name, i,
                       q_islands_count(s), after_carve);
        }
    }
    double unused;
    size_t flood_after = full_flood_fill(t, wc->size, &unused);
    if (flood_after != q_islands_count(s)) {
        agree = false;
        bench_note("%s: after the edits the flood fill finds %zu islands, the tracker %zu", wc->name, flood_after,
                   q_islands_count(s));
    }

    /* Many random places: RANDOM_EDITS carves and fills of radius 4 on the
     * surface, alternating, each followed by a timed check; the mean. */
    uint64_t rs = 12345;
    double rand_total = 0;
    size_t rand_rel = 0;
    for (int i = 0; i < RANDOM_EDITS; i++) {
        rs = rs * 6364136223846793005ull + 1442695040888963407ull;
        int32_t x = 8 + (int32_t)((rs >> 33) % (uint64_t)(wc->size[0] - 16));
        int32_t z = 8 + (int32_t)((rs >> 13) % (uint64_t)(wc->size[2] - 16));
        int32_t y = surface_y(t, x, z, wc->size[1] + HEADROOM - 1);
        ball(t, i & 1 ? Q_EDIT_FILL : Q_EDIT_CARVE, x + 0.3, y + 0.2, z + 0.4, 4.0, rock);
        rand_total += timed_update(s, t, &st);
        rand_rel += st.relabelled;
    }
    double rand_mean = rand_total / RANDOM_EDITS;
    agree &= full_flood_fill(t, wc->size, &unused) == q_islands_count(s);

    /* A large piece: a slab 8 voxels thick over most of the world (up to
     * 256x256), held by one 4x4 pillar; cutting the pillar frees the slab,
     * and the check visits every chunk component of it. */
    int32_t lo = wc->size[0] > 320 ? 64 : 16, hi = lo + (wc->size[0] > 320 ? 256 : 224);
    int32_t sy0 = wc->size[1] + 8, px = (lo + hi) / 2;
    bench_check(q_terrain_fill_region(t, (q_box){{lo, sy0, lo}, {hi, sy0 + 8, hi}}, rock, err, sizeof err),
                "q_terrain_fill_region", err);
    bench_check(q_terrain_fill_region(t, (q_box){{px, 0, px}, {px + 4, sy0, px + 4}}, rock, err, sizeof err),
                "q_terrain_fill_region", err);
    timed_update(s, t, &st);
    size_t before_cut = q_islands_count(s);
    bench_check(q_terrain_fill_region(t, (q_box){{px, sy0 - 4, px}, {px + 4, sy0 - 2, px + 4}}, 0, err, sizeof err),
                "q_terrain_fill_region", err);
    double cut = timed_update(s, t, &st);
    agree &= q_islands_count(s) == before_cut + 1;
    q_islands_stats cut_st = st;

    /* Rubble: a 64^3 block of random voxels (45% solid: many small
     * components, one large) resting on the ground; then a carve r=4 inside
     * it. Candidates and nodes visited grow with the components there. */
    int32_t r0[3] = {lo, wc->size[1] + HEADROOM - 64, lo};
    {
        size_t n = 64 * 64 * 64;
        uint8_t *m = bench_xmalloc(n), *o = bench_xmalloc(n);
        uint64_t rr = 99;
        for (size_t k = 0; k < n; k++) {
            rr = rr * 6364136223846793005ull + 1442695040888963407ull;
            bool solid = (rr >> 33) % 100 < 45;
            m[k] = solid ? rock : 0;
            o[k] = solid ? 255 : 0;
        }
        q_box rb = {{r0[0], r0[1], r0[2]}, {r0[0] + 64, r0[1] + 64, r0[2] + 64}};
        bench_check(q_terrain_fill_region(t, (q_box){{r0[0], 0, r0[2]}, {r0[0] + 64, r0[1], r0[2] + 64}}, rock, err,
                                          sizeof err),
                    "q_terrain_fill_region", err);
        bench_check(q_terrain_write(t, rb, m, o, err, sizeof err), "q_terrain_write", err);
        free(m);
        free(o);
    }
    timed_update(s, t, &st);
    size_t rubble_islands = q_islands_count(s);
    ball(t, Q_EDIT_CARVE, r0[0] + 32.3, r0[1] + 32.2, r0[2] + 32.4, 4.0, 0);
    double rubble = timed_update(s, t, &st);
    q_islands_stats rubble_st = st;

    double flood_med = bench_median(flood, FLOOD_REPS);
    snprintf(what, sizeof what, "%s: check after carving r=4", wc->name);
    bench_row(what, bench_median(carve, EDITS), carve, EDITS, "full flood fill", flood_med, flood, FLOOD_REPS, "s",
              1e-3, "ms");
    snprintf(what, sizeof what, "%s: check after a floating fill r=3", wc->name);
    bench_row(what, bench_median(flt, EDITS), flt, EDITS, "full flood fill", flood_med, flood, FLOOD_REPS, "s", 1e-3,
              "ms");
    snprintf(what, sizeof what, "%s: first update (all chunks)", wc->name);
    bench_row(what, first, &first, 1, "full flood fill", flood_med, flood, FLOOD_REPS, "s", 1e-3, "ms");
    bench_note("%s: flood fill alone (array ready) %.1f ms of %.1f ms; tracker: %zu summaries, %zu components, "
               "%.1f MB (the voxels: %.1f MB); first update relabelled %zu chunks",
               wc->name, bench_median(fill, FLOOD_REPS) * 1e3, flood_med * 1e3, first_st.chunks,
               first_st.components, first_st.bytes / 1e6, voxel_bytes / 1e6, first_st.relabelled);
    bench_note("%s: per edit, carve: %.1f chunks relabelled, %.1f candidates, %.1f nodes visited; float: %.1f, "
               "%.1f, %.1f; island counts %s the expected ones",
               wc->name, relabelled[0] / (double)EDITS, cand[0] / (double)EDITS, visited[0] / (double)EDITS,
               relabelled[1] / (double)EDITS, cand[1] / (double)EDITS, visited[1] / (double)EDITS,
               agree ? "equal" : "DIFFER FROM");
    snprintf(what, sizeof what, "%s: mean check, %d random edits r=4", wc->name, RANDOM_EDITS);
    bench_row(what, rand_mean, &rand_mean, 1, "full flood fill", flood_med, flood, FLOOD_REPS, "s", 1e-3, "ms");
    bench_note("%s: random edits: %.2f chunks relabelled per edit", wc->name, rand_rel / (double)RANDOM_EDITS);
    snprintf(what, sizeof what, "%s: check after cutting loose a %dx8x%d slab", wc->name, hi - lo, hi - lo);
    bench_row(what, cut, &cut, 1, "full flood fill", bench_median(flood, FLOOD_REPS), flood, FLOOD_REPS, "s", 1e-3,
              "ms");
    bench_note("%s: the slab cut: %zu chunks relabelled, %zu candidates, %zu nodes visited", wc->name,
               cut_st.relabelled, cut_st.candidates, cut_st.visited);
    snprintf(what, sizeof what, "%s: check after carving r=4 in 64^3 rubble", wc->name);
    bench_row(what, rubble, &rubble, 1, "full flood fill", flood_med, flood, FLOOD_REPS, "s", 1e-3, "ms");
    bench_note("%s: rubble: %zu islands in it; the carve: %zu chunks relabelled, %zu candidates, %zu nodes "
               "visited, %zu islands after",
               wc->name, rubble_islands, rubble_st.relabelled, rubble_st.candidates, rubble_st.visited,
               q_islands_count(s));
    q_islands_destroy(s);
    q_terrain_destroy(t);
}

int main(int argc, char **argv)
{
    bench_begin("islands", argc > 1 ? argv[1] : "out");
    bench_section_inverse("island check after one edit vs a full flood fill (last column: flood / ours)");
    q_jobs *jobs = q_jobs_create(-1); /* generation only; the tracker runs on the calling thread */
    static const world_case cases[] = {{"hills 256x64x256", Q_GEN_HILLS, {256, 64, 256}},
                                       {"hills 1024x128x1024", Q_GEN_HILLS, {1024, 128, 1024}},
                                       {"caves 256x64x256", Q_GEN_CAVES, {256, 64, 256}},
                                       {"caves 1024x128x1024", Q_GEN_CAVES, {1024, 128, 1024}}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], jobs);
    q_jobs_destroy(jobs);
    bench_end();
    return 0;
}
