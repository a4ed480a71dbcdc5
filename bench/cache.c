/* The physics cache (engine/physics/terrain_physics.c) on a world larger
 * than its budget. No peer: the figures show what a miss costs when the
 * cache is full (each one evicts the least recently used entry) beside a
 * miss in a cache with room, and a hit.
 *
 * World: generated hills, 1536x64x1536 voxels, voxel size 1. Rays: one
 * downward ray per 2x2 voxel column (589,824), from y = 70 for 100 voxels,
 * in row order; every ray builds or reuses the chunks it crosses. Caches:
 *   full    the default 32 MiB, which holds about a quarter of the
 *           world's surface chunks; after one pass to fill it, a second
 *           pass evicts and rebuilds every chunk it reaches (timed)
 *   roomy   1 GiB, which holds them all: its first pass builds each chunk
 *           once (timed; it also grows the cache's arrays and faults in new
 *           pages, which the full cache, reusing freed blocks, does not), its
 *           second pass finds every chunk cached (timed)
 * Each pass is timed in thread CPU time; medians of REPS fresh pairs of
 * caches. All passes must give the same hits and the same distance sum.
 * Until the least recently used entry was kept at the end of a list, each
 * eviction scanned the whole cache for it (bench/RESULTS.md).
 */
#include "bench.h"

#include "physics/terrain_physics.h"

#include <stdio.h>

#define SIZE 1536
#define STEP 2
#define REPS 3

/* One pass of downward rays; returns its seconds, adds hits and distances. */
static double pass(q_terrain_physics *p, long *hits, double *sum)
{
    double t0 = bench_thread_now();
    for (int z = 0; z < SIZE; z += STEP)
        for (int x = 0; x < SIZE; x += STEP) {
            const double o[3] = {x + 0.5, 70, z + 0.5}, d[3] = {0, -1, 0};
            q_ray_hit h;
            if (q_terrain_physics_raycast(p, o, d, 100, Q_RAY_SOLID, &h)) {
                (*hits)++;
                *sum += h.distance;
            }
        }
    return bench_thread_now() - t0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    q_terrain *t = bench_world(Q_GEN_HILLS, SIZE, 64, SIZE, 1);

    const long rays = (long)(SIZE / STEP) * (SIZE / STEP);
    double miss_small[REPS], miss_large[REPS], hit_large[REPS];
    long hits = 0;
    size_t small_chunks = 0, large_chunks = 0;
    for (int rep = 0; rep < REPS; rep++) {
        q_terrain_physics *small = q_terrain_physics_create(t, 1.0, 0);
        q_terrain_physics *large = q_terrain_physics_create(t, 1.0, (size_t)1 << 30);
        if (!small || !large) {
            fprintf(stderr, "bench: q_terrain_physics_create failed\n");
            return 1;
        }
        long h[4] = {0, 0, 0, 0};
        double s[4] = {0, 0, 0, 0};
        pass(small, &h[0], &s[0]); /* fills the small cache */
        miss_small[rep] = pass(small, &h[1], &s[1]);
        miss_large[rep] = pass(large, &h[2], &s[2]);
        hit_large[rep] = pass(large, &h[3], &s[3]);
        for (int k = 1; k < 4; k++)
            if (h[k] != h[0] || s[k] != s[0]) {
                fprintf(stderr, "bench: cache: passes disagree (%ld / %.9g against %ld / %.9g)\n", h[k], s[k], h[0],
                        s[0]);
                return 1;
            }
        hits = h[0];
        q_terrain_physics_stats ss = q_terrain_physics_get_stats(small), sl = q_terrain_physics_get_stats(large);
        small_chunks = ss.cached_chunks, large_chunks = sl.cached_chunks;
        q_terrain_physics_destroy(small);
        q_terrain_physics_destroy(large);
    }

    bench_begin("cache", dir);
    bench_section("Physics cache: downward rays over hills 1536x64x1536, ns per ray (median of 3 passes)");
    double sorted[3][REPS]; /* bench_median sorts in place; the rows keep the passes in order */
    for (int i = 0; i < REPS; i++)
        sorted[0][i] = miss_small[i], sorted[1][i] = miss_large[i], sorted[2][i] = hit_large[i];
    double m_small = bench_median(sorted[0], REPS), m_large = bench_median(sorted[1], REPS),
           h_large = bench_median(sorted[2], REPS);
    bench_row("32 MiB cache (full): misses that evict", m_small / (double)rays, miss_small, REPS, "", -1, NULL, 0,
              "s", 1e-9, "ns");
    bench_row("1 GiB cache (roomy): misses", m_large / (double)rays, miss_large, REPS, "", -1, NULL, 0, "s", 1e-9, "ns");
    bench_row("1 GiB cache (roomy): hits", h_large / (double)rays, hit_large, REPS, "", -1, NULL, 0, "s", 1e-9, "ns");
    bench_note("%ld rays a pass, %ld hit; the 32 MiB cache holds %zu chunks, the 1 GiB one %zu", rays, hits,
               small_chunks, large_chunks);
    bench_note("a miss that evicts should cost about what a miss with room does (building the chunk's mesh and tree)");
    bench_end();
    q_terrain_destroy(t);
    return 0;
}
