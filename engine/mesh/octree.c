/* LOD meshes by clustering LOD0 vertices into chunk octree nodes: see
 * octree.h. Everything is keyed by integer cell coordinates, so the same
 * terrain and levels give the same mesh however the box is split. */
#include "mesh/octree.h"

#include "core/alloc.h"
#include "core/jobs.h"
#include "mesh/qef.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ---- growable arrays ---- */

typedef struct buf {
    void *p;
    size_t n, cap, elem;
} buf;

static bool buf_reserve(buf *b, size_t n)
{
    if (n <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < n)
        cap *= 2;
    void *p = q_realloc(b->p, b->cap * b->elem, cap * b->elem);
    if (!p)
        return false;
    b->p = p;
    b->cap = cap;
    return true;
}

static void *buf_push(buf *b)
{
    if (!buf_reserve(b, b->n + 1))
        return NULL;
    return (char *)b->p + b->elem * b->n++;
}

static void buf_free(buf *b)
{
    if (b->p)
        q_free(b->p, b->cap * b->elem);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* ---- hash of 4 x int64 keys -> uint32 ---- */

typedef struct hkey {
    int64_t k[4];
} hkey;

typedef struct hmap {
    hkey *keys;
    uint32_t *vals; /* UINT32_MAX = empty */
    size_t cap, count;
} hmap;

static uint64_t hash_key(const hkey *k)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 4; i++) {
        h ^= (uint64_t)k->k[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
    }
    return h ^ (h >> 33);
}

static bool hmap_init(hmap *m, size_t cap)
{
    m->cap = 64;
    while (m->cap < cap * 2)
        m->cap *= 2;
    m->count = 0;
    m->keys = q_alloc(m->cap * sizeof(hkey));
    m->vals = q_alloc(m->cap * sizeof(uint32_t));
    if (!m->keys || !m->vals)
        return false;
    memset(m->vals, 0xff, m->cap * sizeof(uint32_t));
    return true;
}

static void hmap_free(hmap *m)
{
    if (m->keys)
        q_free(m->keys, m->cap * sizeof(hkey));
    if (m->vals)
        q_free(m->vals, m->cap * sizeof(uint32_t));
    m->keys = NULL;
    m->vals = NULL;
}

static bool hmap_grow(hmap *m);

/* Slot of key k: *found tells whether it holds k; otherwise it is free.
 * Returns SIZE_MAX when out of memory. */
static size_t hmap_slot(hmap *m, const hkey *k, bool *found)
{
    if ((m->count + 1) * 2 > m->cap && !hmap_grow(m))
        return SIZE_MAX;
    size_t i = (size_t)hash_key(k) & (m->cap - 1);
    for (;;) {
        if (m->vals[i] == UINT32_MAX) {
            *found = false;
            return i;
        }
        if (memcmp(&m->keys[i], k, sizeof *k) == 0) {
            *found = true;
            return i;
        }
        i = (i + 1) & (m->cap - 1);
    }
}

static bool hmap_grow(hmap *m)
{
    hmap n;
    if (!hmap_init(&n, m->cap)) {
        hmap_free(&n);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->vals[i] != UINT32_MAX) {
            size_t j = (size_t)hash_key(&m->keys[i]) & (n.cap - 1);
            while (n.vals[j] != UINT32_MAX)
                j = (j + 1) & (n.cap - 1);
            n.keys[j] = m->keys[i];
            n.vals[j] = m->vals[i];
        }
    n.count = m->count;
    hmap_free(m);
    *m = n;
    return true;
}

/* ---- build ---- */

typedef struct leaf {
    int32_t cell[3];
    double pos[3]; /* voxel units, absolute */
    float normal[3];
    uint8_t material;
} leaf;

typedef struct node {
    int32_t min[3]; /* first cell */
    int level;
    q_qef qef;
    double nsum[3];
    uint8_t material;
    double leaf[3]; /* level 0: the leaf's own position */
    uint32_t out;   /* output vertex */
} node;

static int32_t floor_div(int32_t a, int32_t b)
{
    return (int32_t)(a >= 0 ? a / b : -((-(int64_t)a + b - 1) / b));
}

