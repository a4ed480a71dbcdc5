/* Loose kD tree: see kdtree.h. Built with an explicit work stack, a quad
 * node (a branch, its two children and its grandchildren's storage) at a
 * time; queries use fixed-size stacks bounded by Q_KD_MAX_DEPTH (a quad node
 * pushes at most three lanes and is two levels deep). */
#include "physics/kdtree.h"

#include "core/alloc.h"

#include <float.h>
#include <math.h>
#include <string.h>
#if defined(__SSE2__) && !defined(Q_KD_SCALAR)
#include <emmintrin.h>
#endif


/* Mesh layouts, so that each traversal is compiled for one of them (no
 * per-vertex tests of which arrays are set). */
enum { FMT_F32_I16, FMT_F32_I32, FMT_Q16_I16, FMT_Q16_I32 };

static inline int mesh_format(const q_kd_mesh *m)
{
    return (m->qpositions ? 2 : 0) | (m->indices16 ? 0 : 1);
}

static inline __attribute__((always_inline)) void load_triangle(const q_kd_mesh *m, int fmt, uint32_t t,
                                                                float v[9])
{
    uint32_t i[3];
    for (int k = 0; k < 3; k++)
        i[k] = (fmt & 1) ? m->indices32[3 * t + k] : m->indices16[3 * t + k];
    if (fmt & 2) {
        float s = m->qscale;
        for (int k = 0; k < 3; k++) {
            const int16_t *q = m->qpositions + 3 * i[k];
            v[3 * k] = q[0] * s, v[3 * k + 1] = q[1] * s, v[3 * k + 2] = q[2] * s;
        }
    } else {
        for (int k = 0; k < 3; k++) {
            const float *p = m->positions + 3 * i[k];
            v[3 * k] = p[0], v[3 * k + 1] = p[1], v[3 * k + 2] = p[2];
        }
    }
}

static inline __attribute__((always_inline)) float ray_triangle(const float o[3], const float d[3], const float a[3],
                                                                const float b[3], const float c[3])
{
    /* Moller-Trumbore. The barycentric tests allow a relative slack of 2^-20
     * so that a ray through a shared edge hits at least one of its
     * triangles despite rounding. No early outs: every test folds into one
     * select at the end. Whether a ray passes beside a triangle is a coin
     * toss for the branch predictor, and the few multiplies an early out
     * saves cost less than its mispredictions (rays 20-25% faster,
     * bench/RESULTS.md). A zero determinant makes u, v and t inf or NaN,
     * which fail the tests. */
    float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    float e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    float p[3] = {d[1] * e2[2] - d[2] * e2[1], d[2] * e2[0] - d[0] * e2[2], d[0] * e2[1] - d[1] * e2[0]};
    float det = e1[0] * p[0] + e1[1] * p[1] + e1[2] * p[2];
    float inv = 1.0f / det;
    float s[3] = {o[0] - a[0], o[1] - a[1], o[2] - a[2]};
    float u = (s[0] * p[0] + s[1] * p[1] + s[2] * p[2]) * inv;
    float q[3] = {s[1] * e1[2] - s[2] * e1[1], s[2] * e1[0] - s[0] * e1[2], s[0] * e1[1] - s[1] * e1[0]};
    float v = (d[0] * q[0] + d[1] * q[1] + d[2] * q[2]) * inv;
    float t = (e2[0] * q[0] + e2[1] * q[1] + e2[2] * q[2]) * inv;
    const float slack = 1.0f / (1 << 20);
    int ok = (det != 0.0f) & (u >= -slack) & (u <= 1 + slack) & (v >= -slack) & (u + v <= 1 + slack) & (t >= 0);
    return ok ? t : -1.0f;
}

float q_ray_triangle(const float o[3], const float d[3], const float a[3], const float b[3], const float c[3])
{
    return ray_triangle(o, d, a, b, c);
}

/* ---- build ---- */

typedef struct build_item {
    uint32_t begin, end, depth;
    uint32_t word;        /* where its quad node goes (items that start one) */
    float rlo[3], rhi[3]; /* the node's region as traversal recovers it */
    float blo[3], bhi[3]; /* bounds of its triangles, when bounded */
    bool clipped;         /* the parent was a clip node */
    bool bounded;
} build_item;

/* Clip nodes. Splitting the longest axis rarely splits the thin one of a
 * surface (terrain is a 2.5D sheet), so a node's region -- what traversal
 * knows of it: the half-spaces of its ancestors -- stays a tall column full of
 * air, and rays over the surface enter many such columns. When more than
 * 15% of a region's extent on an axis is empty, a clip node cuts it: one
 * child holds every triangle, the other is an empty leaf. Only nodes with at
 * least CLIP_MIN triangles are clipped, and never twice in a row, which bounds
 * both the extra nodes and the extra depth. */
#define CLIP_MIN 16
#define CLIP_EMPTY 0.15f /* share of a region's extent that must be empty; 0.15 measured
                            better for rays than 0.5 (bench/RESULTS.md) */

typedef struct builder {
    const q_kd_mesh *mesh;
    uint32_t *tris;
    uint32_t *aux; /* n: the right side while partitioning */
    float *mid; /* 3 per triangle */
    float *box; /* 6 per triangle: min xyz, max xyz */
    uint32_t *perm; /* n: the triangles in leaf order, as leaves are written */
    uint32_t next;  /* leaf triangles written */
} builder;

#define MINF(a, b) ((a) < (b) ? (a) : (b))
#define MAXF(a, b) ((a) > (b) ? (a) : (b))

static inline bool mid_less(const builder *b, uint32_t x, uint32_t y, int axis)
{
    float kx = b->mid[3 * x + axis], ky = b->mid[3 * y + axis];
    return kx < ky || (kx == ky && x < y); /* ids break ties: a strict total order */
}

/* Reorders tris[begin, end) so that position k holds the element it would
 * hold if sorted by (midpoint along axis, id), with smaller ones before it
 * (quickselect, Lomuto partition). */
static void select_nth(builder *b, uint32_t begin, uint32_t end, uint32_t k, int axis)
{
    uint32_t *t = b->tris;
    while (end - begin > 1) {
        uint32_t mid = begin + (end - begin) / 2, s;
        s = t[mid], t[mid] = t[end - 1], t[end - 1] = s;
        uint32_t pivot = t[end - 1], store = begin;
        for (uint32_t i = begin; i < end - 1; i++)
            if (mid_less(b, t[i], pivot, axis)) {
                s = t[i], t[i] = t[store], t[store] = s;
                store++;
            }
        s = t[store], t[store] = t[end - 1], t[end - 1] = s;
        if (k == store)
            return;
        if (k < store)
            end = store;
        else
            begin = store + 1;
    }
}

/* Split choice for nodes of more than SAH_MIN triangles: the midpoints are
 * binned along the axis into SAH_BINS bins, and of the bin boundaries that
 * leave each side at least 25% of the triangles, the one with the smallest
 * surface-area cost  N_left * area(left) + N_right * area(right)  wins, each
 * side's box being the node's bounds cut at its own plane. Returns false when
 * no boundary keeps both sides at 25% (the caller falls back to the mean split);
 * otherwise partitions tris so that [begin, *mid_out) is the left side and
 * gives both planes (exact: from the bins' triangle bounds). */
