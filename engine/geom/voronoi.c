/* Voronoi cells by box cutting (design note 003, "Box Cutting Algorithm").
 *
 * Cell space: the site is the origin, so the bisector with neighbour q is
 * the half-space dot(x, p) <= |p|^2 / 2 with p = q - site. A cell is a list
 * of vertices and of faces (vertex loops, counter-clockwise from outside,
 * each carrying the neighbour whose bisector it lies on). A cut keeps the
 * vertices inside, splits the edges that cross (one new vertex per edge,
 * shared by its two faces), and closes the cut with a new face through the
 * vertices on the plane; that face is convex, so ordering its vertices by
 * angle about the plane normal is enough (no hull).
 *
 * Stopping rule: the cell lies in the ball of radius R (largest vertex
 * distance); the bisector of a neighbour at distance |p| is |p|/2 from the
 * site, so it reaches the cell only when |p| < 2R. Neighbours come nearest
 * first from a uniform grid searched in rings of buckets.
 */
#include "geom/voronoi.h"

#include "core/alloc.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

q_voronoi_gpu_fn q_voronoi_gpu = NULL;

#define MAXV 1024
#define MAXF 256
#define MAXFV 4096

typedef struct cell_work {
    double v[MAXV][3];
    int nv;
    int fstart[MAXF + 1];
    int fv[MAXFV];
    int fnb[MAXF];
    int nf;
    /* scratch for a cut */
    double d[MAXV];
    int remap[MAXV];
    bool on[MAXV];
    double nv_[MAXV][3];
    int nfstart[MAXF + 1];
    int nfv[MAXFV];
    int nfnb[MAXF];
    int split_a[MAXV], split_b[MAXV], split_id[MAXV];
    int nsplit;
    int cap[MAXV];
    double cap_ang[MAXV];
    int nxt[MAXV];          /* new face: next vertex, from the clipped faces */
    uint8_t gap[MAXFV];     /* output vertex came right after skipped ones */
} cell_work;

typedef struct cand {
    double d2;
    int id;
} cand;

static bool cand_less(const cand *x, const cand *y)
{
    return x->d2 < y->d2 || (x->d2 == y->d2 && x->id < y->id);
}

static void cell_init_box(cell_work *w, const double lo[3], const double hi[3])
{
    /* vertex i: bit 0 -> x, bit 1 -> y, bit 2 -> z */
    for (int i = 0; i < 8; i++) {
        w->v[i][0] = (i & 1) ? hi[0] : lo[0];
        w->v[i][1] = (i & 2) ? hi[1] : lo[1];
        w->v[i][2] = (i & 4) ? hi[2] : lo[2];
    }
    w->nv = 8;
    static const int faces[6][4] = {
        {0, 4, 6, 2}, /* x0 */ {1, 3, 7, 5}, /* x1 */
        {0, 1, 5, 4}, /* y0 */ {2, 6, 7, 3}, /* y1 */
        {0, 2, 3, 1}, /* z0 */ {4, 5, 7, 6}, /* z1 */
    };
    w->nf = 6;
    for (int f = 0; f < 6; f++) {
        w->fstart[f] = 4 * f;
        for (int k = 0; k < 4; k++)
            w->fv[4 * f + k] = faces[f][k];
        w->fnb[f] = -1 - f;
    }
    w->fstart[6] = 24;
}

static double cell_max_r2(const cell_work *w)
{
    double r2 = 0;
    for (int i = 0; i < w->nv; i++) {
        double q = w->v[i][0] * w->v[i][0] + w->v[i][1] * w->v[i][1] + w->v[i][2] * w->v[i][2];
        if (q > r2)
            r2 = q;
    }
    return r2;
}

static int split_vertex(cell_work *w, int a, int b, int *nnv)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;
    for (int i = 0; i < w->nsplit; i++)
        if (w->split_a[i] == lo && w->split_b[i] == hi)
            return w->split_id[i];
    if (*nnv >= MAXV)
        return -1;
    double t = w->d[lo] / (w->d[lo] - w->d[hi]);
    int id = (*nnv)++;
    for (int k = 0; k < 3; k++)
        w->nv_[id][k] = w->v[lo][k] + t * (w->v[hi][k] - w->v[lo][k]);
    w->on[id] = true;
    w->split_a[w->nsplit] = lo;
    w->split_b[w->nsplit] = hi;
    w->split_id[w->nsplit] = id;
    w->nsplit++;
    return id;
}

