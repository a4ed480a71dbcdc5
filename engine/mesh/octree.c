/* LOD meshes by clustering LOD0 vertices into chunk octree nodes: see
 * octree.h. Everything is keyed by integer cell coordinates, so the same
 * terrain and levels give the same mesh however the box is split, in which
 * order blocks were rebuilt or on how many threads.
 *
 * Three caches, each entry rebuilt only when what it was built from changed
 * (compared by stamps, never by time):
 *   piece  (chunk)  LOD0 leaves and triangles of the quads the chunk owns
 *                   (dc.h ownership); stale after an edit near it.
 *   block  (chunk)  the chunk's octree nodes at its level and its interior
 *                   triangles; built from the leaves of its cells, which the
 *                   pieces of chunk + {0,1}^3 hold (a quad owned at sample p
 *                   joins cells p - {0,1} across its edge).
 *   seam   (chunk M) the triangles joining nodes of different chunks whose
 *                   componentwise smallest chunk is M: they come from the
 *                   pieces of M + {0,1}^3 and join the blocks of M + {0,1}^3.
 * A triangle's node triple fixes the chunks it touches, so opposite copies
 * always meet in the same block or seam and cancel there as they would in one
 * global pass. */
#include "mesh/octree.h"

#include "core/alloc.h"
#include "core/jobs.h"
#include "mesh/qef.h"
#include "mesh/simplify.h"

#include <assert.h>
#include <math.h>
#include <stdatomic.h>
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

/* ---- LOD0 leaves ---- */

typedef struct leaf {
    int32_t cell[3];
    double pos[3]; /* voxel units, absolute */
    float normal[3];
    uint8_t material;
} leaf;

static int32_t floor_div(int32_t a, int32_t b)
{
    return (int32_t)(a >= 0 ? a / b : -((-(int64_t)a + b - 1) / b));
}

/* Offsets within a 2x2x2 group of chunks are coded in 3 bits, bit a set for
 * +1 on axis a. Leaves of a piece lie in its chunk + {-1,0}^3: bucket b holds
 * those at offset bit(b) - 1, so bucket 7 is the piece's own chunk. */
#define OWN 7

static int32_t bucket_offset(int b, int a)
{
    return ((b >> a) & 1) - 1;
}

/* ---- pieces: LOD0 of one chunk's quads ---- */

typedef struct piece {
    int32_t chunk[3];
    q_box box;
    q_surface surface;
    bool valid;
    uint64_t stamp; /* new on every rebuild */
    leaf *leaves;   /* sorted by bucket */
    size_t nleaves;
    uint32_t *tris; /* local leaf indices, 3 per triangle, sorted by group */
    size_t ntris;
    /* leaves of bucket b: [lstart[b], lstart[b + 1]); triangles of group g:
     * [tstart[g], tstart[g + 1]), g = OWN for triangles inside the chunk,
     * else the seam chunk's offset coded as a bucket */
    uint32_t lstart[9], tstart[9];
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
    memset(p->lstart, 0, sizeof p->lstart);
    memset(p->tstart, 0, sizeof p->tstart);
    p->valid = false;
}

static int leaf_bucket(const piece *p, const int32_t cell[3])
{
    int b = 0;
    for (int a = 0; a < 3; a++) {
        int32_t d = floor_div(cell[a], Q_LOD_CHUNK) - p->chunk[a];
        assert(d == -1 || d == 0); /* quads join cells p - {0,1} (dc.h) */
        b |= (d + 1) << a;
    }
    return b;
}

static int bucket_of_index(const piece *p, uint32_t li)
{
    int b = 0;
    while (li >= p->lstart[b + 1])
        b++;
    return b;
}

/* Sorts the leaves by bucket and the triangles by group (counting sorts, so
 * the order inside each stays dc.c's). */
static bool piece_sort(piece *p, const q_dc_output *o)
{
    size_t nv = o->vertex_count, nt = o->index_count / 3;
    uint32_t *remap = q_alloc((nv + 1) * sizeof(uint32_t));
    uint8_t *tb = q_alloc(nt + 1);
    if (!remap || !tb) {
        q_free(remap, (nv + 1) * sizeof(uint32_t));
        q_free(tb, nt + 1);
        return false;
    }
    uint32_t count[9] = {0};
    for (size_t v = 0; v < nv; v++) {
        int b = leaf_bucket(p, &o->cells[3 * v]);
        remap[v] = (uint32_t)b;
        count[b + 1]++;
    }
    for (int b = 0; b < 8; b++)
        count[b + 1] += count[b];
    memcpy(p->lstart, count, sizeof count);
    for (size_t v = 0; v < nv; v++) {
        uint32_t at = count[remap[v]]++;
        leaf *l = &p->leaves[at];
        for (int a = 0; a < 3; a++) {
            l->cell[a] = o->cells[3 * v + a];
            l->pos[a] = (double)o->positions[3 * v + a] + o->origin[a];
            l->normal[a] = o->normals[3 * v + a];
        }
        l->material = o->materials[v];
        remap[v] = at;
    }
    uint32_t tc[9] = {0};
    for (size_t t = 0; t < nt; t++) {
        int32_t lo[3] = {0, 0, 0};
        bool own = true;
        for (int k = 0; k < 3; k++) {
            int b = bucket_of_index(p, remap[o->indices[3 * t + k]]);
            own = own && b == OWN;
            for (int a = 0; a < 3; a++)
                lo[a] = bucket_offset(b, a) < lo[a] ? bucket_offset(b, a) : lo[a];
        }
        int g = own ? OWN : (lo[0] + 1) | (lo[1] + 1) << 1 | (lo[2] + 1) << 2;
        tb[t] = (uint8_t)g;
        tc[g + 1]++;
    }
    for (int g = 0; g < 8; g++)
        tc[g + 1] += tc[g];
    memcpy(p->tstart, tc, sizeof tc);
    for (size_t t = 0; t < nt; t++) {
        uint32_t at = tc[tb[t]]++;
        for (int k = 0; k < 3; k++)
            p->tris[3 * at + k] = remap[o->indices[3 * t + k]];
    }
    q_free(remap, (nv + 1) * sizeof(uint32_t));
    q_free(tb, nt + 1);
    return true;
}

