/* Terrain physics: the broadphase table, sync with the terrain's change log,
 * the LRU cache of chunk meshes and trees, and ray / overlap queries. See
 * terrain_physics.h for the model. */
#include "physics/physics_internal.h"

#include "core/alloc.h"
#include "geom/gridsort.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BUDGET (32u << 20)
#define CHUNK_BOX_SAMPLES (Q_PHYS_CHUNK * Q_PHYS_CHUNK * Q_PHYS_CHUNK)

uint64_t q_phys_key(int32_t cx, int32_t cy, int32_t cz)
{
    return ((uint64_t)(uint32_t)(cx + (1 << 21)) & 0x3fffff) << 42 |
           ((uint64_t)(uint32_t)(cy + (1 << 19)) & 0xfffff) << 22 | ((uint64_t)(uint32_t)(cz + (1 << 21)) & 0x3fffff);
}

static bool chunk_in_range(int64_t cx, int64_t cy, int64_t cz)
{
    const int64_t h = Q_PHYS_LIMIT / Q_PHYS_CHUNK, v = Q_PHYS_LIMIT_Y / Q_PHYS_CHUNK;
    return cx >= -h && cx < h && cz >= -h && cz < h && cy >= -v && cy < v;
}

q_terrain_physics *q_terrain_physics_create(q_terrain *t, double voxel_size, size_t cache_bytes)
{
    q_terrain_physics *p = q_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->terrain = t;
    p->voxel_size = voxel_size;
    p->budget = cache_bytes ? cache_bytes : DEFAULT_BUDGET;
    p->lru_oldest = p->lru_newest = Q_LRU_NONE;
    q_box box = {{0, 0, 0}, {Q_PHYS_CHUNK, Q_PHYS_CHUNK, Q_PHYS_CHUNK}};
    size_t nv = q_dc_vertex_bound(box), ni = q_dc_index_bound(box);
    p->dc_scratch = q_alloc(q_dc_scratch_bytes(box));
    p->out.positions = q_alloc(nv * 3 * sizeof(float));
    p->out.materials = q_alloc(nv);
    p->out.indices = q_alloc(ni * sizeof(uint32_t));
    p->out.vertex_capacity = nv;
    p->out.index_capacity = ni;
    if (!p->dc_scratch || !p->out.positions || !p->out.materials || !p->out.indices) {
        q_terrain_physics_destroy(p);
        return NULL;
    }
    return p;
}

static void free_chunk_mesh(q_chunk_mesh *m)
{
    q_free(m->positions, (size_t)m->vertex_count * 3 * sizeof(int16_t));
    q_free(m->materials, m->vertex_count);
    q_free(m->indices, (size_t)m->triangle_count * 3 * sizeof(uint16_t));
    q_kdtree_free(&m->tree);
    memset(m, 0, sizeof *m);
}

static void clear_cache(q_terrain_physics *p)
{
    for (size_t i = 0; i < p->cache.count; i++)
        for (int s = 0; s < 2; s++)
            free_chunk_mesh(&p->cache.data[i].surface[s]);
    p->cache.count = p->lru.count = 0;
    p->cache_bytes = 0;
    p->lru_oldest = p->lru_newest = Q_LRU_NONE;
    q_hashmap_clear(&p->cache_index);
}

void q_terrain_physics_destroy(q_terrain_physics *p)
{
    if (!p)
        return;
    clear_cache(p);
    q_array_free(&p->cache);
    q_array_free(&p->lru);
    q_hashmap_free(&p->cache_index);
    q_array_free(&p->bp);
    for (int k = 0; k < 2; k++) {
        q_array_free(&p->pool[k].slots);
        q_array_free(&p->pool[k].free);
    }
    q_hashmap_free(&p->bp_index);
    q_box box = {{0, 0, 0}, {Q_PHYS_CHUNK, Q_PHYS_CHUNK, Q_PHYS_CHUNK}};
    q_free(p->dc_scratch, q_dc_scratch_bytes(box));
    q_free(p->out.positions, p->out.vertex_capacity * 3 * sizeof(float));
    q_free(p->out.materials, p->out.vertex_capacity);
    q_free(p->out.indices, p->out.index_capacity * sizeof(uint32_t));
    q_free(p, sizeof *p);
}

/* ---- broadphase table ---- */

const q_bp_entry *q_bp_find(const q_terrain_physics *p, int32_t cx, int32_t cy, int32_t cz)
{
    if (!chunk_in_range(cx, cy, cz))
        return NULL;
    uint32_t i = q_hashmap_get(&p->bp_index, q_phys_key(cx, cy, cz));
    return i == Q_HASHMAP_EMPTY ? NULL : &p->bp.data[i];
}

/* Slot pools keep `free` able to hold every slot, so releasing never fails. */
static bool pool_take(q_mask_pool *pool, uint32_t *slot)
{
    if (pool->free.count > 0) {
        *slot = pool->free.data[--pool->free.count];
        return true;
    }
    if (!q_array_reserve(&pool->slots, pool->slots.count + 1) || !q_array_reserve(&pool->free, pool->slots.count + 1))
        return false;
    *slot = (uint32_t)pool->slots.count++;
    return true;
}

static void pool_give(q_mask_pool *pool, uint32_t *slot)
{
    if (*slot == UINT32_MAX)
        return;
    pool->free.data[pool->free.count++] = *slot;
    *slot = UINT32_MAX;
}

static void bp_remove(q_terrain_physics *p, uint32_t i)
{
    q_bp_entry *e = &p->bp.data[i];
    for (int k = 0; k < 2; k++)
        pool_give(&p->pool[k], &e->slot[k]);
    q_hashmap_remove(&p->bp_index, q_phys_key(e->cx, e->cy, e->cz));
    size_t last = p->bp.count - 1;
    if (i != last) {
        p->bp.data[i] = p->bp.data[last];
        q_bp_entry *m = &p->bp.data[i];
        q_hashmap_set(&p->bp_index, q_phys_key(m->cx, m->cy, m->cz), i);
    }
    p->bp.count--;
}

