/* Voronoi fracture of a mesh (design note 003; see fracture.h).
 *
 * Each cell's fragment starts as the whole (welded) mesh and is cut by the
 * cell's bisector planes one at a time, nearest neighbour first. A cut keeps
 * the triangles behind the plane, splits the crossing ones (one new vertex
 * per crossing edge, shared by both of its triangles, so the result stays
 * welded), and closes the hole: the kept triangles' edges that lie on the
 * plane and have no reverse twin form the cut's boundary loops, and a fan
 * from their centroid, wound the other way, closes them. Clipping the
 * earlier caps with the later planes leaves exactly the fragment
 * (mesh interior) intersected with the cell.
 */
#include "geom/fracture.h"

#include "core/alloc.h"
#include "geom/voronoi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

q_fracture_params q_default_fracture_params(void)
{
    q_fracture_params p;
    memset(&p, 0, sizeof p);
    p.pieces = 16;
    p.seed = 1;
    return p;
}

/* ---- growable arrays (q_alloc) ---- */

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *q = q_realloc(*p, *cap * elem, nc * elem);
    if (!q)
        return false;
    *p = q;
    *cap = nc;
    return true;
}

typedef struct piece {
    double *v;    /* 3 per vertex */
    size_t nv, cv;
    int *t;       /* 3 per triangle */
    uint8_t *fl;  /* per triangle: 1 = interior (cap) */
    size_t nt, ct, cfl;
    int *ce;      /* cap edges: a, b, cap (cell face) per edge; each cap's
                     edges form loops counter-clockwise about its normal */
    size_t nce, cce;
} piece;

typedef struct scratch {
    double *d;
    int *remap;
    uint8_t *on;
    size_t cap_v, cap_r, cap_on;
    double *nv;
    size_t n_nv, c_nv;
    int *nt;
    uint8_t *nfl;
    size_t n_nt, c_nt, c_nfl;
    uint64_t *hkey;
    int *hval;
    size_t hcap, hcap_v;
    uint64_t *edges;
    size_t c_edges;
    int *nce;
    size_t n_nce, c_nce;
    int *deg;
    size_t c_deg;
    struct endpoint { double t; int v, kind; } *ends;
    size_t c_ends;
    uint32_t *vmask;
    size_t c_vmask;
    int *chk;     /* new triangles that may have an edge on the plane */
    size_t n_chk, c_chk;
} scratch;

static void piece_free(piece *p)
{
    q_free(p->v, p->cv * 3 * sizeof(double));
    q_free(p->t, p->ct * 3 * sizeof(int));
    q_free(p->fl, p->cfl);
    q_free(p->ce, p->cce * 3 * sizeof(int));
    memset(p, 0, sizeof *p);
}

static void scratch_free(scratch *s)
{
    q_free(s->d, s->cap_v * sizeof(double));
    q_free(s->remap, s->cap_r * sizeof(int));
    q_free(s->on, s->cap_on);
    q_free(s->nv, s->c_nv * 3 * sizeof(double));
    q_free(s->nt, s->c_nt * 3 * sizeof(int));
    q_free(s->nfl, s->c_nfl);
    q_free(s->hkey, s->hcap * sizeof(uint64_t));
    q_free(s->hval, s->hcap_v * sizeof(int));
    q_free(s->edges, s->c_edges * sizeof(uint64_t));
    q_free(s->nce, s->c_nce * 3 * sizeof(int));
    q_free(s->deg, s->c_deg * sizeof(int));
    q_free(s->ends, s->c_ends * sizeof(struct endpoint));
    q_free(s->vmask, s->c_vmask * sizeof(uint32_t));
    q_free(s->chk, s->c_chk * sizeof(int));
    memset(s, 0, sizeof *s);
}

static bool push_vertex(scratch *s, const double x[3], bool on)
{
    if (!grow((void **)&s->nv, &s->c_nv, s->n_nv + 1, 3 * sizeof(double)) ||
        !grow((void **)&s->on, &s->cap_on, s->n_nv + 1, 1))
        return false;
    memcpy(s->nv + 3 * s->n_nv, x, 3 * sizeof(double));
    s->on[s->n_nv] = on;
    s->n_nv++;
    return true;
}

static bool push_tri(scratch *s, int a, int b, int c, uint8_t fl)
{
    if (a == b || b == c || a == c)
        return true;
    if (!grow((void **)&s->nt, &s->c_nt, s->n_nt + 1, 3 * sizeof(int)) ||
        !grow((void **)&s->nfl, &s->c_nfl, s->n_nt + 1, 1))
        return false;
    s->nt[3 * s->n_nt] = a;
    s->nt[3 * s->n_nt + 1] = b;
    s->nt[3 * s->n_nt + 2] = c;
    s->nfl[s->n_nt] = fl;
    s->n_nt++;
    return true;
}

