/* Quadric edge collapse: see simplify.h.
 *
 * Data: triangles (3 vertex ids, dead ones marked), per vertex a list of the
 * triangles that use it kept in one growable pool (a collapse appends the
 * survivor's merged list at the pool's end; dead triangles in a list are
 * skipped), the live triangle count per vertex, a quadric per vertex and a
 * version per vertex. A heap entry holds the versions of its two vertices:
 * once either changed (the survivor of a collapse gets a new version) the
 * entry is stale and skipped. Collapses refused because of their
 * neighbourhood are retried in another pass over all live edges while a
 * pass still made progress.
 */
#include "mesh/simplify.h"

#include "core/alloc.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

static atomic_int lod_mode = Q_LOD_CLUSTER;

void q_simplify_set_lod_mode(q_lod_mode mode)
{
    atomic_store(&lod_mode, mode == Q_LOD_COLLAPSE ? Q_LOD_COLLAPSE : Q_LOD_CLUSTER);
}

q_lod_mode q_simplify_lod_mode(void)
{
    return (q_lod_mode)atomic_load(&lod_mode);
}

q_simplify_def q_default_simplify_def(void)
{
    return (q_simplify_def){.target_index_count = 0, .locked = NULL, .lock_border = true};
}

/* Symmetric 4x4 quadric: A (xx xy xz yy yz zz), b, c; E(x) = x.A.x + 2 b.x + c. */
typedef struct quadric {
    double a[6], b[3], c;
} quadric;

static inline void quadric_add(quadric *q, const quadric *r)
{
    for (int i = 0; i < 6; i++)
        q->a[i] += r->a[i];
    for (int i = 0; i < 3; i++)
        q->b[i] += r->b[i];
    q->c += r->c;
}

static double quadric_eval(const quadric *q, const double x[3])
{
    const double *a = q->a;
    double e = a[0] * x[0] * x[0] + a[3] * x[1] * x[1] + a[5] * x[2] * x[2] +
               2 * (a[1] * x[0] * x[1] + a[2] * x[0] * x[2] + a[4] * x[1] * x[2]);
    e += 2 * (q->b[0] * x[0] + q->b[1] * x[1] + q->b[2] * x[2]) + q->c;
    return e > 0 ? e : 0;
}

/* Minimiser of q: solves A x = -b by Cramer's rule; false when A is near
 * singular (flat or cylindrical neighbourhoods: the endpoints do as well). */
static bool quadric_optimum(const quadric *q, double x[3])
{
    const double *a = q->a;
    double m00 = a[0], m01 = a[1], m02 = a[2], m11 = a[3], m12 = a[4], m22 = a[5];
    double c00 = m11 * m22 - m12 * m12, c01 = m02 * m12 - m01 * m22, c02 = m01 * m12 - m02 * m11;
    double det = m00 * c00 + m01 * c01 + m02 * c02;
    double tr = m00 + m11 + m22;
    /* relative to the trace cubed: det/tr^3 is at most 1/27 and tends to 0
     * as one eigenvalue does; 1e-6 keeps conditioning within about 1e4 */
    if (!(tr > 0) || fabs(det) < 1e-6 * tr * tr * tr)
        return false;
    double c11 = m00 * m22 - m02 * m02, c12 = m01 * m02 - m00 * m12, c22 = m00 * m11 - m01 * m01;
    double r[3] = {-q->b[0], -q->b[1], -q->b[2]};
    x[0] = (c00 * r[0] + c01 * r[1] + c02 * r[2]) / det;
    x[1] = (c01 * r[0] + c11 * r[1] + c12 * r[2]) / det;
    x[2] = (c02 * r[0] + c12 * r[1] + c22 * r[2]) / det;
    return isfinite(x[0]) && isfinite(x[1]) && isfinite(x[2]);
}

/* Positions are floats outside, so targets are kept as floats (the cost
 * lives in the heap key). */
typedef struct entry {
    float x[3];
    uint32_t keep, gone; /* gone collapses into keep, which moves to x */
    uint32_t vkeep, vgone;
} entry;

