/* Procedural terrain: flat ground, hills, hills with caves, islands in water.
 *
 * Every voxel is a pure function of (definition, x, y, z), so chunks are
 * generated in parallel on the job system and merged in a fixed order: the
 * result never depends on thread count. Chunks are made in batches to bound
 * the transient memory (BATCH chunks of 64 KiB).
 *
 * Heights are continuous; the top voxel of a column gets occupancy
 * clamp(h - y, 0, 1), its exact vertical coverage, so the mesher sees smooth
 * slopes instead of steps. Caves are the region where 3D fractal noise rises
 * above a threshold, anti-aliased with the noise value scaled by its typical
 * gradient (an approximate distance, good enough for a one-voxel ramp).
 */
#include "voxel/terrain_internal.h"

#include "core/alloc.h"
#include "voxel/material.h"
#include "voxel/noise.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define BATCH 64
#define MAX_AXIS 4096
#define MAX_VOXELS (1ull << 31)
#define BEDROCK 2 /* rows at the bottom that caves never open */

q_generate_def q_default_generate_def(void)
{
    return (q_generate_def){Q_GEN_HILLS, {256, 64, 256}, 1, false, 0.0};
}

typedef struct gen_ctx {
    const q_generate_def *def;
    int32_t nc[3];       /* chunks per axis */
    size_t first;        /* linear index of the batch's first chunk */
    q_voxel *out[BATCH]; /* per slot: dense voxels, or NULL when uniform */
    q_voxel uniform[BATCH];
    bool failed[BATCH];
    double water;        /* water surface (voxel Y), or -inf */
    uint8_t grass, dirt, rock, sand, snow, water_id;
} gen_ctx;

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

/* Ground height (voxel units) of column (x, z), sampled at its centre. */
static double column_height(const gen_ctx *g, double x, double z)
{
    const q_generate_def *d = g->def;
    const double H = d->size[1];
    double h;
    switch (d->kind) {
    case Q_GEN_FLAT:
        h = floor(H * 0.5);
        break;
    case Q_GEN_ISLANDS: {
        double cx = d->size[0] * 0.5, cz = d->size[2] * 0.5;
        double reach = 0.5 * (d->size[0] < d->size[2] ? d->size[0] : d->size[2]);
        /* Several islands: noise-shaped bumps, fading towards the border. */
        double r = sqrt((x - cx) * (x - cx) + (z - cz) * (z - cz)) / reach;
        double bump = q_fbm2(d->seed, x / 80.0, z / 80.0, 5, 0.5);
        double falloff = 1.0 - r * r;
        h = H * (0.22 + 0.35 * falloff + 0.45 * bump);
        break;
    }
    case Q_GEN_CAVES:
        h = H * (0.7 + 0.18 * q_fbm2(d->seed, x / 96.0, z / 96.0, 5, 0.5));
        break;
    case Q_GEN_HILLS:
    default:
        h = H * (0.45 + 0.4 * q_fbm2(d->seed, x / 96.0, z / 96.0, 5, 0.5));
        break;
    }
    if (h < BEDROCK)
        h = BEDROCK;
    if (h > H - 1)
        h = H - 1;
    return h;
}

/* Occupancy in 0..1 that caves leave at a voxel centre (1 = no cave). */
static double cave_keep(const gen_ctx *g, double x, double y, double z)
{
    if (y < BEDROCK + 2)
        return 1.0;
    double n = q_fbm3(g->def->seed ^ 0xca7eull, x / 40.0, y / 28.0, z / 40.0, 3, 0.5);
    /* ~24 voxels per unit of noise near the threshold: a one-voxel ramp. */
    return clamp01(0.5 + (0.22 - n) * 24.0);
}

static uint8_t surface_material(const gen_ctx *g, double h, double depth)
{
    const double H = g->def->size[1];
    bool shore = h < g->water + 1.5;
    if (depth < 1.0)
        return shore ? g->sand : h > 0.82 * H ? g->snow : g->grass;
    if (depth < 4.0)
        return shore ? g->sand : g->dirt;
    return g->rock;
}

