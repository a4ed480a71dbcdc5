/* Loose kD tree: see kdtree.h. Built with an explicit work stack; queries use
 * fixed-size stacks bounded by Q_KD_MAX_DEPTH. */
#include "physics/kdtree.h"

#include "core/alloc.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define LEAF 3u

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
    uint32_t node, begin, end, depth;
    float rlo[3], rhi[3]; /* the node's region as traversal recovers it */
    bool clipped;         /* the parent was a clip node */
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
    uint32_t count = end - begin, bn[SAH_BINS] = {0};
    float bmax[SAH_BINS], bmin[SAH_BINS];
    for (int k = 0; k < SAH_BINS; k++)
        bmax[k] = -INFINITY, bmin[k] = INFINITY;
    float base = lo[axis], scale = (float)SAH_BINS / (hi[axis] - lo[axis]);
    for (uint32_t i = begin; i < end; i++) {
        uint32_t t = tris[i];
        int k = (int)((mid[3 * t + axis] - base) * scale);
        k = k < 0 ? 0 : k > SAH_BINS - 1 ? SAH_BINS - 1 : k;
        aux[i - begin] = (uint32_t)k; /* for the partition */
        bn[k]++;
        bmax[k] = MAXF(bmax[k], box[6 * t + 3 + axis]);
        bmin[k] = MINF(bmin[k], box[6 * t + axis]);
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

static void make_leaf(q_kdtree *tree, const builder *b, uint32_t node, uint32_t begin, uint32_t count)
{
    q_kd_node *leaf = &tree->nodes[node];
    leaf->u.triangle1 = count == 2 ? b->tris[begin + 1] : 0;
    leaf->axis_index = LEAF | count << 2 | (count ? b->tris[begin] : 0) << 4;
}

/* Planes on the tree's 16-bit grid (kdtree.h, q_kdtree_plane), decoded
 * exactly as traversal decodes them. Build rounds them outwards and checks
 * the decoded value, so that a plane never cuts into its child's triangles. */
#define QMAX 65535u
static inline float plane_at(const q_kdtree *t, int a, uint32_t q)
{
    return t->qbase[a] + (float)q * t->qstep[a];
}

/* The estimates below multiply by 1 / qstep (inv_step) and truncate; the
 * loops after them make the answer exact (one or two steps at most). */
static uint16_t plane_up(const q_kdtree *t, const float inv_step[3], int a, float x) /* the lowest plane >= x */
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

static uint16_t plane_down(const q_kdtree *t, const float inv_step[3], int a, float x) /* the highest plane <= x */
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

bool q_kdtree_build(q_kdtree *tree, const q_kd_mesh *mesh)
{
    memset(tree, 0, sizeof *tree);
    uint32_t n = mesh->triangle_count;
    if (n == 0)
        return true;
    if (n > Q_KD_MAX_TRIANGLES)
        return false;
    /* One scratch block: triangle order, midpoints and boxes. The vertices
     * are decoded once here; the build then reads only boxes and midpoints. */
    size_t scratch = (size_t)n * (2 * sizeof(uint32_t) + 9 * sizeof(float));
    unsigned char *mem = q_alloc(scratch);
    uint32_t cap = 3 * n + 16; /* 2n - 1 for a binary tree, plus clip nodes */
    tree->nodes = q_alloc(cap * sizeof(q_kd_node));
    if (!mem || !tree->nodes) {
        q_free(mem, scratch);
        q_free(tree->nodes, cap * sizeof(q_kd_node));
        tree->nodes = NULL;
        return false;
    }
    builder b = {mesh, (uint32_t *)mem, (uint32_t *)mem + n, (float *)(mem + 2 * n * sizeof(uint32_t)), NULL};
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

    /* The left child is built next without a trip through the stack, and
     * children of at most 2 triangles become leaves at once: pushing and
     * popping every item went through memory (a quarter of the build's time
     * on 8^3 chunks). */
    build_item stack[Q_KD_MAX_DEPTH + 2];
    int top = 0;
    tree->node_count = 1;
    build_item it = {0, 0, n, 0, {0}, {0}, true};
    memcpy(it.rlo, tree->min, sizeof tree->min);
    memcpy(it.rhi, tree->max, sizeof tree->max);
    if (n <= 2) {
        make_leaf(tree, &b, 0, 0, n);
        top = -1; /* nothing to split */
    }
    while (top >= 0) {
        q_kd_node *node = &tree->nodes[it.node];
        uint32_t count = it.end - it.begin;
        /* Bounds and midpoint sums in scalars (kept in registers: as arrays
         * indexed in a loop they went through memory, the build's hottest
         * loop). */
        float lx = INFINITY, ly = INFINITY, lz = INFINITY, hx = -INFINITY, hy = -INFINITY, hz = -INFINITY;
        for (uint32_t i = it.begin; i < it.end; i++) {
            const float *box = b.box + 6 * (size_t)b.tris[i];
            lx = MINF(lx, box[0]), ly = MINF(ly, box[1]), lz = MINF(lz, box[2]);
            hx = MAXF(hx, box[3]), hy = MAXF(hy, box[4]), hz = MAXF(hz, box[5]);
        }
        float lo[3] = {lx, ly, lz}, hi[3] = {hx, hy, hz};
        if (!it.clipped && count >= CLIP_MIN) {
            int ca = -1, side = 0;
            float best = 0;
            for (int a = 0; a < 3; a++) {
                float extent = it.rhi[a] - it.rlo[a];
                float above = it.rhi[a] - hi[a], below = lo[a] - it.rlo[a];
                if (above > CLIP_EMPTY * extent && above > best)
                    ca = a, side = 1, best = above;
                if (below > CLIP_EMPTY * extent && below > best)
                    ca = a, side = 0, best = below;
            }
            if (ca >= 0) {
                uint32_t child = tree->node_count;
                tree->node_count += 2;
                make_leaf(tree, &b, side ? child + 1 : child, 0, 0); /* the empty side */
                if (side) { /* left holds all, right (empty) lies above everything */
                    node->u.planes[0] = plane_up(tree, inv_step, ca, hi[ca]);
                    node->u.planes[1] = (uint16_t)QMAX;
                    it.rhi[ca] = plane_at(tree, ca, node->u.planes[0]);
                } else { /* right holds all, left (empty) lies below everything */
                    node->u.planes[0] = 0;
                    node->u.planes[1] = plane_down(tree, inv_step, ca, lo[ca]);
                    it.rlo[ca] = plane_at(tree, ca, node->u.planes[1]);
                }
                node->axis_index = (uint32_t)ca | child << 2;
                /* Split the full child right away: same triangles, so the
                 * bounds just computed still hold. */
                it.node = side ? child : child + 1;
                it.depth++;
                it.clipped = true;
                if (it.depth > tree->depth)
                    tree->depth = it.depth;
                node = &tree->nodes[it.node];
            }
        }
        int axis = 0;
        for (int a = 1; a < 3; a++)
            if (hi[a] - lo[a] > hi[axis] - lo[axis])
                axis = a;
        uint32_t i;
        float split_lo = -INFINITY, split_hi = INFINITY;
        if (count <= SAH_MIN || !(hi[axis] > lo[axis]) ||
            !sah_split(&b, it.begin, it.end, axis, lo, hi, &i, &split_lo, &split_hi)) {
            /* Small or flat nodes, or no balanced bin boundary: the mean of
             * the midpoints, with the median when a side gets under 25%. */
            float sum = 0; /* only here: nodes of more than SAH_MIN triangles rarely need it */
            for (uint32_t k = it.begin; k < it.end; k++)
                sum += b.mid[3 * (size_t)b.tris[k] + axis];
            float split = sum / (float)count;
            uint32_t nl = 0, nr = 0;
            for (uint32_t k = it.begin; k < it.end; k++) { /* midpoints below the split go left */
                uint32_t t = b.tris[k], left = b.mid[3 * t + axis] < split;
                b.tris[it.begin + nl] = t;
                b.aux[nr] = t;
                nl += left;
                nr += 1 - left;
            }
            memcpy(b.tris + it.begin + nl, b.aux, nr * sizeof *b.aux);
            i = it.begin + nl;
            uint32_t left = i - it.begin;
            if (left * 4 < count || (count - left) * 4 < count) {
                /* Too skewed: median split in midpoint order. */
                uint32_t half = it.begin + count / 2;
                select_nth(&b, it.begin, it.end, half, axis);
                i = half;
            }
            if (count <= 8 && ((i - it.begin) & 1u)) {
                /* Small nodes: an even left side packs both sides into fewer
                 * leaves (4 triangles: 2 + 2 is 3 nodes, 1 + 3 is 5). */
                uint32_t k = i - it.begin < count - (i - it.begin) ? i + 1 : i - 1;
                select_nth(&b, it.begin, it.end, k, axis);
                i = k;
            }
            for (uint32_t k = it.begin; k < i; k++)
                split_lo = MAXF(split_lo, b.box[6 * (size_t)b.tris[k] + 3 + axis]);
            for (uint32_t k = i; k < it.end; k++)
                split_hi = MINF(split_hi, b.box[6 * (size_t)b.tris[k] + axis]);
        }
        uint32_t child = tree->node_count;
        tree->node_count += 2;
        node->u.planes[0] = plane_up(tree, inv_step, axis, split_lo);
        node->u.planes[1] = plane_down(tree, inv_step, axis, split_hi);
        node->axis_index = (uint32_t)axis | child << 2;
        split_lo = plane_at(tree, axis, node->u.planes[0]);
        split_hi = plane_at(tree, axis, node->u.planes[1]);
        /* Depth stays under Q_KD_MAX_DEPTH: every split leaves at most 3/4 of
         * the triangles on a side, (4/3)^64 > 2^24, and clip nodes at most
         * double the depth. */
        uint32_t depth = it.depth + 1;
        if (depth > tree->depth)
            tree->depth = depth;
        if (it.end - i <= 2) {
            make_leaf(tree, &b, child + 1, i, it.end - i);
        } else {
            build_item *hi_item = &stack[top++];
            *hi_item = it;
            hi_item->node = child + 1;
            hi_item->begin = i;
            hi_item->depth = depth;
            hi_item->clipped = false;
            hi_item->rlo[axis] = MAXF(it.rlo[axis], split_hi);
        }
        if (i - it.begin <= 2) {
            make_leaf(tree, &b, child, it.begin, i - it.begin);
            if (--top >= 0)
                it = stack[top];
        } else {
            it.node = child;
            it.end = i;
            it.depth = depth;
            it.clipped = false;
            it.rhi[axis] = MINF(it.rhi[axis], split_lo);
        }
    }
    q_free(mem, scratch);
    /* Give back the unused tail of the node array. */
    q_kd_node *fit = q_realloc(tree->nodes, cap * sizeof(q_kd_node), tree->node_count * sizeof(q_kd_node));
    if (fit)
        tree->nodes = fit;
    else
        tree->node_count = cap; /* keep the size the block really has */
    return true;
}

void q_kdtree_free(q_kdtree *tree)
{
    q_free(tree->nodes, tree->node_count * sizeof(q_kd_node));
    memset(tree, 0, sizeof *tree);
}

size_t q_kdtree_bytes(const q_kdtree *tree)
{
    return tree->node_count * sizeof(q_kd_node) + sizeof *tree;
}

/* ---- queries ---- */

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

typedef struct seg {
    uint32_t node;
    float tmin, tmax;
} seg;

enum { MODE_CLOSEST, MODE_ANY, MODE_ALL };

/* Shared traversal: visits leaves whose subspace the segment crosses, near
 * child first, keeping only far children on the stack. For closest hits the
 * segment is cut at the best hit so far, and pending segments that start
 * beyond it are dropped.
 *
 * Branches select planes by the sign of the direction instead of testing it:
 * for a positive direction the near child is the left one (t up to where the
 * ray crosses planes[0] + eps) and the far one starts where it crosses
 * planes[1] - eps; for a negative one the roles swap. A zero component gives
 * an infinite inverse, so the crossing is -inf or +inf (the child holds none
 * or all of the segment) or NaN (0 * inf, or inf - inf, when the sign of the
 * crossing is not known); the min and max below are written so that a NaN
 * leaves the segment whole, which is always safe. */
static inline __attribute__((always_inline)) void traverse_impl(const q_kdtree *tree, const q_kd_mesh *mesh,
                                                                const int fmt, const int mode, const float o[3],
                                                                const float d[3], float tmax, float *best_t,
                                                                uint32_t *best_tri, q_kd_hit_fn fn, void *ud)
{
    if (tree->node_count == 0)
        return;
    /* Per axis: where the ray crosses plane q of the grid is
     * t = q * scale + (near or far offset), the offsets holding the plane
     * widening. Besides Q_KD_EPSILON the widening covers the rounding of
     * this form (three roundings of terms up to the grid's extent plus the
     * origin's distance from it: 2^-21 of their sum is ample). */
    float inv[3], scale[3], near_off[3], far_off[3];
    uint32_t sign[3];
    for (int a = 0; a < 3; a++) {
        inv[a] = 1.0f / d[a];
        sign[a] = signbit(inv[a]) ? 1u : 0u;
        float qb = tree->qbase[a], qs = tree->qstep[a];
        float widen = Q_KD_EPSILON + ((float)QMAX * qs + fabsf(qb - o[a])) * (1.0f / (1 << 21));
        float e = sign[a] ? -widen : widen;
        scale[a] = qs * inv[a];
        near_off[a] = (qb + e - o[a]) * inv[a];
        far_off[a] = (qb - e - o[a]) * inv[a];
    }
    float t0, t1;
    if (!clip_to_bounds(tree, o, d, inv, tmax, &t0, &t1))
        return;
    const q_kd_node *nodes = tree->nodes;
    float limit = tmax; /* closest: the best hit so far */
    uint32_t best = UINT32_MAX;
    seg stack[Q_KD_MAX_DEPTH + 2];
    int top = 0;
    uint32_t node = 0;
    float smin = t0, smax = t1;
    for (;;) {
        const q_kd_node *n = &nodes[node];
        uint32_t ai = n->axis_index, axis = ai & 3u;
        if (axis != LEAF) {
            uint32_t child = ai >> 2, s = sign[axis];
            float tn = (float)n->u.planes[s] * scale[axis] + near_off[axis];      /* near child: t <= tn */
            float tf = (float)n->u.planes[s ^ 1u] * scale[axis] + far_off[axis]; /* far child: t >= tf */
            float near_max = tn < smax ? tn : smax;         /* NaN: smax */
            float far_min = tf > smin ? tf : smin;          /* NaN: smin */
            bool has_near = smin <= near_max, has_far = far_min <= smax;
            /* Branch-free choice: the far segment is always written and
             * kept only when both children are entered. */
            stack[top] = (seg){child + (s ^ 1u), far_min, smax};
            top += (int)(has_near & has_far);
            if (has_near | has_far) {
                node = child + (has_near ? s : s ^ 1u);
                smin = has_near ? smin : far_min;
                smax = has_near ? near_max : smax;
                continue;
            }
        } else {
            uint32_t count = (ai >> 2) & 3u, tris[2] = {ai >> 4, n->u.triangle1};
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
                } else if (!fn(ud, t, tri)) {
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
        node = stack[top].node;
        smin = stack[top].tmin;
        smax = stack[top].tmax;
        if (mode == MODE_CLOSEST && smax > limit)
            smax = limit;
    }
done:
    if (mode == MODE_CLOSEST) {
        *best_t = limit;
        *best_tri = best;
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
 * numbers once per query (the right child is entered when its plane number
 * is at most qhi, the left one when its plane number is at least qlo), so
 * nodes compare integers; exact, as the grid's planes increase with their
 * number. */
static inline __attribute__((always_inline)) size_t query_aabb_impl(const q_kdtree *tree, const q_kd_mesh *mesh,
                                                                    const int fmt, const float min[3],
                                                                    const float max[3], uint32_t *out, size_t cap)
{
    uint32_t qlo[3], qhi[3];
    float inv_step[3] = {1.0f / tree->qstep[0], 1.0f / tree->qstep[1], 1.0f / tree->qstep[2]};
    for (int a = 0; a < 3; a++) {
        qlo[a] = plane_up(tree, inv_step, a, min[a]);    /* planes[0] >= min[a] */
        qhi[a] = plane_down(tree, inv_step, a, max[a]); /* planes[1] <= max[a] (max[a] >= qbase[a] here) */
    }
    uint32_t stack[Q_KD_MAX_DEPTH + 2];
    int top = 0;
    size_t found = 0;
    stack[top++] = 0;
    while (top > 0) {
        const q_kd_node *n = &tree->nodes[stack[--top]];
        uint32_t axis = n->axis_index & 3u;
        if (axis == LEAF) {
            uint32_t count = q_kd_leaf_count(n);
            for (uint32_t k = 0; k < count; k++) {
                uint32_t tri = q_kd_leaf_triangle(n, (int)k);
                float v[9];
                load_triangle(mesh, fmt, tri, v);
                bool overlap = true;
                for (int a = 0; a < 3; a++)
                    overlap &= MAXF(v[a], MAXF(v[3 + a], v[6 + a])) >= min[a] &&
                               MINF(v[a], MINF(v[3 + a], v[6 + a])) <= max[a];
                if (overlap) {
                    if (found < cap)
                        out[found] = tri;
                    found++;
                }
            }
            continue;
        }
        uint32_t child = n->axis_index >> 2;
        if (n->u.planes[1] <= qhi[axis])
            stack[top++] = child + 1;
        if (n->u.planes[0] >= qlo[axis])
            stack[top++] = child;
    }
    return found;
}

size_t q_kdtree_query_aabb(const q_kdtree *tree, const q_kd_mesh *mesh, const float min[3], const float max[3],
                           uint32_t *out, size_t cap)
{
    if (tree->node_count == 0)
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