static bool bp_update(q_terrain_physics *p, int32_t cx, int32_t cy, int32_t cz)
{
    if (!chunk_in_range(cx, cy, cz))
        return true;
    q_bp_masks m;
    if (!q_bp_build_chunk(p, cx, cy, cz, &m))
        return false;
    uint64_t key = q_phys_key(cx, cy, cz);
    uint32_t i = q_hashmap_get(&p->bp_index, key);
    if (m.solid_tag == Q_BP_NONE && m.water_tag == Q_BP_NONE) {
        if (i != Q_HASHMAP_EMPTY)
            bp_remove(p, i);
        return true;
    }
    if (i == Q_HASHMAP_EMPTY) {
        if (!q_array_reserve(&p->bp, p->bp.count + 1) || !q_hashmap_set(&p->bp_index, key, (uint32_t)p->bp.count))
            return false;
        i = (uint32_t)p->bp.count++;
        p->bp.data[i] = (q_bp_entry){cx, cy, cz, 0, 0, {UINT32_MAX, UINT32_MAX}};
    }
    q_bp_entry *e = &p->bp.data[i];
    const uint8_t tags[2] = {m.solid_tag, m.water_tag};
    const uint64_t *bits[2] = {m.solid, m.water};
    for (int k = 0; k < 2; k++) {
        if (tags[k] == Q_BP_MASK) {
            if (e->slot[k] == UINT32_MAX && !pool_take(&p->pool[k], &e->slot[k]))
                return false;
            memcpy(p->pool[k].slots.data[e->slot[k]].bits, bits[k], 8 * sizeof(uint64_t));
        } else {
            pool_give(&p->pool[k], &e->slot[k]);
        }
    }
    e->solid_tag = m.solid_tag;
    e->water_tag = m.water_tag;
    return true;
}

/* ---- cache ---- */

/* The use order: a doubly linked list through the entries, oldest first. */
static void lru_unlink(q_terrain_physics *p, uint32_t i)
{
    q_lru_link *l = p->lru.data, e = l[i];
    if (e.older != Q_LRU_NONE)
        l[e.older].newer = e.newer;
    else
        p->lru_oldest = e.newer;
    if (e.newer != Q_LRU_NONE)
        l[e.newer].older = e.older;
    else
        p->lru_newest = e.older;
}

static void lru_append(q_terrain_physics *p, uint32_t i) /* as the newest */
{
    q_lru_link *l = p->lru.data;
    l[i] = (q_lru_link){p->lru_newest, Q_LRU_NONE};
    if (p->lru_newest != Q_LRU_NONE)
        l[p->lru_newest].newer = i;
    else
        p->lru_oldest = i;
    p->lru_newest = i;
}

static void cache_remove(q_terrain_physics *p, uint32_t i)
{
    q_cache_entry *e = &p->cache.data[i];
    p->cache_bytes -= e->bytes;
    for (int s = 0; s < 2; s++)
        free_chunk_mesh(&e->surface[s]);
    q_hashmap_remove(&p->cache_index, q_phys_key(e->cx, e->cy, e->cz));
    lru_unlink(p, i);
    uint32_t last = (uint32_t)p->cache.count - 1;
    if (i != last) { /* the last entry moves into slot i: its key and links follow */
        p->cache.data[i] = p->cache.data[last];
        q_cache_entry *m = &p->cache.data[i];
        q_hashmap_set(&p->cache_index, q_phys_key(m->cx, m->cy, m->cz), i);
        q_lru_link *l = p->lru.data, ml = l[i] = l[last];
        if (ml.older != Q_LRU_NONE)
            l[ml.older].newer = i;
        else
            p->lru_oldest = i;
        if (ml.newer != Q_LRU_NONE)
            l[ml.newer].older = i;
        else
            p->lru_newest = i;
    }
    p->cache.count--;
    p->lru.count--;
}

static void cache_drop(q_terrain_physics *p, int32_t cx, int32_t cy, int32_t cz)
{
    if (!chunk_in_range(cx, cy, cz))
        return;
    uint32_t i = q_hashmap_get(&p->cache_index, q_phys_key(cx, cy, cz));
    if (i != Q_HASHMAP_EMPTY)
        cache_remove(p, i);
}

static q_kd_mesh kd_mesh(const q_terrain_physics *p, const q_chunk_mesh *m)
{
    return (q_kd_mesh){NULL, m->indices, NULL, m->triangle_count, m->positions, (float)(p->voxel_size / Q_DC_GRID)};
}

/* Vertex i of a cached mesh, chunk-local world units. */
static void mesh_vertex(const q_terrain_physics *p, const q_chunk_mesh *m, uint32_t i, double out[3])
{
    float scale = (float)(p->voxel_size / Q_DC_GRID); /* the same float product the tree sees */
    for (int k = 0; k < 3; k++)
        out[k] = (double)(m->positions[3 * i + k] * scale);
}

static bool build_surface(q_terrain_physics *p, int32_t cx, int32_t cy, int32_t cz, q_surface s, q_chunk_mesh *m)
{
    q_box box = {{cx * Q_PHYS_CHUNK, cy * Q_PHYS_CHUNK, cz * Q_PHYS_CHUNK},
                 {cx * Q_PHYS_CHUNK + Q_PHYS_CHUNK, cy * Q_PHYS_CHUNK + Q_PHYS_CHUNK, cz * Q_PHYS_CHUNK + Q_PHYS_CHUNK}};
    memcpy(p->out.origin, box.min, sizeof box.min);
    char err[128];
    if (q_dc_mesh(p->terrain, box, s, (float)p->voxel_size, &p->out, p->dc_scratch, err, sizeof err) != Q_OK)
        return false;
    m->vertex_count = (uint32_t)p->out.vertex_count;
    m->triangle_count = (uint32_t)(p->out.index_count / 3);
    if (m->triangle_count == 0)
        return true;
    m->positions = q_alloc((size_t)m->vertex_count * 3 * sizeof(int16_t));
    m->materials = q_alloc(m->vertex_count);
    m->indices = q_alloc((size_t)m->triangle_count * 3 * sizeof(uint16_t));
    if (!m->positions || !m->materials || !m->indices) {
        free_chunk_mesh(m);
        return false;
    }
    double to_grid = Q_DC_GRID / p->voxel_size;
    for (size_t i = 0; i < (size_t)m->vertex_count * 3; i++)
        m->positions[i] = (int16_t)lrint(p->out.positions[i] * to_grid); /* within [-1024, 17408] */
    memcpy(m->materials, p->out.materials, m->vertex_count);
    for (size_t i = 0; i < p->out.index_count; i++)
        m->indices[i] = (uint16_t)p->out.indices[i]; /* < 4 * 9^3 + 16 vertices */
    q_kd_mesh km = kd_mesh(p, m);
    /* The tree reorders the chunk's triangles so that its leaves are runs of
     * them (materials are per vertex; triangle numbers change only here). */
    if (!q_kdtree_build_sorted(&m->tree, &km, m->indices, NULL, NULL)) {
        free_chunk_mesh(m);
        return false;
    }
    return true;
}

static size_t chunk_mesh_bytes(const q_chunk_mesh *m)
{
    return (size_t)m->vertex_count * 7 + (size_t)m->triangle_count * 6 + m->tree.word_count * sizeof(uint32_t);
}

/* The cached meshes of a chunk, built on first use; NULL when out of memory. */
void q_tp_freeze(q_terrain_physics *p, bool frozen) { p->frozen = frozen; }

bool q_tp_take_missed(q_terrain_physics *p)
{
    return __atomic_exchange_n(&p->frozen_missed, false, __ATOMIC_ACQ_REL);
}

/* cache_get for a caller that has the chunk's key and, when b_known, its
 * broadphase entry (NULL: none) already; otherwise the entry is looked up
 * on a miss. */