/* Notes new triangles [from, to) for the on-plane edge scan. */
static bool push_chk(scratch *s, size_t from, size_t to)
{
    if (!grow((void **)&s->chk, &s->c_chk, s->n_chk + (to - from), sizeof(int)))
        return false;
    for (size_t k = from; k < to; k++)
        s->chk[s->n_chk++] = (int)k;
    return true;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Split vertex of old edge (a, b): one per edge, computed from the lower
 * index so both triangles of the edge get the same point. -1: no memory. */
static int split_edge(scratch *s, const piece *p, int a, int b)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;
    uint64_t key = ((uint64_t)(uint32_t)lo << 32) | (uint32_t)hi;
    size_t mask = s->hcap - 1, h = (size_t)mix64(key) & mask;
    while (s->hkey[h] != UINT64_MAX) {
        if (s->hkey[h] == key)
            return s->hval[h];
        h = (h + 1) & mask;
    }
    double t = s->d[lo] / (s->d[lo] - s->d[hi]);
    const double *x = p->v + 3 * lo, *y = p->v + 3 * hi;
    double q[3] = {x[0] + t * (y[0] - x[0]), x[1] + t * (y[1] - x[1]), x[2] + t * (y[2] - x[2])};
    if (!push_vertex(s, q, true))
        return -1;
    s->hkey[h] = key;
    s->hval[h] = (int)s->n_nv - 1;
    return (int)s->n_nv - 1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static bool push_cap_edge(scratch *s, int a, int b, int cap)
{
    if (a == b)
        return true;
    if (!grow((void **)&s->nce, &s->c_nce, s->n_nce + 1, 3 * sizeof(int)))
        return false;
    s->nce[3 * s->n_nce] = a;
    s->nce[3 * s->n_nce + 1] = b;
    s->nce[3 * s->n_nce + 2] = cap;
    s->n_nce++;
    return true;
}

static int cmp_end(const void *a, const void *b)
{
    const struct endpoint *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->kind - y->kind; /* exits before entries at the same point */
}

/* Cap j's edges in [first, last) of s->nce were clipped by the plane with
 * normal nk: their loops are open where they left (exit) and re-entered
 * (entry) the kept side. Walking the cut line in direction n_j x n_k, the
 * kept region lies on the loops' left, so each exit joins the next entry. */
static bool close_cap(scratch *s, size_t first, size_t last, int cap, const double *nj, const double nk[3])
{
    if (!grow((void **)&s->deg, &s->c_deg, s->n_nv, sizeof(int)))
        return false;
    size_t nends = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t e = first; e < last; e++) {
            int a = s->nce[3 * e], b = s->nce[3 * e + 1];
            if (pass == 0) {
                s->deg[a] = s->deg[b] = 0;
            } else {
                if (s->on[b])
                    s->deg[b]++;
                if (s->on[a])
                    s->deg[a]--;
            }
        }
    }
    double dir[3] = {nj[1] * nk[2] - nj[2] * nk[1], nj[2] * nk[0] - nj[0] * nk[2], nj[0] * nk[1] - nj[1] * nk[0]};
    for (size_t e = first; e < last; e++)
        for (int k = 0; k < 2; k++) {
            int v = s->nce[3 * e + k];
            int dg = s->deg[v];
            if (dg == 0)
                continue;
            s->deg[v] = 0; /* count each vertex once */
            for (int r = 0; r < (dg > 0 ? dg : -dg); r++) {
                if (!grow((void **)&s->ends, &s->c_ends, nends + 1, sizeof(struct endpoint)))
                    return false;
                const double *x = s->nv + 3 * v;
                s->ends[nends].t = x[0] * dir[0] + x[1] * dir[1] + x[2] * dir[2];
                s->ends[nends].v = v;
                s->ends[nends].kind = dg > 0 ? 0 : 1; /* 0 exit, 1 entry */
                nends++;
            }
        }
    if (!nends)
        return true;
    qsort(s->ends, nends, sizeof(struct endpoint), cmp_end);
    int pending = -1;
    for (size_t i = 0; i < nends; i++) {
        if (s->ends[i].kind == 0) {
            pending = s->ends[i].v;
        } else if (pending >= 0) {
            if (!push_cap_edge(s, pending, s->ends[i].v, cap))
                return false;
            pending = -1;
        }
    }
    return true;
}

/* Keeps the part of p with dot(n, x) <= dd (n unit); the cut becomes cap
 * `cap` (edge loops), the other caps are clipped and closed along it.
 * planes holds each cap's unit normal (3 per cap). false: no memory. */