/* ---- LOD0 pieces (one per chunk of the box), cached between builds ---- */

typedef struct piece {
    int32_t chunk[3];
    q_box box;
    q_surface surface;
    bool valid;
    leaf *leaves;
    size_t nleaves;
    uint32_t *tris; /* local leaf indices, 3 per triangle */
    size_t ntris;
    q_status st;
} piece;

static void piece_clear(piece *p)
{
    if (p->leaves)
        q_free(p->leaves, p->nleaves * sizeof(leaf));
    if (p->tris)
        q_free(p->tris, p->ntris * 3 * sizeof(uint32_t));
    p->leaves = NULL;
    p->tris = NULL;
    p->nleaves = p->ntris = 0;
    p->valid = false;
}

/* Meshes one piece with dc.c (its own buffers: runs on worker threads). */
static void piece_build(const q_terrain *t, piece *p)
{
    /* Terrain chunks are 32^3 like ours: a piece whose chunk and neighbours
     * hold no voxel has no surface (it reads samples 2 beyond its box). */
    bool any = false;
    for (int dz = -1; dz <= 1 && !any; dz++)
        for (int dy = -1; dy <= 1 && !any; dy++)
            for (int dx = -1; dx <= 1 && !any; dx++)
                any = q_terrain_has_chunk(t, p->chunk[0] + dx, p->chunk[1] + dy, p->chunk[2] + dz);
    if (!any && Q_LOD_CHUNK == 32) {
        p->st = Q_OK;
        p->valid = true;
        return;
    }
    size_t nv = q_dc_vertex_bound(p->box), ni = q_dc_index_bound(p->box);
    size_t scratch_bytes = q_dc_scratch_bytes(p->box);
    size_t bytes = nv * (3 * sizeof(float) * 2 + 1 + 3 * sizeof(int32_t)) + ni * sizeof(uint32_t) + scratch_bytes + 16;
    unsigned char *mem = q_alloc(bytes);
    p->st = Q_ERR_MEMORY;
    if (!mem)
        return;
    q_dc_output o = {0};
    o.positions = (float *)mem;
    o.normals = o.positions + 3 * nv;
    o.cells = (int32_t *)(o.normals + 3 * nv);
    o.indices = (uint32_t *)(o.cells + 3 * nv);
    o.materials = (uint8_t *)(o.indices + ni);
    void *scratch = (void *)(((uintptr_t)(o.materials + nv) + 15) & ~(uintptr_t)15);
    o.vertex_capacity = nv;
    o.index_capacity = ni;
    memcpy(o.origin, p->box.min, sizeof o.origin);
    char err[128];
    p->st = q_dc_mesh(t, p->box, p->surface, 1.0f, &o, scratch, err, sizeof err);
    if (p->st == Q_OK && o.vertex_count) {
        p->leaves = q_alloc(o.vertex_count * sizeof(leaf));
        p->tris = o.index_count ? q_alloc(o.index_count * sizeof(uint32_t)) : NULL;
        if (!p->leaves || (o.index_count && !p->tris)) {
            if (p->leaves)
                q_free(p->leaves, o.vertex_count * sizeof(leaf));
            if (p->tris)
                q_free(p->tris, o.index_count * sizeof(uint32_t));
            p->leaves = NULL;
            p->tris = NULL;
            p->st = Q_ERR_MEMORY;
        } else {
            for (size_t v = 0; v < o.vertex_count; v++) {
                leaf *l = &p->leaves[v];
                for (int a = 0; a < 3; a++) {
                    l->cell[a] = o.cells[3 * v + a];
                    l->pos[a] = (double)o.positions[3 * v + a] + o.origin[a];
                    l->normal[a] = o.normals[3 * v + a];
                }
                l->material = o.materials[v];
            }
            if (o.index_count)
                memcpy(p->tris, o.indices, o.index_count * sizeof(uint32_t));
            p->nleaves = o.vertex_count;
            p->ntris = o.index_count / 3;
        }
    }
    if (p->st == Q_OK)
        p->valid = true;
    q_free(mem, bytes);
}

