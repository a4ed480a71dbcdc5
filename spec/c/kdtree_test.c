/* kD tree invariants and queries against brute force, on random triangle
 * soups and degenerate input. TAP output. */
#include "core/alloc.h"
#include "mesh/dc.h"
#include "physics/kdtree.h"
#include "physics/physics_internal.h"
#include "physics/terrain_physics.h"
#include "voxel/terrain.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_no, failures;

static void report(const char *name, int ok)
{
    printf("%s %d - %s\n", ok ? "ok" : "not ok", ++test_no, name);
    failures += !ok;
}

static void reportf(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reportf(int ok, const char *fmt, ...) /* report, the name formatted */
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    report(name, ok);
}

static uint64_t state = 0x853c49e6748fea9bull;
static float frand(void)
{
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((state >> 40) & 0xffffff) / (float)0x1000000;
}

typedef struct soup {
    float *pos;
    uint32_t *idx;
    uint32_t ntri;
} soup;

/* kind 0: random small triangles; 1: all triangles identical; 2: a thin
 * line of triangles; 3: huge spread of scales; 4: random triangles around
 * (1000, 1000, 1000) (plane grid and crossings far from the origin); 5:
 * triangles with integer corners, half of them axis-aligned (split planes
 * through vertices, which the integer rays of check_rays start on). */
static soup make_soup(uint32_t ntri, int kind)
{
    soup s = {malloc(ntri * 9 * sizeof(float)), malloc(ntri * 3 * sizeof(uint32_t)), ntri};
    for (uint32_t t = 0; t < ntri; t++) {
        float c[3] = {frand() * 100, frand() * 100, frand() * 100};
        if (kind == 1)
            c[0] = c[1] = c[2] = 5;
        if (kind == 2)
            c[1] = c[2] = 0;
        float scale = kind == 3 ? powf(10.0f, frand() * 4 - 2) : 1.0f;
        if (kind == 4)
            c[0] += 1000, c[1] += 1000, c[2] += 1000;
        for (int k = 0; k < 3; k++) {
            for (int a = 0; a < 3; a++)
                s.pos[9 * t + 3 * k + a] = c[a] + (frand() - 0.5f) * 2 * scale;
            s.idx[3 * t + k] = 3 * t + (uint32_t)k;
        }
        if (kind == 5) {
            int flat = (int)(t % 6); /* 0..2: flat on that axis */
            for (int k = 0; k < 3; k++)
                for (int a = 0; a < 3; a++)
                    s.pos[9 * t + 3 * k + a] = floorf(c[a]) + (float)(int)(frand() * 3);
            if (flat < 3)
                for (int k = 1; k < 3; k++)
                    s.pos[9 * t + 3 * k + flat] = s.pos[9 * t + flat];
        }
    }
    return s;
}

/* Whether every triangle under node r lies within [lo, hi] on axis a. */
static int subtree_within(const q_kdtree *tree, const q_kd_mesh *m, q_kd_ref r, int a, float lo, float hi)
{
    q_kd_ref stack[2 * Q_KD_MAX_DEPTH + 2];
    int top = 0, ok = 1;
    stack[top++] = r;
    while (top > 0) {
        q_kd_ref n = stack[--top];
        if (!q_kd_is_leaf(n)) {
            q_kd_children(tree, n, stack + top);
            top += 2;
            continue;
        }
        for (uint32_t k = 0; k < q_kd_leaf_count(n); k++) {
            uint32_t t = q_kd_leaf_triangle(tree, n, k);
            for (int v = 0; v < 3; v++) {
                float x = m->positions[3 * m->indices32[3 * t + v] + a];
                ok &= x >= lo && x <= hi;
            }
        }
    }
    return ok;
}

/* Every triangle in exactly one leaf, at most 2 per leaf, bounded depth
 * (binary levels, walked through q_kd_ref, against tree.depth), each
 * branch's (quantized) planes bound its children's triangles, and the quad
 * layout is consistent: every quad node is reached once, its lanes lie
 * within the word array and do not overlap, and words are all used; leaves
 * are runs of the tree's triangle order that do not overlap and cover it. */