typedef struct state {
    size_t nv, nt;
    uint32_t *tri; /* 3 per triangle; tri[3t] == UINT32_MAX: dead */
    double *pos;
    quadric *q;
    uint8_t *lock;
    uint32_t *ver, *live, *mark;
    uint32_t *lstart, *lcount; /* list of v: pool[lstart[v] .. + lcount[v]) */
    uint32_t *pool;
    size_t npool, cappool;
    entry *ents; /* every pushed collapse, in push order */
    size_t nents, capents;
    uint64_t *heap; /* float bits of the cost << 32 | index in ents */
    size_t nheap, capheap;
    bool bulk; /* heap_push appends only; push_all heapifies after */
    uint32_t gen;
    uint32_t *alias; /* collapsed into (union-find, for remap) */
} state;

/* The heap holds 8-byte keys so that sifting stays in cache: a
 * non-negative float's bits order as the float does. */
static bool heap_push(state *s, const entry *e, double cost)
{
    if (s->nents == s->capents) {
        size_t cap = s->capents ? 2 * s->capents : 1024;
        entry *ne = q_realloc(s->ents, s->capents * sizeof(entry), cap * sizeof(entry));
        if (!ne)
            return false;
        s->ents = ne;
        s->capents = cap;
    }
    if (s->nheap == s->capheap) {
        size_t cap = s->capheap ? 2 * s->capheap : 1024;
        uint64_t *h = q_realloc(s->heap, s->capheap * sizeof(uint64_t), cap * sizeof(uint64_t));
        if (!h)
            return false;
        s->heap = h;
        s->capheap = cap;
    }
    if (s->nents >= UINT32_MAX)
        return false;
    float fc = cost < 3e38 ? (float)cost : 3e38f;
    uint32_t bits;
    memcpy(&bits, &fc, sizeof bits);
    uint64_t key = (uint64_t)bits << 32 | (uint32_t)s->nents;
    s->ents[s->nents++] = *e;
    if (s->bulk) {
        s->heap[s->nheap++] = key;
        return true;
    }
    size_t i = s->nheap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (s->heap[p] <= key)
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = key;
    return true;
}

/* Puts key at hole i and sifts it down through the first n keys. */
static void sift_down(uint64_t *h, size_t n, size_t i, uint64_t key)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        c += c + 1 < n && h[c + 1] < h[c];
        if (key <= h[c])
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = key;
}

static entry heap_pop(state *s)
{
    uint64_t top = s->heap[0], last = s->heap[--s->nheap];
    if (s->nheap)
        sift_down(s->heap, s->nheap, 0, last);
    return s->ents[(uint32_t)top];
}

static const double *P(const state *s, uint32_t v)
{
    return &s->pos[3 * v];
}

/* Pushes the collapse of edge (u, v) at its best target; nothing when both
 * are locked. */
static bool push_edge(state *s, uint32_t u, uint32_t v)
{
    if (s->lock[u] && s->lock[v])
        return true;
    entry e = {0};
    double cost = INFINITY, best[3];
    if (s->lock[u] || s->lock[v]) {
        e.keep = s->lock[u] ? u : v;
        e.gone = s->lock[u] ? v : u;
        memcpy(best, P(s, e.keep), sizeof best);
        quadric sum = s->q[u];
        quadric_add(&sum, &s->q[v]);
        cost = quadric_eval(&sum, best);
    } else {
        quadric sum = s->q[u];
        quadric_add(&sum, &s->q[v]);
        const double *pu = P(s, u), *pv = P(s, v);
        double cand[4][3], len2 = 0;
        int nc = 0;
        for (int a = 0; a < 3; a++) {
            cand[0][a] = pu[a];
            cand[1][a] = pv[a];
            cand[2][a] = 0.5 * (pu[a] + pv[a]);
            len2 += (pu[a] - pv[a]) * (pu[a] - pv[a]);
        }
        nc = 3;
        /* the optimum only when it stays within an edge length of the
         * midpoint: far optima come from nearly flat quadrics */
        if (quadric_optimum(&sum, cand[3])) {
            double d2 = 0;
            for (int a = 0; a < 3; a++)
                d2 += (cand[3][a] - cand[2][a]) * (cand[3][a] - cand[2][a]);
            if (d2 <= len2)
                nc = 4;
        }
        for (int c = 0; c < nc; c++) {
            double cc = quadric_eval(&sum, cand[c]);
            if (cc < cost) {
                cost = cc;
                memcpy(best, cand[c], sizeof best);
            }
        }
        e.keep = u;
        e.gone = v;
    }
    for (int a = 0; a < 3; a++)
        e.x[a] = (float)best[a];
    e.vkeep = s->ver[e.keep];
    e.vgone = s->ver[e.gone];
    return heap_push(s, &e, cost);
}

