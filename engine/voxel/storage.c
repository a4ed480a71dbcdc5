/* Chunked voxel storage, box reads and writes, bounds, hashing and the change
 * log. Edits are in edit.c, generation in generate.c. */
#include "voxel/terrain_internal.h"

#include "core/alloc.h"
#include "core/digest.h"
#include "voxel/material.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_BIAS (1 << 20)

static uint64_t chunk_key(int32_t cx, int32_t cy, int32_t cz)
{
    return ((uint64_t)(uint32_t)(cx + KEY_BIAS) << 42) | ((uint64_t)(uint32_t)(cy + KEY_BIAS) << 21) |
           (uint64_t)(uint32_t)(cz + KEY_BIAS);
}

q_terrain *q_terrain_create(q_jobs *jobs)
{
    q_terrain *t = q_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->jobs = jobs;
    t->log_first = 1;
    return t;
}

static void free_chunk_voxels(q_chunk *c)
{
    q_free(c->voxels, Q_CHUNK_VOXELS * sizeof *c->voxels);
    c->voxels = NULL;
}

void q_terrain_destroy(q_terrain *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->chunks.count; i++)
        free_chunk_voxels(&t->chunks.data[i]);
    q_array_free(&t->chunks);
    q_hashmap_free(&t->index);
    q_free(t, sizeof *t);
}

bool q_box_in_limits(q_box b)
{
    for (int a = 0; a < 3; a++) {
        if (b.min[a] < -Q_TERRAIN_LIMIT || b.max[a] > Q_TERRAIN_LIMIT || b.min[a] > b.max[a])
            return false;
    }
    return true;
}

uint64_t q_box_volume(q_box b)
{
    uint64_t v = 1;
    for (int a = 0; a < 3; a++)
        v *= (uint64_t)(b.max[a] > b.min[a] ? (int64_t)b.max[a] - b.min[a] : 0);
    return v;
}

/* ---- chunks ---- */

long q_chunk_find(const q_terrain *t, int32_t cx, int32_t cy, int32_t cz)
{
    uint32_t v = q_hashmap_get(&t->index, chunk_key(cx, cy, cz));
    return v == Q_HASHMAP_EMPTY ? -1 : (long)v;
}

long q_chunk_get_or_add(q_terrain *t, int32_t cx, int32_t cy, int32_t cz)
{
    long at = q_chunk_find(t, cx, cy, cz);
    if (at >= 0)
        return at;
    if (!q_array_reserve(&t->chunks, t->chunks.count + 1))
        return -1;
    at = (long)t->chunks.count;
    if (!q_hashmap_set(&t->index, chunk_key(cx, cy, cz), (uint32_t)at))
        return -1;
    t->chunks.data[t->chunks.count++] = (q_chunk){cx, cy, cz, NULL, {0, 0}, t->version};
    return at;
}

bool q_chunk_densify(q_chunk *c)
{
    if (c->voxels)
        return true;
    c->voxels = q_alloc(Q_CHUNK_VOXELS * sizeof *c->voxels);
    if (!c->voxels)
        return false;
    for (int i = 0; i < Q_CHUNK_VOXELS; i++)
        c->voxels[i] = c->uniform;
    return true;
}

void q_chunk_settle(q_terrain *t, long at)
{
    q_chunk *c = &t->chunks.data[at];
    if (c->voxels) {
        q_voxel first = c->voxels[0];
        for (int i = 1; i < Q_CHUNK_VOXELS; i++) {
            if (c->voxels[i].material != first.material || c->voxels[i].occupancy != first.occupancy)
                return;
        }
        free_chunk_voxels(c);
        c->uniform = first;
    }
    if (c->uniform.material != Q_MATERIAL_AIR)
        return;
    /* All air: drop it, moving the last chunk into its place. */
    q_hashmap_remove(&t->index, chunk_key(c->cx, c->cy, c->cz));
    size_t last = t->chunks.count - 1;
    if ((size_t)at != last) {
        t->chunks.data[at] = t->chunks.data[last];
        q_chunk *m = &t->chunks.data[at];
        q_hashmap_set(&t->index, chunk_key(m->cx, m->cy, m->cz), (uint32_t)at); /* replaces: no alloc */
    }
    t->chunks.count--;
}