static q_cache_entry *cache_get_keyed(q_terrain_physics *p, uint64_t key, int32_t cx, int32_t cy, int32_t cz,
                                      const q_bp_entry *b, bool b_known)
{
    uint32_t i = q_hashmap_get(&p->cache_index, key);
    if (p->frozen) {
        if (i == Q_HASHMAP_EMPTY)
            __atomic_store_n(&p->frozen_missed, true, __ATOMIC_RELAXED);
        return i == Q_HASHMAP_EMPTY ? NULL : &p->cache.data[i];
    }
    if (i != Q_HASHMAP_EMPTY) {
        if (i != p->lru_newest) {
            lru_unlink(p, i);
            lru_append(p, i);
        }
        return &p->cache.data[i];
    }
    q_cache_entry e = {cx, cy, cz, {{0}}, 0};
    if (!b_known)
        b = q_bp_find(p, cx, cy, cz);
    for (int s = 0; s < 2; s++) {
        uint8_t tag = !b ? Q_BP_NONE : s == 0 ? b->solid_tag : b->water_tag;
        if (tag == Q_BP_MASK && !build_surface(p, cx, cy, cz, (q_surface)s, &e.surface[s])) {
            free_chunk_mesh(&e.surface[0]);
            return NULL;
        }
    }
    e.bytes = sizeof e + sizeof(q_lru_link) + chunk_mesh_bytes(&e.surface[0]) + chunk_mesh_bytes(&e.surface[1]);
    /* Evict least recently used entries until the new one fits. */
    while (p->cache.count > 0 && p->cache_bytes + e.bytes > p->budget) {
        cache_remove(p, p->lru_oldest);
        p->evictions++;
    }
    if (!q_array_reserve(&p->cache, p->cache.count + 1) || !q_array_reserve(&p->lru, p->cache.count + 1) ||
        !q_hashmap_set(&p->cache_index, key, (uint32_t)p->cache.count)) {
        free_chunk_mesh(&e.surface[0]);
        free_chunk_mesh(&e.surface[1]);
        return NULL;
    }
    p->cache.data[p->cache.count] = e;
    p->cache_bytes += e.bytes;
    lru_append(p, (uint32_t)p->cache.count);
    p->lru.count++;
    return &p->cache.data[p->cache.count++];
}

static q_cache_entry *cache_get(q_terrain_physics *p, int32_t cx, int32_t cy, int32_t cz)
{
    return cache_get_keyed(p, q_phys_key(cx, cy, cz), cx, cy, cz, NULL, false);
}

/* ---- sync ---- */

typedef struct sync_ctx {
    q_terrain_physics *p;
    bool ok;
} sync_ctx;

static int32_t floor_div8(int64_t v) { return (int32_t)(v >> 3); }

static void apply_change(void *ud, q_box box, uint64_t version)
{
    (void)version;
    sync_ctx *s = ud;
    q_terrain_physics *p = s->p;
    /* Masks read one voxel around the chunk, meshes two. */
    for (int32_t cz = floor_div8((int64_t)box.min[2] - 2); cz <= floor_div8((int64_t)box.max[2] + 1); cz++)
        for (int32_t cy = floor_div8((int64_t)box.min[1] - 2); cy <= floor_div8((int64_t)box.max[1] + 1); cy++)
            for (int32_t cx = floor_div8((int64_t)box.min[0] - 2); cx <= floor_div8((int64_t)box.max[0] + 1); cx++)
                cache_drop(p, cx, cy, cz);
    for (int32_t cz = floor_div8((int64_t)box.min[2] - 1); cz <= floor_div8((int64_t)box.max[2]); cz++)
        for (int32_t cy = floor_div8((int64_t)box.min[1] - 1); cy <= floor_div8((int64_t)box.max[1]); cy++)
            for (int32_t cx = floor_div8((int64_t)box.min[0] - 1); cx <= floor_div8((int64_t)box.max[0]); cx++)
                if (s->ok && !bp_update(p, cx, cy, cz))
                    s->ok = false;
}

static uint64_t box_chunks(q_box b)
{
    uint64_t n = 1;
    for (int a = 0; a < 3; a++)
        n *= (uint64_t)(floor_div8((int64_t)b.max[a] + 1) - floor_div8((int64_t)b.min[a] - 2) + 1);
    return n;
}

typedef struct size_ctx {
    uint64_t chunks;
} size_ctx;

static void measure_change(void *ud, q_box box, uint64_t version)
{
    (void)version;
    ((size_ctx *)ud)->chunks += box_chunks(box);
}

/* Rebuilds everything from the stored terrain chunks. */
static bool rebuild_all(q_terrain_physics *p)
{
    clear_cache(p);
    p->bp.count = 0;
    for (int k = 0; k < 2; k++)
        p->pool[k].slots.count = p->pool[k].free.count = 0;
    q_hashmap_clear(&p->bp_index);
    size_t n = q_terrain_chunk_count(p->terrain);
    q_chunk_view *views = q_alloc(n * sizeof *views + 1);
    if (!views)
        return false;
    q_terrain_chunk_views(p->terrain, views);
    sync_ctx s = {p, true};
    for (size_t i = 0; i < n && s.ok; i++) {
        q_box b = {{views[i].cx * Q_CHUNK_SIZE, views[i].cy * Q_CHUNK_SIZE, views[i].cz * Q_CHUNK_SIZE},
                   {views[i].cx * Q_CHUNK_SIZE + Q_CHUNK_SIZE, views[i].cy * Q_CHUNK_SIZE + Q_CHUNK_SIZE,
                    views[i].cz * Q_CHUNK_SIZE + Q_CHUNK_SIZE}};
        apply_change(&s, b, 0);
    }
    q_free(views, n * sizeof *views + 1);
    return s.ok;
}

bool q_terrain_physics_sync(q_terrain_physics *p)
{
    if (p->frozen)
        return p->synced;
    uint64_t now = q_terrain_version(p->terrain);
    if (p->synced && now == p->version)
        return true;
    for (int m = 0; m < q_material_count(); m++)
        p->liquid[m] = q_material_get(m)->liquid;
    bool ok;
    size_ctx size = {0};
    if (!p->synced || !q_terrain_changes_since(p->terrain, p->version, measure_change, &size) ||
        size.chunks > 4 * q_terrain_chunk_count(p->terrain) * 64 + 4096) {
        /* First use, a log that no longer reaches back, or changes bigger
         * than the world: rebuilding from the stored chunks is cheaper. */
        ok = rebuild_all(p);
    } else {
        sync_ctx s = {p, true};
        q_terrain_changes_since(p->terrain, p->version, apply_change, &s);
        ok = s.ok;
    }
    p->synced = ok;
    p->version = now;
    return ok;
}

/* ---- rays ---- */

/* The closest hit so far, copied out of the cache (a later chunk's build
 * may move or evict the entry it came from): fill_hit turns it into a
 * q_ray_hit once, when the walk is over. */
