/* 3D quickhull with plane objects shared by coplanar faces (see quickhull.h).
 *
 * The build follows Barber et al. (1996): an initial tetrahedron, an outside
 * ("conflict") list per face, and repeatedly the farthest outside point (the
 * eye) replaces the faces it sees with a cone over their horizon.
 *
 * Robustness comes from design note 001 rather than from exact arithmetic:
 *  - one distance s: a point is outside a plane when more than s above it;
 *  - faces do not own planes, planes own faces. A new cone face joins the
 *    plane of the face across its horizon edge, or of its neighbour in the
 *    cone, when its corners are within s of that plane. Visibility is
 *    computed once per plane per eye, so coplanar triangles are all visible
 *    or all hidden and never fold over one another;
 *  - invariant: every corner of a face is within s of the face's plane (a new
 *    plane passes exactly through its triangle; a join checks the corner that
 *    is not already on the plane);
 *  - a cone face may not fold against the hidden face across its horizon
 *    edge (that face's far corner more than s above it, or the interior
 *    point in front of it): the hidden face's plane then joins the visible
 *    set, as Gregorius merges non-convex faces;
 *  - points within s of a face are kept in a near list, like qhull's
 *    coplanar sets, and re-filed when the face goes or its horizon moves, so
 *    a point tolerated once is tested against the faces that cover it later;
 *  - degenerate vertices are one vertex: an eye within 2s of a hull vertex
 *    is dropped (a spatial hash of the vertices);
 *  - the horizon must be one simple cycle; when tolerance pinches the
 *    visible region, the eye is skipped and counted (info->skipped) instead
 *    of building a non-manifold mesh.
 * After the build, neighbouring planes whose vertices fit within s of one
 * plane are merged (their first triangles may have been thin and tilted),
 * each plane's region is re-triangulated from its boundary loop as the upper
 * hull of its corners (gift wrapping, Delaunay among ties), chains of
 * vertices along the edge of two planes are simplified, and triangles still
 * facing against their plane are flipped or have their short edge
 * collapsed.
 *
 * Flat input is detected before the build: when the points are within s of
 * the plane of the initial triangle, or of the least-squares plane, the 2D
 * quickhull (quickhull2d.c) runs on their projection.
 */
#include "geom/quickhull.h"

#include "core/alloc.h"
#include "core/hashmap.h"
#include "geom/quickhull_lean.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define NONE UINT32_MAX
#define MAX_COORDINATE 1e30

double q_quantization_distance(const double min[3], const double max[3])
{
    double d2 = 0;
    for (int a = 0; a < 3; a++) {
        double e = max[a] - min[a];
        d2 += e * e;
    }
    double s = Q_QUANTIZATION_RELATIVE * sqrt(d2);
    return s > 0 ? s : DBL_MIN;
}

q_hull_def q_default_hull_def(void)
{
    return (q_hull_def){.epsilon = 0};
}

size_t q_hull_bound(size_t point_count)
{
    return point_count >= 3 ? 6 * (point_count - 2) : 0;
}

/* ---- small vector helpers ---- */

static void sub3(const double *a, const double *b, double *r)
{
    r[0] = a[0] - b[0];
    r[1] = a[1] - b[1];
    r[2] = a[2] - b[2];
}

static double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross3(const double *a, const double *b, double *r)
{
    r[0] = a[1] * b[2] - a[2] * b[1];
    r[1] = a[2] * b[0] - a[0] * b[2];
    r[2] = a[0] * b[1] - a[1] * b[0];
}

static double norm3(const double *a)
{
    return sqrt(dot3(a, a));
}

/* Distance from x to the line through a and b. */
static double dist_to_line(const double *a, const double *b, const double *x)
{
    double e[3], d[3], c[3];
    sub3(b, a, e);
    sub3(x, a, d);
    cross3(e, d, c);
    double l = norm3(e);
    return l > 0 ? norm3(c) / l : norm3(d);
}

static double dist_to_segment(const double *a, const double *b, const double *x)
{
    double e[3], d[3];
    sub3(b, a, e);
    sub3(x, a, d);
    double ll = dot3(e, e);
    double t = ll > 0 ? dot3(d, e) / ll : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double r[3] = {d[0] - t * e[0], d[1] - t * e[1], d[2] - t * e[2]};
    return norm3(r);
}

/* u, v with u x v = n (unit, n unit). */
static void plane_basis(const double *n, double *u, double *v)
{
    double t[3] = {0, 0, 0};
    int a = fabs(n[0]) < fabs(n[1]) ? (fabs(n[0]) < fabs(n[2]) ? 0 : 2) : (fabs(n[1]) < fabs(n[2]) ? 1 : 2);
    t[a] = 1;
    cross3(t, n, u);
    double l = norm3(u);
    for (int k = 0; k < 3; k++)
        u[k] /= l;
    cross3(n, u, v);
}

static void smallest_eigenvector(double A[3][3], double out[3]);

static uint64_t cell_key(const int64_t k[3])
{
    uint64_t h = (uint64_t)k[0] * 0x9E3779B97F4A7C15ull ^ (uint64_t)k[1] * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)k[2] * 0x165667B19E3779F9ull;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 29);
}

/* ---- hull state ---- */

typedef struct face {
    uint32_t v[3];    /* point indices, counter-clockwise seen from outside */
    uint32_t twin[3]; /* half-edge 3 * g + k across edge v[k] -> v[k + 1] */
    uint32_t plane;
    uint32_t head;  /* conflict list (points more than s above the plane) */
    uint32_t chead; /* near list: points within s of the plane; they are
                       re-partitioned with the conflicts when the face goes,
                       so a point tolerated once is checked against every
                       face that later covers it */
    uint32_t far;   /* farthest point of the list */
    uint32_t mark;  /* stamp of the last visit */
    double far_dist;
    uint8_t alive, visible, queued;
} face;

typedef struct plane {
    double n[3], d; /* n . x = d, n unit, pointing out */
    double dist;    /* signed distance of the current eye, when stamp matches */
    uint32_t stamp;
    uint32_t faces; /* live faces on this plane; 0 = free */
} plane;

typedef struct ring_edge {
    uint32_t a, b;  /* horizon edge a -> b, as in the visible face */
    uint32_t twin;  /* the hidden face's half-edge b -> a */
    uint32_t plane; /* the hidden face's plane */
} ring_edge;

typedef struct hull {
    const double *p; /* centred points */
    size_t n;
    double s;
    double weld;         /* 2s: eyes this close to a hull vertex are dropped */
    double interior[3];  /* centroid of the first tetrahedron: always inside */
    uint32_t stamp;      /* step number: validity of plane eye distances */
    uint32_t mark_stamp; /* face marks and per-point scratch */
    bool oom;
    size_t skipped;

    face *f;
    size_t nf, capf;
    uint32_t free_face;
    plane *pl;
    size_t npl, cappl;
    uint32_t free_plane;

    uint32_t *next;   /* per point: conflict list link */
    uint32_t *vchain; /* per point: next hull vertex in the same cell */
    q_hashmap cells;  /* cell of size 2s -> a hull vertex in it */
    uint32_t *vstamp; /* per point scratch, valid when equal to a stamp */
    uint32_t *vval;   /* per point scratch value */

    uint32_t *active; /* faces that may hold conflicts (a stack) */
    size_t nactive, capactive;
    uint32_t *vis; /* visible faces of the current step */
    size_t nvis, capvis;
    ring_edge *hz, *ring;
    size_t nhz, caphz, capring;
    uint32_t *newf;
    size_t capnewf;
    uint32_t *orphans;
    size_t norphans, caporphans;
} hull;

/* Grows *arr to hold need elements of size elem; false (and h->oom) on failure. */
static bool reserve(hull *h, void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    void *r = q_realloc(*arr, *cap * elem, nc * elem);
    if (!r) {
        h->oom = true;
        return false;
    }
    *arr = r;
    *cap = nc;
    return true;
}

#define RESERVE(h, arr, cap, need) reserve((h), (void **)&(arr), &(cap), (need), sizeof *(arr))

static const double *pt(const hull *h, uint32_t i)
{
    return h->p + 3 * (size_t)i;
}

static uint32_t new_face(hull *h, uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t id;
    if (h->free_face != NONE) {
        id = h->free_face;
        h->free_face = h->f[id].head;
    } else {
        if (!RESERVE(h, h->f, h->capf, h->nf + 1))
            return NONE;
        id = (uint32_t)h->nf++;
    }
    h->f[id] = (face){.v = {a, b, c},
                      .twin = {NONE, NONE, NONE},
                      .plane = NONE,
                      .head = NONE,
                      .chead = NONE,
                      .far = NONE,
                      .alive = 1};
    return id;
}

static void kill_face(hull *h, uint32_t id)
{
    face *F = &h->f[id];
    F->alive = 0;
    plane *P = &h->pl[F->plane];
    if (--P->faces == 0) {
        P->stamp = h->free_plane; /* free-list link */
        h->free_plane = F->plane;
    }
    F->head = h->free_face;
    h->free_face = id;
}