/* ---- change log ---- */

void q_terrain_log_change(q_terrain *t, q_box box)
{
    t->version++;
    if (t->log_count == Q_CHANGE_LOG_SIZE) {
        t->log_start = (t->log_start + 1) % Q_CHANGE_LOG_SIZE;
        t->log_count--;
        t->log_first++;
    }
    if (t->log_count == 0)
        t->log_first = t->version;
    t->log[(t->log_start + t->log_count) % Q_CHANGE_LOG_SIZE] = (q_change){box, t->version};
    t->log_count++;
}

uint64_t q_terrain_version(const q_terrain *t)
{
    return t->version;
}

bool q_terrain_changes_since(const q_terrain *t, uint64_t since, q_change_fn fn, void *ud)
{
    if (since >= t->version)
        return true;
    if (t->log_count == 0 || since + 1 < t->log_first)
        return false;
    for (uint32_t i = 0; i < t->log_count; i++) {
        const q_change *c = &t->log[(t->log_start + i) % Q_CHANGE_LOG_SIZE];
        if (c->version > since)
            fn(ud, c->box, c->version);
    }
    return true;
}

/* ---- reading ---- */

bool q_terrain_has_chunk(const q_terrain *t, int32_t cx, int32_t cy, int32_t cz)
{
    return q_chunk_find(t, cx, cy, cz) >= 0;
}

q_voxel q_terrain_get(const q_terrain *t, int32_t x, int32_t y, int32_t z)
{
    long at = q_chunk_find(t, q_floor_div_chunk(x), q_floor_div_chunk(y), q_floor_div_chunk(z));
    if (at < 0)
        return (q_voxel){0, 0};
    const q_chunk *c = &t->chunks.data[at];
    if (!c->voxels)
        return c->uniform;
    const int32_t m = Q_CHUNK_SIZE - 1;
    return c->voxels[Q_VOXEL_INDEX(x & m, y & m, z & m)];
}

/* Calls visit for each chunk overlapping box, with the overlap in local
 * coordinates. Used by read and write so both walk chunks, not voxels. */
typedef struct chunk_span {
    int32_t cx, cy, cz;
    int32_t lo[3], hi[3]; /* local, half-open */
} chunk_span;

static void chunk_span_range(q_box box, int32_t cmin[3], int32_t cmax[3])
{
    for (int a = 0; a < 3; a++) {
        cmin[a] = q_floor_div_chunk(box.min[a]);
        cmax[a] = q_floor_div_chunk(box.max[a] - 1);
    }
}

static chunk_span make_span(q_box box, int32_t cx, int32_t cy, int32_t cz)
{
    chunk_span s = {cx, cy, cz, {0}, {0}};
    int32_t c[3] = {cx, cy, cz};
    for (int a = 0; a < 3; a++) {
        int32_t base = c[a] * Q_CHUNK_SIZE;
        s.lo[a] = box.min[a] > base ? box.min[a] - base : 0;
        s.hi[a] = box.max[a] < base + Q_CHUNK_SIZE ? box.max[a] - base : Q_CHUNK_SIZE;
    }
    return s;
}

static bool check_box(q_box box, uint64_t max_voxels, char *err, size_t errlen)
{
    if (!q_box_in_limits(box)) {
        snprintf(err, errlen, "box must satisfy min <= max within +-%d voxels", Q_TERRAIN_LIMIT);
        return false;
    }
    if (q_box_volume(box) > max_voxels) {
        snprintf(err, errlen, "box of %llu voxels is over the limit of %llu",
                 (unsigned long long)q_box_volume(box), (unsigned long long)max_voxels);
        return false;
    }
    return true;
}