typedef struct hit_record {
    int16_t v[3][3]; /* the triangle's corners, chunk-local grid units */
    uint8_t material[3];
    int32_t c[3];    /* its chunk */
    int surface;
    float t;         /* world metres */
} hit_record;

typedef struct ray_ctx {
    q_terrain_physics *p;
    double o[3], d[3]; /* voxel units; d unit length (world and voxel lengths differ by voxel_size) */
    double inv[3];     /* 1 / d, infinite for a zero component (chunk reach tests) */
    float finv[3];     /* the same in float (tree bounds tests) */
    double maxd;       /* world metres */
    unsigned flags;
    /* closest hit */
    bool found;
    hit_record best;
    /* all hits */
    q_ray_hit *hits;
    size_t cap, count;
    bool all;
} ray_ctx;

static void record_hit(const q_cache_entry *e, int s, uint32_t tri, float t, hit_record *h)
{
    const q_chunk_mesh *m = &e->surface[s];
    for (int j = 0; j < 3; j++) {
        uint16_t vi = m->indices[3 * tri + j];
        memcpy(h->v[j], m->positions + 3 * (size_t)vi, sizeof h->v[j]);
        h->material[j] = m->materials[vi];
    }
    h->c[0] = e->cx, h->c[1] = e->cy, h->c[2] = e->cz;
    h->surface = s;
    h->t = t;
}

static void fill_hit(const ray_ctx *r, const hit_record *rec, q_ray_hit *h)
{
    float scale = (float)(r->p->voxel_size / Q_DC_GRID); /* the same float product the tree sees */
    double v[3][3];
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < 3; k++)
            v[j][k] = (double)(rec->v[j][k] * scale);
    const double *a = v[0], *b = v[1], *c = v[2];
    double vs = r->p->voxel_size;
    double n[3] = {(b[1] - a[1]) * (c[2] - a[2]) - (b[2] - a[2]) * (c[1] - a[1]),
                   (b[2] - a[2]) * (c[0] - a[0]) - (b[0] - a[0]) * (c[2] - a[2]),
                   (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])};
    double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    double facing = n[0] * r->d[0] + n[1] * r->d[1] + n[2] * r->d[2];
    double sign = facing > 0 ? -1.0 : 1.0;
    h->distance = rec->t;
    double local[3];
    for (int k = 0; k < 3; k++) {
        h->position[k] = r->o[k] * vs + r->d[k] * rec->t;
        h->normal[k] = len > 0 ? sign * n[k] / len : 0.0;
        local[k] = h->position[k] - (double)(rec->c[k] * Q_PHYS_CHUNK) * vs;
    }
    /* material of the triangle's corner nearest to the hit */
    double best = INFINITY;
    for (int j = 0; j < 3; j++) {
        double dd = (v[j][0] - local[0]) * (v[j][0] - local[0]) + (v[j][1] - local[1]) * (v[j][1] - local[1]) +
                    (v[j][2] - local[2]) * (v[j][2] - local[2]);
        if (dd < best) {
            best = dd;
            h->material = rec->material[j];
        }
    }
    h->water = rec->surface == 1;
}

typedef struct all_ctx {
    ray_ctx *r;
    const q_cache_entry *e;
    int s;
} all_ctx;

static bool collect_hit(void *ud, float t, uint32_t tri)
{
    all_ctx *a = ud;
    if (a->r->count < a->r->cap) {
        hit_record rec;
        record_hit(a->e, a->s, tri, t, &rec);
        fill_hit(a->r, &rec, &a->r->hits[a->r->count]);
    }
    a->r->count++;
    return true;
}

/* Whether the segment o + t d, t in [0, tmax], can meet the box [mn, mx]
 * (a tree's bounds, widened by margin): the slab test with the ray's float
 * inverse direction. A zero component gives an infinite inverse, and
 * (mn - o) * inf is NaN only when o lies on the plane; the comparisons
 * below then keep the segment as it was (always safe). */
static inline bool segment_meets_box(const float o[3], const float inv[3], float tmax, const float mn[3],
                              const float mx[3], float margin)
{
    float lo = 0, hi = tmax;
    for (int a = 0; a < 3; a++) {
        float ta = (mn[a] - margin - o[a]) * inv[a], tb = (mx[a] + margin - o[a]) * inv[a];
        float near = ta < tb ? ta : tb, far = ta > tb ? ta : tb; /* a NaN comes out as tb */
        lo = near > lo ? near : lo; /* and is dropped here */
        hi = far < hi ? far : hi;
    }
    return lo <= hi;
}

/* Tests the triangles of one chunk against the whole segment. */
static void test_chunk(ray_ctx *r, int32_t cx, int32_t cy, int32_t cz)
{
    q_terrain_physics *p = r->p;
    uint64_t key = q_phys_key(cx, cy, cz);
    uint32_t bi = q_hashmap_get(&p->bp_index, key);
    if (bi == Q_HASHMAP_EMPTY)
        return;
    const q_bp_entry *b = &p->bp.data[bi];
    bool want[2] = {(r->flags & Q_RAY_SOLID) && b->solid_tag == Q_BP_MASK,
                    (r->flags & Q_RAY_WATER) && b->water_tag == Q_BP_MASK};
    if (!want[0] && !want[1])
        return;
    q_cache_entry *e = cache_get_keyed(p, key, cx, cy, cz, b, true);
    if (!e)
        return;
    double vs = p->voxel_size;
    float o[3], d[3];
    const int32_t c[3] = {cx, cy, cz};
    for (int k = 0; k < 3; k++) {
        o[k] = (float)((r->o[k] - (double)((int64_t)c[k] * Q_PHYS_CHUNK)) * vs);
        d[k] = (float)r->d[k];
    }
    /* The trees clip to their bounds themselves, but most chunks the walk
     * reaches (neighbours within half a voxel, chunks the segment only
     * grazes) are missed: tested here with the ray's inverse, before the
     * tree's per-query set-up. The margin is far wider than any rounding. */
    float margin = Q_KD_EPSILON + (float)(vs * 1e-3);
    for (int s = 0; s < 2; s++) {
        const q_chunk_mesh *m = &e->surface[s];
        if (!want[s] || m->triangle_count == 0)
            continue;
        q_kd_mesh km = kd_mesh(p, m);
        if (r->all) {
            if (!segment_meets_box(o, r->finv, (float)r->maxd, m->tree.min, m->tree.max, margin))
                continue;
            all_ctx a = {r, e, s};
            q_kdtree_raycast_all(&m->tree, &km, o, d, (float)r->maxd, collect_hit, &a);
            continue;
        }
        float t;
        uint32_t tri;
        float limit = r->found ? r->best.t : (float)r->maxd;
        if (!segment_meets_box(o, r->finv, limit, m->tree.min, m->tree.max, margin))
            continue;
        if (q_kdtree_raycast(&m->tree, &km, o, d, limit, &t, &tri) && (!r->found || t < r->best.t)) {
            r->found = true;
            record_hit(e, s, tri, t, &r->best);
        }
    }
}

