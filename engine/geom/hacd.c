/* HACD convex decomposition: see hacd.h for the algorithm and its sources
 * (Mamou and Ghorbel, ICIP 2009; design note 001).
 *
 * Everything below runs in scaled units (the mesh centred and scaled into a
 * `scale` cube), where s = connect_dist is the one tolerance: the weld
 * distance, q_hull's quantization distance (so flatness is decided by q_hull
 * and nowhere else), the slack of the inside test, and the noise floor of
 * the concavity error.
 */
#include "geom/hacd.h"

#include "core/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NONE UINT32_MAX
/* Neighbour entries carry this bit when merging with that neighbour was
 * refused with a solid predicted hull: the hull of a superset of points
 * contains that hull, every sample inside it stays inside and its ray to
 * the boundary only gets longer, so the merge stays refused after either
 * side grows (the flat area rule has no such bound and is never marked). */
#define BLOCKED 0x80000000u
#define ID_MASK 0x7fffffffu
/* Auto sample spacing aims at this many surface samples. */
#define HACD_TARGET_SAMPLES 20000.0
/* The sample grid has at most this many cells. */
#define HACD_MAX_CELLS (1u << 21)
/* Above this many triangles on one mesh edge, they are chained instead of
 * connected pairwise. */
#define HACD_FAN_PAIRS 8

typedef struct sample {
    float p[3], n[3];
    uint32_t comp;
    uint32_t bin; /* normal_bin of n */
    uint32_t tri; /* its triangle; SLIVER set for samples along a triangle
                     that holds no grid point */
    float r;      /* radius of its patch: the finer points that stand for it */
} sample;

/* What hull_error scans, apart from the rest (16 bytes a sample). */
typedef struct sample_pos {
    float p[3];
    uint32_t comp;
} sample_pos;

/* Patches. A sample stands for the part of its triangle around it: the
 * points of the grid of spacing h / PATCH_K in its cell (the finer grid
 * contains the coarse one, PATCH_K being odd) and the nearest points of the
 * triangle's edges within EDGE_REACH spacings; for a sample along a sliver,
 * PATCH_K points across each of PATCH_K sub-slabs of its slab. The error is taken on samples as seed
 * 001 says, but where a sample's patch could hold a ray longer than both the
 * error so far and the concavity limit (a bound from the patch radius, see
 * hull_error), the patch's points are tested too: a hull that takes in a
 * sliver of surface between two samples is no longer rated by the samples
 * just outside it. */
#define SLIVER 0x80000000u
#define PATCH_K 3

/* Directions binned on a cube map, NORMAL_BINS_SIDE^2 bins per face: a
 * sample on the surface of a hull lies on a face whose normal is close to
 * its own, so the hull planes in the sample's bin settle it first. */
#define NORMAL_BINS_SIDE 4
#define NORMAL_BINS (6 * NORMAL_BINS_SIDE * NORMAL_BINS_SIDE)

static uint32_t normal_bin(const double *n)
{
    int ax = 0;
    for (int i = 1; i < 3; i++)
        if (fabs(n[i]) > fabs(n[ax]))
            ax = i;
    double m = fabs(n[ax]);
    if (!(m > 0))
        return 0;
    int b[2];
    for (int k = 0; k < 2; k++) {
        double u = n[(ax + 1 + k) % 3] / m; /* in [-1, 1] */
        int i = (int)((u + 1) * 0.5 * NORMAL_BINS_SIDE);
        b[k] = i < 0 ? 0 : i >= NORMAL_BINS_SIDE ? NORMAL_BINS_SIDE - 1 : i;
    }
    return (uint32_t)(((ax * 2 + (n[ax] < 0)) * NORMAL_BINS_SIDE + b[0]) * NORMAL_BINS_SIDE + b[1]);
}

typedef struct cluster {
    double *pts; /* hull vertices (x, y, z), scaled units */
    uint32_t npts, ptcap; /* ptcap counts doubles */
    uint32_t *nb; /* neighbour clusters, possibly merged away (resolve with find) */
    double *nbe, *nbv; /* per neighbour: lower bounds of the merge's error and
                          of its hull's volume, from earlier evaluations */
    uint32_t nnb, nbcap;
    double area; /* surface area of the cluster's triangles */
    double volume; /* of its hull */
    uint32_t ntri, version, comp;
    bool alive;
} cluster;

typedef struct heap_entry {
    double key, tie, err; /* merge order, then tie; concavity error */
    uint32_t a, b, va, vb;
    double *pts; /* the predicted hull's vertices, owned by the entry */
    uint32_t npts;
    double volume; /* of the predicted hull */
} heap_entry;

typedef struct ctx {
    double s;
    /* welded geometry, scaled */
    double *pos;
    size_t nv;
    uint32_t *tri; /* 3 per kept triangle */
    uint32_t *tri_orig;
    size_t nt;
    /* samples in cell order and the grid over them */
    sample *samp;
    sample_pos *spos; /* positions and components of samp, for the scan */
    size_t nsamp;
    uint32_t *cell_start;
    int dims[3];
    double gmin[3], cell;
    /* clusters, one per kept triangle at first */
    cluster *cl;
    uint32_t *parent;
    uint32_t *mark, *slot;
    uint32_t stamp;
    bool last_solid; /* the last edge_error's hull was solid */
    size_t alive;
    /* hull scratch */
    double *buf;
    size_t bufcap;
    uint32_t *hv, *hi;
    size_t hvcap, hicap;
    double *planes;
    size_t plcap;
    uint32_t *bin_items;
    size_t bincap;
    uint32_t bin_start[NORMAL_BINS + 1];
    q_hull_info info;
    double hull_volume; /* of the last hull_error's hull */
    double h;            /* sample spacing */
    double max_r;        /* largest patch radius */
    double refine_floor; /* patches are refined only for rays past this (the concavity) */
    double volume_weight;
    /* queue */
    heap_entry *heap;
    size_t nheap, heapcap;
    /* trace */
    q_hacd_merge *trace;
    size_t ntrace, tracecap;
    size_t merges;
    q_status st;
    char *err;
    size_t errlen;
} ctx;

/* ---------------------------------------------------------------- helpers */

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t nc = *cap ? *cap : 8;
    while (nc < need)
        nc *= 2;
    void *np = q_realloc(*p, *cap * elem, nc * elem);
    if (!np)
        return false;
    *p = np;
    *cap = nc;
    return true;
}

static bool grow32(void **p, uint32_t *cap, size_t need, size_t elem)
{
    size_t c = *cap;
    bool ok = grow(p, &c, need, elem);
    *cap = (uint32_t)c;
    return ok;
}

typedef struct cluster cluster;
static bool grow_nb(cluster *k, size_t need);

static q_status fail(ctx *c, q_status st, const char *msg)
{
    if (c->st == Q_OK) {
        c->st = st;
        if (c->err && c->errlen)
            snprintf(c->err, c->errlen, "%s", msg);
    }
    return st;
}

static void sub3(const double *a, const double *b, double *r)
{
    r[0] = a[0] - b[0];
    r[1] = a[1] - b[1];
    r[2] = a[2] - b[2];
}

static double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross3(const double *a, const double *b, double *r)
{
    r[0] = a[1] * b[2] - a[2] * b[1];
    r[1] = a[2] * b[0] - a[0] * b[2];
    r[2] = a[0] * b[1] - a[1] * b[0];
}

static double tri_area2(const double *a, const double *b, const double *c, double n[3])
{
    double e1[3], e2[3];
    sub3(b, a, e1);
    sub3(c, a, e2);
    cross3(e1, e2, n);
    return sqrt(dot3(n, n));
}

static uint32_t uf_find(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static void uf_union(uint32_t *parent, uint32_t a, uint32_t b)
{
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a != b)
        parent[a < b ? b : a] = a < b ? a : b;
}

/* ---------------------------------------------------------------- welding */

typedef struct cell_key {
    int64_t k[3];
    uint32_t v;
} cell_key;

static int cmp_cell_key(const void *pa, const void *pb)
{
    const cell_key *a = pa, *b = pb;
    for (int i = 0; i < 3; i++)
        if (a->k[i] != b->k[i])
            return a->k[i] < b->k[i] ? -1 : 1;
    return a->v < b->v ? -1 : a->v > b->v;
}

static size_t lower_bound_key(const cell_key *keys, size_t n, const int64_t k[3])
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const int64_t *m = keys[mid].k;
        int c = 0;
        for (int i = 0; i < 3 && !c; i++)
            if (m[i] != k[i])
                c = m[i] < k[i] ? -1 : 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Welds vertices within s (transitively); rep[v] = welded index. Writes
 * the welded positions over c->pos and sets c->nv. */
