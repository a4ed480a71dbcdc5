/* Loose kD tree over a triangle mesh (seed 000, "Loose kD tree").
 *
 * Each branch splits one axis with two planes: every triangle of the left
 * child lies below planes[0], every triangle of the right child above
 * planes[1] (the planes are recomputed from the children's vertices, so they
 * fit tightly and may overlap). Leaves hold up to two triangles. Planes are
 * 16-bit steps of a grid over the tree's bounds, rounded outwards (rays
 * within 2% of float planes; bench/RESULTS.md).
 * Storage is two levels at a time: a quad node holds a branch and its two
 * children (their six planes and three axes) and reaches up to four
 * grandchildren ("lanes"), so traversal computes all six plane crossings at
 * once (SSE2, with a scalar path that gives the same values) and takes half
 * as many dependent steps as a binary tree: each step is a chain of loads and
 * arithmetic that no branch prediction shortens, so the step count is the
 * cost (bench/RESULTS.md: short and long rays 1.3x the binary tree of 8-byte
 * nodes, coherent 0.96x). A leaf is no node at all: the build orders the
 * triangles so that each leaf is a run of them, and a quad node's lane names
 * the run (no word per triangle, and one dependent load less per leaf). The
 * binary tree the build makes is unchanged and can still be
 * walked node by node through q_kd_ref (below).
 *
 * Build: split the longest axis of the node's bounds. Nodes of more than 8
 * triangles take the bin boundary (16 bins of midpoints) with the smallest
 * surface-area cost among those that leave each side at least 25% of the
 * triangles; smaller nodes, and nodes where no boundary does, split at the
 * mean of the triangle midpoints, falling back to a median split (by
 * midpoint order) when a side would get under 25%, and nodes of up to 8
 * triangles get an even left side (fewer half-empty leaves). The cost choice
 * replaced the seed's plain mean split: rays enter 15-30% fewer nodes and
 * test 25-30% fewer triangles. Where more than 15% of what traversal knows
 * of a node's region is empty on some axis, a clip node (one full child, one
 * empty leaf) cuts it first. That bounds the depth to Q_KD_MAX_DEPTH for any
 * mesh of up to 2^24 triangles, so queries traverse with a fixed stack and
 * no recursion. Leaves hold 0 to 2 triangles (0 only under clip nodes).
 */
#ifndef Q_KDTREE_H
#define Q_KDTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A quad node is 6 words (24 bytes) of q_kdtree.words:
 *   [0] the top branch's planes, [1] its left child's, [2] its right child's
 *       (each: the plane bounding the left side from above in the low 16 bits,
 *       the one bounding the right side from below in the high 16 bits; steps
 *       of the tree's grid, rounded outwards so that they still bound their
 *       subtrees);
 *   [3] the four lanes (left child's left and right side, right child's left
 *       and right side), 8 bits each (lane k in bits 8k..8k+7): a quad lane's
 *       byte offset from the lanes' storage, or a leaf lane's first triangle
 *       counted from word 5's, times 4, plus the lane's kind;
 *   [4] the first word of the lanes' storage (bits 0-27) and which lanes
 *       are not empty (bits 28-31);
 *   [5] the first triangle of the node's leaf lanes (bits 0-23), the three
 *       axes (bits 24-29: top, left child, right child), and whether the
 *       left / right child is a leaf (bits 30, 31).
 * A lane of kind 1 or 2 is a leaf of that many triangles, a lane of kind 3
 * a quad node, kind 0 an empty leaf. Leaves store nothing: the build orders
 * the triangles so that every leaf is a run of consecutive triangles, and a
 * quad node's leaf lanes are consecutive runs too, from word 5's triangle
 * on. A child that is a leaf takes its first lane (the second is empty) and
 * planes that bound nothing (Q_KD_PLANE_MAX below, 0 above). */
#define Q_KD_QUAD_WORDS 6u
#define Q_KD_PLANE_MAX 65535u
#define Q_KD_LANE_QUAD 3u
#define Q_KD_BASE_MASK 0x0fffffffu
#define Q_KD_TRI_MASK 0x00ffffffu
static inline uint32_t q_kd_lane_ref(uint32_t meta, uint32_t k) /* lane k's field: offset * 4 | kind */
{
    return (meta >> (8 * k)) & 255u;
}

#define Q_KD_MAX_DEPTH 128
#define Q_KD_MAX_TRIANGLES (1u << 24)

/* The triangles a tree indexes: positions as 3 floats per vertex, or as 3
 * int16 per vertex scaled by qscale (set exactly one of the two), and 16- or
 * 32-bit indices (exactly one of the index pointers is set). */
typedef struct q_kd_mesh {
    const float *positions;
    const uint16_t *indices16;
    const uint32_t *indices32;
    uint32_t triangle_count;
    const int16_t *qpositions;
    float qscale;
} q_kd_mesh;

typedef struct q_kdtree {
    uint32_t *words;      /* quad nodes; the root at word 0 */
    uint32_t word_count;  /* 4 bytes each */
    uint32_t node_count;  /* quad nodes */
    uint32_t depth;       /* binary levels below the root */
    float min[3], max[3]; /* bounds of all triangles, for early rejection */
    float qbase[3], qstep[3]; /* plane grid: plane q on axis a lies at qbase[a] + q * qstep[a] */
    /* Trees from q_kdtree_build (not _sorted) keep the mesh's indices in
     * their own order (leaves are runs of it) and which caller's triangle
     * each of their triangles is; NULL for sorted builds. */
    void *own_indices;
    uint32_t *order;
    uint32_t triangle_count, index_size; /* of own_indices: 2 or 4 bytes */
} q_kdtree;