/* A plane through three points (a plane of its own for a new triangle). */
static uint32_t new_plane(hull *h, uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t id;
    if (h->free_plane != NONE) {
        id = h->free_plane;
        h->free_plane = h->pl[id].stamp;
    } else {
        if (!RESERVE(h, h->pl, h->cappl, h->npl + 1))
            return NONE;
        id = (uint32_t)h->npl++;
    }
    const double *A = pt(h, a), *B = pt(h, b), *C = pt(h, c);
    double e1[3], e2[3], n[3];
    sub3(B, A, e1);
    sub3(C, A, e2);
    cross3(e1, e2, n);
    double l = norm3(n);
    assert(l > 0);
    plane *P = &h->pl[id];
    for (int k = 0; k < 3; k++)
        P->n[k] = n[k] / l;
    P->d = (dot3(P->n, A) + dot3(P->n, B) + dot3(P->n, C)) / 3;
    P->stamp = 0;
    P->faces = 0;
    return id;
}

static double plane_dist(const hull *h, uint32_t plane_id, uint32_t point)
{
    const plane *P = &h->pl[plane_id];
    return dot3(P->n, pt(h, point)) - P->d;
}

/* The eye's distance to a plane, computed once per plane per step: every
 * face on the plane gets the same answer. */
static double eye_dist(hull *h, uint32_t plane_id, uint32_t eye)
{
    plane *P = &h->pl[plane_id];
    if (P->stamp != h->stamp) {
        P->dist = plane_dist(h, plane_id, eye);
        P->stamp = h->stamp;
    }
    return P->dist;
}

static void queue_face(hull *h, uint32_t id)
{
    if (h->f[id].queued || !RESERVE(h, h->active, h->capactive, h->nactive + 1))
        return;
    h->f[id].queued = 1;
    h->active[h->nactive++] = id;
}

/* Whether a hull vertex (present or past: the hull only grows, so a past
 * one is inside it) lies within h->weld of point. Cells of size 2 weld: the
 * ball meets the 8 cells nearest to the point. */
static bool near_vertex(const hull *h, uint32_t point)
{
    const double *p = pt(h, point);
    int64_t base[3];
    int dir[3];
    for (int a = 0; a < 3; a++) {
        double q = p[a] / (2 * h->weld), f = floor(q);
        base[a] = (int64_t)f;
        dir[a] = q - f < 0.5 ? -1 : 1;
    }
    for (int corner = 0; corner < 8; corner++) {
        int64_t k[3];
        for (int a = 0; a < 3; a++)
            k[a] = base[a] + ((corner >> a) & 1 ? dir[a] : 0);
        for (uint32_t r = q_hashmap_get(&h->cells, cell_key(k)); r != NONE; r = h->vchain[r]) {
            double e[3];
            sub3(pt(h, r), p, e);
            if (dot3(e, e) <= h->weld * h->weld)
                return true;
        }
    }
    return false;
}

static void add_vertex(hull *h, uint32_t point)
{
    const double *p = pt(h, point);
    int64_t k[3];
    for (int a = 0; a < 3; a++)
        k[a] = (int64_t)floor(p[a] / (2 * h->weld));
    uint64_t key = cell_key(k);
    h->vchain[point] = q_hashmap_get(&h->cells, key);
    if (!q_hashmap_set(&h->cells, key, point))
        h->oom = true;
}

static void add_conflict(hull *h, uint32_t id, uint32_t point, double d)
{
    face *F = &h->f[id];
    h->next[point] = F->head;
    F->head = point;
    if (F->far == NONE || d > F->far_dist) {
        F->far = point;
        F->far_dist = d;
    }
    queue_face(h, id);
}

/* Files point under the face it is farthest above: the conflict list when
 * more than s above, the near list when within s, nowhere when more than s
 * below every face (it stays inside: the hull only grows). */
static void assign_point(hull *h, uint32_t point, const uint32_t *faces, size_t nfaces)
{
    double best = -INFINITY;
    uint32_t bf = NONE, last_plane = NONE;
    double d = 0;
    for (size_t i = 0; i < nfaces; i++) {
        uint32_t pid = h->f[faces[i]].plane;
        if (pid != last_plane) {
            d = plane_dist(h, pid, point);
            last_plane = pid;
        }
        if (d > best) {
            best = d;
            bf = faces[i];
        }
    }
    if (best > h->s) {
        add_conflict(h, bf, point, best);
    } else if (best >= -h->s) {
        h->next[point] = h->f[bf].chead;
        h->f[bf].chead = point;
    }
}

static void set_twins(hull *h, uint32_t he, uint32_t other)
{
    h->f[he / 3].twin[he % 3] = other;
    h->f[other / 3].twin[other % 3] = he;
}

/* ---- the build ---- */

static bool build_tetrahedron(hull *h, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
    double e1[3], e2[3], nn[3], w[3];
    sub3(pt(h, b), pt(h, a), e1);
    sub3(pt(h, c), pt(h, a), e2);
    cross3(e1, e2, nn);
    sub3(pt(h, d), pt(h, a), w);
    if (dot3(nn, w) > 0) { /* d above abc: flip the base so that d is inside */
        uint32_t t = b;
        b = c;
        c = t;
    }
    for (int k = 0; k < 3; k++)
        h->interior[k] = 0.25 * (pt(h, a)[k] + pt(h, b)[k] + pt(h, c)[k] + pt(h, d)[k]);
    add_vertex(h, a);
    add_vertex(h, b);
    add_vertex(h, c);
    add_vertex(h, d);
    /* Base a b c (d below it), sides a-d-b... each wound outward. */
    uint32_t tri[4][3] = {{a, b, c}, {a, d, b}, {b, d, c}, {c, d, a}};
    uint32_t ids[4];
    for (int i = 0; i < 4; i++) {
        ids[i] = new_face(h, tri[i][0], tri[i][1], tri[i][2]);
        if (ids[i] == NONE)
            return false;
        uint32_t pid = new_plane(h, tri[i][0], tri[i][1], tri[i][2]);
        if (pid == NONE)
            return false;
        h->f[ids[i]].plane = pid;
        h->pl[pid].faces = 1;
    }
    /* Pair each directed edge with its reverse. */
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 4; j++)
                for (int m = 0; m < 3; m++)
                    if (tri[i][k] == tri[j][(m + 1) % 3] && tri[i][(k + 1) % 3] == tri[j][m])
                        h->f[ids[i]].twin[k] = 3 * ids[j] + (uint32_t)m;
    for (uint32_t i = 0; i < h->n; i++)
        if (i != a && i != b && i != c && i != d)
            assign_point(h, i, ids, 4);
    return !h->oom;
}

/* Removes point from face id's conflict list and recomputes its farthest. */
static void drop_conflict(hull *h, uint32_t id, uint32_t point)
{
    face *F = &h->f[id];
    uint32_t *link = &F->head;
    while (*link != NONE && *link != point)
        link = &h->next[*link];
    if (*link == point)
        *link = h->next[point];
    F->far = NONE;
    F->far_dist = 0;
    for (uint32_t q = F->head; q != NONE; q = h->next[q]) {
        double d = plane_dist(h, F->plane, q);
        if (F->far == NONE || d > F->far_dist) {
            F->far = q;
            F->far_dist = d;
        }
    }
}

/* Collects the visible faces from face start and the horizon in cycle order
 * (h->ring). False when the horizon is not one simple cycle. */
static bool find_horizon(hull *h, uint32_t start, uint32_t eye, size_t *ring_len)
{
    double s = h->s;
    h->nvis = 0;
    h->mark_stamp++;
    face *F = &h->f[start];
    F->mark = h->mark_stamp;
    F->visible = eye_dist(h, F->plane, eye) > s;
    if (!F->visible || !RESERVE(h, h->vis, h->capvis, 1))
        return false;
    h->vis[h->nvis++] = start;
    for (size_t i = 0; i < h->nvis; i++) {
        uint32_t g = h->vis[i];
        for (int k = 0; k < 3; k++) {
            uint32_t nb = h->f[g].twin[k] / 3;
            face *N = &h->f[nb];
            if (N->mark == h->mark_stamp)
                continue;
            N->mark = h->mark_stamp;
            N->visible = eye_dist(h, N->plane, eye) > s;
            if (N->visible) {
                if (!RESERVE(h, h->vis, h->capvis, h->nvis + 1))
                    return false;
                h->vis[h->nvis++] = nb;
            }
        }
    }
    h->nhz = 0;
    for (size_t i = 0; i < h->nvis; i++) {
        const face *G = &h->f[h->vis[i]];
        for (int k = 0; k < 3; k++) {
            const face *N = &h->f[G->twin[k] / 3];
            if (N->visible && N->mark == h->mark_stamp)
                continue;
            if (!RESERVE(h, h->hz, h->caphz, h->nhz + 1))
                return false;
            h->hz[h->nhz++] = (ring_edge){G->v[k], G->v[(k + 1) % 3], G->twin[k], N->plane};
        }
    }
    size_t m = h->nhz;
    if (m < 3 || !RESERVE(h, h->ring, h->capring, m))
        return false;
    for (size_t i = 0; i < m; i++) {
        uint32_t a = h->hz[i].a;
        if (h->vstamp[a] == h->mark_stamp)
            return false; /* pinched: two horizon edges leave one vertex */
        h->vstamp[a] = h->mark_stamp;
        h->vval[a] = (uint32_t)i;
    }
    size_t cur = 0;
    for (size_t i = 0; i < m; i++) {
        h->ring[i] = h->hz[cur];
        uint32_t b = h->hz[cur].b;
        if (h->vstamp[b] != h->mark_stamp)
            return false;
        cur = h->vval[b];
        if (cur == 0 && i + 1 < m)
            return false; /* more than one cycle */
    }
    if (cur != 0)
        return false;
    *ring_len = m;
    return true;
}