static q_status weld(ctx *c, const double *pos, size_t n, uint32_t *rep)
{
    cell_key *keys = q_alloc(n * sizeof *keys);
    uint32_t *parent = q_alloc(n * sizeof *parent);
    if (!keys || !parent) {
        q_free(keys, n * sizeof *keys);
        q_free(parent, n * sizeof *parent);
        return fail(c, Q_ERR_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        for (int a = 0; a < 3; a++)
            keys[i].k[a] = (int64_t)floor(pos[3 * i + a] / c->s);
        keys[i].v = (uint32_t)i;
        parent[i] = (uint32_t)i;
    }
    qsort(keys, n, sizeof *keys, cmp_cell_key);
    double s2 = c->s * c->s;
    for (size_t i = 0; i < n; i++) {
        const double *p = pos + 3 * keys[i].v;
        for (int dx = -1; dx <= 1; dx++)
            for (int dy = -1; dy <= 1; dy++)
                for (int dz = -1; dz <= 1; dz++) {
                    int64_t k[3] = {keys[i].k[0] + dx, keys[i].k[1] + dy, keys[i].k[2] + dz};
                    for (size_t j = lower_bound_key(keys, n, k); j < n; j++) {
                        if (keys[j].k[0] != k[0] || keys[j].k[1] != k[1] || keys[j].k[2] != k[2])
                            break;
                        if (keys[j].v <= keys[i].v)
                            continue;
                        double d[3];
                        sub3(pos + 3 * keys[j].v, p, d);
                        if (dot3(d, d) <= s2)
                            uf_union(parent, keys[i].v, keys[j].v);
                    }
                }
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t r = uf_find(parent, (uint32_t)i);
        if (r == i) {
            rep[i] = (uint32_t)m;
            memcpy(c->pos + 3 * m, pos + 3 * i, 3 * sizeof(double));
            m++;
        }
    }
    for (size_t i = 0; i < n; i++)
        rep[i] = rep[uf_find(parent, (uint32_t)i)];
    c->nv = m;
    q_free(keys, n * sizeof *keys);
    q_free(parent, n * sizeof *parent);
    return Q_OK;
}

/* ---------------------------------------------------------------- graph */

typedef struct edge_key {
    uint32_t a, b, t, dir; /* dir: the triangle runs b -> a */
} edge_key;

static int cmp_edge_key(const void *pa, const void *pb)
{
    const edge_key *a = pa, *b = pb;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    if (a->b != b->b)
        return a->b < b->b ? -1 : 1;
    return a->t < b->t ? -1 : a->t > b->t;
}

typedef struct pair_list {
    uint32_t *v; /* 2 per pair */
    size_t n, cap;
} pair_list;

static bool add_pair(pair_list *l, uint32_t a, uint32_t b)
{
    if (!grow((void **)&l->v, &l->cap, 2 * (l->n + 1), sizeof(uint32_t)))
        return false;
    l->v[2 * l->n] = a;
    l->v[2 * l->n + 1] = b;
    l->n++;
    return true;
}

static double point_triangle_dist2(const double *p, const double *a, const double *b, const double *cc)
{
    /* Ericson, Real-Time Collision Detection 5.1.5 (closest point on triangle). */
    double ab[3], ac[3], ap[3], q[3];
    sub3(b, a, ab);
    sub3(cc, a, ac);
    sub3(p, a, ap);
    double d1 = dot3(ab, ap), d2 = dot3(ac, ap);
    if (d1 <= 0 && d2 <= 0) {
        memcpy(q, a, sizeof q);
    } else {
        double bp[3];
        sub3(p, b, bp);
        double d3 = dot3(ab, bp), d4 = dot3(ac, bp);
        double cp[3];
        sub3(p, cc, cp);
        double d5 = dot3(ab, cp), d6 = dot3(ac, cp);
        double vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
        if (d3 >= 0 && d4 <= d3) {
            memcpy(q, b, sizeof q);
        } else if (d6 >= 0 && d5 <= d6) {
            memcpy(q, cc, sizeof q);
        } else if (vc <= 0 && d1 >= 0 && d3 <= 0) {
            double v = d1 / (d1 - d3);
            for (int i = 0; i < 3; i++)
                q[i] = a[i] + v * ab[i];
        } else if (vb <= 0 && d2 >= 0 && d6 <= 0) {
            double w = d2 / (d2 - d6);
            for (int i = 0; i < 3; i++)
                q[i] = a[i] + w * ac[i];
        } else if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
            double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
            for (int i = 0; i < 3; i++)
                q[i] = b[i] + w * (cc[i] - b[i]);
        } else {
            double den = va + vb + vc;
            double v = vb / den, w = vc / den;
            for (int i = 0; i < 3; i++)
                q[i] = a[i] + ab[i] * v + ac[i] * w;
        }
    }
    double d[3];
    sub3(p, q, d);
    return dot3(d, d);
}

/* Connects components that come within s of each other: a vertex of one
 * within s of a triangle of another. Triangles are bucketed in a grid by
 * their bounds grown by s. */
static bool connect_close(ctx *c, uint32_t *comp_uf, pair_list *pairs, const uint32_t *vtri)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t v = 0; v < c->nv; v++)
        for (int a = 0; a < 3; a++) {
            lo[a] = fmin(lo[a], c->pos[3 * v + a]);
            hi[a] = fmax(hi[a], c->pos[3 * v + a]);
        }
    double ext = fmax(hi[0] - lo[0], fmax(hi[1] - lo[1], hi[2] - lo[2]));
    double cs = fmax(ext / 64.0, 4 * c->s);
    int dims[3];
    for (int a = 0; a < 3; a++)
        dims[a] = (int)((hi[a] - lo[a]) / cs) + 1;
    size_t ncell = (size_t)dims[0] * dims[1] * dims[2];
    /* count, then fill (CSR) */
    uint32_t *start = q_calloc(ncell + 1, sizeof *start);
    if (!start)
        return false;
    int (*range)[6] = q_alloc(c->nt * sizeof *range);
    if (!range) {
        q_free(start, (ncell + 1) * sizeof *start);
        return false;
    }
    size_t total = 0;
    for (size_t t = 0; t < c->nt; t++) {
        for (int a = 0; a < 3; a++) {
            double mn = INFINITY, mx = -INFINITY;
            for (int k = 0; k < 3; k++) {
                double x = c->pos[3 * c->tri[3 * t + k] + a];
                mn = fmin(mn, x);
                mx = fmax(mx, x);
            }
            int i0 = (int)((mn - c->s - lo[a]) / cs), i1 = (int)((mx + c->s - lo[a]) / cs);
            range[t][a] = i0 < 0 ? 0 : i0;
            range[t][a + 3] = i1 >= dims[a] ? dims[a] - 1 : i1;
        }
        for (int x = range[t][0]; x <= range[t][3]; x++)
            for (int y = range[t][1]; y <= range[t][4]; y++)
                for (int z = range[t][2]; z <= range[t][5]; z++) {
                    start[((size_t)x * dims[1] + y) * dims[2] + z]++;
                    total++;
                }
    }
    uint32_t *items = q_alloc((total ? total : 1) * sizeof *items);
    bool ok = items != NULL;
    if (ok) {
        size_t acc = 0;
        for (size_t i = 0; i <= ncell; i++) {
            size_t k = i < ncell ? start[i] : 0;
            start[i] = (uint32_t)acc;
            acc += k;
        }
        for (size_t t = 0; t < c->nt; t++)
            for (int x = range[t][0]; x <= range[t][3]; x++)
                for (int y = range[t][1]; y <= range[t][4]; y++)
                    for (int z = range[t][2]; z <= range[t][5]; z++)
                        items[start[((size_t)x * dims[1] + y) * dims[2] + z]++] = (uint32_t)t;
        for (size_t i = ncell; i > 0; i--)
            start[i] = start[i - 1];
        start[0] = 0;
        double s2 = c->s * c->s;
        for (size_t v = 0; v < c->nv && ok; v++) {
            if (vtri[v] == NONE)
                continue;
            const double *p = c->pos + 3 * v;
            int ci[3];
            for (int a = 0; a < 3; a++) {
                int i = (int)((p[a] - lo[a]) / cs);
                ci[a] = i < 0 ? 0 : i >= dims[a] ? dims[a] - 1 : i;
            }
            size_t cell = ((size_t)ci[0] * dims[1] + ci[1]) * dims[2] + ci[2];
            for (uint32_t k = start[cell]; k < start[cell + 1] && ok; k++) {
                uint32_t t = items[k];
                uint32_t ra = uf_find(comp_uf, vtri[v]), rb = uf_find(comp_uf, t);
                if (ra == rb)
                    continue;
                const uint32_t *tv = c->tri + 3 * t;
                if (point_triangle_dist2(p, c->pos + 3 * tv[0], c->pos + 3 * tv[1], c->pos + 3 * tv[2]) <= s2) {
                    ok = add_pair(pairs, vtri[v], t);
                    uf_union(comp_uf, ra, rb);
                }
            }
        }
    }
    q_free(items, (total ? total : 1) * sizeof *items);
    q_free(range, c->nt * sizeof *range);
    q_free(start, (ncell + 1) * sizeof *start);
    return ok;
}

/* Graph edges: triangles sharing a mesh edge; triangles of different
 * components sharing a welded vertex; components within s. comp[t] gets
 * the component index, part[t] a triangle naming the part it belongs to
 * through shared edges and vertices alone (before joining by distance,
 * for orientation: parts of one model may be wound differently); returns the number of components, 0 when out of
 * memory. */
static size_t build_graph(ctx *c, pair_list *pairs, uint32_t *comp, uint32_t *part, uint8_t *orient)
{
    size_t ne = 3 * c->nt;
    edge_key *ek = q_alloc(ne * sizeof *ek);
    uint32_t *uf = q_alloc(c->nt * sizeof *uf);
    uint32_t *vtri = q_alloc(c->nv * sizeof *vtri);
    pair_list rel = {0}; /* manifold edges: triangle pairs, and whether they disagree */
    uint32_t *rstart = NULL, *ritems = NULL, *queue = NULL;
    size_t ncomp = 0;
    if (!ek || !uf || !vtri)
        goto done;
    for (size_t t = 0; t < c->nt; t++) {
        uf[t] = (uint32_t)t;
        for (int k = 0; k < 3; k++) {
            uint32_t a = c->tri[3 * t + k], b = c->tri[3 * t + (k + 1) % 3];
            ek[3 * t + k] = (edge_key){a < b ? a : b, a < b ? b : a, (uint32_t)t, a > b};
        }
    }
    qsort(ek, ne, sizeof *ek, cmp_edge_key);
    for (size_t i = 0; i < ne;) {
        size_t j = i + 1;
        while (j < ne && ek[j].a == ek[i].a && ek[j].b == ek[i].b)
            j++;
        size_t k = j - i;
        if (k == 2 && ek[i].t != ek[i + 1].t &&
            !add_pair(&rel, ek[i].t, ek[i + 1].t | (ek[i].dir == ek[i + 1].dir ? BLOCKED : 0)))
            goto done;
        for (size_t x = i; x < j; x++)
            for (size_t y = x + 1; y < j; y++) {
                if (k > HACD_FAN_PAIRS && y != x + 1)
                    break;
                if (ek[x].t == ek[y].t)
                    continue;
                if (!add_pair(pairs, ek[x].t, ek[y].t))
                    goto done;
                uf_union(uf, ek[x].t, ek[y].t);
            }
        i = j;
    }
    /* welded vertices joining separate components */
    for (size_t v = 0; v < c->nv; v++)
        vtri[v] = NONE;
    for (size_t t = 0; t < c->nt; t++)
        for (int k = 0; k < 3; k++) {
            uint32_t v = c->tri[3 * t + k];
            if (vtri[v] == NONE) {
                vtri[v] = (uint32_t)t;
            } else if (uf_find(uf, vtri[v]) != uf_find(uf, (uint32_t)t)) {
                if (!add_pair(pairs, vtri[v], (uint32_t)t))
                    goto done;
                uf_union(uf, vtri[v], (uint32_t)t);
            }
        }
    size_t roots = 0;
    for (size_t t = 0; t < c->nt; t++) {
        part[t] = uf_find(uf, (uint32_t)t);
        roots += part[t] == t;
    }
    /* Orientation made consistent across manifold edges (breadth first from
     * each part's first triangle): orient[t] = 1 turns t around. Parts of
     * one model are often wound differently (Wuson.off's legs against its
     * body); a non-orientable part keeps the first choice met. */
    rstart = q_calloc(c->nt + 1, sizeof *rstart);
    ritems = q_alloc((rel.n ? 2 * rel.n : 1) * sizeof *ritems);
    queue = q_alloc(c->nt * sizeof *queue);
    if (!rstart || !ritems || !queue)
        goto done;
    for (size_t i = 0; i < rel.n; i++) {
        rstart[rel.v[2 * i] + 1]++;
        rstart[(rel.v[2 * i + 1] & ID_MASK) + 1]++;
    }
    for (size_t t = 0; t < c->nt; t++)
        rstart[t + 1] += rstart[t];
    for (size_t i = 0; i < rel.n; i++) {
        uint32_t a = rel.v[2 * i], b = rel.v[2 * i + 1] & ID_MASK, flag = rel.v[2 * i + 1] & BLOCKED;
        ritems[rstart[a]++] = b | flag;
        ritems[rstart[b]++] = a | flag;
    }
    for (size_t t = c->nt; t > 0; t--)
        rstart[t] = rstart[t - 1];
    rstart[0] = 0;
    for (size_t t = 0; t < c->nt; t++)
        orient[t] = 2;
    for (size_t t0 = 0; t0 < c->nt; t0++) {
        if (orient[t0] != 2)
            continue;
        orient[t0] = 0;
        size_t head = 0, tail = 0;
        queue[tail++] = (uint32_t)t0;
        while (head < tail) {
            uint32_t t = queue[head++];
            for (uint32_t k = rstart[t]; k < rstart[t + 1]; k++) {
                uint32_t o = ritems[k] & ID_MASK;
                if (orient[o] != 2)
                    continue;
                orient[o] = (uint8_t)(orient[t] ^ ((ritems[k] & BLOCKED) != 0));
                queue[tail++] = o;
            }
        }
    }
    if (roots > 1 && !connect_close(c, uf, pairs, vtri))
        goto done;
    for (size_t t = 0; t < c->nt; t++)
        comp[t] = NONE;
    for (size_t t = 0; t < c->nt; t++) {
        uint32_t r = uf_find(uf, (uint32_t)t);
        if (comp[r] == NONE)
            comp[r] = (uint32_t)ncomp++;
        comp[t] = comp[r];
    }
done:
    q_free(rel.v, rel.cap * sizeof(uint32_t));
    q_free(rstart, (c->nt + 1) * sizeof *rstart);
    q_free(ritems, (rel.n ? 2 * rel.n : 1) * sizeof *ritems);
    q_free(queue, c->nt * sizeof *queue);
    q_free(ek, ne * sizeof *ek);
    q_free(uf, c->nt * sizeof *uf);
    q_free(vtri, c->nv * sizeof *vtri);
    return ncomp;
}