/* Meshes one piece with dc.c (its own buffers: runs on worker threads). */
static void piece_build(const q_terrain *t, piece *p)
{
    piece_clear(p);
    /* Terrain chunks are 32^3 like ours: a piece whose chunk and neighbours
     * hold no voxel has no surface (it reads samples 2 beyond its box). */
    bool any = false;
    for (int dz = -1; dz <= 1 && !any; dz++)
        for (int dy = -1; dy <= 1 && !any; dy++)
            for (int dx = -1; dx <= 1 && !any; dx++)
                any = q_terrain_has_chunk(t, p->chunk[0] + dx, p->chunk[1] + dy, p->chunk[2] + dz);
    if (!any && Q_LOD_CHUNK == Q_CHUNK_SIZE) {
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
        p->nleaves = o.vertex_count;
        p->ntris = o.index_count / 3;
        if (!p->leaves || (o.index_count && !p->tris) || !piece_sort(p, &o)) {
            piece_clear(p);
            p->st = Q_ERR_MEMORY;
        }
    }
    if (p->st == Q_OK)
        p->valid = true;
    q_free(mem, bytes);
}

/* ---- cancelling triangles through nodes ---- */

/* Appends the triangles in[0..n) (vertex ids, 3 each) to out after dropping
 * collapsed ones and cancelling copies of opposite orientation: a vertex
 * triple's net count of copies is kept, in order of first appearance. */
