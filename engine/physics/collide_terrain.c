/* Shapes against the terrain's triangles (collide.h: q_collide_terrain,
 * q_shapecast_terrain); seed 000.
 *
 * Pipeline: the shape's bounds grown by the margin; chunks whose solid
 * broadphase bits (per Y slice masks) miss the box are skipped; the kD tree
 * of each remaining chunk gives the triangles whose bounds overlap; each
 * triangle is collided as a one-sided polytope (dedicated core tests for
 * spheres and capsules, SAT with clipping for boxes and hulls, see
 * collide.c); points are grouped per chunk and reduced to 4 (deepest, then
 * the largest area).
 *
 * Internal edges. The triangles gathered for one call (from every chunk the
 * shape touches, so chunk borders are no different) are welded by their
 * exact grid positions (the mesher snaps vertices to 1/Q_DC_GRID voxel). An
 * edge is ACTIVE when the neighbour across it bends down (convex) by more
 * than Q_EDGE_ANGLE; coplanar and concave edges, and edges whose neighbour
 * lies outside the gathered triangles, are inactive. The rule: a triangle contact whose normal is not the
 * triangle's face normal, and whose triangle feature (the vertices extreme
 * along the normal) is an inactive edge or a vertex whose two edges in the
 * triangle are both inactive, takes the triangle's face normal: boxes and
 * hulls are recomputed along it with their incident face clipped to the
 * triangle (nothing if it does not project on it); spheres and capsules keep
 * their point and true distance with the normal replaced (a closer face
 * contact of the neighbour always exists there, so nothing is lost).
 * So on flat or concave ground every contact normal is a face normal, and a
 * shape sliding across triangle edges and chunk borders never meets a
 * sideways or upward edge normal; at real (convex) ridges edge normals stay.
 *
 * Normals per chunk. All points of a body-chunk pair share one normal when
 * their triangles agree within ~18 degrees; a body in a corner (floor and wall
 * in one chunk) gets one manifold per normal cluster (up to 3), told apart
 * by m.key (0, 1, 2).
 *
 * Buried bodies. A shape whose lowest point lies inside a FULL chunk (all
 * solid, no triangles) gets one contact there: normal up, at that point,
 * separation minus its depth below the chunk's top face. A shape with no
 * triangle near it whose centre is inside the solid (deep in a chunk that
 * has a surface elsewhere) gets the same kind of contact, its depth measured
 * to the surface above by a ray (up to 64 voxels).
 *
 * Limits: at most Q_TERRAIN_TRIS triangles per call (more are ignored), on
 * the stack; no heap allocation besides building a chunk's mesh on first use. */
#include "physics/collide_internal.h"
#include "physics/physics_internal.h"

#include <math.h>
#include <string.h>

#define Q_TERRAIN_TRIS 1024
#define Q_TERRAIN_CHUNKS 64
#define Q_EDGE_SIN 0.0175 /* sin(1 degree): Q_EDGE_ANGLE */
#define Q_CLIP_POINTS 256