static bool add_point(hull *h, uint32_t fid, uint32_t eye)
{
    double s = h->s;
    size_t m = 0;
    /* Design note 001: degenerate vertices are one vertex. Vertices lie up
     * to s off their planes, so the direction of an edge a few s long is
     * noise and its triangles can face any way; an eye within 2s of a hull
     * vertex (present, or past and now inside) is dropped, and is within 2s
     * of the hull. */
    if (near_vertex(h, eye)) {
        drop_conflict(h, fid, eye);
        if (h->f[fid].head != NONE)
            queue_face(h, fid);
        return !h->oom;
    }
    h->stamp++;
    bool found = find_horizon(h, fid, eye, &m);
    /* A cone face must not fold inwards against the hidden face across its
     * horizon edge: when that face's far corner is more than s above the
     * cone face, or the cone face would have the interior point in front of
     * it (the eye sees past a horizon that is convex only within s, where the
     * hidden face rises above the visible one), the hidden face's whole plane
     * joins the visible set and the horizon is found again. */
    for (int round = 0; found && round < 8; round++) {
        bool grown = false;
        for (size_t i = 0; i < m; i++) {
            const ring_edge *r = &h->ring[i];
            plane *across = &h->pl[r->plane];
            if (fabs(across->dist) <= s)
                continue; /* joins that plane */
            const face *G = &h->f[r->twin / 3];
            uint32_t c = G->v[(r->twin % 3 + 2) % 3];
            double e1[3], e2[3], nn[3], w[3];
            sub3(pt(h, r->b), pt(h, r->a), e1);
            sub3(pt(h, eye), pt(h, r->a), e2);
            cross3(e1, e2, nn);
            sub3(pt(h, c), pt(h, r->a), w);
            double l = norm3(nn), in[3];
            sub3(h->interior, pt(h, r->a), in);
            if (l > 0 && (dot3(nn, w) > s * l || dot3(nn, in) >= 0)) {
                across->dist = INFINITY;
                grown = true;
            }
        }
        if (!grown)
            break;
        found = find_horizon(h, fid, eye, &m);
    }
    /* The cone replaces the visible faces: the hull gains the volume between
     * them and the eye. Faces the fold rule made visible can lie above the
     * eye; when they outweigh the rest, the cone would shrink the hull (an
     * eye a little over 2s from a vertex, whose short edge tilts the planes
     * it joins, once let one step flatten a solid onto one plane). Such an
     * eye is skipped like a pinched horizon. */
    if (found) {
        double gain = 0, slack = 0;
        for (size_t i = 0; i < h->nvis; i++) {
            const face *G = &h->f[h->vis[i]];
            double e1[3], e2[3], nn[3], w[3];
            sub3(pt(h, G->v[1]), pt(h, G->v[0]), e1);
            sub3(pt(h, G->v[2]), pt(h, G->v[0]), e2);
            cross3(e1, e2, nn);
            sub3(pt(h, eye), pt(h, G->v[0]), w);
            gain += dot3(nn, w) / 6;
            slack += norm3(nn) / 2 * s;
        }
        if (gain < -slack)
            found = false;
    }
    if (!found) {
        if (h->oom)
            return false;
        drop_conflict(h, fid, eye);
        h->skipped++;
        if (h->f[fid].head != NONE)
            queue_face(h, fid);
        return true;
    }
    /* Orphaned outside points of the faces about to go. */
    h->norphans = 0;
    for (size_t i = 0; i < h->nvis; i++) {
        const face *G = &h->f[h->vis[i]];
        for (int list = 0; list < 2; list++)
            for (uint32_t q = list ? G->chead : G->head; q != NONE; q = h->next[q]) {
                if (q == eye)
                    continue;
                if (!RESERVE(h, h->orphans, h->caporphans, h->norphans + 1))
                    return false;
                h->orphans[h->norphans++] = q;
            }
    }
    for (size_t i = 0; i < h->nvis; i++)
        kill_face(h, h->vis[i]);

    if (!RESERVE(h, h->newf, h->capnewf, m))
        return false;
    for (size_t i = 0; i < m; i++) {
        h->newf[i] = new_face(h, h->ring[i].a, h->ring[i].b, eye);
        if (h->newf[i] == NONE)
            return false;
    }
    for (size_t i = 0; i < m; i++) {
        uint32_t id = h->newf[i];
        set_twins(h, 3 * id, h->ring[i].twin);
        set_twins(h, 3 * id + 1, 3 * h->newf[(i + 1) % m] + 2);
    }
    /* Planes: join the hidden neighbour's plane when the eye is within s of
     * it; else the previous cone face's plane when the far corner is within s
     * of that; else a new plane. Start at a joining face so that runs of
     * coplanar cone faces chain from it. */
    size_t i0 = 0;
    for (size_t i = 0; i < m; i++)
        if (fabs(h->pl[h->ring[i].plane].dist) <= s && h->pl[h->ring[i].plane].stamp == h->stamp) {
            i0 = i;
            break;
        }
    for (size_t j = 0; j < m; j++) {
        size_t i = (i0 + j) % m;
        const ring_edge *r = &h->ring[i];
        uint32_t pid = NONE;
        const plane *across = &h->pl[r->plane];
        if (across->stamp == h->stamp && fabs(across->dist) <= s)
            pid = r->plane;
        else if (j > 0) {
            uint32_t prev = h->f[h->newf[(i + m - 1) % m]].plane;
            if (fabs(plane_dist(h, prev, r->b)) <= s)
                pid = prev;
        }
        if (pid == NONE) {
            pid = new_plane(h, r->a, r->b, eye);
            if (pid == NONE)
                return false;
        }
        h->f[h->newf[i]].plane = pid;
        h->pl[pid].faces++;
    }
    for (size_t k = 0; k < h->norphans; k++)
        assign_point(h, h->orphans[k], h->newf, m);
    /* Near points of the hidden faces along the horizon can be over the new
     * cone rather than over their own face: move those now more than s
     * above a new face to its conflict list. */
    h->mark_stamp++;
    for (size_t i = 0; i < m; i++) {
        uint32_t g = h->ring[i].twin / 3;
        if (h->f[g].mark == h->mark_stamp)
            continue;
        h->f[g].mark = h->mark_stamp;
        uint32_t *link = &h->f[g].chead;
        while (*link != NONE) {
            uint32_t q = *link;
            double best = h->s;
            uint32_t bf = NONE;
            for (size_t j = 0; j < m; j++) {
                double d = plane_dist(h, h->f[h->newf[j]].plane, q);
                if (d > best) {
                    best = d;
                    bf = h->newf[j];
                }
            }
            if (bf == NONE) {
                link = &h->next[q];
                continue;
            }
            *link = h->next[q];
            add_conflict(h, bf, q, best);
        }
    }
    add_vertex(h, eye);
    return !h->oom;
}

/* ---- output: re-triangulate each plane from its boundary ---- */

static bool is_boundary(const hull *h, uint32_t he)
{
    const face *F = &h->f[he / 3];
    return F->plane != h->f[F->twin[he % 3] / 3].plane;
}

/* The boundary half-edge of the same plane that follows he (rotating about
 * its end vertex through the plane's faces); NONE if none is found. */
static uint32_t next_boundary(const hull *h, uint32_t he)
{
    uint32_t cur = 3 * (he / 3) + (he % 3 + 1) % 3;
    for (size_t guard = 0; guard <= h->nf; guard++) {
        if (is_boundary(h, cur))
            return cur;
        uint32_t t = h->f[cur / 3].twin[cur % 3];
        cur = 3 * (t / 3) + (t % 3 + 1) % 3;
    }
    return NONE;
}

/* Scratch for re-triangulating one plane's region. */
typedef struct poly_scratch {
    double *xy, *z;  /* per polygon vertex: plane coordinates, height */
    uint32_t *stack; /* pending sub-polygons (i, j) */
    size_t cap;
    q_hashmap *edges;     /* undirected edges of the output so far */
    const uint32_t *poly; /* local index -> point */
} poly_scratch;

static uint64_t edge_key(uint32_t a, uint32_t b)
{
    return a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
}

/* A new diagonal between local vertices a and c must not be an edge that
 * another plane already has: two planes whose shared chain bends outward
 * would otherwise both cut it off with the same chord, leaving a flap of
 * two coincident triangles. */
static bool diagonal_free(const poly_scratch *ps, uint32_t a, uint32_t c)
{
    return q_hashmap_get(ps->edges, edge_key(ps->poly[a], ps->poly[c])) == Q_HASHMAP_EMPTY;
}

static double cross2(const double *xy, uint32_t a, uint32_t b, uint32_t c)
{
    return (xy[2 * b] - xy[2 * a]) * (xy[2 * c + 1] - xy[2 * a + 1]) -
           (xy[2 * b + 1] - xy[2 * a + 1]) * (xy[2 * c] - xy[2 * a]);
}

static void free_poly_scratch(poly_scratch *ps)
{
    q_free(ps->xy, ps->cap * 2 * sizeof(double));
    q_free(ps->z, ps->cap * sizeof(double));
    q_free(ps->stack, ps->cap * 2 * sizeof(uint32_t));
    ps->xy = ps->z = NULL;
    ps->stack = NULL;
    ps->cap = 0;
}

