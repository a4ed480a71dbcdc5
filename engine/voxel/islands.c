/* Terrain islands: per-chunk component summaries, a graph over them, and
 * searches from what changed (see islands.h for the model and the rules). */
#include "voxel/islands.h"

#include "core/alloc.h"
#include "core/array.h"
#include "core/hashmap.h"
#include "voxel/material.h"
#include "voxel/terrain_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CS Q_CHUNK_SIZE
#define FACE_CELLS (CS * CS)
#define MAX_RUNS (CS * CS * CS / 2)
#define SOLID_OCCUPANCY 128

/* Faces: 0 -X, 1 +X, 2 -Y, 3 +Y, 4 -Z, 5 +Z; axis f / 2, positive side f & 1.
 * Face cell index: X faces y + 32 z, Y faces x + 32 z, Z faces x + 32 y, so
 * the two cells that meet across a face have the same index. */
static const int32_t face_dir[6][3] = {{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};

typedef struct comp_info {
    uint32_t voxels;
    uint16_t seed;    /* local index (x + 32 y + 1024 z) of its first voxel */
    uint8_t lo[3], hi[3]; /* local box, half-open */
} comp_info;

typedef struct link {
    uint16_t mine, theirs; /* component here, component in the chunk across the face */
} link;

typedef struct isl_chunk {
    int32_t c[3];
    uint32_t ncomp;
    comp_info *comps;
    uint16_t *faces;     /* 6 * FACE_CELLS labels (component + 1, 0 = none); NULL: uniform solid */
    link *links[6];      /* sorted by (mine, theirs) */
    uint32_t nlinks[6];
} isl_chunk;

typedef struct chunk_coord {
    int32_t c[3];
} chunk_coord;

typedef struct island_node {
    int32_t c[3];
    uint32_t comp;
} island_node;

typedef struct island_rec {
    q_island pub;
    island_node *nodes;
    size_t nnodes;
    bool extracted;
} island_rec;

typedef struct heap_item {
    int64_t prio;
    uint64_t node;
} heap_item;

/* Scratch of one chunk labelling. */
typedef struct labeller {
    uint32_t rows[CS * CS]; /* bit x of row y + 32 z: solid */
    uint16_t row_first[CS * CS + 1];
    uint8_t run_x0[MAX_RUNS], run_x1[MAX_RUNS]; /* inclusive */
    uint16_t run_row[MAX_RUNS];
    uint16_t parent[MAX_RUNS];
    uint16_t label[MAX_RUNS];
    uint32_t nruns;
    uint32_t ncomp;
} labeller;

struct q_islands {
    q_islands_def def;
    bool use_floor;
    Q_ARRAY(chunk_coord) anchors; /* voxel coordinates, in c[] */

    const q_terrain *terrain;
    bool initialized, full_pending;
    uint64_t version; /* change log read up to here */
    uint8_t solid_mat[Q_MATERIAL_MAX]; /* 1: neither air nor liquid */

    Q_ARRAY(isl_chunk) chunks;
    q_hashmap chunk_index; /* chunk key -> position in chunks */

    Q_ARRAY(chunk_coord) queue; /* changed chunks of this round */
    size_t queue_pos;           /* those relabelled so far */
    q_hashmap queued;           /* chunk key -> 1 */

    Q_ARRAY(island_rec) islands;
    bool result_valid;          /* islands match the terrain at result_version */
    uint64_t result_version;

    /* search scratch */
    q_hashmap state; /* node -> GROUNDED, ISLAND or search id */
    q_hashmap anchor_nodes;
    Q_ARRAY(uint64_t) visit;
    Q_ARRAY(heap_item) heap;
    Q_ARRAY(uint64_t) cand;
    Q_ARRAY(island_rec) found;
    Q_ARRAY(uint32_t) pairs;

    labeller *lab;
    q_islands_stats stats;
};

enum { ST_GROUNDED = 0, ST_ISLAND = 1, ST_FIRST_SEARCH = 2 };

/* Same packing as storage.c: chunk coordinates are within +-2^19. */
#define KEY_BIAS (1 << 20)
static uint64_t chunk_key(const int32_t c[3])
{
    return ((uint64_t)(uint32_t)(c[0] + KEY_BIAS) << 42) | ((uint64_t)(uint32_t)(c[1] + KEY_BIAS) << 21) |
           (uint64_t)(uint32_t)(c[2] + KEY_BIAS);
}

static uint64_t node_id(uint32_t chunk, uint32_t comp)
{
    return (uint64_t)chunk << 16 | comp;
}

q_islands_def q_default_islands_def(void)
{
    return (q_islands_def){.floor_y = 0, .max_voxels = 1u << 20};
}

q_islands *q_islands_create(const q_islands_def *def)
{
    q_islands *s = q_calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->lab = q_alloc(sizeof *s->lab);
    if (!s->lab) {
        q_free(s, sizeof *s);
        return NULL;
    }
    s->def = def ? *def : q_default_islands_def();
    s->use_floor = true;
    return s;
}

static void free_links(isl_chunk *c, int f)
{
    q_free(c->links[f], c->nlinks[f] * sizeof(link));
    c->links[f] = NULL;
    c->nlinks[f] = 0;
}

static void free_chunk(isl_chunk *c)
{
    q_free(c->comps, c->ncomp * sizeof *c->comps);
    q_free(c->faces, 6 * FACE_CELLS * sizeof *c->faces);
    for (int f = 0; f < 6; f++)
        free_links(c, f);
    memset(c, 0, sizeof *c);
}

static void free_island(island_rec *r)
{
    q_free(r->nodes, r->nnodes * sizeof *r->nodes);
    r->nodes = NULL;
    r->nnodes = 0;
}

static void free_islands(q_islands *s)
{
    for (size_t i = 0; i < s->islands.count; i++)
        free_island(&s->islands.data[i]);
    s->islands.count = 0;
}

static void reset(q_islands *s)
{
    for (size_t i = 0; i < s->chunks.count; i++)
        free_chunk(&s->chunks.data[i]);
    s->chunks.count = 0;
    q_hashmap_clear(&s->chunk_index);
    s->queue.count = s->queue_pos = 0;
    q_hashmap_clear(&s->queued);
    free_islands(s);
    s->result_valid = false;
    s->initialized = false;
}

void q_islands_destroy(q_islands *s)
{
    if (!s)
        return;
    reset(s);
    for (size_t i = 0; i < s->found.count; i++)
        free_island(&s->found.data[i]);
    q_array_free(&s->chunks);
    q_array_free(&s->anchors);
    q_array_free(&s->queue);
    q_array_free(&s->islands);
    q_array_free(&s->visit);
    q_array_free(&s->heap);
    q_array_free(&s->cand);
    q_array_free(&s->found);
    q_array_free(&s->pairs);
    q_hashmap_free(&s->chunk_index);
    q_hashmap_free(&s->queued);
    q_hashmap_free(&s->state);
    q_hashmap_free(&s->anchor_nodes);
    q_free(s->lab, sizeof *s->lab);
    q_free(s, sizeof *s);
}

q_status q_islands_set_anchors(q_islands *s, bool use_floor, const int32_t (*points)[3], size_t count)
{
    bool same = use_floor == s->use_floor && count == s->anchors.count;
    for (size_t i = 0; same && i < count; i++)
        same = memcmp(points[i], s->anchors.data[i].c, sizeof points[i]) == 0;
    if (same)
        return Q_OK;
    if (!q_array_reserve(&s->anchors, count))
        return Q_ERR_MEMORY;
    for (size_t i = 0; i < count; i++)
        memcpy(s->anchors.data[i].c, points[i], sizeof points[i]);
    s->anchors.count = count;
    s->use_floor = use_floor;
    s->full_pending = true; /* islands are relative to the anchors: search everything */
    s->result_valid = false;
    return Q_OK;
}

/* ---- chunk labelling ---- */

static uint32_t find_root(uint16_t *parent, uint32_t i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

/* The smaller root wins, so a component's root is its first run in scan
 * order and labels come out in (z, y, x) order of first voxels. */
static void unite(uint16_t *parent, uint32_t a, uint32_t b)
{
    a = find_root(parent, a);
    b = find_root(parent, b);
    if (a < b)
        parent[b] = (uint16_t)a;
    else if (b < a)
        parent[a] = (uint16_t)b;
}

static void unite_rows(labeller *L, uint32_t ra, uint32_t rb)
{
    uint32_t i = L->row_first[ra], ie = L->row_first[ra + 1];
    uint32_t j = L->row_first[rb], je = L->row_first[rb + 1];
    while (i < ie && j < je) {
        if (L->run_x1[i] < L->run_x0[j])
            i++;
        else if (L->run_x1[j] < L->run_x0[i])
            j++;
        else {
            unite(L->parent, i, j);
            if (L->run_x1[i] < L->run_x1[j])
                i++;
            else
                j++;
        }
    }
}

/* Labels L->rows into runs and components. */
static void label_rows(labeller *L)
{
    uint32_t n = 0;
    for (uint32_t r = 0; r < CS * CS; r++) {
        L->row_first[r] = (uint16_t)n;
        uint32_t bits = L->rows[r];
        while (bits) {
            uint32_t x0 = (uint32_t)__builtin_ctz(bits);
            uint32_t rest = ~bits >> x0; /* zeros where the run goes on */
            uint32_t len = rest ? (uint32_t)__builtin_ctz(rest) : 32 - x0;
            L->run_x0[n] = (uint8_t)x0;
            L->run_x1[n] = (uint8_t)(x0 + len - 1);
            L->run_row[n] = (uint16_t)r;
            L->parent[n] = (uint16_t)n;
            n++;
            bits = x0 + len >= 32 ? 0 : bits & ~((1u << (x0 + len)) - 1);
        }
    }
    L->row_first[CS * CS] = (uint16_t)n; /* n <= MAX_RUNS */
    L->nruns = n;
    for (uint32_t r = 0; r < CS * CS; r++) {
        uint32_t y = r & (CS - 1), z = r >> Q_CHUNK_BITS;
        if (y > 0)
            unite_rows(L, r, r - 1);
        if (z > 0)
            unite_rows(L, r, r - CS);
    }
    uint32_t nc = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t root = find_root(L->parent, i);
        L->label[i] = root == i ? (uint16_t)nc++ : L->label[root];
    }
    L->ncomp = nc;
}

static bool voxel_solid(const q_islands *s, q_voxel v)
{
    return v.occupancy >= SOLID_OCCUPANCY && s->solid_mat[v.material];
}

_Static_assert(SOLID_OCCUPANCY == 128, "load_rows tests occupancy >= 128 with its top bit");

/* Fills L->rows from a dense chunk; false when nothing is solid. */
static bool load_rows(const q_islands *s, labeller *L, const q_voxel *vox)
{
    uint32_t any = 0;
    for (uint32_t r = 0; r < CS * CS; r++) {
        uint32_t bits = 0;
        const q_voxel *v = vox + r * CS;
        for (uint32_t x = 0; x < CS; x++) /* branch-free: this loop is most of a relabel */
            bits |= (uint32_t)((v[x].occupancy >> 7) & s->solid_mat[v[x].material]) << x;
        L->rows[r] = bits;
        any |= bits;
    }
    return any != 0;
}

static long summary_find(const q_islands *s, const int32_t c[3])
{
    uint32_t v = q_hashmap_get(&s->chunk_index, chunk_key(c));
    return v == Q_HASHMAP_EMPTY ? -1 : (long)v;
}

static void summary_remove(q_islands *s, long at)
{
    isl_chunk *c = &s->chunks.data[at];
    q_hashmap_remove(&s->chunk_index, chunk_key(c->c));
    free_chunk(c);
    size_t last = s->chunks.count - 1;
    if ((size_t)at != last) {
        s->chunks.data[at] = s->chunks.data[last];
        q_hashmap_set(&s->chunk_index, chunk_key(s->chunks.data[at].c), (uint32_t)at); /* replaces */
    }
    s->chunks.count--;
}

/* Recomputes the summary of chunk c from the terrain (links are left for
 * update_links). */
static q_status relabel(q_islands *s, const q_terrain *t, const int32_t c[3])
{
    long tat = q_chunk_find(t, c[0], c[1], c[2]);
    const q_chunk *tc = tat >= 0 ? &t->chunks.data[tat] : NULL;
    labeller *L = s->lab;
    bool uniform_solid = false, any = false;
    if (tc && !tc->voxels)
        any = uniform_solid = voxel_solid(s, tc->uniform);
    else if (tc)
        any = load_rows(s, L, tc->voxels);
    long at = summary_find(s, c);
    if (!any) {
        if (at >= 0)
            summary_remove(s, at);
        return Q_OK;
    }
    if (at < 0) {
        if (!q_array_reserve(&s->chunks, s->chunks.count + 1))
            return Q_ERR_MEMORY;
        at = (long)s->chunks.count;
        if (!q_hashmap_set(&s->chunk_index, chunk_key(c), (uint32_t)at))
            return Q_ERR_MEMORY;
        isl_chunk *nc = &s->chunks.data[s->chunks.count++];
        memset(nc, 0, sizeof *nc);
        memcpy(nc->c, c, sizeof nc->c);
    }
    isl_chunk *ch = &s->chunks.data[at];
    q_free(ch->comps, ch->ncomp * sizeof *ch->comps);
    ch->comps = NULL;
    ch->ncomp = 0;
    if (uniform_solid) {
        q_free(ch->faces, 6 * FACE_CELLS * sizeof *ch->faces);
        ch->faces = NULL;
        ch->comps = q_alloc(sizeof *ch->comps);
        if (!ch->comps)
            return Q_ERR_MEMORY;
        ch->ncomp = 1;
        ch->comps[0] = (comp_info){CS * CS * CS, 0, {0, 0, 0}, {CS, CS, CS}};
        return Q_OK;
    }
    label_rows(L);
    if (!ch->faces) {
        ch->faces = q_alloc(6 * FACE_CELLS * sizeof *ch->faces);
        if (!ch->faces)
            return Q_ERR_MEMORY;
    }
    ch->comps = q_alloc(L->ncomp * sizeof *ch->comps);
    if (!ch->comps)
        return Q_ERR_MEMORY;
    ch->ncomp = L->ncomp;
    memset(ch->faces, 0, 6 * FACE_CELLS * sizeof *ch->faces);
    for (uint32_t k = 0; k < L->ncomp; k++)
        ch->comps[k] = (comp_info){0, 0, {CS, CS, CS}, {0, 0, 0}};
    uint16_t *F = ch->faces;
    for (uint32_t i = 0; i < L->nruns; i++) {
        uint32_t k = L->label[i], r = L->run_row[i];
        uint32_t y = r & (CS - 1), z = r >> Q_CHUNK_BITS, x0 = L->run_x0[i], x1 = L->run_x1[i];
        comp_info *ci = &ch->comps[k];
        if (ci->voxels == 0)
            ci->seed = (uint16_t)(x0 + CS * r);
        ci->voxels += x1 - x0 + 1;
        uint32_t lo[3] = {x0, y, z}, hi[3] = {x1 + 1, y + 1, z + 1};
        for (int a = 0; a < 3; a++) {
            ci->lo[a] = lo[a] < ci->lo[a] ? (uint8_t)lo[a] : ci->lo[a];
            ci->hi[a] = hi[a] > ci->hi[a] ? (uint8_t)hi[a] : ci->hi[a];
        }
        uint16_t lab = (uint16_t)(k + 1);
        if (x0 == 0)
            F[0 * FACE_CELLS + y + CS * z] = lab;
        if (x1 == CS - 1)
            F[1 * FACE_CELLS + y + CS * z] = lab;
        if (y == 0 || y == CS - 1 || z == 0 || z == CS - 1) {
            for (uint32_t x = x0; x <= x1; x++) {
                if (y == 0)
                    F[2 * FACE_CELLS + x + CS * z] = lab;
                if (y == CS - 1)
                    F[3 * FACE_CELLS + x + CS * z] = lab;
                if (z == 0)
                    F[4 * FACE_CELLS + x + CS * y] = lab;
                if (z == CS - 1)
                    F[5 * FACE_CELLS + x + CS * y] = lab;
            }
        }
    }
    return Q_OK;
}

static uint16_t face_label(const isl_chunk *c, int f, uint32_t i)
{
    return c->faces ? c->faces[f * FACE_CELLS + i] : 1;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorted, deduplicated pairs (packed first << 16 | second) -> links. */
static q_status set_links(q_islands *s, isl_chunk *c, int f, bool swap)
{
    free_links(c, f);
    uint32_t *p = s->pairs.data;
    size_t n = s->pairs.count;
    if (swap)
        for (size_t i = 0; i < n; i++)
            p[i] = p[i] >> 16 | p[i] << 16;
    qsort(p, n, sizeof *p, cmp_u32);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || p[m - 1] != p[i])
            p[m++] = p[i];
    if (m == 0)
        return Q_OK;
    c->links[f] = q_alloc(m * sizeof(link));
    if (!c->links[f])
        return Q_ERR_MEMORY;
    for (size_t i = 0; i < m; i++)
        c->links[f][i] = (link){(uint16_t)((p[i] >> 16) - 1), (uint16_t)((p[i] & 0xffff) - 1)};
    c->nlinks[f] = (uint32_t)m;
    return Q_OK;
}

/* Recomputes the pairs across the positive face of chunk at (axis a) and
 * the matching negative face of its neighbour; either may be absent. */
static q_status update_face(q_islands *s, const int32_t c[3], int a)
{
    int32_t n[3] = {c[0], c[1], c[2]};
    n[a]++;
    long ia = summary_find(s, c), ib = summary_find(s, n);
    int fa = 2 * a + 1, fb = 2 * a;
    if (ia < 0 || ib < 0) {
        if (ia >= 0)
            free_links(&s->chunks.data[ia], fa);
        if (ib >= 0)
            free_links(&s->chunks.data[ib], fb);
        return Q_OK;
    }
    isl_chunk *A = &s->chunks.data[ia], *B = &s->chunks.data[ib];
    if (!q_array_reserve(&s->pairs, FACE_CELLS))
        return Q_ERR_MEMORY;
    s->pairs.count = 0;
    uint32_t last = 0;
    if (!A->faces && !B->faces) {
        s->pairs.data[s->pairs.count++] = 1u << 16 | 1u;
    } else {
        for (uint32_t i = 0; i < FACE_CELLS; i++) {
            uint32_t la = face_label(A, fa, i), lb = face_label(B, fb, i);
            uint32_t p = la << 16 | lb;
            if (la && lb && p != last)
                s->pairs.data[s->pairs.count++] = last = p;
        }
    }
    q_status st = set_links(s, A, fa, false);
    if (st == Q_OK) {
        /* undo the sort's packing for the other side: unpack again */
        s->pairs.count = A->nlinks[fa];
        for (uint32_t i = 0; i < A->nlinks[fa]; i++)
            s->pairs.data[i] = (uint32_t)(A->links[fa][i].mine + 1) << 16 | (uint32_t)(A->links[fa][i].theirs + 1);
        st = set_links(s, B, fb, true);
    }
    return st;
}

/* ---- change gathering ---- */

typedef struct gather {
    q_islands *s;
    const q_terrain *t;
    uint64_t since;
    uint64_t limit; /* chunk coordinates to look at before giving up on the log */
    uint64_t seen;
    bool full;
    bool oom;
} gather;

/* Queues chunk c for relabelling; a chunk relabelled earlier in this round
 * (budgeted updates) that changed again is queued a second time. */
static bool queue_chunk(q_islands *s, const int32_t c[3])
{
    uint64_t key = chunk_key(c);
    uint32_t at = q_hashmap_get(&s->queued, key);
    if (at != Q_HASHMAP_EMPTY && at >= s->queue_pos)
        return true;
    chunk_coord cc;
    memcpy(cc.c, c, sizeof cc.c);
    return q_hashmap_set(&s->queued, key, (uint32_t)s->queue.count) && q_array_push(&s->queue, cc);
}

static void gather_box(void *ud, q_box box, uint64_t version)
{
    (void)version;
    gather *g = ud;
    if (g->full || g->oom || q_box_volume(box) == 0)
        return;
    int32_t lo[3], hi[3];
    uint64_t n = 1;
    for (int a = 0; a < 3; a++) {
        lo[a] = q_floor_div_chunk(box.min[a]);
        hi[a] = q_floor_div_chunk(box.max[a] - 1);
        n *= (uint64_t)(hi[a] - lo[a] + 1);
    }
    g->seen += n;
    if (g->seen > g->limit) {
        g->full = true;
        return;
    }
    int32_t c[3];
    for (c[2] = lo[2]; c[2] <= hi[2]; c[2]++)
        for (c[1] = lo[1]; c[1] <= hi[1]; c[1]++)
            for (c[0] = lo[0]; c[0] <= hi[0]; c[0]++) {
                long tat = q_chunk_find(g->t, c[0], c[1], c[2]);
                bool changed = tat >= 0 ? g->t->chunks.data[tat].version > g->since : summary_find(g->s, c) >= 0;
                if (changed && !queue_chunk(g->s, c)) {
                    g->oom = true;
                    return;
                }
            }
}

/* Queues every terrain chunk and every summary (full rebuild). */
static bool queue_all(q_islands *s, const q_terrain *t)
{
    s->queue.count = s->queue_pos = 0;
    q_hashmap_clear(&s->queued);
    for (size_t i = 0; i < t->chunks.count; i++) {
        const q_chunk *c = &t->chunks.data[i];
        if (!queue_chunk(s, (int32_t[3]){c->cx, c->cy, c->cz}))
            return false;
    }
    for (size_t i = 0; i < s->chunks.count; i++)
        if (!queue_chunk(s, s->chunks.data[i].c))
            return false;
    return true;
}

/* ---- graph search ---- */

static int64_t comp_low_y(const isl_chunk *c, uint32_t k)
{
    return (int64_t)c->c[1] * CS + c->comps[k].lo[1];
}

static bool anchored(const q_islands *s, uint32_t ci, uint32_t k)
{
    const isl_chunk *c = &s->chunks.data[ci];
    if (s->use_floor && comp_low_y(c, k) <= s->def.floor_y)
        return true;
    return s->anchor_nodes.count && q_hashmap_get(&s->anchor_nodes, node_id(ci, k)) != Q_HASHMAP_EMPTY;
}

static bool heap_push(q_islands *s, heap_item it)
{
    if (!q_array_push(&s->heap, it))
        return false;
    heap_item *h = s->heap.data;
    size_t i = s->heap.count - 1;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p].prio < h[i].prio || (h[p].prio == h[i].prio && h[p].node <= h[i].node))
            break;
        heap_item tmp = h[p];
        h[p] = h[i];
        h[i] = tmp;
        i = p;
    }
    return true;
}