#define SAH_BINS 16
#define SAH_MIN 8
static bool sah_split(builder *b, uint32_t begin, uint32_t end, int axis, const float lo[3], const float hi[3],
                      uint32_t *mid_out, float *split_lo, float *split_hi)
{
    uint32_t *restrict tris = b->tris, *restrict aux = b->aux;
    const float *restrict mid = b->mid, *restrict box = b->box;
    uint32_t count = end - begin, bn[SAH_BINS] = {0}, bn2[SAH_BINS] = {0};
    float bmax[SAH_BINS], bmin[SAH_BINS], bmax2[SAH_BINS], bmin2[SAH_BINS];
    for (int k = 0; k < SAH_BINS; k++)
        bmax[k] = bmax2[k] = -INFINITY, bmin[k] = bmin2[k] = INFINITY;
    float base = lo[axis], scale = (float)SAH_BINS / (hi[axis] - lo[axis]);
    /* Two sets of bins, for even and odd positions: neighbouring triangles
     * (in space, so in this order) tend to fall in the same bin, and each
     * update of a bin waits for the previous one (region builds 5% faster). */
    uint32_t p = begin;
    for (; p + 1 < end; p += 2) {
        uint32_t t = tris[p], u = tris[p + 1];
        int k = (int)((mid[3 * t + axis] - base) * scale), j = (int)((mid[3 * u + axis] - base) * scale);
        k = k < 0 ? 0 : k > SAH_BINS - 1 ? SAH_BINS - 1 : k;
        j = j < 0 ? 0 : j > SAH_BINS - 1 ? SAH_BINS - 1 : j;
        aux[p - begin] = (uint32_t)k; /* for the partition */
        aux[p + 1 - begin] = (uint32_t)j;
        bn[k]++;
        bn2[j]++;
        bmax[k] = MAXF(bmax[k], box[6 * t + 3 + axis]);
        bmin[k] = MINF(bmin[k], box[6 * t + axis]);
        bmax2[j] = MAXF(bmax2[j], box[6 * u + 3 + axis]);
        bmin2[j] = MINF(bmin2[j], box[6 * u + axis]);
    }
    for (; p < end; p++) {
        uint32_t t = tris[p];
        int k = (int)((mid[3 * t + axis] - base) * scale);
        k = k < 0 ? 0 : k > SAH_BINS - 1 ? SAH_BINS - 1 : k;
        aux[p - begin] = (uint32_t)k;
        bn[k]++;
        bmax[k] = MAXF(bmax[k], box[6 * t + 3 + axis]);
        bmin[k] = MINF(bmin[k], box[6 * t + axis]);
    }
    for (int k = 0; k < SAH_BINS; k++) {
        bn[k] += bn2[k];
        bmax[k] = MAXF(bmax[k], bmax2[k]);
        bmin[k] = MINF(bmin[k], bmin2[k]);
    }
    int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
    float e1 = hi[a1] - lo[a1], e2 = hi[a2] - lo[a2];
    float per = e1 + e2, cap = e1 * e2; /* area of a box of extent x on the axis: 2 (x per + cap) */
    float suf_min[SAH_BINS + 1];
    suf_min[SAH_BINS] = INFINITY;
    for (int k = SAH_BINS - 1; k >= 0; k--)
        suf_min[k] = MINF(suf_min[k + 1], bmin[k]);
    float pre_max = -INFINITY, best_cost = INFINITY;
    uint32_t nl = 0;
    int best = -1;
    for (int k = 1; k < SAH_BINS; k++) {
        nl += bn[k - 1];
        pre_max = MAXF(pre_max, bmax[k - 1]);
        uint32_t nr = count - nl;
        if (nl * 4 < count || nr * 4 < count)
            continue;
        float cost = (float)nl * ((pre_max - lo[axis]) * per + cap) + (float)nr * ((hi[axis] - suf_min[k]) * per + cap);
        if (cost < best_cost) {
            best_cost = cost, best = k;
            *split_lo = pre_max, *split_hi = suf_min[k];
        }
    }
    if (best < 0)
        return false;
    uint32_t kept = 0, moved = 0;
    for (uint32_t i = begin; i < end; i++) { /* branch-free: left in place, right to aux */
        uint32_t t = tris[i];
        uint32_t left = aux[i - begin] < (uint32_t)best; /* read before aux[moved <= i - begin] is written */
        tris[begin + kept] = t;
        aux[moved] = t;
        kept += left;
        moved += 1 - left;
    }
    memcpy(tris + begin + kept, aux, moved * sizeof *aux);
    *mid_out = begin + kept;
    return true;
}


/* Triangle order, midpoints and boxes, decoded once (compiled per layout). */
static inline __attribute__((always_inline)) void decode_boxes(builder *b, q_kdtree *tree, const int fmt)
{
    const q_kd_mesh *mesh = b->mesh;
    uint32_t n = mesh->triangle_count;
    uint32_t *restrict tris = b->tris;
    float *restrict mid = b->mid, *restrict box = b->box;
    float tmin[3] = {INFINITY, INFINITY, INFINITY}, tmax[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t t = 0; t < n; t++) {
        tris[t] = t;
        float v[9];
        load_triangle(mesh, fmt, t, v);
        for (int a = 0; a < 3; a++) {
            mid[3 * t + a] = (v[a] + v[3 + a] + v[6 + a]) * (1.0f / 3.0f);
            float lo = MINF(v[a], MINF(v[3 + a], v[6 + a])), hi = MAXF(v[a], MAXF(v[3 + a], v[6 + a]));
            box[6 * t + a] = lo;
            box[6 * t + 3 + a] = hi;
            tmin[a] = MINF(tmin[a], lo);
            tmax[a] = MAXF(tmax[a], hi);
        }
    }
    for (int a = 0; a < 3; a++) {
        tree->min[a] = tmin[a];
        tree->max[a] = tmax[a];
    }
}

/* Planes on the tree's 16-bit grid (kdtree.h, q_kdtree_plane), decoded
 * exactly as traversal decodes them. Build rounds them outwards and checks
 * the decoded value, so that a plane never cuts into its child's triangles. */
#define QMAX Q_KD_PLANE_MAX
static inline float plane_at(const q_kdtree *t, int a, uint32_t q)
{
    return t->qbase[a] + (float)q * t->qstep[a];
}

/* The estimates below multiply by 1 / qstep (inv_step) and truncate; the
 * loops after them make the answer exact (one or two steps at most). */
static inline uint16_t plane_up(const q_kdtree *t, const float inv_step[3], int a, float x) /* the lowest plane >= x */
{
    if (!(x > t->qbase[a]))
        return 0;
    float f = (x - t->qbase[a]) * inv_step[a];
    uint32_t q = f >= (float)QMAX ? QMAX : (uint32_t)f + 1u;
    while (q > 0 && plane_at(t, a, q - 1) >= x)
        q--;
    while (q < QMAX && plane_at(t, a, q) < x)
        q++;
    return (uint16_t)q;
}

