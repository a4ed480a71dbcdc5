/* Voronoi cells by box cutting (design note 003, "Box Cutting Algorithm").
 *
 * Cell space: the site is the origin, so the bisector with neighbour q is
 * the half-space dot(x, p) <= |p|^2 / 2 with p = q - site. A cell is kept
 * as vertices, edges and planes: every vertex meets exactly three edges
 * (its neighbour vertices, counter-clockwise seen from outside) and three
 * planes (plane k lies between edges k and k + 1). The box starts that way,
 * and a cut keeps it so: the vertices outside the plane go, each edge from
 * an outside to an inside vertex gets a new vertex, and the new vertices
 * are joined into the new face by walking each old face across its
 * outside vertices to the edge where it comes back in. No search, sort or
 * angle is needed; faces are read off the edges once, at the end.
 *
 * A vertex within 1e-12 * |p|^2 / 2 of the plane counts as on it and stays.
 * Such a vertex gets a new vertex at its own place on each of its edges that
 * leave the cell, so degenerate sites (four or more on a sphere) can give
 * edges of zero length; random sites do not.
 *
 * Stopping rule: the cell lies in the ball of radius R (largest vertex
 * distance); the bisector of a neighbour at distance |p| is |p|/2 from the
 * site, so it reaches the cell only when |p| < 2R. Neighbours come from a
 * uniform grid of blocks, visited in order of the least distance any point
 * of a block can have from the site's block; once that distance reaches 2R
 * no later block can cut. Within a block, sites are cut in stored order:
 * the result does not depend on the order, only the work does.
 */
#include "geom/voronoi.h"

#include "core/alloc.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

q_voronoi_gpu_fn q_voronoi_gpu = NULL;

#define MAXV 2048 /* vertices of a cell during the cuts */
#define MAXP 4096 /* planes cut into one cell (the 6 walls included) */
#define TABLE_R 5 /* block offsets up to this far come from the sorted table */
#define MAXC 256  /* candidates gathered before they are sorted and cut */

typedef struct vert {
    double x[3];
    int nb[3]; /* neighbour vertices, counter-clockwise from outside */
    int pl[3]; /* pl[k]: the plane between edges to nb[k] and nb[k + 1] */
    uint8_t bs[3]; /* this vertex is nb[bs[k]] of vertex nb[k] */
} vert;

typedef struct cell_work {
    vert vx[MAXV];
    int nv;
    int pnb[MAXP]; /* neighbour id of each plane (walls: Q_VORONOI_WALL_*) */
    int np;
    double r2;     /* largest squared vertex distance */
    int far;       /* a vertex at that distance */
    double site[3];
    double lo[3], hi[3]; /* bounds of the vertices (loose: renewed with r2) */
    /* scratch of a cut */
    double d[MAXV];
    int out[MAXV];
    int newv[MAXV][3]; /* outside vertex u, slot k: the new vertex on that edge */
    int src[MAXV];     /* new vertex nv + i came from outside vertex src[i] / 3, slot src[i] % 3 */
    uint8_t seen[3 * MAXV];
    bool degen;    /* a cut went through a vertex: some edges have no length */
    int rep[MAXV], org[MAXV];
    int ofs[MAXV / 2 + 3], ofv[3 * MAXV], ofn[MAXV / 2 + 2]; /* faces being stored */
    /* candidates of one group of blocks, cut nearest first */
    struct cand { double dd; int j; } cand[MAXC], sorted[MAXC];
    int bin[MAXC + 1];
} cell_work;

static int slot_of(const vert *v, int id)
{
    return v->nb[0] == id ? 0 : v->nb[1] == id ? 1 : 2;
}

static void cell_bounds(cell_work *w)
{
    /* one scalar per bound (a loop over the axes kept them in memory) */
    const vert *v = w->vx;
    double r2 = -1, lx = v[0].x[0], ly = v[0].x[1], lz = v[0].x[2], hx = lx, hy = ly, hz = lz;
    int far = 0;
    for (int i = 0; i < w->nv; i++) {
        double x = v[i].x[0], y = v[i].x[1], z = v[i].x[2];
        double q = x * x + y * y + z * z;
        if (q > r2) {
            r2 = q;
            far = i;
        }
        lx = x < lx ? x : lx;
        ly = y < ly ? y : ly;
        lz = z < lz ? z : lz;
        hx = x > hx ? x : hx;
        hy = y > hy ? y : hy;
        hz = z > hz ? z : hz;
    }
    w->r2 = r2;
    w->far = far;
    w->lo[0] = lx, w->lo[1] = ly, w->lo[2] = lz;
    w->hi[0] = hx, w->hi[1] = hy, w->hi[2] = hz;
}

