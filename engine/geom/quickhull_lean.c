/* A lean 3D hull for small point sets (q_hull_def.lean, see quickhull.h).
 *
 * HACD (hacd.c) hulls tens of thousands of sets of about ten points, where
 * the full build's set-up (the vertex hash, per-call allocations) and its
 * finishing passes (plane merging, re-triangulation per plane, chain
 * simplification) cost several times the hull itself. This is the textbook
 * incremental build (Barber et al. 1996) on fixed arrays, with q_hull's rules
 * of design note 001 for the one distance s:
 *  - a point is outside a face only when more than s above its plane, and
 *    only such a point becomes an eye; the faces it replaces are all those
 *    it is above at all (the exact horizon: leaving the faces it sees within
 *    s made cone faces over them whose planes stood several s off the hull,
 *    failing the check below for one set in eight of HACD's);
 *  - an eye within 2s of a hull vertex is dropped (one vertex);
 *  - a cone face may not fold against the hidden face across its horizon
 *    edge (that face's far corner more than s above it, or the interior
 *    point in front of it): the hidden face joins the visible set;
 *  - the horizon must be one simple cycle.
 * Faces do not share planes here, so two nearly coplanar triangles could
 * disagree about an eye; instead of preventing that, the result is checked:
 * it must be a closed mesh (2V - 4 triangles, every edge twinned by
 * construction) and every input point must lie within s under every
 * triangle's own plane (3s for dropped eyes, which are within 2s of a
 * vertex). Whatever fails the check, or any step on the way, returns false
 * and q_hull runs its full build, so the result is always a valid hull with
 * q_hull's tolerances; what differs is only that coplanar triangles stay
 * separate and vertices along an edge within s of it are kept.
 */
#include "geom/quickhull_lean.h"

#include <math.h>
#include <string.h>

#define NONE UINT32_MAX
/* Live faces never exceed 2V - 4; freed faces are reused. */
#define LEAN_FACES (2 * Q_HULL_LEAN_MAX + 8)

typedef struct lface {
    double n[3], d;  /* n . x = d, n unit, pointing out */
    uint32_t v[3];   /* point indices, counter-clockwise seen from outside */
    uint32_t nb[3];  /* the face across edge v[k] -> v[k + 1]; free-list link */
    uint32_t mark;   /* step of the last visit (visible is valid then) */
    uint32_t forced; /* step in which the fold rule made it visible */
    uint8_t alive, visible;
} lface;

enum { FILED, INSIDE, VERTEX, WELDED };

typedef struct lean {
    const double *p;
    size_t n;
    double s;
    double interior[3]; /* centroid of the first tetrahedron */
    lface f[LEAN_FACES];
    uint32_t nf, free_face, step;
    /* per point */
    uint8_t state[Q_HULL_LEAN_MAX];
    uint32_t pf[Q_HULL_LEAN_MAX]; /* FILED: the face it is farthest above */
    double pd[Q_HULL_LEAN_MAX];   /* and how far (> -s) */
    uint32_t at[Q_HULL_LEAN_MAX], atstep[Q_HULL_LEAN_MAX]; /* horizon edge leaving the vertex */
    /* the current step */
    uint32_t vis[LEAN_FACES];
    uint32_t nvis;
    uint32_t ra[Q_HULL_LEAN_MAX], rb[Q_HULL_LEAN_MAX], rg[Q_HULL_LEAN_MAX]; /* horizon a -> b, hidden face */
    uint32_t ring[Q_HULL_LEAN_MAX], newf[Q_HULL_LEAN_MAX], orphan[Q_HULL_LEAN_MAX];
    uint32_t nring;
    double planes[4][2 * Q_HULL_LEAN_MAX]; /* the final check's planes, by coordinate */
} lean;

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

static const double *pt(const lean *L, uint32_t i)
{
    return L->p + 3 * (size_t)i;
}

static double dist(const lean *L, uint32_t face, uint32_t point)
{
    const lface *F = &L->f[face];
    return dot3(F->n, pt(L, point)) - F->d;
}

/* A face (a, b, c) with its own plane through its corners; NONE when the
 * triangle has no area or the pool is full. */