static inline uint16_t plane_down(const q_kdtree *t, const float inv_step[3], int a, float x) /* the highest plane <= x */
{
    if (!(x < plane_at(t, a, QMAX)))
        return (uint16_t)QMAX;
    float f = (x - t->qbase[a]) * inv_step[a];
    uint32_t q = f <= 0 ? 0 : (uint32_t)f;
    while (q < QMAX && plane_at(t, a, q + 1) <= x)
        q++;
    while (q > 0 && plane_at(t, a, q) > x)
        q--;
    return (uint16_t)q;
}

/* The grid spans the tree's bounds with a little room, so that plane QMAX
 * lies at or above every vertex. */
static void set_grid(q_kdtree *t)
{
    for (int a = 0; a < 3; a++) {
        float extent = t->max[a] - t->min[a];
        t->qbase[a] = t->min[a];
        t->qstep[a] = extent > 0 ? extent / 65000.0f : 1.0f;
        while (plane_at(t, a, QMAX) < t->max[a])
            t->qstep[a] *= 1.0001f;
    }
}

/* Splits one node of the binary tree: its axis, its two planes (left side's
 * in the low 16 bits, right side's in the high 16) and its children's items
 * (those of at most 2 triangles become leaves). */
static inline __attribute__((always_inline)) void split_item(builder *b, q_kdtree *tree, const float inv_step[3], const build_item *it,
                       uint32_t *axis_out, uint32_t *planes_out, build_item child[2])
{
    uint32_t count = it->end - it->begin;
    float lo[3], hi[3];
    if (it->bounded) {
        memcpy(lo, it->blo, sizeof lo);
        memcpy(hi, it->bhi, sizeof hi);
    } else {
#if defined(__SSE2__) && !defined(Q_KD_SCALAR)
        /* The build's hottest loop: a triangle's box is 6 floats, min xyz
         * then max xyz; the first four and the last four are two loads
         * within it (same mins and maxes as the scalar loop). */
        __m128 vlo = _mm_set1_ps(INFINITY), vhi = _mm_set1_ps(-INFINITY);
        for (uint32_t i = it->begin; i < it->end; i++) {
            const float *box = b->box + 6 * (size_t)b->tris[i];
            vlo = _mm_min_ps(vlo, _mm_loadu_ps(box));
            vhi = _mm_max_ps(vhi, _mm_loadu_ps(box + 2));
        }
        float l4[4], h4[4];
        _mm_storeu_ps(l4, vlo);
        _mm_storeu_ps(h4, vhi);
        lo[0] = l4[0], lo[1] = l4[1], lo[2] = l4[2], hi[0] = h4[1], hi[1] = h4[2], hi[2] = h4[3];
#else
        /* Bounds in scalars (kept in registers: as arrays indexed in a loop
         * they went through memory, the build's hottest loop). */
        float lx = INFINITY, ly = INFINITY, lz = INFINITY, hx = -INFINITY, hy = -INFINITY, hz = -INFINITY;
        for (uint32_t i = it->begin; i < it->end; i++) {
            const float *box = b->box + 6 * (size_t)b->tris[i];
            lx = MINF(lx, box[0]), ly = MINF(ly, box[1]), lz = MINF(lz, box[2]);
            hx = MAXF(hx, box[3]), hy = MAXF(hy, box[4]), hz = MAXF(hz, box[5]);
        }
        lo[0] = lx, lo[1] = ly, lo[2] = lz, hi[0] = hx, hi[1] = hy, hi[2] = hz;
#endif
    }
    /* Depth stays under Q_KD_MAX_DEPTH: every split leaves at most 3/4 of
     * the triangles on a side, (4/3)^64 > 2^24, and clip nodes at most
     * double the depth. */
    uint32_t depth = it->depth + 1;
    if (depth > tree->depth)
        tree->depth = depth;
    /* Children get the fields they need, field by field (whole-item copies
     * were a tenth of the build). */
    for (int s = 0; s < 2; s++) {
        child[s].begin = it->begin, child[s].end = it->end, child[s].depth = depth;
        child[s].clipped = child[s].bounded = false;
        memcpy(child[s].rlo, it->rlo, sizeof it->rlo);
        memcpy(child[s].rhi, it->rhi, sizeof it->rhi);
    }
    if (!it->clipped && count >= CLIP_MIN) {
        int ca = -1, side = 0;
        float best = 0;
        for (int a = 0; a < 3; a++) {
            float extent = it->rhi[a] - it->rlo[a];
            float above = it->rhi[a] - hi[a], below = lo[a] - it->rlo[a];
            if (above > CLIP_EMPTY * extent && above > best)
                ca = a, side = 1, best = above;
            if (below > CLIP_EMPTY * extent && below > best)
                ca = a, side = 0, best = below;
        }
        if (ca >= 0) {
            uint32_t q0, q1;
            build_item *full = &child[side ? 0 : 1], *empty = &child[side ? 1 : 0];
            if (side) { /* left holds all, right (empty) lies above everything */
                q0 = plane_up(tree, inv_step, ca, hi[ca]);
                q1 = QMAX;
                full->rhi[ca] = plane_at(tree, ca, q0);
            } else { /* right holds all, left (empty) lies below everything */
                q0 = 0;
                q1 = plane_down(tree, inv_step, ca, lo[ca]);
                full->rlo[ca] = plane_at(tree, ca, q1);
            }
            empty->end = empty->begin;
            /* The full child is split next with the bounds just computed. */
            full->clipped = full->bounded = true;
            memcpy(full->blo, lo, sizeof lo);
            memcpy(full->bhi, hi, sizeof hi);
            *axis_out = (uint32_t)ca;
            *planes_out = q0 | q1 << 16;
            return;
        }
    }
    int axis = 0;
    for (int a = 1; a < 3; a++)
        if (hi[a] - lo[a] > hi[axis] - lo[axis])
            axis = a;
    uint32_t i, begin = it->begin, end = it->end;
    float split_lo = -INFINITY, split_hi = INFINITY;
    if (count <= SAH_MIN || !(hi[axis] > lo[axis]) ||
        !sah_split(b, begin, end, axis, lo, hi, &i, &split_lo, &split_hi)) {
        /* Small or flat nodes, or no balanced bin boundary: the mean of
         * the midpoints, with the median when a side gets under 25%. */
        float sum = 0; /* only here: nodes of more than SAH_MIN triangles rarely need it */
        for (uint32_t k = begin; k < end; k++)
            sum += b->mid[3 * (size_t)b->tris[k] + axis];
        float split = sum / (float)count;
        uint32_t nl = 0, nr = 0;
        for (uint32_t k = begin; k < end; k++) { /* midpoints below the split go left */
            uint32_t t = b->tris[k], left = b->mid[3 * t + axis] < split;
            b->tris[begin + nl] = t;
            b->aux[nr] = t;
            nl += left;
            nr += 1 - left;
        }
        memcpy(b->tris + begin + nl, b->aux, nr * sizeof *b->aux);
        i = begin + nl;
        uint32_t left = i - begin;
        if (left * 4 < count || (count - left) * 4 < count) {
            /* Too skewed: median split in midpoint order. */
            uint32_t half = begin + count / 2;
            select_nth(b, begin, end, half, axis);
            i = half;
        }
        if (count <= 8 && ((i - begin) & 1u)) {
            /* Small nodes: an even left side packs both sides into fewer
             * leaves (4 triangles: 2 + 2 is 3 nodes, 1 + 3 is 5). */
            uint32_t k = i - begin < count - (i - begin) ? i + 1 : i - 1;
            select_nth(b, begin, end, k, axis);
            i = k;
        }
        for (uint32_t k = begin; k < i; k++)
            split_lo = MAXF(split_lo, b->box[6 * (size_t)b->tris[k] + 3 + axis]);
        for (uint32_t k = i; k < end; k++)
            split_hi = MINF(split_hi, b->box[6 * (size_t)b->tris[k] + axis]);
    }
    uint32_t q0 = plane_up(tree, inv_step, axis, split_lo), q1 = plane_down(tree, inv_step, axis, split_hi);
    child[0].end = i;
    child[1].begin = i;
    child[0].rhi[axis] = MINF(it->rhi[axis], plane_at(tree, axis, q0));
    child[1].rlo[axis] = MAXF(it->rlo[axis], plane_at(tree, axis, q1));
    *axis_out = (uint32_t)axis;
    *planes_out = q0 | q1 << 16;
}