/* Cuts the cell by dot(x, p) <= h. Returns 1 when cut, 0 when the plane
 * misses the cell, -1 when the work arrays overflow. */
static int cell_cut(cell_work *w, const double p[3], double h, int nb)
{
    double scale = h + 1e-300;
    double eps = 1e-12 * scale;
    bool any_out = false;
    for (int i = 0; i < w->nv; i++) {
        double d = w->v[i][0] * p[0] + w->v[i][1] * p[1] + w->v[i][2] * p[2] - h;
        if (fabs(d) <= eps)
            d = 0;
        w->d[i] = d;
        if (d > 0)
            any_out = true;
    }
    if (!any_out)
        return 0;
    int nnv = 0;
    for (int i = 0; i < w->nv; i++) {
        if (w->d[i] <= 0) {
            w->remap[i] = nnv;
            memcpy(w->nv_[nnv], w->v[i], sizeof w->v[i]);
            w->on[nnv] = w->d[i] == 0;
            nnv++;
        } else {
            w->remap[i] = -1;
        }
    }
    w->nsplit = 0;
    int nnf = 0, nfv = 0;
    for (int i = 0; i < MAXV && i < 2 * w->nv + w->nf + 8; i++) /* kept + split (<= edges) */
        w->nxt[i] = -1;
    for (int f = 0; f < w->nf; f++) {
        int s = w->fstart[f], e = w->fstart[f + 1], n = e - s;
        int start = nfv;
        bool skipped = false;
        for (int k = 0; k < n; k++) {
            int a = w->fv[s + k], b = w->fv[s + (k + 1) % n];
            if (nfv + 2 > MAXFV)
                return -1;
            if (w->d[a] <= 0) {
                w->gap[nfv] = skipped;
                skipped = false;
                w->nfv[nfv++] = w->remap[a];
            } else {
                skipped = true;
            }
            if ((w->d[a] < 0 && w->d[b] > 0) || (w->d[a] > 0 && w->d[b] < 0)) {
                int id = split_vertex(w, a, b, &nnv);
                if (id < 0)
                    return -1;
                w->gap[nfv] = skipped;
                skipped = false;
                w->nfv[nfv++] = id;
            }
        }
        if (skipped && nfv > start)
            w->gap[start] = true; /* the skipped run wraps around */
        if (nfv - start >= 3) {
            /* an edge x -> y across skipped vertices lies on the plane; the
             * new face holds it reversed: y -> x */
            for (int j = start; j < nfv; j++)
                if (w->gap[j]) {
                    int x = w->nfv[j > start ? j - 1 : nfv - 1], y = w->nfv[j];
                    w->nxt[y] = w->nxt[y] == -1 ? x : -2;
                }
            w->nfstart[nnf] = start;
            w->nfnb[nnf] = w->fnb[f];
            nnf++;
            if (nnf >= MAXF)
                return -1;
        } else {
            nfv = start;
        }
    }
    /* The new face: follow the reversed on-plane edges of the clipped
     * faces; when they do not make one loop (vertices exactly on the plane
     * can leave gaps), every on-plane vertex ordered by angle. */
    int ncap = 0, pairs = 0, first = -1;
    bool chain = true;
    for (int i = 0; i < nnv; i++)
        if (w->nxt[i] != -1) {
            pairs++;
            if (w->nxt[i] < 0)
                chain = false;
            if (first < 0)
                first = i;
        }
    if (chain && pairs >= 3) {
        int v = first;
        while (ncap <= pairs) {
            w->cap[ncap++] = v;
            v = w->nxt[v];
            if (v < 0 || v == first)
                break;
        }
        chain = v == first && ncap == pairs;
    } else {
        chain = false;
    }
    if (chain) {
        if (nfv + ncap > MAXFV || nnf + 1 > MAXF)
            return -1;
        w->nfstart[nnf] = nfv;
        w->nfnb[nnf] = nb;
        nnf++;
        for (int i = 0; i < ncap; i++)
            w->nfv[nfv++] = w->cap[i];
        ncap = 0; /* done: skip the angle ordering below */
    } else {
        ncap = 0;
        for (int i = 0; i < nnv; i++)
            if (w->on[i])
                w->cap[ncap++] = i;
    }
    if (ncap >= 3) {
        double pl = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
        double nrm[3] = {p[0] / pl, p[1] / pl, p[2] / pl};
        double u[3];
        if (fabs(nrm[0]) < 0.6) {
            u[0] = 0, u[1] = nrm[2], u[2] = -nrm[1];
        } else {
            u[0] = -nrm[2], u[1] = 0, u[2] = nrm[0];
        }
        double ul = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        u[0] /= ul, u[1] /= ul, u[2] /= ul;
        double vv[3] = {nrm[1] * u[2] - nrm[2] * u[1], nrm[2] * u[0] - nrm[0] * u[2], nrm[0] * u[1] - nrm[1] * u[0]};
        double c[3] = {0, 0, 0};
        for (int i = 0; i < ncap; i++)
            for (int k = 0; k < 3; k++)
                c[k] += w->nv_[w->cap[i]][k];
        for (int k = 0; k < 3; k++)
            c[k] /= ncap;
        for (int i = 0; i < ncap; i++) {
            const double *x = w->nv_[w->cap[i]];
            double r[3] = {x[0] - c[0], x[1] - c[1], x[2] - c[2]};
            w->cap_ang[i] = atan2(r[0] * vv[0] + r[1] * vv[1] + r[2] * vv[2], r[0] * u[0] + r[1] * u[1] + r[2] * u[2]);
        }
        /* insertion sort: caps are small. u x vv = nrm, so increasing angle
         * is counter-clockwise seen from outside (+p). */
        for (int i = 1; i < ncap; i++) {
            double a = w->cap_ang[i];
            int id = w->cap[i], j = i - 1;
            while (j >= 0 && w->cap_ang[j] > a) {
                w->cap_ang[j + 1] = w->cap_ang[j];
                w->cap[j + 1] = w->cap[j];
                j--;
            }
            w->cap_ang[j + 1] = a;
            w->cap[j + 1] = id;
        }
        if (nfv + ncap > MAXFV || nnf + 1 > MAXF)
            return -1;
        w->nfstart[nnf] = nfv;
        w->nfnb[nnf] = nb;
        nnf++;
        for (int i = 0; i < ncap; i++)
            w->nfv[nfv++] = w->cap[i];
    }
    w->nfstart[nnf] = nfv;
    /* swap in */
    memcpy(w->v, w->nv_, (size_t)nnv * sizeof w->v[0]);
    w->nv = nnv;
    memcpy(w->fstart, w->nfstart, (size_t)(nnf + 1) * sizeof(int));
    memcpy(w->fv, w->nfv, (size_t)nfv * sizeof(int));
    memcpy(w->fnb, w->nfnb, (size_t)nnf * sizeof(int));
    w->nf = nnf;
    /* compact: drop vertices no face uses */
    for (int i = 0; i < w->nv; i++)
        w->remap[i] = -1;
    for (int i = 0; i < nfv; i++)
        w->remap[w->fv[i]] = 0;
    int m = 0;
    for (int i = 0; i < w->nv; i++)
        if (w->remap[i] == 0) {
            w->remap[i] = m;
            if (m != i)
                memcpy(w->v[m], w->v[i], sizeof w->v[0]);
            m++;
        }
    if (m != w->nv) {
        for (int i = 0; i < nfv; i++)
            w->fv[i] = w->remap[w->fv[i]];
        w->nv = m;
    }
    return 1;
}

