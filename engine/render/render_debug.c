/* Physics debug views: the bit broadphase and the kD trees of the terrain's
 * physics chunks near the camera target, as overlay lines (depth tested).
 *
 * Both look at the physics chunks (8^3 voxels) whose box lies within
 * DEBUG_REACH voxels of the camera target and inside the view, nearest to
 * the target first, and stop at a line budget so that a frame stays cheap
 * however much terrain there is.
 *
 * Broadphase: a small wire cube per set bit of a chunk's dilated solid mask
 * (orange) and water mask (cyan), drawn only for bits with an unset
 * neighbour among their six, read across chunk faces from the neighbouring
 * chunk's mask (a bit buried in set bits would hide behind the others
 * anyway); a chunk tagged FULL is one red box (cyan for water).
 *
 * kD trees: for each chunk with a solid surface, the cached mesh's tree
 * (built on demand, a few chunks a frame) walked from the root with the
 * region each node covers: the region starts as the tree's bounds and each
 * branch narrows it for its children (left below splits[0], right above
 * splits[1]). Leaves holding triangles are boxes (green); branches draw
 * their two split planes across their region (magenta).
 */
#include "render/render_internal.h"

#include <math.h>
#include <stdlib.h>

#include "physics/physics_internal.h"
#include "world/world.h"

#define DEBUG_REACH 24.0          /* voxels around the camera target */
#define BROADPHASE_LINE_BUDGET 60000
#define KDTREE_LINE_BUDGET 6000
#define KDTREE_BUILDS_PER_FRAME 8 /* chunk meshes built on demand per frame */
#define MAX_DEBUG_CHUNKS 1024     /* (2 * 24 / 8 + 2)^3 = 512 is the most in reach */

typedef struct debug_chunk {
    int32_t c[3];
    double distance; /* squared, chunk centre to target, voxels */
} debug_chunk;

static const float SOLID_RGBA[4] = {1.0f, 0.55f, 0.1f, 0.9f};
static const float WATER_RGBA[4] = {0.1f, 0.9f, 1.0f, 0.9f};
static const float FULL_RGBA[4] = {0.9f, 0.1f, 0.1f, 1.0f};
static const float LEAF_RGBA[4] = {0.2f, 1.0f, 0.3f, 0.9f};
static const float SPLIT_RGBA[4] = {1.0f, 0.2f, 0.9f, 0.7f};

/* The 12 edges of box [lo, hi] (metres). */
static void box_lines(q_renderer *r, const double lo[3], const double hi[3], const float rgba[4])
{
    for (int a = 0; a < 3; a++) {
        int b = (a + 1) % 3, c = (a + 2) % 3;
        for (int k = 0; k < 4; k++) {
            float p[3], q[3];
            p[a] = (float)lo[a];
            q[a] = (float)hi[a];
            p[b] = q[b] = (float)((k & 1) ? hi[b] : lo[b]);
            p[c] = q[c] = (float)((k & 2) ? hi[c] : lo[c]);
            q_render_line(r, p, q, rgba);
        }
    }
}

/* The rectangle where the plane x[axis] = at crosses box [lo, hi]. */
static void plane_lines(q_renderer *r, int axis, double at, const double lo[3], const double hi[3],
                        const float rgba[4])
{
    int b = (axis + 1) % 3, c = (axis + 2) % 3;
    float corner[4][3];
    for (int k = 0; k < 4; k++) {
        corner[k][axis] = (float)at;
        corner[k][b] = (float)((k == 1 || k == 2) ? hi[b] : lo[b]);
        corner[k][c] = (float)((k >= 2) ? hi[c] : lo[c]);
    }
    for (int k = 0; k < 4; k++)
        q_render_line(r, corner[k], corner[(k + 1) % 4], rgba);
}

static int by_distance(const void *a, const void *b)
{
    double da = ((const debug_chunk *)a)->distance, db = ((const debug_chunk *)b)->distance;
    return da < db ? -1 : da > db;
}