static uint32_t new_face(lean *L, uint32_t a, uint32_t b, uint32_t c)
{
    double e1[3], e2[3], n[3];
    sub3(pt(L, b), pt(L, a), e1);
    sub3(pt(L, c), pt(L, a), e2);
    cross3(e1, e2, n);
    double l = sqrt(dot3(n, n));
    if (!(l > 0))
        return NONE;
    uint32_t id;
    if (L->free_face != NONE) {
        id = L->free_face;
        L->free_face = L->f[id].nb[0];
    } else if (L->nf < LEAN_FACES) {
        id = L->nf++;
    } else {
        return NONE;
    }
    lface *F = &L->f[id];
    for (int k = 0; k < 3; k++)
        F->n[k] = n[k] / l;
    F->d = (dot3(F->n, pt(L, a)) + dot3(F->n, pt(L, b)) + dot3(F->n, pt(L, c))) / 3;
    F->v[0] = a;
    F->v[1] = b;
    F->v[2] = c;
    F->nb[0] = F->nb[1] = F->nb[2] = NONE;
    F->mark = F->forced = 0;
    F->alive = 1;
    F->visible = 0;
    return id;
}

/* Files point under the face of faces[] it is farthest above, or marks it
 * inside when it is more than s below all of them (the hull only grows). */
static void file_point(lean *L, uint32_t point, const uint32_t *faces, uint32_t nfaces)
{
    double best = -INFINITY;
    uint32_t bf = NONE;
    for (uint32_t i = 0; i < nfaces; i++) {
        double d = dist(L, faces[i], point);
        if (d > best) {
            best = d;
            bf = faces[i];
        }
    }
    if (best >= -L->s) {
        L->state[point] = FILED;
        L->pf[point] = bf;
        L->pd[point] = best;
    } else {
        L->state[point] = INSIDE;
    }
}

static bool tetrahedron(lean *L, const uint32_t t[4])
{
    uint32_t a = t[0], b = t[1], c = t[2], d = t[3];
    double e1[3], e2[3], nn[3], w[3];
    sub3(pt(L, b), pt(L, a), e1);
    sub3(pt(L, c), pt(L, a), e2);
    cross3(e1, e2, nn);
    sub3(pt(L, d), pt(L, a), w);
    if (dot3(nn, w) > 0) { /* d above abc: flip the base so that d is inside */
        uint32_t x = b;
        b = c;
        c = x;
    }
    for (int k = 0; k < 3; k++)
        L->interior[k] = 0.25 * (pt(L, a)[k] + pt(L, b)[k] + pt(L, c)[k] + pt(L, d)[k]);
    const uint32_t tri[4][3] = {{a, b, c}, {a, d, b}, {b, d, c}, {c, d, a}};
    uint32_t ids[4];
    for (int i = 0; i < 4; i++)
        if ((ids[i] = new_face(L, tri[i][0], tri[i][1], tri[i][2])) == NONE)
            return false;
    /* the face across each edge of tri[] above */
    static const int across[4][3] = {{1, 2, 3}, {3, 2, 0}, {1, 3, 0}, {2, 1, 0}};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++)
            L->f[ids[i]].nb[k] = ids[across[i][k]];
    for (uint32_t i = 0; i < L->n; i++) {
        if (i == a || i == b || i == c || i == d)
            L->state[i] = VERTEX;
        else
            file_point(L, i, ids, 4);
    }
    return true;
}

/* The faces the eye sees from face start (above their plane, or forced by
 * the fold rule), and the horizon in cycle order; false when it is not one
 * simple cycle. */