static double cell_volume(const cell_work *w)
{
    double vol = 0;
    for (int f = 0; f < w->nf; f++) {
        int s = w->fstart[f], e = w->fstart[f + 1];
        const double *a = w->v[w->fv[s]];
        for (int k = s + 1; k + 1 < e; k++) {
            const double *b = w->v[w->fv[k]], *c = w->v[w->fv[k + 1]];
            vol += a[0] * (b[1] * c[2] - b[2] * c[1]) + a[1] * (b[2] * c[0] - b[0] * c[2]) +
                   a[2] * (b[0] * c[1] - b[1] * c[0]);
        }
    }
    return vol / 6;
}

static void free_cell(q_voronoi_cell *c)
{
    size_t nfv = c->face_start ? (size_t)c->face_start[c->face_count] : 0;
    q_free(c->face_vertices, nfv * sizeof(int));
    q_free(c->vertices, (size_t)c->vertex_count * 3 * sizeof(double));
    q_free(c->face_start, (size_t)(c->face_count + 1) * sizeof(int));
    q_free(c->face_neighbor, (size_t)c->face_count * sizeof(int));
    memset(c, 0, sizeof *c);
}

void q_voronoi_free(q_voronoi *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->cell_count; i++)
        free_cell(&v->cells[i]);
    q_free(v->cells, v->cell_count * sizeof(q_voronoi_cell));
    q_free(v, sizeof *v);
}