static void gen_chunk(void *ctx, int slot)
{
    gen_ctx *g = ctx;
    const q_generate_def *d = g->def;
    size_t idx = g->first + (size_t)slot;
    int32_t cx = (int32_t)(idx % (size_t)g->nc[0]);
    int32_t cy = (int32_t)(idx / (size_t)g->nc[0] % (size_t)g->nc[1]);
    int32_t cz = (int32_t)(idx / ((size_t)g->nc[0] * (size_t)g->nc[1]));
    q_voxel *v = q_alloc(Q_CHUNK_VOXELS * sizeof *v);
    if (!v) {
        g->failed[slot] = true;
        return;
    }
    double heights[Q_CHUNK_SIZE * Q_CHUNK_SIZE];
    for (int z = 0; z < Q_CHUNK_SIZE; z++)
        for (int x = 0; x < Q_CHUNK_SIZE; x++)
            heights[x + Q_CHUNK_SIZE * z] =
                column_height(g, cx * Q_CHUNK_SIZE + x + 0.5, cz * Q_CHUNK_SIZE + z + 0.5);
    for (int z = 0; z < Q_CHUNK_SIZE; z++)
        for (int y = 0; y < Q_CHUNK_SIZE; y++)
            for (int x = 0; x < Q_CHUNK_SIZE; x++) {
                int32_t gx = cx * Q_CHUNK_SIZE + x, gy = cy * Q_CHUNK_SIZE + y, gz = cz * Q_CHUNK_SIZE + z;
                q_voxel out = {0, 0};
                if (gx < d->size[0] && gy < d->size[1] && gz < d->size[2]) {
                    double h = heights[x + Q_CHUNK_SIZE * z];
                    double occ = clamp01(h - gy);
                    if (d->kind == Q_GEN_CAVES && occ > 0)
                        occ = fmin(occ, cave_keep(g, gx + 0.5, gy + 0.5, gz + 0.5));
                    int o8 = (int)lrint(occ * 255.0);
                    if (o8 > 0) {
                        out = (q_voxel){surface_material(g, h, h - (gy + 0.5)), (uint8_t)o8};
                    } else if (gy < g->water) {
                        int w8 = (int)lrint(clamp01(g->water - gy) * 255.0);
                        if (w8 > 0)
                            out = (q_voxel){g->water_id, (uint8_t)w8};
                    }
                }
                v[Q_VOXEL_INDEX(x, y, z)] = out;
            }
    bool uniform = true;
    for (int i = 1; i < Q_CHUNK_VOXELS && uniform; i++)
        uniform = v[i].material == v[0].material && v[i].occupancy == v[0].occupancy;
    if (uniform) {
        g->uniform[slot] = v[0];
        q_free(v, Q_CHUNK_VOXELS * sizeof *v);
        v = NULL;
    }
    g->out[slot] = v;
}

q_status q_terrain_generate(q_terrain *t, const q_generate_def *def, char *err, size_t errlen)
{
    uint64_t volume = 1;
    for (int a = 0; a < 3; a++) {
        if (def->size[a] < 1 || def->size[a] > MAX_AXIS) {
            snprintf(err, errlen, "size components must be 1..%d, got %d", MAX_AXIS, (int)def->size[a]);
            return def->size[a] < 1 ? Q_ERR_ARGUMENT : Q_ERR_TOO_LARGE;
        }
        volume *= (uint64_t)def->size[a];
    }
    if (volume > MAX_VOXELS) {
        snprintf(err, errlen, "size of %llu voxels is over the limit of %llu", (unsigned long long)volume,
                 (unsigned long long)MAX_VOXELS);
        return Q_ERR_TOO_LARGE;
    }
    if (def->has_water && !isfinite(def->water_level)) {
        snprintf(err, errlen, "water_level must be finite");
        return Q_ERR_ARGUMENT;
    }
    if ((unsigned)def->kind > Q_GEN_ISLANDS) {
        snprintf(err, errlen, "unknown terrain kind %d", (int)def->kind);
        return Q_ERR_ARGUMENT;
    }

    gen_ctx *g = q_calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return Q_ERR_MEMORY;
    }
    g->def = def;
    for (int a = 0; a < 3; a++)
        g->nc[a] = (def->size[a] + Q_CHUNK_SIZE - 1) / Q_CHUNK_SIZE;
    g->water = def->has_water ? def->water_level
               : def->kind == Q_GEN_ISLANDS ? floor(def->size[1] * 0.35) + 0.5
                                            : -INFINITY;
    g->grass = (uint8_t)q_material_find("grass");
    g->dirt = (uint8_t)q_material_find("dirt");
    g->rock = (uint8_t)q_material_find("rock");
    g->sand = (uint8_t)q_material_find("sand");
    g->snow = (uint8_t)q_material_find("snow");
    g->water_id = (uint8_t)q_material_find("water");

    q_terrain_clear(t);
    q_terrain_log_change(t, (q_box){{0, 0, 0}, {def->size[0], def->size[1], def->size[2]}});
    size_t total = (size_t)g->nc[0] * (size_t)g->nc[1] * (size_t)g->nc[2];
    q_status st = Q_OK;
    for (g->first = 0; g->first < total && st == Q_OK; g->first += BATCH) {
        int n = total - g->first < BATCH ? (int)(total - g->first) : BATCH;
        memset(g->out, 0, sizeof g->out);
        memset(g->failed, 0, sizeof g->failed);
        q_jobs_for(t->jobs, n, gen_chunk, g);
        for (int i = 0; i < n; i++) {
            size_t idx = g->first + (size_t)i;
            int32_t cx = (int32_t)(idx % (size_t)g->nc[0]);
            int32_t cy = (int32_t)(idx / (size_t)g->nc[0] % (size_t)g->nc[1]);
            int32_t cz = (int32_t)(idx / ((size_t)g->nc[0] * (size_t)g->nc[1]));
            if (st == Q_OK && (g->failed[i] || q_terrain_set_chunk(t, cx, cy, cz, g->out[i], g->uniform[i]) != Q_OK))
                st = Q_ERR_MEMORY;
            q_free(g->out[i], Q_CHUNK_VOXELS * sizeof(q_voxel));
        }
    }
    q_free(g, sizeof *g);
    if (st != Q_OK) {
        q_terrain_clear(t); /* no half-generated world */
        snprintf(err, errlen, "out of memory while generating");
    }
    return st;
}