struct q_lod_cache {
    piece *pieces;
    size_t count, cap;
    hmap index; /* (chunk, surface) -> piece */
    /* leaves and triangles of the last build merged across pieces, reused
     * while no piece was remeshed and the box is the same */
    buf mleaves, mtris;
    q_box mbox;
    q_surface msurface;
    bool mvalid;
    uint64_t version;
    bool has_version;
    size_t last_remeshed;
};

q_lod_cache *q_lod_cache_create(void)
{
    q_lod_cache *c = q_calloc(1, sizeof(q_lod_cache));
    if (c) {
        c->mleaves.elem = sizeof(leaf);
        c->mtris.elem = 3 * sizeof(uint32_t);
        if (!hmap_init(&c->index, 64)) {
            hmap_free(&c->index);
            q_free(c, sizeof *c);
            return NULL;
        }
    }
    return c;
}

void q_lod_cache_destroy(q_lod_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->count; i++)
        piece_clear(&c->pieces[i]);
    if (c->pieces)
        q_free(c->pieces, c->cap * sizeof(piece));
    buf_free(&c->mleaves);
    buf_free(&c->mtris);
    hmap_free(&c->index);
    q_free(c, sizeof *c);
}

size_t q_lod_cache_remeshed(const q_lod_cache *c)
{
    return c ? c->last_remeshed : 0;
}

static void invalidate_box(void *ud, q_box b, uint64_t version)
{
    (void)version;
    q_lod_cache *c = ud;
    for (size_t i = 0; i < c->count; i++) {
        piece *p = &c->pieces[i];
        bool hit = true;
        for (int a = 0; a < 3; a++) /* a piece reads samples 2 beyond its box; 3 for safety */
            if (b.max[a] + 3 <= p->box.min[a] || b.min[a] - 3 >= p->box.max[a])
                hit = false;
        if (hit)
            piece_clear(p);
    }
}

typedef struct build_ctx {
    const q_terrain *t;
    piece **todo;
} build_ctx;

static void build_job(void *ctx, int i)
{
    build_ctx *b = ctx;
    piece_build(b->t, b->todo[i]);
}

static piece *find_piece(q_lod_cache *c, const int32_t ch[3], q_box box, q_surface s)
{
    hkey k = {{ch[0], ch[1], ch[2], (int64_t)s}};
    bool found;
    size_t slot = hmap_slot(&c->index, &k, &found);
    if (slot == SIZE_MAX)
        return NULL;
    if (found) {
        piece *p = &c->pieces[c->index.vals[slot]];
        if (memcmp(&p->box, &box, sizeof box) != 0) {
            piece_clear(p);
            p->box = box;
        }
        return p;
    }
    if (c->count == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        piece *np = q_realloc(c->pieces, c->cap * sizeof(piece), cap * sizeof(piece));
        if (!np)
            return NULL;
        c->pieces = np;
        c->cap = cap;
    }
    c->index.keys[slot] = k;
    c->index.vals[slot] = (uint32_t)c->count;
    c->index.count++;
    piece *p = &c->pieces[c->count++];
    memset(p, 0, sizeof *p);
    memcpy(p->chunk, ch, sizeof p->chunk);
    p->box = box;
    p->surface = s;
    return p;
}

q_status q_lod_build(const q_terrain *t, q_box box, q_surface surface, float scale, q_lod_level_fn level, void *ud,
                     q_lod_result *out, char *err, size_t errlen)
{
    q_lod_cache *c = q_lod_cache_create();
    if (!c) {
        memset(out, 0, sizeof *out);
        snprintf(err, errlen, "out of memory");
        return Q_ERR_MEMORY;
    }
    q_status st = q_lod_build_cached(c, NULL, t, box, surface, scale, level, ud, out, err, errlen);
    q_lod_cache_destroy(c);
    return st;
}