static heap_item heap_pop(q_islands *s)
{
    heap_item *h = s->heap.data, top = h[0];
    h[0] = h[--s->heap.count];
    size_t i = 0, n = s->heap.count;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && (h[l].prio < h[m].prio || (h[l].prio == h[m].prio && h[l].node < h[m].node)))
            m = l;
        if (r < n && (h[r].prio < h[m].prio || (h[r].prio == h[m].prio && h[r].node < h[m].node)))
            m = r;
        if (m == i)
            break;
        heap_item tmp = h[m];
        h[m] = h[i];
        h[i] = tmp;
        i = m;
    }
    return top;
}

/* Calls visit(s, node, ud) for every graph neighbour of (ci, k); stops early
 * when visit returns non-zero and returns that. */
typedef int (*neighbour_fn)(q_islands *s, uint64_t node, void *ud);
static int for_neighbours(q_islands *s, uint32_t ci, uint32_t k, neighbour_fn fn, void *ud)
{
    for (int f = 0; f < 6; f++) {
        const isl_chunk *c = &s->chunks.data[ci];
        uint32_t n = c->nlinks[f];
        if (n == 0)
            continue;
        const link *l = c->links[f];
        uint32_t lo = 0, hi = n;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (l[mid].mine < k)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == n || l[lo].mine != k)
            continue;
        int32_t nc[3] = {c->c[0] + face_dir[f][0], c->c[1] + face_dir[f][1], c->c[2] + face_dir[f][2]};
        long nj = summary_find(s, nc);
        if (nj < 0)
            continue; /* cannot happen: links are cleared with the chunk */
        for (uint32_t i = lo; i < n && l[i].mine == k; i++) {
            int r = fn(s, node_id((uint32_t)nj, l[i].theirs), ud);
            if (r)
                return r;
        }
    }
    return 0;
}