static void cell_init_box(cell_work *w, const double lo[3], const double hi[3])
{
    /* vertex i: bit 0 -> x, bit 1 -> y, bit 2 -> z (set: hi). Seen from
     * outside the corner, edges along x, y, z run counter-clockwise when an
     * even number of the corner's coordinates are low, else x, z, y. The
     * plane between two edges is the wall across the third axis. */
    for (int i = 0; i < 8; i++) {
        vert *v = &w->vx[i];
        v->x[0] = (i & 1) ? hi[0] : lo[0];
        v->x[1] = (i & 2) ? hi[1] : lo[1];
        v->x[2] = (i & 4) ? hi[2] : lo[2];
        int low = !(i & 1) + !(i & 2) + !(i & 4);
        int ax[3] = {0, 1, 2};
        if (low & 1)
            ax[1] = 2, ax[2] = 1;
        for (int k = 0; k < 3; k++) {
            v->nb[k] = i ^ (1 << ax[k]);
            int third = 3 - ax[k] - ax[(k + 1) % 3];
            v->pl[k] = 2 * third + ((i >> third) & 1);
        }
    }
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 3; k++)
            w->vx[i].bs[k] = (uint8_t)slot_of(&w->vx[w->vx[i].nb[k]], i);
    w->nv = 8;
    w->degen = false;
    for (int f = 0; f < 6; f++)
        w->pnb[f] = -1 - f;
    w->np = 6;
    cell_bounds(w);
}

/* Moves vertex s to slot t (t is free) and points its neighbours at t. */
static void move_vertex(cell_work *w, int s, int t)
{
    vert *v = &w->vx[t];
    *v = w->vx[s];
    if (w->far == s)
        w->far = t;
    for (int k = 0; k < 3; k++)
        w->vx[v->nb[k]].nb[v->bs[k]] = t;
}

/* Cuts the cell by dot(x, p) <= h. Returns 1 when cut, 0 when the plane
 * misses the cell, -1 when the work arrays overflow. */