static bool grow_poly_scratch(hull *h, poly_scratch *ps, size_t k)
{
    size_t cap = ps->cap * 2 > k ? ps->cap * 2 : k;
    free_poly_scratch(ps);
    ps->xy = q_alloc(cap * 2 * sizeof(double));
    ps->z = q_alloc(cap * sizeof(double));
    ps->stack = q_alloc(cap * 2 * sizeof(uint32_t));
    ps->cap = cap;
    if (!ps->xy || !ps->z || !ps->stack) {
        free_poly_scratch(ps);
        h->oom = true;
        return false;
    }
    return true;
}

/* Segments p-q and r-t cross at a point interior to both. */
static bool segments_cross(const double *xy, uint32_t p, uint32_t q, uint32_t r, uint32_t t)
{
    double a = cross2(xy, p, q, r), b = cross2(xy, p, q, t), c = cross2(xy, r, t, p), d = cross2(xy, r, t, q);
    return ((a > 0 && b < 0) || (a < 0 && b > 0)) && ((c > 0 && d < 0) || (c < 0 && d > 0));
}

/* Triangle i w j lies inside the sub-polygon i..j: no other vertex inside
 * or on it, no edge of the sub-polygon across its new sides (only needed
 * when the polygon is not strictly convex). */
static bool triangle_inside(const poly_scratch *ps, uint32_t i, uint32_t w, uint32_t j)
{
    for (uint32_t r = i + 1; r < j; r++) {
        if (r == w)
            continue;
        if (cross2(ps->xy, i, w, r) >= 0 && cross2(ps->xy, w, j, r) >= 0 && cross2(ps->xy, j, i, r) >= 0)
            return false;
    }
    for (uint32_t r = i; r < j; r++)
        if (segments_cross(ps->xy, i, w, r, r + 1) || segments_cross(ps->xy, w, j, r, r + 1))
            return false;
    return true;
}

/* Triangulates a plane's region, polygon poly[0..k) (point indices,
 * counter-clockwise about the unit normal n), writing k - 2 triangles of
 * point indices to out.
 *
 * The region's vertices lie within s of the plane, not on it, so a
 * triangulation chosen in the plane alone can fold inwards and leave a vertex
 * above a neighbouring triangle by s times the ratio of their sizes. This one
 * is the upper hull of the vertices lifted by their height above the plane,
 * by gift wrapping: each chord (i, j) takes the vertex w of the sub-polygon
 * i..j whose triangle tilts least below the chord, so every other vertex is
 * below it. Lifted points within tau of that plane tie, and ties go to the
 * largest angle at w (the Delaunay choice, no slivers on exactly flat
 * regions). O(k^2). */
static bool triangulate(hull *h, poly_scratch *ps, const uint32_t *poly, size_t k, const double *n, uint32_t *out)
{
    if (k == 3) {
        memcpy(out, poly, 3 * sizeof *out);
        return true;
    }
    if (k > ps->cap && !grow_poly_scratch(h, ps, k))
        return false;
    ps->poly = poly;
    double u[3], v[3];
    plane_basis(n, u, v);
    for (size_t i = 0; i < k; i++) {
        const double *p = pt(h, poly[i]);
        ps->xy[2 * i] = dot3(p, u);
        ps->xy[2 * i + 1] = dot3(p, v);
        ps->z[i] = dot3(p, n);
    }
    bool convex = true;
    for (uint32_t i = 0; i < k && convex; i++)
        convex = cross2(ps->xy, (uint32_t)((i + k - 1) % k), i, (uint32_t)((i + 1) % k)) > 0;
    double tau = 1e-6 * h->s; /* far below s, far above rounding */
    size_t sp = 0, t = 0;
    ps->stack[sp++] = 0;
    ps->stack[sp++] = (uint32_t)(k - 1);
    while (sp) {
        uint32_t j = ps->stack[--sp], i = ps->stack[--sp];
        const double *xy = ps->xy;
        double ex = xy[2 * j] - xy[2 * i], ey = xy[2 * j + 1] - xy[2 * i + 1];
        double len = sqrt(ex * ex + ey * ey);
        uint32_t best = NONE;
        double bs = 0, bh = 0, ba = 0;
        /* Pass 0: free diagonals; 1: any diagonal; 2: (a polygon that is not
         * simple in the plane) any triangle with positive area. */
        for (int pass = 0; pass < 3 && best == NONE; pass++)
            for (uint32_t w = i + 1; w < j; w++) {
                double area = cross2(xy, i, w, j);
                if (!(area > 0) || !(len > 0))
                    continue;
                if (pass == 0 && ((w > i + 1 && !diagonal_free(ps, i, w)) || (w + 1 < j && !diagonal_free(ps, w, j))))
                    continue;
                if (!convex && pass < 2 && !triangle_inside(ps, i, w, j))
                    continue;
                double hw = area / len;
                double tw = ((xy[2 * w] - xy[2 * i]) * ex + (xy[2 * w + 1] - xy[2 * i + 1]) * ey) / (len * len);
                double slope = (ps->z[w] - (ps->z[i] + tw * (ps->z[j] - ps->z[i]))) / hw;
                double ax = xy[2 * i] - xy[2 * w], ay = xy[2 * i + 1] - xy[2 * w + 1];
                double bx = xy[2 * j] - xy[2 * w], by = xy[2 * j + 1] - xy[2 * w + 1];
                double angle = atan2(area, ax * bx + ay * by);
                bool take;
                if (best == NONE)
                    take = true;
                else if ((slope - bs) * bh > tau) /* best is below w's plane */
                    take = true;
                else if ((bs - slope) * hw > tau) /* w is below best's plane */
                    take = false;
                else
                    take = angle > ba;
                if (take) {
                    best = w;
                    bs = slope;
                    bh = hw;
                    ba = angle;
                }
            }
        if (best == NONE) /* no triangle with positive area: degenerate, fan */
            best = i + 1;
        out[3 * t] = poly[i];
        out[3 * t + 1] = poly[best];
        out[3 * t + 2] = poly[j];
        t++;
        if (best > i + 1) {
            ps->stack[sp++] = i;
            ps->stack[sp++] = best;
        }
        if (j > best + 1) {
            ps->stack[sp++] = best;
            ps->stack[sp++] = j;
        }
    }
    return true;
}

/* The greedy simplification of one chain A, c1..ck, B shared by planes P and
 * Q (all ci on exactly these two planes): ci is dropped when it and every
 * vertex dropped since the last kept one are within s of the segment from
 * that kept vertex to c(i+1). Each plane keeps at least three vertices. */
static void simplify_chain(hull *h, const uint32_t *seq, size_t len, uint32_t P, uint32_t Q, uint32_t *rem,
                           uint8_t *dropped)
{
    size_t keep = 0;
    for (size_t i = 1; i + 1 < len; i++) {
        bool drop = rem[P] > 3 && rem[Q] > 3;
        for (size_t j = keep + 1; j <= i && drop; j++)
            drop = dist_to_segment(pt(h, seq[keep]), pt(h, seq[i + 1]), pt(h, seq[j])) <= h->s;
        if (drop) {
            dropped[seq[i]] = 1;
            rem[P]--;
            rem[Q]--;
        } else {
            keep = i;
        }
    }
}

typedef struct extract {
    uint32_t *loop_of; /* per half-edge: the loop's first half-edge, NONE */
    uint32_t *start;   /* per plane: its boundary loop's first half-edge */
    uint32_t *rem;     /* per plane: loop vertices left */
    uint8_t *ok;       /* per plane: one simple loop, re-triangulate */
    uint32_t *cnt;     /* per point: boundary loops through it */
    uint8_t *dropped;  /* per point */
    uint32_t *loopv, *looph, *seq;
    size_t cap_loop;
} extract;

static void free_extract(hull *h, extract *x)
{
    q_free(x->loop_of, 3 * h->nf * sizeof(uint32_t));
    q_free(x->start, h->npl * sizeof(uint32_t));
    q_free(x->rem, h->npl * sizeof(uint32_t));
    q_free(x->ok, h->npl);
    q_free(x->cnt, h->n * sizeof(uint32_t));
    q_free(x->dropped, h->n);
    q_free(x->loopv, x->cap_loop * sizeof(uint32_t));
    q_free(x->looph, x->cap_loop * sizeof(uint32_t));
    q_free(x->seq, x->cap_loop * sizeof(uint32_t));
}

/* Loop of plane P into x->loopv (vertices) and x->looph (outgoing
 * half-edges); returns its length. */
static size_t collect_loop(hull *h, extract *x, uint32_t P)
{
    size_t len = 0;
    uint32_t he = x->start[P];
    do {
        x->loopv[len] = h->f[he / 3].v[he % 3];
        x->looph[len++] = he;
        he = next_boundary(h, he);
    } while (he != x->start[P] && he != NONE && len < x->cap_loop);
    return len;
}

static uint32_t twin_plane(const hull *h, uint32_t he)
{
    return h->f[h->f[he / 3].twin[he % 3] / 3].plane;
}

/* Point moments of a plane's vertex list: count, sums, sums of products. */
typedef struct moments {
    double n, s[3], q[3][3];
} moments;