static bool store_cell(q_voronoi_cell *out, const cell_work *w, const double site[3])
{
    memcpy(out->site, site, sizeof out->site);
    out->volume = cell_volume(w);
    out->vertex_count = w->nv;
    out->face_count = w->nf;
    int nfv = w->fstart[w->nf];
    out->vertices = q_alloc((size_t)w->nv * 3 * sizeof(double));
    out->face_start = q_alloc((size_t)(w->nf + 1) * sizeof(int));
    out->face_vertices = q_alloc((size_t)nfv * sizeof(int));
    out->face_neighbor = q_alloc((size_t)w->nf * sizeof(int));
    if (!out->vertices || !out->face_start || !out->face_vertices || !out->face_neighbor) {
        /* face_start may be missing: free face_vertices by its known size */
        q_free(out->face_vertices, (size_t)nfv * sizeof(int));
        out->face_vertices = NULL;
        q_free(out->face_start, (size_t)(w->nf + 1) * sizeof(int));
        out->face_start = NULL;
        free_cell(out);
        return false;
    }
    for (int i = 0; i < w->nv; i++)
        for (int k = 0; k < 3; k++)
            out->vertices[3 * i + k] = w->v[i][k] + site[k];
    memcpy(out->face_start, w->fstart, (size_t)(w->nf + 1) * sizeof(int));
    memcpy(out->face_vertices, w->fv, (size_t)nfv * sizeof(int));
    memcpy(out->face_neighbor, w->fnb, (size_t)w->nf * sizeof(int));
    return true;
}

typedef struct grid {
    double origin[3], h;
    int n[3];
    int *start; /* per bucket, CSR into ids */
    int *ids;
    size_t buckets;
} grid;

static int clampi(long v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : (int)v;
}

static void bucket_of(const grid *g, const double p[3], int b[3])
{
    for (int k = 0; k < 3; k++)
        b[k] = clampi((long)floor((p[k] - g->origin[k]) / g->h), 0, g->n[k] - 1);
}