typedef struct search_ctx {
    uint32_t id;
    bool oom;
} search_ctx;

enum { NB_OK = 0, NB_GROUNDED = 1, NB_OOM = 2 };

static int search_visit(q_islands *s, uint64_t node, void *ud)
{
    search_ctx *sc = ud;
    uint32_t st = q_hashmap_get(&s->state, node);
    if (st == ST_GROUNDED)
        return NB_GROUNDED;
    if (st != Q_HASHMAP_EMPTY)
        return NB_OK; /* this search's (an island's nodes are never reached from outside it) */
    uint32_t ci = (uint32_t)(node >> 16), k = (uint32_t)(node & 0xffff);
    if (!q_hashmap_set(&s->state, node, sc->id) || !q_array_push(&s->visit, node) ||
        !heap_push(s, (heap_item){comp_low_y(&s->chunks.data[ci], k), node}))
        return NB_OOM;
    return NB_OK;
}

static int cmp_node(const void *a, const void *b)
{
    const island_node *p = a, *q = b;
    for (int i = 2; i >= 0; i--)
        if (p->c[i] != q->c[i])
            return p->c[i] < q->c[i] ? -1 : 1;
    return p->comp < q->comp ? -1 : p->comp > q->comp;
}

static bool seed_less(const int32_t a[3], const int32_t b[3])
{
    for (int i = 2; i >= 0; i--)
        if (a[i] != b[i])
            return a[i] < b[i];
    return false;
}

