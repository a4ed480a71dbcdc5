/* 2D quickhull with one quantization distance (see quickhull.h).
 *
 * Eddy's and Bykat's quickhull: split the points by the chord between two
 * extreme points, find the point farthest outside each chord, recurse on the
 * two new chords. Here "outside" means more than s from the chord's line, so
 * points within s of an edge never become vertices. An explicit stack keeps
 * the depth independent of the input (points on a parabola would otherwise
 * recurse once per point). A final pass drops vertices that ended up within s
 * of the segment between their neighbours, checking every dropped vertex
 * against the segment that replaces it so errors never accumulate past s.
 */
#include "geom/quickhull.h"

#include "core/alloc.h"

#include <math.h>
#include <stdbool.h>

/* Distance of x outside the directed line p -> q (positive on its right,
 * the outside of a counter-clockwise polygon). */
static double outside(const double *xy, uint32_t p, uint32_t q, uint32_t x)
{
    double ex = xy[2 * q] - xy[2 * p], ey = xy[2 * q + 1] - xy[2 * p + 1];
    double dx = xy[2 * x] - xy[2 * p], dy = xy[2 * x + 1] - xy[2 * p + 1];
    double len = sqrt(ex * ex + ey * ey);
    return len > 0 ? (dx * ey - dy * ex) / len : 0;
}

static double dist_to_segment(const double *xy, uint32_t p, uint32_t q, uint32_t x)
{
    double ex = xy[2 * q] - xy[2 * p], ey = xy[2 * q + 1] - xy[2 * p + 1];
    double dx = xy[2 * x] - xy[2 * p], dy = xy[2 * x + 1] - xy[2 * p + 1];
    double ll = ex * ex + ey * ey;
    double t = ll > 0 ? (dx * ex + dy * ey) / ll : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double rx = dx - t * ex, ry = dy - t * ey;
    return sqrt(rx * rx + ry * ry);
}

/* A pending chord (emit == 0) or a vertex to output (emit == 1). */
typedef struct frame {
    uint32_t p, q;
    size_t lo, hi;
    int emit;
} frame;