static int compare_hits(const void *a, const void *b)
{
    const q_ray_hit *x = a, *y = b;
    return x->distance < y->distance ? -1 : x->distance > y->distance ? 1 : 0;
}

/* How far a chunk's triangles reach past its box (a mesh vertex stays in
 * its cell, and cells straddle the chunk's faces by half a voxel), with
 * 1e-6 for rounding: the chunk's reach is its box grown by this. */
#define REACH (0.5 + 1e-6)

/* floor and ceil for |v| < 2^63 (origins are within 1e12 voxels). */
static inline int64_t floor_i64(double v)
{
    int64_t i = (int64_t)v;
    return i - (v < (double)i);
}

static inline int64_t ceil_i64(double v)
{
    int64_t i = (int64_t)v;
    return i + (v > (double)i);
}

/* Tests the chunks (x, y, z) with x in [lo[0], hi[0]] and so on (z
 * outermost), those within the physics chunk range. */
static void test_block(ray_ctx *r, const int64_t lo[3], const int64_t hi[3])
{
    for (int64_t z = lo[2]; z <= hi[2]; z++)
        for (int64_t y = lo[1]; y <= hi[1]; y++)
            for (int64_t x = lo[0]; x <= hi[0]; x++)
                if (chunk_in_range(x, y, z))
                    test_chunk(r, (int32_t)x, (int32_t)y, (int32_t)z);
}

/* Walks the chunks whose reach the segment meets, each once, in the order
 * in which the segment enters their reach (an Amanatides-Woo walk on the
 * 8-voxel grid whose cells overlap by twice the reach). Per axis the
 * chunks whose reach holds the current point form a run [lo, hi] of one
 * or two indices; the walk moves from event to event along the ray: a
 * "lead" event adds the next index ahead (its chunks, that index across
 * the other axes' runs, are tested then), a "trail" event drops the one
 * behind. Closest-hit walks stop once the best hit lies before the next
 * lead event: every chunk not yet tested is entered after it. */
static void walk(ray_ctx *r)
{
    double vs = r->p->voxel_size;
    double maxv = r->maxd / vs; /* segment length in voxel units */
    int64_t lo[3], hi[3];
    int step[3];
    double tlead[3], ttrail[3];
    for (int k = 0; k < 3; k++) {
        double x = r->o[k];
        lo[k] = ceil_i64((x - Q_PHYS_CHUNK - REACH) / Q_PHYS_CHUNK);
        hi[k] = floor_i64((x + REACH) / Q_PHYS_CHUNK);
        step[k] = r->d[k] > 0 ? 1 : r->d[k] < 0 ? -1 : 0;
        tlead[k] = ttrail[k] = INFINITY;
    }
    test_block(r, lo, hi);
    const int64_t limit[3] = {Q_PHYS_LIMIT / Q_PHYS_CHUNK, Q_PHYS_LIMIT_Y / Q_PHYS_CHUNK, Q_PHYS_LIMIT / Q_PHYS_CHUNK};
    /* Event planes: going up, index hi + 1 is entered at its box's min -
     * REACH and index lo left at its max + REACH; going down, the mirror. */
    for (int k = 0; k < 3; k++) {
        if (step[k] > 0) {
            tlead[k] = ((double)(hi[k] + 1) * Q_PHYS_CHUNK - REACH - r->o[k]) * r->inv[k];
            ttrail[k] = ((double)(lo[k] + 1) * Q_PHYS_CHUNK + REACH - r->o[k]) * r->inv[k];
        } else if (step[k] < 0) {
            tlead[k] = ((double)lo[k] * Q_PHYS_CHUNK + REACH - r->o[k]) * r->inv[k];
            ttrail[k] = ((double)hi[k] * Q_PHYS_CHUNK - REACH - r->o[k]) * r->inv[k];
        }
    }
    for (int guard = 0; guard < (1 << 24); guard++) {
        double m01 = tlead[1] < tlead[0] ? tlead[1] : tlead[0];
        int kl = tlead[2] < m01 ? 2 : tlead[1] < tlead[0];
        double t = tlead[kl];
        if (!(t <= maxv) || (!r->all && r->found && r->best.t / vs <= t))
            return;
        /* Drop the indices left behind before t (a reach touched at t
         * itself still counts). */
        for (int k = 0; k < 3; k++)
            while (ttrail[k] < t) {
                if (step[k] > 0) {
                    lo[k]++;
                    ttrail[k] = ((double)(lo[k] + 1) * Q_PHYS_CHUNK + REACH - r->o[k]) * r->inv[k];
                } else {
                    hi[k]--;
                    ttrail[k] = ((double)hi[k] * Q_PHYS_CHUNK - REACH - r->o[k]) * r->inv[k];
                }
            }
        int64_t blo[3] = {lo[0], lo[1], lo[2]}, bhi[3] = {hi[0], hi[1], hi[2]};
        if (step[kl] > 0) {
            blo[kl] = bhi[kl] = ++hi[kl];
            tlead[kl] = ((double)(hi[kl] + 1) * Q_PHYS_CHUNK - REACH - r->o[kl]) * r->inv[kl];
            if (hi[kl] >= limit[kl])
                return; /* out of range from here on */
        } else {
            blo[kl] = bhi[kl] = --lo[kl];
            tlead[kl] = ((double)lo[kl] * Q_PHYS_CHUNK + REACH - r->o[kl]) * r->inv[kl];
            if (lo[kl] < -limit[kl])
                return;
        }
        test_block(r, blo, bhi);
    }
}

static bool ray_setup(ray_ctx *r, q_terrain_physics *p, const double origin[3], const double dir[3],
                      double max_distance, unsigned flags)
{
    double len = sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    if (!(len > 0 && isfinite(len) && max_distance >= 0 && isfinite(origin[0]) && isfinite(origin[1]) &&
          isfinite(origin[2])))
        return false;
    if (!q_terrain_physics_sync(p))
        return false;
    r->p = p;
    for (int k = 0; k < 3; k++) {
        r->o[k] = origin[k] / p->voxel_size;
        r->d[k] = dir[k] / len;
        r->inv[k] = 1.0 / r->d[k];
        r->finv[k] = 1.0f / (float)r->d[k];
        /* Terrain lies within +-2^24 voxels and a ray is at most 1e9 long:
         * an origin this far out reaches nothing (and its chunk index
         * would not fit an integer). */
        if (fabs(r->o[k]) > 1e12)
            return false;
    }
    r->maxd = fmin(max_distance, 1e9);
    r->flags = flags;
    r->found = false;
    r->hits = NULL;
    r->cap = r->count = 0;
    r->all = false;
    return true;
}