/* Builds the tree into tree->words; perm (n words) receives the triangles in
 * leaf order. mem: the scratch block (build_scratch bytes), kept for the
 * caller's reordering. */
static size_t build_scratch(uint32_t n) { return (size_t)n * (2 * sizeof(uint32_t) + 9 * sizeof(float)); }

static bool build_tree(q_kdtree *tree, const q_kd_mesh *mesh, unsigned char *mem, uint32_t *perm)
{
    uint32_t n = mesh->triangle_count;
    /* At most a quad node per branch (2n with clip nodes: 12n words, under
     * 2^28 = Q_KD_BASE_MASK), but trees take about 0.3 per triangle: the
     * array starts at 0.5 per triangle and doubles when needed (allocating
     * the bound cost region builds 10% in page faults). */
    size_t cap = Q_KD_QUAD_WORDS * ((size_t)n / 2 + 8);
    tree->words = q_alloc(cap * sizeof(uint32_t));
    if (!tree->words)
        return false;
    /* The scratch block: triangle order, midpoints and boxes. The vertices
     * are decoded once here; the build then reads only boxes and midpoints. */
    builder b = {mesh, (uint32_t *)mem, (uint32_t *)mem + n, (float *)(mem + 2 * n * sizeof(uint32_t)), NULL, perm, 0};
    b.box = b.mid + 3 * (size_t)n;
    for (int a = 0; a < 3; a++) {
        tree->min[a] = INFINITY;
        tree->max[a] = -INFINITY;
    }
    switch (mesh_format(mesh)) {
    case FMT_F32_I16:
        decode_boxes(&b, tree, FMT_F32_I16);
        break;
    case FMT_F32_I32:
        decode_boxes(&b, tree, FMT_F32_I32);
        break;
    case FMT_Q16_I16:
        decode_boxes(&b, tree, FMT_Q16_I16);
        break;
    default:
        decode_boxes(&b, tree, FMT_Q16_I32);
        break;
    }

    set_grid(tree);
    float inv_step[3] = {1.0f / tree->qstep[0], 1.0f / tree->qstep[1], 1.0f / tree->qstep[2]};

    /* Quad nodes depth first: a node, its two children and its (up to)
     * four grandchildren's storage at once; the first grandchild that is a
     * quad node is built next without a trip through the stack. */
    build_item stack[3 * (Q_KD_MAX_DEPTH / 2) + 8];
    int top = 0;
    stack[top] = (build_item){0, n, 0, 0, {0}, {0}, {0}, {0}, true, false};
    memcpy(stack[top].rlo, tree->min, sizeof tree->min);
    memcpy(stack[top].rhi, tree->max, sizeof tree->max);
    top++;
    tree->word_count = Q_KD_QUAD_WORDS;
    while (top > 0) {
        /* The item is split where it lies; its grandchildren are then
         * written from its slot on (it is not read again), and those that
         * are quad nodes stay there as the next items. */
        const build_item *it = &stack[--top];
        uint32_t word = it->word, axes[3], planes[3], leaf_child = 0;
        build_item child[2], *lane = &stack[top];
        uint32_t lb[4], le[4]; /* lanes' triangle ranges */
        if (it->end - it->begin <= 2) { /* only the root of a mesh of 1 or 2 triangles */
            axes[0] = 0, planes[0] = QMAX; /* a left child that holds all, right empty */
            tree->depth = 1;
            child[0].begin = it->begin, child[0].end = it->end;
            child[1].begin = child[1].end = it->begin;
        } else {
            split_item(&b, tree, inv_step, it, &axes[0], &planes[0], child);
        }
        for (int s = 0; s < 2; s++) {
            if (child[s].end - child[s].begin <= 2) { /* a leaf: its first lane, planes that bound nothing */
                leaf_child |= 1u << s;
                axes[1 + s] = 0, planes[1 + s] = QMAX;
                lb[2 * s] = child[s].begin, le[2 * s] = child[s].end;
                lb[2 * s + 1] = le[2 * s + 1] = child[s].begin;
            } else {
                split_item(&b, tree, inv_step, &child[s], &axes[1 + s], &planes[1 + s], &lane[2 * s]);
                lb[2 * s] = lane[2 * s].begin, le[2 * s] = lane[2 * s].end;
                lb[2 * s + 1] = lane[2 * s + 1].begin, le[2 * s + 1] = lane[2 * s + 1].end;
            }
        }
        /* Quad lanes take 6 words each of the lanes' storage; leaf lanes
         * take the next triangles of the leaf order. */
        uint32_t meta = 0, size = 0, first = b.next, nonempty = 0;
        for (int k = 0; k < 4; k++) {
            uint32_t count = le[k] - lb[k];
            if (count > 2) {
                meta |= (size << 2 | Q_KD_LANE_QUAD) << (8 * k);
                size += Q_KD_QUAD_WORDS;
            } else {
                meta |= ((b.next - first) << 2 | count) << (8 * k);
                for (uint32_t j = 0; j < count; j++)
                    perm[b.next++] = b.tris[lb[k] + j];
            }
            nonempty |= (uint32_t)(count > 0) << k;
        }
        uint32_t base = tree->word_count;
        while (base + size > cap) {
            uint32_t *grown = q_realloc(tree->words, cap * sizeof(uint32_t), 2 * cap * sizeof(uint32_t));
            if (!grown) {
                tree->word_count = (uint32_t)cap; /* what q_kdtree_free gives back */
                return false;
            }
            tree->words = grown;
            cap *= 2;
        }
        tree->word_count += size;
        tree->node_count++;
        uint32_t *w = tree->words + word;
        w[0] = planes[0], w[1] = planes[1], w[2] = planes[2], w[3] = meta, w[4] = base | nonempty << 28;
        w[5] = first | (axes[0] | axes[1] << 2 | axes[2] << 4) << 24 | leaf_child << 30;
        int dst = top;
        for (int k = 0; k < 4; k++) {
            if (le[k] - lb[k] <= 2)
                continue;
            if (dst != top + k)
                stack[dst] = lane[k];
            stack[dst++].word = base + (q_kd_lane_ref(meta, (uint32_t)k) >> 2);
        }
        top = dst;
    }
    /* Give back the unused tail of the word array. */
    uint32_t *fit = q_realloc(tree->words, cap * sizeof(uint32_t), tree->word_count * sizeof(uint32_t));
    if (fit)
        tree->words = fit;
    else
        tree->word_count = (uint32_t)cap; /* keep the size the block really has */
    return true;
}