/* Frustum planes of view_proj (column-major), inside where n . x + d >= 0. */
static void frustum_planes(const float m[16], double planes[6][4])
{
    for (int i = 0; i < 3; i++)
        for (int s = 0; s < 2; s++)
            for (int k = 0; k < 4; k++)
                planes[2 * i + s][k] = (double)m[4 * k + 3] + (s ? -1.0 : 1.0) * (double)m[4 * k + i];
}

static bool box_in_view(double planes[6][4], const double lo[3], const double hi[3])
{
    for (int i = 0; i < 6; i++) {
        double d = planes[i][3];
        for (int k = 0; k < 3; k++)
            d += planes[i][k] * (planes[i][k] >= 0.0 ? hi[k] : lo[k]);
        if (d < 0.0)
            return false;
    }
    return true;
}

/* The chunks with broadphase entries in reach and in view, nearest first;
 * returns their count. */
static int gather_chunks(const q_renderer *r, const q_terrain_physics *p, const q_camera *camera,
                         debug_chunk *out)
{
    double vs = p->voxel_size, t[3];
    int64_t lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        t[k] = camera->target[k] / vs;
        if (!isfinite(t[k]) || fabs(t[k]) > (double)Q_PHYS_LIMIT)
            return 0;
        lo[k] = (int64_t)floor((t[k] - DEBUG_REACH) / Q_PHYS_CHUNK);
        hi[k] = (int64_t)floor((t[k] + DEBUG_REACH) / Q_PHYS_CHUNK);
    }
    float vp[16];
    q_camera_view_proj(camera, r->height > 0 ? (float)r->width / (float)r->height : 1.0f, vp);
    double planes[6][4];
    frustum_planes(vp, planes);
    int n = 0;
    for (int64_t cz = lo[2]; cz <= hi[2]; cz++)
        for (int64_t cy = lo[1]; cy <= hi[1]; cy++)
            for (int64_t cx = lo[0]; cx <= hi[0]; cx++) {
                if (n == MAX_DEBUG_CHUNKS || !q_bp_find(p, (int32_t)cx, (int32_t)cy, (int32_t)cz))
                    continue;
                const int64_t c[3] = {cx, cy, cz};
                double blo[3], bhi[3], d2 = 0.0, gap2 = 0.0;
                for (int k = 0; k < 3; k++) {
                    double a = (double)(c[k] * Q_PHYS_CHUNK), b = a + Q_PHYS_CHUNK;
                    blo[k] = a * vs;
                    bhi[k] = b * vs;
                    double centre = a + 0.5 * Q_PHYS_CHUNK - t[k];
                    double gap = t[k] < a ? a - t[k] : t[k] > b ? t[k] - b : 0.0;
                    d2 += centre * centre;
                    gap2 += gap * gap;
                }
                if (gap2 > DEBUG_REACH * DEBUG_REACH || !box_in_view(planes, blo, bhi))
                    continue;
                out[n++] = (debug_chunk){{(int32_t)cx, (int32_t)cy, (int32_t)cz}, d2};
            }
    qsort(out, (size_t)n, sizeof *out, by_distance);
    return n;
}

static const uint64_t NO_BITS[8] = {0, 0, 0, 0, 0, 0, 0, 0};
static const uint64_t ALL_BITS[8] = {~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull};

/* The mask of one kind of chunk c (all set when FULL, none when absent). */
static const uint64_t *mask_of(const q_terrain_physics *p, const int32_t c[3], int kind)
{
    const q_bp_entry *e = q_bp_find(p, c[0], c[1], c[2]);
    uint8_t tag = !e ? Q_BP_NONE : kind ? e->water_tag : e->solid_tag;
    if (tag == Q_BP_FULL)
        return ALL_BITS;
    if (tag == Q_BP_MASK && e->slot[kind] < p->pool[kind].slots.count)
        return p->pool[kind].slots.data[e->slot[kind]].bits;
    return NO_BITS;
}