/* ---------------------------------------------------------------- samples */

/* A triangle's sampling frame: origin o at the start of its longest edge,
 * u along that edge (length L), w in-plane towards the third corner at
 * (px, py), py >= 0. */
typedef struct tri_frame {
    double o[3], u[3], w[3], L, px, py;
} tri_frame;

static void triangle_frame(const double *a, const double *b, const double *cc, const double *n, tri_frame *f)
{
    const double *v[3] = {a, b, cc};
    int k = 0;
    double best = -1;
    for (int i = 0; i < 3; i++) {
        double e[3];
        sub3(v[(i + 1) % 3], v[i], e);
        double l = dot3(e, e);
        if (l > best) {
            best = l;
            k = i;
        }
    }
    const double *p1 = v[(k + 1) % 3], *p2 = v[(k + 2) % 3];
    double e2[3];
    memcpy(f->o, v[k], sizeof f->o);
    sub3(p1, f->o, f->u);
    f->L = sqrt(dot3(f->u, f->u));
    for (int i = 0; i < 3; i++)
        f->u[i] /= f->L;
    cross3(n, f->u, f->w); /* in-plane, perpendicular to u */
    sub3(p2, f->o, e2);
    f->px = dot3(e2, f->u);
    f->py = dot3(e2, f->w);
    if (f->py < 0) {
        f->py = -f->py;
        for (int i = 0; i < 3; i++)
            f->w[i] = -f->w[i];
    }
}

/* Whether (x, y) in frame f lies in the triangle (half-open, as the grid
 * rows below count). */
static bool in_triangle(const tri_frame *f, double x, double y)
{
    if (!(y > 0 && y < f->py))
        return false;
    double t = y / f->py;
    return x >= f->px * t && x < f->L + (f->px - f->L) * t;
}

/* Height of the triangle of frame f at x in [0, L] (the corner (px, py)
 * projects into the longest edge). */
static double sliver_top(const tri_frame *f, double x)
{
    if (x < f->px)
        return f->px > 0 ? f->py * x / f->px : f->py;
    return f->L > f->px ? f->py * (f->L - x) / (f->L - f->px) : f->py;
}

/* Points on the triangle's edges that a grid sample at (x, y) in frame f
 * (spacing h) also stands for: on each edge within EDGE_REACH h of it, the
 * edge's point nearest to it. Where a triangle meets a hull's face at a
 * crease with its normal into the hull, only its points within s of the
 * edge are inside, and the samples are not there. An edge point on the
 * hull's boundary counts only when its ray goes inwards through the faces
 * it is on (see patch_error). Writes (x, y) pairs to xy (room for 3),
 * returns the count. */
#define EDGE_REACH 0.75
static size_t edge_points(const tri_frame *f, double h, double x, double y, double *xy)
{
    const double c[3][2] = {{0, 0}, {f->L, 0}, {f->px, f->py}};
    size_t n = 0;
    for (int k = 0; k < 3; k++) {
        const double *a = c[k], *b = c[(k + 1) % 3];
        double ex = b[0] - a[0], ey = b[1] - a[1], ll = ex * ex + ey * ey;
        double t = ll > 0 ? ((x - a[0]) * ex + (y - a[1]) * ey) / ll : 0;
        t = t < 0 ? 0 : t > 1 ? 1 : t;
        double qx = a[0] + t * ex, qy = a[1] + t * ey;
        if ((qx - x) * (qx - x) + (qy - y) * (qy - y) <= EDGE_REACH * EDGE_REACH * h * h) {
            xy[2 * n] = qx;
            xy[2 * n + 1] = qy;
            n++;
        }
    }
    return n;
}

/* Emits grid points of spacing h inside triangle t = (a, b, cc) with unit
 * normal n, in the frame of its longest edge; the centroid when none falls
 * inside. With out == NULL only counts. */
static size_t sample_triangle(const double *a, const double *b, const double *cc, const double *n, double h,
                              uint32_t comp, uint32_t t, sample *out)
{
    tri_frame f;
    triangle_frame(a, b, cc, n, &f);
    size_t count = 0;
    if (f.py > 0) {
        for (double y = 0.5 * h; y < f.py; y += h) {
            double ft = y / f.py;
            double x0 = f.px * ft, x1 = f.L + (f.px - f.L) * ft;
            for (double x = (floor(x0 / h - 0.5) + 1.5) * h; x < x1; x += h) { /* grid points (i + 1/2) h */
                if (out) {
                    sample *sp = out + count;
                    for (int i = 0; i < 3; i++) {
                        sp->p[i] = (float)(f.o[i] + x * f.u[i] + y * f.w[i]);
                        sp->n[i] = (float)n[i];
                    }
                    sp->comp = comp;
                    sp->bin = normal_bin(n);
                    sp->tri = t;
                    /* the farthest finer point in its cell or edge point */
                    double r2 = 2.0 * (PATCH_K / 2) * (PATCH_K / 2) * h * h / (PATCH_K * PATCH_K), xy[6];
                    size_t ne = edge_points(&f, h, x, y, xy);
                    for (size_t i = 0; i < ne; i++)
                        r2 = fmax(r2, (xy[2 * i] - x) * (xy[2 * i] - x) + (xy[2 * i + 1] - y) * (xy[2 * i + 1] - y));
                    sp->r = (float)(sqrt(r2) * 1.0001 + 1e-6 * h);
                }
                count++;
            }
        }
    }
    if (count == 0) {
        /* A sliver or a small triangle: samples along it, one per slab of
         * its length at most h wide, halfway up the triangle. */
        size_t ns = f.L > h ? (size_t)ceil(f.L / h) : 1;
        if (out) {
            double w = f.L / (double)ns;
            for (size_t i = 0; i < ns; i++) {
                double x = (i + 0.5) * w, y = 0.5 * sliver_top(&f, x);
                sample *sp = out + i;
                for (int k = 0; k < 3; k++) {
                    sp->p[k] = (float)(f.o[k] + x * f.u[k] + y * f.w[k]);
                    sp->n[k] = (float)n[k];
                }
                sp->comp = comp;
                sp->bin = normal_bin(n);
                sp->tri = t | SLIVER;
                sp->r = (float)(sqrt(w * w / 9 + f.py * f.py) * 1.0001);
            }
        }
        count = ns;
    }
    return count;
}

static int cell_coord(const ctx *c, double x, int a)
{
    int i = (int)floor((x - c->gmin[a]) / c->cell);
    return i < 0 ? 0 : i >= c->dims[a] ? c->dims[a] - 1 : i;
}

static size_t cell_of(const ctx *c, const float *p)
{
    return ((size_t)cell_coord(c, p[0], 0) * c->dims[1] + cell_coord(c, p[1], 1)) * c->dims[2] +
           cell_coord(c, p[2], 2);
}

/* Samples every non-degenerate triangle with spacing h and sorts the samples
 * into the grid. flip[t] turns triangle t's normal around. */
static q_status build_samples(ctx *c, double h, const uint32_t *comp, const uint8_t *flip)
{
    size_t total = 0;
    for (size_t t = 0; t < c->nt; t++) {
        const uint32_t *tv = c->tri + 3 * t;
        double n[3];
        double l = tri_area2(c->pos + 3 * tv[0], c->pos + 3 * tv[1], c->pos + 3 * tv[2], n);
        if (!(l > 0))
            continue;
        for (int i = 0; i < 3; i++)
            n[i] /= l;
        total += sample_triangle(c->pos + 3 * tv[0], c->pos + 3 * tv[1], c->pos + 3 * tv[2], n, h, 0, (uint32_t)t, NULL);
        if (total > (1u << 26))
            return fail(c, Q_ERR_TOO_LARGE, "too many surface samples: raise sample_spacing");
    }
    sample *raw = q_alloc((total ? total : 1) * sizeof *raw);
    if (!raw)
        return fail(c, Q_ERR_MEMORY, "out of memory");
    size_t at = 0;
    for (size_t t = 0; t < c->nt; t++) {
        const uint32_t *tv = c->tri + 3 * t;
        double n[3];
        double l = tri_area2(c->pos + 3 * tv[0], c->pos + 3 * tv[1], c->pos + 3 * tv[2], n);
        if (!(l > 0))
            continue;
        double sgn = flip[t] ? -1.0 : 1.0;
        for (int i = 0; i < 3; i++)
            n[i] = sgn * n[i] / l;
        at += sample_triangle(c->pos + 3 * tv[0], c->pos + 3 * tv[1], c->pos + 3 * tv[2], n, h, comp[t], (uint32_t)t,
                              raw + at);
    }
    /* grid over the vertices' bounds */
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t v = 0; v < c->nv; v++)
        for (int a = 0; a < 3; a++) {
            lo[a] = fmin(lo[a], c->pos[3 * v + a]);
            hi[a] = fmax(hi[a], c->pos[3 * v + a]);
        }
    double ext = fmax(hi[0] - lo[0], fmax(hi[1] - lo[1], hi[2] - lo[2]));
    c->cell = fmax(3 * h, ext / 128.0);
    for (;;) {
        for (int a = 0; a < 3; a++)
            c->dims[a] = (int)((hi[a] - lo[a]) / c->cell) + 1;
        if ((size_t)c->dims[0] * c->dims[1] * c->dims[2] <= HACD_MAX_CELLS)
            break;
        c->cell *= 1.25;
    }
    memcpy(c->gmin, lo, sizeof lo);
    size_t ncell = (size_t)c->dims[0] * c->dims[1] * c->dims[2];
    c->cell_start = q_calloc(ncell + 1, sizeof *c->cell_start);
    c->samp = q_alloc((total ? total : 1) * sizeof *c->samp);
    c->spos = q_alloc((total ? total : 1) * sizeof *c->spos);
    if (!c->cell_start || !c->samp || !c->spos) {
        q_free(raw, (total ? total : 1) * sizeof *raw);
        return fail(c, Q_ERR_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < total; i++)
        c->cell_start[cell_of(c, raw[i].p) + 1]++;
    for (size_t i = 0; i < ncell; i++)
        c->cell_start[i + 1] += c->cell_start[i];
    for (size_t i = 0; i < total; i++) {
        size_t k = cell_of(c, raw[i].p);
        /* cell_start[k] is used as a cursor and restored below */
        c->samp[c->cell_start[k]++] = raw[i];
    }
    for (size_t i = ncell; i > 0; i--)
        c->cell_start[i] = c->cell_start[i - 1];
    c->cell_start[0] = 0;
    c->nsamp = total;
    for (size_t i = 0; i < total; i++)
        c->max_r = fmax(c->max_r, c->samp[i].r);
    for (size_t i = 0; i < total; i++) {
        memcpy(c->spos[i].p, c->samp[i].p, sizeof c->spos[i].p);
        c->spos[i].comp = c->samp[i].comp;
    }
    q_free(raw, (total ? total : 1) * sizeof *raw);
    return Q_OK;
}

