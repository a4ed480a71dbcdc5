/* Grid-sort ray casts: see gridsort.h. After seed 004 (C. Bloom, "Grid-Sort
 * RayCasts", 2004); the cell walk is the incremental traversal of Amanatides
 * and Woo, "A Fast Voxel Traversal Algorithm for Ray Tracing" (1987), in 2D.
 *
 * Why the answers match brute force exactly: the grid only decides which
 * triangles get tested; every test is q_ray_triangle on the caller's ray and
 * the triangle's own float vertices, and ties in t go to the lower index.
 * The culling must therefore never drop a triangle that q_ray_triangle
 * would hit. Footprints and extents along D are widened by `pad` (world
 * units, above the rounding of the double-precision frame and the slack
 * and rounding of q_ray_triangle), and the t range of each cell the ray
 * visits is widened by eps_t, so rounding in the walk can move a cell
 * boundary but never hide a hit.
 */
#include "geom/gridsort.h"

#include "core/alloc.h"
#include "physics/kdtree.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A triangle whose footprint covers this many cells of a level moves up to
 * the next coarser one (the seed's tweak value; it must be above 4, since a
 * small triangle over a grid vertex touches four cells). */
#define SPLIT_CELLS 12
/* Cells with more entries than this binary search the ray's extent along D
 * first; smaller ones are scanned from the front end. */
#define BRUTE_MAX 24
#define MAX_LEVELS 16
/* Entries of the direct-mapped "already tested" table of one raycast, and
 * the largest table a batch allocates (exact for meshes up to this many
 * triangles, a cache above). */
#define SMALL_VISIT 64u
#define BATCH_VISIT_MAX (1u << 16)

/* A cell is a header entry (id = count) followed by its triangles sorted
 * by centre along D. Both running bounds are non-decreasing along a cell,
 * so they are also what the binary searches look at. */
typedef struct gs_entry {
    uint32_t id;     /* triangle; in a cell's header entry, the count */
    float max_left;  /* max over entries 0..i of the triangles' highest w */
    float min_right; /* min over entries i..n-1 of their lowest w */
} gs_entry;

typedef struct gs_level {
    int32_t *cells; /* nu * nv header offsets into entries, -1 empty; NULL: empty level */
    int nu, nv;
    double cell, inv_cell; /* cell size, world units */
} gs_level;

struct q_gridsort {
    float *tris; /* 9 floats per triangle */
    uint32_t ntri;
    double axis[3][3];    /* rows U, V, D: u and v index the grid, w runs along D */
    double lo[3], ext[3]; /* padded bounds in that frame */
    double pad;           /* world units every footprint and extent is widened by */
    double scale;         /* largest |coordinate| of the triangles */
    int nlevels;          /* finest first; empty ones keep cells == NULL */
    gs_level level[MAX_LEVELS];
    gs_entry *entries;
    size_t entry_count;
};