static int check_invariants(const q_kdtree *tree, const q_kd_mesh *m)
{
    uint32_t ntri = m->triangle_count;
    unsigned char *seen = calloc(ntri ? ntri : 1, 1), *used = calloc(tree->word_count + 1, 1);
    unsigned char *slot = calloc(ntri ? ntri : 1, 1); /* positions in the tree's triangle order */
    int ok = tree->depth < Q_KD_MAX_DEPTH && tree->word_count >= Q_KD_QUAD_WORDS;
    typedef struct {
        q_kd_ref r;
        uint32_t depth;
    } item;
    item stack[2 * Q_KD_MAX_DEPTH + 2];
    int top = 0;
    uint32_t max_depth = 0, quads = 0;
    stack[top++] = (item){q_kd_root(), 0};
    while (top > 0 && ok) {
        item it = stack[--top];
        q_kd_ref n = it.r;
        max_depth = it.depth > max_depth ? it.depth : max_depth;
        uint32_t span = n.kind == 4 ? Q_KD_QUAD_WORDS : 0;
        ok &= n.word + span <= tree->word_count;
        for (uint32_t k = 0; k < span && ok; k++) {
            ok &= !used[n.word + k];
            used[n.word + k] = 1;
        }
        if (q_kd_is_leaf(n)) {
            ok &= n.word + q_kd_leaf_count(n) <= ntri;
            for (uint32_t k = 0; k < q_kd_leaf_count(n) && ok; k++) {
                ok &= !slot[n.word + k];
                slot[n.word + k] = 1;
            }
        }
        quads += n.kind == 4;
        if (!q_kd_is_leaf(n)) {
            q_kd_ref c[2];
            q_kd_children(tree, n, c);
            int a = q_kd_axis(tree, n);
            ok &= subtree_within(tree, m, c[0], a, -INFINITY, q_kdtree_plane(tree, n, 0));
            ok &= subtree_within(tree, m, c[1], a, q_kdtree_plane(tree, n, 1), INFINITY);
            ok &= top + 2 <= 2 * Q_KD_MAX_DEPTH + 2;
            if (ok) {
                stack[top++] = (item){c[0], it.depth + 1};
                stack[top++] = (item){c[1], it.depth + 1};
            }
            continue;
        }
        uint32_t count = q_kd_leaf_count(n);
        ok &= count <= 2; /* empty leaves only under clip nodes */
        for (uint32_t k = 0; k < count; k++) {
            uint32_t t = q_kd_leaf_triangle(tree, n, k);
            ok &= t < ntri && !seen[t];
            if (t < ntri)
                seen[t] = 1;
        }
    }
    ok &= max_depth == tree->depth && quads == tree->node_count;
    for (uint32_t t = 0; t < ntri; t++)
        ok &= seen[t] && slot[t];
    for (uint32_t w = 0; w < tree->word_count; w++)
        ok &= used[w];
    free(slot);
    free(seen);
    free(used);
    return ok;
}

/* Closest hit over every triangle (32-bit indices): the independent answer;
 * INFINITY for none in [0, tmax]. */
static float brute_closest(const q_kd_mesh *m, const float o[3], const float d[3], float tmax)
{
    float best = INFINITY;
    for (uint32_t t = 0; t < m->triangle_count; t++) {
        const float *p = m->positions;
        const uint32_t *ix = m->indices32 + 3 * t;
        float h = q_ray_triangle(o, d, p + 3 * ix[0], p + 3 * ix[1], p + 3 * ix[2]);
        if (h >= 0 && h <= tmax && h < best)
            best = h;
    }
    return best;
}

/* Rays from random points of [-10, 110]^3 shifted by off; with grid set,
 * from integer points, and every other one axis-aligned. */