/* ---------------------------------------------------------------- hulls */

/* Hull of n points (scaled) into c->hv, c->hi, c->info. */
static bool hull_points(ctx *c, const double *pts, size_t n)
{
    size_t bound = q_hull_bound(n);
    if (!grow((void **)&c->hv, &c->hvcap, n, sizeof(uint32_t)) ||
        !grow((void **)&c->hi, &c->hicap, bound ? bound : 1, sizeof(uint32_t))) {
        fail(c, Q_ERR_MEMORY, "out of memory");
        return false;
    }
    q_hull_def def = q_default_hull_def();
    def.epsilon = c->s;
    def.lean = true;
    char herr[128];
    q_status st = q_hull(pts, n, &def, c->hv, c->hi, &c->info, herr, sizeof herr);
    if (st != Q_OK) {
        char msg[200];
        snprintf(msg, sizeof msg, "hull of a cluster failed: %s", herr);
        fail(c, st, msg);
        return false;
    }
    return true;
}

/* The error of sample sp's patch points against the np planes in
 * c->planes, starting from worst: the largest ray among them that passes
 * it, else worst. */
static double patch_error(const ctx *c, const sample *sp, size_t np, double worst)
{
    const uint32_t *tv = c->tri + 3 * (size_t)(sp->tri & ~SLIVER);
    const double d[3] = {sp->n[0], sp->n[1], sp->n[2]};
    tri_frame f;
    triangle_frame(c->pos + 3 * tv[0], c->pos + 3 * tv[1], c->pos + 3 * tv[2], d, &f);
    const double hf = c->h / PATCH_K;
    double q[3 * (PATCH_K * PATCH_K + 3)];
    size_t nq = 0, nfine = SIZE_MAX; /* points from nfine on are edge points */
    double e[3] = {sp->p[0] - f.o[0], sp->p[1] - f.o[1], sp->p[2] - f.o[2]};
    double x0 = dot3(e, f.u), y0 = dot3(e, f.w);
    if (sp->tri & SLIVER) {
        size_t ns = f.L > c->h ? (size_t)ceil(f.L / c->h) : 1;
        double w = f.L / (double)ns / PATCH_K;
        for (int a = -(PATCH_K / 2); a <= PATCH_K / 2; a++)
            for (int b = 0; b < PATCH_K; b++) {
                double x = x0 + a * w, y = sliver_top(&f, x) * (b + 0.5) / PATCH_K;
                if (x < 0 || x > f.L || (!a && 2 * b + 1 == PATCH_K))
                    continue;
                for (int i = 0; i < 3; i++)
                    q[3 * nq + i] = f.o[i] + x * f.u[i] + y * f.w[i];
                nq++;
            }
    } else {
        for (int a = -(PATCH_K / 2); a <= PATCH_K / 2; a++)
            for (int b = -(PATCH_K / 2); b <= PATCH_K / 2; b++) {
                double x = x0 + a * hf, y = y0 + b * hf;
                if ((a || b) && in_triangle(&f, x, y)) {
                    for (int i = 0; i < 3; i++)
                        q[3 * nq + i] = f.o[i] + x * f.u[i] + y * f.w[i];
                    nq++;
                }
            }
        nfine = nq;
        double xy[6];
        size_t ne = edge_points(&f, c->h, x0, y0, xy);
        for (size_t k = 0; k < ne; k++, nq++)
            for (int i = 0; i < 3; i++)
                q[3 * nq + i] = f.o[i] + xy[2 * k] * f.u[i] + xy[2 * k + 1] * f.w[i];
    }
    const double s = c->s;
    for (size_t i = 0; i < nq; i++) {
        const double *p = q + 3 * i;
        /* An edge point within s of a face whose plane its ray runs along
         * (within 3 degrees) or leaves through starts on the boundary, not
         * inside: at the inner edge of an L, the ray from one arm's face
         * would run along the other arm's hull. */
        const bool edge = i >= nfine;
        double tmin = INFINITY;
        for (size_t j = 0; j < np; j++) {
            const double *pl = c->planes + 4 * j;
            double dp = dot3(pl, p) - pl[3];
            double nd = dot3(pl, d);
            if (dp > s || (edge && dp >= -s && nd > -0.05)) {
                tmin = -INFINITY;
                break;
            }
            if (nd > 1e-9 && -dp < tmin * nd && (tmin = -dp / nd) <= worst)
                break;
        }
        if (tmin > worst && tmin < INFINITY)
            worst = tmin;
    }
    return worst;
}

/* A sample at signed distance dp above a hull plane whose normal makes
 * cosine nd with the sample's: settled when outside (more than s above) or
 * when its ray cannot pass worst. */
static inline bool point_settled(double dp, double nd, double s, double worst)
{
    return dp > s || (nd > 1e-9 && -dp <= worst * nd);
}

/* The same for the sample's patch, the points within r (r2 = r^2) of it in
 * its tangent plane, whose heights over the plane differ from dp by at most
 * r sqrt(1 - nd^2): settled when all are outside or when no ray from them
 * can pass refine_above ((r sqrt(1 - nd^2) - dp) / nd <= refine_above). */
static inline bool patch_settled(double dp, double nd, double s, double r2, double refine_above)
{
    double sin2 = 1 - nd * nd, out = dp - s;
    if (out > 0 && out * out > r2 * sin2)
        return true;
    double room = refine_above * nd + dp;
    return nd > 1e-9 && room >= 0 && r2 * sin2 <= room * room;
}

/* Concavity error of the hull in c->hv/c->hi of pts (see hacd.h, step 4).
 * surf: the surface area the hull stands for (flat rule); comp: component
 * whose samples count. Returns a value > limit as soon as one is found. */
static double hull_error(ctx *c, const double *pts, uint32_t comp, double surf, double limit)
{
    const q_hull_info *in = &c->info;
    c->hull_volume = 0;
    if (in->shape != Q_HULL_SOLID) {
        double area = 0;
        if (in->shape == Q_HULL_POLYGON) {
            for (size_t t = 0; t + 2 < in->index_count; t += 3) {
                double n[3];
                area += tri_area2(pts + 3 * c->hv[c->hi[t]], pts + 3 * c->hv[c->hi[t + 1]], pts + 3 * c->hv[c->hi[t + 2]],
                                  n);
            }
            area *= 0.25; /* both sides, and |cross| = 2 * area */
        }
        double added = area - surf;
        double e = added > 0 ? sqrt(added) : 0;
        return e <= c->s ? 0 : e;
    }
    size_t nt = in->index_count / 3;
    if (!grow((void **)&c->planes, &c->plcap, 4 * nt, sizeof(double))) {
        fail(c, Q_ERR_MEMORY, "out of memory");
        return INFINITY;
    }
    size_t np = 0;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t t = 0; t < nt; t++) {
        const double *a = pts + 3 * c->hv[c->hi[3 * t]];
        double n[3];
        double l = tri_area2(a, pts + 3 * c->hv[c->hi[3 * t + 1]], pts + 3 * c->hv[c->hi[3 * t + 2]], n);
        if (!(l > 0))
            continue;
        double *pl = c->planes + 4 * np++;
        for (int i = 0; i < 3; i++)
            pl[i] = n[i] / l;
        pl[3] = dot3(pl, a);
        c->hull_volume += pl[3] * l / 6; /* divergence theorem: (n . a) * area / 3 */
    }
    for (size_t v = 0; v < in->vertex_count; v++)
        for (int a = 0; a < 3; a++) {
            lo[a] = fmin(lo[a], pts[3 * c->hv[v] + a]);
            hi[a] = fmax(hi[a], pts[3 * c->hv[v] + a]);
        }
    int i0[3], i1[3];
    float blo[3], bhi[3];
    for (int a = 0; a < 3; a++) {
        i0[a] = cell_coord(c, lo[a] - c->s - c->max_r, a);
        i1[a] = cell_coord(c, hi[a] + c->s + c->max_r, a);
        /* the box samples must be in for them or their patch to be */
        blo[a] = (float)(lo[a] - c->s - c->max_r);
        bhi[a] = (float)(hi[a] + c->s + c->max_r);
    }
    if (!grow((void **)&c->bin_items, &c->bincap, np ? np : 1, sizeof(uint32_t))) {
        fail(c, Q_ERR_MEMORY, "out of memory");
        return INFINITY;
    }
    memset(c->bin_start, 0, sizeof c->bin_start);
    for (size_t j = 0; j < np; j++)
        c->bin_start[normal_bin(c->planes + 4 * j) + 1]++;
    for (int i = 0; i < NORMAL_BINS; i++)
        c->bin_start[i + 1] += c->bin_start[i];
    {
        uint32_t cur[NORMAL_BINS];
        memcpy(cur, c->bin_start, sizeof cur);
        for (size_t j = 0; j < np; j++)
            c->bin_items[cur[normal_bin(c->planes + 4 * j)]++] = (uint32_t)j;
    }
    const double s = c->s;
    double worst = s; /* errors up to s are quantization noise */
    /* patches are refined only where they could raise the error past this */
    double refine_above = fmax(worst, c->refine_floor);
    size_t hint = 0;
    const double *planes = c->planes;
    for (int x = i0[0]; x <= i1[0]; x++)
        for (int y = i0[1]; y <= i1[1]; y++) {
            size_t row = ((size_t)x * c->dims[1] + y) * c->dims[2];
            const sample_pos *q = c->spos + c->cell_start[row + i0[2]];
            const sample_pos *end = c->spos + c->cell_start[row + i1[2] + 1];
            for (; q < end; q++) {
                if (q->comp != comp || q->p[0] < blo[0] || q->p[0] > bhi[0] || q->p[1] < blo[1] || q->p[1] > bhi[1] ||
                    q->p[2] < blo[2] || q->p[2] > bhi[2])
                    continue;
                const sample *sp = c->samp + (q - c->spos);
                double p[3] = {sp->p[0], sp->p[1], sp->p[2]}, d[3] = {sp->n[0], sp->n[1], sp->n[2]};
                const double r = sp->r, r2 = r * r;
                /* The plane that settled the previous sample first: samples
                 * come in spatial order, so it usually settles this one. */
                const double *pl = planes + 4 * hint;
                double dp = dot3(pl, p) - pl[3], nd;
                if (dp > s + r)
                    continue; /* the sample and its whole patch are outside */
                /* Each plane may settle the sample and its patch; the hint
                 * first. */
                nd = dot3(pl, d);
                bool point_done = point_settled(dp, nd, s, worst), patch_done = patch_settled(dp, nd, s, r2, refine_above);
                if (point_done && patch_done)
                    continue;
                /* then the planes of the sample's normal bin */
                const uint32_t *bin = c->bin_items + c->bin_start[sp->bin];
                const uint32_t *bin_end = c->bin_items + c->bin_start[sp->bin + 1];
                for (; bin < bin_end && !(point_done && patch_done); bin++) {
                    pl = planes + 4 * *bin;
                    dp = dot3(pl, p) - pl[3];
                    nd = dot3(pl, d);
                    if (!point_done && point_settled(dp, nd, s, worst)) {
                        point_done = true;
                        hint = *bin;
                    }
                    patch_done = patch_done || patch_settled(dp, nd, s, r2, refine_above);
                }
                /* then all: the ray needs every plane */
                double tmin = INFINITY;
                for (size_t j = 0; j < np && !(point_done && patch_done); j++) {
                    pl = planes + 4 * j;
                    dp = dot3(pl, p) - pl[3];
                    nd = dot3(pl, d);
                    if (!point_done) {
                        if (point_settled(dp, nd, s, worst)) {
                            point_done = true;
                            hint = j;
                        } else if (nd > 1e-9 && -dp < tmin * nd) {
                            tmin = -dp / nd;
                        }
                    }
                    patch_done = patch_done || patch_settled(dp, nd, s, r2, refine_above);
                }
                if (!point_done && tmin < INFINITY) {
                    worst = tmin;
                    if (worst > limit)
                        return worst;
                    refine_above = worst > c->refine_floor ? worst : c->refine_floor;
                }
                if (!patch_done) {
                    worst = patch_error(c, sp, np, worst);
                    if (worst > limit)
                        return worst;
                    refine_above = worst > c->refine_floor ? worst : c->refine_floor;
                }
            }
        }
    return worst <= s ? 0 : worst;
}