/* Copies the indices of the triangles perm names, in that order, to dst
 * (16- or 32-bit like the mesh's). */
static void gather_indices(const q_kd_mesh *mesh, const uint32_t *perm, void *dst)
{
    uint32_t n = mesh->triangle_count;
    if (mesh->indices16) {
        uint16_t *d = dst;
        for (uint32_t t = 0; t < n; t++)
            memcpy(d + 3 * (size_t)t, mesh->indices16 + 3 * (size_t)perm[t], 3 * sizeof *d);
    } else {
        uint32_t *d = dst;
        for (uint32_t t = 0; t < n; t++)
            memcpy(d + 3 * (size_t)t, mesh->indices32 + 3 * (size_t)perm[t], 3 * sizeof *d);
    }
}

static size_t index_bytes(const q_kd_mesh *mesh)
{
    return (size_t)mesh->triangle_count * 3 * (mesh->indices16 ? sizeof(uint16_t) : sizeof(uint32_t));
}

bool q_kdtree_build(q_kdtree *tree, const q_kd_mesh *mesh)
{
    memset(tree, 0, sizeof *tree);
    uint32_t n = mesh->triangle_count;
    if (n == 0)
        return true;
    if (n > Q_KD_MAX_TRIANGLES)
        return false;
    size_t scratch = build_scratch(n);
    unsigned char *mem = q_alloc(scratch);
    tree->order = q_alloc((size_t)n * sizeof(uint32_t));
    tree->own_indices = q_alloc(index_bytes(mesh));
    tree->triangle_count = n;
    tree->index_size = mesh->indices16 ? 2 : 4;
    if (!mem || !tree->order || !tree->own_indices || !build_tree(tree, mesh, mem, tree->order)) {
        q_free(mem, scratch);
        q_kdtree_free(tree);
        return false;
    }
    q_free(mem, scratch);
    gather_indices(mesh, tree->order, tree->own_indices);
    return true;
}

bool q_kdtree_build_sorted(q_kdtree *tree, const q_kd_mesh *mesh, uint16_t *indices16, uint32_t *indices32,
                           uint32_t *order_out)
{
    memset(tree, 0, sizeof *tree);
    uint32_t n = mesh->triangle_count;
    if (indices16 != mesh->indices16 || indices32 != mesh->indices32 || n > Q_KD_MAX_TRIANGLES)
        return false;
    if (n == 0)
        return true;
    /* The scratch block holds the order, then (its midpoints and boxes no
     * longer needed) the reordered indices. */
    size_t scratch = build_scratch(n) + (size_t)n * sizeof(uint32_t);
    unsigned char *mem = q_alloc(scratch);
    if (!mem)
        return false;
    uint32_t *perm = (uint32_t *)(mem + build_scratch(n));
    if (!build_tree(tree, mesh, mem, perm)) {
        q_free(mem, scratch);
        q_kdtree_free(tree);
        return false;
    }
    gather_indices(mesh, perm, mem); /* 3n indices fit in the 11n words before perm */
    memcpy(indices16 ? (void *)indices16 : (void *)indices32, mem, index_bytes(mesh));
    if (order_out)
        memcpy(order_out, perm, (size_t)n * sizeof(uint32_t));
    q_free(mem, scratch);
    return true;
}

void q_kdtree_free(q_kdtree *tree)
{
    q_free(tree->words, tree->word_count * sizeof(uint32_t));
    q_free(tree->order, (size_t)tree->triangle_count * sizeof(uint32_t));
    q_free(tree->own_indices, (size_t)tree->triangle_count * 3 * tree->index_size);
    memset(tree, 0, sizeof *tree);
}

size_t q_kdtree_bytes(const q_kdtree *tree)
{
    size_t own = tree->order ? (size_t)tree->triangle_count * (sizeof(uint32_t) + 3 * tree->index_size) : 0;
    return tree->word_count * sizeof(uint32_t) + sizeof *tree + own;
}

/* ---- queries ---- */

/* The mesh a query reads: the caller's for a sorted build (its indices are
 * in leaf order), else a copy pointing at the tree's own reordered indices
 * (q_kdtree_build; triangle numbers are mapped back when reported). */
static inline const q_kd_mesh *indexed_mesh(const q_kdtree *tree, const q_kd_mesh *mesh, int fmt, q_kd_mesh *own)
{
    if (!tree->order)
        return mesh;
    *own = *mesh;
    if (fmt & 1)
        own->indices32 = tree->own_indices;
    else
        own->indices16 = tree->own_indices;
    return own;
}

/* Clips the segment [0, tmax] to the tree bounds (slab test), with the
 * inverse direction the traversal computes anyway. */
static inline __attribute__((always_inline)) bool clip_to_bounds(const q_kdtree *tree, const float o[3],
                                                                 const float d[3], const float inv[3], float tmax,
                                                                 float *t0, float *t1)
{
    float lo = 0, hi = tmax;
    for (int a = 0; a < 3; a++) {
        float mn = tree->min[a] - Q_KD_EPSILON, mx = tree->max[a] + Q_KD_EPSILON;
        if (fabsf(d[a]) < 1e-30f) {
            if (o[a] < mn || o[a] > mx)
                return false;
            continue;
        }
        float ta = (mn - o[a]) * inv[a], tb = (mx - o[a]) * inv[a];
        lo = MAXF(lo, MINF(ta, tb));
        hi = MINF(hi, MAXF(ta, tb));
    }
    *t0 = lo;
    *t1 = hi;
    return lo <= hi;
}

/* Lanes in visiting order, by the signs of the direction on the axes of a
 * quad node's top branch, left child and right child (sx = 4 s0 + 2 sl + sr,
 * 1 for negative): the near child's lanes first, near side first; lane k
 * of the order in bits 2k. The near child is the right one when s0 is set,
 * a child's near side its right one when its sign is set. */
static const unsigned char visit_order[8] = {228, 180, 225, 177, 78, 75, 30, 27};
/* The first lane in visiting order among the entered lanes m (a 4-bit
 * mask), indexed sx << 4 | m: l | 4 | 8 l << 3 (the lane, a bit that is
 * always set, and the shift of its field in the meta word), 0 when no lane
 * is entered. */
static const unsigned char first_lane[128] = {
    0, 4, 69, 4, 134, 4, 69, 4, 199, 4, 69, 4, 134, 4, 69, 4,
    0, 4, 69, 4, 134, 4, 69, 4, 199, 4, 69, 4, 199, 4, 69, 4,
    0, 4, 69, 69, 134, 4, 69, 69, 199, 4, 69, 69, 134, 4, 69, 69,
    0, 4, 69, 69, 134, 4, 69, 69, 199, 4, 69, 69, 199, 4, 69, 69,
    0, 4, 69, 4, 134, 134, 134, 134, 199, 199, 199, 199, 134, 134, 134, 134,
    0, 4, 69, 4, 134, 134, 134, 134, 199, 199, 199, 199, 199, 199, 199, 199,
    0, 4, 69, 69, 134, 134, 134, 134, 199, 199, 199, 199, 134, 134, 134, 134,
    0, 4, 69, 69, 134, 134, 134, 134, 199, 199, 199, 199, 199, 199, 199, 199,
};