static int cell_cut(cell_work *w, const double p[3], double h, int nb)
{
    double eps = 1e-12 * h;
    /* the bounds' farthest corner along p: a plane beyond it misses. (The
     * larger product is p * hi where p > 0, else p * lo: no branch on the
     * signs of p, which mispredicted one call in two.) */
    double far = 0;
    for (int k = 0; k < 3; k++) {
        double a = p[k] * w->hi[k], b = p[k] * w->lo[k];
        far += a > b ? a : b;
    }
    if (far <= h + eps)
        return 0;
    int nv = w->nv, nout = 0;
    for (int i = 0; i < nv; i++) {
        const double *x = w->vx[i].x;
        double d = x[0] * p[0] + x[1] * p[1] + x[2] * p[2] - h;
        w->out[nout] = i;
        nout += d > eps;
        w->d[i] = fabs(d) <= eps ? 0 : d;
    }
    if (!nout)
        return 0;
    if (w->np >= MAXP)
        return -1;
    int pid = w->np++;
    w->pnb[pid] = nb;
    /* a new vertex on every edge from an outside vertex u to an inside x */
    int n = nv;
    for (int a = 0; a < nout; a++) {
        int u = w->out[a];
        const vert *U = &w->vx[u];
        for (int k = 0; k < 3; k++) {
            int x = U->nb[k];
            if (w->d[x] > 0)
                continue;
            if (n >= MAXV)
                return -1;
            vert *X = &w->vx[x], *N = &w->vx[n];
            double t = w->d[x] / (w->d[x] - w->d[u]);
            if (w->d[x] == 0)
                w->degen = true;
            for (int c = 0; c < 3; c++)
                N->x[c] = X->x[c] + t * (U->x[c] - X->x[c]);
            int i = U->bs[k];
            X->nb[i] = n;
            X->bs[i] = 0;
            N->bs[0] = (uint8_t)i;
            /* the edge n -> x runs the way u -> x did: the same plane on
             * its left; the new plane follows, then x's plane on that side */
            N->nb[0] = x;
            N->pl[0] = U->pl[k];
            N->pl[1] = pid;
            N->pl[2] = X->pl[i];
            w->newv[u][k] = n;
            w->src[n - nv] = 3 * u + k;
            n++;
        }
    }
    /* Join the new vertices: from new vertex m on edge x -> u, the face on
     * m's plane 2 goes on past u through outside vertices until an edge
     * leads back inside; that edge's new vertex follows m on the new face. */
    for (int m = nv; m < n; m++) {
        int a = w->src[m - nv] / 3, j = (w->src[m - nv] % 3 + 2) % 3, guard = 0;
        for (;;) {
            int b = w->vx[a].nb[j];
            if (w->d[b] <= 0)
                break;
            j = (w->vx[a].bs[j] + 2) % 3;
            a = b;
            if (++guard > nv)
                return -1;
        }
        int c = w->newv[a][j];
        w->vx[m].nb[2] = c;
        w->vx[m].bs[2] = 1;
        w->vx[c].nb[1] = m;
        w->vx[c].bs[1] = 2;
    }
    /* fill the outside vertices' slots below the new count with the live
     * vertices above it (outside ones come in increasing order) */
    int alive = n - nout, j = alive;
    bool far_gone = w->d[w->far] > 0;
    for (int a = 0; a < nout; a++) {
        int hole = w->out[a];
        if (hole >= alive)
            break;
        while (j < nv && w->d[j] > 0)
            j++;
        move_vertex(w, j, hole);
        j++;
    }
    w->nv = alive;
    /* new vertices lie between old ones: no farther than the farthest */
    if (far_gone)
        cell_bounds(w);
    return 1;
}

/* ---- output: all cells' arrays in two growing blocks ---- */

typedef struct store {
    double *dbl;
    size_t nd, cd;
    int *in;
    size_t ni, ci;
    size_t *off; /* per cell: offset into dbl, offset into in */
} store;

/* Maps the pages of a large block that is about to be written, in one call:
 * one page fault each (with the VM exit each costs here) took ~5% of a
 * 10,000-site call. Pages already there are left as they are. */
static void prefault(void *p, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    size_t page = 4096;
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    if (bytes >= 16 * page)
        madvise((void *)a, ((uintptr_t)p + bytes - a) & ~(uintptr_t)(page - 1), MADV_POPULATE_WRITE);
#else
    (void)p, (void)bytes;
#endif
}

static bool reserve(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t nc = *cap ? *cap : 1024;
    while (nc < need)
        nc *= 2;
    void *q = q_realloc(*p, *cap * elem, nc * elem);
    if (!q)
        return false;
    *p = q;
    *cap = nc;
#ifdef MADV_HUGEPAGE
    /* Large outputs are written once, front to back: with 4 KiB pages a
     * 10,000-site call took ~2,700 page faults, a fifth of its time. */
    size_t bytes = nc * elem, page = 2u << 20;
    uintptr_t a = ((uintptr_t)q + page - 1) & ~(uintptr_t)(page - 1);
    if (bytes >= 2 * page && a + page <= (uintptr_t)q + bytes)
        madvise((void *)a, ((uintptr_t)q + bytes - a) & ~(uintptr_t)(page - 1), MADV_HUGEPAGE);
#endif
    prefault(q, nc * elem);
    return true;
}

/* Vertices joined by edges of zero length (a cut through a vertex leaves
 * new vertices at its place) become one: rep[i] is the output index of
 * vertex i and org[j] a vertex of output j. Returns the output count. */
