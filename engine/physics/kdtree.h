/* Loose kD tree over a triangle mesh (seed 000, "Loose kD tree").
 *
 * Each branch splits one axis with two planes: every triangle of the left
 * child lies below splits[0], every triangle of the right child above
 * splits[1] (the planes are recomputed from the children's vertices, so they
 * fit tightly and may overlap). Leaves hold up to two triangles. A node is 12
 * bytes; all nodes live in one array with the two children of a branch
 * adjacent, so a branch stores only its first child's index.
 *
 * Build: split the longest axis of the node's bounds at the mean of the
 * triangle midpoints, partition by midpoint, and fall back to a median split
 * (by midpoint order) when a side would get under 25% of the triangles; nodes
 * of up to 8 triangles get an even left side (fewer half-empty leaves). Where
 * more than 15% of what traversal knows of a node's region is empty on some
 * axis, a clip node (one full child, one empty leaf) cuts it first. That
 * bounds the depth to Q_KD_MAX_DEPTH for any mesh of up to 2^24 triangles, so
 * queries traverse with a fixed stack and no recursion. Leaves hold 0 to 2
 * triangles (0 only under clip nodes).
 */
#ifndef Q_KDTREE_H
#define Q_KDTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct q_kd_node {
    union {
        float splits[2];        /* branch */
        uint32_t triangles[2];  /* leaf */
    } u;
    uint32_t axis_index; /* low 2 bits: axis 0..2, or 3 for a leaf; high 30:
                            first child (branch) or triangle count (leaf) */
} q_kd_node;

#ifdef __cplusplus
static_assert(sizeof(q_kd_node) == 12, "kD nodes must stay 12 bytes");
#else
_Static_assert(sizeof(q_kd_node) == 12, "kD nodes must stay 12 bytes");
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
} q_kdtree;

/* Builds the tree; false when out of memory or over Q_KD_MAX_TRIANGLES. An
 * empty mesh gives a tree with no nodes. Free with q_kdtree_free. */
bool q_kdtree_build(q_kdtree *tree, const q_kd_mesh *mesh);
void q_kdtree_free(q_kdtree *tree);
size_t q_kdtree_bytes(const q_kdtree *tree);

/* Ray segment query. Returns the closest hit with t in [0, tmax] (t in units
 * of |dir|) and its triangle, or false. Triangles are two-sided. Tests are
 * exact up to Q_KD_EPSILON: planes are widened by it during traversal so
 * that hits on a split plane are never lost to rounding. */
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