/* Cell of site i into w. Returns 0 ok, -1 overflow, -2 duplicate site. */
static int compute_cell(cell_work *w, const grid *g, const double *sites, size_t i, const double min[3],
                        const double max[3], cand **pend, size_t *pend_cap)
{
    const double *s = sites + 3 * i;
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = min[k] - s[k];
        hi[k] = max[k] - s[k];
    }
    cell_init_box(w, lo, hi);
    double r2 = cell_max_r2(w);
    int b[3];
    bucket_of(g, s, b);
    size_t np = 0; /* candidates in the heap */
    for (int r = 0;; r++) {
        /* gather ring r */
        bool covered = true;
        for (int k = 0; k < 3; k++)
            if (b[k] - r > 0 || b[k] + r < g->n[k] - 1)
                covered = false;
        for (int dx = -r; dx <= r; dx++) {
            int x = b[0] + dx;
            if (x < 0 || x >= g->n[0])
                continue;
            for (int dy = -r; dy <= r; dy++) {
                int y = b[1] + dy;
                if (y < 0 || y >= g->n[1])
                    continue;
                bool edge = dx == -r || dx == r || dy == -r || dy == r;
                int step = edge ? 1 : (r > 0 ? 2 * r : 1);
                for (int dz = -r; dz <= r; dz += step) {
                    int z = b[2] + dz;
                    if (z < 0 || z >= g->n[2])
                        continue;
                    size_t bk = ((size_t)z * g->n[1] + y) * g->n[0] + x;
                    for (int j = g->start[bk]; j < g->start[bk + 1]; j++) {
                        int id = g->ids[j];
                        if ((size_t)id == i)
                            continue;
                        const double *q = sites + 3 * id;
                        double dd = (q[0] - s[0]) * (q[0] - s[0]) + (q[1] - s[1]) * (q[1] - s[1]) +
                                    (q[2] - s[2]) * (q[2] - s[2]);
                        if (dd >= 4 * r2)
                            continue; /* its bisector cannot reach the cell: R only shrinks */
                        if (np >= *pend_cap) {
                            size_t nc = *pend_cap ? 2 * *pend_cap : 256;
                            cand *p = q_realloc(*pend, *pend_cap * sizeof(cand), nc * sizeof(cand));
                            if (!p)
                                return -1;
                            *pend = p;
                            *pend_cap = nc;
                        }
                        /* binary min-heap on (d2, id): sift up */
                        cand c = {dd, id}, *hp = *pend;
                        size_t at = np++;
                        while (at > 0 && cand_less(&c, &hp[(at - 1) / 2])) {
                            hp[at] = hp[(at - 1) / 2];
                            at = (at - 1) / 2;
                        }
                        hp[at] = c;
                    }
                }
            }
        }
        /* every site not gathered yet is farther than lim */
        double lim = INFINITY;
        if (!covered) {
            for (int k = 0; k < 3; k++) {
                double a = s[k] - (g->origin[k] + (b[k] - r) * g->h);
                double c = g->origin[k] + (b[k] + r + 1) * g->h - s[k];
                if (b[k] - r > 0 && a < lim)
                    lim = a;
                if (b[k] + r < g->n[k] - 1 && c < lim)
                    lim = c;
            }
        }
        double lim2 = lim * lim;
        while (np > 0 && (*pend)[0].d2 <= lim2) {
            cand top = (*pend)[0], *hp = *pend;
            double dd = top.d2;
            if (dd >= 4 * r2)
                return 0;
            if (dd == 0)
                return -2;
            /* pop: move the last entry down from the root */
            cand last = hp[--np];
            size_t at = 0;
            for (;;) {
                size_t c = 2 * at + 1;
                if (c >= np)
                    break;
                if (c + 1 < np && cand_less(&hp[c + 1], &hp[c]))
                    c++;
                if (!cand_less(&hp[c], &last))
                    break;
                hp[at] = hp[c];
                at = c;
            }
            if (np > 0)
                hp[at] = last;
            const double *q = sites + 3 * top.id;
            double p[3] = {q[0] - s[0], q[1] - s[1], q[2] - s[2]};
            int rc = cell_cut(w, p, 0.5 * dd, top.id);
            if (rc < 0)
                return -1;
            if (rc > 0)
                r2 = cell_max_r2(w);
        }
        if (covered && np == 0)
            return 0;
        if (lim2 >= 4 * r2)
            return 0;
    }
}