static int check_rays(const q_kdtree *tree, const q_kd_mesh *m, int rays, float off, int grid)
{
    int ok = 1;
    for (int r = 0; r < rays; r++) {
        float o[3] = {frand() * 120 - 10 + off, frand() * 120 - 10 + off, frand() * 120 - 10 + off};
        float d[3] = {frand() - 0.5f, frand() - 0.5f, frand() - 0.5f};
        if (grid)
            for (int a = 0; a < 3; a++)
                o[a] = floorf(o[a]);
        if (r % 5 == 0 || (grid && r % 2 == 0)) {
            int a = (int)(frand() * 3);
            d[0] = d[1] = d[2] = 0; /* axis-aligned */
            d[a] = frand() < 0.5f ? -1.0f : 1.0f;
        }
        float len = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        for (int a = 0; a < 3; a++)
            d[a] /= len;
        float tmax = r % 2 ? 10.0f : 200.0f;
        float best = brute_closest(m, o, d, tmax);
        float t;
        uint32_t tri;
        bool hit = q_kdtree_raycast(tree, m, o, d, tmax, &t, &tri);
        ok &= hit == (best != INFINITY);
        ok &= q_kdtree_raycast_any(tree, m, o, d, tmax) == hit;
        if (hit && best != INFINITY) {
            ok &= fabsf(t - best) <= 1e-5f * fmaxf(1.0f, best);
            const uint32_t *ix = m->indices32 + 3 * tri; /* the triangle reported is hit there */
            const float *p = m->positions;
            ok &= tri < m->triangle_count && q_ray_triangle(o, d, p + 3 * ix[0], p + 3 * ix[1], p + 3 * ix[2]) == t;
        }
    }
    return ok;
}

/* Rays parallel to an axis from far along it (1e6 away, the capped inverse
 * direction's case), toward the soup and away from it. */
static int check_far_axis_rays(const q_kdtree *tree, const q_kd_mesh *m, int rays, float off)
{
    int ok = 1;
    for (int r = 0; r < rays; r++) {
        int a = r % 3;
        float o[3] = {frand() * 100 + off, frand() * 100 + off, frand() * 100 + off}, d[3] = {0, 0, 0};
        float side = r % 2 ? 1.0f : -1.0f;
        o[a] = off + 50 + side * 1e6f;
        d[a] = r % 4 < 2 ? -side : side; /* toward the soup, or away */
        float tmax = 3e6f, best = brute_closest(m, o, d, tmax);
        float t;
        uint32_t tri;
        bool hit = q_kdtree_raycast(tree, m, o, d, tmax, &t, &tri);
        ok &= hit == (best != INFINITY);
        if (hit && best != INFINITY)
            ok &= t == best;
    }
    return ok;
}

static int check_aabb(const q_kdtree *tree, const q_kd_mesh *m, int queries, float off)
{
    int ok = 1;
    uint32_t *out = malloc(m->triangle_count * sizeof(uint32_t) + 4);
    for (int q = 0; q < queries; q++) {
        float mn[3], mx[3];
        for (int a = 0; a < 3; a++) {
            mn[a] = frand() * 100 + off;
            mx[a] = mn[a] + frand() * 20;
        }
        size_t expect = 0;
        for (uint32_t t = 0; t < m->triangle_count; t++) {
            int overlap = 1;
            for (int a = 0; a < 3; a++) {
                float lo = INFINITY, hi = -INFINITY;
                for (int k = 0; k < 3; k++) {
                    float v = m->positions[3 * m->indices32[3 * t + k] + a];
                    lo = fminf(lo, v);
                    hi = fmaxf(hi, v);
                }
                overlap &= hi >= mn[a] && lo <= mx[a];
            }
            expect += (size_t)overlap;
        }
        ok &= q_kdtree_query_aabb(tree, m, mn, mx, out, m->triangle_count) == expect;
    }
    free(out);
    return ok;
}

/* A generated caves world of the given size, or NULL. */
static q_terrain *caves_world(int32_t sx, int32_t sy, int32_t sz, uint64_t seed)
{
    q_terrain *t = q_terrain_create(NULL);
    q_generate_def gd = q_default_generate_def();
    gd.kind = Q_GEN_CAVES;
    gd.size[0] = sx, gd.size[1] = sy, gd.size[2] = sz;
    gd.seed = seed;
    char err[128];
    if (t && q_terrain_generate(t, &gd, err, sizeof err) == Q_OK)
        return t;
    q_terrain_destroy(t);
    return NULL;
}

/* The engine's walk over its 8^3 chunk trees (q_terrain_physics_raycast)
 * against brute force over one mesh of the whole world. A quarter of the
 * rays start anywhere, the others on chunk faces, edges and corners (the
 * walk's events fall on its first step there: a ray that starts on a face
 * and moves away from the chunk above it must still test the chunk below
 * at once). Half the rays are short (0.5 to 4.5 voxels), so that many end
 * or turn away near the triangles a chunk reaches past its box with. Same
 * hit or miss, t within 1e-4. */