static void moments_add_point(moments *m, const double *p)
{
    m->n += 1;
    for (int a = 0; a < 3; a++) {
        m->s[a] += p[a];
        for (int b = 0; b < 3; b++)
            m->q[a][b] += p[a] * p[b];
    }
}

static void moments_add(moments *m, const moments *o)
{
    m->n += o->n;
    for (int a = 0; a < 3; a++) {
        m->s[a] += o->s[a];
        for (int b = 0; b < 3; b++)
            m->q[a][b] += o->q[a][b];
    }
}

/* Covariance of two moment sets together. */
static void covariance(const moments *x, const moments *y, double C[3][3])
{
    double n = x->n + y->n, mean[3];
    for (int a = 0; a < 3; a++)
        mean[a] = (x->s[a] + y->s[a]) / n;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            C[a][b] = (x->q[a][b] + y->q[a][b]) / n - mean[a] * mean[b];
}

/* The smallest eigenvalue of a covariance is the variance across the best
 * plane; points within s of some plane have it at most s^2. A lower bound
 * without solving: lambda_min >= det / (trace / 2)^2. */
static double min_variance_bound(double C[3][3])
{
    double det = C[0][0] * (C[1][1] * C[2][2] - C[1][2] * C[2][1]) - C[0][1] * (C[1][0] * C[2][2] - C[1][2] * C[2][0]) +
                 C[0][2] * (C[1][0] * C[2][1] - C[1][1] * C[2][0]);
    double tr = C[0][0] + C[1][1] + C[2][2];
    return tr > 0 ? det / (0.25 * tr * tr) : 0;
}

/* Half the width of the listed points' slab along unit nn (lists from
 * first, linked by enext, holding points ev), and the mid-plane's offset. */
static double slab(const hull *h, const uint32_t *ev, const uint32_t *enext, const uint32_t *first, int lists,
                   const double nn[3], double *d)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int l = 0; l < lists; l++)
        for (uint32_t e = first[l]; e != NONE; e = enext[e]) {
            double t = dot3(nn, pt(h, ev[e]));
            lo = fmin(lo, t);
            hi = fmax(hi, t);
        }
    *d = 0.5 * (lo + hi);
    return 0.5 * (hi - lo);
}

/* Neighbouring planes whose vertices all lie within s of one plane are the
 * same plane: the build defines a plane by its first triangle, and when
 * that triangle is thin the plane is tilted against the points that join it
 * later, so one flat patch can end up as two planes meeting at a crease that
 * wanders within s. Merge them (union-find; the merged plane has the
 * least-squares normal and the offset of the middle of the slab), passing
 * over the edges until nothing merges, and relabel the faces. A moment bound
 * rejects most pairs without looking at their vertices. False when out of
 * memory. */
static bool merge_planes(hull *h)
{
    size_t nhe = 3 * h->nf;
    uint32_t *parent = q_alloc(h->npl * sizeof(uint32_t));
    uint32_t *head = q_alloc(h->npl * sizeof(uint32_t)), *tail = q_alloc(h->npl * sizeof(uint32_t));
    uint32_t *ver = q_calloc(h->npl, sizeof(uint32_t));
    moments *mom = q_calloc(h->npl, sizeof(moments));
    uint32_t *ev = q_alloc(nhe * sizeof(uint32_t)), *enext = q_alloc(nhe * sizeof(uint32_t));
    q_hashmap failed = {0};
    bool ok = parent && head && tail && ver && mom && ev && enext;
    if (ok) {
        for (uint32_t P = 0; P < h->npl; P++) {
            parent[P] = P;
            head[P] = tail[P] = NONE;
        }
        /* Vertex lists per plane (a vertex once per face: weights by valence). */
        uint32_t ne = 0;
        for (uint32_t f = 0; f < h->nf; f++) {
            if (!h->f[f].alive)
                continue;
            uint32_t P = h->f[f].plane;
            for (int k = 0; k < 3; k++) {
                ev[ne] = h->f[f].v[k];
                enext[ne] = NONE;
                if (tail[P] == NONE)
                    head[P] = ne;
                else
                    enext[tail[P]] = ne;
                tail[P] = ne++;
                moments_add_point(&mom[P], pt(h, h->f[f].v[k]));
            }
        }
        double s2 = h->s * h->s;
        bool merged = true;
        for (int pass = 0; merged && ok && pass < 64; pass++) {
            merged = false;
            for (uint32_t he = 0; he < nhe && ok; he++) {
                if (!h->f[he / 3].alive)
                    continue;
                uint32_t A = h->f[he / 3].plane, B = twin_plane(h, he);
                while (parent[A] != A)
                    A = parent[A] = parent[parent[A]];
                while (parent[B] != B)
                    B = parent[B] = parent[parent[B]];
                if (A >= B) /* each pair once, from its lower root */
                    continue;
                double C[3][3];
                covariance(&mom[A], &mom[B], C);
                if (min_variance_bound(C) > s2)
                    continue;
                uint64_t key = (uint64_t)A << 32 | B;
                if (q_hashmap_get(&failed, key) == ver[A] + ver[B])
                    continue;
                double nn[3], d;
                smallest_eigenvector(C, nn);
                if (dot3(nn, h->pl[A].n) < 0)
                    for (int k = 0; k < 3; k++)
                        nn[k] = -nn[k];
                uint32_t first[2] = {head[A], head[B]};
                double worst = slab(h, ev, enext, first, 2, nn, &d);
                if (!(worst <= h->s) || dot3(nn, h->pl[A].n) < 0.5 || dot3(nn, h->pl[B].n) < 0.5) {
                    ok = q_hashmap_set(&failed, key, ver[A] + ver[B]);
                    continue;
                }
                parent[B] = A;
                enext[tail[A]] = head[B];
                tail[A] = tail[B];
                moments_add(&mom[A], &mom[B]);
                ver[A]++;
                memcpy(h->pl[A].n, nn, sizeof nn);
                h->pl[A].d = d;
                merged = true;
            }
        }
    }
    if (ok) {
        for (uint32_t P = 0; P < h->npl; P++)
            h->pl[P].faces = 0;
        for (uint32_t f = 0; f < h->nf; f++) {
            if (!h->f[f].alive)
                continue;
            uint32_t P = h->f[f].plane;
            while (parent[P] != P)
                P = parent[P];
            h->f[f].plane = P;
            h->pl[P].faces++;
        }
    }
    q_hashmap_free(&failed);
    q_free(parent, h->npl * sizeof(uint32_t));
    q_free(head, h->npl * sizeof(uint32_t));
    q_free(tail, h->npl * sizeof(uint32_t));
    q_free(ver, h->npl * sizeof(uint32_t));
    q_free(mom, h->npl * sizeof(moments));
    q_free(ev, nhe * sizeof(uint32_t));
    q_free(enext, nhe * sizeof(uint32_t));
    if (!ok)
        h->oom = true;
    return ok;
}

/* Normal (not unit) of triangle t of tris. */
static void tri_normal(const hull *h, const uint32_t *t, double n[3])
{
    double e1[3], e2[3];
    sub3(pt(h, t[1]), pt(h, t[0]), e1);
    sub3(pt(h, t[2]), pt(h, t[0]), e2);
    cross3(e1, e2, n);
}

static uint64_t dir_key(uint32_t a, uint32_t b)
{
    return (uint64_t)a << 32 | b;
}

/* Collapses the shortest edge (a, b) of triangle t into a when the edge is
 * under 8s long (a cluster of vertices a few s apart, whose triangles face
 * any way) and the link condition holds (a and b have exactly the two
 * apexes of the edge's triangles as common neighbours, so the result is
 * still a closed manifold). Removes the two triangles of the edge from tris
 * (and tplane), replacing b by a elsewhere; returns the new count, or ntri
 * when nothing was done. O(ntri): only for the rare triangles left inverted. */
static size_t collapse_short_edge(const hull *h, uint32_t *tris, uint32_t *tplane, size_t ntri, size_t t, uint8_t *mark)
{
    uint32_t *T = tris + 3 * t;
    int best = -1;
    double bl = INFINITY;
    for (int k = 0; k < 3; k++) {
        double e[3];
        sub3(pt(h, T[(k + 1) % 3]), pt(h, T[k]), e);
        if (dot3(e, e) < bl) {
            bl = dot3(e, e);
            best = k;
        }
    }
    if (!(bl < 64 * h->s * h->s))
        return ntri;
    uint32_t a = T[best], b = T[(best + 1) % 3];
    /* Neighbours of a (mark bit 1) and of b (bit 2); apexes of the edge. */
    uint32_t apex[2], napex = 0;
    for (size_t i = 0; i < 3 * ntri; i++)
        mark[tris[i]] = 0;
    for (size_t u = 0; u < ntri; u++)
        for (int k = 0; k < 3; k++) {
            uint32_t x = tris[3 * u + k], y = tris[3 * u + (k + 1) % 3];
            if (x == a)
                mark[y] |= 1;
            if (x == b)
                mark[y] |= 2;
            if (y == a)
                mark[x] |= 1;
            if (y == b)
                mark[x] |= 2;
            if ((x == a && y == b) || (x == b && y == a)) {
                if (napex < 2)
                    apex[napex] = tris[3 * u + (k + 2) % 3];
                napex++;
            }
        }
    if (napex != 2 || apex[0] == apex[1])
        return ntri;
    size_t common = 0;
    for (size_t i = 0; i < 3 * ntri; i++) {
        uint32_t x = tris[i];
        if (mark[x] == 3) {
            if (x != apex[0] && x != apex[1])
                return ntri;
            mark[x] = 4; /* counted */
            common++;
        }
    }
    if (common != 2)
        return ntri;
    size_t w = 0;
    for (size_t u = 0; u < ntri; u++) {
        uint32_t c[3];
        bool has_a = false, has_b = false;
        for (int k = 0; k < 3; k++) {
            c[k] = tris[3 * u + k];
            has_a |= c[k] == a;
            has_b |= c[k] == b;
        }
        if (has_a && has_b)
            continue; /* one of the edge's two triangles */
        for (int k = 0; k < 3; k++)
            tris[3 * w + k] = c[k] == b ? a : c[k];
        tplane[w++] = tplane[u];
    }
    return w;
}

