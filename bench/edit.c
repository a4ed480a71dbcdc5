/* Edit throughput: q_terrain_edit (FILL and CARVE with a ball) against a
 * naive reference written here, which visits every voxel of the same
 * bounding box, computes the same coverage (clamp(1/2 + r - distance, 0, 1))
 * and applies the same rule to a flat dense array of 2-byte voxels.
 *
 * One repetition applies K balls at K separate places (far enough apart that
 * their boxes never overlap) and is timed as a whole; the touched boxes are
 * then restored (untimed: q_terrain_write of a snapshot for the engine,
 * memcpy for the dense array) so every repetition does the same work.
 * Engine and reference repetitions alternate, so drift hits both alike.
 */
#include "bench.h"

#include "voxel/material.h"
#include "world/world.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 9
#define WX 256
#define WY 64
#define WZ 256
/* The dense array covers [0, WX) x [DY0, DY1) x [0, WZ): room for an r = 32
 * ball centred anywhere on the 64-high hills. */
#define DY0 (-64)
#define DY1 128
#define NY (DY1 - DY0)
#define MAX_BALLS 64

typedef struct ball {
    double c[3];
    q_box box;
    uint8_t *mat, *occ; /* engine snapshot of box, for restoring */
} ball;

static size_t dense_index(int32_t x, int32_t y, int32_t z)
{
    return (size_t)x + (size_t)WX * ((size_t)(y - DY0) + (size_t)NY * (size_t)z);
}

/* The engine's edit box: every voxel whose centre is within half a voxel of
 * the ball's axis-aligned extent (edit.c shape_box). */
static q_box ball_box(const double c[3], double r)
{
    q_box b;
    for (int a = 0; a < 3; a++) {
        b.min[a] = (int32_t)floor(c[a] - r - 0.5);
        b.max[a] = (int32_t)floor(c[a] + r + 0.5) + 1;
    }
    return b;
}

static void naive_ball(q_voxel *d, const ball *b, double r, bool fill, uint8_t material)
{
    for (int32_t z = b->box.min[2]; z < b->box.max[2]; z++)
        for (int32_t y = b->box.min[1]; y < b->box.max[1]; y++)
            for (int32_t x = b->box.min[0]; x < b->box.max[0]; x++) {
                double dx = x + 0.5 - b->c[0], dy = y + 0.5 - b->c[1], dz = z + 0.5 - b->c[2];
                double cov = 0.5 + r - sqrt(dx * dx + dy * dy + dz * dz);
                cov = cov < 0 ? 0 : cov > 1 ? 1 : cov;
                int c8 = (int)lrint(cov * 255.0);
                q_voxel *v = &d[dense_index(x, y, z)];
                if (fill) {
                    if (c8 > 0 && (v->material == 0 || c8 >= v->occupancy))
                        *v = (q_voxel){material, (uint8_t)c8};
                } else {
                    int o = v->occupancy < 255 - c8 ? v->occupancy : 255 - c8;
                    *v = o == 0 ? (q_voxel){0, 0} : (q_voxel){v->material, (uint8_t)o};
                }
            }
}

/* Top of the ground in column (x, z): y of the highest solid voxel plus its
 * occupancy, i.e. where a brush held at the surface would be centred. */
static double surface_y(const q_terrain *t, int32_t x, int32_t z)
{
    for (int32_t y = WY - 1; y >= 0; y--) {
        q_voxel v = q_terrain_get(t, x, y, z);
        if (v.occupancy > 0)
            return y + v.occupancy / 255.0;
    }
    return 0.0;
}

/* K ball centres on a grid with spacing 2r + 4, with varied sub-voxel
 * offsets so results do not hinge on one alignment. */