static int merge_coincident(cell_work *w)
{
    int nv = w->nv, *rep = w->rep;
    for (int i = 0; i < nv; i++)
        rep[i] = i;
    for (int i = 0; i < nv; i++)
        for (int k = 0; k < 3; k++) {
            int j = w->vx[i].nb[k];
            const double *a = w->vx[i].x, *b = w->vx[j].x;
            if (j < i || a[0] != b[0] || a[1] != b[1] || a[2] != b[2])
                continue;
            int ri = i, rj = j;
            while (rep[ri] != ri)
                ri = rep[ri];
            while (rep[rj] != rj)
                rj = rep[rj];
            if (ri != rj)
                rep[ri > rj ? ri : rj] = ri < rj ? ri : rj;
        }
    int m = 0;
    for (int i = 0; i < nv; i++)
        if (rep[i] == i) {
            w->org[m] = i;
            rep[i] = m++;
        } else {
            rep[i] = rep[rep[i]]; /* rep[i] < i is final already */
        }
    return m;
}

/* Reads the faces off the cell's edges into the store; the cell's counts and
 * volume into out (its pointers are set once the store stops growing).
 * Every vertex has three edges, so there are at most nv / 2 + 2 faces and
 * 3 nv face corners (exactly, unless vertices were merged; faces left with
 * fewer than three corners then had no area and are dropped). */
static bool store_cell(store *st, size_t idx, q_voronoi_cell *out, cell_work *w, const double site[3])
{
    int nv = w->nv, m = nv;
    bool merge = w->degen;
    if (merge)
        m = merge_coincident(w);
    memset(w->seen, 0, 3 * (size_t)nv);
    int f = 0, at = 0, *fs = w->ofs, *fv = w->ofv, *fn = w->ofn;
    double vol = 0;
    for (int v0 = 0; v0 < nv; v0++)
        for (int k0 = 0; k0 < 3; k0++) {
            if (w->seen[3 * v0 + k0])
                continue;
            if (f >= MAXV / 2 + 2)
                return false;
            fs[f] = at;
            fn[f] = w->pnb[w->vx[v0].pl[k0]];
            int a = v0, k = k0, guard = 0;
            do {
                w->seen[3 * a + k] = 1;
                int o = merge ? w->rep[a] : a;
                if (!merge || at == fs[f] || fv[at - 1] != o)
                    fv[at++] = o;
                int b = w->vx[a].nb[k];
                k = (w->vx[a].bs[k] + 2) % 3;
                a = b;
            } while ((a != v0 || k != k0) && ++guard < 3 * nv);
            if (merge && at - fs[f] > 1 && fv[at - 1] == fv[fs[f]])
                at--;
            if (at - fs[f] < 3) {
                at = fs[f];
                continue;
            }
            const double *p0 = w->vx[merge ? w->org[fv[fs[f]]] : fv[fs[f]]].x;
            for (int i = fs[f] + 1; i + 1 < at; i++) {
                const double *b = w->vx[merge ? w->org[fv[i]] : fv[i]].x;
                const double *c = w->vx[merge ? w->org[fv[i + 1]] : fv[i + 1]].x;
                vol += p0[0] * (b[1] * c[2] - b[2] * c[1]) + p0[1] * (b[2] * c[0] - b[0] * c[2]) +
                       p0[2] * (b[0] * c[1] - b[1] * c[0]);
            }
            f++;
        }
    fs[f] = at;
    if (f < 4)
        return false;
    if (!reserve((void **)&st->dbl, &st->cd, st->nd + 3 * (size_t)m, sizeof(double)) ||
        !reserve((void **)&st->in, &st->ci, st->ni + 2 * (size_t)f + 1 + at, sizeof(int)))
        return false;
    st->off[2 * idx] = st->nd;
    st->off[2 * idx + 1] = st->ni;
    double *vo = st->dbl + st->nd;
    for (int i = 0; i < m; i++) {
        const double *x = w->vx[merge ? w->org[i] : i].x;
        for (int k = 0; k < 3; k++)
            vo[3 * i + k] = x[k] + site[k];
    }
    int *o = st->in + st->ni;
    memcpy(o, fs, (size_t)(f + 1) * sizeof(int));
    memcpy(o + f + 1, fv, (size_t)at * sizeof(int));
    memcpy(o + f + 1 + at, fn, (size_t)f * sizeof(int));
    memcpy(out->site, site, sizeof out->site);
    out->volume = vol / 6;
    out->vertex_count = m;
    out->face_count = f;
    st->nd += 3 * (size_t)m;
    st->ni += 2 * (size_t)f + 1 + at;
    return true;
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
    if (v->doubles || v->ints) {
        q_free(v->doubles, v->doubles_cap * sizeof(double));
        q_free(v->ints, v->ints_cap * sizeof(int));
    } else {
        for (size_t i = 0; i < v->cell_count; i++)
            free_cell(&v->cells[i]);
    }
    q_free(v->cells, v->cell_count * sizeof(q_voronoi_cell));
    q_free(v, sizeof *v);
}