q_status q_lod_build_cached(q_lod_cache *cache, q_jobs *jobs, const q_terrain *t, q_box box, q_surface surface,
                            float scale, q_lod_level_fn level, void *ud, q_lod_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    for (int a = 0; a < 3; a++)
        if (box.min[a] > box.max[a] || box.min[a] < -Q_TERRAIN_LIMIT + 2 || box.max[a] > Q_TERRAIN_LIMIT - 2) {
            snprintf(err, errlen, "box must satisfy min <= max within +-%d voxels", Q_TERRAIN_LIMIT - 2);
            return Q_ERR_ARGUMENT;
        }
    q_status st = Q_OK;
    buf leaves = {.elem = sizeof(leaf)}, tris = {.elem = 3 * sizeof(uint32_t)};
    buf nodes = {.elem = sizeof(node)}, leaf_node = {.elem = sizeof(uint32_t)};
    buf final = {.elem = 4 * sizeof(uint32_t)}; /* a, b, c, chunk-interior level or -1 */
    buf used = {.elem = sizeof(piece *)};
    hmap vmap = {0}, nmap = {0}, tmap = {0};
    if (!hmap_init(&vmap, 1024) || !hmap_init(&nmap, 1024) || !hmap_init(&tmap, 1024)) {
        st = Q_ERR_MEMORY;
        goto fail;
    }

    /* 1. LOD0 leaves and triangles of each chunk piece: from the cache
     * unless an edit touched it since the last build; stale pieces are
     * remeshed in parallel. */
    uint64_t version = q_terrain_version(t);
    if (cache->has_version && version != cache->version &&
        !q_terrain_changes_since(t, cache->version, invalidate_box, cache))
        for (size_t i = 0; i < cache->count; i++)
            piece_clear(&cache->pieces[i]);
    cache->version = version;
    cache->has_version = true;
    int32_t c0[3], c1[3];
    for (int a = 0; a < 3; a++) {
        c0[a] = floor_div(box.min[a], Q_LOD_CHUNK);
        c1[a] = floor_div(box.max[a] - 1, Q_LOD_CHUNK);
    }
    {
        uint64_t n = 1;
        for (int a = 0; a < 3; a++)
            n *= (uint64_t)((int64_t)c1[a] - c0[a] + 1);
        if (q_box_volume(box) > 0 && n > Q_LOD_MAX_CHUNKS) {
            snprintf(err, errlen, "box spans %llu chunks of %d^3, over the limit of %d",
                     (unsigned long long)n, Q_LOD_CHUNK, Q_LOD_MAX_CHUNKS);
            st = Q_ERR_TOO_LARGE;
            goto fail;
        }
    }
    if (q_box_volume(box) > 0)
        for (int32_t cz = c0[2]; cz <= c1[2]; cz++)
            for (int32_t cy = c0[1]; cy <= c1[1]; cy++)
                for (int32_t cx = c0[0]; cx <= c1[0]; cx++) {
                    int32_t cc[3] = {cx, cy, cz};
                    q_box p;
                    for (int a = 0; a < 3; a++) {
                        int32_t lo = cc[a] * Q_LOD_CHUNK, hi = lo + Q_LOD_CHUNK;
                        p.min[a] = lo > box.min[a] ? lo : box.min[a];
                        p.max[a] = hi < box.max[a] ? hi : box.max[a];
                    }
                    piece *pc = find_piece(cache, cc, p, surface);
                    piece **slot = pc ? buf_push(&used) : NULL;
                    if (!slot) {
                        st = Q_ERR_MEMORY;
                        goto fail;
                    }
                    *slot = pc;
                }
    /* find_piece may move the array: take the pointers again */
    {
        size_t k = 0;
        for (int32_t cz = c0[2]; q_box_volume(box) > 0 && cz <= c1[2]; cz++)
            for (int32_t cy = c0[1]; cy <= c1[1]; cy++)
                for (int32_t cx = c0[0]; cx <= c1[0]; cx++) {
                    int32_t cc[3] = {cx, cy, cz};
                    q_box p;
                    for (int a = 0; a < 3; a++) {
                        int32_t lo = cc[a] * Q_LOD_CHUNK, hi = lo + Q_LOD_CHUNK;
                        p.min[a] = lo > box.min[a] ? lo : box.min[a];
                        p.max[a] = hi < box.max[a] ? hi : box.max[a];
                    }
                    ((piece **)used.p)[k++] = find_piece(cache, cc, p, surface);
                }
    }
    buf todo = {.elem = sizeof(piece *)};
    for (size_t i = 0; i < used.n; i++) {
        piece *pc = ((piece **)used.p)[i];
        if (!pc->valid) {
            piece **s = buf_push(&todo);
            if (!s) {
                buf_free(&todo);
                st = Q_ERR_MEMORY;
                goto fail;
            }
            *s = pc;
        }
    }
    build_ctx bc = {t, todo.p};
    if (todo.n)
        q_jobs_for(jobs, (int)todo.n, build_job, &bc);
    cache->last_remeshed = todo.n;
    size_t todo_n = todo.n;
    for (size_t i = 0; i < todo.n && st == Q_OK; i++)
        if (((piece **)todo.p)[i]->st != Q_OK)
            st = ((piece **)todo.p)[i]->st;
    buf_free(&todo);
    if (st != Q_OK) {
        snprintf(err, errlen, st == Q_ERR_MEMORY ? "out of memory" : "meshing a chunk failed");
        goto fail;
    }
    out->remeshed_chunks = cache->last_remeshed;
    bool reuse = cache->mvalid && todo_n == 0 && memcmp(&cache->mbox, &box, sizeof box) == 0 &&
                 cache->msurface == surface;
    if (reuse) {
        leaves = cache->mleaves;
        tris = cache->mtris;
        cache->mleaves = (buf){.elem = sizeof(leaf)};
        cache->mtris = (buf){.elem = 3 * sizeof(uint32_t)};
        goto merged;
    }
    {
        size_t nl = 0;
        for (size_t i = 0; i < used.n; i++)
            nl += ((piece **)used.p)[i]->nleaves;
        hmap_free(&vmap);
        if (!hmap_init(&vmap, nl + 16)) {
            st = Q_ERR_MEMORY;
            goto fail;
        }
    }

    /* Leaves shared by neighbouring pieces are one leaf (same cell, same
     * snapped position). */
    for (size_t i = 0; i < used.n; i++) {
        const piece *pc = ((piece **)used.p)[i];
        uint32_t *ids = q_alloc((pc->nleaves + 1) * sizeof(uint32_t));
        if (!ids) {
            st = Q_ERR_MEMORY;
            goto fail;
        }
        for (size_t v = 0; v < pc->nleaves; v++) {
            const leaf *src = &pc->leaves[v];
            hkey k = {{src->cell[0], src->cell[1], src->cell[2], 0}};
            for (int a = 0; a < 3; a++) {
                int64_t q = (int64_t)llround((src->pos[a] - src->cell[a] - 0.5) * Q_DC_GRID);
                k.k[3] |= (q & 0xfffff) << (20 * a);
            }
            bool found;
            size_t s = hmap_slot(&vmap, &k, &found);
            leaf *l = found || s == SIZE_MAX ? NULL : buf_push(&leaves);
            if (s == SIZE_MAX || (!found && !l)) {
                q_free(ids, (pc->nleaves + 1) * sizeof(uint32_t));
                st = Q_ERR_MEMORY;
                goto fail;
            }
            if (!found) {
                *l = *src;
                vmap.keys[s] = k;
                vmap.vals[s] = (uint32_t)(leaves.n - 1);
                vmap.count++;
            }
            ids[v] = vmap.vals[s];
        }
        for (size_t i3 = 0; i3 < pc->ntris; i3++) {
            uint32_t *tr = buf_push(&tris);
            if (!tr) {
                q_free(ids, (pc->nleaves + 1) * sizeof(uint32_t));
                st = Q_ERR_MEMORY;
                goto fail;
            }
            for (int k = 0; k < 3; k++)
                tr[k] = ids[pc->tris[3 * i3 + k]];
        }
        q_free(ids, (pc->nleaves + 1) * sizeof(uint32_t));
    }
merged:
    out->lod0_triangles = tris.n;
    hmap_free(&nmap);
    hmap_free(&tmap);
    if (!hmap_init(&nmap, leaves.n / 16 + 16) || !hmap_init(&tmap, tris.n / 16 + 16)) {
        st = Q_ERR_MEMORY;
        goto fail;
    }

    /* 2. Octree nodes: each leaf goes to its node at its chunk's level; the
     * node's QEF is the sum of its leaves' planes (= of its children's). */
    if (!buf_reserve(&leaf_node, leaves.n + 1)) {
        st = Q_ERR_MEMORY;
        goto fail;
    }
    for (size_t i = 0; i < leaves.n; i++) {
        const leaf *l = (const leaf *)leaves.p + i;
        int32_t ch[3];
        for (int a = 0; a < 3; a++)
            ch[a] = floor_div(l->cell[a], Q_LOD_CHUNK);
        int L = level ? level(ud, ch) : 0;
        L = L < 0 ? 0 : L > Q_LOD_MAX_LEVEL ? Q_LOD_MAX_LEVEL : L;
        hkey k;
        if (L == 0)
            k = (hkey){{-1, (int64_t)i, 0, 0}}; /* leaves stay themselves (several per cell possible) */
        else
            k = (hkey){{L, floor_div(l->cell[0], 1 << L), floor_div(l->cell[1], 1 << L), floor_div(l->cell[2], 1 << L)}};
        bool found;
        size_t s = hmap_slot(&nmap, &k, &found);
        if (s == SIZE_MAX) {
            st = Q_ERR_MEMORY;
            goto fail;
        }
        if (!found) {
            node *n = buf_push(&nodes);
            if (!n) {
                st = Q_ERR_MEMORY;
                goto fail;
            }
            memset(n, 0, sizeof *n);
            n->level = L;
            for (int a = 0; a < 3; a++)
                n->min[a] = L ? (int32_t)k.k[1 + a] * (1 << L) : l->cell[a];
            n->material = l->material;
            memcpy(n->leaf, l->pos, sizeof n->leaf);
            n->out = UINT32_MAX;
            q_qef_clear(&n->qef);
            nmap.keys[s] = k;
            nmap.vals[s] = (uint32_t)(nodes.n - 1);
            nmap.count++;
        }
        node *n = (node *)nodes.p + nmap.vals[s];
        double p[3], nn[3];
        for (int a = 0; a < 3; a++) {
            p[a] = l->pos[a] - (n->min[a] + 0.5); /* relative to the node's first corner */
            nn[a] = l->normal[a];
            n->nsum[a] += nn[a];
        }
        q_qef_add(&n->qef, p, nn);
        ((uint32_t *)leaf_node.p)[i] = nmap.vals[s];
    }

    /* 3. Triangles through the nodes: drop collapsed ones, cancel pairs of
     * opposite orientation (net count per vertex triple). */
    buf net = {.elem = sizeof(int32_t)}, keyed = {.elem = 3 * sizeof(uint32_t)};
    for (size_t i = 0; i < tris.n; i++) {
        const uint32_t *tr = (const uint32_t *)tris.p + 3 * i;
        uint32_t v[3];
        for (int k = 0; k < 3; k++)
            v[k] = ((uint32_t *)leaf_node.p)[tr[k]];
        if (v[0] == v[1] || v[1] == v[2] || v[0] == v[2])
            continue;
        /* rotate the smallest first; then orientation is whether v1 < v2 */
        while (v[0] > v[1] || v[0] > v[2]) {
            uint32_t s0 = v[0];
            v[0] = v[1];
            v[1] = v[2];
            v[2] = s0;
        }
        int sign = v[1] < v[2] ? 1 : -1;
        hkey k = {{v[0], v[1] < v[2] ? v[1] : v[2], v[1] < v[2] ? v[2] : v[1], 0}};
        bool found;
        size_t s = hmap_slot(&tmap, &k, &found);
        if (s == SIZE_MAX) {
            buf_free(&net);
            buf_free(&keyed);
            st = Q_ERR_MEMORY;
            goto fail;
        }
        if (!found) {
            int32_t *c = buf_push(&net);
            uint32_t *kk = buf_push(&keyed);
            if (!c || !kk) {
                buf_free(&net);
                buf_free(&keyed);
                st = Q_ERR_MEMORY;
                goto fail;
            }
            *c = 0;
            kk[0] = (uint32_t)k.k[0];
            kk[1] = (uint32_t)k.k[1];
            kk[2] = (uint32_t)k.k[2];
            tmap.keys[s] = k;
            tmap.vals[s] = (uint32_t)(net.n - 1);
            tmap.count++;
        }
        ((int32_t *)net.p)[tmap.vals[s]] += sign;
    }
    for (size_t i = 0; i < net.n; i++) {
        int32_t c = ((int32_t *)net.p)[i];
        const uint32_t *kk = (const uint32_t *)keyed.p + 3 * i;
        for (int32_t r = 0; r < (c < 0 ? -c : c); r++) {
            uint32_t *f = buf_push(&final);
            if (!f) {
                buf_free(&net);
                buf_free(&keyed);
                st = Q_ERR_MEMORY;
                goto fail;
            }
            f[0] = kk[0];
            f[1] = c > 0 ? kk[1] : kk[2];
            f[2] = c > 0 ? kk[2] : kk[1];
            /* chunk-interior when all three nodes lie in one chunk */
            int32_t ch[3][3];
            for (int k = 0; k < 3; k++) {
                const node *n = (const node *)nodes.p + f[k];
                for (int a = 0; a < 3; a++)
                    ch[k][a] = floor_div(n->min[a], Q_LOD_CHUNK);
            }
            bool same = memcmp(ch[0], ch[1], sizeof ch[0]) == 0 && memcmp(ch[0], ch[2], sizeof ch[0]) == 0;
            f[3] = same ? (uint32_t)((const node *)nodes.p + f[0])->level : UINT32_MAX;
        }
    }
    buf_free(&net);
    buf_free(&keyed);

    /* 4. Output: chunk triangles first, then seams; vertices are the used
     * nodes, solved and clamped to their cubes. */
    size_t nout = 0;
    for (size_t i = 0; i < final.n; i++) {
        const uint32_t *f = (const uint32_t *)final.p + 4 * i;
        for (int k = 0; k < 3; k++) {
            node *n = (node *)nodes.p + f[k];
            if (n->out == UINT32_MAX)
                n->out = (uint32_t)nout++;
        }
        if (f[3] == UINT32_MAX)
            out->seam_triangles++;
        else {
            out->chunk_triangles++;
            out->triangles_per_level[f[3]]++;
        }
    }
    if (final.n) {
        q_mesh *m = q_mesh_create(nout, 3 * final.n, true, true);
        if (!m) {
            st = Q_ERR_MEMORY;
            goto fail;
        }
        for (size_t i = 0; i < nodes.n; i++) {
            const node *n = (const node *)nodes.p + i;
            if (n->out == UINT32_MAX)
                continue;
            double v[3];
            q_qef_solve(&n->qef, v);
            double size = (double)(1 << n->level);
            double len = sqrt(n->nsum[0] * n->nsum[0] + n->nsum[1] * n->nsum[1] + n->nsum[2] * n->nsum[2]);
            for (int a = 0; a < 3; a++) {
                double l = v[a] < 0 ? 0 : v[a] > size ? size : v[a];
                double p = n->level == 0 ? n->leaf[a] : n->min[a] + 0.5 + l; /* a leaf stays itself */
                m->positions[3 * n->out + a] = (float)(p * scale);
                m->normals[3 * n->out + a] = len > 0 ? (float)(n->nsum[a] / len) : 0.0f;
            }
            m->materials[n->out] = n->material;
        }
        size_t w = 0;
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < final.n; i++) {
                const uint32_t *f = (const uint32_t *)final.p + 4 * i;
                if ((f[3] == UINT32_MAX) != (pass == 1))
                    continue;
                for (int k = 0; k < 3; k++)
                    m->indices[w++] = ((const node *)nodes.p + f[k])->out;
            }
        out->mesh = m;
    }

fail:
    if (st == Q_ERR_MEMORY)
        snprintf(err, errlen, "out of memory");
    buf_free(&used);
    buf_free(&cache->mleaves);
    buf_free(&cache->mtris);
    cache->mvalid = false;
    if (st == Q_OK) { /* keep the merged LOD0 data for the next build */
        cache->mleaves = leaves;
        cache->mtris = tris;
        cache->mbox = box;
        cache->msurface = surface;
        cache->mvalid = true;
    } else {
        buf_free(&leaves);
        buf_free(&tris);
    }
    buf_free(&nodes);
    buf_free(&leaf_node);
    buf_free(&final);
    hmap_free(&vmap);
    hmap_free(&nmap);
    hmap_free(&tmap);
    return st;
}