static int check_terrain_walk(int rays, int *hits)
{
    q_terrain *t = caves_world(32, 24, 32, 3);
    char err[128];
    if (!t)
        return 0;
    q_box box = {{-8, -8, -8}, {40, 32, 40}};
    q_dc_output out = {0};
    out.vertex_capacity = q_dc_vertex_bound(box);
    out.index_capacity = q_dc_index_bound(box);
    out.positions = malloc(out.vertex_capacity * 3 * sizeof(float));
    out.indices = malloc(out.index_capacity * sizeof(uint32_t));
    memcpy(out.origin, box.min, sizeof box.min);
    q_terrain_physics *p = q_terrain_physics_create(t, 1.0, 0);
    int ok = p && out.positions && out.indices &&
             q_dc_mesh(t, box, Q_SURFACE_SOLID, 1.0f, &out, NULL, err, sizeof err) == Q_OK && out.index_count > 0;
    for (size_t i = 0; ok && i < out.vertex_count * 3; i++)
        out.positions[i] += (float)box.min[i % 3]; /* world positions: exact on the mesher's grid */
    const float lo[3] = {0, 1, 0}, hi[3] = {32, 23, 32};
    int grid_axes[3] = {0, 2, 1}; /* the axes put on the chunk grid first: x, then z, then y */
    for (int r = 0; ok && r < rays; r++) {
        double o[3], d[3], l2;
        for (int a = 0; a < 3; a++)
            o[a] = lo[a] + frand() * (hi[a] - lo[a]);
        for (int k = 0; k < r % 4; k++) {
            int a = grid_axes[k];
            o[a] = 8.0 * (int)(frand() * (a == 1 ? 2.99f : 4.99f)) + (a == 1 ? 8 : 0);
        }
        do {
            for (int a = 0; a < 3; a++)
                d[a] = frand() * 2 - 1;
            l2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        } while (l2 > 1 || l2 < 1e-4);
        for (int a = 0; a < 3; a++)
            d[a] /= sqrt(l2);
        double len = r % 8 < 4 ? 0.5 + frand() * 4 : 1 + frand() * 30;
        float fo[3] = {(float)o[0], (float)o[1], (float)o[2]}, fd[3] = {(float)d[0], (float)d[1], (float)d[2]};
        float best = INFINITY;
        for (size_t k = 0; k < out.index_count; k += 3) {
            const float *v = out.positions;
            float tk = q_ray_triangle(fo, fd, v + 3 * out.indices[k], v + 3 * out.indices[k + 1],
                                      v + 3 * out.indices[k + 2]);
            if (tk >= 0 && tk <= len && tk < best)
                best = tk;
        }
        q_ray_hit h;
        bool hit = q_terrain_physics_raycast(p, o, d, len, Q_RAY_SOLID, &h);
        ok &= hit == (best != INFINITY) && (!hit || fabs(h.distance - best) <= 1e-4);
        *hits += hit;
    }
    q_terrain_physics_destroy(p);
    q_terrain_destroy(t);
    free(out.positions);
    free(out.indices);
    return ok;
}

/* The physics cache against a reference LRU: random chunk lookups (and
 * edits, which drop chunks) under a budget of a few dozen entries. After
 * each step the cache holds exactly the chunks the reference keeps (the most
 * recently used that fit the budget, the oldest evicted first) with the
 * same byte count, and its use order, walked both ways through the links,
 * is the reference's. */