typedef struct seg {
    uint32_t ref; /* word << 2 | lane kind */
    float tmin, tmax;
} seg;

enum { MODE_CLOSEST, MODE_ANY, MODE_ALL };

/* Per ray and axis, the terms that turn a plane number q into bounds on t:
 * a lane's segment is [max of q * ls + lo over its two planes, min of
 * q * us + uo], clipped to its parent's. A plane bounds t from above or from
 * below depending on its side and the sign of the direction; the other bound
 * gets scale 0 and offset -inf or +inf. Four lanes per vector: [left side,
 * left side, right side, right side] for the top branch's planes;
 * grandchildren's lanes take entries 0 and 2 of their child's axis. */
typedef struct ray_terms {
    float us[3][4], uo[3][4], ls[3][4], lo[3][4];
} ray_terms;

/* Shared traversal: visits leaves whose subspace the segment crosses, a quad
 * node's four lanes at once, near lanes first (the order follows from the
 * signs of the direction on the three axes: no sort). For closest hits the
 * segment is cut at the best hit so far, and pending segments that start
 * beyond it are dropped.
 *
 * A zero component of the direction gives an infinite inverse, so a crossing
 * is -inf or +inf (the lane holds none or all of the segment) or NaN (0 * inf,
 * or inf - inf, when the sign of the crossing is not known); the mins and
 * maxes below are written so that a NaN leaves the segment whole, which is
 * always safe. The SSE2 and scalar paths compute the same values in the same
 * order (MINPS and a < b ? a : b agree on NaN). */