q_status q_terrain_read(const q_terrain *t, q_box box, uint8_t *materials, uint8_t *occupancy,
                        char *err, size_t errlen)
{
    if (!check_box(box, Q_READ_MAX_VOXELS, err, errlen))
        return q_box_in_limits(box) ? Q_ERR_TOO_LARGE : Q_ERR_ARGUMENT;
    if (q_box_volume(box) == 0)
        return Q_OK;
    const size_t nx = (size_t)(box.max[0] - box.min[0]), ny = (size_t)(box.max[1] - box.min[1]);
    int32_t cmin[3], cmax[3];
    chunk_span_range(box, cmin, cmax);
    for (int32_t cz = cmin[2]; cz <= cmax[2]; cz++)
        for (int32_t cy = cmin[1]; cy <= cmax[1]; cy++)
            for (int32_t cx = cmin[0]; cx <= cmax[0]; cx++) {
                chunk_span s = make_span(box, cx, cy, cz);
                long at = q_chunk_find(t, cx, cy, cz);
                const q_chunk *c = at >= 0 ? &t->chunks.data[at] : NULL;
                for (int32_t z = s.lo[2]; z < s.hi[2]; z++)
                    for (int32_t y = s.lo[1]; y < s.hi[1]; y++) {
                        size_t out = (size_t)(cx * Q_CHUNK_SIZE + s.lo[0] - box.min[0]) +
                                     nx * ((size_t)(cy * Q_CHUNK_SIZE + y - box.min[1]) +
                                           ny * (size_t)(cz * Q_CHUNK_SIZE + z - box.min[2]));
                        for (int32_t x = s.lo[0]; x < s.hi[0]; x++, out++) {
                            q_voxel v = !c ? (q_voxel){0, 0}
                                           : c->voxels ? c->voxels[Q_VOXEL_INDEX(x, y, z)] : c->uniform;
                            if (materials)
                                materials[out] = v.material;
                            if (occupancy)
                                occupancy[out] = v.occupancy;
                        }
                    }
            }
    return Q_OK;
}

double q_terrain_solid_density(const q_terrain *t, const double p[3])
{
    double f[3];
    int32_t i0[3];
    for (int a = 0; a < 3; a++) {
        double s = p[a] - 0.5;
        if (!(s > -Q_TERRAIN_LIMIT && s < Q_TERRAIN_LIMIT - 1))
            return 0.0;
        double fl = floor(s);
        i0[a] = (int32_t)fl;
        f[a] = s - fl;
    }
    double sum = 0.0;
    for (int k = 0; k < 8; k++) {
        int dx = k & 1, dy = (k >> 1) & 1, dz = (k >> 2) & 1;
        q_voxel v = q_terrain_get(t, i0[0] + dx, i0[1] + dy, i0[2] + dz);
        const q_material *m = q_material_get(v.material);
        if (v.occupancy == 0 || !m || m->liquid)
            continue;
        double w = (dx ? f[0] : 1 - f[0]) * (dy ? f[1] : 1 - f[1]) * (dz ? f[2] : 1 - f[2]);
        sum += w * v.occupancy / 255.0;
    }
    return sum;
}

bool q_terrain_bounds(const q_terrain *t, q_box *out)
{
    bool any = false;
    q_box b = {{0, 0, 0}, {0, 0, 0}};
    for (size_t i = 0; i < t->chunks.count; i++) {
        const q_chunk *c = &t->chunks.data[i];
        int32_t lo[3] = {Q_CHUNK_SIZE, Q_CHUNK_SIZE, Q_CHUNK_SIZE}, hi[3] = {0, 0, 0};
        if (!c->voxels) {
            lo[0] = lo[1] = lo[2] = 0;
            hi[0] = hi[1] = hi[2] = Q_CHUNK_SIZE;
        } else {
            for (int32_t z = 0; z < Q_CHUNK_SIZE; z++)
                for (int32_t y = 0; y < Q_CHUNK_SIZE; y++)
                    for (int32_t x = 0; x < Q_CHUNK_SIZE; x++) {
                        if (c->voxels[Q_VOXEL_INDEX(x, y, z)].material == 0)
                            continue;
                        int32_t v[3] = {x, y, z};
                        for (int a = 0; a < 3; a++) {
                            lo[a] = v[a] < lo[a] ? v[a] : lo[a];
                            hi[a] = v[a] + 1 > hi[a] ? v[a] + 1 : hi[a];
                        }
                    }
        }
        int32_t base[3] = {c->cx * Q_CHUNK_SIZE, c->cy * Q_CHUNK_SIZE, c->cz * Q_CHUNK_SIZE};
        for (int a = 0; a < 3; a++) {
            int32_t mn = base[a] + lo[a], mx = base[a] + hi[a];
            b.min[a] = !any || mn < b.min[a] ? mn : b.min[a];
            b.max[a] = !any || mx > b.max[a] ? mx : b.max[a];
        }
        any = true;
    }
    if (any && out)
        *out = b;
    return any;
}

