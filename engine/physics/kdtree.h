/* Loose kD tree over a triangle mesh (seed 000, "Loose kD tree").
 *
 * Each branch splits one axis with two planes: every triangle of the left
 * child lies below planes[0], every triangle of the right child above
 * planes[1] (the planes are recomputed from the children's vertices, so they
 * fit tightly and may overlap). Leaves hold up to two triangles. A node is 8
 * bytes: the seed's 12-byte node with its two float planes stored as 16-bit
 * steps of a grid over the tree's bounds, rounded outwards (rays within 2%,
 * 19.2 instead of 23.6 bytes per triangle with the mesh; bench/RESULTS.md).
 * All nodes live in one array with the two children of a branch adjacent, so
 * a branch stores only its first child's index.
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

/* 8 bytes. Branch: the two planes as 16-bit steps of the tree's grid
 * (q_kdtree_plane decodes them; rounded outwards, so that they still bound
 * their children), axis in the low 2 bits of axis_index and the first
 * child's index in the high 30. Leaf: axis 3, the triangle count (0..2) in
 * the next 2 bits, the first triangle in the high 28, the second in
 * u.triangle1. */
typedef struct q_kd_node {
    union {
        uint16_t planes[2]; /* branch: [0] bounds the left child above, [1] the right one below */
        uint32_t triangle1; /* leaf */
    } u;
    uint32_t axis_index;
} q_kd_node;

#ifdef __cplusplus
static_assert(sizeof(q_kd_node) == 8, "kD nodes must stay 8 bytes");
#else
_Static_assert(sizeof(q_kd_node) == 8, "kD nodes must stay 8 bytes");
#endif

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
    q_kd_node *nodes;
    uint32_t node_count;
    uint32_t depth;   /* levels below the root */
    float min[3], max[3]; /* bounds of all triangles, for early rejection */
    float qbase[3], qstep[3]; /* plane grid: plane q on axis a lies at qbase[a] + q * qstep[a] */
} q_kdtree;

/* A branch's plane (side 0: the left child lies below it; 1: the right
 * child lies above it), in mesh units. */
static inline float q_kdtree_plane(const q_kdtree *tree, const q_kd_node *n, int side)
{
    uint32_t a = n->axis_index & 3u;
    return tree->qbase[a] + (float)n->u.planes[side] * tree->qstep[a];
}
static inline int q_kd_is_leaf(const q_kd_node *n) { return (n->axis_index & 3u) == 3u; }
static inline uint32_t q_kd_child(const q_kd_node *n) { return n->axis_index >> 2; } /* branch */
static inline uint32_t q_kd_leaf_count(const q_kd_node *n) { return (n->axis_index >> 2) & 3u; }
static inline uint32_t q_kd_leaf_triangle(const q_kd_node *n, int k) /* k < q_kd_leaf_count */
{
    return k ? n->u.triangle1 : n->axis_index >> 4;
}

/* Builds the tree; false when out of memory or over Q_KD_MAX_TRIANGLES. An
 * empty mesh gives a tree with no nodes. Free with q_kdtree_free. */
bool q_kdtree_build(q_kdtree *tree, const q_kd_mesh *mesh);
void q_kdtree_free(q_kdtree *tree);
size_t q_kdtree_bytes(const q_kdtree *tree);

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