/* Turns the nodes in s->visit into an island record in s->found. */
static bool make_island(q_islands *s)
{
    island_rec r = {0};
    r.nnodes = s->visit.count;
    r.nodes = q_alloc(r.nnodes * sizeof *r.nodes);
    if (!r.nodes)
        return false;
    for (size_t i = 0; i < s->visit.count; i++) {
        uint64_t node = s->visit.data[i];
        const isl_chunk *c = &s->chunks.data[node >> 16];
        uint32_t k = (uint32_t)(node & 0xffff);
        const comp_info *ci = &c->comps[k];
        island_node *n = &r.nodes[i];
        memcpy(n->c, c->c, sizeof n->c);
        n->comp = k;
        int32_t seed[3] = {c->c[0] * CS + (ci->seed & (CS - 1)), c->c[1] * CS + ((ci->seed >> 5) & (CS - 1)),
                           c->c[2] * CS + (ci->seed >> 10)};
        if (i == 0 || seed_less(seed, r.pub.seed))
            memcpy(r.pub.seed, seed, sizeof seed);
        for (int a = 0; a < 3; a++) {
            int32_t lo = c->c[a] * CS + ci->lo[a], hi = c->c[a] * CS + ci->hi[a];
            r.pub.box.min[a] = i == 0 || lo < r.pub.box.min[a] ? lo : r.pub.box.min[a];
            r.pub.box.max[a] = i == 0 || hi > r.pub.box.max[a] ? hi : r.pub.box.max[a];
        }
        r.pub.voxels += ci->voxels;
    }
    qsort(r.nodes, r.nnodes, sizeof *r.nodes, cmp_node);
    q_box eb = q_islands_extract_box(&r.pub); /* extraction reads one voxel more */
    uint64_t read = 1;
    for (int a = 0; a < 3; a++)
        read *= (uint64_t)(eb.max[a] - eb.min[a] + 2);
    r.pub.too_large = r.pub.voxels > s->def.max_voxels || read > Q_READ_MAX_VOXELS;
    if (!q_array_push(&s->found, r)) {
        free_island(&r);
        return false;
    }
    return true;
}