static int place_balls(ball *balls, double r, const q_terrain *hills)
{
    int sp = 2 * (int)ceil(r) + 4, k = 0;
    for (int gz = (int)ceil(r) + 2; gz + r + 2 < WZ && k < MAX_BALLS; gz += sp)
        for (int gx = (int)ceil(r) + 2; gx + r + 2 < WX && k < MAX_BALLS; gx += sp) {
            ball *b = &balls[k];
            memset(b, 0, sizeof *b);
            b->c[0] = gx + 0.13 + 0.17 * (k % 5);
            b->c[2] = gz + 0.71 - 0.13 * (k % 4);
            b->c[1] = hills ? surface_y(hills, (int32_t)b->c[0], (int32_t)b->c[2]) : 32.37 + 0.11 * (k % 3);
            b->box = ball_box(b->c, r);
            k++;
        }
    return k;
}

typedef struct scenario {
    const char *name;
    q_terrain *t;
    q_voxel *dense, *dense0; /* working copy and pristine copy of the array box */
} scenario;

static void load_dense(scenario *s)
{
    q_box all = {{0, DY0, 0}, {WX, DY1, WZ}};
    size_t n = (size_t)q_box_volume(all);
    uint8_t *m = bench_xmalloc(n), *o = bench_xmalloc(n);
    char err[256] = "";
    bench_check(q_terrain_read(s->t, all, m, o, err, sizeof err), "q_terrain_read", err);
    s->dense = bench_xmalloc(n * sizeof(q_voxel));
    s->dense0 = bench_xmalloc(n * sizeof(q_voxel));
    for (size_t i = 0; i < n; i++)
        s->dense0[i] = (q_voxel){m[i], o[i]};
    memcpy(s->dense, s->dense0, n * sizeof(q_voxel));
    free(m);
    free(o);
}