static bool cancel_triangles(const uint32_t *in, size_t n, buf *out)
{
    hmap tmap;
    buf net = {.elem = sizeof(int32_t)}, keyed = {.elem = 3 * sizeof(uint32_t)};
    bool ok = hmap_init(&tmap, n / 2 + 16);
    for (size_t i = 0; i < n && ok; i++) {
        uint32_t v[3] = {in[3 * i], in[3 * i + 1], in[3 * i + 2]};
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
            ok = false;
            break;
        }
        if (!found) {
            int32_t *c = buf_push(&net);
            uint32_t *kk = buf_push(&keyed);
            if (!c || !kk) {
                ok = false;
                break;
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
    for (size_t i = 0; i < net.n && ok; i++) {
        int32_t c = ((int32_t *)net.p)[i];
        const uint32_t *kk = (const uint32_t *)keyed.p + 3 * i;
        for (int32_t r = 0; r < (c < 0 ? -c : c) && ok; r++) {
            uint32_t *f = buf_push(out);
            if (!f) {
                ok = false;
                break;
            }
            f[0] = kk[0];
            f[1] = c > 0 ? kk[1] : kk[2];
            f[2] = c > 0 ? kk[2] : kk[1];
        }
    }
    buf_free(&net);
    buf_free(&keyed);
    hmap_free(&tmap);
    return ok;
}

/* ---- blocks: one chunk's octree nodes at its level ---- */

typedef struct block {
    int32_t chunk[3];
    q_surface surface;
    bool valid;
    int level;
    float scale;
    bool collapse; /* built with Q_LOD_COLLAPSE (simplify.h) */
    uint64_t deps[8]; /* stamps of the pieces of chunk + offset o (0: none) */
    uint64_t stamp;   /* new on every rebuild */
    size_t nnodes;
    float *pos, *nrm; /* 3 per node, voxels * scale */
    uint8_t *mat;
    uint32_t *tris; /* interior triangles (node ids), copies repeated */
    size_t ntris;
    /* node of each leaf of bucket OWN ^ o of piece chunk + o (its leaves in
     * this chunk), by index within that bucket */
    uint32_t *map[8];
    uint32_t nmap[8];
    q_status st;
} block;

static void block_clear(block *b)
{
    if (b->pos)
        q_free(b->pos, b->nnodes * 3 * sizeof(float));
    if (b->nrm)
        q_free(b->nrm, b->nnodes * 3 * sizeof(float));
    if (b->mat)
        q_free(b->mat, b->nnodes);
    if (b->tris)
        q_free(b->tris, b->ntris * 3 * sizeof(uint32_t));
    for (int o = 0; o < 8; o++) {
        if (b->map[o])
            q_free(b->map[o], b->nmap[o] * sizeof(uint32_t));
        b->map[o] = NULL;
        b->nmap[o] = 0;
    }
    b->pos = b->nrm = NULL;
    b->mat = NULL;
    b->tris = NULL;
    b->nnodes = b->ntris = 0;
    b->valid = false;
}

typedef struct node {
    int32_t min[3]; /* first cell */
    q_qef qef;
    double nsum[3];
    uint8_t material;
    double leaf[3]; /* level 0: the leaf's own position */
    bool single;    /* a leaf kept as itself at level > 0 (Q_LOD_COLLAPSE) */
} node;

/* Leaves shared by neighbouring pieces are one leaf: same cell, same snapped
 * position (dc.h: pieces give bit-identical vertices). */
static hkey leaf_key(const leaf *l)
{
    hkey k = {{l->cell[0], l->cell[1], l->cell[2], 0}};
    for (int a = 0; a < 3; a++) {
        int64_t q = (int64_t)llround((l->pos[a] - l->cell[a] - 0.5) * Q_DC_GRID);
        k.k[3] |= (q & 0xfffff) << (20 * a);
    }
    return k;
}

static bool block_collapse(block *b, buf *tris, const buf *nodes, const piece *own, const uint32_t *cid);

/* Builds block b at `level` from the pieces in[o] of chunk + o (NULL where
 * none). Each leaf goes to its node (level 0: itself); a node's QEF is the sum
 * of its leaves' planes, solved relative to the node and clamped to it.
 * With collapse (level > 0), only nodes on the chunk's outer layer of nodes
 * are clustered (seams join only leaves of cells on the chunk's faces, which
 * all fall there); the other leaves stay themselves and the interior is then
 * edge-collapsed with the clustered nodes locked (block_collapse). */
static void block_build(block *b, piece *const in[8], int level, float scale, bool collapse)
{
    block_clear(b);
    b->st = Q_ERR_MEMORY;
    b->level = level;
    b->scale = scale;
    b->collapse = collapse;
    /* from node size 8 on, nearly every node of a 32^3 chunk touches a face
     * (locked): collapse could not reach clustering's count there */
    collapse = collapse && level > 0 && level <= 2;
    size_t total = 0;
    for (int o = 0; o < 8; o++)
        if (in[o])
            total += in[o]->lstart[(OWN ^ o) + 1] - in[o]->lstart[OWN ^ o];
    buf nodes = {.elem = sizeof(node)}, tris = {.elem = 3 * sizeof(uint32_t)}, mapped = {.elem = 3 * sizeof(uint32_t)};
    hmap lmap = {0};
    uint32_t *cid = NULL; /* collapse: grid node of each leaf of in[0]'s bucket OWN */
    /* nodes of a level > 0 block by position: (32 >> level)^3 cells */
    int side = Q_LOD_CHUNK >> level;
    size_t gbytes = level ? (size_t)side * side * side * sizeof(uint32_t) : 0;
    uint32_t *grid = level ? q_alloc(gbytes) : NULL;
    if (!hmap_init(&lmap, total / 4 + 16) || (level && !grid))
        goto done;
    if (grid)
        memset(grid, 0xff, gbytes);
    for (int o = 0; o < 8; o++) {
        const piece *p = in[o];
        if (!p)
            continue;
        int bk = OWN ^ o;
        uint32_t first = p->lstart[bk], n = p->lstart[bk + 1] - first;
        if (!n)
            continue;
        b->map[o] = q_alloc(n * sizeof(uint32_t));
        if (!b->map[o])
            goto done;
        b->nmap[o] = n;
        if (collapse && o == 0 && !(cid = q_alloc(n * sizeof(uint32_t))))
            goto done;
        for (uint32_t v = 0; v < n; v++) {
            const leaf *l = &p->leaves[first + v];
            int32_t local[3];
            bool border = false;
            for (int a = 0; a < 3; a++) {
                local[a] = l->cell[a] - b->chunk[a] * Q_LOD_CHUNK;
                border = border || local[a] == Q_LOD_CHUNK - 1;
            }
            if (cid && o == 0)
                cid[v] = (uint32_t)(((size_t)(local[2] >> level) * side + (size_t)(local[1] >> level)) * side +
                                    (size_t)(local[0] >> level));
            /* A quad owned at sample p joins cells p - {0,1} across its
             * edge, so only cells on the chunk's upper faces are used by
             * quads of other pieces: only their leaves can come twice. */
            hkey lk;
            size_t s = SIZE_MAX;
            if (border) {
                bool found;
                lk = leaf_key(l);
                s = hmap_slot(&lmap, &lk, &found);
                if (s == SIZE_MAX)
                    goto done;
                if (found) {
                    b->map[o][v] = lmap.vals[s];
                    continue;
                }
            }
            uint32_t id = (uint32_t)nodes.n; /* level 0: leaves stay themselves (several per cell possible) */
            bool face = false;
            for (int a = 0; a < 3; a++)
                face = face || local[a] == 0 || local[a] == Q_LOD_CHUNK - 1;
            bool single = collapse && !face;
            if (level && !single) {
                size_t gi = ((size_t)(local[2] >> level) * side + (size_t)(local[1] >> level)) * side +
                            (size_t)(local[0] >> level);
                if (grid[gi] == UINT32_MAX)
                    grid[gi] = (uint32_t)nodes.n;
                id = grid[gi];
            }
            if (id == nodes.n) {
                node *nd = buf_push(&nodes);
                if (!nd)
                    goto done;
                memset(nd, 0, sizeof *nd);
                for (int a = 0; a < 3; a++)
                    nd->min[a] = level ? floor_div(l->cell[a], 1 << level) * (1 << level) : l->cell[a];
                nd->material = l->material;
                nd->single = single;
                memcpy(nd->leaf, l->pos, sizeof nd->leaf);
                q_qef_clear(&nd->qef);
            }
            node *nd = (node *)nodes.p + id;
            double rp[3], nn[3];
            for (int a = 0; a < 3; a++) {
                rp[a] = l->pos[a] - (nd->min[a] + 0.5); /* relative to the node's first corner */
                nn[a] = l->normal[a];
                nd->nsum[a] += nn[a];
            }
            q_qef_add(&nd->qef, rp, nn);
            if (border) {
                lmap.keys[s] = lk;
                lmap.vals[s] = id;
                lmap.count++;
            }
            b->map[o][v] = id;
        }
    }
    /* interior triangles: the chunk's own piece, group OWN (all in bucket OWN) */
    if (in[0] && in[0]->tstart[OWN + 1] > in[0]->tstart[OWN]) {
        const piece *p = in[0];
        size_t t0 = p->tstart[OWN], nt = p->tstart[OWN + 1] - t0;
        if (!buf_reserve(&mapped, nt))
            goto done;
        uint32_t *m = mapped.p;
        for (size_t i = 0; i < 3 * nt; i++)
            m[i] = b->map[0][p->tris[3 * t0 + i] - p->lstart[OWN]];
        mapped.n = nt;
        if (!cancel_triangles(m, nt, &tris))
            goto done;
    }
    if (nodes.n) {
        b->pos = q_alloc(nodes.n * 3 * sizeof(float));
        b->nrm = q_alloc(nodes.n * 3 * sizeof(float));
        b->mat = q_alloc(nodes.n);
        b->nnodes = nodes.n;
        if (!b->pos || !b->nrm || !b->mat)
            goto done;
        double size = (double)(1 << level);
        for (size_t i = 0; i < nodes.n; i++) {
            const node *nd = (const node *)nodes.p + i;
            double v[3] = {0, 0, 0};
            if (level && !nd->single)
                q_qef_solve(&nd->qef, v);
            double len = sqrt(nd->nsum[0] * nd->nsum[0] + nd->nsum[1] * nd->nsum[1] + nd->nsum[2] * nd->nsum[2]);
            for (int a = 0; a < 3; a++) {
                double l = v[a] < 0 ? 0 : v[a] > size ? size : v[a];
                double p = level == 0 || nd->single ? nd->leaf[a] : nd->min[a] + 0.5 + l; /* a leaf stays itself */
                b->pos[3 * i + a] = (float)(p * scale);
                b->nrm[3 * i + a] = len > 0 ? (float)(nd->nsum[a] / len) : 0.0f;
            }
            b->mat[i] = nd->material;
        }
    }
    if (collapse && tris.n && !block_collapse(b, &tris, &nodes, in[0], cid))
        goto done;
    if (tris.n) {
        b->tris = q_realloc(tris.p, tris.cap * tris.elem, tris.n * tris.elem);
        if (!b->tris) {
            b->tris = NULL;
            goto done;
        }
        b->ntris = tris.n;
        tris = (buf){.elem = 3 * sizeof(uint32_t)};
    }
    b->st = Q_OK;
    b->valid = true;
done:
    if (b->st != Q_OK)
        block_clear(b);
    buf_free(&nodes);
    buf_free(&tris);
    buf_free(&mapped);
    hmap_free(&lmap);
    if (grid)
        q_free(grid, gbytes);
    if (cid)
        q_free(cid, b->nmap[0] * sizeof(uint32_t));
}

/* Edge-collapses the interior triangles of b (node ids in tris) to as many
 * triangles as clustering every leaf into its grid node (cid, leaves of
 * own's bucket OWN) would leave, the clustered nodes locked; moves the
 * surviving nodes and points the leaf maps at them. */
static bool block_collapse(block *b, buf *tris, const buf *nodes, const piece *own, const uint32_t *cid)
{
    uint8_t *locked = q_alloc(nodes->n);
    uint32_t *remap = q_alloc(nodes->n * sizeof(uint32_t));
    buf clustered = {.elem = 3 * sizeof(uint32_t)}, cl = {.elem = 3 * sizeof(uint32_t)};
    size_t t0 = own->tstart[OWN], nt = own->tstart[OWN + 1] - t0;
    bool ok = locked && remap && buf_reserve(&clustered, nt + 1);
    if (ok) {
        uint32_t *m = clustered.p;
        for (size_t i = 0; i < 3 * nt; i++)
            m[i] = cid[own->tris[3 * t0 + i] - own->lstart[OWN]];
        ok = cancel_triangles(m, nt, &cl);
    }
    if (ok) {
        for (size_t i = 0; i < nodes->n; i++)
            locked[i] = !((const node *)nodes->p)[i].single;
        q_simplify_def def = q_default_simplify_def();
        def.locked = locked;
        def.target_index_count = 3 * cl.n;
        size_t n = q_simplify(tris->p, tris->p, 3 * tris->n, b->pos, nodes->n, &def, remap, NULL);
        ok = n != SIZE_MAX;
        if (ok) {
            tris->n = n / 3;
            for (int o = 0; o < 8; o++)
                for (uint32_t v = 0; v < b->nmap[o]; v++)
                    b->map[o][v] = remap[b->map[o][v]];
        }
    }
    q_free(locked, nodes->n);
    q_free(remap, nodes->n * sizeof(uint32_t));
    buf_free(&clustered);
    buf_free(&cl);
    return ok;
}

/* ---- seams: triangles joining the chunks of one 2x2x2 group ---- */

typedef struct seam {
    int32_t chunk[3]; /* M, the group's smallest chunk */
    q_surface surface;
    bool valid;
    uint64_t deps[16]; /* stamps of the pieces, then of the blocks, of M + o */
    uint32_t *tris;    /* node references: block offset o << 28 | node id */
    size_t ntris;
    q_status st;
} seam;

#define SEAM_SHIFT 28

static void seam_clear(seam *s)
{
    if (s->tris)
        q_free(s->tris, s->ntris * 3 * sizeof(uint32_t));
    s->tris = NULL;
    s->ntris = 0;
    s->valid = false;
}

/* Seam triangles of group M from the pieces pin[o] of M + o, through the
 * nodes of the blocks bin[o] of M + o. */
static void seam_build(seam *sm, piece *const pin[8], block *const bin[8])
{
    seam_clear(sm);
    sm->st = Q_ERR_MEMORY;
    size_t total = 0;
    /* o = 0 would be group OWN: a triangle whose smallest chunk is its own
     * piece's lies inside that chunk */
    for (int o = 1; o < 8; o++)
        if (pin[o])
            total += pin[o]->tstart[(OWN ^ o) + 1] - pin[o]->tstart[OWN ^ o];
    buf mapped = {.elem = 3 * sizeof(uint32_t)}, tris = {.elem = 3 * sizeof(uint32_t)};
    if (!buf_reserve(&mapped, total + 1))
        goto done;
    for (int o = 1; o < 8; o++) {
        const piece *p = pin[o];
        if (!p)
            continue;
        int g = OWN ^ o; /* the group at offset -o from the piece */
        for (uint32_t t = p->tstart[g]; t < p->tstart[g + 1]; t++) {
            uint32_t *m = (uint32_t *)mapped.p + 3 * mapped.n++;
            for (int k = 0; k < 3; k++) {
                uint32_t li = p->tris[3 * t + k];
                int bk = bucket_of_index(p, li);
                /* the leaf's chunk is the piece's + offset(bk), at M + slot */
                int slot = 0;
                for (int a = 0; a < 3; a++) {
                    int s = ((o >> a) & 1) + bucket_offset(bk, a);
                    assert(s == 0 || s == 1);
                    slot |= s << a;
                }
                const block *b = bin[slot];
                /* that block read this piece's bucket bk as its input OWN ^ bk */
                assert(b && b->valid && b->map[OWN ^ bk]);
                m[k] = (uint32_t)slot << SEAM_SHIFT | b->map[OWN ^ bk][li - p->lstart[bk]];
            }
        }
    }
    if (!cancel_triangles(mapped.p, mapped.n, &tris))
        goto done;
    if (tris.n) {
        sm->tris = q_realloc(tris.p, tris.cap * tris.elem, tris.n * tris.elem);
        if (!sm->tris)
            goto done;
        sm->ntris = tris.n;
        tris = (buf){.elem = 3 * sizeof(uint32_t)};
    }
    sm->st = Q_OK;
    sm->valid = true;
done:
    if (sm->st != Q_OK)
        seam_clear(sm);
    buf_free(&mapped);
    buf_free(&tris);
}

/* ---- the cache ---- */

/* Entries of one kind, found by (chunk, surface); pointers stay put. */
typedef struct table {
    void **items;
    size_t count, cap;
    hmap index;
} table;

struct q_lod_cache {
    table pieces, blocks, seams;
    uint64_t next_stamp;
    atomic_bool cancel;
};

static bool table_init(table *t)
{
    memset(t, 0, sizeof *t);
    return hmap_init(&t->index, 64);
}

/* Entry for (chunk, surface), made with `size` zero bytes when new; NULL when
 * out of memory. *made tells whether it is new. */
static void *table_get(table *t, const int32_t ch[3], q_surface s, size_t size, bool *made)
{
    hkey k = {{ch[0], ch[1], ch[2], (int64_t)s}};
    bool found;
    size_t slot = hmap_slot(&t->index, &k, &found);
    *made = false;
    if (slot == SIZE_MAX)
        return NULL;
    if (found)
        return t->items[t->index.vals[slot]];
    if (t->count == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        void **n = q_realloc(t->items, t->cap * sizeof(void *), cap * sizeof(void *));
        if (!n)
            return NULL;
        t->items = n;
        t->cap = cap;
    }
    void *item = q_calloc(1, size);
    if (!item)
        return NULL;
    t->index.keys[slot] = k;
    t->index.vals[slot] = (uint32_t)t->count;
    t->index.count++;
    t->items[t->count++] = item;
    *made = true;
    return item;
}

q_lod_cache *q_lod_cache_create(void)
{
    q_lod_cache *c = q_calloc(1, sizeof(q_lod_cache));
    if (!c)
        return NULL;
    c->next_stamp = 1;
    atomic_init(&c->cancel, false);
    if (!table_init(&c->pieces) || !table_init(&c->blocks) || !table_init(&c->seams)) {
        q_lod_cache_destroy(c);
        return NULL;
    }
    return c;
}

void q_lod_cache_destroy(q_lod_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->pieces.count; i++) {
        piece_clear(c->pieces.items[i]);
        q_free(c->pieces.items[i], sizeof(piece));
    }
    for (size_t i = 0; i < c->blocks.count; i++) {
        block_clear(c->blocks.items[i]);
        q_free(c->blocks.items[i], sizeof(block));
    }
    for (size_t i = 0; i < c->seams.count; i++) {
        seam_clear(c->seams.items[i]);
        q_free(c->seams.items[i], sizeof(seam));
    }
    table *ts[3] = {&c->pieces, &c->blocks, &c->seams};
    for (int i = 0; i < 3; i++) {
        if (ts[i]->items)
            q_free(ts[i]->items, ts[i]->cap * sizeof(void *));
        hmap_free(&ts[i]->index);
    }
    q_free(c, sizeof *c);
}

void q_lod_cache_invalidate(q_lod_cache *c, q_box b)
{
    for (size_t i = 0; i < c->pieces.count; i++) {
        piece *p = c->pieces.items[i];
        bool hit = true;
        for (int a = 0; a < 3; a++) /* a piece reads samples 2 beyond its box; 3 for safety */
            if (b.max[a] + 3 <= p->box.min[a] || b.min[a] - 3 >= p->box.max[a])
                hit = false;
        if (hit)
            piece_clear(p);
    }
}

void q_lod_cache_invalidate_all(q_lod_cache *c)
{
    for (size_t i = 0; i < c->pieces.count; i++)
        piece_clear(c->pieces.items[i]);
}

void q_lod_cache_cancel(q_lod_cache *c)
{
    atomic_store(&c->cancel, true);
}

/* ---- build ---- */

/* The chunks of one build: pieces over [c0, c1], blocks and seams over
 * [c0 - 1, c1] (a piece's quads reach the cells one below its box). */
typedef struct range {
    int32_t lo[3]; /* c0 - 1 */
    int32_t n[3];
    size_t count;
    int32_t c0[3], c1[3];
} range;

static size_t range_index(const range *r, const int32_t ch[3])
{
    return ((size_t)(ch[2] - r->lo[2]) * (size_t)r->n[1] + (size_t)(ch[1] - r->lo[1])) * (size_t)r->n[0] +
           (size_t)(ch[0] - r->lo[0]);
}

static void range_chunk(const range *r, size_t i, int32_t ch[3])
{
    ch[0] = r->lo[0] + (int32_t)(i % (size_t)r->n[0]);
    ch[1] = r->lo[1] + (int32_t)(i / (size_t)r->n[0] % (size_t)r->n[1]);
    ch[2] = r->lo[2] + (int32_t)(i / ((size_t)r->n[0] * (size_t)r->n[1]));
}

typedef struct build_ctx {
    q_lod_cache *cache;
    const q_terrain *t;
    const range *r;
    piece **pieces; /* per range index; NULL outside [c0, c1] */
    block **blocks;
    seam **seams;
    const int8_t *levels;
    float scale;
    bool collapse; /* q_simplify_lod_mode() == Q_LOD_COLLAPSE at the build's start */
    size_t *stale;  /* range indices of the blocks or seams the current loop rebuilds */
    piece **pstale; /* pieces the current loop rebuilds */
} build_ctx;

/* The entry at ch + o for o in {0,1}^3, or NULL outside the range. */
static void *neighbour(const build_ctx *b, void **arr, const int32_t ch[3], int o)
{
    int32_t n[3];
    for (int a = 0; a < 3; a++) {
        n[a] = ch[a] + ((o >> a) & 1);
        if (n[a] >= b->r->lo[a] + b->r->n[a])
            return NULL;
    }
    return arr[range_index(b->r, n)];
}

static void piece_job(void *ctx, int i)
{
    build_ctx *b = ctx;
    piece *p = b->pstale[i];
    if (atomic_load(&b->cache->cancel)) {
        p->st = Q_ERR_MEMORY;
        return;
    }
    piece_build(b->t, p);
}

static void block_job(void *ctx, int i)
{
    build_ctx *b = ctx;
    size_t ri = b->stale[i];
    block *bk = b->blocks[ri];
    if (atomic_load(&b->cache->cancel)) {
        block_clear(bk);
        bk->st = Q_ERR_MEMORY;
        return;
    }
    piece *in[8];
    for (int o = 0; o < 8; o++)
        in[o] = neighbour(b, (void **)b->pieces, bk->chunk, o);
    block_build(bk, in, b->levels[ri], b->scale, b->collapse);
}

static void seam_job(void *ctx, int i)
{
    build_ctx *b = ctx;
    seam *sm = b->seams[b->stale[i]];
    if (atomic_load(&b->cache->cancel)) {
        seam_clear(sm);
        sm->st = Q_ERR_MEMORY;
        return;
    }
    piece *pin[8];
    block *bin[8];
    for (int o = 0; o < 8; o++) {
        pin[o] = neighbour(b, (void **)b->pieces, sm->chunk, o);
        bin[o] = neighbour(b, (void **)b->blocks, sm->chunk, o);
    }
    seam_build(sm, pin, bin);
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

/* Joins the blocks and seams of the range into one mesh: nodes that some
 * triangle uses, numbered block by block in range order; interior triangles
 * block by block, then seams. */
static q_status assemble(const build_ctx *b, q_lod_result *out)
{
    const range *r = b->r;
    size_t total = 0, ntris = 0;
    size_t *base = q_alloc((r->count + 1) * sizeof(size_t));
    if (!base)
        return Q_ERR_MEMORY;
    for (size_t i = 0; i < r->count; i++) {
        base[i] = total;
        total += b->blocks[i]->nnodes;
        ntris += b->blocks[i]->ntris + b->seams[i]->ntris;
        out->chunk_triangles += b->blocks[i]->ntris;
        out->triangles_per_level[b->blocks[i]->level] += b->blocks[i]->ntris;
        out->seam_triangles += b->seams[i]->ntris;
    }
    base[r->count] = total;
    if (!ntris) {
        q_free(base, (r->count + 1) * sizeof(size_t));
        return Q_OK;
    }
    uint32_t *outid = q_alloc((total + 1) * sizeof(uint32_t));
    if (!outid) {
        q_free(base, (r->count + 1) * sizeof(size_t));
        return Q_ERR_MEMORY;
    }
    memset(outid, 0, (total + 1) * sizeof(uint32_t));
    /* mark used nodes (1), then number them */
    for (size_t i = 0; i < r->count; i++) {
        const block *bk = b->blocks[i];
        for (size_t k = 0; k < 3 * bk->ntris; k++)
            outid[base[i] + bk->tris[k]] = 1;
        const seam *sm = b->seams[i];
        for (size_t k = 0; k < 3 * sm->ntris; k++) {
            uint32_t ref = sm->tris[k];
            int32_t ch[3];
            range_chunk(r, i, ch);
            for (int a = 0; a < 3; a++)
                ch[a] += (int32_t)((ref >> (SEAM_SHIFT + a)) & 1);
            outid[base[range_index(r, ch)] + (ref & ((1u << SEAM_SHIFT) - 1))] = 1;
        }
    }
    size_t nout = 0;
    for (size_t i = 0; i < total; i++)
        outid[i] = outid[i] ? (uint32_t)nout++ : UINT32_MAX;
    q_mesh *m = q_mesh_create(nout, 3 * ntris, true, true);
    if (!m) {
        q_free(outid, (total + 1) * sizeof(uint32_t));
        q_free(base, (r->count + 1) * sizeof(size_t));
        return Q_ERR_MEMORY;
    }
    for (size_t i = 0; i < r->count; i++) {
        const block *bk = b->blocks[i];
        for (size_t v = 0; v < bk->nnodes; v++) {
            uint32_t id = outid[base[i] + v];
            if (id == UINT32_MAX)
                continue;
            memcpy(&m->positions[3 * id], &bk->pos[3 * v], 3 * sizeof(float));
            memcpy(&m->normals[3 * id], &bk->nrm[3 * v], 3 * sizeof(float));
            m->materials[id] = bk->mat[v];
        }
    }
    size_t w = 0;
    for (size_t i = 0; i < r->count; i++) {
        const block *bk = b->blocks[i];
        for (size_t k = 0; k < 3 * bk->ntris; k++)
            m->indices[w++] = outid[base[i] + bk->tris[k]];
    }
    for (size_t i = 0; i < r->count; i++) {
        const seam *sm = b->seams[i];
        int32_t ch0[3];
        range_chunk(r, i, ch0);
        for (size_t k = 0; k < 3 * sm->ntris; k++) {
            uint32_t ref = sm->tris[k];
            int32_t ch[3];
            for (int a = 0; a < 3; a++)
                ch[a] = ch0[a] + (int32_t)((ref >> (SEAM_SHIFT + a)) & 1);
            m->indices[w++] = outid[base[range_index(r, ch)] + (ref & ((1u << SEAM_SHIFT) - 1))];
        }
    }
    out->mesh = m;
    q_free(outid, (total + 1) * sizeof(uint32_t));
    q_free(base, (r->count + 1) * sizeof(size_t));
    return Q_OK;
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
    if (q_box_volume(box) == 0)
        return Q_OK;
    range r;
    uint64_t npieces = 1;
    r.count = 1;
    for (int a = 0; a < 3; a++) {
        r.c0[a] = floor_div(box.min[a], Q_LOD_CHUNK);
        r.c1[a] = floor_div(box.max[a] - 1, Q_LOD_CHUNK);
        r.lo[a] = r.c0[a] - 1;
        r.n[a] = r.c1[a] - r.c0[a] + 2;
        npieces *= (uint64_t)((int64_t)r.c1[a] - r.c0[a] + 1);
    }
    if (npieces > Q_LOD_MAX_CHUNKS) {
        snprintf(err, errlen, "box spans %llu chunks of %d^3, over the limit of %d", (unsigned long long)npieces,
                 Q_LOD_CHUNK, Q_LOD_MAX_CHUNKS);
        return Q_ERR_TOO_LARGE;
    }
    r.count = (size_t)r.n[0] * (size_t)r.n[1] * (size_t)r.n[2];
    q_status st = Q_OK;
    build_ctx bc = {.cache = cache, .t = t, .r = &r, .scale = scale};
    bc.collapse = q_simplify_lod_mode() == Q_LOD_COLLAPSE;
    bc.pieces = q_calloc(r.count, sizeof(piece *));
    bc.blocks = q_calloc(r.count, sizeof(block *));
    bc.seams = q_calloc(r.count, sizeof(seam *));
    int8_t *levels = q_alloc(r.count);
    bc.levels = levels;
    bc.stale = q_alloc(r.count * sizeof(size_t));
    bc.pstale = q_alloc(r.count * sizeof(piece *));
    if (!bc.pieces || !bc.blocks || !bc.seams || !levels || !bc.stale || !bc.pstale) {
        st = Q_ERR_MEMORY;
        goto done;
    }

    /* 1. Pieces: LOD0 of each chunk of the box, remeshed when stale. */
    size_t nstale = 0;
    for (size_t i = 0; i < r.count; i++) {
        int32_t ch[3];
        range_chunk(&r, i, ch);
        if (ch[0] < r.c0[0] || ch[1] < r.c0[1] || ch[2] < r.c0[2])
            continue;
        q_box pb;
        for (int a = 0; a < 3; a++) {
            int32_t lo = ch[a] * Q_LOD_CHUNK, hi = lo + Q_LOD_CHUNK;
            pb.min[a] = lo > box.min[a] ? lo : box.min[a];
            pb.max[a] = hi < box.max[a] ? hi : box.max[a];
        }
        bool made;
        piece *p = table_get(&cache->pieces, ch, surface, sizeof(piece), &made);
        if (!p) {
            st = Q_ERR_MEMORY;
            goto done;
        }
        if (made) {
            memcpy(p->chunk, ch, sizeof p->chunk);
            p->surface = surface;
            p->box = pb;
        } else if (memcmp(&p->box, &pb, sizeof pb) != 0) {
            piece_clear(p);
            p->box = pb;
        }
        bc.pieces[i] = p;
        if (!p->valid)
            bc.pstale[nstale++] = p;
    }
    q_jobs_for(jobs, (int)nstale, piece_job, &bc);
    for (size_t i = 0; i < nstale; i++) {
        piece *p = bc.pstale[i];
        if (p->st != Q_OK) {
            st = p->st;
            piece_clear(p);
        } else
            p->stamp = cache->next_stamp++;
    }
    out->remeshed_chunks = nstale;
    if (st != Q_OK)
        goto done;
    for (size_t i = 0; i < r.count; i++)
        if (bc.pieces[i])
            out->lod0_triangles += bc.pieces[i]->ntris;

    /* 2. Blocks whose level, scale or input pieces changed. */
    nstale = 0;
    for (size_t i = 0; i < r.count; i++) {
        int32_t ch[3];
        range_chunk(&r, i, ch);
        int L = level ? level(ud, ch) : 0;
        levels[i] = (int8_t)(L < 0 ? 0 : L > Q_LOD_MAX_LEVEL ? Q_LOD_MAX_LEVEL : L);
        bool made;
        block *bk = table_get(&cache->blocks, ch, surface, sizeof(block), &made);
        if (!bk) {
            st = Q_ERR_MEMORY;
            goto done;
        }
        if (made) {
            memcpy(bk->chunk, ch, sizeof bk->chunk);
            bk->surface = surface;
        }
        bc.blocks[i] = bk;
        uint64_t deps[8];
        for (int o = 0; o < 8; o++) {
            const piece *p = neighbour(&bc, (void **)bc.pieces, ch, o);
            deps[o] = p ? p->stamp : 0;
        }
        if (!bk->valid || bk->level != levels[i] || bk->scale != scale || bk->collapse != bc.collapse ||
            memcmp(bk->deps, deps, sizeof deps) != 0) {
            memcpy(bk->deps, deps, sizeof deps);
            bc.stale[nstale++] = i;
        }
    }
    q_jobs_for(jobs, (int)nstale, block_job, &bc);
    for (size_t i = 0; i < nstale; i++) {
        block *bk = bc.blocks[bc.stale[i]];
        if (bk->st != Q_OK)
            st = bk->st;
        else
            bk->stamp = cache->next_stamp++;
    }
    out->rebuilt_blocks = nstale;
    out->blocks = r.count;
    out->seams = r.count;
    if (st != Q_OK)
        goto done;

    /* 3. Seams whose pieces or blocks changed. */
    nstale = 0;
    for (size_t i = 0; i < r.count; i++) {
        int32_t ch[3];
        range_chunk(&r, i, ch);
        bool made;
        seam *sm = table_get(&cache->seams, ch, surface, sizeof(seam), &made);
        if (!sm) {
            st = Q_ERR_MEMORY;
            goto done;
        }
        if (made) {
            memcpy(sm->chunk, ch, sizeof sm->chunk);
            sm->surface = surface;
        }
        bc.seams[i] = sm;
        uint64_t deps[16];
        for (int o = 0; o < 8; o++) {
            const piece *p = neighbour(&bc, (void **)bc.pieces, ch, o);
            const block *bk = neighbour(&bc, (void **)bc.blocks, ch, o);
            deps[o] = p ? p->stamp : 0;
            deps[8 + o] = bk ? bk->stamp : 0;
        }
        if (!sm->valid || memcmp(sm->deps, deps, sizeof deps) != 0) {
            memcpy(sm->deps, deps, sizeof deps);
            bc.stale[nstale++] = i;
        }
    }
    q_jobs_for(jobs, (int)nstale, seam_job, &bc);
    for (size_t i = 0; i < nstale; i++)
        if (bc.seams[bc.stale[i]]->st != Q_OK)
            st = bc.seams[bc.stale[i]]->st;
    out->rebuilt_seams = nstale;
    if (st != Q_OK)
        goto done;

    /* 4. One mesh. */
    st = assemble(&bc, out);

done:
    if (st != Q_OK) {
        q_mesh_destroy(out->mesh);
        out->mesh = NULL;
        if (atomic_load(&cache->cancel))
            snprintf(err, errlen, "build cancelled");
        else
            snprintf(err, errlen, st == Q_ERR_MEMORY ? "out of memory" : "meshing a chunk failed");
    }
    if (bc.pieces)
        q_free(bc.pieces, r.count * sizeof(piece *));
    if (bc.blocks)
        q_free(bc.blocks, r.count * sizeof(block *));
    if (bc.seams)
        q_free(bc.seams, r.count * sizeof(seam *));
    if (levels)
        q_free(levels, r.count);
    if (bc.stale)
        q_free(bc.stale, r.count * sizeof(size_t));
    if (bc.pstale)
        q_free(bc.pstale, r.count * sizeof(piece *));
    return st;
}