/* Best-first search from one candidate; marks the visited nodes grounded or
 * records them as an island. */
static q_status search_from(q_islands *s, uint64_t start, uint32_t id)
{
    if (q_hashmap_get(&s->state, start) != Q_HASHMAP_EMPTY)
        return Q_OK;
    s->visit.count = 0;
    s->heap.count = 0;
    search_ctx sc = {id, false};
    if (search_visit(s, start, &sc) != NB_OK)
        return Q_ERR_MEMORY;
    bool grounded = false;
    while (s->heap.count && !grounded) {
        heap_item it = heap_pop(s);
        uint32_t ci = (uint32_t)(it.node >> 16), k = (uint32_t)(it.node & 0xffff);
        s->stats.visited++;
        if (anchored(s, ci, k)) {
            grounded = true;
            break;
        }
        int r = for_neighbours(s, ci, k, search_visit, &sc);
        if (r == NB_OOM)
            return Q_ERR_MEMORY;
        grounded = r == NB_GROUNDED;
    }
    if (grounded) {
        for (size_t i = 0; i < s->visit.count; i++)
            q_hashmap_set(&s->state, s->visit.data[i], ST_GROUNDED); /* replaces: no alloc */
        return Q_OK;
    }
    for (size_t i = 0; i < s->visit.count; i++)
        q_hashmap_set(&s->state, s->visit.data[i], ST_ISLAND);
    return make_island(s) ? Q_OK : Q_ERR_MEMORY;
}

/* Plain BFS used by the full pass: marks everything reachable from the
 * queue in s->visit with mark; visit[from..] is the frontier. */
typedef struct bfs_ctx {
    uint32_t mark;
} bfs_ctx;

static int bfs_visit(q_islands *s, uint64_t node, void *ud)
{
    bfs_ctx *b = ud;
    if (q_hashmap_get(&s->state, node) != Q_HASHMAP_EMPTY)
        return NB_OK;
    if (!q_hashmap_set(&s->state, node, b->mark) || !q_array_push(&s->visit, node))
        return NB_OOM;
    return NB_OK;
}

static q_status bfs_run(q_islands *s, size_t from, uint32_t mark)
{
    bfs_ctx b = {mark};
    for (size_t i = from; i < s->visit.count; i++) {
        uint64_t node = s->visit.data[i];
        s->stats.visited++;
        if (for_neighbours(s, (uint32_t)(node >> 16), (uint32_t)(node & 0xffff), bfs_visit, &b) == NB_OOM)
            return Q_ERR_MEMORY;
    }
    return Q_OK;
}