bool q_terrain_physics_raycast(q_terrain_physics *p, const double origin[3], const double dir[3],
                               double max_distance, unsigned flags, q_ray_hit *hit)
{
    ray_ctx r;
    if (!ray_setup(&r, p, origin, dir, max_distance, flags))
        return false;
    walk(&r);
    if (r.found)
        fill_hit(&r, &r.best, hit);
    return r.found;
}

size_t q_terrain_physics_raycast_all(q_terrain_physics *p, const double origin[3], const double dir[3],
                                     double max_distance, unsigned flags, q_ray_hit *hits, size_t cap)
{
    ray_ctx r;
    if (!ray_setup(&r, p, origin, dir, max_distance, flags))
        return 0;
    r.all = true;
    r.hits = hits;
    r.cap = cap;
    walk(&r);
    qsort(hits, r.count < cap ? r.count : cap, sizeof *hits, compare_hits);
    return r.count;
}

/* ---- batches ---- */

/* A triangle list owned by q_alloc: free with free_soup. */
typedef struct soup {
    float *pos;
    uint32_t *idx;
    size_t nv, ni, pos_cap, idx_cap;
} soup;

static void free_soup(soup *s)
{
    q_free(s->pos, s->pos_cap * sizeof(float));
    q_free(s->idx, s->idx_cap * sizeof(uint32_t));
}

/* Meshes the voxel box in 32^3 pieces into one triangle list (absolute
 * positions, world units). False when out of memory. */
static bool mesh_box(q_terrain_physics *p, q_box box, soup *res)
{
    Q_ARRAY(float) P = {0};
    Q_ARRAY(uint32_t) I = {0};
    q_box piece_box = {{0, 0, 0}, {Q_CHUNK_SIZE, Q_CHUNK_SIZE, Q_CHUNK_SIZE}};
    size_t vcap = q_dc_vertex_bound(piece_box), icap = q_dc_index_bound(piece_box);
    q_dc_output out = {0};
    out.positions = q_alloc(vcap * 3 * sizeof(float));
    out.indices = q_alloc(icap * sizeof(uint32_t));
    out.vertex_capacity = vcap;
    out.index_capacity = icap;
    void *scratch = q_alloc(q_dc_scratch_bytes(piece_box));
    bool ok = out.positions && out.indices && scratch;
    char err[128];
    for (int32_t z = box.min[2]; ok && z < box.max[2]; z += Q_CHUNK_SIZE)
        for (int32_t y = box.min[1]; ok && y < box.max[1]; y += Q_CHUNK_SIZE)
            for (int32_t x = box.min[0]; ok && x < box.max[0]; x += Q_CHUNK_SIZE) {
                q_box b = {{x, y, z},
                           {x + Q_CHUNK_SIZE < box.max[0] ? x + Q_CHUNK_SIZE : box.max[0],
                            y + Q_CHUNK_SIZE < box.max[1] ? y + Q_CHUNK_SIZE : box.max[1],
                            z + Q_CHUNK_SIZE < box.max[2] ? z + Q_CHUNK_SIZE : box.max[2]}};
                if (q_dc_mesh(p->terrain, b, Q_SURFACE_SOLID, (float)p->voxel_size, &out, scratch, err, sizeof err) != Q_OK ||
                    !q_array_reserve(&P, P.count + out.vertex_count * 3) || !q_array_reserve(&I, I.count + out.index_count)) {
                    ok = false;
                    break;
                }
                uint32_t base = (uint32_t)(P.count / 3);
                memcpy(P.data + P.count, out.positions, out.vertex_count * 3 * sizeof(float));
                P.count += out.vertex_count * 3;
                for (size_t i = 0; i < out.index_count; i++)
                    I.data[I.count++] = base + out.indices[i];
            }
    q_free(scratch, q_dc_scratch_bytes(piece_box));
    q_free(out.positions, vcap * 3 * sizeof(float));
    q_free(out.indices, icap * sizeof(uint32_t));
    if (!ok) {
        q_array_free(&P);
        q_array_free(&I);
        return false;
    }
    *res = (soup){P.data, I.data, P.count / 3, I.count, P.capacity, I.capacity};
    return true;
}

/* The grid-sort path; false when the batch does not qualify or memory runs
 * out (the caller then casts ray by ray). */
static bool batch_gridsort(q_terrain_physics *p, const double *rays, size_t n, double maxd, double *out,
                           size_t *hits)
{
    double mean[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        const double *d = rays + 6 * i + 3;
        double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        for (int k = 0; k < 3; k++)
            mean[k] += d[k] / len;
    }
    double ml = sqrt(mean[0] * mean[0] + mean[1] * mean[1] + mean[2] * mean[2]);
    if (!(ml > 0))
        return false;
    for (int k = 0; k < 3; k++)
        mean[k] /= ml;
    q_box tb;
    if (!q_terrain_bounds(p->terrain, &tb))
        return false;
    double vs = p->voxel_size, lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = INFINITY;
        hi[k] = -INFINITY;
    }
    for (size_t i = 0; i < n; i++) {
        const double *o = rays + 6 * i, *d = o + 3;
        double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        if ((d[0] * mean[0] + d[1] * mean[1] + d[2] * mean[2]) / len < 0.985) /* 10 degrees */
            return false;
        for (int k = 0; k < 3; k++) {
            double a = o[k], b = o[k] + d[k] / len * maxd;
            lo[k] = fmin(lo[k], fmin(a, b));
            hi[k] = fmax(hi[k], fmax(a, b));
        }
    }
    /* The voxels the segments can meet: their box within the terrain's,
     * grown by the two samples a cell's vertex depends on. */
    q_box box;
    for (int k = 0; k < 3; k++) {
        double a = fmax(floor(lo[k] / vs) - 2, (double)tb.min[k] - 2);
        double b = fmin(floor(hi[k] / vs) + 3, (double)tb.max[k] + 2);
        if (!(a < b))
            return false;
        box.min[k] = (int32_t)a;
        box.max[k] = (int32_t)b;
    }
    if (q_box_volume(box) > 64 * Q_DC_MAX_SAMPLES)
        return false;
    soup tris;
    if (!mesh_box(p, box, &tris))
        return false;
    q_gridsort *gs = NULL;
    char err[128];
    float D[3] = {(float)mean[0], (float)mean[1], (float)mean[2]};
    q_status st = q_gridsort_build(&gs, tris.pos, tris.nv, tris.idx, tris.ni, D, 512, err, sizeof err);
    free_soup(&tris);
    if (st != Q_OK)
        return false;
    float *fr = q_alloc(n * 7 * sizeof(float));
    if (!fr) {
        q_gridsort_free(gs);
        return false;
    }
    float *fo = fr, *fd = fr + 3 * n, *ft = fr + 6 * n;
    for (size_t i = 0; i < n; i++) {
        const double *o = rays + 6 * i, *d = o + 3;
        double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        for (int k = 0; k < 3; k++) {
            fo[3 * i + k] = (float)o[k];
            fd[3 * i + k] = (float)(d[k] / len);
        }
    }
    *hits = q_gridsort_raycast_batch(gs, fo, fd, n, (float)fmin(maxd, 1e30), ft);
    for (size_t i = 0; i < n; i++)
        out[i] = ft[i] < 0 ? -1.0 : (double)ft[i];
    q_free(fr, n * 7 * sizeof(float));
    q_gridsort_free(gs);
    p->gridsort_batches++;
    return true;
}