/* ---- neighbours: a uniform grid of blocks ---- */

typedef q_voronoi_grid grid;

static int clampi(long v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : (int)v;
}

static void bucket_of(const grid *g, const double p[3], int b[3])
{
    for (int k = 0; k < 3; k++)
        b[k] = clampi((long)floor((p[k] - g->origin[k]) / g->h), 0, g->n[k] - 1);
}

static int offset_cmp(const void *pa, const void *pb)
{
    const q_voronoi_offset *a = pa, *b = pb;
    if (a->lb != b->lb)
        return a->lb < b->lb ? -1 : 1;
    int ca = a->d[0] * a->d[0] + a->d[1] * a->d[1] + a->d[2] * a->d[2];
    int cb = b->d[0] * b->d[0] + b->d[1] * b->d[1] + b->d[2] * b->d[2];
    if (ca != cb)
        return ca < cb ? -1 : 1;
    for (int k = 0; k < 3; k++)
        if (a->d[k] != b->d[k])
            return a->d[k] < b->d[k] ? -1 : 1;
    return 0;
}

/* Squared least distance, in block widths, between a point of block 0 and
 * a point of the block at offset d. */
static int offset_lb(const int d[3])
{
    int s = 0;
    for (int k = 0; k < 3; k++) {
        int a = abs(d[k]) - 1;
        if (a > 0)
            s += a * a;
    }
    return s;
}

bool q_voronoi_grid_build(q_voronoi_grid *g, const double *sites, size_t count, const double min[3],
                          const double max[3])
{
    memset(g, 0, sizeof *g);
    if (count == 0)
        return true;
    double ext[3] = {max[0] - min[0], max[1] - min[1], max[2] - min[2]};
    double vol = ext[0] * ext[1] * ext[2];
    /* about two sites per block */
    g->h = cbrt(vol / (double)count * 2.0);
    for (int k = 0; k < 3; k++) {
        g->origin[k] = min[k];
        double nk = ceil(ext[k] / g->h);
        g->n[k] = nk < 1 ? 1 : nk > 1024 ? 1024 : (int)nk;
    }
    /* the grid must cover the box along every axis with this one h */
    for (int k = 0; k < 3; k++)
        if (g->n[k] * g->h < ext[k])
            g->h = ext[k] / g->n[k];
    g->blocks = (size_t)g->n[0] * g->n[1] * g->n[2];
    g->count = count;
    size_t ntab = 1;
    for (int k = 0; k < 3; k++) {
        g->tab_r[k] = g->n[k] - 1 < TABLE_R ? g->n[k] - 1 : TABLE_R;
        ntab *= (size_t)(2 * g->tab_r[k] + 1);
    }
    g->ntab = (int)ntab;
    g->start = q_calloc(g->blocks + 1, sizeof(int));
    g->ids = q_alloc(count * sizeof(int));
    g->pts = q_alloc(count * 3 * sizeof(double));
    g->tab = q_alloc(ntab * sizeof *g->tab);
    int *bk = q_alloc(count * sizeof(int));
    if (!g->start || !g->ids || !g->pts || !g->tab || !bk) {
        q_free(bk, count * sizeof(int));
        q_voronoi_grid_free(g);
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        int b[3];
        bucket_of(g, sites + 3 * i, b);
        bk[i] = (int)(((size_t)b[2] * g->n[1] + b[1]) * g->n[0] + b[0]);
        g->start[bk[i] + 1]++;
    }
    for (size_t b = 0; b < g->blocks; b++)
        g->start[b + 1] += g->start[b];
    for (size_t i = 0; i < count; i++) {
        int at = g->start[bk[i]]++;
        g->ids[at] = (int)i;
        memcpy(g->pts + 3 * (size_t)at, sites + 3 * i, 3 * sizeof(double));
    }
    for (size_t b = g->blocks; b > 0; b--)
        g->start[b] = g->start[b - 1];
    g->start[0] = 0;
    int t = 0;
    for (int dz = -g->tab_r[2]; dz <= g->tab_r[2]; dz++)
        for (int dy = -g->tab_r[1]; dy <= g->tab_r[1]; dy++)
            for (int dx = -g->tab_r[0]; dx <= g->tab_r[0]; dx++) {
                q_voronoi_offset *o = &g->tab[t++];
                o->d[0] = dx, o->d[1] = dy, o->d[2] = dz;
                o->lb = offset_lb(o->d);
            }
    qsort(g->tab, ntab, sizeof *g->tab, offset_cmp);
    q_free(bk, count * sizeof(int));
    return true;
}