static void cross_at(const double *a, const double *b, const double *c, double n[3])
{
    double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    n[0] = e1[1] * e2[2] - e1[2] * e2[1];
    n[1] = e1[2] * e2[0] - e1[0] * e2[2];
    n[2] = e1[0] * e2[1] - e1[1] * e2[0];
}

/* Moving vertex m of its live triangles to x (the ones that also hold
 * `other` vanish in the collapse) keeps every normal within about 84 degrees
 * of its old direction and every triangle of non-negligible area. */
static bool moves_ok(const state *s, uint32_t m, uint32_t other, const double x[3])
{
    for (uint32_t k = 0; k < s->lcount[m]; k++) {
        uint32_t t = s->pool[s->lstart[m] + k];
        const uint32_t *tv = &s->tri[3 * t];
        if (tv[0] == UINT32_MAX)
            continue;
        if (tv[0] == other || tv[1] == other || tv[2] == other)
            continue;
        const double *p[3], *q[3];
        for (int i = 0; i < 3; i++) {
            p[i] = P(s, tv[i]);
            q[i] = tv[i] == m ? x : p[i];
        }
        double n0[3], n1[3];
        cross_at(p[0], p[1], p[2], n0);
        cross_at(q[0], q[1], q[2], n1);
        double l0 = sqrt(n0[0] * n0[0] + n0[1] * n0[1] + n0[2] * n0[2]);
        double l1 = sqrt(n1[0] * n1[0] + n1[1] * n1[1] + n1[2] * n1[2]);
        double d = n0[0] * n1[0] + n0[1] * n1[1] + n0[2] * n1[2];
        /* 0.1: cos 84 degrees; 1e-3 of the old area keeps slivers out */
        if (!(d > 0.1 * l0 * l1) || !(l1 > 1e-3 * l0))
            return false;
    }
    return true;
}

/* Link condition: the common neighbours of u and v are exactly the third
 * vertices of the triangles on edge uv, and none of those drops under
 * three triangles. u is the survivor; when it is locked, v must not bring it
 * a new locked neighbour. */
static bool link_ok(state *s, uint32_t u, uint32_t v)
{
    uint32_t g = s->gen += 2;
    for (uint32_t k = 0; k < s->lcount[u]; k++) {
        const uint32_t *tv = &s->tri[3 * s->pool[s->lstart[u] + k]];
        if (tv[0] == UINT32_MAX)
            continue;
        for (int i = 0; i < 3; i++)
            if (tv[i] != u)
                s->mark[tv[i]] = g;
    }
    uint32_t common = 0, faces = 0;
    for (uint32_t k = 0; k < s->lcount[v]; k++) {
        const uint32_t *tv = &s->tri[3 * s->pool[s->lstart[v] + k]];
        if (tv[0] == UINT32_MAX)
            continue;
        bool has_u = tv[0] == u || tv[1] == u || tv[2] == u;
        for (int i = 0; i < 3; i++) {
            uint32_t w = tv[i];
            if (w == u || w == v)
                continue;
            if (has_u && s->live[w] <= 3)
                return false;
            if (s->mark[w] == g) {
                s->mark[w] = g + 1;
                common++;
            } else if (s->lock[u] && s->lock[w] && s->mark[w] != g + 1)
                return false; /* new edge between two locked vertices: it
                                 may exist outside this mesh (a seam) */
        }
        faces += has_u;
    }
    return faces >= 1 && common == faces;
}

/* Collapses gone into keep at x. keep's edges are not pushed again here:
 * their old entries (of keep or of gone) come up stale and are re-costed
 * then (merging quadrics only raises costs, so they come up no later than
 * their new cost). */