size_t q_terrain_physics_raycast_batch(q_terrain_physics *p, const double *rays, size_t n, double max_distance,
                                       unsigned flags, double *out)
{
    size_t hits = 0;
    if (flags == Q_RAY_SOLID && n >= Q_BATCH_GRIDSORT_MIN && max_distance >= 0 && q_terrain_physics_sync(p) &&
        batch_gridsort(p, rays, n, max_distance, out, &hits))
        return hits;
    for (size_t i = 0; i < n; i++) {
        q_ray_hit h;
        out[i] = flags && q_terrain_physics_raycast(p, rays + 6 * i, rays + 6 * i + 3, max_distance, flags, &h)
                     ? h.distance
                     : -1.0;
        hits += out[i] >= 0;
    }
    return hits;
}

/* ---- exact overlaps ---- */

/* Squared distance from p to triangle abc (Ericson, Real-Time Collision
 * Detection, 5.1.5). */
static double point_triangle_dist2(const double p[3], const double a[3], const double b[3], const double c[3])
{
    double ab[3], ac[3], ap[3], q[3];
    for (int k = 0; k < 3; k++) {
        ab[k] = b[k] - a[k];
        ac[k] = c[k] - a[k];
        ap[k] = p[k] - a[k];
    }
#define DOT(u, v) ((u)[0] * (v)[0] + (u)[1] * (v)[1] + (u)[2] * (v)[2])
    double d1 = DOT(ab, ap), d2 = DOT(ac, ap);
    if (d1 <= 0 && d2 <= 0) {
        memcpy(q, a, sizeof q);
        goto done;
    }
    double bp[3] = {p[0] - b[0], p[1] - b[1], p[2] - b[2]};
    double d3 = DOT(ab, bp), d4 = DOT(ac, bp);
    if (d3 >= 0 && d4 <= d3) {
        memcpy(q, b, sizeof q);
        goto done;
    }
    double vc = d1 * d4 - d3 * d2;
    if (vc <= 0 && d1 >= 0 && d3 <= 0) {
        double v = d1 / (d1 - d3);
        for (int k = 0; k < 3; k++)
            q[k] = a[k] + v * ab[k];
        goto done;
    }
    double cp[3] = {p[0] - c[0], p[1] - c[1], p[2] - c[2]};
    double d5 = DOT(ab, cp), d6 = DOT(ac, cp);
    if (d6 >= 0 && d5 <= d6) {
        memcpy(q, c, sizeof q);
        goto done;
    }
    double vb = d5 * d2 - d1 * d6;
    if (vb <= 0 && d2 >= 0 && d6 <= 0) {
        double w = d2 / (d2 - d6);
        for (int k = 0; k < 3; k++)
            q[k] = a[k] + w * ac[k];
        goto done;
    }
    double va = d3 * d6 - d5 * d4;
    if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
        double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        for (int k = 0; k < 3; k++)
            q[k] = b[k] + w * (c[k] - b[k]);
        goto done;
    }
    {
        double den = 1.0 / (va + vb + vc), v = vb * den, w = vc * den;
        for (int k = 0; k < 3; k++)
            q[k] = a[k] + ab[k] * v + ac[k] * w;
    }
done:;
    double d[3] = {p[0] - q[0], p[1] - q[1], p[2] - q[2]};
    return DOT(d, d);
}

/* Triangle against an axis-aligned box centred at the origin (separating
 * axis test: 3 box axes, the triangle normal, 9 edge cross products). */
static bool triangle_box(const double v0[3], const double v1[3], const double v2[3], const double h[3])
{
    const double *v[3] = {v0, v1, v2};
    for (int a = 0; a < 3; a++) {
        double mn = fmin(v0[a], fmin(v1[a], v2[a])), mx = fmax(v0[a], fmax(v1[a], v2[a]));
        if (mn > h[a] || mx < -h[a])
            return false;
    }
    double e[3][3];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            e[i][k] = v[(i + 1) % 3][k] - v[i][k];
    double n[3] = {e[0][1] * e[1][2] - e[0][2] * e[1][1], e[0][2] * e[1][0] - e[0][0] * e[1][2],
                   e[0][0] * e[1][1] - e[0][1] * e[1][0]};
    double dn = DOT(n, v0), rn = h[0] * fabs(n[0]) + h[1] * fabs(n[1]) + h[2] * fabs(n[2]);
    if (fabs(dn) > rn)
        return false;
    for (int i = 0; i < 3; i++)
        for (int a = 0; a < 3; a++) {
            double axis[3] = {0, 0, 0};
            axis[(a + 1) % 3] = -e[i][(a + 2) % 3];
            axis[(a + 2) % 3] = e[i][(a + 1) % 3];
            double p0 = DOT(axis, v0), p1 = DOT(axis, v1), p2 = DOT(axis, v2);
            double r = h[0] * fabs(axis[0]) + h[1] * fabs(axis[1]) + h[2] * fabs(axis[2]);
            if (fmin(p0, fmin(p1, p2)) > r || fmax(p0, fmax(p1, p2)) < -r)
                return false;
        }
    return true;
#undef DOT
}

typedef struct shape_query {
    bool sphere;
    double center[3]; /* world */
    double radius;
    double half[3];
} shape_query;

static bool shape_hits_triangles(q_terrain_physics *p, const q_cache_entry *e, int s, const shape_query *q)
{
    const q_chunk_mesh *m = &e->surface[s];
    if (m->triangle_count == 0)
        return false;
    double vs = p->voxel_size;
    double base[3] = {e->cx * Q_PHYS_CHUNK * vs, e->cy * Q_PHYS_CHUNK * vs, e->cz * Q_PHYS_CHUNK * vs};
    double c[3];
    float mn[3], mx[3];
    for (int k = 0; k < 3; k++) {
        c[k] = q->center[k] - base[k];
        double ext = q->sphere ? q->radius : q->half[k];
        mn[k] = (float)(c[k] - ext) - 1e-4f;
        mx[k] = (float)(c[k] + ext) + 1e-4f;
    }
    uint32_t tris[256];
    q_kd_mesh km = kd_mesh(p, m);
    size_t n = q_kdtree_query_aabb(&m->tree, &km, mn, mx, tris, 256);
    bool all = n > 256; /* more candidates than the buffer: test every triangle */
    size_t count = all ? m->triangle_count : n;
    for (size_t i = 0; i < count; i++) {
        uint32_t t = all ? (uint32_t)i : tris[i];
        double v[3][3];
        for (int j = 0; j < 3; j++) {
            mesh_vertex(p, m, m->indices[3 * t + j], v[j]);
            for (int a = 0; a < 3; a++)
                v[j][a] -= c[a];
        }
        if (q->sphere ? point_triangle_dist2((double[3]){0, 0, 0}, v[0], v[1], v[2]) <= q->radius * q->radius
                      : triangle_box(v[0], v[1], v[2], q->half))
            return true;
    }
    return false;
}