void q_voronoi_grid_free(q_voronoi_grid *g)
{
    if (g->count) {
        q_free(g->tab, (size_t)g->ntab * sizeof *g->tab);
        q_free(g->pts, g->count * 3 * sizeof(double));
        q_free(g->ids, g->count * sizeof(int));
        q_free(g->start, (g->blocks + 1) * sizeof(int));
    }
    memset(g, 0, sizeof *g);
}

/* Cuts the cell of site i by every site in block (x, y, z) closer than 2R.
 * Returns 0, -1 on overflow, -2 on a coincident site. */
static int cut_block(cell_work *w, const grid *g, size_t i, const double s[3], int x, int y, int z)
{
    size_t bk = ((size_t)z * g->n[1] + y) * g->n[0] + x;
    for (int j = g->start[bk]; j < g->start[bk + 1]; j++) {
        const double *q = g->pts + 3 * (size_t)j;
        double p[3] = {q[0] - s[0], q[1] - s[1], q[2] - s[2]};
        double dd = p[0] * p[0] + p[1] * p[1] + p[2] * p[2];
        if (dd >= 4 * w->r2)
            continue;
        int id = g->ids[j];
        if ((size_t)id == i)
            continue;
        if (dd == 0)
            return -2;
        if (cell_cut(w, p, 0.5 * dd, id) < 0)
            return -1;
    }
    return 0;
}

/* Insertion sort of c[0..n), stable. */
static void sort_cands(struct cand *c, int n)
{
    for (int a = 1; a < n; a++) {
        struct cand x = c[a];
        int b = a - 1;
        while (b >= 0 && c[b].dd > x.dd) {
            c[b + 1] = c[b];
            b--;
        }
        c[b + 1] = x;
    }
}

/* Cuts by c[0..n), sorted nearest first. Returns 1 when the rest are out
 * of reach, 0 when all were cut, -1 on overflow, -2 on a coincident site. */
static int cut_sorted(cell_work *w, const grid *g, const struct cand *c, int n)
{
    for (int a = 0; a < n; a++) {
        double dd = c[a].dd;
        if (dd >= 4 * w->r2)
            return 1;
        if (dd == 0)
            return -2;
        const double *q = g->pts + 3 * (size_t)c[a].j;
        double p[3] = {q[0] - w->site[0], q[1] - w->site[1], q[2] - w->site[2]};
        if (cell_cut(w, p, 0.5 * dd, g->ids[c[a].j]) < 0)
            return -1;
    }
    return 0;
}

/* Cuts by the gathered candidates in the order of a stable sort by
 * distance. A group holds up to ~60 candidates and a third of them come
 * after the cell has shrunk out of their reach, so they are dealt into bins
 * by distance (in gather order) and a bin is sorted only when the cuts reach
 * it: an insertion sort of the whole group mispredicted at every candidate
 * and took ~11% of a call. */
