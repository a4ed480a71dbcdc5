/* Generation throughput: q_terrain_generate (hills) into a fresh world whose
 * job system runs one thread (q_world_def.threads = 0, i.e. q_jobs_create(0))
 * or one per core (threads = -1, q_jobs_create(-1)). The 1-thread figure is
 * the baseline of the all-cores row, so the ratio is the parallel speed-up.
 *
 * Each repetition creates the world untimed and times only the generate
 * call. One extra figure times generating over an already generated world,
 * which includes clearing the old content.
 */
#include "bench.h"

#include "core/jobs.h"
#include "world/world.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 9

static q_world *make_world(int threads)
{
    char err[256] = "";
    q_world_def wd = q_default_world_def();
    wd.threads = threads;
    q_world *w = q_world_create(&wd, err, sizeof err);
    if (!w) {
        fprintf(stderr, "bench: q_world_create: %s\n", err);
        exit(1);
    }
    return w;
}

static q_generate_def hills(int32_t sx, int32_t sy, int32_t sz)
{
    q_generate_def gd = q_default_generate_def();
    gd.kind = Q_GEN_HILLS;
    gd.size[0] = sx, gd.size[1] = sy, gd.size[2] = sz;
    gd.seed = 1;
    return gd;
}

/* Seconds of one generation into a fresh world (created untimed). */
static double generate_once(const q_generate_def *gd, int threads, uint64_t *hash)
{
    char err[256] = "";
    q_world *w = make_world(threads);
    double t0 = bench_now();
    bench_check(q_terrain_generate(q_world_terrain(w), gd, err, sizeof err), "q_terrain_generate", err);
    double t = bench_now() - t0;
    uint64_t h = q_terrain_hash(q_world_terrain(w));
    if (*hash && h != *hash)
        bench_note("generate gave different content between runs");
    *hash = h;
    q_world_destroy(w);
    return t;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    q_jobs *probe = q_jobs_create(-1);
    int all_threads = q_jobs_threads(probe);
    q_jobs_destroy(probe);

    bench_begin("generate", dir);
    char title[160];
    snprintf(title, sizeof title,
             "Generation: q_terrain_generate hills, all cores (%d threads) vs 1 thread (median of %d)",
             all_threads, REPS);
    bench_section(title);
    const int32_t sizes[2][3] = {{256, 64, 256}, {512, 64, 512}};
    for (int s = 0; s < 2; s++) {
        q_generate_def gd = hills(sizes[s][0], sizes[s][1], sizes[s][2]);
        double voxels = (double)sizes[s][0] * sizes[s][1] * sizes[s][2];
        double t1[REPS], tn[REPS], s1[REPS], sn[REPS];
        uint64_t hash = 0;
        /* Alternate the two so that drift on a shared machine hits both. */
        for (int rep = 0; rep < REPS; rep++) {
            t1[rep] = generate_once(&gd, 0, &hash);
            tn[rep] = generate_once(&gd, -1, &hash);
        }
        memcpy(s1, t1, sizeof t1);
        memcpy(sn, tn, sizeof tn);
        double m1 = bench_median(t1, REPS), mn = bench_median(tn, REPS);
        char what[128];
        snprintf(what, sizeof what, "hills %dx%dx%d, 1 thread: voxels/s", (int)sizes[s][0], (int)sizes[s][1],
                 (int)sizes[s][2]);
        bench_row(what, voxels / m1, s1, REPS, "", -1, NULL, 0, "voxels/s", 1e6, "Mvox/s");
        snprintf(what, sizeof what, "hills %dx%dx%d, %d threads: voxels/s", (int)sizes[s][0], (int)sizes[s][1],
                 (int)sizes[s][2], all_threads);
        bench_row(what, voxels / mn, sn, REPS, "same, 1 thread", voxels / m1, s1, REPS, "voxels/s", 1e6,
                  "Mvox/s");
    }

    /* Regenerating over existing content (q_terrain_generate clears it
     * first) against generating into a fresh world, alternated. */
    {
        char err[256] = "";
        q_generate_def gd = hills(512, 64, 512);
        double voxels = 512.0 * 64 * 512;
        double tr[REPS], tf[REPS], sr[REPS], sf[REPS];
        uint64_t hash = 0;
        q_world *w = make_world(-1);
        bench_check(q_terrain_generate(q_world_terrain(w), &gd, err, sizeof err), "q_terrain_generate", err);
        for (int rep = 0; rep < REPS; rep++) {
            double t0 = bench_now();
            bench_check(q_terrain_generate(q_world_terrain(w), &gd, err, sizeof err), "q_terrain_generate",
                        err);
            tr[rep] = bench_now() - t0;
            tf[rep] = generate_once(&gd, -1, &hash);
        }
        q_world_destroy(w);
        memcpy(sr, tr, sizeof tr);
        memcpy(sf, tf, sizeof tf);
        double mr = bench_median(tr, REPS), mf = bench_median(tf, REPS);
        char what[128];
        snprintf(what, sizeof what, "hills 512x64x512 over itself, %d threads: vox/s", all_threads);
        bench_row(what, voxels / mr, sr, REPS, "into a fresh world", voxels / mf, sf, REPS, "voxels/s", 1e6,
                  "Mvox/s");
    }
    bench_note("voxels = the generated box (size x * y * z), air included.");
    bench_end();
    return 0;
}