static bool collapse(state *s, const entry *e, const double x[3])
{
    uint32_t keep = e->keep, gone = e->gone;
    memcpy(&s->pos[3 * keep], x, 3 * sizeof(double));
    quadric_add(&s->q[keep], &s->q[gone]);
    size_t need = (size_t)s->lcount[keep] + s->lcount[gone];
    if (s->npool + need > s->cappool) {
        size_t cap = s->cappool * 2 > s->npool + need ? s->cappool * 2 : s->npool + need;
        if (cap > UINT32_MAX)
            return false;
        uint32_t *np = q_realloc(s->pool, s->cappool * sizeof(uint32_t), cap * sizeof(uint32_t));
        if (!np)
            return false;
        s->pool = np;
        s->cappool = cap;
    }
    uint32_t start = (uint32_t)s->npool, n = 0;
    for (uint32_t k = 0; k < s->lcount[gone]; k++) {
        uint32_t t = s->pool[s->lstart[gone] + k];
        uint32_t *tv = &s->tri[3 * t];
        if (tv[0] == UINT32_MAX)
            continue;
        if (tv[0] == keep || tv[1] == keep || tv[2] == keep) {
            for (int i = 0; i < 3; i++)
                s->live[tv[i]]--;
            tv[0] = tv[1] = tv[2] = UINT32_MAX;
            continue;
        }
        for (int i = 0; i < 3; i++)
            if (tv[i] == gone)
                tv[i] = keep;
        s->pool[start + n++] = t;
        s->live[keep]++;
    }
    for (uint32_t k = 0; k < s->lcount[keep]; k++) {
        uint32_t t = s->pool[s->lstart[keep] + k];
        if (s->tri[3 * t] != UINT32_MAX)
            s->pool[start + n++] = t;
    }
    s->npool += n;
    s->lstart[keep] = start;
    s->lcount[keep] = n;
    s->lcount[gone] = 0;
    s->live[gone] = 0;
    s->ver[keep]++;
    s->ver[gone]++;
    s->alias[gone] = keep;
    return true;
}

/* The vertex v ended in (path halving). */
static uint32_t root(state *s, uint32_t v)
{
    while (s->alias[v] != v) {
        s->alias[v] = s->alias[s->alias[v]];
        v = s->alias[v];
    }
    return v;
}

static bool adjacent(const state *s, uint32_t a, uint32_t b)
{
    for (uint32_t k = 0; k < s->lcount[a]; k++) {
        const uint32_t *tv = &s->tri[3 * s->pool[s->lstart[a] + k]];
        if (tv[0] != UINT32_MAX && (tv[0] == b || tv[1] == b || tv[2] == b))
            return true;
    }
    return false;
}

/* Heap of every live edge, once per direction u < v as wound in its
 * triangles (edges with only the other direction have two locked ends). */
static bool push_all(state *s)
{
    s->nheap = s->nents = 0;
    s->bulk = true;
    for (size_t t = 0; t < s->nt; t++) {
        const uint32_t *tv = &s->tri[3 * t];
        if (tv[0] == UINT32_MAX)
            continue;
        for (int i = 0; i < 3; i++) {
            uint32_t a = tv[i], b = tv[(i + 1) % 3];
            if (a < b && !push_edge(s, a, b)) {
                s->bulk = false;
                return false;
            }
        }
    }
    s->bulk = false;
    for (size_t i = s->nheap / 2; i-- > 0;)
        sift_down(s->heap, s->nheap, i, s->heap[i]);
    return true;
}

/* The vertex after and before v in triangle tv. */
static uint32_t next_of(const uint32_t *tv, uint32_t v)
{
    return tv[0] == v ? tv[1] : tv[1] == v ? tv[2] : tv[0];
}

static uint32_t prev_of(const uint32_t *tv, uint32_t v)
{
    return tv[0] == v ? tv[2] : tv[1] == v ? tv[0] : tv[1];
}

/* Locks both ends of every edge not used exactly once in each direction:
 * for each directed edge a -> b, a's triangles are searched for a -> b and
 * b -> a (lists are short: a few dozen steps per vertex). */