static int check_cache_lru(int steps, int *evictions)
{
    q_terrain *t = caves_world(48, 24, 48, 5);
    char err[128];
    if (!t)
        return 0;
    enum { SIDE = 6, HIGH = 3, MAX = SIDE * SIDE * HIGH };
    q_terrain_physics *p = q_terrain_physics_create(t, 1.0, 48 << 10);
    uint64_t ref[MAX]; /* keys, oldest first */
    size_t ref_bytes[MAX], ref_n = 0, bytes_of[MAX] = {0}, total = 0;
    int ok = p != NULL;
    for (int step = 0; ok && step < steps; step++) {
        if (step % 97 == 96) { /* an edit: the cache drops what it touched; the survivors keep their order */
            q_edit ed = {.op = Q_EDIT_CARVE, .shape = {.kind = Q_SHAPE_BALL, .radius = 3}};
            ed.shape.center[0] = frand() * 48, ed.shape.center[1] = frand() * 24, ed.shape.center[2] = frand() * 48;
            ok &= q_terrain_edit(t, &ed, err, sizeof err) == Q_OK && q_terrain_physics_sync(p);
            size_t kept = 0;
            total = 0;
            for (size_t i = 0; i < ref_n; i++)
                if (q_hashmap_get(&p->cache_index, ref[i]) != Q_HASHMAP_EMPTY) {
                    ref[kept] = ref[i], ref_bytes[kept] = ref_bytes[i], total += ref_bytes[i];
                    kept++;
                }
            ref_n = kept;
            memset(bytes_of, 0, sizeof bytes_of); /* meshes change with the edit */
        } else {
            int32_t cx = (int32_t)(frand() * SIDE), cy = (int32_t)(frand() * HIGH), cz = (int32_t)(frand() * SIDE);
            uint64_t key = q_phys_key(cx, cy, cz);
            ok &= q_tp_chunk_mesh(p, cx, cy, cz, 0) != NULL;
            uint32_t at = q_hashmap_get(&p->cache_index, key);
            ok &= at != Q_HASHMAP_EMPTY;
            if (!ok)
                break;
            size_t i = 0, b = p->cache.data[at].bytes;
            while (i < ref_n && ref[i] != key)
                i++;
            if (i < ref_n) { /* a hit: it becomes the newest */
                total -= ref_bytes[i];
                memmove(ref + i, ref + i + 1, (ref_n - i - 1) * sizeof *ref);
                memmove(ref_bytes + i, ref_bytes + i + 1, (ref_n - i - 1) * sizeof *ref_bytes);
                ref_n--;
            } else {
                while (ref_n > 0 && total + b > p->budget) { /* evict the oldest */
                    total -= ref_bytes[0];
                    memmove(ref, ref + 1, (ref_n - 1) * sizeof *ref);
                    memmove(ref_bytes, ref_bytes + 1, (ref_n - 1) * sizeof *ref_bytes);
                    ref_n--;
                    (*evictions)++;
                }
            }
            int ci = (cz * HIGH + cy) * SIDE + cx;
            ok &= bytes_of[ci] == 0 || bytes_of[ci] == b; /* the same chunk costs the same until an edit */
            bytes_of[ci] = b;
            ref[ref_n] = key, ref_bytes[ref_n] = b, total += b;
            ref_n++;
        }
        ok &= p->cache.count == ref_n && p->lru.count == ref_n && p->cache_bytes == total;
        uint32_t e = p->lru_oldest;
        for (size_t i = 0; ok && i < ref_n; i++) {
            ok &= e != Q_LRU_NONE && q_phys_key(p->cache.data[e].cx, p->cache.data[e].cy, p->cache.data[e].cz) == ref[i];
            e = ok ? p->lru.data[e].newer : e;
        }
        ok &= e == Q_LRU_NONE;
        e = p->lru_newest;
        for (size_t i = ref_n; ok && i-- > 0;) {
            ok &= e != Q_LRU_NONE && q_phys_key(p->cache.data[e].cx, p->cache.data[e].cy, p->cache.data[e].cz) == ref[i];
            e = ok ? p->lru.data[e].older : e;
        }
        ok &= e == Q_LRU_NONE;
    }
    ok &= p && p->evictions == (uint64_t)*evictions;
    q_terrain_physics_destroy(p);
    q_terrain_destroy(t);
    return ok;
}