/* Gathers the hull points of clusters a and b into c->buf; returns the count. */
static size_t gather(ctx *c, uint32_t a, uint32_t b)
{
    const cluster *A = c->cl + a, *B = c->cl + b;
    size_t n = (size_t)A->npts + B->npts;
    if (!grow((void **)&c->buf, &c->bufcap, 3 * n, sizeof(double))) {
        fail(c, Q_ERR_MEMORY, "out of memory");
        return 0;
    }
    memcpy(c->buf, A->pts, 3 * A->npts * sizeof(double));
    memcpy(c->buf + 3 * A->npts, B->pts, 3 * B->npts * sizeof(double));
    return n;
}

/* Error of merging clusters a and b; INFINITY on failure (c->st set). */
/* The hull of two triangles sharing an edge, when it is clearly a
 * tetrahedron: every edge longer than 4 s and every corner more than 4 s
 * from the plane of the other three, where q_hull (whose decisions all
 * happen within 2 s) returns the same four vertices. Most first merges of a
 * curved mesh are such pairs, and q_hull's set-up dominates at four points.
 * Fills c->hv, c->hi and c->info like hull_points; false to use q_hull. */
static bool tetra_of_pair(ctx *c, size_t n)
{
    if (n != 6)
        return false;
    const double *p = c->buf;
    uint32_t v[4];
    int k = 0;
    for (uint32_t i = 0; i < 6; i++) {
        bool dup = false;
        for (int j = 0; j < k && !dup; j++)
            dup = !memcmp(p + 3 * i, p + 3 * v[j], 3 * sizeof(double));
        if (!dup) {
            if (k == 4)
                return false;
            v[k++] = i;
        }
    }
    if (k != 4)
        return false;
    const double lim = 4 * c->s;
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++) {
            double e[3];
            sub3(p + 3 * v[j], p + 3 * v[i], e);
            if (dot3(e, e) <= lim * lim)
                return false;
        }
    double e1[3], e2[3], e3[3], x[3];
    sub3(p + 3 * v[1], p + 3 * v[0], e1);
    sub3(p + 3 * v[2], p + 3 * v[0], e2);
    sub3(p + 3 * v[3], p + 3 * v[0], e3);
    cross3(e1, e2, x);
    double vol6 = dot3(x, e3);
    /* height of each corner over the opposite face: 6 V / (2 * face area) */
    static const int face[4][3] = {{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}};
    for (int f = 0; f < 4; f++) {
        double fn[3];
        double a2 = tri_area2(p + 3 * v[face[f][0]], p + 3 * v[face[f][1]], p + 3 * v[face[f][2]], fn);
        if (!(fabs(vol6) > lim * a2))
            return false;
    }
    if (!grow((void **)&c->hv, &c->hvcap, 4, sizeof(uint32_t)) || !grow((void **)&c->hi, &c->hicap, 12, sizeof(uint32_t))) {
        fail(c, Q_ERR_MEMORY, "out of memory");
        return false;
    }
    /* faces wound counter-clockwise seen from outside */
    static const uint32_t pos[12] = {0, 2, 1, 0, 1, 3, 1, 2, 3, 2, 0, 3};
    static const uint32_t neg[12] = {0, 1, 2, 0, 3, 1, 1, 3, 2, 2, 3, 0};
    memcpy(c->hi, vol6 > 0 ? pos : neg, sizeof pos);
    memcpy(c->hv, v, sizeof v);
    memset(&c->info, 0, sizeof c->info);
    c->info.shape = Q_HULL_SOLID;
    c->info.vertex_count = 4;
    c->info.index_count = 12;
    c->info.epsilon = c->s;
    return true;
}

static double edge_error(ctx *c, uint32_t a, uint32_t b, double limit)
{
    size_t n = gather(c, a, b);
    if (!n)
        return INFINITY;
    if (!tetra_of_pair(c, n) && (c->st != Q_OK || !hull_points(c, c->buf, n)))
        return INFINITY;
    c->last_solid = c->info.shape == Q_HULL_SOLID;
    return hull_error(c, c->buf, c->cl[a].comp, c->cl[a].area + c->cl[b].area, limit);
}

/* ---------------------------------------------------------------- queue */

static bool heap_less(const heap_entry *x, const heap_entry *y)
{
    if (x->key != y->key)
        return x->key < y->key;
    if (x->tie != y->tie)
        return x->tie < y->tie;
    if (x->a != y->a)
        return x->a < y->a;
    return x->b < y->b;
}

static bool heap_push(ctx *c, heap_entry e)
{
    if (!grow((void **)&c->heap, &c->heapcap, c->nheap + 1, sizeof e)) {
        fail(c, Q_ERR_MEMORY, "out of memory");
        return false;
    }
    size_t i = c->nheap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(&e, &c->heap[p]))
            break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = e;
    return true;
}

static heap_entry heap_pop(ctx *c)
{
    heap_entry top = c->heap[0], last = c->heap[--c->nheap];
    size_t i = 0, n = c->nheap;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= n)
            break;
        size_t m = l + 1 < n && heap_less(&c->heap[l + 1], &c->heap[l]) ? l + 1 : l;
        if (!heap_less(&c->heap[m], &last))
            break;
        c->heap[i] = c->heap[m];
        i = m;
    }
    if (n)
        c->heap[i] = last;
    return top;
}

/* Evaluates edge (a, b) and queues it when its error is within limit. */
static bool grow_nb(cluster *k, size_t need)
{
    if (need <= k->nbcap)
        return true;
    size_t nc = k->nbcap ? k->nbcap : 4;
    while (nc < need)
        nc *= 2;
    uint32_t *nb = q_realloc(k->nb, (size_t)k->nbcap * sizeof *nb, nc * sizeof *nb);
    if (nb)
        k->nb = nb;
    double *e = q_realloc(k->nbe, (size_t)k->nbcap * sizeof *e, nc * sizeof *e);
    if (e)
        k->nbe = e;
    double *v = q_realloc(k->nbv, (size_t)k->nbcap * sizeof *v, nc * sizeof *v);
    if (v)
        k->nbv = v;
    if (!nb || !e || !v) {
        /* keep every block at the old capacity so that it frees right */
        if (nb)
            k->nb = q_realloc(k->nb, nc * sizeof *nb, (size_t)k->nbcap * sizeof *nb);
        if (e)
            k->nbe = q_realloc(k->nbe, nc * sizeof *e, (size_t)k->nbcap * sizeof *e);
        if (v)
            k->nbv = q_realloc(k->nbv, nc * sizeof *v, (size_t)k->nbcap * sizeof *v);
        return false;
    }
    k->nbcap = (uint32_t)nc;
    return true;
}

/* Lazy queue entries (no hull yet) carry lower bounds of the key: the
 * error and hull volume of a merge can only grow when a side grows (for a
 * solid hull; a flat hull's error bounds nothing), so an entry is evaluated
 * only when it comes first, and most are dropped unevaluated as their
 * clusters change. The merge order is the same as evaluating every edge
 * at once. */
static bool queue_lazy(ctx *c, uint32_t a, uint32_t r, double e_lb, double v_lb)
{
    const cluster *A = c->cl + a, *R = c->cl + r;
    double dv = fmax(v_lb, fmax(A->volume, R->volume)) - A->volume - R->volume;
    heap_entry h = {e_lb + c->volume_weight * cbrt(dv), dv, e_lb, a, r, A->version, R->version, NULL, 0, 0};
    return heap_push(c, h);
}

/* Records what an evaluation of (a, b) bounds in both neighbour lists. */
static void record_bounds(ctx *c, uint32_t a, uint32_t b, double e_lb, double v, bool block)
{
    for (int side = 0; side < 2; side++) {
        cluster *S = c->cl + (side ? b : a);
        uint32_t other = side ? a : b;
        for (uint32_t i = 0; i < S->nnb; i++)
            if (uf_find(c->parent, S->nb[i] & ID_MASK) == other) {
                S->nbe[i] = e_lb;
                S->nbv[i] = v;
                if (block)
                    S->nb[i] |= BLOCKED;
            }
    }
}