static bool bit(const uint64_t bits[8], int x, int y, int z) { return (bits[y] >> (x + 8 * z)) & 1u; }

/* Whether bit v of the mask has an unset neighbour among its six; across a
 * face of the chunk the neighbour is read from next[axis][side]. */
static bool exposed(const uint64_t bits[8], const uint64_t *next[3][2], const int v[3])
{
    for (int a = 0; a < 3; a++)
        for (int side = 0; side < 2; side++) {
            int u[3] = {v[0], v[1], v[2]};
            u[a] += side ? 1 : -1;
            const uint64_t *m = bits;
            if (u[a] < 0 || u[a] > 7) {
                m = next[a][side];
                u[a] &= 7;
            }
            if (!bit(m, u[0], u[1], u[2]))
                return true;
        }
    return false;
}

/* Cubes of the exposed bits of one mask; returns the lines queued. */
static size_t mask_lines(q_renderer *r, const q_terrain_physics *p, int kind, const int32_t c[3], double inset,
                         const float rgba[4], size_t budget)
{
    const uint64_t *bits = mask_of(p, c, kind), *next[3][2];
    for (int a = 0; a < 3; a++)
        for (int side = 0; side < 2; side++) {
            int32_t n[3] = {c[0], c[1], c[2]};
            n[a] += side ? 1 : -1;
            next[a][side] = mask_of(p, n, kind);
        }
    double vs = p->voxel_size;
    size_t lines = 0;
    for (int y = 0; y < 8; y++)
        for (uint64_t b = bits[y]; b; b &= b - 1) {
            if (lines + 12 > budget)
                return lines;
            int i = __builtin_ctzll(b);
            const int v[3] = {i & 7, y, i >> 3};
            if (!exposed(bits, next, v))
                continue;
            double lo[3], hi[3];
            for (int k = 0; k < 3; k++) {
                double base = (double)c[k] * Q_PHYS_CHUNK + v[k];
                lo[k] = (base + inset) * vs;
                hi[k] = (base + 1.0 - inset) * vs;
            }
            box_lines(r, lo, hi, rgba);
            lines += 12;
        }
    return lines;
}

static void draw_broadphase(q_renderer *r, const q_terrain_physics *p, const debug_chunk *chunks, int n)
{
    double vs = p->voxel_size;
    size_t lines = 0;
    for (int i = 0; i < n && lines + 12 <= BROADPHASE_LINE_BUDGET; i++) {
        const q_bp_entry *e = q_bp_find(p, chunks[i].c[0], chunks[i].c[1], chunks[i].c[2]);
        if (!e)
            continue;
        const uint8_t tags[2] = {e->solid_tag, e->water_tag};
        for (int kind = 0; kind < 2; kind++) {
            const float *rgba = kind ? WATER_RGBA : SOLID_RGBA;
            if (tags[kind] == Q_BP_FULL) {
                double lo[3], hi[3];
                for (int k = 0; k < 3; k++) {
                    lo[k] = (double)chunks[i].c[k] * Q_PHYS_CHUNK * vs;
                    hi[k] = lo[k] + Q_PHYS_CHUNK * vs;
                }
                box_lines(r, lo, hi, kind ? WATER_RGBA : FULL_RGBA);
                lines += 12;
            } else if (tags[kind] == Q_BP_MASK) {
                /* water cubes a little smaller, so both show where they meet */
                lines += mask_lines(r, p, kind, chunks[i].c, kind ? 0.3 : 0.2, rgba, BROADPHASE_LINE_BUDGET - lines);
            }
        }
    }
}