static bool horizon(lean *L, uint32_t start, uint32_t eye)
{
    uint32_t step = L->step;
    L->nvis = 0;
    lface *S = &L->f[start];
    S->mark = step;
    S->visible = 1;
    L->vis[L->nvis++] = start;
    for (uint32_t i = 0; i < L->nvis; i++) {
        const lface *G = &L->f[L->vis[i]];
        for (int k = 0; k < 3; k++) {
            uint32_t nb = G->nb[k];
            lface *N = &L->f[nb];
            if (N->mark == step)
                continue;
            N->mark = step;
            N->visible = N->forced == step || dist(L, nb, eye) > 0;
            if (N->visible)
                L->vis[L->nvis++] = nb;
        }
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < L->nvis; i++) {
        const lface *G = &L->f[L->vis[i]];
        for (int k = 0; k < 3; k++) {
            if (L->f[G->nb[k]].visible)
                continue;
            if (m == L->n)
                return false;
            uint32_t a = G->v[k];
            if (L->atstep[a] == step)
                return false; /* pinched: two horizon edges leave one vertex */
            L->atstep[a] = step;
            L->at[a] = m;
            L->ra[m] = a;
            L->rb[m] = G->v[(k + 1) % 3];
            L->rg[m] = G->nb[k];
            m++;
        }
    }
    if (m < 3)
        return false;
    uint32_t cur = 0;
    for (uint32_t i = 0; i < m; i++) {
        L->ring[i] = cur;
        uint32_t b = L->rb[cur];
        if (L->atstep[b] != step)
            return false;
        cur = L->at[b];
        if (cur == 0 && i + 1 < m)
            return false; /* more than one cycle */
    }
    if (cur != 0)
        return false;
    L->nring = m;
    return true;
}

/* Adds the eye; false when the step cannot be done cleanly. */
static bool add_eye(lean *L, uint32_t eye)
{
    const double s = L->s;
    L->step++;
    bool found = horizon(L, L->pf[eye], eye);
    for (int round = 0; found && round < 8; round++) {
        bool grown = false;
        for (uint32_t j = 0; j < L->nring; j++) {
            uint32_t i = L->ring[j], g = L->rg[i];
            if (fabs(dist(L, g, eye)) <= s)
                continue;
            const lface *G = &L->f[g];
            uint32_t c = G->v[0] != L->ra[i] && G->v[0] != L->rb[i]   ? G->v[0]
                         : G->v[1] != L->ra[i] && G->v[1] != L->rb[i] ? G->v[1]
                                                                      : G->v[2];
            double e1[3], e2[3], nn[3], w[3], in[3];
            sub3(pt(L, L->rb[i]), pt(L, L->ra[i]), e1);
            sub3(pt(L, eye), pt(L, L->ra[i]), e2);
            cross3(e1, e2, nn);
            sub3(pt(L, c), pt(L, L->ra[i]), w);
            sub3(L->interior, pt(L, L->ra[i]), in);
            double l = sqrt(dot3(nn, nn));
            if (l > 0 && (dot3(nn, w) > s * l || dot3(nn, in) >= 0)) {
                L->f[g].forced = L->step;
                grown = true;
            }
        }
        if (!grown)
            break;
        L->step++;
        /* keep the forced marks of the previous round */
        for (uint32_t f = 0; f < L->nf; f++)
            if (L->f[f].forced == L->step - 1)
                L->f[f].forced = L->step;
        found = horizon(L, L->pf[eye], eye);
    }
    if (!found)
        return false;
    uint32_t m = L->nring, step = L->step;
    /* Points filed under the faces about to go (their slots are reused). */
    L->state[eye] = VERTEX;
    uint32_t norphan = 0;
    for (uint32_t q = 0; q < L->n; q++)
        if (L->state[q] == FILED && L->f[L->pf[q]].mark == step && L->f[L->pf[q]].visible == 1)
            L->orphan[norphan++] = q;
    for (uint32_t i = 0; i < L->nvis; i++) {
        lface *G = &L->f[L->vis[i]];
        G->alive = 0;
        G->nb[0] = L->free_face;
        L->free_face = L->vis[i];
    }
    for (uint32_t j = 0; j < m; j++) {
        uint32_t i = L->ring[j];
        if ((L->newf[j] = new_face(L, L->ra[i], L->rb[i], eye)) == NONE)
            return false;
    }
    for (uint32_t j = 0; j < m; j++) {
        uint32_t i = L->ring[j], id = L->newf[j];
        lface *F = &L->f[id], *G = &L->f[L->rg[i]];
        F->nb[0] = L->rg[i];
        F->nb[1] = L->newf[(j + 1) % m];
        F->nb[2] = L->newf[(j + m - 1) % m];
        for (int k = 0; k < 3; k++)
            if (G->v[k] == L->rb[i] && G->v[(k + 1) % 3] == L->ra[i])
                G->nb[k] = id;
        G->mark = step; /* a hidden face on the horizon: its points are re-checked */
        G->visible = 2;
    }
    for (uint32_t i = 0; i < norphan; i++)
        file_point(L, L->orphan[i], L->newf, m);
    for (uint32_t q = 0; q < L->n; q++) {
        if (L->state[q] != FILED)
            continue;
        const lface *P = &L->f[L->pf[q]];
        if (P->mark == step && P->visible == 2) {
            /* near the horizon: the new cone may be higher above it */
            for (uint32_t j = 0; j < m; j++) {
                double d = dist(L, L->newf[j], q);
                if (d > L->pd[q]) {
                    L->pd[q] = d;
                    L->pf[q] = L->newf[j];
                }
            }
        }
    }
    return true;
}