static bool queue_edge(ctx *c, uint32_t a, uint32_t b, double limit)
{
    double e = edge_error(c, a, b, limit);
    if (c->st != Q_OK)
        return false;
    record_bounds(c, a, b, c->last_solid ? e : 0, c->hull_volume, e > limit && c->last_solid);
    if (e > limit)
        return true;
    double dv = c->hull_volume - c->cl[a].volume - c->cl[b].volume;
    double key = e + c->volume_weight * cbrt(dv);
    heap_entry h = {key, dv, e, a, b, c->cl[a].version, c->cl[b].version, NULL, 0, c->hull_volume};
    size_t hvn = c->info.vertex_count;
    h.pts = q_alloc(3 * hvn * sizeof(double));
    if (!h.pts)
        return fail(c, Q_ERR_MEMORY, "out of memory"), false;
    for (size_t i = 0; i < hvn; i++)
        memcpy(h.pts + 3 * i, c->buf + 3 * c->hv[i], 3 * sizeof(double));
    h.npts = (uint32_t)hvn;
    if (heap_push(c, h))
        return true;
    q_free(h.pts, 3 * hvn * sizeof(double));
    return false;
}

static void free_cluster(cluster *k)
{
    q_free(k->pts, (size_t)k->ptcap * sizeof(double));
    q_free(k->nb, (size_t)k->nbcap * sizeof(uint32_t));
    q_free(k->nbe, (size_t)k->nbcap * sizeof(double));
    q_free(k->nbv, (size_t)k->nbcap * sizeof(double));
    k->pts = NULL;
    k->nb = NULL;
    k->nbe = k->nbv = NULL;
    k->ptcap = k->nbcap = k->npts = k->nnb = 0;
}

/* Merges b into a (a survives; the caller picks which) and re-queues a's
 * edges with the given limit. */
static bool merge(ctx *c, uint32_t a, uint32_t b, heap_entry *e, double limit, bool trace)
{
    cluster *A = c->cl + a, *B = c->cl + b;
    double error = e->err;
    /* the predicted hull becomes a's */
    q_free(A->pts, (size_t)A->ptcap * sizeof(double));
    A->pts = e->pts;
    A->ptcap = 3 * e->npts;
    A->npts = e->npts;
    e->pts = NULL;
    A->area += B->area;
    A->volume = e->volume;
    A->ntri += B->ntri;
    A->version++;
    c->parent[b] = a;
    /* neighbours: union of both lists, resolved and deduplicated */
    c->stamp++;
    c->mark[a] = c->stamp;
    size_t total = (size_t)A->nnb + B->nnb;
    size_t lsize = (total ? total : 1) * (sizeof(uint32_t) + 2 * sizeof(double));
    double *lbuf = q_alloc(lsize);
    if (!lbuf)
        return fail(c, Q_ERR_MEMORY, "out of memory"), false;
    double *le = lbuf, *lv = lbuf + (total ? total : 1);
    uint32_t *list = (uint32_t *)(lv + (total ? total : 1));
    size_t k = 0;
    /* Both sides' bounds hold for the merged cluster (its hull contains
     * theirs): the larger of the two is kept. */
    for (int side = 0; side < 2; side++) {
        const cluster *S = side ? B : A;
        for (uint32_t i = 0; i < S->nnb; i++) {
            uint32_t r = uf_find(c->parent, S->nb[i] & ID_MASK);
            if (!c->cl[r].alive || r == a)
                continue;
            if (c->mark[r] == c->stamp) {
                uint32_t j = c->slot[r];
                list[j] |= S->nb[i] & BLOCKED;
                le[j] = fmax(le[j], S->nbe[i]);
                lv[j] = fmax(lv[j], S->nbv[i]);
                continue;
            }
            c->mark[r] = c->stamp;
            c->slot[r] = (uint32_t)k;
            le[k] = S->nbe[i];
            lv[k] = S->nbv[i];
            list[k++] = r | (S->nb[i] & BLOCKED);
        }
    }
    B->alive = false;
    free_cluster(B);
    c->alive--;
    bool room = grow_nb(A, k);
    if (room) {
        memcpy(A->nb, list, k * sizeof *list);
        memcpy(A->nbe, le, k * sizeof *le);
        memcpy(A->nbv, lv, k * sizeof *lv);
    }
    q_free(lbuf, lsize);
    if (!room)
        return fail(c, Q_ERR_MEMORY, "out of memory"), false;
    A->nnb = (uint32_t)k;
    c->merges++;
    if (trace) {
        if (!grow((void **)&c->trace, &c->tracecap, c->ntrace + 1, sizeof *c->trace))
            return fail(c, Q_ERR_MEMORY, "out of memory"), false;
        c->trace[c->ntrace++] = (q_hacd_merge){c->tri_orig[a], c->tri_orig[b], error};
    }
    for (size_t i = 0; i < k; i++) {
        if ((A->nb[i] & BLOCKED) && limit < INFINITY)
            continue;
        A->nb[i] &= ID_MASK;
        if (A->nbe[i] > limit)
            continue;
        if (!queue_lazy(c, a, A->nb[i], A->nbe[i], A->nbv[i]))
            return false;
    }
    return true;
}

/* ---------------------------------------------------------------- output */

/* Keeps at most k of the n points (x, y, z) in pts, chosen farthest first:
 * the four corners of a large tetrahedron, then the point farthest outside
 * the hull of those kept (farthest from those kept while that hull is
 * flat), until none is more than s away. Returns the count kept, 0 on
 * failure. */