/* The binary tree, node by node (checks, debug views): a branch is one of
 * the three branches of a quad node (word: the quad node's; kind 4 + slot:
 * 0 the top, 1 its left child, 2 its right child), a leaf (kind 0, 1 or 2:
 * its triangle count) a run of triangles from the tree's triangle word. */
typedef struct q_kd_ref {
    uint32_t word, kind;
} q_kd_ref;

static inline q_kd_ref q_kd_root(void) { return (q_kd_ref){0, 4}; } /* of a tree with word_count > 0 */
static inline int q_kd_is_leaf(q_kd_ref r) { return r.kind < 4; }
static inline uint32_t q_kd_leaf_count(q_kd_ref r) { return r.kind; }
/* A leaf's k-th triangle (k < count), as the caller's mesh numbers it: for
 * a sorted build the mesh as reordered by it. */
static inline uint32_t q_kd_leaf_triangle(const q_kdtree *tree, q_kd_ref r, uint32_t k)
{
    return tree->order ? tree->order[r.word + k] : r.word + k;
}
static inline int q_kd_axis(const q_kdtree *tree, q_kd_ref r) /* branch */
{
    return (int)((tree->words[r.word + 5] >> (24 + 2 * (r.kind - 4))) & 3u);
}
/* A branch's plane (side 0: its left child lies below it; 1: its right child
 * lies above it), in mesh units. */
static inline float q_kdtree_plane(const q_kdtree *tree, q_kd_ref r, int side)
{
    uint32_t q = (tree->words[r.word + r.kind - 4] >> (16 * side)) & 0xffffu;
    int a = q_kd_axis(tree, r);
    return tree->qbase[a] + (float)q * tree->qstep[a];
}
/* A branch's two children. */
static inline void q_kd_children(const q_kdtree *tree, q_kd_ref r, q_kd_ref out[2])
{
    const uint32_t *w = tree->words + r.word;
    uint32_t meta = w[3], slot = r.kind - 4;
    for (uint32_t s = 0; s < 2; s++) {
        uint32_t lane = slot == 0 ? 2 * s : 2 * (slot - 1) + s;
        uint32_t d = q_kd_lane_ref(meta, lane), kind = d & 3u;
        if (slot == 0 && !((w[5] >> (30 + s)) & 1u))
            out[s] = (q_kd_ref){r.word, 5u + s}; /* a branch of the same quad node */
        else if (kind == Q_KD_LANE_QUAD)
            out[s] = (q_kd_ref){(w[4] & Q_KD_BASE_MASK) + (d >> 2), 4u};
        else
            out[s] = (q_kd_ref){(w[5] & Q_KD_TRI_MASK) + (d >> 2), kind};
    }
}

/* Builds the tree; false when out of memory or over Q_KD_MAX_TRIANGLES. An
 * empty mesh gives a tree with no nodes. The tree keeps a copy of the
 * mesh's indices in its own order (6 or 12 bytes per triangle) and the
 * caller's number of each triangle (4 bytes); queries report the caller's
 * numbers. Free with q_kdtree_free. */
bool q_kdtree_build(q_kdtree *tree, const q_kd_mesh *mesh);
/* The same tree, but the mesh's own indices are reordered in place (indices16
 * or indices32: the very arrays mesh points to, writable; false otherwise)
 * so that leaves are runs of them and the tree stores no triangle numbers.
 * Queries then number triangles in the new order. order_out (NULL or
 * triangle_count words) receives, for each triangle in the new order, its
 * number before. */
bool q_kdtree_build_sorted(q_kdtree *tree, const q_kd_mesh *mesh, uint16_t *indices16, uint32_t *indices32,
                           uint32_t *order_out);
void q_kdtree_free(q_kdtree *tree);
size_t q_kdtree_bytes(const q_kdtree *tree); /* the struct, its words and (plain builds) its own indices and order */

/* Ray segment query. Returns the closest hit with t in [0, tmax] (t in units
 * of |dir|) and its triangle, or false. Triangles are two-sided. Tests are
 * exact up to Q_KD_EPSILON: planes are widened by it during traversal (and
 * by a bound on the rounding of the crossing computation) so that hits on a
 * split plane are never lost to rounding. */
#define Q_KD_EPSILON 1e-5f
bool q_kdtree_raycast(const q_kdtree *tree, const q_kd_mesh *mesh, const float origin[3], const float dir[3],
                      float tmax, float *t_out, uint32_t *triangle_out);

/* Whether anything is hit in [0, tmax]: stops at the first hit found (not
 * necessarily the closest). For visibility and shadow rays. */
bool q_kdtree_raycast_any(const q_kdtree *tree, const q_kd_mesh *mesh, const float origin[3], const float dir[3],
                          float tmax);

/* Calls fn for every hit in [0, tmax] (unordered); stops early when fn
 * returns false. */
typedef bool (*q_kd_hit_fn)(void *ud, float t, uint32_t triangle);
void q_kdtree_raycast_all(const q_kdtree *tree, const q_kd_mesh *mesh, const float origin[3], const float dir[3],
                          float tmax, q_kd_hit_fn fn, void *ud);

/* Collects up to cap triangles whose bounds overlap [min, max] (a superset
 * of the triangles that intersect the box); returns how many there are in
 * all (may exceed cap: call again with a bigger array). */
size_t q_kdtree_query_aabb(const q_kdtree *tree, const q_kd_mesh *mesh, const float min[3], const float max[3],
                           uint32_t *out, size_t cap);

/* Ray against one triangle (Moller-Trumbore, two-sided): t or a negative
 * value for a miss. Shared with brute-force checks. */
float q_ray_triangle(const float o[3], const float d[3], const float a[3], const float b[3], const float c[3]);

#endif