static bool clip(piece *p, scratch *s, const double n[3], double dd, double eps, int cap, const double *planes)
{
    if (!grow((void **)&s->d, &s->cap_v, p->nv, sizeof(double)) ||
        !grow((void **)&s->remap, &s->cap_r, p->nv, sizeof(int)))
        return false;
    bool any_out = false, any_in = false;
    for (size_t i = 0; i < p->nv; i++) {
        const double *x = p->v + 3 * i;
        double d = x[0] * n[0] + x[1] * n[1] + x[2] * n[2] - dd;
        if (fabs(d) <= eps)
            d = 0;
        s->d[i] = d;
        any_out |= d > 0;
        any_in |= d < 0;
    }
    if (!any_out)
        return true;
    if (!any_in) {
        p->nt = 0;
        p->nce = 0;
        return true;
    }
    s->n_nv = 0;
    s->n_nt = 0;
    s->n_nce = 0;
    s->n_chk = 0;
    for (size_t i = 0; i < p->nv; i++) {
        if (s->d[i] <= 0) {
            s->remap[i] = (int)s->n_nv;
            if (!push_vertex(s, p->v + 3 * i, s->d[i] == 0))
                return false;
        } else {
            s->remap[i] = -1;
        }
    }
    size_t crossing = p->nce;
    for (size_t k = 0; k < p->nt; k++) {
        const int *t = p->t + 3 * k;
        double d0 = s->d[t[0]], d1 = s->d[t[1]], d2 = s->d[t[2]];
        if ((d0 > 0 || d1 > 0 || d2 > 0) && (d0 < 0 || d1 < 0 || d2 < 0))
            crossing++;
    }
    size_t need = 16;
    while (need < 4 * crossing + 16)
        need *= 2;
    if (!grow((void **)&s->hkey, &s->hcap, need, sizeof(uint64_t)) ||
        !grow((void **)&s->hval, &s->hcap_v, s->hcap, sizeof(int)))
        return false;
    memset(s->hkey, 0xff, need * sizeof(uint64_t));
    size_t saved_cap = s->hcap;
    s->hcap = need; /* split_edge probes this many slots */
    bool ok = true;
    for (size_t k = 0; k < p->nt && ok; k++) {
        const int *t = p->t + 3 * k;
        double d0 = s->d[t[0]], d1 = s->d[t[1]], d2 = s->d[t[2]];
        if (d0 <= 0 && d1 <= 0 && d2 <= 0) {
            size_t at = s->n_nt;
            ok = push_tri(s, s->remap[t[0]], s->remap[t[1]], s->remap[t[2]], p->fl[k]);
            if (ok && s->n_nt > at && (d0 == 0) + (d1 == 0) + (d2 == 0) >= 2)
                ok = push_chk(s, at, s->n_nt);
            continue;
        }
        if (d0 >= 0 && d1 >= 0 && d2 >= 0)
            continue;
        int poly[4], np = 0;
        for (int e = 0; e < 3; e++) {
            int a = t[e], b = t[(e + 1) % 3];
            if (s->d[a] <= 0)
                poly[np++] = s->remap[a];
            if ((s->d[a] < 0 && s->d[b] > 0) || (s->d[a] > 0 && s->d[b] < 0)) {
                int id = split_edge(s, p, a, b);
                if (id < 0) {
                    ok = false;
                    break;
                }
                poly[np++] = id;
            }
        }
        size_t at = s->n_nt;
        for (int j = 1; ok && j + 1 < np; j++)
            ok = push_tri(s, poly[0], poly[j], poly[j + 1], p->fl[k]);
        if (ok)
            ok = push_chk(s, at, s->n_nt);
    }
    /* caps: clip their edges, then close each clipped cap along this plane */
    for (size_t e = 0; e < p->nce && ok;) {
        int c = p->ce[3 * e + 2];
        size_t first = s->n_nce;
        bool cut = false;
        for (; e < p->nce && p->ce[3 * e + 2] == c && ok; e++) {
            int a = p->ce[3 * e], b = p->ce[3 * e + 1];
            double da = s->d[a], db = s->d[b];
            if (da <= 0 && db <= 0) {
                ok = push_cap_edge(s, s->remap[a], s->remap[b], c);
            } else if (da < 0 && db > 0) {
                int id = split_edge(s, p, a, b);
                ok = id >= 0 && push_cap_edge(s, s->remap[a], id, c);
                cut = true;
            } else if (da > 0 && db < 0) {
                int id = split_edge(s, p, a, b);
                ok = id >= 0 && push_cap_edge(s, id, s->remap[b], c);
                cut = true;
            } else {
                cut = true; /* out, or from the plane outwards */
            }
        }
        if (ok && cut)
            ok = close_cap(s, first, s->n_nce, c, planes + 3 * c, n);
    }
    s->hcap = saved_cap;
    if (!ok)
        return false;
    /* the new cap: on-plane directed edges (surface and caps) without a
     * twin, reversed; only split triangles and kept ones with two vertices
     * on the plane can hold such an edge */
    size_t ne = 0;
    for (size_t i = 0; i < s->n_chk + s->n_nce; i++) {
        bool tri = i < s->n_chk;
        const int *t = tri ? s->nt + 3 * (size_t)s->chk[i] : s->nce + 3 * (i - s->n_chk);
        for (int e = 0; e < (tri ? 3 : 1); e++) {
            int a = t[e], b = tri ? t[(e + 1) % 3] : t[1];
            if (s->on[a] && s->on[b]) {
                if (!grow((void **)&s->edges, &s->c_edges, ne + 1, sizeof(uint64_t)))
                    return false;
                s->edges[ne++] = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
            }
        }
    }
    if (ne) {
        if (ne <= 64) {
            for (size_t i = 1; i < ne; i++) {
                uint64_t x = s->edges[i];
                size_t j = i;
                for (; j > 0 && s->edges[j - 1] > x; j--)
                    s->edges[j] = s->edges[j - 1];
                s->edges[j] = x;
            }
        } else {
            qsort(s->edges, ne, sizeof(uint64_t), cmp_u64);
        }
        for (size_t i = 0; i < ne;) {
            size_t j = i;
            while (j < ne && s->edges[j] == s->edges[i])
                j++;
            uint64_t rev = (s->edges[i] << 32) | (s->edges[i] >> 32);
            size_t lo = 0, hi = ne;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (s->edges[mid] < rev)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            size_t r = 0;
            while (lo + r < ne && s->edges[lo + r] == rev)
                r++;
            int a = (int)(s->edges[i] >> 32), b = (int)(uint32_t)s->edges[i];
            for (size_t u = r; u < j - i; u++)
                if (!push_cap_edge(s, b, a, cap))
                    return false;
            i = j;
        }
    }
    /* swap the new arrays into p */
    if (!grow((void **)&p->v, &p->cv, s->n_nv, 3 * sizeof(double)) ||
        !grow((void **)&p->t, &p->ct, s->n_nt, 3 * sizeof(int)) || !grow((void **)&p->fl, &p->cfl, s->n_nt, 1) ||
        !grow((void **)&p->ce, &p->cce, s->n_nce, 3 * sizeof(int)))
        return false;
    memcpy(p->v, s->nv, s->n_nv * 3 * sizeof(double));
    p->nv = s->n_nv;
    memcpy(p->t, s->nt, s->n_nt * 3 * sizeof(int));
    memcpy(p->fl, s->nfl, s->n_nt);
    p->nt = s->n_nt;
    memcpy(p->ce, s->nce, s->n_nce * 3 * sizeof(int));
    p->nce = s->n_nce;
    return true;
}