bool q_hull_lean(const double *c, size_t n, double s, const uint32_t tetra[4], uint32_t *vertices,
                 uint32_t *indices, q_hull_info *info)
{
    if (n > Q_HULL_LEAN_MAX || n < 4)
        return false;
    lean L;
    L.p = c;
    L.n = n;
    L.s = s;
    L.nf = 0;
    L.free_face = NONE;
    L.step = 0;
    memset(L.atstep, 0, n * sizeof L.atstep[0]);
    if (!tetrahedron(&L, tetra))
        return false;
    for (;;) {
        uint32_t eye = NONE;
        double far = s;
        for (uint32_t i = 0; i < n; i++)
            if (L.state[i] == FILED && L.pd[i] > far) {
                far = L.pd[i];
                eye = i;
            }
        if (eye == NONE)
            break;
        bool near = false;
        for (uint32_t v = 0; v < n && !near; v++) {
            if (L.state[v] != VERTEX)
                continue;
            double e[3];
            sub3(pt(&L, v), pt(&L, eye), e);
            near = dot3(e, e) <= 4 * s * s;
        }
        if (near) {
            L.state[eye] = WELDED;
            continue;
        }
        if (!add_eye(&L, eye))
            return false;
    }
    /* the check: closed, and every point under every plane (points found
     * inside were more than s under a face of a hull that only grew) */
    uint32_t nv = 0, nt = 0;
    for (uint32_t i = 0; i < n; i++)
        nv += L.state[i] == VERTEX;
    double *nx = L.planes[0], *ny = L.planes[1], *nz = L.planes[2], *nd = L.planes[3];
    for (uint32_t f = 0; f < L.nf; f++)
        if (L.f[f].alive) {
            if (nt == 2 * nv - 4)
                return false;
            nx[nt] = L.f[f].n[0];
            ny[nt] = L.f[f].n[1];
            nz[nt] = L.f[f].n[2];
            nd[nt] = L.f[f].d;
            nt++;
        }
    if (nt != 2 * nv - 4)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        if (L.state[i] == INSIDE)
            continue;
        const double *q = pt(&L, i);
        double worst = -INFINITY;
        for (uint32_t f = 0; f < nt; f++) {
            double d = nx[f] * q[0] + ny[f] * q[1] + nz[f] * q[2] - nd[f];
            worst = d > worst ? d : worst;
        }
        if (worst > (L.state[i] == WELDED ? 3 * s : s))
            return false;
    }
    uint32_t *index_of = L.at; /* reused: point -> vertex */
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (L.state[i] == VERTEX) {
            index_of[i] = k;
            vertices[k++] = i;
        }
    size_t t = 0;
    for (uint32_t f = 0; f < L.nf; f++)
        if (L.f[f].alive)
            for (int j = 0; j < 3; j++)
                indices[t++] = index_of[L.f[f].v[j]];
    memset(info, 0, sizeof *info);
    info->shape = Q_HULL_SOLID;
    info->vertex_count = nv;
    info->index_count = t;
    info->epsilon = s;
    return true;
}