static inline __attribute__((always_inline)) void traverse_impl(const q_kdtree *tree, const q_kd_mesh *mesh,
                                                                const int fmt, const int mode, const float o[3],
                                                                const float d[3], float tmax, float *best_t,
                                                                uint32_t *best_tri, q_kd_hit_fn fn, void *ud)
{
    if (tree->word_count == 0)
        return;
    q_kd_mesh own;
    mesh = indexed_mesh(tree, mesh, fmt, &own);
    const void *index_base = (fmt & 1) ? (const void *)mesh->indices32 : (const void *)mesh->indices16;
    const uint32_t index_size = (fmt & 1) ? 12u : 6u; /* bytes per triangle */
    /* Per axis: where the ray crosses plane q of the grid is
     * t = q * scale + offset, the offsets holding the plane widening (the
     * left side's plane moves up, the right side's down). Besides
     * Q_KD_EPSILON the widening covers the rounding of this form (three
     * roundings of terms up to the grid's extent plus the origin's distance
     * from it: 2^-21 of their sum is ample). */
    float inv[3];
    uint32_t sgn = 0;
    ray_terms rt;
    for (int a = 0; a < 3; a++) {
        inv[a] = 1.0f / d[a];
        uint32_t neg = signbit(inv[a]) ? 1u : 0u;
        sgn |= neg << a;
        float qb = tree->qbase[a], qs = tree->qstep[a];
        float widen = Q_KD_EPSILON + ((float)QMAX * qs + fabsf(qb - o[a])) * (1.0f / (1 << 21));
        /* The inverse capped so that no term below overflows: with an
         * infinite one (a direction parallel to the axis) q * scale + offset
         * was inf - inf = NaN for almost every plane, which keeps both
         * sides, and such a ray visited the whole tree (0.005 Mrays/s on
         * bench/gridsort's downward rays). Capped, a plane the origin is
         * not within the widening of is crossed at |t| >= 2^-21 * 2^126,
         * beyond any segment, on the side the infinite inverse gives. */
        float reach = (float)QMAX * qs + fabsf(qb - o[a]) + widen + 1.0f, ia = inv[a];
        if (fabsf(ia) * reach > 0x1p125f) /* rare (a branch: the division cost coherent rays 4%) */
            ia = ia > 0 ? 0x1p125f / reach : -0x1p125f / reach;
        float scale = qs * ia;
        float off_left = (qb + widen - o[a]) * ia, off_right = (qb - widen - o[a]) * ia;
        /* Positive direction: a left side's plane bounds t from above, a
         * right side's from below; negative: the other way round. */
#if defined(__SSE2__) && !defined(Q_KD_SCALAR)
        /* As the loop below, in whole vectors (16-byte stores, which the
         * quad nodes' 16-byte loads of these terms can forward from). */
        __m128 up = _mm_castsi128_ps(_mm_xor_si128(_mm_setr_epi32(-1, -1, 0, 0), _mm_set1_epi32(-(int)neg)));
        __m128 sv = _mm_set1_ps(scale), ov = _mm_setr_ps(off_left, off_left, off_right, off_right);
        _mm_storeu_ps(rt.us[a], _mm_and_ps(up, sv));
        _mm_storeu_ps(rt.uo[a], _mm_or_ps(_mm_and_ps(up, ov), _mm_andnot_ps(up, _mm_set1_ps(INFINITY))));
        _mm_storeu_ps(rt.ls[a], _mm_andnot_ps(up, sv));
        _mm_storeu_ps(rt.lo[a], _mm_or_ps(_mm_andnot_ps(up, ov), _mm_and_ps(up, _mm_set1_ps(-INFINITY))));
#else
        for (int k = 0; k < 4; k++) {
            int right = k >> 1, upper = right ^ (int)!neg;
            float off = right ? off_right : off_left;
            rt.us[a][k] = upper ? scale : 0.0f;
            rt.uo[a][k] = upper ? off : INFINITY;
            rt.ls[a][k] = upper ? 0.0f : scale;
            rt.lo[a][k] = upper ? -INFINITY : off;
        }
#endif
    }
    float t0, t1;
    if (!clip_to_bounds(tree, o, d, inv, tmax, &t0, &t1))
        return;
    const uint32_t *words = tree->words;
    float limit = tmax; /* closest: the best hit so far */
    uint32_t best = UINT32_MAX;
    seg stack[3 * (Q_KD_MAX_DEPTH / 2) + 8];
    int top = 0;
    uint32_t ref = Q_KD_LANE_QUAD, adj = 0; /* the root quad node */
    float smin = t0, smax = t1;
    for (;;) {
        uint32_t kind = ref & 3u; /* ref: a quad node's byte offset, or a leaf's first triangle * 4, | kind */
        if (kind == Q_KD_LANE_QUAD) {
            const uint32_t *w = (const uint32_t *)((const unsigned char *)words + (ref & ~3u));
            uint32_t meta = w[3], base4 = (w[4] & Q_KD_BASE_MASK) << 2, nonempty = w[4] >> 28;
            uint32_t w5 = w[5], tbase4 = (w5 & Q_KD_TRI_MASK) << 2;
            __builtin_prefetch(words + (base4 >> 2));
            __builtin_prefetch(words + (base4 >> 2) + 16);
            /* the leaf lanes' indices: a run of up to 8 triangles */
            __builtin_prefetch((const char *)index_base + (size_t)(tbase4 >> 2) * index_size);
            uint32_t a0 = (w5 >> 24) & 3u, al = (w5 >> 26) & 3u, ar = (w5 >> 28) & 3u;
            float lo_t[4], hi_t[4];
#if defined(__SSE2__) && !defined(Q_KD_SCALAR)
            __m128i qv = _mm_loadu_si128((const __m128i *)w), zero = _mm_setzero_si128();
            __m128i q01 = _mm_unpacklo_epi16(qv, zero);                      /* top q0 q1, left q0 q1 */
            __m128 q1 = _mm_cvtepi32_ps(_mm_shuffle_epi32(q01, _MM_SHUFFLE(1, 1, 0, 0)));
            __m128 q2 = _mm_cvtepi32_ps(_mm_unpacklo_epi16(_mm_srli_si128(qv, 4), zero));
#define GRAND(f) _mm_shuffle_ps(_mm_loadu_ps(rt.f[al]), _mm_loadu_ps(rt.f[ar]), _MM_SHUFFLE(2, 0, 2, 0))
            __m128 h1 = _mm_add_ps(_mm_mul_ps(q1, _mm_loadu_ps(rt.us[a0])), _mm_loadu_ps(rt.uo[a0]));
            __m128 l1 = _mm_add_ps(_mm_mul_ps(q1, _mm_loadu_ps(rt.ls[a0])), _mm_loadu_ps(rt.lo[a0]));
            __m128 h2 = _mm_add_ps(_mm_mul_ps(q2, GRAND(us)), GRAND(uo));
            __m128 l2 = _mm_add_ps(_mm_mul_ps(q2, GRAND(ls)), GRAND(lo));
#undef GRAND
            __m128 hi = _mm_min_ps(h1, _mm_min_ps(h2, _mm_set1_ps(smax)));
            __m128 lo = _mm_max_ps(l1, _mm_max_ps(l2, _mm_set1_ps(smin)));
            uint32_t m = (uint32_t)_mm_movemask_ps(_mm_cmple_ps(lo, hi)) & nonempty;
            _mm_storeu_ps(lo_t, lo);
            _mm_storeu_ps(hi_t, hi);
#else
            uint32_t m = 0;
            for (int k = 0; k < 4; k++) {
                float q1 = (float)((w[0] >> (16 * (k >> 1))) & 0xffffu);
                float q2 = (float)((w[1 + (k >> 1)] >> (16 * (k & 1))) & 0xffffu);
                uint32_t ac = k >> 1 ? ar : al;
                int kc = 2 * (k & 1);
                float h1 = q1 * rt.us[a0][k] + rt.uo[a0][k], l1 = q1 * rt.ls[a0][k] + rt.lo[a0][k];
                float h2 = q2 * rt.us[ac][kc] + rt.uo[ac][kc], l2 = q2 * rt.ls[ac][kc] + rt.lo[ac][kc];
                float h = h2 < smax ? h2 : smax, l = l2 > smin ? l2 : smin;
                hi_t[k] = h1 < h ? h1 : h;
                lo_t[k] = l1 > l ? l1 : l;
                m |= (uint32_t)(lo_t[k] <= hi_t[k]) << k;
            }
            m &= nonempty;
#endif
            /* The first lane entered is taken next; the others are pushed
             * far to near, each written and kept only when entered. No
             * branch on the signs: a direction's sign on a node's axis is a
             * coin toss for the predictor. */
            uint32_t sx = ((sgn >> a0) & 1u) << 2 | ((sgn >> al) & 1u) << 1 | ((sgn >> ar) & 1u);
            uint32_t first = first_lane[sx << 4 | m];
            if (first) {
                uint32_t l = first & 3u, order = visit_order[sx], rest = m & ~(1u << l);
                uint32_t n1 = (order >> 2) & 3u, n2 = (order >> 4) & 3u, n3 = order >> 6;
                /* A lane's ref: its field from the lanes' storage (a quad
                 * node) or from the leaf lanes' first triangle. The lane
                 * taken next gets the storage's base whatever its kind, and
                 * a leaf adds adj (the two bases' difference, known early):
                 * no select between the bases on the chain from one quad
                 * step to the next (that select cost 2% on short rays). */
#define LANE_REF(f) ((f) + (((f) & 3u) == Q_KD_LANE_QUAD ? base4 : tbase4))
                ref = base4 + ((meta >> (first >> 3)) & 255u);
                adj = tbase4 - base4;
                uint32_t f3 = q_kd_lane_ref(meta, n3), f2 = q_kd_lane_ref(meta, n2), f1 = q_kd_lane_ref(meta, n1);
                stack[top] = (seg){LANE_REF(f3), lo_t[n3], hi_t[n3]};
                top += (int)((rest >> n3) & 1u);
                stack[top] = (seg){LANE_REF(f2), lo_t[n2], hi_t[n2]};
                top += (int)((rest >> n2) & 1u);
                stack[top] = (seg){LANE_REF(f1), lo_t[n1], hi_t[n1]};
                top += (int)((rest >> n1) & 1u);
#undef LANE_REF
                smin = lo_t[l];
                smax = hi_t[l];
                continue;
            }
        } else {
            uint32_t tri0 = (ref + adj) >> 2, count = kind, tris[2] = {tri0, tri0 + 1}; /* a run of the mesh */
            float vv[2][9]; /* both triangles (a leaf holds at most 2) loaded before either is
                               tested: the two fetch chains overlap (measured 7% faster) */
            for (uint32_t k = 0; k < count; k++)
                load_triangle(mesh, fmt, tris[k], vv[k]);
            for (uint32_t k = 0; k < count; k++) {
                uint32_t tri = tris[k];
                const float *v = vv[k];
                float t = ray_triangle(o, d, v, v + 3, v + 6);
                if (t < 0 || t > limit)
                    continue;
                if (mode == MODE_CLOSEST) {
                    if (t < limit || tri < best) {
                        limit = t;
                        best = tri;
                    }
                } else if (!fn(ud, t, tree->order ? tree->order[tri] : tri)) {
                    return;
                }
            }
        }
        for (;;) { /* next pending segment */
            if (top == 0)
                goto done;
            top--;
            if (mode != MODE_CLOSEST || stack[top].tmin <= limit)
                break;
        }
        ref = stack[top].ref;
        adj = 0;
        smin = stack[top].tmin;
        smax = stack[top].tmax;
        if (mode == MODE_CLOSEST && smax > limit)
            smax = limit;
    }
done:
    if (mode == MODE_CLOSEST) {
        *best_t = limit;
        *best_tri = best != UINT32_MAX && tree->order ? tree->order[best] : best;
    }
}