static double dot3(const double a[3], const double b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

typedef struct ttri {
    int32_t g[3][3];   /* grid positions relative to the base chunk's corner */
    uint16_t chunk;    /* index into the call's chunk list */
    uint8_t mat[3];
    uint32_t index;    /* triangle index in its chunk */
} ttri;

typedef struct gather {
    q_terrain_physics *tp;
    int32_t base[3];
    double unit; /* metres per grid step */
    int32_t chunks[Q_TERRAIN_CHUNKS][3];
    int nchunks;
    ttri tris[Q_TERRAIN_TRIS];
    int ntris;
    uint16_t table[4 * Q_TERRAIN_TRIS]; /* edge hash: 1 + (tri << 2 | k), 0 empty */
    uint32_t hsize;      /* 0 until build_edge_table runs (on the first edge_internal) */
    bool truncated;
} gather;

static void tri_world(const gather *g, const ttri *t, double v[3][3])
{
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            v[i][k] = ((double)g->base[k] * (Q_PHYS_CHUNK * Q_DC_GRID) + t->g[i][k]) * g->unit;
}

/* Whether any solid mask bit of chunk entry b lies in the voxel box [lo, hi]
 * (chunk-local voxel indices, clamped). */
static bool mask_hits(const q_terrain_physics *p, const q_bp_entry *b, const int lo[3], const int hi[3])
{
    const uint64_t *w = p->pool[0].slots.data[b->slot[0]].bits;
    uint64_t mask = 0;
    for (int z = lo[2]; z <= hi[2]; z++)
        for (int x = lo[0]; x <= hi[0]; x++)
            mask |= 1ull << (x + 8 * z);
    for (int y = lo[1]; y <= hi[1]; y++)
        if (w[y] & mask)
            return true;
    return false;
}

/* FULL chunks met are reported through full_fn. */
typedef void (*full_fn)(void *ud, int32_t cx, int32_t cy, int32_t cz);

static void gather_triangles(gather *g, const double mn[3], const double mx[3], full_fn on_full, void *ud)
{
    q_terrain_physics *p = g->tp;
    double vs = p->voxel_size;
    g->unit = vs / Q_DC_GRID;
    g->nchunks = g->ntris = 0;
    g->truncated = false;
    int64_t cmin[3], cmax[3];
    for (int k = 0; k < 3; k++) {
        double lo = floor(mn[k] / vs / Q_PHYS_CHUNK - 1.0 / 16), hi = floor(mx[k] / vs / Q_PHYS_CHUNK + 1.0 / 16);
        double lim = (k == 1 ? Q_PHYS_LIMIT_Y : Q_PHYS_LIMIT) / Q_PHYS_CHUNK - 1;
        if (!(lo <= hi) || hi < -lim || lo > lim)
            return;
        cmin[k] = (int64_t)fmax(lo, -lim);
        cmax[k] = (int64_t)fmin(hi, lim);
        g->base[k] = (int32_t)cmin[k];
    }
    uint32_t found[Q_TERRAIN_TRIS];
    for (int64_t cz = cmin[2]; cz <= cmax[2]; cz++)
        for (int64_t cy = cmin[1]; cy <= cmax[1]; cy++)
            for (int64_t cx = cmin[0]; cx <= cmax[0]; cx++) {
                const q_bp_entry *b = q_bp_find(p, (int32_t)cx, (int32_t)cy, (int32_t)cz);
                if (!b || b->solid_tag == Q_BP_NONE)
                    continue;
                const int64_t c[3] = {cx, cy, cz};
                if (b->solid_tag == Q_BP_FULL) {
                    if (on_full)
                        on_full(ud, (int32_t)cx, (int32_t)cy, (int32_t)cz);
                    continue;
                }
                int lo[3], hi[3];
                for (int k = 0; k < 3; k++) {
                    double base = (double)(c[k] * Q_PHYS_CHUNK);
                    double l = floor(mn[k] / vs) - 1 - base, h = floor(mx[k] / vs) + 1 - base;
                    lo[k] = (int)fmax(0, fmin(7, l));
                    hi[k] = (int)fmax(0, fmin(7, h));
                    if (h < 0 || l > 7)
                        lo[k] = 8; /* no overlap */
                }
                if (lo[0] > 7 || lo[1] > 7 || lo[2] > 7 || !mask_hits(p, b, lo, hi))
                    continue;
                if (g->nchunks == Q_TERRAIN_CHUNKS) {
                    g->truncated = true;
                    return;
                }
                const q_chunk_mesh *m = q_tp_chunk_mesh(p, (int32_t)cx, (int32_t)cy, (int32_t)cz, 0);
                if (!m || m->triangle_count == 0)
                    continue;
                float qmin[3], qmax[3];
                for (int k = 0; k < 3; k++) {
                    double corner = (double)(c[k] * Q_PHYS_CHUNK) * vs;
                    qmin[k] = (float)(mn[k] - corner) - 1e-4f * (float)vs;
                    qmax[k] = (float)(mx[k] - corner) + 1e-4f * (float)vs;
                }
                q_kd_mesh km = {NULL, m->indices, NULL, m->triangle_count, m->positions, (float)g->unit};
                size_t room = (size_t)(Q_TERRAIN_TRIS - g->ntris);
                size_t n = q_kdtree_query_aabb(&m->tree, &km, qmin, qmax, found, room);
                if (n > room) {
                    g->truncated = true;
                    n = room;
                }
                int ci = g->nchunks++;
                memcpy(g->chunks[ci], (int32_t[3]){(int32_t)cx, (int32_t)cy, (int32_t)cz}, sizeof g->chunks[ci]);
                for (size_t i = 0; i < n; i++) {
                    ttri *t = &g->tris[g->ntris++];
                    t->chunk = (uint16_t)ci;
                    t->index = found[i];
                    for (int j = 0; j < 3; j++) {
                        uint16_t vi = m->indices[3 * found[i] + j];
                        t->mat[j] = m->materials[vi];
                        for (int k = 0; k < 3; k++)
                            t->g[j][k] = (int32_t)((c[k] - g->base[k]) * (Q_PHYS_CHUNK * Q_DC_GRID)) +
                                         m->positions[3 * vi + k];
                    }
                }
            }
}

/* Triangle edges are welded by exact grid position (hash of both corners). */
static uint32_t hash_edge(const int32_t a[3], const int32_t b[3])
{
    uint32_t h = 2166136261u;
    for (int k = 0; k < 3; k++) {
        h = (h ^ (uint32_t)a[k]) * 16777619u;
        h = (h ^ (uint32_t)b[k]) * 16777619u;
    }
    return h ^ (h >> 15);
}

static bool same3(const int32_t a[3], const int32_t b[3]) { return a[0] == b[0] && a[1] == b[1] && a[2] == b[2]; }

/* Edge table: every directed triangle edge by its grid corners. */
static void build_edge_table(gather *g)
{
    g->hsize = 16;
    while (g->hsize < 4u * (uint32_t)g->ntris)
        g->hsize *= 2;
    memset(g->table, 0, g->hsize * sizeof g->table[0]);
    for (int t = 0; t < g->ntris; t++)
        for (int k = 0; k < 3; k++) {
            uint32_t h = hash_edge(g->tris[t].g[k], g->tris[t].g[(k + 1) % 3]) & (g->hsize - 1);
            while (g->table[h])
                h = (h + 1) & (g->hsize - 1);
            g->table[h] = (uint16_t)(1 + (t << 2 | k));
        }
}

/* Whether edge k of tr is internal: its neighbour (the triangle with the
 * reversed edge) is coplanar, concave or convex by under Q_EDGE_SIN.
 * The mesher's surfaces are closed, so an edge whose neighbour was not
 * gathered has one outside the query box, where the shape cannot touch it:
 * it counts as internal (else a box resting on flat ground gets sideways
 * normals from triangle corners at the edge of the gathered patch).
 * Computed on demand, in grid units; the edge table is built on the
 * first call for a gathered set (most sets never need it). */
static bool edge_internal(gather *g, const ttri *tr, int k)
{
    if (g->hsize == 0)
        build_edge_table(g);
    const int32_t *a = tr->g[k], *b = tr->g[(k + 1) % 3];
    uint32_t h = hash_edge(b, a) & (g->hsize - 1);
    for (; g->table[h]; h = (h + 1) & (g->hsize - 1)) {
        int u = (g->table[h] - 1) >> 2, m = (g->table[h] - 1) & 3;
        const ttri *tu = &g->tris[u];
        if (!same3(tu->g[m], b) || !same3(tu->g[(m + 1) % 3], a))
            continue;
        double e1[3], e2[3], d[3];
        for (int c = 0; c < 3; c++) {
            e1[c] = (double)(tr->g[1][c] - tr->g[0][c]);
            e2[c] = (double)(tr->g[2][c] - tr->g[0][c]);
            d[c] = (double)(tu->g[(m + 2) % 3][c] - a[c]);
        }
        double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        double nl = sqrt(dot3(n, n)), len = sqrt(dot3(d, d));
        if (nl == 0 || len == 0)
            return false;
        return !(dot3(n, d) / nl < -Q_EDGE_SIN * len);
    }
    return true;
}

typedef struct tcontact {
    q_contact_point p;
    double normal[3];
    uint16_t chunk;
    uint8_t material;
} tcontact;

static int collide_triangle(gather *g, const ttri *t, const q_collider *s, const q_poly *body,
                            const q_convex *core, double margin, q_manifold *m)
{
    double v[3][3];
    tri_world(g, t, v);
    q_poly tp;
    q_poly_from_triangle(&tp, v[0], v[1], v[2]);
    bool is_core = s->kind == Q_COLLIDER_SPHERE || s->kind == Q_COLLIDER_CAPSULE;
    int r = is_core ? q_core_poly(&tp, core, margin, Q_NP_ONE_SIDED, m)
                    : q_poly_poly(&tp, body, margin, Q_NP_ONE_SIDED, m);
    if (!r || dot3(m->normal, tp.tn) > 1 - 1e-6)
        return r;
    /* the triangle's feature touching: its corners extreme along the normal */
    double hi = -INFINITY, d[3];
    for (int i = 0; i < 3; i++) {
        d[i] = dot3(m->normal, v[i]);
        hi = fmax(hi, d[i]);
    }
    double tol = 1e-6 * g->tp->voxel_size;
    int on = 0, cnt = 0;
    for (int i = 0; i < 3; i++)
        if (d[i] >= hi - tol) {
            on |= 1 << i;
            cnt++;
        }
    bool internal;
    if (cnt == 2) {
        int k = on == 3 ? 0 : on == 6 ? 1 : 2; /* edge k: corners k, k+1 */
        internal = edge_internal(g, t, k);
    } else if (cnt == 1) {
        int i = on == 1 ? 0 : on == 2 ? 1 : 2; /* edges i and i-1 meet at corner i */
        internal = edge_internal(g, t, i) && edge_internal(g, t, (i + 2) % 3);
    } else
        internal = true;
    if (!internal)
        return r;
    if (is_core) {
        /* normal correction: the true distance, along the face normal (the
         * solver keeps round bodies' anchors from turning into the ground,
         * bodies.h) */
        memcpy(m->normal, tp.tn, sizeof tp.tn);
        return r;
    }
    unsigned fl = Q_NP_ONE_SIDED | Q_NP_FACE_ONLY | Q_NP_CLIP_STRICT;
    return q_poly_poly(&tp, body, margin, fl, m);
}

typedef struct full_ctx {
    q_terrain_physics *tp;
    const q_collider *s;
    const q_xform *x;
    double vs;
    q_terrain_manifold *out;
    size_t cap, n;
} full_ctx;

static void on_full_chunk(void *ud, int32_t cx, int32_t cy, int32_t cz)
{
    full_ctx *f = ud;
    double down[3] = {0, -1, 0}, p[3];
    q_collider_support(f->s, f->x, down, p);
    double c[3] = {cx * Q_PHYS_CHUNK * f->vs, cy * Q_PHYS_CHUNK * f->vs, cz * Q_PHYS_CHUNK * f->vs};
    double size = Q_PHYS_CHUNK * f->vs;
    for (int k = 0; k < 3; k++)
        if (p[k] < c[k] || p[k] >= c[k] + size)
            return;
    if (f->n >= f->cap)
        return;
    q_terrain_manifold *tm = &f->out[f->n++];
    memset(tm, 0, sizeof *tm);
    tm->cx = cx;
    tm->cy = cy;
    tm->cz = cz;
    tm->m.normal[1] = 1;
    tm->m.count = 1;
    tm->m.key = 3;
    double depth = c[1] + size - p[1];
    memcpy(tm->m.points[0].position, p, sizeof p);
    tm->m.points[0].position[1] += depth / 2;
    tm->m.points[0].separation = -depth;
    tm->m.points[0].id = Q_TERRAIN_ID_FULL;
    /* material: the voxel's there */
    tm->material = q_terrain_get(f->tp->terrain, (int32_t)floor(p[0] / f->vs), (int32_t)floor(p[1] / f->vs),
                                 (int32_t)floor(p[2] / f->vs))
                       .material;
}

/* A shape with no triangle near it whose centre is inside the solid:
 * one contact at its lowest point pushing up to the surface above (found
 * by a ray up to 64 voxels). */
static size_t buried(q_terrain_physics *tp, const q_collider *s, const q_xform *t, q_terrain_manifold *out)
{
    double vs = tp->voxel_size, mn[3], mx[3], c[3], v[3];
    q_collider_bounds(s, t, mn, mx);
    for (int k = 0; k < 3; k++) {
        c[k] = (mn[k] + mx[k]) / 2;
        v[k] = c[k] / vs;
    }
    if (q_terrain_solid_density(tp->terrain, v) < 0.5)
        return 0;
    double up[3] = {0, 1, 0}, down[3] = {0, -1, 0}, low[3];
    q_ray_hit hit;
    if (!q_terrain_physics_raycast(tp, c, up, 64 * vs, Q_RAY_SOLID, &hit))
        return 0;
    q_collider_support(s, t, down, low);
    memset(out, 0, sizeof *out);
    out->cx = (int32_t)floor(low[0] / vs / Q_PHYS_CHUNK);
    out->cy = (int32_t)floor(low[1] / vs / Q_PHYS_CHUNK);
    out->cz = (int32_t)floor(low[2] / vs / Q_PHYS_CHUNK);
    out->material = hit.material;
    out->m.normal[1] = 1;
    out->m.count = 1;
    out->m.key = 3;
    double depth = hit.position[1] - low[1];
    memcpy(out->m.points[0].position, low, sizeof low);
    out->m.points[0].position[1] += depth / 2;
    out->m.points[0].separation = -depth;
    out->m.points[0].id = Q_TERRAIN_ID_BURIED;
    return 1;
}

static size_t collide_convex(q_terrain_physics *tp, const q_collider *s, const q_xform *t, double margin,
                             q_terrain_manifold *out, size_t cap, gather *g, size_t n_out)
{
    q_poly body;
    q_convex core;
    bool is_core = s->kind == Q_COLLIDER_SPHERE || s->kind == Q_COLLIDER_CAPSULE;
    if (is_core)
        q_convex_from_collider(&core, s, t);
    else
        q_poly_from_collider(&body, s, t);
    double mn[3], mx[3];
    q_collider_bounds(s, t, mn, mx);
    for (int k = 0; k < 3; k++) {
        mn[k] -= margin;
        mx[k] += margin;
    }
    full_ctx fc = {tp, s, t, tp->voxel_size, out + n_out, cap - n_out, 0};
    g->tp = tp;
    gather_triangles(g, mn, mx, on_full_chunk, &fc);
    n_out += fc.n;
    if (g->ntris == 0) {
        if (fc.n == 0 && n_out < cap)
            n_out += buried(tp, s, t, out + n_out);
        return n_out;
    }
    g->hsize = 0; /* edge table: built when first needed */
    tcontact pts[Q_CLIP_POINTS];
    int np = 0;
    /* triangles arrive chunk by chunk: flush at each chunk change */
    for (int i = 0; i <= g->ntris; i++) {
        if (np > 0 && (i == g->ntris || g->tris[i].chunk != pts[0].chunk)) {
            /* cluster by normal, deepest first */
            bool used[Q_CLIP_POINTS] = {false};
            for (uint32_t key = 0; key < 3 && n_out < cap; key++) {
                int deep = -1;
                for (int j = 0; j < np; j++)
                    if (!used[j] && (deep < 0 || pts[j].p.separation < pts[deep].p.separation))
                        deep = j;
                if (deep < 0)
                    break;
                q_contact_point cl[Q_CLIP_POINTS];
                int nc = 0;
                for (int j = 0; j < np; j++)
                    if (!used[j] && dot3(pts[j].normal, pts[deep].normal) > 0.95) {
                        used[j] = true;
                        cl[nc++] = pts[j].p;
                    }
                q_terrain_manifold *tm = &out[n_out++];
                const int32_t *cc = g->chunks[pts[deep].chunk];
                tm->cx = cc[0];
                tm->cy = cc[1];
                tm->cz = cc[2];
                tm->material = pts[deep].material;
                memcpy(tm->m.normal, pts[deep].normal, sizeof tm->m.normal);
                tm->m.key = key;
                q_reduce_points(pts[deep].normal, cl, nc, &tm->m);
            }
            np = 0;
        }
        if (i == g->ntris)
            break;
        q_manifold m;
        const ttri *tr = &g->tris[i];
        if (!collide_triangle(g, tr, s, &body, &core, margin, &m))
            continue;
        for (uint32_t j = 0; j < m.count && np < Q_CLIP_POINTS; j++) {
            tcontact *c = &pts[np++];
            c->p = m.points[j];
            c->p.id = (tr->index * 2654435761u) ^ m.points[j].id;
            memcpy(c->normal, m.normal, sizeof c->normal);
            c->chunk = tr->chunk;
            /* material of the corner nearest the point */
            double v[3][3], best = INFINITY;
            tri_world(g, tr, v);
            for (int k = 0; k < 3; k++) {
                double d[3] = {v[k][0] - c->p.position[0], v[k][1] - c->p.position[1], v[k][2] - c->p.position[2]};
                if (dot3(d, d) < best) {
                    best = dot3(d, d);
                    c->material = tr->mat[k];
                }
            }
        }
    }
    return n_out;
}

void q_collide_terrain_warm(q_terrain_physics *tp, const q_collider *s, const q_xform *t, double margin)
{
    double mn[3], mx[3], vs = tp->voxel_size;
    q_collider_bounds(s, t, mn, mx);
    int64_t cmin[3], cmax[3];
    for (int k = 0; k < 3; k++) {
        /* the same chunk range as gather_triangles */
        double lo = floor((mn[k] - margin) / vs / Q_PHYS_CHUNK - 1.0 / 16);
        double hi = floor((mx[k] + margin) / vs / Q_PHYS_CHUNK + 1.0 / 16);
        double lim = (k == 1 ? Q_PHYS_LIMIT_Y : Q_PHYS_LIMIT) / Q_PHYS_CHUNK - 1;
        if (!(lo <= hi) || hi < -lim || lo > lim)
            return;
        cmin[k] = (int64_t)fmax(lo, -lim);
        cmax[k] = (int64_t)fmin(hi, lim);
    }
    for (int64_t cz = cmin[2]; cz <= cmax[2]; cz++)
        for (int64_t cy = cmin[1]; cy <= cmax[1]; cy++)
            for (int64_t cx = cmin[0]; cx <= cmax[0]; cx++) {
                const q_bp_entry *b = q_bp_find(tp, (int32_t)cx, (int32_t)cy, (int32_t)cz);
                if (b && b->solid_tag == Q_BP_MASK)
                    q_tp_chunk_mesh(tp, (int32_t)cx, (int32_t)cy, (int32_t)cz, 0);
            }
}

size_t q_collide_terrain(q_terrain_physics *tp, const q_collider *s, const q_xform *t, double margin,
                         q_terrain_manifold *out, size_t cap)
{
    if (cap == 0 || !q_terrain_physics_sync(tp))
        return 0;
    double mn[3], mx[3];
    q_collider_bounds(s, t, mn, mx);
    for (int k = 0; k < 3; k++) {
        mn[k] -= margin;
        mx[k] += margin;
    }
    if (!q_terrain_physics_broadphase(tp, mn, mx).solid)
        return 0;
    return q_collide_terrain_near(tp, s, t, margin, out, cap);
}

size_t q_collide_terrain_near(q_terrain_physics *tp, const q_collider *s, const q_xform *t, double margin,
                              q_terrain_manifold *out, size_t cap)
{
    if (cap == 0 || !q_terrain_physics_sync(tp))
        return 0;
    gather g;
    if (s->kind != Q_COLLIDER_COMPOUND)
        return collide_convex(tp, s, t, margin, out, cap, &g, 0);
    size_t n = 0;
    for (uint32_t i = 0; i < s->part_count && n < cap; i++) {
        q_xform x = q_xform_mul(t, &s->parts[i].local);
        size_t n0 = n;
        n = collide_convex(tp, s->parts[i].shape, &x, margin, out, cap, &g, n);
        for (size_t j = n0; j < n; j++)
            out[j].m.key |= i << 16;
    }
    return n;
}

/* ---- shape cast ---- */

static bool cast_convex_terrain(q_terrain_physics *tp, const q_collider *s, const q_xform *from, const double delta[3],
                                gather *g, q_cast_hit *hit)
{
    double mn[3], mx[3], mn2[3], mx2[3];
    q_xform to = *from;
    for (int k = 0; k < 3; k++)
        to.p[k] += delta[k];
    q_collider_bounds(s, from, mn, mx);
    q_collider_bounds(s, &to, mn2, mx2);
    for (int k = 0; k < 3; k++) {
        mn[k] = fmin(mn[k], mn2[k]);
        mx[k] = fmax(mx[k], mx2[k]);
    }
    if (!q_terrain_physics_broadphase(tp, mn, mx).solid)
        return false;
    g->tp = tp;
    gather_triangles(g, mn, mx, NULL, NULL);
    q_convex a;
    q_convex_from_collider(&a, s, from);
    double size = fmax(s->max[0] - s->min[0], fmax(s->max[1] - s->min[1], s->max[2] - s->min[2]));
    bool any = false;
    for (int i = 0; i < g->ntris; i++) {
        q_convex b;
        double v[3][3];
        tri_world(g, &g->tris[i], v);
        b.s = NULL;
        b.n = 3;
        b.radius = 0;
        memcpy(b.pts, v, sizeof v);
        q_cast_hit h;
        if (!q_cast_convex(&a, delta, &b, 1e-6 * fmax(size, 1e-3), &h))
            continue;
        if (!any || h.fraction < hit->fraction) {
            *hit = h;
            hit->material = g->tris[i].mat[0];
            any = true;
        }
    }
    return any;
}

bool q_shapecast_terrain(q_terrain_physics *tp, const q_collider *s, const q_xform *from, const double delta[3],
                         q_cast_hit *hit)
{
    if (!q_terrain_physics_sync(tp))
        return false;
    gather g;
    if (s->kind != Q_COLLIDER_COMPOUND)
        return cast_convex_terrain(tp, s, from, delta, &g, hit);
    bool any = false;
    for (uint32_t i = 0; i < s->part_count; i++) {
        q_xform x = q_xform_mul(from, &s->parts[i].local);
        q_cast_hit h;
        if (cast_convex_terrain(tp, s->parts[i].shape, &x, delta, &g, &h) && (!any || h.fraction < hit->fraction)) {
            *hit = h;
            any = true;
        }
    }
    return any;
}