static q_status full_search(q_islands *s)
{
    s->visit.count = 0;
    for (uint32_t ci = 0; ci < s->chunks.count; ci++)
        for (uint32_t k = 0; k < s->chunks.data[ci].ncomp; k++)
            if (anchored(s, ci, k)) {
                uint64_t node = node_id(ci, k);
                if (!q_hashmap_set(&s->state, node, ST_GROUNDED) || !q_array_push(&s->visit, node))
                    return Q_ERR_MEMORY;
            }
    q_status st = bfs_run(s, 0, ST_GROUNDED);
    if (st != Q_OK)
        return st;
    for (uint32_t ci = 0; ci < s->chunks.count; ci++)
        for (uint32_t k = 0; k < s->chunks.data[ci].ncomp; k++) {
            uint64_t node = node_id(ci, k);
            if (q_hashmap_get(&s->state, node) != Q_HASHMAP_EMPTY)
                continue;
            s->visit.count = 0;
            if (!q_hashmap_set(&s->state, node, ST_ISLAND) || !q_array_push(&s->visit, node))
                return Q_ERR_MEMORY;
            if ((st = bfs_run(s, 0, ST_ISLAND)) != Q_OK)
                return st;
            if (!make_island(s))
                return Q_ERR_MEMORY;
        }
    return Q_OK;
}

/* Component of voxel p (in a current summary), or false when p is not solid. */
static bool voxel_node(q_islands *s, const q_terrain *t, const int32_t p[3], uint64_t *node)
{
    int32_t c[3] = {q_floor_div_chunk(p[0]), q_floor_div_chunk(p[1]), q_floor_div_chunk(p[2])};
    long at = summary_find(s, c);
    if (at < 0)
        return false;
    const isl_chunk *ch = &s->chunks.data[at];
    if (!ch->faces) {
        *node = node_id((uint32_t)at, 0);
        return true;
    }
    long tat = q_chunk_find(t, c[0], c[1], c[2]);
    if (tat < 0 || !t->chunks.data[tat].voxels)
        return false;
    labeller *L = s->lab;
    load_rows(s, L, t->chunks.data[tat].voxels);
    label_rows(L);
    uint32_t x = (uint32_t)(p[0] & (CS - 1)), r = (uint32_t)(p[1] & (CS - 1)) + CS * (uint32_t)(p[2] & (CS - 1));
    for (uint32_t i = L->row_first[r]; i < L->row_first[r + 1]; i++)
        if (L->run_x0[i] <= x && x <= L->run_x1[i]) {
            *node = node_id((uint32_t)at, L->label[i]);
            return true;
        }
    return false;
}

static int cmp_island(const void *a, const void *b)
{
    const island_rec *p = a, *q = b;
    return seed_less(p->pub.seed, q->pub.seed) ? -1 : seed_less(q->pub.seed, p->pub.seed);
}

static q_status push_candidate(q_islands *s, uint32_t ci, uint32_t k)
{
    return q_array_push(&s->cand, node_id(ci, k)) ? Q_OK : Q_ERR_MEMORY;
}

/* After every queued chunk is relabelled: links, searches, islands. */
static q_status search_phase(q_islands *s, const q_terrain *t, bool full)
{
    q_status st = Q_OK;
    /* links of every face of a changed chunk */
    for (size_t i = 0; i < s->queue.count && st == Q_OK; i++) {
        const int32_t *c = s->queue.data[i].c;
        for (int a = 0; a < 3 && st == Q_OK; a++) {
            int32_t lo[3] = {c[0], c[1], c[2]};
            lo[a]--;
            st = update_face(s, c, a);
            if (st == Q_OK)
                st = update_face(s, lo, a);
        }
    }
    if (st != Q_OK)
        return st;
    q_hashmap_clear(&s->state);
    q_hashmap_clear(&s->anchor_nodes);
    for (size_t i = 0; i < s->anchors.count; i++) {
        uint64_t node;
        if (voxel_node(s, t, s->anchors.data[i].c, &node) && !q_hashmap_set(&s->anchor_nodes, node, 1))
            return Q_ERR_MEMORY;
    }
    s->found.count = 0;
    if (full) {
        free_islands(s);
        st = full_search(s);
    } else {
        s->cand.count = 0;
        for (size_t i = 0; i < s->queue.count && st == Q_OK; i++) {
            const int32_t *c = s->queue.data[i].c;
            long at = summary_find(s, c);
            if (at >= 0)
                for (uint32_t k = 0; k < s->chunks.data[at].ncomp && st == Q_OK; k++)
                    st = push_candidate(s, (uint32_t)at, k);
            for (int f = 0; f < 6 && st == Q_OK; f++) {
                int32_t n[3] = {c[0] + face_dir[f][0], c[1] + face_dir[f][1], c[2] + face_dir[f][2]};
                long nj = summary_find(s, n);
                if (nj < 0 || q_hashmap_get(&s->queued, chunk_key(n)) != Q_HASHMAP_EMPTY)
                    continue;
                const isl_chunk *nc = &s->chunks.data[nj];
                uint16_t last = 0;
                for (uint32_t cell = 0; cell < FACE_CELLS && st == Q_OK; cell++) {
                    uint16_t lab = face_label(nc, f ^ 1, cell);
                    if (lab && lab != last)
                        st = push_candidate(s, (uint32_t)nj, lab - 1u);
                    last = lab;
                    if (!nc->faces)
                        break;
                }
            }
        }
        s->stats.candidates = s->cand.count;
        for (size_t i = 0; i < s->cand.count && st == Q_OK; i++)
            st = search_from(s, s->cand.data[i], ST_FIRST_SEARCH + (uint32_t)i);
        if (st != Q_OK)
            return st;
        /* Keep the earlier islands that nothing here touched. A touched one
         * has a node in a changed chunk or reached from one, and then (its
         * old graph being unchanged elsewhere) a node in or next to a
         * changed chunk: so islands whose box grown by one voxel misses
         * every changed chunk are kept without looking at their nodes. */
        size_t kept = 0;
        for (size_t i = 0; i < s->islands.count; i++) {
            island_rec *r = &s->islands.data[i];
            bool drop = r->extracted;
            bool near = drop || s->queue.count > 16;
            for (size_t q = 0; q < s->queue.count && !near; q++) {
                bool overlap = true;
                for (int a = 0; a < 3; a++) {
                    int64_t c0 = (int64_t)s->queue.data[q].c[a] * CS;
                    overlap &= r->pub.box.min[a] - 1 < c0 + CS && r->pub.box.max[a] + 1 > c0;
                }
                near = overlap;
            }
            for (size_t j = 0; j < r->nnodes && near && !drop; j++) {
                if (q_hashmap_get(&s->queued, chunk_key(r->nodes[j].c)) != Q_HASHMAP_EMPTY) {
                    drop = true;
                    break;
                }
                long at = summary_find(s, r->nodes[j].c);
                drop = at < 0 || q_hashmap_get(&s->state, node_id((uint32_t)at, r->nodes[j].comp)) !=
                                     Q_HASHMAP_EMPTY;
            }
            if (drop)
                free_island(r);
            else
                s->islands.data[kept++] = *r;
        }
        s->islands.count = kept;
    }
    if (st != Q_OK)
        return st;
    if (!q_array_reserve(&s->islands, s->islands.count + s->found.count))
        return Q_ERR_MEMORY;
    for (size_t i = 0; i < s->found.count; i++)
        s->islands.data[s->islands.count++] = s->found.data[i];
    s->found.count = 0;
    if (s->islands.count > 1)
        qsort(s->islands.data, s->islands.count, sizeof *s->islands.data, cmp_island);
    return Q_OK;
}