static int cut_cands(cell_work *w, const grid *g, int nc)
{
    struct cand *c = w->cand;
    int nb = nc >> 2, rc;
    if (nb < 2) {
        sort_cands(c, nc);
        rc = cut_sorted(w, g, c, nc);
        return rc < 0 ? rc : 0;
    }
    double top = 0;
    for (int a = 0; a < nc; a++)
        top = c[a].dd > top ? c[a].dd : top;
    /* floor(dd * scale) never decreases with dd, and stays below nb */
    double scale = nb / (top * (1 + 1e-9) + 1e-300);
    int *bin = w->bin;
    memset(bin, 0, (size_t)(nb + 1) * sizeof *bin);
    for (int a = 0; a < nc; a++) {
        int k = (int)(c[a].dd * scale);
        bin[(k < nb ? k : nb - 1) + 1]++;
    }
    for (int k = 0; k < nb; k++)
        bin[k + 1] += bin[k];
    for (int a = 0; a < nc; a++) {
        int k = (int)(c[a].dd * scale);
        w->sorted[bin[k < nb ? k : nb - 1]++] = c[a];
    }
    /* bin[k] is now the end of bin k */
    c = w->sorted;
    for (int k = 0, at = 0; k < nb; at = bin[k++]) {
        int n = bin[k] - at;
        if (!n)
            continue;
        sort_cands(c + at, n);
        rc = cut_sorted(w, g, c + at, n);
        if (rc)
            return rc < 0 ? rc : 0;
    }
    return 0;
}