/* The last guard against inverted faces. Where two hull vertices are about s
 * apart, the direction between them is noise at the scale of s, and a
 * triangle with that short edge can face against its plane (typically the
 * two triangles on either side of a short edge on the crease between two
 * planes, each folded over). Such a triangle is flipped with a neighbour
 * when both new triangles face along the two planes' mean normal and the
 * new edge is not already in the mesh; what flips cannot fix is a cluster
 * of vertices a few s apart, and its short edges are collapsed. tplane holds
 * each triangle's plane; *count the number of triangles, updated. False
 * when out of memory. */
static bool repair_folds(hull *h, uint32_t *tris, uint32_t *tplane, size_t *count)
{
    size_t ntri = *count;
    q_hashmap dir = {0};
    bool ok = true;
    for (uint32_t i = 0; i < 3 * ntri && ok; i++)
        ok = q_hashmap_set(&dir, dir_key(tris[i], tris[i - i % 3 + (i % 3 + 1) % 3]), i);
    bool flipped = true;
    for (int pass = 0; ok && flipped && pass < 8; pass++) {
        flipped = false;
        for (uint32_t t = 0; t < ntri && ok; t++) {
            double n[3];
            tri_normal(h, tris + 3 * t, n);
            if (dot3(n, h->pl[tplane[t]].n) > 0)
                continue;
            for (uint32_t k = 0; k < 3; k++) {
                uint32_t a = tris[3 * t + k], b = tris[3 * t + (k + 1) % 3], c = tris[3 * t + (k + 2) % 3];
                uint32_t e2 = q_hashmap_get(&dir, dir_key(b, a));
                if (e2 == Q_HASHMAP_EMPTY)
                    continue;
                uint32_t t2 = e2 / 3, k2 = e2 % 3, d = tris[3 * t2 + (k2 + 2) % 3];
                if (d == c || q_hashmap_get(&dir, dir_key(c, d)) != Q_HASHMAP_EMPTY ||
                    q_hashmap_get(&dir, dir_key(d, c)) != Q_HASHMAP_EMPTY)
                    continue;
                const double *n1 = h->pl[tplane[t]].n, *n2 = h->pl[tplane[t2]].n;
                double mean[3] = {n1[0] + n2[0], n1[1] + n2[1], n1[2] + n2[2]};
                uint32_t T1[3] = {a, d, c}, T2[3] = {d, b, c};
                double m1[3], m2[3];
                tri_normal(h, T1, m1);
                tri_normal(h, T2, m2);
                if (!(dot3(m1, mean) > 0 && dot3(m2, mean) > 0 && dot3(m1, n1) > 0 && dot3(m2, n2) > 0))
                    continue;
                for (int j = 0; j < 3; j++) {
                    q_hashmap_remove(&dir, dir_key(tris[3 * t + j], tris[3 * t + (j + 1) % 3]));
                    q_hashmap_remove(&dir, dir_key(tris[3 * t2 + j], tris[3 * t2 + (j + 1) % 3]));
                }
                memcpy(tris + 3 * t, T1, sizeof T1);
                memcpy(tris + 3 * t2, T2, sizeof T2);
                for (uint32_t j = 0; j < 3 && ok; j++) {
                    ok = q_hashmap_set(&dir, dir_key(T1[j], T1[(j + 1) % 3]), 3 * t + j) &&
                         q_hashmap_set(&dir, dir_key(T2[j], T2[(j + 1) % 3]), 3 * t2 + j);
                }
                flipped = true;
                break;
            }
        }
    }
    q_hashmap_free(&dir);
    /* What flips could not fix: collapse short edges of inverted triangles. */
    uint8_t *mark = NULL;
    for (int round = 0; ok && round < 64; round++) {
        size_t bad = ntri;
        for (size_t t = 0; t < ntri && bad == ntri; t++) {
            double n[3];
            tri_normal(h, tris + 3 * t, n);
            if (!(dot3(n, h->pl[tplane[t]].n) > 0))
                bad = t;
        }
        if (bad == ntri)
            break;
        if (!mark && !(mark = q_alloc(h->n))) {
            ok = false;
            break;
        }
        size_t after = collapse_short_edge(h, tris, tplane, ntri, bad, mark);
        if (after == ntri)
            break; /* not fixable here: left as is */
        ntri = after;
    }
    q_free(mark, h->n);
    *count = ntri;
    return ok;
}

/* Writes the solid's triangles (point indices) to tris; returns the count. */
static size_t extract_solid(hull *h, uint32_t *tris)
{
    extract x = {0};
    size_t nhe = 3 * h->nf, ntri = 0;
    if (!merge_planes(h))
        return 0;
    x.loop_of = q_alloc(nhe * sizeof(uint32_t));
    x.start = q_alloc(h->npl * sizeof(uint32_t));
    x.rem = q_alloc(h->npl * sizeof(uint32_t));
    x.ok = q_alloc(h->npl);
    x.cnt = q_calloc(h->n, sizeof(uint32_t));
    x.dropped = q_calloc(h->n, 1);
    x.cap_loop = nhe;
    x.loopv = q_alloc(nhe * sizeof(uint32_t));
    x.looph = q_alloc(nhe * sizeof(uint32_t));
    x.seq = q_alloc(nhe * sizeof(uint32_t));
    uint32_t *tplane = q_alloc(h->nf * sizeof(uint32_t)); /* output triangles <= live faces */
    poly_scratch ps = {0};
    if (!x.loop_of || !x.start || !x.rem || !x.ok || !x.cnt || !x.dropped || !x.loopv || !x.looph || !x.seq ||
        !tplane) {
        h->oom = true;
        goto done;
    }
    for (size_t i = 0; i < nhe; i++)
        x.loop_of[i] = NONE;
    for (size_t P = 0; P < h->npl; P++) {
        x.start[P] = NONE;
        x.ok[P] = h->pl[P].faces > 0;
        x.rem[P] = 0;
    }
    /* Boundary loops; a plane is re-triangulated only when its region has
     * exactly one loop that visits each vertex once. */
    for (uint32_t he0 = 0; he0 < nhe; he0++) {
        if (!h->f[he0 / 3].alive || x.loop_of[he0] != NONE || !is_boundary(h, he0))
            continue;
        uint32_t P = h->f[he0 / 3].plane;
        h->mark_stamp++;
        uint32_t he = he0, len = 0;
        do {
            uint32_t v = h->f[he / 3].v[he % 3];
            if (h->vstamp[v] == h->mark_stamp)
                x.ok[P] = 0;
            h->vstamp[v] = h->mark_stamp;
            x.cnt[v]++;
            x.loop_of[he] = he0;
            len++;
            he = next_boundary(h, he);
            if (he == NONE || (he != he0 && x.loop_of[he] != NONE)) {
                x.ok[P] = 0;
                break;
            }
        } while (he != he0);
        if (x.start[P] != NONE)
            x.ok[P] = 0;
        x.start[P] = he0;
        x.rem[P] = len;
    }
    for (size_t P = 0; P < h->npl; P++)
        if (x.start[P] == NONE)
            x.ok[P] = 0;

    /* Chains between two re-triangulated planes: drop vertices within s of
     * the edge between the planes. */
    for (uint32_t P = 0; P < h->npl; P++) {
        if (!x.ok[P])
            continue;
        size_t len = collect_loop(h, &x, P);
        size_t anchor = len;
        for (size_t i = 0; i < len; i++) {
            uint32_t v = x.loopv[i], qin = twin_plane(h, x.looph[(i + len - 1) % len]),
                     qout = twin_plane(h, x.looph[i]);
            bool cand = x.cnt[v] == 2 && qin == qout && x.ok[qin];
            if (!cand) {
                anchor = i;
                break;
            }
        }
        if (anchor == len)
            continue;
        size_t n = 0;
        for (size_t j = 1; j <= len; j++) {
            size_t i = (anchor + j) % len;
            uint32_t v = x.loopv[i], qin = twin_plane(h, x.looph[(i + len - 1) % len]),
                     qout = twin_plane(h, x.looph[i]);
            bool cand = j < len && x.cnt[v] == 2 && qin == qout && x.ok[qin];
            if (n == 0)
                x.seq[n++] = x.loopv[(i + len - 1) % len];
            x.seq[n++] = v;
            if (!cand) {
                uint32_t Q = twin_plane(h, x.looph[(i + len - 1) % len]);
                if (n > 2 && P < Q)
                    simplify_chain(h, x.seq, n, P, Q, x.rem, x.dropped);
                n = 0;
            }
        }
    }

    /* Every edge of the output so far: the kept boundary loops and the
     * triangles of planes kept as built. */
    q_hashmap edges = {0};
    ps.edges = &edges;
    bool ok = true;
    for (size_t i = 0; i < h->nf && ok; i++) {
        const face *F = &h->f[i];
        if (F->alive && !x.ok[F->plane])
            for (int k = 0; k < 3; k++)
                ok = ok && q_hashmap_set(&edges, edge_key(F->v[k], F->v[(k + 1) % 3]), 1);
    }
    for (uint32_t P = 0; P < h->npl && ok; P++) {
        if (h->pl[P].faces == 0 || !x.ok[P])
            continue;
        size_t len = collect_loop(h, &x, P), k = 0;
        for (size_t i = 0; i < len; i++)
            if (!x.dropped[x.loopv[i]])
                x.seq[k++] = x.loopv[i];
        for (size_t i = 0; i < k && ok; i++)
            ok = q_hashmap_set(&edges, edge_key(x.seq[i], x.seq[(i + 1) % k]), 1);
    }
    for (uint32_t P = 0; P < h->npl && ok; P++) {
        if (h->pl[P].faces == 0 || !x.ok[P])
            continue;
        size_t len = collect_loop(h, &x, P), k = 0;
        for (size_t i = 0; i < len; i++)
            if (!x.dropped[x.loopv[i]])
                x.seq[k++] = x.loopv[i];
        assert(k >= 3);
        uint32_t *out = tris + 3 * ntri;
        if (!triangulate(h, &ps, x.seq, k, h->pl[P].n, out)) {
            ok = false;
            break;
        }
        for (size_t i = 0; i < k - 2; i++)
            tplane[ntri + i] = P;
        ntri += k - 2;
        for (size_t i = 0; i < 3 * (k - 2) && ok; i++)
            ok = q_hashmap_set(&edges, edge_key(out[i], out[i - i % 3 + (i % 3 + 1) % 3]), 1);
    }
    q_hashmap_free(&edges);
    if (!ok) {
        h->oom = true;
        goto done;
    }
    for (size_t i = 0; i < h->nf; i++) {
        const face *F = &h->f[i];
        if (F->alive && !x.ok[F->plane]) {
            memcpy(tris + 3 * ntri, F->v, 3 * sizeof(uint32_t));
            tplane[ntri++] = F->plane;
        }
    }
    if (!repair_folds(h, tris, tplane, &ntri))
        h->oom = true;
done:
    q_free(tplane, h->nf * sizeof(uint32_t));
    free_poly_scratch(&ps);
    free_extract(h, &x);
    return ntri;
}