/* Walks one tree with the region of every node; returns the lines queued. */
static size_t tree_lines(q_renderer *r, const q_kdtree *tree, const double origin[3], size_t budget)
{
    if (tree->word_count == 0)
        return 0;
    typedef struct {
        q_kd_ref node;
        float lo[3], hi[3];
    } item;
    item stack[Q_KD_MAX_DEPTH + 2];
    int top = 0;
    stack[top].node = q_kd_root();
    for (int k = 0; k < 3; k++) {
        stack[top].lo[k] = tree->min[k];
        stack[top].hi[k] = tree->max[k];
    }
    top++;
    size_t lines = 0;
    while (top > 0) {
        item it = stack[--top];
        q_kd_ref nd = it.node;
        double lo[3], hi[3];
        for (int k = 0; k < 3; k++) {
            lo[k] = origin[k] + it.lo[k];
            hi[k] = origin[k] + it.hi[k];
        }
        if (q_kd_is_leaf(nd)) {
            if (q_kd_leaf_count(nd) == 0 || lines + 12 > budget)
                continue; /* empty leaves (under clip nodes) hold nothing to show */
            box_lines(r, lo, hi, LEAF_RGBA);
            lines += 12;
            continue;
        }
        if (lines + 8 > budget)
            continue;
        int axis = q_kd_axis(tree, nd);
        float below = q_kdtree_plane(tree, nd, 0), above = q_kdtree_plane(tree, nd, 1);
        plane_lines(r, (int)axis, origin[axis] + below, lo, hi, SPLIT_RGBA);
        plane_lines(r, (int)axis, origin[axis] + above, lo, hi, SPLIT_RGBA);
        lines += 8;
        if (top + 2 > Q_KD_MAX_DEPTH + 2)
            continue;
        q_kd_ref child[2];
        q_kd_children(tree, nd, child);
        item right = it, left = it;
        left.node = child[0];
        if (below < left.hi[axis])
            left.hi[axis] = below;
        right.node = child[1];
        if (above > right.lo[axis])
            right.lo[axis] = above;
        stack[top++] = right;
        stack[top++] = left;
    }
    return lines;
}

static void draw_kdtrees(q_renderer *r, q_terrain_physics *p, const debug_chunk *chunks, int n)
{
    double vs = p->voxel_size;
    size_t lines = 0;
    int builds = 0;
    for (int i = 0; i < n && lines + 12 <= KDTREE_LINE_BUDGET; i++) {
        const int32_t *c = chunks[i].c;
        const q_bp_entry *e = q_bp_find(p, c[0], c[1], c[2]);
        if (!e || e->solid_tag != Q_BP_MASK)
            continue; /* no solid triangles in this chunk */
        if (q_hashmap_get(&p->cache_index, q_phys_key(c[0], c[1], c[2])) == Q_HASHMAP_EMPTY) {
            if (p->frozen || builds == KDTREE_BUILDS_PER_FRAME)
                continue;
            builds++;
        }
        const q_chunk_mesh *m = q_tp_chunk_mesh(p, c[0], c[1], c[2], 0);
        if (!m)
            continue;
        /* tree coordinates are metres from the chunk's corner */
        const double origin[3] = {(double)c[0] * Q_PHYS_CHUNK * vs, (double)c[1] * Q_PHYS_CHUNK * vs,
                                  (double)c[2] * Q_PHYS_CHUNK * vs};
        lines += tree_lines(r, &m->tree, origin, KDTREE_LINE_BUDGET - lines);
    }
}

void q_render_draw_physics_debug(q_renderer *r, struct q_world *w, const q_camera *camera, bool broadphase,
                                 bool kdtree)
{
    if (!broadphase && !kdtree)
        return;
    q_terrain_physics *p = q_world_terrain_physics(w);
    if (!p || p->frozen || !q_terrain_physics_sync(p))
        return;
    debug_chunk *chunks = malloc(MAX_DEBUG_CHUNKS * sizeof *chunks);
    if (!chunks)
        return;
    int n = gather_chunks(r, p, camera, chunks);
    if (broadphase)
        draw_broadphase(r, p, chunks, n);
    if (kdtree)
        draw_kdtrees(r, p, chunks, n);
    free(chunks);
}