/* The cell's fragment starts as the mesh less the triangles that the clips
 * would drop whole and untouched: those strictly beyond one of the cell's
 * first planes (in clip order) and strictly behind every plane before it,
 * so no earlier clip splits, caps or closes along them; with only the
 * vertices the rest use. (Dropping a triangle that an earlier plane
 * crosses would leave a gap in that plane's cap, and closing the cap along
 * a later plane pairs its ends wrongly.) */
static bool start_piece(const piece *base, piece *work, scratch *s, const double *planes, const double *poff,
                        const int *order, int nfc, double eps)
{
    if (!grow((void **)&s->vmask, &s->c_vmask, base->nv, sizeof(uint32_t)) ||
        !grow((void **)&s->remap, &s->cap_r, base->nv, sizeof(int)) ||
        !grow((void **)&work->v, &work->cv, base->nv, 3 * sizeof(double)) ||
        !grow((void **)&work->t, &work->ct, base->nt, 3 * sizeof(int)) || !grow((void **)&work->fl, &work->cfl, base->nt, 1))
        return false;
    /* per vertex: the first plane it is not strictly behind, and whether it
     * is strictly beyond that one; a triangle goes when its three vertices
     * agree on both */
    for (size_t i = 0; i < base->nv; i++) {
        const double *x = base->v + 3 * i;
        uint32_t code = UINT32_MAX;
        for (int j = 0; j < nfc; j++) {
            const double *nn = planes + 3 * order[j];
            double d = x[0] * nn[0] + x[1] * nn[1] + x[2] * nn[2] - poff[order[j]];
            if (d >= -eps) {
                code = 2 * (uint32_t)j + (d > eps);
                break;
            }
        }
        s->vmask[i] = code;
        s->remap[i] = -1;
    }
    work->nv = 0;
    work->nt = 0;
    work->nce = 0;
    for (size_t t = 0; t < base->nt; t++) {
        const int *tv = base->t + 3 * t;
        uint32_t code = s->vmask[tv[0]];
        if ((code & 1) && code != UINT32_MAX && s->vmask[tv[1]] == code && s->vmask[tv[2]] == code)
            continue;
        for (int e = 0; e < 3; e++) {
            int a = tv[e];
            if (s->remap[a] < 0) {
                s->remap[a] = (int)work->nv;
                memcpy(work->v + 3 * work->nv, base->v + 3 * a, 3 * sizeof(double));
                work->nv++;
            }
            work->t[3 * work->nt + e] = s->remap[a];
        }
        work->fl[work->nt++] = base->fl[t];
    }
    return true;
}

/* Each cap's edge loops become a fan from their centroid (interior triangles). */
static bool fan_caps(piece *p, scratch *s)
{
    for (size_t e = 0; e < p->nce;) {
        int c = p->ce[3 * e + 2];
        size_t first = e;
        double x[3] = {0, 0, 0};
        for (; e < p->nce && p->ce[3 * e + 2] == c; e++)
            for (int k = 0; k < 2; k++)
                for (int a = 0; a < 3; a++)
                    x[a] += p->v[3 * p->ce[3 * e + k] + a];
        for (int a = 0; a < 3; a++)
            x[a] /= (double)(2 * (e - first));
        if (!grow((void **)&p->v, &p->cv, p->nv + 1, 3 * sizeof(double)))
            return false;
        memcpy(p->v + 3 * p->nv, x, sizeof x);
        int cv = (int)p->nv++;
        for (size_t i = first; i < e; i++) {
            int a = p->ce[3 * i], b = p->ce[3 * i + 1];
            if (!grow((void **)&p->t, &p->ct, p->nt + 1, 3 * sizeof(int)) ||
                !grow((void **)&p->fl, &p->cfl, p->nt + 1, 1))
                return false;
            p->t[3 * p->nt] = a;
            p->t[3 * p->nt + 1] = b;
            p->t[3 * p->nt + 2] = cv;
            p->fl[p->nt] = 1;
            p->nt++;
        }
    }
    (void)s;
    p->nce = 0;
    return true;
}

/* ---- sites ---- */

static uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *state)
{
    return (double)(rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* Ray parity along a fixed skew direction (no axis-aligned grazing). The
 * triangles are binned by their shadow on a plane across the ray (a square
 * grid, each triangle in every cell its shadow's bounds touch, widened by
 * 1e-7 of the grid's size so rounding cannot drop one): a ray meets only
 * the triangles of the cell its origin falls in. */
static const double ray_dir[3] = {0.8944271909999159, 0.3779644730092272, 0.2390457218668787};

typedef struct ray_grid {
    double u[3], v[3]; /* across ray_dir */
    double lo[2], cell, margin;
    int n;             /* n x n cells */
    int *start;        /* CSR into tris */
    int *tris;
    size_t nrefs;
} ray_grid;

static void ray_grid_free(ray_grid *g)
{
    q_free(g->start, g->start ? ((size_t)g->n * g->n + 1) * sizeof(int) : 0);
    q_free(g->tris, g->nrefs * sizeof(int));
    memset(g, 0, sizeof *g);
}

static void shadow_bounds(const ray_grid *g, const piece *m, size_t k, double margin, int c0[2], int c1[2])
{
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (int e = 0; e < 3; e++) {
        const double *x = m->v + 3 * m->t[3 * k + e];
        double q[2] = {x[0] * g->u[0] + x[1] * g->u[1] + x[2] * g->u[2], x[0] * g->v[0] + x[1] * g->v[1] + x[2] * g->v[2]};
        for (int a = 0; a < 2; a++) {
            lo[a] = q[a] < lo[a] ? q[a] : lo[a];
            hi[a] = q[a] > hi[a] ? q[a] : hi[a];
        }
    }
    for (int a = 0; a < 2; a++) {
        double f0 = floor((lo[a] - margin - g->lo[a]) / g->cell), f1 = floor((hi[a] + margin - g->lo[a]) / g->cell);
        c0[a] = f0 < 0 ? 0 : f0 > g->n - 1 ? g->n - 1 : (int)f0;
        c1[a] = f1 < 0 ? 0 : f1 > g->n - 1 ? g->n - 1 : (int)f1;
    }
}

static bool ray_grid_build(ray_grid *g, const piece *m)
{
    memset(g, 0, sizeof *g);
    const double *d = ray_dir;
    double a[3] = {-d[1], d[0], 0}; /* d is not along z */
    double l = sqrt(a[0] * a[0] + a[1] * a[1]);
    for (int k = 0; k < 3; k++)
        g->u[k] = a[k] / l;
    g->v[0] = d[1] * g->u[2] - d[2] * g->u[1];
    g->v[1] = d[2] * g->u[0] - d[0] * g->u[2];
    g->v[2] = d[0] * g->u[1] - d[1] * g->u[0];
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (size_t i = 0; i < m->nv; i++) {
        const double *x = m->v + 3 * i;
        double q[2] = {x[0] * g->u[0] + x[1] * g->u[1] + x[2] * g->u[2], x[0] * g->v[0] + x[1] * g->v[1] + x[2] * g->v[2]};
        for (int k = 0; k < 2; k++) {
            lo[k] = q[k] < lo[k] ? q[k] : lo[k];
            hi[k] = q[k] > hi[k] ? q[k] : hi[k];
        }
    }
    double size = fmax(hi[0] - lo[0], hi[1] - lo[1]);
    if (!(size > 0))
        size = 1;
    int n = (int)ceil(sqrt((double)m->nt / 2));
    g->n = n < 1 ? 1 : n > 256 ? 256 : n;
    g->cell = size / g->n;
    g->lo[0] = lo[0];
    g->lo[1] = lo[1];
    double margin = g->margin = 1e-7 * size;
    size_t cells = (size_t)g->n * g->n;
    g->start = q_calloc(cells + 1, sizeof(int));
    if (!g->start)
        return false;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < m->nt; k++) {
            int c0[2], c1[2];
            shadow_bounds(g, m, k, margin, c0, c1);
            for (int y = c0[1]; y <= c1[1]; y++)
                for (int x = c0[0]; x <= c1[0]; x++) {
                    size_t c = (size_t)y * g->n + x;
                    if (pass == 0)
                        g->start[c + 1]++;
                    else
                        g->tris[g->start[c]++] = (int)k;
                }
        }
        if (pass == 0) {
            for (size_t c = 0; c < cells; c++)
                g->start[c + 1] += g->start[c];
            g->nrefs = (size_t)g->start[cells];
            g->tris = q_alloc((g->nrefs ? g->nrefs : 1) * sizeof(int));
            if (!g->tris) {
                g->nrefs = 0;
                return false;
            }
            if (!g->nrefs)
                g->nrefs = 1;
        }
    }
    for (size_t c = cells; c > 0; c--)
        g->start[c] = g->start[c - 1];
    g->start[0] = 0;
    return true;
}

static bool inside_mesh(const piece *m, const ray_grid *g, const double o[3])
{
    const double *dir = ray_dir;
    double q[2] = {o[0] * g->u[0] + o[1] * g->u[1] + o[2] * g->u[2], o[0] * g->v[0] + o[1] * g->v[1] + o[2] * g->v[2]};
    int c[2];
    for (int a = 0; a < 2; a++) {
        double f = floor((q[a] - g->lo[a]) / g->cell);
        if (f < 0 && q[a] >= g->lo[a] - g->margin)
            f = 0;
        if (f >= g->n && q[a] <= g->lo[a] + g->n * g->cell + g->margin)
            f = g->n - 1;
        if (!(f >= 0 && f < g->n))
            return false; /* beyond every triangle's shadow */
        c[a] = (int)f;
    }
    size_t cell = (size_t)c[1] * g->n + c[0];
    int hits = 0;
    for (int i = g->start[cell]; i < g->start[cell + 1]; i++) {
        size_t k = (size_t)g->tris[i];
        const double *a = m->v + 3 * m->t[3 * k], *b = m->v + 3 * m->t[3 * k + 1], *c2 = m->v + 3 * m->t[3 * k + 2];
        double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        double e2[3] = {c2[0] - a[0], c2[1] - a[1], c2[2] - a[2]};
        double pv[3] = {dir[1] * e2[2] - dir[2] * e2[1], dir[2] * e2[0] - dir[0] * e2[2], dir[0] * e2[1] - dir[1] * e2[0]};
        double det = e1[0] * pv[0] + e1[1] * pv[1] + e1[2] * pv[2];
        if (det == 0)
            continue;
        double inv = 1 / det;
        double tv[3] = {o[0] - a[0], o[1] - a[1], o[2] - a[2]};
        double u = (tv[0] * pv[0] + tv[1] * pv[1] + tv[2] * pv[2]) * inv;
        if (u < 0 || u > 1)
            continue;
        double qv[3] = {tv[1] * e1[2] - tv[2] * e1[1], tv[2] * e1[0] - tv[0] * e1[2], tv[0] * e1[1] - tv[1] * e1[0]};
        double w = (dir[0] * qv[0] + dir[1] * qv[1] + dir[2] * qv[2]) * inv;
        if (w < 0 || u + w > 1)
            continue;
        double t = (e2[0] * qv[0] + e2[1] * qv[1] + e2[2] * qv[2]) * inv;
        if (t > 0)
            hits++;
    }
    return hits & 1;
}

typedef struct wv {
    float x[3];
    uint32_t i;
} wv;

static int cmp_wv(const void *a, const void *b)
{
    const wv *p = a, *q = b;
    for (int k = 0; k < 3; k++) {
        if (p->x[k] < q->x[k])
            return -1;
        if (p->x[k] > q->x[k])
            return 1;
    }
    return (p->i > q->i) - (p->i < q->i);
}

/* The input welded by exact position into doubles. */
static bool weld(const q_mesh *m, piece *out)
{
    size_t n = m->vertex_count;
    wv *w = q_alloc(n * sizeof(wv));
    int *map = q_alloc(n * sizeof(int));
    bool ok = w && map && grow((void **)&out->v, &out->cv, n, 3 * sizeof(double)) &&
              grow((void **)&out->t, &out->ct, m->index_count / 3, 3 * sizeof(int)) &&
              grow((void **)&out->fl, &out->cfl, m->index_count / 3, 1);
    if (ok) {
        for (size_t i = 0; i < n; i++) {
            memcpy(w[i].x, m->positions + 3 * i, 3 * sizeof(float));
            w[i].i = (uint32_t)i;
        }
        qsort(w, n, sizeof(wv), cmp_wv);
        out->nv = 0;
        for (size_t i = 0; i < n; i++) {
            if (i == 0 || w[i].x[0] != w[i - 1].x[0] || w[i].x[1] != w[i - 1].x[1] || w[i].x[2] != w[i - 1].x[2]) {
                for (int k = 0; k < 3; k++)
                    out->v[3 * out->nv + k] = w[i].x[k];
                out->nv++;
            }
            map[w[i].i] = (int)out->nv - 1;
        }
        out->nt = 0;
        for (size_t k = 0; k + 2 < m->index_count; k += 3) {
            int a = map[m->indices[k]], b = map[m->indices[k + 1]], c = map[m->indices[k + 2]];
            if (a == b || b == c || a == c)
                continue;
            out->t[3 * out->nt] = a;
            out->t[3 * out->nt + 1] = b;
            out->t[3 * out->nt + 2] = c;
            out->fl[out->nt] = 0;
            out->nt++;
        }
    }
    q_free(w, n * sizeof(wv));
    q_free(map, n * sizeof(int));
    return ok;
}

static int uf_find(int *parent, int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* A closed, connected surface that is convex at every edge bounds a convex
 * solid: for each edge, the far corner of the twin triangle must not lie
 * more than eps in front of this triangle's plane; and all triangles must be
 * joined through edges (two separate convex parts are not one convex piece). */
static bool piece_convex(const piece *p, double eps)
{
    /* directed edges in an open-addressing table: key (a, b) -> triangle */
    size_t ne = 3 * p->nt, cap = 16;
    while (cap < 2 * ne)
        cap *= 2;
    int *parent = q_alloc(p->nt * sizeof(int));
    uint64_t *keys = q_alloc(cap * sizeof(uint64_t));
    uint32_t *tri = q_alloc(cap * sizeof(uint32_t));
    bool convex = parent && keys && tri;
    if (convex) {
        memset(keys, 0xff, cap * sizeof(uint64_t));
        for (size_t k = 0; k < p->nt && convex; k++) {
            parent[k] = (int)k;
            for (int e = 0; e < 3; e++) {
                uint32_t a = (uint32_t)p->t[3 * k + e], b = (uint32_t)p->t[3 * k + (e + 1) % 3];
                uint64_t key = ((uint64_t)a << 32) | b;
                size_t h = (size_t)mix64(key) & (cap - 1);
                while (keys[h] != UINT64_MAX && keys[h] != key)
                    h = (h + 1) & (cap - 1);
                if (keys[h] == key)
                    convex = false; /* an edge used twice the same way: not a solid */
                keys[h] = key;
                tri[h] = (uint32_t)k;
            }
        }
    }
    for (size_t i = 0; convex && i < cap; i++) {
        if (keys[i] == UINT64_MAX)
            continue;
        uint64_t rev = (keys[i] << 32) | (keys[i] >> 32);
        size_t h = (size_t)mix64(rev) & (cap - 1);
        while (keys[h] != UINT64_MAX && keys[h] != rev)
            h = (h + 1) & (cap - 1);
        if (keys[h] != rev) {
            convex = false; /* open: not a solid */
            break;
        }
        int t = (int)tri[i], u = (int)tri[h];
        int ra = uf_find(parent, t), rb = uf_find(parent, u);
        if (ra != rb)
            parent[ra] = rb;
        const int *tu = p->t + 3 * u;
        int a = (int)(keys[i] >> 32), b = (int)(uint32_t)keys[i];
        int far = tu[0] != a && tu[0] != b ? tu[0] : tu[1] != a && tu[1] != b ? tu[1] : tu[2];
        const double *x0 = p->v + 3 * p->t[3 * t], *x1 = p->v + 3 * p->t[3 * t + 1], *x2 = p->v + 3 * p->t[3 * t + 2];
        double e1[3] = {x1[0] - x0[0], x1[1] - x0[1], x1[2] - x0[2]}, e2[3] = {x2[0] - x0[0], x2[1] - x0[1], x2[2] - x0[2]};
        double nn[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        double l = sqrt(nn[0] * nn[0] + nn[1] * nn[1] + nn[2] * nn[2]);
        if (!(l > 0))
            continue;
        const double *y = p->v + 3 * far;
        if (((y[0] - x0[0]) * nn[0] + (y[1] - x0[1]) * nn[1] + (y[2] - x0[2]) * nn[2]) / l > eps)
            convex = false;
    }
    if (convex) {
        int root = uf_find(parent, 0);
        for (size_t k = 1; k < p->nt && convex; k++)
            if (uf_find(parent, (int)k) != root)
                convex = false;
    }
    q_free(keys, cap * sizeof(uint64_t));
    q_free(tri, cap * sizeof(uint32_t));
    q_free(parent, p->nt * sizeof(int));
    return convex;
}

static q_mesh *to_mesh(const piece *p, scratch *s, size_t *interior_first, bool *convex, bool known_convex,
                       double eps)
{
    /* referenced vertices only, surface triangles first */
    if (!grow((void **)&s->remap, &s->cap_r, p->nv, sizeof(int)))
        return NULL;
    for (size_t i = 0; i < p->nv; i++)
        s->remap[i] = -1;
    size_t nv = 0;
    for (size_t k = 0; k < 3 * p->nt; k++)
        if (s->remap[p->t[k]] < 0)
            s->remap[p->t[k]] = (int)nv++;
    q_mesh *m = q_mesh_create(nv, 3 * p->nt, false, false);
    if (!m)
        return NULL;
    for (size_t i = 0; i < p->nv; i++)
        if (s->remap[i] >= 0)
            for (int k = 0; k < 3; k++)
                m->positions[3 * s->remap[i] + k] = (float)p->v[3 * i + k];
    size_t o = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            *interior_first = o / 3;
        for (size_t k = 0; k < p->nt; k++)
            if (p->fl[k] == pass)
                for (int e = 0; e < 3; e++)
                    m->indices[o++] = (uint32_t)s->remap[p->t[3 * k + e]];
    }
    /* a convex mesh cut by half-spaces stays convex: test only otherwise */
    *convex = known_convex || piece_convex(p, eps);
    return m;
}

void q_fracture_free(q_fracture *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->count; i++)
        q_mesh_destroy(f->pieces[i].mesh);
    q_free(f->pieces, f->site_count * sizeof(q_fragment));
    q_free(f->sites, f->site_count * 3 * sizeof(double));
    q_free(f, sizeof *f);
}

q_fracture *q_fracture_mesh(const q_mesh *m, const q_fracture_params *p, char *err, size_t errlen)
{
    if (p->pieces < 1 || p->pieces > Q_FRACTURE_MAX_PIECES) {
        snprintf(err, errlen, "pieces must be in 1..%d, got %d", Q_FRACTURE_MAX_PIECES, p->pieces);
        return NULL;
    }
    if (m->index_count < 3) {
        snprintf(err, errlen, "the mesh has no triangles");
        return NULL;
    }
    for (size_t i = 0; i < 3 * m->vertex_count; i++)
        if (!isfinite(m->positions[i])) {
            snprintf(err, errlen, "the mesh has non-finite positions");
            return NULL;
        }
    double lo[3], hi[3];
    q_mesh_bounds(m, lo, hi);
    double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                       (hi[2] - lo[2]) * (hi[2] - lo[2]));
    if (!(diag > 0)) {
        snprintf(err, errlen, "the mesh is a single point");
        return NULL;
    }
    if (p->has_at) {
        double out2 = 0;
        for (int k = 0; k < 3; k++) {
            if (!isfinite(p->at[k])) {
                snprintf(err, errlen, "impact point is not finite");
                return NULL;
            }
            double o = p->at[k] < lo[k] ? lo[k] - p->at[k] : p->at[k] > hi[k] ? p->at[k] - hi[k] : 0;
            out2 += o * o;
        }
        if (out2 > diag * diag) {
            snprintf(err, errlen, "impact point is farther than the mesh's size from its bounds");
            return NULL;
        }
    }
    double pad = 1e-3 * diag, blo[3], bhi[3];
    for (int k = 0; k < 3; k++) {
        blo[k] = lo[k] - pad;
        bhi[k] = hi[k] + pad;
    }
    piece base = {0}, work = {0};
    scratch s = {0};
    q_fracture *f = q_calloc(1, sizeof *f);
    size_t n = (size_t)p->pieces;
    if (!f || !(f->sites = q_alloc(n * 3 * sizeof(double))) || !(f->pieces = q_calloc(n, sizeof(q_fragment)))) {
        if (f && f->sites)
            q_free(f->sites, n * 3 * sizeof(double));
        q_free(f, f ? sizeof *f : 0);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->site_count = n;
    q_voronoi *vor = NULL;
    const char *fail = NULL;
    double *planes = NULL;
    size_t planes_cap = 0, order_cap = 0;
    int *order = NULL;
    ray_grid rays = {0};
    if (!weld(m, &base)) {
        fail = "out of memory";
        goto done;
    }
    bool mesh_convex = piece_convex(&base, 1e-6 * diag);
    if (p->points) {
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < 3; k++) {
                double x = p->points[3 * i + k];
                if (!(x >= blo[k] && x <= bhi[k])) {
                    fail = "a site lies outside the mesh's bounds";
                    goto done;
                }
                f->sites[3 * i + k] = x;
            }
    } else {
        if (!ray_grid_build(&rays, &base)) {
            fail = "out of memory";
            goto done;
        }
        uint64_t st = mix64(p->seed ^ 0x5175617272794672ull);
        double r0 = 0.1 * diag;
        size_t got = 0, tries = 0, limit = 2000 * n + 20000;
        while (got < n && tries < limit) {
            tries++;
            double x[3];
            for (int k = 0; k < 3; k++)
                x[k] = lo[k] + rng_unit(&st) * (hi[k] - lo[k]);
            if (p->has_at) {
                double dd = 0;
                for (int k = 0; k < 3; k++)
                    dd += (x[k] - p->at[k]) * (x[k] - p->at[k]);
                double keep = 1 / (1 + dd / (r0 * r0));
                if (rng_unit(&st) >= keep)
                    continue;
            }
            if (!inside_mesh(&base, &rays, x))
                continue;
            memcpy(f->sites + 3 * got, x, sizeof x);
            got++;
        }
        if (got < n) {
            fail = "could not place the sites inside the mesh (is it closed?)";
            goto done;
        }
    }
    char verr[128];
    vor = (p->cells ? p->cells : q_voronoi_compute)(f->sites, n, blo, bhi, verr, sizeof verr);
    if (!vor) {
        snprintf(err, errlen, "%s", verr);
        fail = err;
        goto done;
    }
    double eps = 1e-9 * diag;
    for (size_t c = 0; c < n; c++) {
        const q_voronoi_cell *cell = &vor->cells[c];
        if (!grow((void **)&planes, &planes_cap, (size_t)cell->face_count, 5 * sizeof(double)) ||
            !grow((void **)&order, &order_cap, (size_t)cell->face_count, sizeof(int))) {
            fail = "out of memory";
            goto done;
        }
        /* the cell's bisector planes (unit normals; box walls lie outside
         * the mesh), nearest the site first: they cut away the most */
        double *poff = planes + 3 * (size_t)cell->face_count, *pdist = poff + cell->face_count;
        int nfc = 0;
        for (int fc = 0; fc < cell->face_count; fc++) {
            if (cell->face_neighbor[fc] < 0)
                continue;
            double nn[3], dd;
            q_voronoi_face_plane(vor, c, fc, nn, &dd);
            double l = sqrt(nn[0] * nn[0] + nn[1] * nn[1] + nn[2] * nn[2]);
            for (int k = 0; k < 3; k++)
                planes[3 * fc + k] = nn[k] / l;
            poff[fc] = dd / l;
            pdist[fc] = poff[fc] - (planes[3 * fc] * cell->site[0] + planes[3 * fc + 1] * cell->site[1] +
                                    planes[3 * fc + 2] * cell->site[2]);
            int at = nfc++;
            while (at > 0 && pdist[order[at - 1]] > pdist[fc]) {
                order[at] = order[at - 1];
                at--;
            }
            order[at] = fc;
        }
        if (!start_piece(&base, &work, &s, planes, poff, order, nfc, eps)) {
            fail = "out of memory";
            goto done;
        }
        for (int j = 0; j < nfc && (work.nt || work.nce); j++) {
            int fc = order[j];
            if (!clip(&work, &s, planes + 3 * fc, poff[fc], eps, fc, planes)) {
                fail = "out of memory";
                goto done;
            }
        }
        if (!work.nt && !work.nce)
            continue;
        if (!fan_caps(&work, &s)) {
            fail = "out of memory";
            goto done;
        }
        q_fragment *fr = &f->pieces[f->count];
        fr->mesh = to_mesh(&work, &s, &fr->interior_first, &fr->convex, mesh_convex, 1e-6 * diag);
        if (!fr->mesh) {
            fail = "out of memory";
            goto done;
        }
        fr->site = (int)c;
        fr->volume = q_mesh_volume(fr->mesh);
        f->count++;
    }
done:
    q_free(planes, planes_cap * 5 * sizeof(double));
    q_free(order, order_cap * sizeof(int));
    ray_grid_free(&rays);
    q_voronoi_free(vor);
    piece_free(&base);
    piece_free(&work);
    scratch_free(&s);
    if (fail) {
        if (fail != err)
            snprintf(err, errlen, "%s", fail);
        q_fracture_free(f);
        return NULL;
    }
    return f;
}