static bool point_inside(q_terrain_physics *p, const double pos[3], int s)
{
    double v[3] = {pos[0] / p->voxel_size, pos[1] / p->voxel_size, pos[2] / p->voxel_size};
    if (s == 0)
        return q_terrain_solid_density(p->terrain, v) >= 0.5;
    double f[3], sum = 0;
    int32_t i0[3];
    for (int a = 0; a < 3; a++) {
        double t = v[a] - 0.5, fl = floor(t);
        if (!(fl > -Q_TERRAIN_LIMIT && fl < Q_TERRAIN_LIMIT - 1))
            return false;
        i0[a] = (int32_t)fl;
        f[a] = t - fl;
    }
    for (int k = 0; k < 8; k++) {
        int dx = k & 1, dy = (k >> 1) & 1, dz = (k >> 2) & 1;
        q_voxel vox = q_terrain_get(p->terrain, i0[0] + dx, i0[1] + dy, i0[2] + dz);
        if (!p->liquid[vox.material] || vox.occupancy == 0)
            continue;
        sum += (dx ? f[0] : 1 - f[0]) * (dy ? f[1] : 1 - f[1]) * (dz ? f[2] : 1 - f[2]) * vox.occupancy / 255.0;
    }
    return sum >= 0.5;
}

/* One stored chunk of an overlap query; false when out of memory (the
 * caller then answers with the broadphase). */
static bool overlap_chunk(q_terrain_physics *p, const q_bp_entry *b, const shape_query *q, q_overlap bp,
                          q_overlap *r)
{
    if ((r->solid || b->solid_tag != Q_BP_MASK) && (r->water || b->water_tag != Q_BP_MASK))
        return true;
    q_cache_entry *e = cache_get(p, b->cx, b->cy, b->cz);
    if (!e)
        return false;
    if (!r->solid && b->solid_tag == Q_BP_MASK)
        r->solid = shape_hits_triangles(p, e, 0, q);
    if (!r->water && b->water_tag == Q_BP_MASK && bp.water)
        r->water = shape_hits_triangles(p, e, 1, q);
    return true;
}

static q_overlap overlap_shape(q_terrain_physics *p, const shape_query *q)
{
    q_overlap r = {false, false};
    double mn[3], mx[3];
    for (int k = 0; k < 3; k++) {
        double ext = q->sphere ? q->radius : q->half[k];
        mn[k] = q->center[k] - ext;
        mx[k] = q->center[k] + ext;
    }
    q_overlap bp = q_terrain_physics_broadphase(p, mn, mx);
    if (!bp.solid && !bp.water)
        return r;
    r.solid = bp.solid && point_inside(p, q->center, 0);
    r.water = bp.water && point_inside(p, q->center, 1);
    double vs = p->voxel_size;
    int64_t cmin[3], cmax[3];
    for (int k = 0; k < 3; k++) {
        double lim = (k == 1 ? Q_PHYS_LIMIT_Y : Q_PHYS_LIMIT) / Q_PHYS_CHUNK;
        cmin[k] = (int64_t)fmax(-lim, floor(mn[k] / vs / Q_PHYS_CHUNK - 1.0 / 16));
        cmax[k] = (int64_t)fmin(lim, floor(mx[k] / vs / Q_PHYS_CHUNK + 1.0 / 16));
    }
    /* A box spanning more chunks than are stored walks the stored entries
     * instead (a huge radius must not mean a huge loop). */
    double span = (double)(cmax[0] - cmin[0] + 1) * (double)(cmax[1] - cmin[1] + 1) * (double)(cmax[2] - cmin[2] + 1);
    if (span > (double)p->bp.count) {
        for (size_t i = 0; i < p->bp.count && !(r.solid && r.water); i++) {
            const q_bp_entry *b = &p->bp.data[i];
            if (b->cx >= cmin[0] && b->cx <= cmax[0] && b->cy >= cmin[1] && b->cy <= cmax[1] && b->cz >= cmin[2] &&
                b->cz <= cmax[2] && !overlap_chunk(p, b, q, bp, &r))
                return bp;
        }
        return r;
    }
    for (int64_t cz = cmin[2]; cz <= cmax[2]; cz++)
        for (int64_t cy = cmin[1]; cy <= cmax[1]; cy++)
            for (int64_t cx = cmin[0]; cx <= cmax[0]; cx++) {
                if (r.solid && r.water)
                    return r;
                const q_bp_entry *b = q_bp_find(p, (int32_t)cx, (int32_t)cy, (int32_t)cz);
                if (b && !overlap_chunk(p, b, q, bp, &r))
                    return bp;
            }
    return r;
}

q_overlap q_terrain_physics_overlap_sphere(q_terrain_physics *p, const double center[3], double radius)
{
    shape_query q = {true, {center[0], center[1], center[2]}, radius, {0, 0, 0}};
    return overlap_shape(p, &q);
}

q_overlap q_terrain_physics_overlap_box(q_terrain_physics *p, const double center[3], const double half[3])
{
    shape_query q = {false, {center[0], center[1], center[2]}, 0, {half[0], half[1], half[2]}};
    return overlap_shape(p, &q);
}

q_terrain_physics_stats q_terrain_physics_get_stats(q_terrain_physics *p)
{
    q_terrain_physics_sync(p);
    q_terrain_physics_stats s = {0};
    s.broadphase_chunks = p->bp.count;
    s.broadphase_bytes = p->bp.count * sizeof(q_bp_entry) + (size_t)q_hashmap_bytes(&p->bp_index);
    for (int k = 0; k < 2; k++)
        s.broadphase_bytes += (p->pool[k].slots.count - p->pool[k].free.count) * sizeof(q_mask_slot);
    s.cached_chunks = p->cache.count;
    s.gridsort_batches = p->gridsort_batches;
    s.cache_bytes = p->cache_bytes;
    for (size_t i = 0; i < p->cache.count; i++)
        for (int k = 0; k < 2; k++) {
            s.triangles += p->cache.data[i].surface[k].triangle_count;
            s.kd_nodes += p->cache.data[i].surface[k].tree.node_count;
        }
    return s;
}

const q_chunk_mesh *q_tp_chunk_mesh(q_terrain_physics *p, int32_t cx, int32_t cy, int32_t cz, int surface)
{
    q_cache_entry *e = cache_get(p, cx, cy, cz);
    return e ? &e->surface[surface ? 1 : 0] : NULL;
}