/* ---- flat input ---- */

/* Eigenvector of the smallest eigenvalue of a symmetric 3x3 matrix (cyclic
 * Jacobi rotations). */
static void smallest_eigenvector(double A[3][3], double out[3])
{
    double V[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int sweep = 0; sweep < 50; sweep++) {
        double off = A[0][1] * A[0][1] + A[0][2] * A[0][2] + A[1][2] * A[1][2];
        double diag = A[0][0] * A[0][0] + A[1][1] * A[1][1] + A[2][2] * A[2][2];
        if (off <= 1e-30 * diag || off == 0)
            break;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                if (A[p][q] == 0)
                    continue;
                double theta = (A[q][q] - A[p][p]) / (2 * A[p][q]);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < 3; k++) {
                    double akp = A[k][p], akq = A[k][q];
                    A[k][p] = c * akp - s * akq;
                    A[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 3; k++) {
                    double apk = A[p][k], aqk = A[q][k];
                    A[p][k] = c * apk - s * aqk;
                    A[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 3; k++) {
                    double vkp = V[k][p], vkq = V[k][q];
                    V[k][p] = c * vkp - s * vkq;
                    V[k][q] = s * vkp + c * vkq;
                }
            }
    }
    int m = 0;
    for (int k = 1; k < 3; k++)
        if (A[k][k] < A[m][m])
            m = k;
    double l = sqrt(V[0][m] * V[0][m] + V[1][m] * V[1][m] + V[2][m] * V[2][m]);
    for (int k = 0; k < 3; k++)
        out[k] = V[k][m] / l;
}

/* Width of the points along unit normal n. */
static double slab_width(const double *p, size_t n, const double *nn)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double d = dot3(nn, p + 3 * i);
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    return hi - lo;
}

/* The least width of tetrahedron t of points p over all directions: the
 * least of its four heights and of the distances between the lines of its
 * opposite edges (where the width of a tetrahedron is least); 0 when two
 * opposite edges are parallel (not worked out). */
static double tetrahedron_width(const double *p, const uint32_t t[4])
{
    double e1[3], e2[3], e3[3], x[3];
    sub3(p + 3 * t[1], p + 3 * t[0], e1);
    sub3(p + 3 * t[2], p + 3 * t[0], e2);
    sub3(p + 3 * t[3], p + 3 * t[0], e3);
    cross3(e1, e2, x);
    double vol6 = fabs(dot3(x, e3)), w = INFINITY;
    static const int others[4][3] = {{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}};
    for (int f = 0; f < 4; f++) {
        double a[3], b[3], nn[3];
        sub3(p + 3 * t[others[f][1]], p + 3 * t[others[f][0]], a);
        sub3(p + 3 * t[others[f][2]], p + 3 * t[others[f][0]], b);
        cross3(a, b, nn);
        double l = norm3(nn);
        w = fmin(w, l > 0 ? vol6 / l : 0);
    }
    static const int pair[3][4] = {{0, 1, 2, 3}, {0, 2, 1, 3}, {0, 3, 1, 2}};
    for (int k = 0; k < 3; k++) {
        double a[3], b[3], nn[3], d[3];
        sub3(p + 3 * t[pair[k][1]], p + 3 * t[pair[k][0]], a);
        sub3(p + 3 * t[pair[k][3]], p + 3 * t[pair[k][2]], b);
        sub3(p + 3 * t[pair[k][2]], p + 3 * t[pair[k][0]], d);
        cross3(a, b, nn);
        double l = norm3(nn);
        w = fmin(w, l > 0 ? fabs(dot3(nn, d)) / l : 0);
    }
    return w;
}

/* ---- entry points ---- */

static q_status fail(char *err, size_t errlen, q_status st, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
    return st;
}

static void free_hull(hull *h)
{
    q_free(h->f, h->capf * sizeof *h->f);
    q_free(h->pl, h->cappl * sizeof *h->pl);
    q_free(h->next, h->n * sizeof(uint32_t));
    q_free(h->vchain, h->n * sizeof(uint32_t));
    q_hashmap_free(&h->cells);
    q_free(h->vstamp, h->n * sizeof(uint32_t));
    q_free(h->vval, h->n * sizeof(uint32_t));
    q_free(h->active, h->capactive * sizeof(uint32_t));
    q_free(h->vis, h->capvis * sizeof(uint32_t));
    q_free(h->hz, h->caphz * sizeof(ring_edge));
    q_free(h->ring, h->capring * sizeof(ring_edge));
    q_free(h->newf, h->capnewf * sizeof(uint32_t));
    q_free(h->orphans, h->caporphans * sizeof(uint32_t));
}

/* Compacts triangles of point indices: vertices gets the used points in
 * increasing order, indices are rewritten to refer to them. */
static size_t compact(uint32_t *scratch, size_t n, uint32_t *vertices, uint32_t *indices, size_t nidx)
{
    for (size_t i = 0; i < n; i++)
        scratch[i] = NONE;
    for (size_t i = 0; i < nidx; i++)
        scratch[indices[i]] = 0;
    size_t nv = 0;
    for (size_t i = 0; i < n; i++)
        if (scratch[i] != NONE) {
            scratch[i] = (uint32_t)nv;
            vertices[nv++] = (uint32_t)i;
        }
    for (size_t i = 0; i < nidx; i++)
        indices[i] = scratch[indices[i]];
    return nv;
}

static q_status hull_flat(const double *c, size_t n, double s, const double *normal, uint32_t *vertices,
                          uint32_t *indices, q_hull_info *info, char *err, size_t errlen)
{
    double nn[3] = {normal[0], normal[1], normal[2]};
    int big = 0;
    for (int k = 1; k < 3; k++)
        if (fabs(nn[k]) > fabs(nn[big]))
            big = k;
    if (nn[big] < 0)
        for (int k = 0; k < 3; k++)
            nn[k] = -nn[k];
    double u[3], v[3];
    plane_basis(nn, u, v);
    double *xy = q_alloc(2 * n * sizeof(double));
    if (!xy)
        return fail(err, errlen, Q_ERR_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        xy[2 * i] = dot3(c + 3 * i, u);
        xy[2 * i + 1] = dot3(c + 3 * i, v);
    }
    size_t m = q_hull2d(xy, n, s, vertices);
    q_free(xy, 2 * n * sizeof(double));
    if (m == 0)
        return fail(err, errlen, Q_ERR_MEMORY, "out of memory");
    info->vertex_count = m;
    if (m < 3) {
        info->shape = m == 1 ? Q_HULL_POINT : Q_HULL_SEGMENT;
        return Q_OK;
    }
    info->shape = Q_HULL_POLYGON;
    memcpy(info->normal, nn, sizeof nn);
    size_t t = 0;
    for (size_t k = 1; k + 1 < m; k++) { /* front: fan from vertex 0 */
        indices[3 * t] = 0;
        indices[3 * t + 1] = (uint32_t)k;
        indices[3 * t + 2] = (uint32_t)(k + 1);
        t++;
    }
    for (size_t k = 1; k + 1 < m; k++) { /* back: fan from vertex 1, reversed */
        indices[3 * t] = 1;
        indices[3 * t + 1] = (uint32_t)((1 + k + 1) % m);
        indices[3 * t + 2] = (uint32_t)((1 + k) % m);
        t++;
    }
    info->index_count = 3 * t;
    return Q_OK;
}

