/* Clipmap level selection: see clipmap.h. */
#include "mesh/clipmap.h"

#include "core/alloc.h"

#include <math.h>
#include <string.h>

q_clipmap *q_clipmap_create(void)
{
    q_clipmap *c = q_calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cache = q_lod_cache_create();
    if (!c->cache) {
        q_free(c, sizeof *c);
        return NULL;
    }
    for (int i = 0; i < Q_LOD_MAX_LEVEL; i++)
        c->distances[i] = 48.0 * (1 << i);
    return c;
}

void q_clipmap_destroy(q_clipmap *c)
{
    if (!c)
        return;
    q_lod_cache_destroy(c->cache);
    q_free(c, sizeof *c);
}

void q_clipmap_set_viewer(q_clipmap *c, const double voxel_pos[3])
{
    memcpy(c->viewer, voxel_pos, sizeof c->viewer);
    c->has_viewer = true;
}

bool q_clipmap_set_distances(q_clipmap *c, const double d[Q_LOD_MAX_LEVEL])
{
    for (int i = 0; i < Q_LOD_MAX_LEVEL; i++)
        if (!(isfinite(d[i]) && d[i] > 0 && (i == 0 || d[i] > d[i - 1])))
            return false;
    memcpy(c->distances, d, sizeof c->distances);
    return true;
}

int q_clipmap_level(const q_clipmap *c, const int32_t ch[3])
{
    if (!c->has_viewer)
        return 0;
    double d2 = 0;
    for (int a = 0; a < 3; a++) {
        double lo = (double)ch[a] * Q_LOD_CHUNK, hi = lo + Q_LOD_CHUNK, v = c->viewer[a];
        double e = v < lo ? lo - v : v > hi ? v - hi : 0;
        d2 += e * e;
    }
    double d = sqrt(d2);
    int L = 0;
    while (L < Q_LOD_MAX_LEVEL && d >= c->distances[L])
        L++;
    return L;
}

static int level_cb(void *ud, const int32_t ch[3])
{
    return q_clipmap_level(ud, ch);
}

q_status q_clipmap_mesh(q_clipmap *c, struct q_jobs *jobs, const q_terrain *t, q_box box, float scale,
                        q_lod_result *out, char *err, size_t errlen)
{
    q_status st = q_lod_build_cached(c->cache, jobs, t, box, Q_SURFACE_SOLID, scale, level_cb, c, out, err, errlen);
    if (st == Q_OK) {
        c->last = *out;
        c->last.mesh = NULL;
    }
    return st;
}
