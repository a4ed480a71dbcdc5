/* Private to the narrowphase (gjk.c, collide.c, collide_terrain.c). */
#ifndef Q_COLLIDE_INTERNAL_H
#define Q_COLLIDE_INTERNAL_H

#include "physics/collide.h"

/* A convex set for GJK: a collider placed by x (sphere and capsule reduced
 * to their core point or segment: the radius is handled by the caller), or
 * up to 4 world points (a point, segment or triangle). */
typedef struct q_convex {
    const q_collider *s; /* NULL: the points */
    q_xform x;
    double pts[4][3];
    int n;
    double radius; /* rounding of the core: sphere and capsule radius, else 0 */
} q_convex;

void q_convex_from_collider(q_convex *c, const q_collider *s, const q_xform *x);
void q_convex_support(const q_convex *c, const double d[3], double out[3]);

/* GJK distance between the cores (radius ignored): >= 0, with closest
 * points. Returns 0 when they overlap (pa, pb then meaningless). */
double q_gjk_core(const q_convex *a, const q_convex *b, double pa[3], double pb[3]);
/* EPA on the cores, when they overlap: penetration depth >= 0 and the
 * normal from A to B (the direction to move B out); false when it failed. */
bool q_epa_core(const q_convex *a, const q_convex *b, double normal[3], double *depth, double pa[3], double pb[3]);

/* A polytope in world space for SAT: a box or hull collider placed by x, or
 * a triangle (s NULL; bv[0..2], unit normal tn; one face, 3 edges). */
#define Q_POLY_HULL_MAX 64

typedef struct q_poly {
    const q_collider *s;
    q_xform x;
    double bv[8][3];    /* box corners (bit 0: +x, 1: +y, 2: +z) or triangle */
    double baxis[3][3]; /* box axes */
    double tn[3];
    double c[3];        /* a centre (bounds centre; triangle centroid) */
    uint32_t nf, ne;
    /* hulls of up to Q_POLY_HULL_MAX vertices: the vertices in world space,
     * so support queries need no rotation (last: not cleared for triangles) */
    uint32_t hn;
    double hv[Q_POLY_HULL_MAX][3];
} q_poly;

void q_poly_from_collider(q_poly *p, const q_collider *s, const q_xform *x);
void q_poly_from_triangle(q_poly *p, const double a[3], const double b[3], const double c[3]);

enum {
    Q_NP_ONE_SIDED = 1,  /* the polytope is a one-sided triangle: no axis below its face */
    Q_NP_FACE_ONLY = 2,  /* use the polytope's face 0 as the only axis */
    Q_NP_CLIP_STRICT = 4 /* with FACE_ONLY: no contact when nothing projects on the face */
};

/* Core c (sphere point / capsule segment with radius) against polytope p;
 * normal from p to c. Returns 1 with a manifold, else 0. */
int q_core_poly(const q_poly *p, const q_convex *c, double margin, unsigned flags, q_manifold *m);
/* Polytope a against polytope b (SAT + clipping); normal from a to b. */
int q_poly_poly(const q_poly *a, const q_poly *b, double margin, unsigned flags, q_manifold *m);
/* At most 4 of n points into m: deepest, then largest area. */
void q_reduce_points(const double normal[3], q_contact_point *pts, int n, q_manifold *m);
/* Conservative advancement of a (translated by delta) against b. */
bool q_cast_convex(const q_convex *a, const double delta[3], const q_convex *b, double tol, q_cast_hit *hit);

void q_collider_local_support(const q_collider *s, const double d[3], double o[3]);

#endif