q_status q_hull(const double *points, size_t n, const q_hull_def *def, uint32_t *vertices, uint32_t *indices,
                q_hull_info *info, char *err, size_t errlen)
{
    q_hull_def d = def ? *def : q_default_hull_def();
    *info = (q_hull_info){0};
    if (n == 0)
        return fail(err, errlen, Q_ERR_ARGUMENT, "no points");
    if (n > Q_HULL_MAX_POINTS)
        return fail(err, errlen, Q_ERR_TOO_LARGE, "too many points (the limit is 16777216)");
    if (!(d.epsilon >= 0) || !isfinite(d.epsilon))
        return fail(err, errlen, Q_ERR_ARGUMENT, "epsilon must be finite and >= 0");
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            double x = points[3 * i + a];
            if (!isfinite(x) || fabs(x) > MAX_COORDINATE) {
                if (err && errlen)
                    snprintf(err, errlen, "point %zu has a %s coordinate", i + 1,
                             isfinite(x) ? "huge (beyond 1e30)" : "non-finite");
                return Q_ERR_ARGUMENT;
            }
            lo[a] = x < lo[a] ? x : lo[a];
            hi[a] = x > hi[a] ? x : hi[a];
        }
    double s = d.epsilon > 0 ? d.epsilon : q_quantization_distance(lo, hi);
    /* Below this, rounding in plane distances competes with s. */
    double floor_s = Q_HULL_EPSILON_FLOOR * sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                                                 (hi[2] - lo[2]) * (hi[2] - lo[2]));
    s = fmax(s, floor_s);
    info->epsilon = s;

    /* Work on points centred on their box, for precision far from the
     * origin. */
    double small[3 * Q_HULL_LEAN_MAX];
    bool lean = d.lean && n <= Q_HULL_LEAN_MAX;
    double *c = lean ? small : q_alloc(3 * n * sizeof(double));
    q_status st = Q_OK;
    if (!c)
        return fail(err, errlen, Q_ERR_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++)
            c[3 * i + a] = points[3 * i + a] - 0.5 * (lo[a] + hi[a]);

    /* The farthest pair among the six axis extremes. */
    uint32_t ext[6] = {0, 0, 0, 0, 0, 0};
    for (uint32_t i = 1; i < n; i++)
        for (int a = 0; a < 3; a++) {
            if (c[3 * i + a] < c[3 * ext[2 * a] + a])
                ext[2 * a] = i;
            if (c[3 * i + a] > c[3 * ext[2 * a + 1] + a])
                ext[2 * a + 1] = i;
        }
    uint32_t ia = ext[0], ib = ext[1];
    double best = -1;
    for (int i = 0; i < 6; i++)
        for (int j = i + 1; j < 6; j++) {
            double e[3];
            sub3(c + 3 * ext[i], c + 3 * ext[j], e);
            if (dot3(e, e) > best) {
                best = dot3(e, e);
                ia = ext[i];
                ib = ext[j];
            }
        }
    if (sqrt(best) <= s) {
        info->shape = Q_HULL_POINT;
        info->vertex_count = 1;
        vertices[0] = ia;
        goto out;
    }
    uint32_t ic = ia;
    best = -1;
    for (uint32_t i = 0; i < n; i++) {
        double dl = dist_to_line(c + 3 * ia, c + 3 * ib, c + 3 * i);
        if (dl > best) {
            best = dl;
            ic = i;
        }
    }
    if (best <= s) { /* a segment: its ends along a -> b */
        double e[3];
        sub3(c + 3 * ib, c + 3 * ia, e);
        uint32_t i0 = ia, i1 = ia;
        double t0 = 0, t1 = 0;
        for (uint32_t i = 0; i < n; i++) {
            double w[3];
            sub3(c + 3 * i, c + 3 * ia, w);
            double t = dot3(w, e);
            if (t < t0) {
                t0 = t;
                i0 = i;
            }
            if (t > t1) {
                t1 = t;
                i1 = i;
            }
        }
        info->shape = Q_HULL_SEGMENT;
        info->vertex_count = 2;
        vertices[0] = i0;
        vertices[1] = i1;
        goto out;
    }
    double e1[3], e2[3], nrm[3];
    sub3(c + 3 * ib, c + 3 * ia, e1);
    sub3(c + 3 * ic, c + 3 * ia, e2);
    cross3(e1, e2, nrm);
    double nl = norm3(nrm);
    for (int k = 0; k < 3; k++)
        nrm[k] /= nl;
    uint32_t id = ia;
    best = -1;
    double base = dot3(nrm, c + 3 * ia);
    for (uint32_t i = 0; i < n; i++) {
        double dp = fabs(dot3(nrm, c + 3 * i) - base);
        if (dp > best) {
            best = dp;
            id = i;
        }
    }
    if (best <= s) {
        st = hull_flat(c, n, s, nrm, vertices, indices, info, err, errlen);
        goto out;
    }
    /* The triangle's plane can be tilted against a thin slab; the
     * least-squares normal is not. The points hold the tetrahedron (ia, ib,
     * ic, id), so no slab of theirs is thinner than it: when it is wider than
     * 2s every way, the test cannot find one. */
    const uint32_t tet[4] = {ia, ib, ic, id};
    if (tetrahedron_width(c, tet) <= 2 * s * (1 + 1e-9)) {
        double cov[3][3] = {{0}}, mean[3] = {0, 0, 0};
        for (size_t i = 0; i < n; i++)
            for (int a = 0; a < 3; a++)
                mean[a] += c[3 * i + a] / (double)n;
        for (size_t i = 0; i < n; i++)
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++)
                    cov[a][b] += (c[3 * i + a] - mean[a]) * (c[3 * i + b] - mean[b]);
        double pn[3];
        smallest_eigenvector(cov, pn);
        if (slab_width(c, n, pn) <= 2 * s) { /* within s of the middle plane */
            st = hull_flat(c, n, s, pn, vertices, indices, info, err, errlen);
            goto out;
        }
    }

    if (lean && q_hull_lean(c, n, s, tet, vertices, indices, info))
        goto out;

    hull h = {.p = c, .n = n, .s = s, .weld = 2 * s, .free_face = NONE, .free_plane = NONE};
    h.next = q_alloc(n * sizeof(uint32_t));
    h.vchain = q_alloc(n * sizeof(uint32_t));
    h.vstamp = q_calloc(n, sizeof(uint32_t));
    h.vval = q_alloc(n * sizeof(uint32_t));
    if (!h.next || !h.vchain || !h.vstamp || !h.vval || !build_tetrahedron(&h, ia, ib, ic, id))
        h.oom = true;
    while (!h.oom && h.nactive) {
        uint32_t fid = h.active[--h.nactive];
        face *F = &h.f[fid];
        F->queued = 0;
        if (!F->alive || F->head == NONE)
            continue;
        if (!add_point(&h, fid, F->far))
            h.oom = true;
    }
    size_t ntri = h.oom ? 0 : extract_solid(&h, indices);
    if (h.oom) {
        free_hull(&h);
        st = fail(err, errlen, Q_ERR_MEMORY, "out of memory");
        goto out;
    }
    info->shape = Q_HULL_SOLID;
    info->skipped = h.skipped;
    info->index_count = 3 * ntri;
    info->vertex_count = compact(h.vval, n, vertices, indices, 3 * ntri);
    free_hull(&h);
out:
    if (!lean)
        q_free(c, 3 * n * sizeof(double));
    return st;
}

q_mesh *q_hull_mesh(const double *points, size_t n, const q_hull_def *def, q_hull_info *info, q_status *status,
                    char *err, size_t errlen)
{
    q_hull_info local;
    info = info ? info : &local;
    size_t nb = q_hull_bound(n);
    uint32_t *verts = q_alloc((n ? n : 1) * sizeof(uint32_t));
    uint32_t *idx = q_alloc((nb ? nb : 1) * sizeof(uint32_t));
    q_mesh *m = NULL;
    q_status st = Q_ERR_MEMORY;
    if (!verts || !idx)
        fail(err, errlen, st, "out of memory");
    else if ((st = q_hull(points, n, def, verts, idx, info, err, errlen)) == Q_OK) {
        m = q_mesh_create(info->vertex_count, info->index_count, false, false);
        if (!m) {
            st = fail(err, errlen, Q_ERR_MEMORY, "out of memory");
        } else {
            for (size_t i = 0; i < info->vertex_count; i++)
                for (int a = 0; a < 3; a++)
                    m->positions[3 * i + a] = (float)points[3 * (size_t)verts[i] + a];
            if (info->index_count)
                memcpy(m->indices, idx, info->index_count * sizeof(uint32_t));
        }
    }
    q_free(verts, (n ? n : 1) * sizeof(uint32_t));
    q_free(idx, (nb ? nb : 1) * sizeof(uint32_t));
    if (status)
        *status = st;
    return m;
}