#define TRAVERSE_FOR(name, mode)                                                                                     \
    static void name(const q_kdtree *tree, const q_kd_mesh *mesh, const float o[3], const float d[3], float tmax,    \
                     float *best_t, uint32_t *best_tri, q_kd_hit_fn fn, void *ud)                                    \
    {                                                                                                                \
        switch (mesh_format(mesh)) {                                                                                 \
        case FMT_F32_I16:                                                                                            \
            traverse_impl(tree, mesh, FMT_F32_I16, mode, o, d, tmax, best_t, best_tri, fn, ud);                      \
            break;                                                                                                   \
        case FMT_F32_I32:                                                                                            \
            traverse_impl(tree, mesh, FMT_F32_I32, mode, o, d, tmax, best_t, best_tri, fn, ud);                      \
            break;                                                                                                   \
        case FMT_Q16_I16:                                                                                            \
            traverse_impl(tree, mesh, FMT_Q16_I16, mode, o, d, tmax, best_t, best_tri, fn, ud);                      \
            break;                                                                                                   \
        default:                                                                                                     \
            traverse_impl(tree, mesh, FMT_Q16_I32, mode, o, d, tmax, best_t, best_tri, fn, ud);                      \
            break;                                                                                                   \
        }                                                                                                            \
    }
TRAVERSE_FOR(traverse_closest, MODE_CLOSEST)
TRAVERSE_FOR(traverse_any, MODE_ANY)
TRAVERSE_FOR(traverse_all, MODE_ALL)

bool q_kdtree_raycast(const q_kdtree *tree, const q_kd_mesh *mesh, const float origin[3], const float dir[3],
                      float tmax, float *t_out, uint32_t *triangle_out)
{
    float best = INFINITY;
    uint32_t tri = UINT32_MAX;
    traverse_closest(tree, mesh, origin, dir, tmax, &best, &tri, NULL, NULL);
    if (tri == UINT32_MAX)
        return false;
    *t_out = best;
    *triangle_out = tri;
    return true;
}

static bool stop_at_first(void *ud, float t, uint32_t triangle)
{
    (void)t;
    (void)triangle;
    *(bool *)ud = true;
    return false;
}

bool q_kdtree_raycast_any(const q_kdtree *tree, const q_kd_mesh *mesh, const float origin[3], const float dir[3],
                          float tmax)
{
    bool hit = false;
    traverse_any(tree, mesh, origin, dir, tmax, NULL, NULL, stop_at_first, &hit);
    return hit;
}

void q_kdtree_raycast_all(const q_kdtree *tree, const q_kd_mesh *mesh, const float origin[3], const float dir[3],
                          float tmax, q_kd_hit_fn fn, void *ud)
{
    traverse_all(tree, mesh, origin, dir, tmax, NULL, NULL, fn, ud);
}

/* AABB query, compiled per mesh layout. The box's sides become plane
 * numbers once per query (a right side is entered when its plane number is
 * at most qhi, a left side when its plane number is at least qlo), so quad
 * nodes compare integers; exact, as the grid's planes increase with their
 * number. */
static inline __attribute__((always_inline)) size_t query_aabb_impl(const q_kdtree *tree, const q_kd_mesh *mesh,
                                                                    const int fmt, const float min[3],
                                                                    const float max[3], uint32_t *out, size_t cap)
{
    uint32_t qlo[4], qhi[4];
    float inv_step[3] = {1.0f / tree->qstep[0], 1.0f / tree->qstep[1], 1.0f / tree->qstep[2]};
    for (int a = 0; a < 3; a++) {
        qlo[a] = plane_up(tree, inv_step, a, min[a]);    /* left side's plane >= min[a] */
        qhi[a] = plane_down(tree, inv_step, a, max[a]); /* right side's plane <= max[a] (max[a] >= qbase[a] here) */
    }
    qlo[3] = qhi[3] = 0;
    uint32_t stack[3 * (Q_KD_MAX_DEPTH / 2) + 8];
    int top = 0;
    size_t found = 0;
    const uint32_t *words = tree->words;
    q_kd_mesh own;
    mesh = indexed_mesh(tree, mesh, fmt, &own);
    uint32_t ref = Q_KD_LANE_QUAD; /* the root quad node */
    for (;;) {
        uint32_t kind = ref & 3u;
        if (kind == Q_KD_LANE_QUAD) {
            const uint32_t *w = words + (ref >> 2);
            uint32_t meta = w[3], base = w[4] & Q_KD_BASE_MASK, base4 = base << 2, w5 = w[5];
            uint32_t tbase4 = (w5 & Q_KD_TRI_MASK) << 2;
            __builtin_prefetch(words + base);
            __builtin_prefetch(words + base + 16);
            uint32_t a0 = (w5 >> 24) & 3u, al = (w5 >> 26) & 3u, ar = (w5 >> 28) & 3u;
            uint32_t top_l = (w[0] & 0xffffu) >= qlo[a0], top_r = (w[0] >> 16) <= qhi[a0];
            uint32_t m = (top_l & ((w[1] & 0xffffu) >= qlo[al])) | (top_l & ((w[1] >> 16) <= qhi[al])) << 1 |
                         (top_r & ((w[2] & 0xffffu) >= qlo[ar])) << 2 | (top_r & ((w[2] >> 16) <= qhi[ar])) << 3;
            m &= w[4] >> 28;
            if (m) { /* the first lane next, the others pushed (each written, kept when entered) */
                uint32_t rest = m & (m - 1u);
#define LANE_REF(f) ((f) + (((f) & 3u) == Q_KD_LANE_QUAD ? base4 : tbase4))
                uint32_t f0 = q_kd_lane_ref(meta, (uint32_t)__builtin_ctz(m));
                ref = LANE_REF(f0);
                for (uint32_t k = 3; k > 0; k--) {
                    uint32_t f = q_kd_lane_ref(meta, k);
                    stack[top] = LANE_REF(f);
                    top += (int)((rest >> k) & 1u);
                }
#undef LANE_REF
                continue;
            }
        } else {
            for (uint32_t k = 0; k < kind; k++) {
                uint32_t tri = (ref >> 2) + k;
                float v[9];
                load_triangle(mesh, fmt, tri, v);
                bool overlap = true;
                for (int a = 0; a < 3; a++)
                    overlap &= MAXF(v[a], MAXF(v[3 + a], v[6 + a])) >= min[a] &&
                               MINF(v[a], MINF(v[3 + a], v[6 + a])) <= max[a];
                if (overlap) {
                    if (found < cap)
                        out[found] = tree->order ? tree->order[tri] : tri;
                    found++;
                }
            }
        }
        if (top == 0)
            break;
        ref = stack[--top];
    }
    return found;
}

size_t q_kdtree_query_aabb(const q_kdtree *tree, const q_kd_mesh *mesh, const float min[3], const float max[3],
                           uint32_t *out, size_t cap)
{
    if (tree->word_count == 0)
        return 0;
    for (int a = 0; a < 3; a++)
        if (!(min[a] <= tree->max[a] && max[a] >= tree->min[a]))
            return 0;
    switch (mesh_format(mesh)) {
    case FMT_F32_I16:
        return query_aabb_impl(tree, mesh, FMT_F32_I16, min, max, out, cap);
    case FMT_F32_I32:
        return query_aabb_impl(tree, mesh, FMT_F32_I32, min, max, out, cap);
    case FMT_Q16_I16:
        return query_aabb_impl(tree, mesh, FMT_Q16_I16, min, max, out, cap);
    default:
        return query_aabb_impl(tree, mesh, FMT_Q16_I32, min, max, out, cap);
    }
}