static size_t reduce_points(ctx *c, double *pts, size_t n, size_t k)
{
    if (n <= k)
        return n;
    uint32_t *sel = q_alloc(k * sizeof *sel);
    uint8_t *used = q_calloc(n, 1);
    double *tmp = q_alloc(3 * k * sizeof *tmp);
    size_t ns = 0;
    if (!sel || !used || !tmp) {
        fail(c, Q_ERR_MEMORY, "out of memory");
        goto done;
    }
    size_t first = 0;
    for (size_t i = 1; i < n; i++)
        if (pts[3 * i] < pts[3 * first])
            first = i;
    sel[ns++] = (uint32_t)first;
    used[first] = 1;
    while (ns < k) {
        for (size_t i = 0; i < ns; i++)
            memcpy(tmp + 3 * i, pts + 3 * sel[i], 3 * sizeof(double));
        bool solid = false;
        size_t np = 0;
        if (ns >= 4) {
            if (!hull_points(c, tmp, ns))
                goto done;
            solid = c->info.shape == Q_HULL_SOLID;
            if (solid) {
                size_t nt = c->info.index_count / 3;
                if (!grow((void **)&c->planes, &c->plcap, 4 * nt, sizeof(double))) {
                    fail(c, Q_ERR_MEMORY, "out of memory");
                    goto done;
                }
                for (size_t t = 0; t < nt; t++) {
                    const double *a = tmp + 3 * c->hv[c->hi[3 * t]];
                    double nn[3];
                    double l = tri_area2(a, tmp + 3 * c->hv[c->hi[3 * t + 1]], tmp + 3 * c->hv[c->hi[3 * t + 2]], nn);
                    if (!(l > 0))
                        continue;
                    double *pl = c->planes + 4 * np++;
                    for (int i = 0; i < 3; i++)
                        pl[i] = nn[i] / l;
                    pl[3] = dot3(pl, a);
                }
            }
        }
        double best = -INFINITY;
        size_t bi = 0;
        for (size_t i = 0; i < n; i++) {
            if (used[i])
                continue;
            const double *p = pts + 3 * i;
            double d;
            if (solid) {
                d = -INFINITY;
                for (size_t j = 0; j < np; j++)
                    d = fmax(d, dot3(c->planes + 4 * j, p) - c->planes[4 * j + 3]);
            } else {
                d = INFINITY;
                for (size_t j = 0; j < ns; j++) {
                    double e[3];
                    sub3(p, pts + 3 * sel[j], e);
                    d = fmin(d, sqrt(dot3(e, e)));
                }
            }
            if (d > best) {
                best = d;
                bi = i;
            }
        }
        if (!(best > c->s))
            break;
        sel[ns++] = (uint32_t)bi;
        used[bi] = 1;
    }
    for (size_t i = 0; i < ns; i++)
        memcpy(tmp + 3 * i, pts + 3 * sel[i], 3 * sizeof(double));
    memcpy(pts, tmp, 3 * ns * sizeof(double));
done:
    q_free(sel, k * sizeof *sel);
    q_free(used, n);
    q_free(tmp, 3 * k * sizeof *tmp);
    return c->st == Q_OK ? ns : 0;
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* Volume of the welded mesh in scaled units, NAN when it is not closed
 * (every directed edge once and its reverse once). */
static double closed_volume(ctx *c)
{
    size_t ne = 3 * c->nt;
    uint64_t *keys = q_alloc(ne * sizeof *keys);
    if (!keys)
        return NAN;
    for (size_t t = 0; t < c->nt; t++)
        for (int k = 0; k < 3; k++)
            keys[3 * t + k] = (uint64_t)c->tri[3 * t + k] << 32 | c->tri[3 * t + (k + 1) % 3];
    qsort(keys, ne, sizeof *keys, cmp_u64);
    bool closed = true;
    for (size_t i = 0; i < ne && closed; i++) {
        if (i + 1 < ne && keys[i + 1] == keys[i])
            closed = false;
        uint64_t rev = keys[i] << 32 | keys[i] >> 32;
        if (!bsearch(&rev, keys, ne, sizeof *keys, cmp_u64))
            closed = false;
    }
    q_free(keys, ne * sizeof *keys);
    if (!closed)
        return NAN;
    double v = 0;
    for (size_t t = 0; t < c->nt; t++) {
        double x[3];
        cross3(c->pos + 3 * c->tri[3 * t + 1], c->pos + 3 * c->tri[3 * t + 2], x);
        v += dot3(c->pos + 3 * c->tri[3 * t], x);
    }
    return fabs(v) / 6;
}

q_hacd_params q_default_hacd_params(void)
{
    q_hacd_params p;
    memset(&p, 0, sizeof p);
    p.concavity = 10;
    p.connect_dist = 0.1;
    p.scale = 1000;
    p.volume_weight = 0.1;
    return p;
}

void q_hacd_free(q_hacd_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->hull_count; i++) {
        q_free(r->hulls[i].points, r->hulls[i].point_count * 3 * sizeof(double));
        q_mesh_destroy(r->hulls[i].mesh);
    }
    q_free(r->hulls, r->hull_count * sizeof *r->hulls);
    q_free(r->triangle_hull, r->triangle_count * sizeof *r->triangle_hull);
    q_free(r->trace, r->merges * sizeof *r->trace);
    memset(r, 0, sizeof *r);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static q_status bad(char *err, size_t errlen, q_status st, const char *fmt, size_t a)
{
    if (err && errlen)
        snprintf(err, errlen, fmt, a);
    return st;
}

/* Merges the cheapest edges (valid queue entries) while there are more than
 * keep clusters; limit re-queues the merged clusters' edges. */
static bool run_queue(ctx *c, double limit, size_t keep, bool trace)
{
    while (c->nheap && c->alive > keep) {
        heap_entry e = heap_pop(c);
        const cluster *A = c->cl + e.a, *B = c->cl + e.b;
        if (!A->alive || !B->alive || A->version != e.va || B->version != e.vb) {
            q_free(e.pts, (size_t)e.npts * 3 * sizeof(double));
            continue;
        }
        if (!e.pts) { /* lazy: evaluate now, queue what it costs */
            if (!queue_edge(c, e.a, e.b, limit))
                return false;
            continue;
        }
        uint32_t a = e.a, b = e.b;
        if (B->ntri > A->ntri || (B->ntri == A->ntri && b < a)) {
            a = e.b;
            b = e.a;
        }
        if (!merge(c, a, b, &e, limit, trace))
            return false;
    }
    return true;
}

static void clear_heap(ctx *c)
{
    for (size_t i = 0; i < c->nheap; i++)
        q_free(c->heap[i].pts, (size_t)c->heap[i].npts * 3 * sizeof(double));
    c->nheap = 0;
}

static void free_ctx(ctx *c, size_t nv_in)
{
    q_free(c->pos, nv_in * 3 * sizeof(double));
    q_free(c->tri, c->nt * 3 * sizeof(uint32_t));
    q_free(c->tri_orig, c->nt * sizeof(uint32_t));
    q_free(c->samp, (c->nsamp ? c->nsamp : 1) * sizeof *c->samp);
    q_free(c->spos, (c->nsamp ? c->nsamp : 1) * sizeof *c->spos);
    q_free(c->cell_start, ((size_t)c->dims[0] * c->dims[1] * c->dims[2] + 1) * sizeof *c->cell_start);
    if (c->cl)
        for (size_t i = 0; i < c->nt; i++)
            free_cluster(c->cl + i);
    q_free(c->cl, c->nt * sizeof *c->cl);
    q_free(c->parent, c->nt * sizeof *c->parent);
    q_free(c->mark, c->nt * sizeof *c->mark);
    q_free(c->slot, c->nt * sizeof *c->slot);
    q_free(c->buf, c->bufcap * sizeof(double));
    q_free(c->hv, c->hvcap * sizeof(uint32_t));
    q_free(c->hi, c->hicap * sizeof(uint32_t));
    q_free(c->planes, c->plcap * sizeof(double));
    q_free(c->bin_items, c->bincap * sizeof(uint32_t));
    clear_heap(c);
    q_free(c->heap, c->heapcap * sizeof *c->heap);
    q_free(c->trace, c->tracecap * sizeof *c->trace);
}

q_status q_hacd(const q_mesh *m, const q_hacd_params *params, q_hacd_result *out, char *err, size_t errlen)
{
    double t0 = now_ms();
    if (out)
        memset(out, 0, sizeof *out);
    if (!m || !out)
        return bad(err, errlen, Q_ERR_ARGUMENT, "no mesh or no result%.0zu", 0);
    q_hacd_params p = params ? *params : q_default_hacd_params();
    if (!(p.scale > 0) || !isfinite(p.scale))
        return bad(err, errlen, Q_ERR_ARGUMENT, "scale must be > 0 and finite%.0zu", 0);
    if (!(p.connect_dist > 0) || !(p.connect_dist < p.scale))
        return bad(err, errlen, Q_ERR_ARGUMENT, "connect_dist must be > 0 and below scale%.0zu", 0);
    if (!(p.concavity >= 0) || !isfinite(p.concavity))
        return bad(err, errlen, Q_ERR_ARGUMENT, "concavity must be >= 0 and finite%.0zu", 0);
    if (!(p.volume_weight >= 0) || !isfinite(p.volume_weight))
        return bad(err, errlen, Q_ERR_ARGUMENT, "volume_weight must be >= 0 and finite%.0zu", 0);
    if (!(p.sample_spacing >= 0) || !isfinite(p.sample_spacing))
        return bad(err, errlen, Q_ERR_ARGUMENT, "sample_spacing must be >= 0 and finite%.0zu", 0);
    if (p.max_vertices != 0 && p.max_vertices < 4)
        return bad(err, errlen, Q_ERR_ARGUMENT, "max_vertices must be 0 (no limit) or >= 4, got %zu", p.max_vertices);
    if (m->index_count % 3)
        return bad(err, errlen, Q_ERR_ARGUMENT, "index count %zu is not a multiple of 3", m->index_count);
    if (m->index_count == 0)
        return bad(err, errlen, Q_ERR_ARGUMENT, "mesh has no triangles%.0zu", 0);
    if (m->vertex_count > Q_HULL_MAX_POINTS)
        return bad(err, errlen, Q_ERR_TOO_LARGE, "too many vertices (%zu)", m->vertex_count);
    if (m->index_count / 3 > (1u << 31))
        return bad(err, errlen, Q_ERR_TOO_LARGE, "too many triangles (%zu)", m->index_count / 3);
    size_t nv = m->vertex_count, nt_in = m->index_count / 3;
    for (size_t i = 0; i < m->index_count; i++)
        if (m->indices[i] >= nv)
            return bad(err, errlen, Q_ERR_ARGUMENT, "index %zu is out of range", i);
    for (size_t v = 0; v < 3 * nv; v++)
        if (!isfinite(m->positions[v]))
            return bad(err, errlen, Q_ERR_ARGUMENT, "vertex %zu has a non-finite coordinate", v / 3);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < m->index_count; i++)
        for (int a = 0; a < 3; a++) {
            double x = m->positions[3 * m->indices[i] + a];
            lo[a] = fmin(lo[a], x);
            hi[a] = fmax(hi[a], x);
        }
    double side = fmax(hi[0] - lo[0], fmax(hi[1] - lo[1], hi[2] - lo[2]));
    if (!(side > 0))
        return bad(err, errlen, Q_ERR_ARGUMENT, "all vertices of the mesh coincide%.0zu", 0);
    double k = p.scale / side, centre[3];
    for (int a = 0; a < 3; a++)
        centre[a] = 0.5 * (lo[a] + hi[a]);

    ctx c;
    memset(&c, 0, sizeof c);
    c.s = p.connect_dist;
    c.volume_weight = p.volume_weight;
    c.err = err;
    c.errlen = errlen;
    double *scaled = q_alloc(nv * 3 * sizeof *scaled);
    uint32_t *rep = q_alloc(nv * sizeof *rep);
    uint32_t *comp = NULL, *part = NULL;
    uint8_t *flip = NULL;
    size_t ncomp = 0;
    pair_list pairs = {0};
    c.pos = q_alloc(nv * 3 * sizeof *c.pos);
    c.tri = q_alloc(nt_in * 3 * sizeof *c.tri);
    c.tri_orig = q_alloc(nt_in * sizeof *c.tri_orig);
    if (!scaled || !rep || !c.pos || !c.tri || !c.tri_orig) {
        fail(&c, Q_ERR_MEMORY, "out of memory");
        goto cleanup;
    }
    for (size_t v = 0; v < nv; v++)
        for (int a = 0; a < 3; a++)
            scaled[3 * v + a] = (m->positions[3 * v + a] - centre[a]) * k;
    if (weld(&c, scaled, nv, rep) != Q_OK)
        goto cleanup;
    double area = 0;
    for (size_t t = 0; t < nt_in; t++) {
        uint32_t a = rep[m->indices[3 * t]], b = rep[m->indices[3 * t + 1]], d = rep[m->indices[3 * t + 2]];
        /* A triangle two of whose corners weld stays (as a segment: its
         * third corner must end up in a hull); one that welds to a point
         * goes. */
        if (a == b && b == d)
            continue;
        uint32_t *tv = c.tri + 3 * c.nt;
        tv[0] = a;
        tv[1] = b;
        tv[2] = d;
        double n[3];
        area += 0.5 * tri_area2(c.pos + 3 * a, c.pos + 3 * b, c.pos + 3 * d, n);
        c.tri_orig[c.nt++] = (uint32_t)t;
    }
    /* c.tri and c.tri_orig keep their nt_in-sized blocks: nt_in is what
     * free_ctx needs, so remember it through c.nt at cleanup */
    size_t nt_kept = c.nt;
    if (nt_kept == 0) {
        fail(&c, Q_ERR_ARGUMENT, "every triangle collapses at connect_dist (the mesh is too small or degenerate)");
        goto cleanup;
    }
    if (!(area > 0)) {
        fail(&c, Q_ERR_ARGUMENT, "the mesh has no area (every triangle is degenerate)");
        goto cleanup;
    }
    comp = q_alloc(nt_kept * sizeof *comp);
    if (!comp) {
        fail(&c, Q_ERR_MEMORY, "out of memory");
        goto cleanup;
    }
    part = q_alloc(nt_kept * sizeof *part);
    if (!part) {
        fail(&c, Q_ERR_MEMORY, "out of memory");
        goto cleanup;
    }
    flip = q_alloc(nt_kept * sizeof *flip);
    if (!flip) {
        fail(&c, Q_ERR_MEMORY, "out of memory");
        goto cleanup;
    }
    ncomp = build_graph(&c, &pairs, comp, part, flip);
    if (ncomp == 0) {
        fail(&c, Q_ERR_MEMORY, "out of memory");
        goto cleanup;
    }
    /* outward per part: signed volume about its area centroid, with the
     * consistent orientation from build_graph */
    {
        double *acc = q_calloc(nt_kept * 5, sizeof *acc);
        if (!acc) {
            q_free(acc, nt_kept * 5 * sizeof *acc);
            fail(&c, Q_ERR_MEMORY, "out of memory");
            goto cleanup;
        }
        for (int pass = 0; pass < 2; pass++)
            for (size_t t = 0; t < nt_kept; t++) {
                const uint32_t *tv = c.tri + 3 * t;
                double n[3], g[3];
                double l = tri_area2(c.pos + 3 * tv[0], c.pos + 3 * tv[1], c.pos + 3 * tv[2], n);
                for (int a = 0; a < 3; a++)
                    g[a] = (c.pos[3 * tv[0] + a] + c.pos[3 * tv[1] + a] + c.pos[3 * tv[2] + a]) / 3;
                double *A = acc + 5 * part[t];
                if (pass == 0) {
                    for (int a = 0; a < 3; a++)
                        A[a] += l * g[a];
                    A[3] += l;
                } else {
                    double d[3];
                    for (int a = 0; a < 3; a++)
                        d[a] = g[a] - (A[3] > 0 ? A[a] / A[3] : 0);
                    A[4] += flip[t] ? -dot3(d, n) : dot3(d, n);
                }
            }
        for (size_t t = 0; t < nt_kept; t++)
            flip[t] ^= (uint8_t)(acc[5 * part[t] + 4] < 0);
        q_free(acc, nt_kept * 5 * sizeof *acc);
    }
    double h = p.sample_spacing > 0 ? p.sample_spacing : sqrt(area / HACD_TARGET_SAMPLES);
    h = fmax(h, c.s);
    c.h = h;
    c.refine_floor = p.concavity;
    if (build_samples(&c, h, comp, flip) != Q_OK)
        goto cleanup;
    /* clusters */
    c.cl = q_calloc(nt_kept, sizeof *c.cl);
    c.parent = q_alloc(nt_kept * sizeof *c.parent);
    c.mark = q_calloc(nt_kept, sizeof *c.mark);
    c.slot = q_calloc(nt_kept, sizeof *c.slot);
    if (!c.cl || !c.parent || !c.mark || !c.slot) {
        fail(&c, Q_ERR_MEMORY, "out of memory");
        goto cleanup;
    }
    {
        uint32_t *deg = q_calloc(nt_kept, sizeof *deg);
        if (!deg) {
            fail(&c, Q_ERR_MEMORY, "out of memory");
            goto cleanup;
        }
        for (size_t i = 0; i < pairs.n; i++) {
            deg[pairs.v[2 * i]]++;
            deg[pairs.v[2 * i + 1]]++;
        }
        bool ok = true;
        for (size_t t = 0; t < nt_kept && ok; t++) {
            cluster *K = c.cl + t;
            const uint32_t *tv = c.tri + 3 * t;
            ok = grow32((void **)&K->pts, &K->ptcap, 9, sizeof(double)) && (deg[t] == 0 || grow_nb(K, deg[t]));
            if (!ok)
                break;
            for (int i = 0; i < 3; i++)
                memcpy(K->pts + 3 * i, c.pos + 3 * tv[i], 3 * sizeof(double));
            K->npts = 3;
            double n[3];
            K->area = 0.5 * tri_area2(c.pos + 3 * tv[0], c.pos + 3 * tv[1], c.pos + 3 * tv[2], n);
            K->ntri = 1;
            K->comp = comp[t];
            K->alive = true;
            c.parent[t] = (uint32_t)t;
        }
        q_free(deg, nt_kept * sizeof *deg);
        if (!ok) {
            fail(&c, Q_ERR_MEMORY, "out of memory");
            goto cleanup;
        }
        for (size_t i = 0; i < pairs.n; i++) {
            uint32_t a = pairs.v[2 * i], b = pairs.v[2 * i + 1];
            cluster *A = c.cl + a, *B = c.cl + b;
            A->nbe[A->nnb] = B->nbe[B->nnb] = 0;
            A->nbv[A->nnb] = B->nbv[B->nnb] = 0;
            A->nb[A->nnb++] = b;
            B->nb[B->nnb++] = a;
        }
        c.alive = nt_kept;
    }
    /* phase 1: merge within the concavity; every edge starts lazy (its
     * error and added volume are >= 0) */
    for (size_t i = 0; i < pairs.n; i++)
        if (!queue_lazy(&c, pairs.v[2 * i], pairs.v[2 * i + 1], 0, 0))
            goto cleanup;
    if (!run_queue(&c, p.concavity, 0, p.trace))
        goto cleanup;
    /* phase 2: down to max_hulls, cheapest first */
    if (p.max_hulls && c.alive > p.max_hulls) {
        clear_heap(&c);
        for (size_t a = 0; a < nt_kept; a++) {
            cluster *A = c.cl + a;
            if (!A->alive)
                continue;
            c.stamp++;
            for (uint32_t i = 0; i < A->nnb; i++) {
                uint32_t r = uf_find(c.parent, A->nb[i] & ID_MASK);
                if (r <= a || c.mark[r] == c.stamp || !c.cl[r].alive)
                    continue;
                c.mark[r] = c.stamp;
                if (!queue_edge(&c, (uint32_t)a, r, INFINITY))
                    goto cleanup;
            }
        }
        if (!run_queue(&c, INFINITY, p.max_hulls, p.trace))
            goto cleanup;
    }
    /* output */
    out->hulls = q_calloc(c.alive, sizeof *out->hulls);
    out->triangle_hull = q_alloc(nt_in * sizeof *out->triangle_hull);
    if (!out->hulls || !out->triangle_hull) {
        fail(&c, Q_ERR_MEMORY, "out of memory");
        goto cleanup;
    }
    out->triangle_count = nt_in;
    {
        uint32_t *index_of = c.mark; /* reused: cluster -> hull index */
        double total_volume = 0;
        /* Each hull is taken afresh from its cluster's vertices: a chain of
         * merges, each within s, can leave the running hull points more
         * than s inside an early vertex. head/next list a cluster's
         * triangles; vstamp marks vertices taken. */
        uint32_t *head = c.slot, *next = q_alloc(nt_kept * sizeof *next), *vstamp = q_calloc(c.nv, sizeof *vstamp);
        if (!next || !vstamp) {
            q_free(next, nt_kept * sizeof *next);
            q_free(vstamp, c.nv * sizeof *vstamp);
            fail(&c, Q_ERR_MEMORY, "out of memory");
            goto cleanup;
        }
        for (size_t t = 0; t < nt_kept; t++)
            head[t] = NONE;
        for (size_t t = nt_kept; t > 0; t--) {
            uint32_t r = uf_find(c.parent, (uint32_t)(t - 1));
            next[t - 1] = head[r];
            head[r] = (uint32_t)(t - 1);
        }
        bool gathered = true;
        for (size_t a = 0; a < nt_kept && gathered; a++) {
            cluster *A = c.cl + a;
            if (!A->alive)
                continue;
            size_t n = 0;
            for (uint32_t t = head[a]; t != NONE && gathered; t = next[t])
                for (int j = 0; j < 3; j++) {
                    uint32_t v = c.tri[3 * t + j];
                    if (vstamp[v] == a + 1)
                        continue;
                    vstamp[v] = (uint32_t)a + 1;
                    if (!grow((void **)&c.buf, &c.bufcap, 3 * (n + 1), sizeof(double))) {
                        gathered = false;
                        break;
                    }
                    memcpy(c.buf + 3 * n++, c.pos + 3 * v, 3 * sizeof(double));
                }
            if (!gathered || !hull_points(&c, c.buf, n) ||
                !grow32((void **)&A->pts, &A->ptcap, 3 * c.info.vertex_count, sizeof(double))) {
                gathered = false;
                break;
            }
            for (size_t i = 0; i < c.info.vertex_count; i++)
                memcpy(A->pts + 3 * i, c.buf + 3 * c.hv[i], 3 * sizeof(double));
            A->npts = (uint32_t)c.info.vertex_count;
        }
        q_free(next, nt_kept * sizeof *next);
        q_free(vstamp, c.nv * sizeof *vstamp);
        if (!gathered) {
            fail(&c, Q_ERR_MEMORY, "out of memory");
            goto cleanup;
        }
        for (size_t a = 0; a < nt_kept; a++) {
            cluster *A = c.cl + a;
            if (!A->alive)
                continue;
            q_hacd_hull *H = out->hulls + out->hull_count;
            index_of[a] = (uint32_t)out->hull_count++;
            if (!hull_points(&c, A->pts, A->npts))
                goto cleanup;
            H->concavity = hull_error(&c, A->pts, A->comp, A->area, INFINITY);
            if (c.st != Q_OK)
                goto cleanup;
            out->max_concavity = fmax(out->max_concavity, H->concavity);
            size_t n = A->npts;
            if (p.max_vertices && n > p.max_vertices) {
                n = reduce_points(&c, A->pts, n, p.max_vertices);
                if (!n)
                    goto cleanup;
            }
            for (size_t i = 0; i < n; i++)
                for (int ax = 0; ax < 3; ax++)
                    A->pts[3 * i + ax] = A->pts[3 * i + ax] / k + centre[ax];
            q_hull_def def = q_default_hull_def();
            def.epsilon = c.s / k;
            q_hull_info info;
            q_status st;
            char herr[128];
            H->mesh = q_hull_mesh(A->pts, n, &def, &info, &st, herr, sizeof herr);
            if (!H->mesh) {
                char msg[200];
                snprintf(msg, sizeof msg, "hull of a cluster failed: %s", herr);
                fail(&c, st, msg);
                goto cleanup;
            }
            H->shape = info.shape;
            H->triangle_count = A->ntri;
            H->point_count = H->mesh->vertex_count;
            H->points = q_alloc((H->point_count ? H->point_count : 1) * 3 * sizeof(double));
            if (!H->points) {
                fail(&c, Q_ERR_MEMORY, "out of memory");
                goto cleanup;
            }
            for (size_t i = 0; i < 3 * H->point_count; i++)
                H->points[i] = H->mesh->positions[i];
            H->volume = info.shape == Q_HULL_SOLID ? q_mesh_volume(H->mesh) : 0;
            total_volume += H->volume;
        }
        for (size_t t = 0; t < nt_in; t++)
            out->triangle_hull[t] = NONE;
        for (size_t t = 0; t < nt_kept; t++)
            out->triangle_hull[c.tri_orig[t]] = index_of[uf_find(c.parent, (uint32_t)t)];
        double mv = closed_volume(&c) / (k * k * k);
        out->volume_ratio = mv > 0 ? total_volume / mv : NAN;
    }
    out->scale_factor = k;
    out->sample_spacing = h;
    out->samples = c.nsamp;
    out->merges = c.merges;
    out->components = ncomp;
    if (p.trace && c.ntrace) {
        /* exactly merges entries, the size q_hacd_free gives back */
        out->trace = q_realloc(c.trace, c.tracecap * sizeof *c.trace, c.ntrace * sizeof *c.trace);
        if (!out->trace) {
            fail(&c, Q_ERR_MEMORY, "out of memory");
            goto cleanup;
        }
        c.trace = NULL;
        c.tracecap = 0;
    }
cleanup:
    q_free(scaled, nv * 3 * sizeof *scaled);
    q_free(rep, nv * sizeof *rep);
    q_free(comp, c.nt * sizeof *comp);
    q_free(flip, c.nt * sizeof *flip);
    q_free(part, c.nt * sizeof *part);
    q_free(pairs.v, pairs.cap * sizeof(uint32_t));
    {
        size_t kept = c.nt;
        /* free_ctx frees per-kept-triangle arrays with c.nt, and the
         * nt_in-sized tri arrays need their own size */
        q_free(c.tri, nt_in * 3 * sizeof(uint32_t));
        q_free(c.tri_orig, nt_in * sizeof(uint32_t));
        c.tri = NULL;
        c.tri_orig = NULL;
        c.nt = kept;
    }
    free_ctx(&c, nv);
    if (c.st != Q_OK) {
        if (out->hulls)
            out->hull_count = c.alive; /* the block's size; unused entries are zero */
        q_hacd_free(out);
        return c.st;
    }
    out->time_ms = now_ms() - t0;
    return Q_OK;
}
