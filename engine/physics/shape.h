/* Colliders, the collision shapes of rigid bodies: sphere, box, capsule,
 * convex hull and compound of convex parts; their bounds, mass properties
 * and support functions. (They are called colliders because q_shape is the
 * edit shape of voxel/terrain.h.) Colliders are immutable once made.
 *
 * Coordinates. A shape lives in its own frame ("shape space"); a q_xform
 * places that frame in the world. Spheres, boxes and capsules are centred on
 * the origin (the capsule's core segment runs along local Y from
 * -half_height to +half_height). Hull vertices are wherever the points were;
 * q_collider_mass reports the centre of mass, and the body keeps the offset.
 */
#ifndef Q_COLLIDER_H
#define Q_COLLIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum q_collider_kind {
    Q_COLLIDER_SPHERE = 0,
    Q_COLLIDER_BOX = 1,
    Q_COLLIDER_CAPSULE = 2,
    Q_COLLIDER_HULL = 3,
    Q_COLLIDER_COMPOUND = 4,
} q_collider_kind;

/* A rigid placement: position and unit quaternion (x, y, z, w). */
typedef struct q_xform {
    double p[3];
    double q[4];
} q_xform;

/* A convex polytope in shape space. Faces are convex polygons (coplanar
 * triangles of the hull merged), vertices listed counter-clockwise seen from
 * outside; planes are unit normal and offset with n . x = d on the face. */
typedef struct q_hull_data {
    uint32_t vertex_count, face_count, edge_count;
    double *vertices;          /* 3 per vertex */
    double *planes;            /* 4 per face: nx, ny, nz, d */
    uint32_t *face_start;      /* face_count + 1 offsets into face_vertices */
    uint32_t *face_vertices;
    uint32_t *edges;           /* 2 vertex indices per unique edge */
    uint32_t *edge_faces;      /* 2 faces per edge: the one where it runs
                                  edges[0] -> edges[1], then the other */
} q_hull_data;

typedef struct q_collider q_collider;

typedef struct q_collider_part {
    q_collider *shape;  /* a hull, sphere, box or capsule (not a compound) */
    q_xform local;   /* placement of the part in the compound's frame */
} q_collider_part;

struct q_collider {
    q_collider_kind kind;
    double radius;        /* sphere, capsule */
    double half[3];       /* box half extents */
    double half_height;   /* capsule: half length of the core segment (local Y) */
    q_hull_data *hull;    /* hull */
    uint32_t part_count;  /* compound */
    q_collider_part *parts;  /* compound (owned: parts are freed with it) */
    double min[3], max[3]; /* bounds in shape space */
};

/* Constructors check their input (finite, positive sizes) and return NULL
 * with a message in err otherwise. */
q_collider *q_collider_sphere(double radius, char *err, size_t errlen);
q_collider *q_collider_box(const double half[3], char *err, size_t errlen);
q_collider *q_collider_capsule(double radius, double half_height, char *err, size_t errlen);
/* Convex hull of n points (geom/quickhull.h). Flat, collinear or coincident
 * points (a hull with no volume) are refused with a message. */
q_collider *q_collider_hull(const double *points, size_t n, char *err, size_t errlen);
/* A hull from its arrays exactly as another hull holds them (for files:
 * geometry and feature numbering survive a round trip bit for bit). The
 * arrays are copied after a consistency check; NULL with a message when they
 * do not describe a hull's structure. */
q_collider *q_collider_hull_data(const q_hull_data *d, char *err, size_t errlen);
/* Takes ownership of the parts' shapes (on failure too). */
q_collider *q_collider_compound(q_collider_part *parts, uint32_t count, char *err, size_t errlen);
void q_collider_free(q_collider *s);

struct q_mesh;
/* A collider for a triangle mesh (mesh_collider.c): the hull of its
 * vertices when the mesh is closed and convex (its volume is the hull's
 * within 1e-3), else its convex decomposition (geom/hacd.h, default
 * parameters; max_parts 0 = no limit) as a compound of hulls, or one hull
 * when one part is enough. Vertices stay where they are
 * (shape space = mesh space). NULL with a message for a mesh without
 * volume or one the decomposition refuses. */
q_collider *q_collider_from_mesh(const struct q_mesh *m, size_t max_parts, char *err, size_t errlen);

/* Mass properties at density 1: volume, centre of mass (shape space) and
 * inertia tensor about the centre of mass (row-major 3x3). */
typedef struct q_mass_props {
    double volume;
    double center[3];
    double inertia[9];
} q_mass_props;
q_mass_props q_collider_mass(const q_collider *s);

/* World-space bounds of the shape placed by t. */
void q_collider_bounds(const q_collider *s, const q_xform *t, double min[3], double max[3]);

/* Support point: the point of the shape (placed by t) farthest along dir
 * (world space; need not be unit). Compounds are not convex: NULL shapes
 * of kind COMPOUND are refused by the caller. */
void q_collider_support(const q_collider *s, const q_xform *t, const double dir[3], double out[3]);

/* Whether a world point is inside the shape. */
bool q_collider_contains(const q_collider *s, const q_xform *t, const double point[3]);

/* Ray against the shape: the smallest t in [0, tmax] with origin + t dir on
 * its surface (t = 0 when the origin is inside), the outward normal there. */
bool q_collider_raycast(const q_collider *s, const q_xform *t, const double origin[3], const double dir[3],
                     double tmax, double *t_hit, double normal[3]);

/* Triangle mesh of the shape in shape space (spheres and capsules
 * tessellated), for drawing and Body:mesh(). Caller frees with q_free. */
bool q_collider_triangles(const q_collider *s, double **vertices, uint32_t *vertex_count, uint32_t **indices,
                       uint32_t *triangle_count);

/* Transform helpers shared by the physics code. */
void q_xform_point(const q_xform *t, const double in[3], double out[3]);
void q_xform_vector(const q_xform *t, const double in[3], double out[3]);
void q_xform_inverse_point(const q_xform *t, const double in[3], double out[3]);
void q_xform_inverse_vector(const q_xform *t, const double in[3], double out[3]);
/* a * b: first b, then a. */
q_xform q_xform_mul(const q_xform *a, const q_xform *b);

#endif