static void run_case(scenario *s, const char *label, double r, q_edit_op op, uint8_t material)
{
    static ball balls[MAX_BALLS];
    const q_box all = {{0, DY0, 0}, {WX, DY1, WZ}};
    const size_t dense_bytes = (size_t)q_box_volume(all) * sizeof(q_voxel);
    int k = place_balls(balls, r, strcmp(s->name, "hills") == 0 ? s->t : NULL);
    char err[256] = "";
    uint64_t box_voxels = 0, covered = 0;
    for (int i = 0; i < k; i++) {
        ball *b = &balls[i];
        size_t n = (size_t)q_box_volume(b->box);
        box_voxels += n;
        b->mat = bench_xmalloc(n);
        b->occ = bench_xmalloc(n);
        bench_check(q_terrain_read(s->t, b->box, b->mat, b->occ, err, sizeof err), "q_terrain_read", err);
        for (int32_t z = b->box.min[2]; z < b->box.max[2]; z++)
            for (int32_t y = b->box.min[1]; y < b->box.max[1]; y++)
                for (int32_t x = b->box.min[0]; x < b->box.max[0]; x++) {
                    double dx = x + 0.5 - b->c[0], dy = y + 0.5 - b->c[1], dz = z + 0.5 - b->c[2];
                    covered += sqrt(dx * dx + dy * dy + dz * dz) < r + 0.5;
                }
    }
    uint64_t before = q_terrain_hash(s->t);

    double ours[REPS], naive[REPS];
    for (int rep = 0; rep < REPS; rep++) {
        double t0 = bench_now();
        for (int i = 0; i < k; i++) {
            q_edit e = {op, {Q_SHAPE_BALL, {balls[i].c[0], balls[i].c[1], balls[i].c[2]}, r, {0, 0, 0}, 0,
                             {1, 0, 0, 0}},
                        material, 0.0};
            bench_check(q_terrain_edit(s->t, &e, err, sizeof err), "q_terrain_edit", err);
        }
        ours[rep] = bench_now() - t0;
        for (int i = 0; i < k; i++)
            bench_check(q_terrain_write(s->t, balls[i].box, balls[i].mat, balls[i].occ, err, sizeof err),
                        "q_terrain_write", err);

        t0 = bench_now();
        for (int i = 0; i < k; i++)
            naive_ball(s->dense, &balls[i], r, op == Q_EDIT_FILL, material);
        naive[rep] = bench_now() - t0;
        memcpy(s->dense, s->dense0, dense_bytes);
    }
    if (q_terrain_hash(s->t) != before)
        bench_note("%s: terrain not restored between repetitions", label);

    double samples_ours[REPS], samples_naive[REPS];
    memcpy(samples_ours, ours, sizeof ours);
    memcpy(samples_naive, naive, sizeof naive);
    double to = bench_median(ours, REPS), tn = bench_median(naive, REPS);
    char what[128];
    snprintf(what, sizeof what, "%s, %d balls: box voxels/s", label, k);
    bench_row(what, (double)box_voxels / to, samples_ours, REPS, "naive dense loop", (double)box_voxels / tn,
              samples_naive, REPS, "voxels/s", 1e6, "Mvox/s");
    snprintf(what, sizeof what, "%s, %d balls: covered voxels/s", label, k);
    bench_row(what, (double)covered / to, samples_ours, REPS, "naive dense loop", (double)covered / tn,
              samples_naive, REPS, "voxels/s", 1e6, "Mvox/s");
    snprintf(what, sizeof what, "%s: time per edit", label);
    bench_row(what, to / k, NULL, 0, "naive dense loop", tn / k, NULL, 0, "s", 1e-6, "us");
    for (int i = 0; i < k; i++) {
        free(balls[i].mat);
        free(balls[i].occ);
    }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    char err[256] = "";
    q_world_def wd = q_default_world_def();
    q_world *empty_w = q_world_create(&wd, err, sizeof err);
    q_world *hills_w = q_world_create(&wd, err, sizeof err);
    if (!empty_w || !hills_w) {
        fprintf(stderr, "bench: q_world_create: %s\n", err);
        return 1;
    }
    q_generate_def gd = q_default_generate_def();
    gd.kind = Q_GEN_HILLS;
    gd.size[0] = WX, gd.size[1] = WY, gd.size[2] = WZ;
    gd.seed = 1;
    bench_check(q_terrain_generate(q_world_terrain(hills_w), &gd, err, sizeof err), "q_terrain_generate", err);
    int rock = q_material_find("rock");
    if (rock < 0) {
        fprintf(stderr, "bench: no 'rock' material\n");
        return 1;
    }

    scenario empty = {"empty", q_world_terrain(empty_w), NULL, NULL};
    scenario hills = {"hills", q_world_terrain(hills_w), NULL, NULL};
    load_dense(&empty);
    load_dense(&hills);

    bench_begin("edit", dir);
    char title[160];
    snprintf(title, sizeof title, "Edits: q_terrain_edit ball vs naive loop over a flat dense array (median of %d)",
             REPS);
    bench_section(title);
    run_case(&empty, "fill_ball r=8 empty", 8, Q_EDIT_FILL, (uint8_t)rock);
    run_case(&hills, "fill_ball r=8 hills", 8, Q_EDIT_FILL, (uint8_t)rock);
    run_case(&empty, "fill_ball r=32 empty", 32, Q_EDIT_FILL, (uint8_t)rock);
    run_case(&hills, "fill_ball r=32 hills", 32, Q_EDIT_FILL, (uint8_t)rock);
    run_case(&hills, "carve_ball r=8 hills", 8, Q_EDIT_CARVE, 0);
    bench_note("box = the edit's bounding box as q_terrain_edit computes it; covered = voxels whose");
    bench_note("centre lies within r + 1/2 of the ball's centre (non-zero coverage).");
    bench_note("hills = generated 256x64x256 (seed 1), balls centred on the ground surface;");
    bench_note("empty = no chunks stored, balls centred at y ~ 32.");
    bench_end();

    free(empty.dense);
    free(empty.dense0);
    free(hills.dense);
    free(hills.dense0);
    q_world_destroy(empty_w);
    q_world_destroy(hills_w);
    return 0;
}