static void lock_borders(state *s)
{
    for (uint32_t a = 0; a < s->nv; a++) {
        const uint32_t *list = &s->pool[s->lstart[a]];
        for (uint32_t i = 0; i < s->lcount[a]; i++) {
            uint32_t b = next_of(&s->tri[3 * list[i]], a);
            int fwd = 0, rev = 0;
            for (uint32_t k = 0; k < s->lcount[a]; k++) {
                const uint32_t *tv = &s->tri[3 * list[k]];
                fwd += next_of(tv, a) == b;
                rev += prev_of(tv, a) == b;
            }
            if (fwd != 1 || rev != 1)
                s->lock[a] = s->lock[b] = 1;
        }
    }
}

static void state_free(state *s)
{
    q_free(s->tri, 3 * s->nt * sizeof(uint32_t));
    q_free(s->pos, 3 * s->nv * sizeof(double));
    q_free(s->q, s->nv * sizeof(quadric));
    q_free(s->lock, s->nv);
    q_free(s->ver, s->nv * sizeof(uint32_t));
    q_free(s->live, s->nv * sizeof(uint32_t));
    q_free(s->mark, s->nv * sizeof(uint32_t));
    q_free(s->lstart, s->nv * sizeof(uint32_t));
    q_free(s->lcount, s->nv * sizeof(uint32_t));
    q_free(s->alias, s->nv * sizeof(uint32_t));
    q_free(s->pool, s->cappool * sizeof(uint32_t));
    q_free(s->ents, s->capents * sizeof(entry));
    q_free(s->heap, s->capheap * sizeof(uint64_t));
}