/* ---- update ---- */

#define SMALL_MAP 4096
static void shrink_map(q_hashmap *m)
{
    if (m->capacity > SMALL_MAP)
        q_hashmap_free(m);
    else
        q_hashmap_clear(m);
}

static bool refresh_materials(q_islands *s)
{
    bool changed = false;
    int n = q_material_count();
    for (int m = 0; m < Q_MATERIAL_MAX; m++) {
        const q_material *mat = m < n ? q_material_get(m) : NULL;
        bool solid = m != Q_MATERIAL_AIR && mat && !mat->liquid;
        changed |= solid != s->solid_mat[m];
        s->solid_mat[m] = solid;
    }
    return changed;
}

q_status q_islands_update(q_islands *s, const q_terrain *t, uint32_t chunk_budget, bool *done, char *err,
                          size_t errlen)
{
    if (done)
        *done = false;
    memset(&s->stats, 0, sizeof s->stats);
    bool mats_changed = refresh_materials(s);
    if (t != s->terrain || !s->initialized || mats_changed) {
        reset(s);
        s->terrain = t;
        s->full_pending = true;
    }
    bool full = s->full_pending;
    uint64_t now = q_terrain_version(t);
    if (!s->initialized) {
        if (!queue_all(s, t))
            goto oom;
        s->initialized = true;
    } else if (now != s->version) {
        gather g = {s, t, s->version, 4 * ((uint64_t)t->chunks.count + s->chunks.count) + 4096, 0, false, false};
        if (!q_terrain_changes_since(t, s->version, gather_box, &g) || g.full) {
            if (!queue_all(s, t))
                goto oom;
            full = s->full_pending = true;
        } else if (g.oom) {
            goto oom;
        }
    }
    s->version = now;
    s->result_valid = false;
    while (s->queue_pos < s->queue.count) {
        if (chunk_budget && s->stats.relabelled >= chunk_budget)
            goto stats;
        if (relabel(s, t, s->queue.data[s->queue_pos].c) != Q_OK)
            goto oom;
        s->queue_pos++;
        s->stats.relabelled++;
    }
    if (s->queue.count || full) {
        s->stats.full = full;
        if (search_phase(s, t, full) != Q_OK)
            goto oom;
        s->queue.count = s->queue_pos = 0;
        s->full_pending = false;
        /* Clearing costs the capacity: let maps grown by a full pass shrink,
         * so that later small updates stay small. */
        shrink_map(&s->queued);
        shrink_map(&s->state);
    }
    s->result_valid = true;
    s->result_version = now;
    if (done)
        *done = true;
stats:
    s->stats.chunks = s->chunks.count;
    return Q_OK;
oom:
    reset(s);
    s->full_pending = true;
    snprintf(err, errlen, "out of memory while finding islands");
    return Q_ERR_MEMORY;
}

size_t q_islands_count(const q_islands *s)
{
    return s->islands.count;
}

const q_island *q_islands_get(const q_islands *s, size_t index)
{
    return index < s->islands.count ? &s->islands.data[index].pub : NULL;
}

q_islands_stats q_islands_get_stats(const q_islands *s)
{
    q_islands_stats st = s->stats;
    st.chunks = s->chunks.count;
    st.components = 0;
    st.bytes = sizeof *s + sizeof *s->lab + s->chunks.capacity * sizeof(isl_chunk) +
               (size_t)q_hashmap_bytes(&s->chunk_index) + (size_t)q_hashmap_bytes(&s->state) +
               (size_t)q_hashmap_bytes(&s->queued);
    for (size_t i = 0; i < s->chunks.count; i++) {
        const isl_chunk *c = &s->chunks.data[i];
        st.components += c->ncomp;
        st.bytes += c->ncomp * sizeof(comp_info) + (c->faces ? 6 * FACE_CELLS * sizeof *c->faces : 0);
        for (int f = 0; f < 6; f++)
            st.bytes += c->nlinks[f] * sizeof(link);
    }
    for (size_t i = 0; i < s->islands.count; i++)
        st.bytes += s->islands.data[i].nnodes * sizeof(island_node);
    return st;
}

/* ---- extraction ---- */

q_box q_islands_extract_box(const q_island *island)
{
    q_box b = island->box;
    for (int a = 0; a < 3; a++) {
        b.min[a] = b.min[a] > -Q_TERRAIN_LIMIT ? b.min[a] - 1 : b.min[a];
        b.max[a] = b.max[a] < Q_TERRAIN_LIMIT ? b.max[a] + 1 : b.max[a];
    }
    return b;
}

enum { X_OTHER = 0, X_SOLID = 1, X_ISLAND = 2, X_TAKEN = 3 };