/* Cell of site i (at g->pts[3 * self]) into w. Returns 0 ok, -1 overflow, -2 duplicate site. */
static int compute_cell(cell_work *w, const grid *g, size_t i, int self, const double min[3],
                        const double max[3])
{
    const double *s = g->pts + 3 * (size_t)self; /* = sites + 3 i, read in order */
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = min[k] - s[k];
        hi[k] = max[k] - s[k];
    }
    cell_init_box(w, lo, hi);
    int b[3];
    bucket_of(g, s, b);
    double h2 = g->h * g->h;
    memcpy(w->site, s, sizeof w->site);
    /* squared gap along each axis between the site and the blocks at each
     * offset of the table */
    double gap2[3][2 * TABLE_R + 1];
    for (int k = 0; k < 3; k++) {
        double lo_gap = s[k] - (g->origin[k] + b[k] * g->h), hi_gap = g->h - lo_gap;
        for (int d = -g->tab_r[k]; d <= g->tab_r[k]; d++) {
            double e = d > 0 ? hi_gap + (d - 1) * g->h : d < 0 ? lo_gap + (-d - 1) * g->h : 0;
            gap2[k][d + TABLE_R] = e > 0 ? e * e : 0;
        }
    }
    /* the table, one group of blocks at the same least distance at a time */
    for (int t = 0; t < g->ntab;) {
        int lb = g->tab[t].lb, nc = 0;
        if (lb * h2 >= 4 * w->r2)
            break;
        for (; t < g->ntab && g->tab[t].lb == lb; t++) {
            const q_voronoi_offset *o = &g->tab[t];
            int x = b[0] + o->d[0], y = b[1] + o->d[1], z = b[2] + o->d[2];
            if (x < 0 || y < 0 || z < 0 || x >= g->n[0] || y >= g->n[1] || z >= g->n[2])
                continue;
            size_t bk = ((size_t)z * g->n[1] + y) * g->n[0] + x;
            double lim = 4 * w->r2;
            /* the block's own least distance from the site */
            if (lb > 0 && gap2[0][o->d[0] + TABLE_R] + gap2[1][o->d[1] + TABLE_R] + gap2[2][o->d[2] + TABLE_R] >= lim)
                continue;
            /* every site is written, and counted when in reach and not the
             * site itself: whether it is was a branch mispredicted often */
            for (int j = g->start[bk]; j < g->start[bk + 1]; j++) {
                if (nc == MAXC) {
                    int rc = cut_cands(w, g, nc);
                    if (rc)
                        return rc;
                    nc = 0;
                    lim = 4 * w->r2;
                }
                const double *q = g->pts + 3 * (size_t)j;
                double dd = (q[0] - s[0]) * (q[0] - s[0]) + (q[1] - s[1]) * (q[1] - s[1]) +
                            (q[2] - s[2]) * (q[2] - s[2]);
                w->cand[nc].dd = dd;
                w->cand[nc].j = j;
                nc += (dd < lim) & (j != self);
            }
        }
        int rc = cut_cands(w, g, nc);
        if (rc)
            return rc;
    }
    /* beyond the table: rings of blocks r > table radius; ring r is at least
     * (r - 1) block widths away */
    int rmax = 0;
    for (int k = 0; k < 3; k++) {
        int e = b[k] > g->n[k] - 1 - b[k] ? b[k] : g->n[k] - 1 - b[k];
        if (e > rmax)
            rmax = e;
    }
    int r0 = g->tab_r[0];
    for (int k = 1; k < 3; k++)
        if (g->tab_r[k] < r0)
            r0 = g->tab_r[k];
    for (int r = r0 + 1; r <= rmax; r++) {
        if ((double)(r - 1) * (r - 1) * h2 >= 4 * w->r2)
            return 0;
        for (int dx = -r; dx <= r; dx++) {
            int x = b[0] + dx;
            if (x < 0 || x >= g->n[0])
                continue;
            for (int dy = -r; dy <= r; dy++) {
                int y = b[1] + dy;
                if (y < 0 || y >= g->n[1])
                    continue;
                bool edge = dx == -r || dx == r || dy == -r || dy == r;
                int step = edge ? 1 : 2 * r;
                for (int dz = -r; dz <= r; dz += step) {
                    int z = b[2] + dz;
                    if (z < 0 || z >= g->n[2])
                        continue;
                    /* blocks the table held */
                    if (abs(dx) <= g->tab_r[0] && abs(dy) <= g->tab_r[1] && abs(dz) <= g->tab_r[2])
                        continue;
                    int rc = cut_block(w, g, i, s, x, y, z);
                    if (rc)
                        return rc;
                }
            }
        }
    }
    return 0;
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
    if (count > (size_t)INT32_MAX / 4) {
        q_free(v, sizeof *v);
        snprintf(err, errlen, "too many sites");
        return NULL;
    }
    v->cells = q_calloc(count, sizeof(q_voronoi_cell));
    if (!v->cells) {
        q_free(v, sizeof *v);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    v->cell_count = count;
    prefault(v->cells, count * sizeof(q_voronoi_cell));
    grid g;
    cell_work *w = q_alloc(sizeof *w);
    store st = {0};
    st.off = q_alloc(2 * count * sizeof(size_t));
    bool ok = q_voronoi_grid_build(&g, sites, count, min, max) && w && st.off;
    if (ok) {
        /* room for cells of about 30 vertices */
        ok = reserve((void **)&st.dbl, &st.cd, 80 * count, sizeof(double)) &&
             reserve((void **)&st.in, &st.ci, 112 * count, sizeof(int));
        if (!ok)
            snprintf(err, errlen, "out of memory");
        /* cells in block order: neighbouring cells read the same blocks */
        for (size_t at = 0; at < count && ok; at++) {
            size_t i = (size_t)g.ids[at];
#ifdef __GNUC__
            /* the cell's record is at a random place: fetched while it is cut */
            __builtin_prefetch(&v->cells[i], 1);
            __builtin_prefetch(&st.off[2 * i], 1);
#endif
            int rc = compute_cell(w, &g, i, (int)at, min, max);
            if (rc == -2) {
                snprintf(err, errlen, "site %zu coincides with another site", i + 1);
                ok = false;
            } else if (rc < 0 || !store_cell(&st, i, &v->cells[i], w, w->site)) {
                snprintf(err, errlen, "out of memory or cell %zu too complex", i + 1);
                ok = false;
            }
        }
    } else {
        snprintf(err, errlen, "out of memory");
    }
    v->doubles = st.dbl;
    v->doubles_cap = st.cd;
    v->ints = st.in;
    v->ints_cap = st.ci;
    if (ok)
        for (size_t i = 0; i < count; i++) {
            q_voronoi_cell *c = &v->cells[i];
            c->vertices = st.dbl + st.off[2 * i];
            c->face_start = st.in + st.off[2 * i + 1];
            c->face_vertices = c->face_start + c->face_count + 1;
            c->face_neighbor = c->face_vertices + c->face_start[c->face_count];
        }
    q_free(st.off, 2 * count * sizeof(size_t));
    q_free(w, sizeof *w);
    q_voronoi_grid_free(&g);
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