size_t q_simplify(uint32_t *out, const uint32_t *indices, size_t index_count, float *positions, size_t vertex_count,
                  const q_simplify_def *def, uint32_t *remap, q_simplify_stats *stats)
{
    q_simplify_stats st = {0};
    if (stats)
        *stats = st;
    state s = {0};
    s.nv = vertex_count;
    s.nt = index_count / 3;
    if (vertex_count >= UINT32_MAX || 3 * s.nt >= UINT32_MAX)
        return SIZE_MAX;
    if (s.nt == 0 || vertex_count == 0) {
        if (remap)
            for (size_t v = 0; v < vertex_count; v++)
                remap[v] = (uint32_t)v;
        return 0;
    }
    s.tri = q_alloc(3 * s.nt * sizeof(uint32_t));
    s.pos = q_alloc(3 * s.nv * sizeof(double));
    s.q = q_calloc(s.nv, sizeof(quadric));
    s.lock = q_calloc(s.nv, 1);
    s.ver = q_calloc(s.nv, sizeof(uint32_t));
    s.live = q_calloc(s.nv, sizeof(uint32_t));
    s.mark = q_calloc(s.nv, sizeof(uint32_t));
    s.lstart = q_calloc(s.nv, sizeof(uint32_t));
    s.lcount = q_calloc(s.nv, sizeof(uint32_t));
    s.alias = q_alloc(s.nv * sizeof(uint32_t));
    s.cappool = 6 * s.nt + 64;
    s.pool = q_alloc(s.cappool * sizeof(uint32_t));
    /* about 1.5 edges per triangle, then a handful of pushes per collapse */
    s.capents = s.capheap = 4 * s.nt + 64;
    s.ents = q_alloc(s.capents * sizeof(entry));
    s.heap = q_alloc(s.capheap * sizeof(uint64_t));
    size_t result = SIZE_MAX;
    if (!s.tri || !s.pos || !s.q || !s.lock || !s.ver || !s.live || !s.mark || !s.lstart || !s.lcount ||
        !s.alias || !s.pool || !s.ents || !s.heap)
        goto done;
    /* degenerate input triangles (a repeated index) are dropped */
    size_t nt = 0;
    for (size_t t = 0; t < s.nt; t++) {
        uint32_t a = indices[3 * t], b = indices[3 * t + 1], c = indices[3 * t + 2];
        if (a == b || b == c || a == c || a >= vertex_count || b >= vertex_count || c >= vertex_count)
            continue;
        s.tri[3 * nt] = a;
        s.tri[3 * nt + 1] = b;
        s.tri[3 * nt + 2] = c;
        nt++;
    }
    s.nt = nt;
    for (size_t v = 0; v < s.nv; v++) {
        s.alias[v] = (uint32_t)v;
        for (int a = 0; a < 3; a++)
            s.pos[3 * v + a] = positions[3 * v + a];
        if (def->locked && def->locked[v])
            s.lock[v] = 1;
    }
    /* lists: counting sort of triangle corners by vertex */
    for (size_t i = 0; i < 3 * s.nt; i++)
        s.live[s.tri[i]]++;
    uint32_t acc = 0;
    for (size_t v = 0; v < s.nv; v++) {
        s.lstart[v] = acc;
        acc += s.live[v];
    }
    for (size_t t = 0; t < s.nt; t++)
        for (int i = 0; i < 3; i++) {
            uint32_t v = s.tri[3 * t + i];
            s.pool[s.lstart[v] + s.lcount[v]++] = (uint32_t)t;
        }
    s.npool = acc;
    if (def->lock_border)
        lock_borders(&s);
    /* quadrics: plane of each triangle weighted by its area,
     * c c^T / (2 |c|) with c the (twice-area) cross product */
    for (size_t t = 0; t < s.nt; t++) {
        const uint32_t *tv = &s.tri[3 * t];
        double c[3];
        cross_at(P(&s, tv[0]), P(&s, tv[1]), P(&s, tv[2]), c);
        double l = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
        if (!(l > 0))
            continue;
        double n[3] = {c[0] / l, c[1] / l, c[2] / l}, w = 0.5 * l;
        const double *p = P(&s, tv[0]);
        double d = -(n[0] * p[0] + n[1] * p[1] + n[2] * p[2]);
        quadric pq = {{w * n[0] * n[0], w * n[0] * n[1], w * n[0] * n[2], w * n[1] * n[1], w * n[1] * n[2],
                       w * n[2] * n[2]},
                      {w * d * n[0], w * d * n[1], w * d * n[2]},
                      w * d * d};
        for (int i = 0; i < 3; i++)
            quadric_add(&s.q[tv[i]], &pq);
    }
    size_t live_tris = s.nt, target = def->target_index_count / 3;
    bool progress = true;
    while (live_tris > target && progress) {
        progress = false;
        if (!push_all(&s))
            goto done;
        while (live_tris > target && s.nheap) {
            entry e = heap_pop(&s);
            if (s.ver[e.keep] != e.vkeep || s.ver[e.gone] != e.vgone) {
                uint32_t a = root(&s, e.keep), b = root(&s, e.gone);
                if (a != b && adjacent(&s, a, b) && !push_edge(&s, a < b ? a : b, a < b ? b : a))
                    goto done;
                continue;
            }
            double x[3] = {e.x[0], e.x[1], e.x[2]};
            if (s.lock[e.gone] || (s.lock[e.keep] && memcmp(x, P(&s, e.keep), sizeof x) != 0) ||
                !link_ok(&s, e.keep, e.gone) || !moves_ok(&s, e.gone, e.keep, x) || !moves_ok(&s, e.keep, e.gone, x)) {
                st.rejected++;
                continue;
            }
            uint32_t before = s.live[e.keep] + s.live[e.gone];
            if (!collapse(&s, &e, x))
                goto done;
            /* each triangle on the edge counted in both and died */
            live_tris -= (before - s.live[e.keep]) / 2;
            st.collapses++;
            double cost = quadric_eval(&s.q[e.keep], x);
            st.max_cost = cost > st.max_cost ? cost : st.max_cost;
            progress = true;
        }
    }
    size_t w = 0;
    for (size_t t = 0; t < s.nt; t++) {
        if (s.tri[3 * t] == UINT32_MAX)
            continue;
        for (int i = 0; i < 3; i++)
            out[w++] = s.tri[3 * t + i];
    }
    for (size_t v = 0; v < s.nv; v++) {
        if (s.alias[v] != v)
            continue;
        for (int a = 0; a < 3; a++)
            positions[3 * v + a] = (float)s.pos[3 * v + a];
    }
    if (remap)
        for (size_t v = 0; v < s.nv; v++)
            remap[v] = root(&s, (uint32_t)v);
    result = w;
done:
    state_free(&s);
    if (stats)
        *stats = st;
    return result;
}