/* ---- writing ---- */

q_status q_terrain_write(q_terrain *t, q_box box, const uint8_t *materials, const uint8_t *occupancy,
                         char *err, size_t errlen)
{
    if (!check_box(box, Q_READ_MAX_VOXELS, err, errlen))
        return q_box_in_limits(box) ? Q_ERR_TOO_LARGE : Q_ERR_ARGUMENT;
    const size_t n = (size_t)q_box_volume(box);
    int nmat = q_material_count();
    for (size_t i = 0; i < n; i++) {
        if (materials[i] >= nmat) {
            snprintf(err, errlen, "material id %d at index %zu is not defined", materials[i], i);
            return Q_ERR_ARGUMENT;
        }
    }
    if (n == 0)
        return Q_OK;
    /* Reserve every chunk first so that running out of memory half-way
     * cannot leave a partial write. */
    int32_t cmin[3], cmax[3];
    chunk_span_range(box, cmin, cmax);
    size_t need = t->chunks.count + (size_t)((cmax[0] - cmin[0] + 1) * (int64_t)(cmax[1] - cmin[1] + 1) *
                                             (cmax[2] - cmin[2] + 1));
    if (!q_array_reserve(&t->chunks, need)) {
        snprintf(err, errlen, "out of memory");
        return Q_ERR_MEMORY;
    }
    const size_t nx = (size_t)(box.max[0] - box.min[0]), ny = (size_t)(box.max[1] - box.min[1]);
    bool logged = false;
    for (int32_t cz = cmin[2]; cz <= cmax[2]; cz++)
        for (int32_t cy = cmin[1]; cy <= cmax[1]; cy++)
            for (int32_t cx = cmin[0]; cx <= cmax[0]; cx++) {
                chunk_span s = make_span(box, cx, cy, cz);
                long at = q_chunk_get_or_add(t, cx, cy, cz);
                if (at < 0) {
                    snprintf(err, errlen, "out of memory");
                    return Q_ERR_MEMORY;
                }
                bool changed = false;
                for (int32_t z = s.lo[2]; z < s.hi[2]; z++)
                    for (int32_t y = s.lo[1]; y < s.hi[1]; y++) {
                        size_t in = (size_t)(cx * Q_CHUNK_SIZE + s.lo[0] - box.min[0]) +
                                    nx * ((size_t)(cy * Q_CHUNK_SIZE + y - box.min[1]) +
                                          ny * (size_t)(cz * Q_CHUNK_SIZE + z - box.min[2]));
                        for (int32_t x = s.lo[0]; x < s.hi[0]; x++, in++) {
                            q_chunk *c = &t->chunks.data[at];
                            q_voxel v = q_voxel_normalise((q_voxel){materials[in], occupancy[in]});
                            q_voxel old = c->voxels ? c->voxels[Q_VOXEL_INDEX(x, y, z)] : c->uniform;
                            if (old.material == v.material && old.occupancy == v.occupancy)
                                continue;
                            if (!c->voxels && !q_chunk_densify(c)) {
                                q_chunk_settle(t, at);
                                snprintf(err, errlen, "out of memory");
                                return Q_ERR_MEMORY;
                            }
                            if (!logged) {
                                q_terrain_log_change(t, box);
                                logged = true;
                            }
                            c->voxels[Q_VOXEL_INDEX(x, y, z)] = v;
                            changed = true;
                        }
                    }
                if (changed)
                    t->chunks.data[at].version = t->version;
                q_chunk_settle(t, at);
            }
    return Q_OK;
}