q_status q_islands_extract(q_islands *s, q_terrain *t, size_t index, uint8_t *materials, uint8_t *occupancy,
                           uint64_t *taken, char *err, size_t errlen)
{
    if (taken)
        *taken = 0;
    if (!s->result_valid || s->terrain != t || q_terrain_version(t) != s->result_version) {
        snprintf(err, errlen, "the terrain changed since the islands were found (update first)");
        return Q_ERR_ARGUMENT;
    }
    if (index >= s->islands.count || s->islands.data[index].extracted) {
        snprintf(err, errlen, "no island %zu to extract", index + 1);
        return Q_ERR_ARGUMENT;
    }
    const q_island *isl = &s->islands.data[index].pub;
    if (isl->too_large) {
        snprintf(err, errlen, "island of %llu voxels is over the size cap of %llu", (unsigned long long)isl->voxels,
                 (unsigned long long)s->def.max_voxels);
        return Q_ERR_TOO_LARGE;
    }
    /* Read a margin of two: the skin voxels (one out) need their own
     * neighbours to decide whether another solid touches them. */
    q_box ob = q_islands_extract_box(isl), rb = ob;
    for (int a = 0; a < 3; a++) {
        rb.min[a] = rb.min[a] > -Q_TERRAIN_LIMIT ? rb.min[a] - 1 : rb.min[a];
        rb.max[a] = rb.max[a] < Q_TERRAIN_LIMIT ? rb.max[a] + 1 : rb.max[a];
    }
    size_t n = (size_t)q_box_volume(rb);
    int32_t nx = rb.max[0] - rb.min[0], ny = rb.max[1] - rb.min[1], nz = rb.max[2] - rb.min[2];
    uint8_t *mat = q_alloc(n), *occ = q_alloc(n), *cls = q_calloc(n, 1);
    uint32_t *stack = q_alloc((size_t)isl->voxels * sizeof *stack);
    q_status st = Q_OK;
    if (!mat || !occ || !cls || !stack) {
        snprintf(err, errlen, "out of memory");
        st = Q_ERR_MEMORY;
        goto done;
    }
    if ((st = q_terrain_read(t, rb, mat, occ, err, errlen)) != Q_OK)
        goto done;
    for (size_t i = 0; i < n; i++)
        cls[i] = voxel_solid(s, (q_voxel){mat[i], occ[i]}) ? X_SOLID : X_OTHER;
    size_t sx = 1, sy = (size_t)nx, sz = (size_t)nx * (size_t)ny;
    size_t seed = (size_t)(isl->seed[0] - rb.min[0]) + sy * (size_t)(isl->seed[1] - rb.min[1]) +
                  sz * (size_t)(isl->seed[2] - rb.min[2]);
    if (cls[seed] != X_SOLID) {
        snprintf(err, errlen, "island %zu is no longer in the terrain", index + 1);
        st = Q_ERR_ARGUMENT;
        goto done;
    }
    /* Flood fill the island over faces; it lies inside ob, so neighbours of
     * its voxels are always inside rb. */
    uint64_t count = 0;
    size_t top = 0;
    cls[seed] = X_ISLAND;
    stack[top++] = (uint32_t)seed;
    const size_t step[6] = {sx, sx, sy, sy, sz, sz};
    while (top) {
        size_t v = stack[--top];
        count++;
        for (int f = 0; f < 6; f++) {
            size_t w = f & 1 ? v + step[f] : v - step[f];
            if (cls[w] == X_SOLID) {
                if (count + top >= isl->voxels) {
                    snprintf(err, errlen, "island %zu does not match the terrain", index + 1);
                    st = Q_ERR_ARGUMENT;
                    goto done;
                }
                cls[w] = X_ISLAND;
                stack[top++] = (uint32_t)w;
            }
        }
    }
    if (count != isl->voxels) {
        snprintf(err, errlen, "island %zu does not match the terrain", index + 1);
        st = Q_ERR_ARGUMENT;
        goto done;
    }
    /* Skin: partly filled non-liquid voxels in ob next to the island and to
     * no other solid (26 neighbours). */
    const q_material *mt;
    for (int32_t z = 1; z < nz - 1; z++)
        for (int32_t y = 1; y < ny - 1; y++)
            for (int32_t x = 1; x < nx - 1; x++) {
                size_t i = (size_t)x + sy * (size_t)y + sz * (size_t)z;
                if (cls[i] != X_OTHER || occ[i] == 0 || !(mt = q_material_get(mat[i])) || mt->liquid)
                    continue;
                bool touches = false, other = false;
                for (int dz = -1; dz <= 1; dz++)
                    for (int dy = -1; dy <= 1; dy++)
                        for (int dx = -1; dx <= 1; dx++) {
                            uint8_t c = cls[(size_t)((ptrdiff_t)i + dx + (ptrdiff_t)sy * dy + (ptrdiff_t)sz * dz)];
                            touches |= c == X_ISLAND;
                            other |= c == X_SOLID;
                        }
                if (touches && !other)
                    cls[i] = X_TAKEN;
            }
    /* Output box ob, and the terrain's box ob with the taken voxels cleared. */
    int32_t ox = ob.max[0] - ob.min[0], oy = ob.max[1] - ob.min[1], oz = ob.max[2] - ob.min[2];
    uint64_t took = 0;
    size_t o = 0;
    for (int32_t z = 0; z < oz; z++)
        for (int32_t y = 0; y < oy; y++)
            for (int32_t x = 0; x < ox; x++, o++) {
                size_t i = (size_t)(x + 1) + sy * (size_t)(y + 1) + sz * (size_t)(z + 1);
                bool take = cls[i] == X_ISLAND || cls[i] == X_TAKEN;
                materials[o] = take ? mat[i] : 0;
                occupancy[o] = take ? occ[i] : 0;
                /* reuse the read arrays (compacted into ob order) for the write */
                mat[o] = take ? 0 : mat[i];
                occ[o] = take ? 0 : occ[i];
                took += take;
            }
    /* o never passes i above (i >= o for every voxel), so the compaction in
     * place reads each source before it is overwritten. */
    if ((st = q_terrain_write(t, ob, mat, occ, err, errlen)) != Q_OK)
        goto done;
    s->islands.data[index].extracted = true;
    s->result_version = q_terrain_version(t);
    if (taken)
        *taken = took;
done:
    q_free(mat, n);
    q_free(occ, n);
    q_free(cls, n);
    q_free(stack, (size_t)isl->voxels * sizeof *stack);
    return st;
}