q_voronoi *q_voronoi_compute(const double *sites, size_t count, const double min[3], const double max[3],
                             char *err, size_t errlen)
{
    for (int k = 0; k < 3; k++)
        if (!isfinite(min[k]) || !isfinite(max[k]) || !(min[k] < max[k])) {
            snprintf(err, errlen, "empty or non-finite box");
            return NULL;
        }
    for (size_t i = 0; i < count; i++)
        for (int k = 0; k < 3; k++) {
            double x = sites[3 * i + k];
            if (!isfinite(x)) {
                snprintf(err, errlen, "site %zu is not finite", i + 1);
                return NULL;
            }
            if (x < min[k] || x > max[k]) {
                snprintf(err, errlen, "site %zu is outside the box", i + 1);
                return NULL;
            }
        }
    q_voronoi *v = q_calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (count == 0)
        return v;
    v->cells = q_calloc(count, sizeof(q_voronoi_cell));
    if (!v->cells) {
        q_free(v, sizeof *v);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    v->cell_count = count;
    grid g;
    double ext[3] = {max[0] - min[0], max[1] - min[1], max[2] - min[2]};
    double vol = ext[0] * ext[1] * ext[2];
    g.h = cbrt(vol / (double)count * 1.5);
    for (int k = 0; k < 3; k++) {
        g.origin[k] = min[k];
        double nk = ceil(ext[k] / g.h);
        g.n[k] = nk < 1 ? 1 : nk > 1024 ? 1024 : (int)nk;
    }
    /* the grid must cover the box along every axis with this one h */
    for (int k = 0; k < 3; k++)
        if (g.n[k] * g.h < ext[k])
            g.h = ext[k] / g.n[k];
    g.buckets = (size_t)g.n[0] * g.n[1] * g.n[2];
    g.start = q_calloc(g.buckets + 1, sizeof(int));
    g.ids = q_alloc(count * sizeof(int));
    int *bk = q_alloc(count * sizeof(int));
    cell_work *w = q_alloc(sizeof *w);
    cand *pend = NULL;
    size_t pend_cap = 0;
    bool ok = g.start && g.ids && bk && w;
    if (ok) {
        for (size_t i = 0; i < count; i++) {
            int b[3];
            bucket_of(&g, sites + 3 * i, b);
            bk[i] = (int)(((size_t)b[2] * g.n[1] + b[1]) * g.n[0] + b[0]);
            g.start[bk[i] + 1]++;
        }
        for (size_t b = 0; b < g.buckets; b++)
            g.start[b + 1] += g.start[b];
        for (size_t i = 0; i < count; i++)
            g.ids[g.start[bk[i]]++] = (int)i;
        for (size_t b = g.buckets; b > 0; b--)
            g.start[b] = g.start[b - 1];
        g.start[0] = 0;
        for (size_t i = 0; i < count && ok; i++) {
            int rc = compute_cell(w, &g, sites, i, min, max, &pend, &pend_cap);
            if (rc == -2) {
                snprintf(err, errlen, "site %zu coincides with another site", i + 1);
                ok = false;
            } else if (rc < 0 || !store_cell(&v->cells[i], w, sites + 3 * i)) {
                snprintf(err, errlen, "out of memory or cell %zu too complex", i + 1);
                ok = false;
            }
        }
    } else {
        snprintf(err, errlen, "out of memory");
    }
    q_free(pend, pend_cap * sizeof(cand));
    q_free(w, sizeof *w);
    q_free(bk, count * sizeof(int));
    q_free(g.ids, count * sizeof(int));
    q_free(g.start, (g.buckets + 1) * sizeof(int));
    if (!ok) {
        q_voronoi_free(v);
        return NULL;
    }
    return v;
}

void q_voronoi_face_plane(const q_voronoi *v, size_t c, int f, double n[3], double *d)
{
    const q_voronoi_cell *cell = &v->cells[c];
    int nb = cell->face_neighbor[f];
    const double *s = cell->site;
    if (nb >= 0) {
        const double *q = v->cells[nb].site;
        for (int k = 0; k < 3; k++)
            n[k] = q[k] - s[k];
        *d = 0.5 * (n[0] * (q[0] + s[0]) + n[1] * (q[1] + s[1]) + n[2] * (q[2] + s[2]));
        return;
    }
    int wall = -1 - nb, axis = wall / 2;
    n[0] = n[1] = n[2] = 0;
    /* wall planes: the face's own vertices give the coordinate */
    double x = cell->vertices[3 * cell->face_vertices[cell->face_start[f]] + axis];
    if (wall & 1) {
        n[axis] = 1;
        *d = x;
    } else {
        n[axis] = -1;
        *d = -x;
    }
}