q_status q_terrain_set_chunk(q_terrain *t, int32_t cx, int32_t cy, int32_t cz, const q_voxel *voxels,
                             q_voxel uniform)
{
    long at = q_chunk_get_or_add(t, cx, cy, cz);
    if (at < 0)
        return Q_ERR_MEMORY;
    q_chunk *c = &t->chunks.data[at];
    if (voxels) {
        if (!q_chunk_densify(c)) {
            q_chunk_settle(t, at);
            return Q_ERR_MEMORY;
        }
        for (int i = 0; i < Q_CHUNK_VOXELS; i++)
            c->voxels[i] = q_voxel_normalise(voxels[i]);
    } else {
        free_chunk_voxels(c);
        c->uniform = q_voxel_normalise(uniform);
    }
    c->version = t->version;
    q_chunk_settle(t, at);
    return Q_OK;
}

void q_terrain_clear(q_terrain *t)
{
    if (t->chunks.count == 0)
        return;
    /* The logged box is the union of the stored chunks: as good as the tight
     * bounds for consumers, without scanning every voxel. */
    q_box b;
    for (size_t i = 0; i < t->chunks.count; i++) {
        const q_chunk *c = &t->chunks.data[i];
        int32_t base[3] = {c->cx * Q_CHUNK_SIZE, c->cy * Q_CHUNK_SIZE, c->cz * Q_CHUNK_SIZE};
        for (int a = 0; a < 3; a++) {
            b.min[a] = i == 0 || base[a] < b.min[a] ? base[a] : b.min[a];
            b.max[a] = i == 0 || base[a] + Q_CHUNK_SIZE > b.max[a] ? base[a] + Q_CHUNK_SIZE : b.max[a];
        }
        free_chunk_voxels(&t->chunks.data[i]);
    }
    t->chunks.count = 0;
    q_hashmap_clear(&t->index);
    q_terrain_log_change(t, b);
}

/* ---- whole-terrain access ---- */

size_t q_terrain_chunk_count(const q_terrain *t)
{
    return t->chunks.count;
}

static int compare_views(const void *a, const void *b)
{
    const q_chunk_view *p = a, *q = b;
    if (p->cz != q->cz)
        return p->cz < q->cz ? -1 : 1;
    if (p->cy != q->cy)
        return p->cy < q->cy ? -1 : 1;
    if (p->cx != q->cx)
        return p->cx < q->cx ? -1 : 1;
    return 0;
}

void q_terrain_chunk_views(const q_terrain *t, q_chunk_view *views)
{
    for (size_t i = 0; i < t->chunks.count; i++) {
        const q_chunk *c = &t->chunks.data[i];
        views[i] = (q_chunk_view){c->cx, c->cy, c->cz, c->voxels, c->uniform, c->version};
    }
    if (t->chunks.count > 1)
        qsort(views, t->chunks.count, sizeof *views, compare_views);
}

q_terrain_stats q_terrain_get_stats(const q_terrain *t)
{
    q_terrain_stats s = {t->chunks.count, 0, 0};
    for (size_t i = 0; i < t->chunks.count; i++)
        s.dense_chunks += t->chunks.data[i].voxels != NULL;
    s.bytes = s.dense_chunks * Q_CHUNK_VOXELS * sizeof(q_voxel) + t->chunks.capacity * sizeof(q_chunk) +
              (size_t)q_hashmap_bytes(&t->index) + sizeof *t;
    return s;
}

/* Sum of per-chunk digests (each seeded with the chunk's key): independent of
 * the dense array's history-dependent order, and needs no allocation. */
uint64_t q_terrain_hash(const q_terrain *t)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < t->chunks.count; i++) {
        const q_chunk *c = &t->chunks.data[i];
        q_digest e;
        q_digest_init(&e, chunk_key(c->cx, c->cy, c->cz));
        if (c->voxels)
            q_digest_bytes(&e, c->voxels, Q_CHUNK_VOXELS * sizeof *c->voxels);
        else
            q_digest_u64(&e, 0xffff0000ull | (uint64_t)c->uniform.material << 8 | c->uniform.occupancy);
        sum += q_digest_final(&e);
    }
    q_digest d;
    q_digest_init(&d, 0x5175617272790001ull); /* "Quarry" v1 */
    q_digest_u64(&d, t->chunks.count);
    q_digest_u64(&d, sum);
    return q_digest_final(&d);
}