static q_status fail(char *err, size_t errlen, q_status s, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static q_status fail(char *err, size_t errlen, q_status s, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* fmin/fmax are library calls at -O2 (NaN rules); nothing here is NaN. */
static inline double mind(double a, double b)
{
    return a < b ? a : b;
}

static inline double maxd(double a, double b)
{
    return a > b ? a : b;
}

static inline float minf(float a, float b)
{
    return a < b ? a : b;
}

static inline float maxf(float a, float b)
{
    return a > b ? a : b;
}

static inline double dot3(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static inline void cross3(const double a[3], const double b[3], double out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* U and V from the world axis least aligned with D; exact for axis-aligned D. */
static void make_frame(const float dir[3], double ax[3][3])
{
    double d[3] = {dir[0], dir[1], dir[2]};
    double len = sqrt(dot3(d, d));
    for (int k = 0; k < 3; k++)
        d[k] /= len;
    int a = 0;
    for (int k = 1; k < 3; k++)
        if (fabs(d[k]) < fabs(d[a]))
            a = k;
    double e[3] = {0, 0, 0}, u[3], v[3];
    e[a] = 1;
    cross3(d, e, u);
    double ul = sqrt(dot3(u, u));
    for (int k = 0; k < 3; k++)
        u[k] /= ul;
    cross3(d, u, v);
    memcpy(ax[0], u, sizeof u);
    memcpy(ax[1], v, sizeof v);
    memcpy(ax[2], d, sizeof d);
}

static float round_down(double x)
{
    float f = (float)x;
    return (double)f > x ? nextafterf(f, -INFINITY) : f;
}

static float round_up(double x)
{
    float f = (float)x;
    return (double)f < x ? nextafterf(f, INFINITY) : f;
}

/* ---- build ---- */

static int clamp_cell(double g, int n)
{
    if (!(g >= 0))
        return 0;
    if (g >= n - 1)
        return n - 1;
    return (int)g;
}

/* Cells of an nu x nv level that triangle p (level cell units) widened by
 * padc touches, into out; -1 when there are SPLIT_CELLS or more. Row by row:
 * the triangle clipped to the row's slab (widened by padc) is convex, so
 * its x extent comes from the vertices inside the slab and the crossings
 * of the edges with the slab's two lines. Rows and columns are widened by
 * padc, so every cell within padc of the triangle is included. */
static int footprint(const double p[3][2], double padc, int nu, int nv, uint32_t out[SPLIT_CELLS])
{
    double x0 = mind(mind(p[0][0], p[1][0]), p[2][0]) - padc, x1 = maxd(maxd(p[0][0], p[1][0]), p[2][0]) + padc;
    double y0 = mind(mind(p[0][1], p[1][1]), p[2][1]) - padc, y1 = maxd(maxd(p[0][1], p[1][1]), p[2][1]) + padc;
    int i0 = clamp_cell(floor(x0), nu), i1 = clamp_cell(floor(x1), nu);
    int j0 = clamp_cell(floor(y0), nv), j1 = clamp_cell(floor(y1), nv);
    if (i1 - i0 + 1 >= SPLIT_CELLS || j1 - j0 + 1 >= SPLIT_CELLS)
        return -1; /* a connected footprint touches every row and column it spans */
    double slope[3]; /* dx/dy of each edge; only used for edges that cross a line, so dy != 0 */
    for (int k = 0; k < 3; k++) {
        const double *a = p[k], *b = p[(k + 1) % 3];
        slope[k] = a[1] != b[1] ? (b[0] - a[0]) / (b[1] - a[1]) : 0;
    }
    int n = 0;
    for (int j = j0; j <= j1; j++) {
        double ya = j - padc, yb = j + 1 + padc, xa = INFINITY, xb = -INFINITY;
        for (int k = 0; k < 3; k++) {
            const double *a = p[k], *b = p[(k + 1) % 3];
            if (a[1] >= ya && a[1] <= yb) {
                xa = mind(xa, a[0]);
                xb = maxd(xb, a[0]);
            }
            for (int side = 0; side < 2; side++) {
                double y = side ? yb : ya;
                if ((a[1] < y && b[1] > y) || (a[1] > y && b[1] < y)) {
                    double x = a[0] + slope[k] * (y - a[1]);
                    xa = mind(xa, x);
                    xb = maxd(xb, x);
                }
            }
        }
        if (xa > xb)
            continue;
        int ia = clamp_cell(floor(xa - padc), nu), ib = clamp_cell(floor(xb + padc), nu);
        if (n + (ib - ia + 1) >= SPLIT_CELLS)
            return -1;
        for (int i = ia; i <= ib; i++)
            out[n++] = (uint32_t)j * (uint32_t)nu + (uint32_t)i;
    }
    return n;
}

/* The build: each triangle's level (merging sparse levels), then a count of
 * every cell's triangles, the cells laid out in the shared array, a fill,
 * and the per-cell sort. Footprints are recomputed rather than stored: they
 * are cheap, and the pairs would cost more memory than the result. */

typedef struct build_scratch {
    float *wlo, *whi, *wc; /* extent and centre along D, relative to the bounds */
    uint8_t *tri_level;
    uint32_t ntri;
} build_scratch;

static void scratch_free(build_scratch *s)
{
    size_t n = s->ntri;
    q_free(s->wlo, n * sizeof(float));
    q_free(s->whi, n * sizeof(float));
    q_free(s->wc, n * sizeof(float));
    q_free(s->tri_level, n);
}

/* While a cell is sorted, max_left holds the triangle's centre; ids break
 * ties, so the order is total and the build deterministic. In place:
 * insertion sort for the usual few entries, heapsort for crowded cells. */
static inline bool entry_less(const gs_entry *a, const gs_entry *b)
{
    return a->max_left < b->max_left || (a->max_left == b->max_left && a->id < b->id);
}

static void sift_down(gs_entry *e, uint32_t i, uint32_t n)
{
    gs_entry x = e[i];
    for (uint32_t c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && entry_less(&e[c], &e[c + 1]))
            c++;
        if (!entry_less(&x, &e[c]))
            break;
        e[i] = e[c];
    }
    e[i] = x;
}

static void sort_entries(gs_entry *e, uint32_t n)
{
    if (n <= 32) {
        for (uint32_t i = 1; i < n; i++) {
            gs_entry x = e[i];
            uint32_t j = i;
            for (; j > 0 && entry_less(&x, &e[j - 1]); j--)
                e[j] = e[j - 1];
            e[j] = x;
        }
        return;
    }
    for (uint32_t i = n / 2; i-- > 0;)
        sift_down(e, i, n);
    for (uint32_t end = n - 1; end > 0; end--) {
        gs_entry x = e[0];
        e[0] = e[end];
        e[end] = x;
        sift_down(e, 0, end);
    }
}

/* The first level from `from` up where triangle t covers fewer than
 * SPLIT_CELLS cells; its cells go to out, their count to *n. The coarsest
 * level has one cell, so the search always ends. */
static int choose_level(const q_gridsort *gs, uint32_t t, int from, uint32_t out[SPLIT_CELLS], int *n)
{
    double uv[3][2];
    for (int k = 0; k < 3; k++) {
        const float *f = gs->tris + 9 * (size_t)t + 3 * k;
        double p[3] = {f[0], f[1], f[2]};
        uv[k][0] = dot3(gs->axis[0], p) - gs->lo[0];
        uv[k][1] = dot3(gs->axis[1], p) - gs->lo[1];
    }
    int l = from;
    for (; l < gs->nlevels; l++) {
        const gs_level *L = &gs->level[l];
        double g[3][2];
        for (int k = 0; k < 3; k++) {
            g[k][0] = uv[k][0] * L->inv_cell;
            g[k][1] = uv[k][1] * L->inv_cell;
        }
        *n = footprint(g, gs->pad * L->inv_cell, L->nu, L->nv, out);
        if (*n >= 0)
            break;
    }
    return l;
}

static void mark_cells(uint64_t *bits, const uint32_t *cells, int n, size_t *occupied)
{
    for (int k = 0; k < n; k++) {
        uint64_t bit = 1ull << (cells[k] & 63);
        if (!(bits[cells[k] >> 6] & bit)) {
            bits[cells[k] >> 6] |= bit;
            ++*occupied;
        }
    }
}

/* Chooses each triangle's level.
 *
 * A level where under 1/SPARSE_LEVEL of the cells hold anything is merged
 * into the next coarser one (its triangles cover fewer cells there): a ray
 * would walk its mostly empty cells for little gain. This is the seed's
 * dropping of empty levels, extended to nearly empty ones; it matters when
 * the finest cells are much smaller than the triangles (a 2048 grid over a
 * small mesh holds only a few slivers). */
#define SPARSE_LEVEL 16
static bool choose_levels(q_gridsort *gs, build_scratch *s)
{
    size_t word0[MAX_LEVELS + 1] = {0}, occupied[MAX_LEVELS] = {0};
    for (int l = 0; l < gs->nlevels; l++)
        word0[l + 1] = word0[l] + ((size_t)gs->level[l].nu * (size_t)gs->level[l].nv + 63) / 64;
    uint64_t *bits = q_calloc(word0[gs->nlevels], sizeof(uint64_t));
    if (!bits)
        return false;
    uint32_t cells[SPLIT_CELLS];
    int n;
    for (uint32_t t = 0; t < gs->ntri; t++) {
        int l = choose_level(gs, t, 0, cells, &n);
        s->tri_level[t] = (uint8_t)l;
        mark_cells(bits + word0[l], cells, n, &occupied[l]);
    }
    for (int l = 0; l + 1 < gs->nlevels; l++) {
        size_t total = (size_t)gs->level[l].nu * (size_t)gs->level[l].nv;
        if (occupied[l] == 0 || occupied[l] * SPARSE_LEVEL >= total)
            continue;
        for (uint32_t t = 0; t < gs->ntri; t++) {
            if (s->tri_level[t] != l)
                continue;
            int up = choose_level(gs, t, l + 1, cells, &n);
            s->tri_level[t] = (uint8_t)up;
            mark_cells(bits + word0[up], cells, n, &occupied[up]);
        }
        occupied[l] = 0;
    }
    q_free(bits, word0[gs->nlevels] * sizeof(uint64_t));
    return true;
}

/* Counts, lays out, fills and sorts the cells of the levels in use. */
static q_status fill_cells(q_gridsort *gs, build_scratch *s, char *err, size_t errlen)
{
    bool used[MAX_LEVELS] = {false};
    for (uint32_t t = 0; t < gs->ntri; t++)
        used[s->tri_level[t]] = true;
    for (int l = 0; l < gs->nlevels; l++) {
        gs_level *L = &gs->level[l];
        if (!used[l])
            continue;
        L->cells = q_calloc((size_t)L->nu * (size_t)L->nv, sizeof(int32_t));
        if (!L->cells)
            return fail(err, errlen, Q_ERR_MEMORY, "out of memory for a %dx%d grid", L->nu, L->nv);
    }
    uint32_t cells[SPLIT_CELLS];
    int n;
    size_t total = 0;
    for (uint32_t t = 0; t < gs->ntri; t++) {
        int32_t *c = gs->level[choose_level(gs, t, s->tri_level[t], cells, &n)].cells;
        for (int k = 0; k < n; k++)
            total += c[cells[k]]++ == 0 ? 2 : 1; /* the first one brings the header */
    }
    if (total > INT32_MAX)
        return fail(err, errlen, Q_ERR_TOO_LARGE, "%zu cell entries exceed the 2^31 limit", total);
    if (total) {
        gs->entries = q_alloc(total * sizeof(gs_entry));
        if (!gs->entries)
            return fail(err, errlen, Q_ERR_MEMORY, "out of memory for %zu cell entries", total);
    }
    gs->entry_count = total;

    int32_t pos = 0;
    for (int l = 0; l < gs->nlevels; l++) {
        gs_level *L = &gs->level[l];
        for (size_t c = 0; L->cells && c < (size_t)L->nu * (size_t)L->nv; c++) {
            int32_t count = L->cells[c];
            L->cells[c] = count ? pos : -1;
            if (count) {
                gs->entries[pos] = (gs_entry){0, 0, 0};
                pos += 1 + count;
            }
        }
    }
    for (uint32_t t = 0; t < gs->ntri; t++) {
        const int32_t *c = gs->level[choose_level(gs, t, s->tri_level[t], cells, &n)].cells;
        for (int k = 0; k < n; k++) {
            gs_entry *h = gs->entries + c[cells[k]];
            h[1 + h->id++] = (gs_entry){t, s->wc[t], 0};
        }
    }

    for (int l = 0; l < gs->nlevels; l++) {
        const gs_level *L = &gs->level[l];
        for (size_t c = 0; L->cells && c < (size_t)L->nu * (size_t)L->nv; c++) {
            if (L->cells[c] < 0)
                continue;
            gs_entry *e = gs->entries + L->cells[c] + 1;
            uint32_t count = e[-1].id;
            sort_entries(e, count);
            float m = -INFINITY;
            for (uint32_t i = 0; i < count; i++)
                e[i].max_left = m = maxf(m, s->whi[e[i].id]);
            m = INFINITY;
            for (uint32_t i = count; i-- > 0;)
                e[i].min_right = m = minf(m, s->wlo[e[i].id]);
        }
    }
    return Q_OK;
}

q_status q_gridsort_build(q_gridsort **out, const float *positions, size_t vertex_count, const uint32_t *indices,
                          size_t index_count, const float dir[3], int resolution, char *err, size_t errlen)
{
    *out = NULL;
    if (!(isfinite(dir[0]) && isfinite(dir[1]) && isfinite(dir[2])) || (dir[0] == 0 && dir[1] == 0 && dir[2] == 0))
        return fail(err, errlen, Q_ERR_ARGUMENT, "direction must be finite and non-zero");
    if (resolution < 1 || resolution > Q_GRIDSORT_MAX_RESOLUTION)
        return fail(err, errlen, Q_ERR_ARGUMENT, "resolution must be in 1..%d, got %d", Q_GRIDSORT_MAX_RESOLUTION,
                    resolution);
    if (index_count % 3)
        return fail(err, errlen, Q_ERR_ARGUMENT, "index count %zu is not a multiple of 3", index_count);
    if (index_count / 3 > Q_GRIDSORT_MAX_TRIANGLES)
        return fail(err, errlen, Q_ERR_TOO_LARGE, "%zu triangles exceed the limit of %u", index_count / 3,
                    Q_GRIDSORT_MAX_TRIANGLES);
    for (size_t i = 0; i < index_count; i++) {
        if (indices[i] >= vertex_count)
            return fail(err, errlen, Q_ERR_ARGUMENT, "index %zu is %u, past the %zu vertices", i, indices[i],
                        vertex_count);
        const float *p = positions + 3 * (size_t)indices[i];
        if (!(isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2])))
            return fail(err, errlen, Q_ERR_ARGUMENT, "vertex %u has a non-finite coordinate", indices[i]);
    }

    uint32_t ntri = (uint32_t)(index_count / 3);
    q_gridsort *gs = q_calloc(1, sizeof *gs);
    build_scratch s = {.ntri = ntri};
    if (!gs)
        return fail(err, errlen, Q_ERR_MEMORY, "out of memory");
    gs->ntri = ntri;
    make_frame(dir, gs->axis);
    q_status st = Q_OK;
    if (ntri) {
        gs->tris = q_alloc((size_t)ntri * 9 * sizeof(float));
        s.wlo = q_alloc(ntri * sizeof(float));
        s.whi = q_alloc(ntri * sizeof(float));
        s.wc = q_alloc(ntri * sizeof(float));
        s.tri_level = q_alloc(ntri);
        if (!gs->tris || !s.wlo || !s.whi || !s.wc || !s.tri_level) {
            st = fail(err, errlen, Q_ERR_MEMORY, "out of memory for %u triangles", ntri);
            goto done;
        }
    }

    double mn[3] = {0, 0, 0}, mx[3] = {0, 0, 0};
    for (size_t i = 0; i < index_count; i++) {
        const float *p = positions + 3 * (size_t)indices[i];
        double pd[3] = {p[0], p[1], p[2]};
        memcpy(gs->tris + 3 * i, p, 3 * sizeof(float));
        for (int k = 0; k < 3; k++) {
            double w = dot3(gs->axis[k], pd);
            mn[k] = i ? mind(mn[k], w) : w;
            mx[k] = i ? maxd(mx[k], w) : w;
            gs->scale = maxd(gs->scale, fabs(pd[k]));
        }
    }
    double maxext = maxd(maxd(mx[0] - mn[0], mx[1] - mn[1]), mx[2] - mn[2]);
    /* q_ray_triangle reports hits up to about 1e-6 of the triangle's size
     * outside it (its barycentric slack) and, in float, about 2e-7 of the
     * origin's distance (rounding), more for grazing rays. 1e-5 of the extent
     * covers rays from within a few extents of the mesh at slopes down to
     * a few degrees, and costs only a fiftieth of a finest cell. */
    gs->pad = 1e-5 * maxext + 1e-7 * gs->scale + 1e-30;
    for (int k = 0; k < 3; k++) {
        gs->lo[k] = mn[k] - gs->pad;
        gs->ext[k] = mx[k] - mn[k] + 2 * gs->pad;
    }
    for (uint32_t t = 0; t < ntri; t++) {
        double w[3];
        for (int k = 0; k < 3; k++) {
            const float *f = gs->tris + 9 * (size_t)t + 3 * k;
            w[k] = dot3(gs->axis[2], (double[3]){f[0], f[1], f[2]}) - gs->lo[2];
        }
        double lo = mind(mind(w[0], w[1]), w[2]), hi = maxd(maxd(w[0], w[1]), w[2]);
        s.wlo[t] = round_down(lo - gs->pad);
        s.whi[t] = round_up(hi + gs->pad);
        s.wc[t] = (float)(0.5 * (lo + hi));
    }

    double cell = maxd(gs->ext[0], gs->ext[1]) / resolution;
    int nu = (int)mind(maxd(ceil(gs->ext[0] / cell), 1), resolution);
    int nv = (int)mind(maxd(ceil(gs->ext[1] / cell), 1), resolution);
    for (int l = 0;; l++) {
        gs->level[l] = (gs_level){NULL, nu, nv, cell, 1 / cell};
        if (nu == 1 && nv == 1) {
            gs->nlevels = l + 1;
            break;
        }
        nu = (nu + 1) / 2;
        nv = (nv + 1) / 2;
        cell *= 2;
    }

    if (!choose_levels(gs, &s)) {
        st = fail(err, errlen, Q_ERR_MEMORY, "out of memory placing %u triangles", ntri);
        goto done;
    }
    st = fill_cells(gs, &s, err, errlen);
done:
    scratch_free(&s);
    if (st != Q_OK) {
        q_gridsort_free(gs);
        return st;
    }
    *out = gs;
    return Q_OK;
}

void q_gridsort_free(q_gridsort *gs)
{
    if (!gs)
        return;
    q_free(gs->tris, (size_t)gs->ntri * 9 * sizeof(float));
    for (int l = 0; l < gs->nlevels; l++)
        q_free(gs->level[l].cells, (size_t)gs->level[l].nu * (size_t)gs->level[l].nv * sizeof(int32_t));
    q_free(gs->entries, gs->entry_count * sizeof(gs_entry));
    q_free(gs, sizeof *gs);
}

size_t q_gridsort_bytes(const q_gridsort *gs)
{
    size_t n = sizeof *gs + (size_t)gs->ntri * 9 * sizeof(float) + gs->entry_count * sizeof(gs_entry);
    for (int l = 0; l < gs->nlevels; l++)
        if (gs->level[l].cells)
            n += (size_t)gs->level[l].nu * (size_t)gs->level[l].nv * sizeof(int32_t);
    return n;
}

uint32_t q_gridsort_triangle_count(const q_gridsort *gs)
{
    return gs->ntri;
}

const float *q_gridsort_triangle(const q_gridsort *gs, uint32_t i)
{
    return gs->tris + 9 * (size_t)i;
}

void q_gridsort_info(const q_gridsort *gs, int *levels_kept, int *cells_u, int *cells_v)
{
    int kept = 0;
    for (int l = 0; l < gs->nlevels; l++)
        kept += gs->level[l].cells != NULL;
    *levels_kept = kept;
    *cells_u = gs->level[0].nu;
    *cells_v = gs->level[0].nv;
}

/* ---- queries ---- */

/* Triangles already tested by this ray: a direct-mapped table of
 * (walk << 32 | triangle) keys. A lost entry only costs a repeated test. */
typedef struct visit {
    uint64_t *keys;
    uint32_t mask, walk;
} visit;

typedef struct ray {
    const float *o, *d;   /* as given: what q_ray_triangle sees */
    double O[3], D[3];    /* origin relative to the bounds, direction; in the frame */
    double t0, t1, eps_t; /* clipped range and the slack of a cell's t range */
    double padw;          /* slack of the ray's extent along D */
    float tmax, best;
    uint32_t best_tri;
    bool found;
} ray;

/* Returns true when the triangle became the closest hit. */
static inline bool test_triangle(const q_gridsort *gs, ray *r, visit *v, uint32_t id)
{
    uint64_t key = (uint64_t)v->walk << 32 | id, *slot = &v->keys[id & v->mask];
    if (*slot == key)
        return false;
    *slot = key;
    const float *p = gs->tris + 9 * (size_t)id;
    float t = q_ray_triangle(r->o, r->d, p, p + 3, p + 6);
    if (!(t >= 0 && t <= r->tmax))
        return false;
    if (r->found && (t > r->best || (t == r->best && id > r->best_tri)))
        return false;
    r->found = true;
    r->best = t;
    r->best_tri = id;
    return true;
}

/* First entry whose max_left is >= w (max_left never decreases). */
static uint32_t first_reaching(const gs_entry *e, uint32_t n, double w)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (e[mid].max_left < w)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Number of entries whose min_right is <= w (min_right never decreases). */
static uint32_t count_starting(const gs_entry *e, uint32_t n, double w)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (e[mid].min_right <= w)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The triangles of one cell that the ray can meet while inside it, t in
 * [ta, tb], whose extent along D is [zlo, zhi]. Entries before the first
 * max_left >= zlo lie wholly below zlo, those from the first min_right >
 * zhi wholly above zhi. The scan runs front to back along the ray; a hit
 * pulls in the far end of the extent, which ends the scan sooner. Small
 * cells scan from their end instead of searching (seed: under 24). */
static void test_cell(const q_gridsort *gs, ray *r, visit *v, const gs_entry *h, double ta, double tb)
{
    uint32_t n = h->id;
    const gs_entry *e = h + 1;
    if (r->found)
        tb = mind(tb, r->best);
    ta -= r->eps_t;
    tb += r->eps_t;
    if (ta > tb)
        return;
    double dw = r->D[2], wa = r->O[2] + dw * ta, wb = r->O[2] + dw * tb;
    double zlo = mind(wa, wb) - r->padw, zhi = maxd(wa, wb) + r->padw;
    if (dw >= 0) {
        for (uint32_t i = n > BRUTE_MAX ? first_reaching(e, n, zlo) : 0; i < n && e[i].min_right <= zhi; i++)
            if (e[i].max_left >= zlo && test_triangle(gs, r, v, e[i].id))
                zhi = mind(zhi, r->O[2] + dw * (r->best + r->eps_t) + r->padw);
    } else {
        for (uint32_t i = n > BRUTE_MAX ? count_starting(e, n, zhi) : n; i-- > 0 && e[i].max_left >= zlo;)
            if (e[i].min_right <= zhi && test_triangle(gs, r, v, e[i].id))
                zlo = maxd(zlo, r->O[2] + dw * (r->best + r->eps_t) - r->padw);
    }
}

/* Integer line walk over one level, front to back, until the segment ends
 * or the next cell starts beyond the closest hit. */
static void walk_level(const q_gridsort *gs, const gs_level *L, ray *r, visit *v)
{
    double du = r->D[0], dv = r->D[1], cs = L->cell;
    double t = r->t0;
    int iu = clamp_cell(floor((r->O[0] + du * t) * L->inv_cell), L->nu);
    int iv = clamp_cell(floor((r->O[1] + dv * t) * L->inv_cell), L->nv);
    int su = du > 0 ? 1 : du < 0 ? -1 : 0, sv = dv > 0 ? 1 : dv < 0 ? -1 : 0;
    /* Next crossing of a u and a v cell boundary, and the t between two. */
    double tu = su ? ((iu + (su > 0)) * cs - r->O[0]) / du : INFINITY;
    double tv = sv ? ((iv + (sv > 0)) * cs - r->O[1]) / dv : INFINITY;
    double step_u = su ? cs / fabs(du) : 0, step_v = sv ? cs / fabs(dv) : 0;
    for (;;) {
        double next = mind(mind(tu, tv), r->t1);
        int32_t off = L->cells[(size_t)iv * (size_t)L->nu + (size_t)iu];
        if (off >= 0)
            test_cell(gs, r, v, gs->entries + off, t, next);
        if (next >= r->t1 || (r->found && next > r->best + r->eps_t))
            return;
        if (tu <= tv) {
            iu += su;
            tu += step_u;
            if (iu < 0 || iu >= L->nu)
                return;
        } else {
            iv += sv;
            tv += step_v;
            if (iv < 0 || iv >= L->nv)
                return;
        }
        t = maxd(t, next);
    }
}

static bool cast(const q_gridsort *gs, const float o[3], const float d[3], float tmax, visit *v, float *t_out,
                 uint32_t *tri_out)
{
    if (gs->ntri == 0 || !(tmax >= 0))
        return false;
    double od[3] = {o[0], o[1], o[2]}, dd[3] = {d[0], d[1], d[2]};
    if (!(isfinite(od[0] + od[1] + od[2]) && isfinite(dd[0] + dd[1] + dd[2])))
        return false;
    if (dd[0] == 0 && dd[1] == 0 && dd[2] == 0)
        return false;
    ray r = {.o = o, .d = d, .tmax = tmax};
    double t0 = 0, t1 = tmax;
    for (int k = 0; k < 3; k++) {
        r.O[k] = dot3(gs->axis[k], od) - gs->lo[k];
        r.D[k] = dot3(gs->axis[k], dd);
        if (r.D[k] == 0) {
            if (r.O[k] < 0 || r.O[k] > gs->ext[k])
                return false;
            continue;
        }
        double a = -r.O[k] / r.D[k], b = (gs->ext[k] - r.O[k]) / r.D[k];
        t0 = maxd(t0, mind(a, b));
        t1 = mind(t1, maxd(a, b));
    }
    if (!(t0 <= t1))
        return false;
    r.t0 = t0;
    r.t1 = t1;
    /* A cell's t range must hold every t q_ray_triangle may report for a
     * point inside it: the pad over the ray's speed, the float rounding of
     * t, and the rounding of cell crossings (about 1e-16 of the coordinates'
     * size over the speed across the grid; 1e-13 leaves a margin). */
    double across = fabs(r.D[0]) + fabs(r.D[1]);
    double size = fabs(r.O[0]) + fabs(r.O[1]) + gs->ext[0] + gs->ext[1] + gs->scale;
    r.eps_t = gs->pad / sqrt(dot3(dd, dd)) + 1e-6 * t1 + (across > 0 ? 1e-13 * size / across : 0);
    r.padw = gs->pad + fabs(r.D[2]) * r.eps_t;
    for (int l = 0; l < gs->nlevels; l++)
        if (gs->level[l].cells)
            walk_level(gs, &gs->level[l], &r, v);
    if (!r.found)
        return false;
    *t_out = r.best;
    *tri_out = r.best_tri;
    return true;
}

bool q_gridsort_raycast(const q_gridsort *gs, const float origin[3], const float dir[3], float tmax, float *t_out,
                        uint32_t *triangle_out)
{
    uint64_t keys[SMALL_VISIT] = {0};
    visit v = {keys, SMALL_VISIT - 1, 1};
    return cast(gs, origin, dir, tmax, &v, t_out, triangle_out);
}

size_t q_gridsort_raycast_batch(const q_gridsort *gs, const float *origins, const float *dirs, size_t n, float tmax,
                                float *t_out)
{
    uint32_t size = 1;
    while (size < gs->ntri && size < BATCH_VISIT_MAX)
        size <<= 1;
    uint64_t small[SMALL_VISIT];
    uint64_t *keys = q_calloc(size, sizeof(uint64_t));
    visit v = {keys, size - 1, 0};
    if (!keys) {
        memset(small, 0, sizeof small);
        v = (visit){small, SMALL_VISIT - 1, 0};
        size = SMALL_VISIT;
    }
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        if (++v.walk == 0) {
            memset(v.keys, 0, (size_t)size * sizeof(uint64_t));
            v.walk = 1;
        }
        float t;
        uint32_t tri;
        if (cast(gs, origins + 3 * i, dirs + 3 * i, tmax, &v, &t, &tri)) {
            t_out[i] = t;
            hits++;
        } else {
            t_out[i] = -1.0f;
        }
    }
    if (keys)
        q_free(keys, (size_t)size * sizeof(uint64_t));
    return hits;
}