size_t q_hull2d(const double *xy, size_t n, double s, uint32_t *out)
{
    if (n == 0)
        return 0;
    /* Farthest pair among the axis extremes. */
    uint32_t ext[4] = {0, 0, 0, 0};
    for (uint32_t i = 1; i < n; i++) {
        if (xy[2 * i] < xy[2 * ext[0]])
            ext[0] = i;
        if (xy[2 * i] > xy[2 * ext[1]])
            ext[1] = i;
        if (xy[2 * i + 1] < xy[2 * ext[2] + 1])
            ext[2] = i;
        if (xy[2 * i + 1] > xy[2 * ext[3] + 1])
            ext[3] = i;
    }
    uint32_t a = ext[0], b = ext[1];
    double best = -1;
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++) {
            double dx = xy[2 * ext[i]] - xy[2 * ext[j]], dy = xy[2 * ext[i] + 1] - xy[2 * ext[j] + 1];
            double d = dx * dx + dy * dy;
            if (d > best) {
                best = d;
                a = ext[i];
                b = ext[j];
            }
        }
    if (sqrt(best) <= s) {
        out[0] = a;
        return 1;
    }

    uint32_t *idx = q_alloc(n * sizeof *idx);
    /* Each chord pushes at most three frames and consumes one point. */
    frame *stack = q_alloc((2 * n + 8) * sizeof *stack);
    if (!idx || !stack) {
        q_free(idx, n * sizeof *idx);
        q_free(stack, (2 * n + 8) * sizeof *stack);
        return 0;
    }
    /* Right of a -> b first, then right of b -> a. */
    size_t nr = 0, nl = 0;
    for (uint32_t i = 0; i < n; i++) {
        double d = outside(xy, a, b, i);
        if (d > s)
            idx[nr++] = i;
    }
    for (uint32_t i = 0; i < n; i++) {
        double d = outside(xy, b, a, i);
        if (d > s)
            idx[nr + nl++] = i;
    }
    size_t sp = 0, m = 0;
    stack[sp++] = (frame){b, a, nr, nr + nl, 0};
    stack[sp++] = (frame){b, b, 0, 0, 1};
    stack[sp++] = (frame){a, b, 0, nr, 0};
    out[m++] = a;
    while (sp) {
        frame f = stack[--sp];
        if (f.emit) {
            out[m++] = f.p;
            continue;
        }
        uint32_t far = UINT32_MAX;
        double fd = s;
        for (size_t i = f.lo; i < f.hi; i++) {
            double d = outside(xy, f.p, f.q, idx[i]);
            if (d > fd || (d == fd && far != UINT32_MAX && idx[i] < far)) {
                fd = d;
                far = idx[i];
            }
        }
        if (far == UINT32_MAX)
            continue;
        /* [lo, m1): outside p -> far; [m1, m2): outside far -> q; rest inside. */
        size_t m1 = f.lo;
        for (size_t i = f.lo; i < f.hi; i++)
            if (idx[i] != far && outside(xy, f.p, far, idx[i]) > s) {
                uint32_t t = idx[m1];
                idx[m1++] = idx[i];
                idx[i] = t;
            }
        size_t m2 = m1;
        for (size_t i = m1; i < f.hi; i++)
            if (idx[i] != far && outside(xy, far, f.q, idx[i]) > s) {
                uint32_t t = idx[m2];
                idx[m2++] = idx[i];
                idx[i] = t;
            }
        stack[sp++] = (frame){far, f.q, m1, m2, 0};
        stack[sp++] = (frame){far, far, 0, 0, 1};
        stack[sp++] = (frame){f.p, far, f.lo, m1, 0};
    }
    q_free(stack, (2 * n + 8) * sizeof *stack);

    /* Drop vertices within s of the segment joining their neighbours; the
     * anchor k is the last kept vertex and every vertex dropped since k must
     * stay within s of the new segment. The walk starts at the vertex
     * farthest from its neighbours' segment, which is surely kept. */
    size_t first = 0;
    double sharpest = -1;
    for (size_t i = 0; i < m; i++) {
        double d = dist_to_segment(xy, out[(i + m - 1) % m], out[(i + 1) % m], out[i]);
        if (d > sharpest) {
            sharpest = d;
            first = i;
        }
    }
    uint32_t *res = idx; /* reuse: at most m entries */
    for (size_t i = 0; i < m; i++)
        res[i] = out[(first + i) % m];
    for (size_t i = 0; i < m; i++)
        out[i] = res[i];
    size_t kept = 1, k = 0;
    for (size_t i = 1; i < m; i++) {
        uint32_t next = out[(i + 1) % m];
        bool drop = m - (i - kept) > 2;
        for (size_t j = k + 1; j <= i && drop; j++)
            drop = dist_to_segment(xy, out[k], next, out[j]) <= s;
        if (!drop) {
            res[kept++] = out[i];
            k = i;
        }
    }
    for (size_t i = 0; i < kept; i++)
        out[i] = res[i];
    m = kept;
    q_free(idx, n * sizeof *idx);

    if (m == 2) {
        /* A segment: its true ends along the direction a -> b. */
        double ex = xy[2 * b] - xy[2 * a], ey = xy[2 * b + 1] - xy[2 * a + 1];
        uint32_t lo = a, hi = a;
        double tlo = 0, thi = 0;
        for (uint32_t i = 0; i < n; i++) {
            double t = (xy[2 * i] - xy[2 * a]) * ex + (xy[2 * i + 1] - xy[2 * a + 1]) * ey;
            if (t < tlo) {
                tlo = t;
                lo = i;
            }
            if (t > thi) {
                thi = t;
                hi = i;
            }
        }
        out[0] = lo;
        out[1] = hi;
    }
    return m;
}