int main(void)
{
    static const char *kinds[] = {"random", "identical", "collinear", "multi-scale", "offset", "integer"};
    for (int kind = 0; kind < 6; kind++) {
        for (uint32_t n = 1; n <= 3000; n = n * 7 + 1) {
            soup s = make_soup(n, kind);
            q_kd_mesh m = {.positions = s.pos, .indices32 = s.idx, .triangle_count = n};
            q_kdtree tree;
            char name[128];
            int built = q_kdtree_build(&tree, &m);
            snprintf(name, sizeof name, "%s soup of %u triangles: every triangle in one leaf, <= 2 per leaf, planes bound their children, depth %u",
                     kinds[kind], n, built ? tree.depth : 0);
            report(name, built && check_invariants(&tree, &m));
            snprintf(name, sizeof name, "%s soup of %u triangles: closest and any hits equal brute force", kinds[kind], n);
            report(name, built && check_rays(&tree, &m, 300, kind == 4 ? 1000.0f : 0.0f, kind == 5));
            snprintf(name, sizeof name, "%s soup of %u triangles: axis-parallel rays from 1e6 away equal brute force", kinds[kind], n);
            report(name, built && check_far_axis_rays(&tree, &m, 60, kind == 4 ? 1000.0f : 0.0f));
            snprintf(name, sizeof name, "%s soup of %u triangles: AABB queries equal brute force", kinds[kind], n);
            report(name, built && check_aabb(&tree, &m, 100, kind == 4 ? 1000.0f : 0.0f));
            q_kdtree_free(&tree);
            /* The sorted build: the mesh's own indices reordered so that
             * leaves are runs of them (no copy, no order in the tree). */
            uint32_t *before = malloc(3 * n * sizeof(uint32_t)), *order = malloc(n * sizeof(uint32_t));
            memcpy(before, s.idx, 3 * n * sizeof(uint32_t));
            built = q_kdtree_build_sorted(&tree, &m, NULL, s.idx, order);
            int perm_ok = built && tree.order == NULL && tree.own_indices == NULL;
            unsigned char *hit = calloc(n, 1);
            for (uint32_t t = 0; t < n && perm_ok; t++) {
                perm_ok &= order[t] < n && !hit[order[t]];
                hit[order[t]] = 1;
                for (int k = 0; k < 3 && perm_ok; k++)
                    perm_ok &= s.idx[3 * t + k] == before[3 * order[t] + k];
            }
            snprintf(name, sizeof name, "%s soup of %u triangles, sorted build: the indices are reordered triangles of the mesh, order_out says which",
                     kinds[kind], n);
            report(name, perm_ok);
            snprintf(name, sizeof name, "%s soup of %u triangles, sorted build: invariants (leaves are runs of the reordered mesh)", kinds[kind], n);
            report(name, built && check_invariants(&tree, &m));
            snprintf(name, sizeof name, "%s soup of %u triangles, sorted build: closest, any and AABB queries equal brute force", kinds[kind], n);
            report(name, built && check_rays(&tree, &m, 300, kind == 4 ? 1000.0f : 0.0f, kind == 5) &&
                             check_aabb(&tree, &m, 100, kind == 4 ? 1000.0f : 0.0f));
            q_kdtree_free(&tree);
            free(hit);
            free(order);
            free(before);
            free(s.pos);
            free(s.idx);
        }
    }
    q_kdtree empty;
    q_kd_mesh none = {.triangle_count = 0};
    float o[3] = {0, 0, 0}, d[3] = {1, 0, 0}, t;
    uint32_t tri;
    report("an empty mesh gives an empty tree that nothing hits",
           q_kdtree_build(&empty, &none) && empty.word_count == 0 && !q_kdtree_raycast(&empty, &none, o, d, 10, &t, &tri));
    uint32_t other[3] = {0, 1, 2};
    q_kd_mesh one = {.positions = (float[9]){0, 0, 0, 1, 0, 0, 0, 1, 0}, .indices32 = other, .triangle_count = 1};
    report("a sorted build refuses index arrays that are not the mesh's",
           !q_kdtree_build_sorted(&empty, &one, NULL, (uint32_t[3]){0, 1, 2}, NULL) && empty.word_count == 0);
    /* 12000 rays: with 4000, a walk whose chunks reached a quarter voxel
     * instead of half still passed. */
    int walk_rays = 12000, walk_hits = 0;
    int walk_ok = check_terrain_walk(walk_rays, &walk_hits);
    reportf(walk_ok && walk_hits > walk_rays / 5 && walk_hits < walk_rays * 4 / 5,
            "q_terrain_physics_raycast (the chunk walk) equals brute force on %d rays from chunk faces, edges, corners and anywhere (%d hit)",
            walk_rays, walk_hits);
    int lru_steps = 3000, lru_evictions = 0;
    int lru_ok = check_cache_lru(lru_steps, &lru_evictions);
    reportf(lru_ok && lru_evictions > lru_steps / 10,
            "the physics cache keeps what a reference LRU keeps, in its use order, over %d lookups and edits (%d evictions)",
            lru_steps, lru_evictions);
    report("kD tree memory is returned", q_alloc_live_bytes() == 0);
    printf("1..%d\n", test_no);
    return failures ? 1 : 0;
}
