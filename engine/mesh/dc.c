/* Dual contouring: see dc.h for the model and the ownership rule.
 *
 * Normals. The outward normal at a crossing is minus the density gradient.
 * Along the edge we use the edge's own difference d(b) - d(a); across it,
 * central differences at both ends interpolated to the crossing. One rule
 * keeps voxel-aligned shapes sharp: when three samples in a row along an axis
 * are all exactly empty or full, the field carries no information about the
 * surface's slope along that axis (it is a step, i.e. the surface is aligned
 * with the grid there), so that component is zero rather than the central
 * difference's 1/2, which would bevel every corner. Anti-aliased shapes have
 * fractional occupancies near their surface and get ordinary central
 * differences: smooth where the voxels are smooth, sharp where they are sharp.
 *
 * Manifold cells. A cell whose corners form more than one surface patch (two
 * solids touching along a diagonal, a thin wall) gets one vertex per patch,
 * as in manifold dual contouring (Schaefer, Ju, Warren 2007): the cell's
 * active edges are grouped by walking each face, where two active edges
 * belong together when they bound the same run of inside corners. On a face
 * whose corners alternate (the ambiguous case) both cells sharing the face
 * make the same decision from the same samples (face_joins_inside), so each
 * mesh edge is normally shared by exactly two triangles. A saddle that needs
 * a tunnel through both cells cannot be represented with one vertex per patch
 * and leaves a doubled edge: rare on generated terrain, never on convex or
 * anti-aliased shapes (spec/mesh_spec.lua counts it).
 *
 * Layout. The samples of the box grown by two on every side are read once
 * (crossings use samples one beyond the cells, gradients one beyond that).
 * Vertices are made lazily, the first time a quad needs them, and cached per
 * cell, so a box only outputs vertices its own quads use.
 */
#include "mesh/dc.h"

#include "core/alloc.h"
#include "mesh/qef.h"
#include "voxel/material.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum { OUTSIDE = 0, INSIDE = 1, BLOCKER = 2 };

typedef struct dc_ctx {
    q_box box;
    int32_t rmin[3];    /* first sample of the read region (box.min - 2) */
    int64_t rn[3];      /* read region size */
    int64_t sy, sz;     /* strides of the read region */
    uint8_t *mat, *occ; /* read region */
    float *density;     /* per sample, for the surface being meshed */
    uint8_t *cls;       /* OUTSIDE / INSIDE / BLOCKER */
    int32_t *cell_first;  /* cells [box.min - 1, box.max): first vertex, -1 = not made yet */
    uint32_t *cell_map;   /* 2 bits per cell edge: which of the cell's vertices it uses */
    int64_t cn[3];
    q_surface surface;
    float scale;
    q_dc_output *out;
    bool full;
    bool liquid[Q_MATERIAL_MAX];
} dc_ctx;

static size_t box_samples(q_box b, int grow)
{
    size_t n = 1;
    for (int a = 0; a < 3; a++)
        n *= (size_t)((int64_t)b.max[a] - b.min[a] + 2 * grow);
    return n;
}

size_t q_dc_vertex_bound(q_box box)
{
    if (box_samples(box, 0) == 0)
        return 0;
    size_t c = 1; /* up to 4 vertices per cell of [min - 1, max), plus slack */
    for (int a = 0; a < 3; a++)
        c *= (size_t)((int64_t)box.max[a] - box.min[a] + 1);
    return 4 * c + 16;
}

size_t q_dc_index_bound(q_box box)
{
    return box_samples(box, 0) * 3 * 6;
}

size_t q_dc_scratch_bytes(q_box box)
{
    size_t r = box_samples(box, 2);
    size_t c = 1;
    for (int a = 0; a < 3; a++)
        c *= (size_t)((int64_t)box.max[a] - box.min[a] + 1);
    return r * (2 + sizeof(float) + 1) + c * (sizeof(int32_t) + sizeof(uint32_t)) + 64;
}

static inline int64_t sample_index(const dc_ctx *c, int64_t x, int64_t y, int64_t z)
{
    return (x - c->rmin[0]) + (y - c->rmin[1]) * c->sy + (z - c->rmin[2]) * c->sz;
}

/* Density gradient component at sample s along the axis with stride st. */
static inline double gradient(const dc_ctx *c, int64_t s, int64_t st)
{
    float lo = c->density[s - st], mid = c->density[s], hi = c->density[s + st];
    bool step = (lo == 0.0f || lo == 1.0f) && (mid == 0.0f || mid == 1.0f) && (hi == 0.0f || hi == 1.0f);
    return step ? 0.0 : 0.5 * ((double)hi - lo);
}

/* Corner k of a cell: bit 0 -> +x, bit 1 -> +y, bit 2 -> +z. */
static const int EDGE_CORNERS[12][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, /* along x */
                                        {0, 2}, {1, 3}, {4, 6}, {5, 7}, /* along y */
                                        {0, 4}, {1, 5}, {2, 6}, {3, 7}}; /* along z */

/* EDGE_OF[k1][k2]: the edge joining corners k1 and k2 (which differ in one
 * bit), -1 otherwise. Built once from EDGE_CORNERS. */
static int8_t EDGE_OF[8][8];
static pthread_once_t edge_once = PTHREAD_ONCE_INIT;

static void init_edge_table(void)
{
    memset(EDGE_OF, -1, sizeof EDGE_OF);
    for (int e = 0; e < 12; e++) {
        EDGE_OF[EDGE_CORNERS[e][0]][EDGE_CORNERS[e][1]] = (int8_t)e;
        EDGE_OF[EDGE_CORNERS[e][1]][EDGE_CORNERS[e][0]] = (int8_t)e;
    }
}

static inline int edge_between(int k1, int k2)
{
    return EDGE_OF[k1][k2];
}

static int uf_find(int *parent, int i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

static void uf_union(int *parent, int a, int b)
{
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a != b)
        parent[a < b ? b : a] = a < b ? a : b; /* smaller index wins: deterministic */
}

static inline bool edge_active(uint8_t ca, uint8_t cb)
{
    return (ca == INSIDE && cb == OUTSIDE) || (ca == OUTSIDE && cb == INSIDE);
}

/* Whether corners k1 and k2 (diagonal on a face) are joined by a path of
 * corners of class `cls_want` along cube edges, within one cell. */
static bool corners_connected(const uint8_t cls[8], int k1, int k2, uint8_t want)
{
    int seen = 1 << k1, stack[8], top = 0;
    stack[top++] = k1;
    while (top) {
        int k = stack[--top];
        if (k == k2)
            return true;
        for (int a = 0; a < 3; a++) {
            int n = k ^ (1 << a);
            if (!(seen & (1 << n)) && cls[n] == want) {
                seen |= 1 << n;
                stack[top++] = n;
            }
        }
    }
    return false;
}

/* Decides an alternating face: true when its inside corners connect across
 * it. Both cells sharing the face compute this from the same twelve samples
 * (the face's and both cells' far corners), so they always agree. A pair of
 * corners already joined through either cell is joined across the face too,
 * which keeps each cell's patch from crossing the face twice; otherwise the
 * mean density at the face decides. */
static bool face_joins_inside(const dc_ctx *c, const int64_t cell[3], int axis, int side, const uint8_t cls[8],
                              const int ring[4])
{
    uint8_t other[8];
    for (int k = 0; k < 8; k++) {
        int64_t q[3] = {cell[0] + (k & 1), cell[1] + ((k >> 1) & 1), cell[2] + ((k >> 2) & 1)};
        q[axis] += side ? 1 : -1;
        other[k] = c->cls[sample_index(c, q[0], q[1], q[2])];
    }
    /* In the neighbour the face has the opposite side bit. */
    int nring[4];
    for (int i = 0; i < 4; i++)
        nring[i] = ring[i] ^ (1 << axis);
    int in0 = cls[ring[0]] == INSIDE ? 0 : 1; /* ring[in0] and ring[in0 + 2] are inside */
    if (corners_connected(cls, ring[in0], ring[in0 + 2], INSIDE) ||
        corners_connected(other, nring[in0], nring[in0 + 2], INSIDE))
        return true;
    if (corners_connected(cls, ring[1 - in0], ring[3 - in0], OUTSIDE) ||
        corners_connected(other, nring[1 - in0], nring[3 - in0], OUTSIDE))
        return false;
    double mean = 0;
    for (int i = 0; i < 4; i++)
        mean += c->density[sample_index(c, cell[0] + (ring[i] & 1), cell[1] + ((ring[i] >> 1) & 1),
                                         cell[2] + ((ring[i] >> 2) & 1))];
    return mean / 4 > 0.5;
}

/* Makes the vertices of cell (x, y, z), one per surface patch, and returns
 * the cell's slot in the per-cell tables. */
static int64_t make_cell(dc_ctx *c, int64_t x, int64_t y, int64_t z)
{
    int64_t ci = (x - (c->box.min[0] - 1)) + c->cn[0] * ((y - (c->box.min[1] - 1)) + c->cn[1] * (z - (c->box.min[2] - 1)));
    if (c->cell_first[ci] >= 0)
        return ci;
    const int64_t st[3] = {1, c->sy, c->sz};
    int64_t corner[8];
    uint8_t cls[8];
    for (int k = 0; k < 8; k++) {
        corner[k] = sample_index(c, x + (k & 1), y + ((k >> 1) & 1), z + ((k >> 2) & 1));
        cls[k] = c->cls[corner[k]];
    }

    /* Group the active edges into patches, face by face. */
    int parent[12];
    for (int e = 0; e < 12; e++)
        parent[e] = e;
    for (int axis = 0; axis < 3; axis++)
        for (int side = 0; side < 2; side++) {
            int b = (axis + 1) % 3, d = (axis + 2) % 3;
            int ring[4] = {side << axis, side << axis | 1 << b, side << axis | 1 << b | 1 << d, side << axis | 1 << d};
            int edges[4];
            bool active[4];
            int nactive = 0;
            for (int i = 0; i < 4; i++) {
                edges[i] = edge_between(ring[i], ring[(i + 1) % 4]);
                active[i] = edge_active(cls[ring[i]], cls[ring[(i + 1) % 4]]);
                nactive += active[i];
            }
            if (nactive < 2)
                continue;
            /* Runs of this class around the ring are bounded by two edges
             * that belong to one patch. Normally that class is INSIDE; on an
             * alternating face whose centre is inside, the outside corners
             * are the isolated ones. */
            uint8_t run = INSIDE;
            if (nactive == 4 && face_joins_inside(c, (const int64_t[3]){x, y, z}, axis, side, cls, ring))
                run = OUTSIDE;
            for (int i = 0; i < 4; i++) {
                if (cls[ring[i]] != run || cls[ring[(i + 3) % 4]] == run)
                    continue; /* i starts a run */
                int j = i;
                while (cls[ring[(j + 1) % 4]] == run)
                    j = (j + 1) % 4;
                int before = (i + 3) % 4, after = j; /* edges entering and leaving the run */
                if (active[before] && active[after])
                    uf_union(parent, edges[before], edges[after]);
            }
        }

    /* One QEF per patch. */
    q_qef qef[4];
    double nsum[4][3] = {{0}};
    int patch_of_root[12], npatch = 0;
    uint32_t map = 0;
    for (int e = 0; e < 12; e++)
        patch_of_root[e] = -1;
    for (int e = 0; e < 12; e++) {
        int ka = EDGE_CORNERS[e][0], kb = EDGE_CORNERS[e][1];
        if (!edge_active(cls[ka], cls[kb]))
            continue;
        int root = uf_find(parent, e);
        if (patch_of_root[root] < 0) {
            patch_of_root[root] = npatch < 4 ? npatch++ : 3; /* MC never has more than 4 */
            q_qef_clear(&qef[patch_of_root[root]]);
        }
        int patch = patch_of_root[root];
        map |= (uint32_t)patch << (2 * e);
        int axis = e / 4;
        int64_t a = corner[ka], b = corner[kb];
        double da = c->density[a], db = c->density[b];
        double t = (da - 0.5) / (da - db);
        /* crossing, relative to the cell's first corner sample */
        double p[3] = {(double)(ka & 1), (double)((ka >> 1) & 1), (double)((ka >> 2) & 1)};
        p[axis] += t;
        double g[3];
        for (int k = 0; k < 3; k++) {
            if (k == axis)
                g[k] = db - da;
            else
                g[k] = (1 - t) * gradient(c, a, st[k]) + t * gradient(c, b, st[k]);
        }
        double len = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
        double n[3] = {-g[0] / len, -g[1] / len, -g[2] / len};
        q_qef_add(&qef[patch], p, n);
        for (int k = 0; k < 3; k++)
            nsum[patch][k] += n[k];
    }

    int material = 0;
    if (c->out->materials) {
        /* Dominant material of the cell's corners: the one on most corners
         * among this surface's materials (any occupancy), ties going to the
         * smaller total occupancy -- the layer nearer the surface, so a thin
         * grass top wins over the full dirt under it -- then the lower id. */
        int best_n = 0, best_occ = 0;
        for (int k = 0; k < 8; k++) {
            int m = c->mat[corner[k]];
            bool ours = c->occ[corner[k]] > 0 && (c->surface == Q_SURFACE_WATER) == c->liquid[m];
            if (!ours)
                continue;
            int n = 0, occ = 0;
            for (int j = 0; j < 8; j++)
                if (c->mat[corner[j]] == m) {
                    n++;
                    occ += c->occ[corner[j]];
                }
            if (n > best_n || (n == best_n && (occ < best_occ || (occ == best_occ && m < material)))) {
                material = m;
                best_n = n;
                best_occ = occ;
            }
        }
    }

    size_t first = c->out->vertex_count;
    const int64_t cell[3] = {x, y, z};
    for (int patch = 0; patch < npatch; patch++) {
        double v[3];
        q_qef_solve(&qef[patch], v);
        size_t id = c->out->vertex_count++;
        float *pos = c->out->positions + 3 * id;
        for (int k = 0; k < 3; k++) {
            /* The vertex stays in its cell: QEF minimisers of nearly parallel
             * planes can run far away, and the cell bound is what keeps the
             * mesh free of fold-overs between neighbouring cells. */
            double l = v[k] < 0 ? 0 : v[k] > 1 ? 1 : v[k];
            l = nearbyint(l * Q_DC_GRID) / Q_DC_GRID;
            pos[k] = (float)(((double)(cell[k] - c->out->origin[k]) + 0.5 + l) * c->scale);
        }
        if (c->out->normals) {
            const double *n = nsum[patch];
            double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
            for (int k = 0; k < 3; k++)
                c->out->normals[3 * id + k] = len > 0 ? (float)(n[k] / len) : 0.0f;
        }
        if (c->out->materials)
            c->out->materials[id] = (uint8_t)material;
        if (c->out->cells)
            for (int k = 0; k < 3; k++)
                c->out->cells[3 * id + k] = (int32_t)cell[k];
    }
    c->cell_first[ci] = (int32_t)first;
    c->cell_map[ci] = map;
    return ci;
}

/* Vertex of cell (x, y, z) used by the cell's edge that starts at local
 * corner k and runs along axis. */
static uint32_t edge_vertex(dc_ctx *c, int64_t x, int64_t y, int64_t z, int k, int axis)
{
    int64_t ci = make_cell(c, x, y, z);
    int e = edge_between(k, k | 1 << axis);
    return (uint32_t)c->cell_first[ci] + ((c->cell_map[ci] >> (2 * e)) & 3u);
}

static float dist2(const float *a, const float *b)
{
    float dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    return dx * dx + dy * dy + dz * dz;
}

/* The quad of the edge from sample p along axis a. */
static void emit_quad(dc_ctx *c, const int64_t p[3], int a, bool outward_positive)
{
    if (c->full)
        return;
    /* up to 4 new cells of up to 4 vertices each */
    if (c->out->vertex_count + 16 > c->out->vertex_capacity || c->out->index_count + 6 > c->out->index_capacity) {
        c->full = true;
        return;
    }
    int b = (a + 1) % 3, d = (a + 2) % 3;
    static const int AROUND[4][2] = {{-1, -1}, {0, -1}, {0, 0}, {-1, 0}}; /* (b, d) offsets, CCW seen from +a */
    uint32_t v[4];
    for (int k = 0; k < 4; k++) {
        int64_t q[3] = {p[0], p[1], p[2]};
        q[b] += AROUND[k][0];
        q[d] += AROUND[k][1];
        /* the edge starts at local corner (p - q) of cell q */
        int corner = (int)((p[b] - q[b]) << b | (p[d] - q[d]) << d);
        v[k] = edge_vertex(c, q[0], q[1], q[2], corner, a);
    }
    if (!outward_positive) {
        uint32_t s = v[1];
        v[1] = v[3];
        v[3] = s;
    }
    const float *P = c->out->positions;
    uint32_t *idx = c->out->indices + c->out->index_count;
    if (dist2(P + 3 * v[0], P + 3 * v[2]) <= dist2(P + 3 * v[1], P + 3 * v[3])) {
        uint32_t tri[6] = {v[0], v[1], v[2], v[0], v[2], v[3]};
        memcpy(idx, tri, sizeof tri);
    } else {
        uint32_t tri[6] = {v[0], v[1], v[3], v[1], v[2], v[3]};
        memcpy(idx, tri, sizeof tri);
    }
    c->out->index_count += 6;
}

q_status q_dc_mesh(const q_terrain *t, q_box box, q_surface surface, float scale, q_dc_output *out,
                   void *scratch, char *err, size_t errlen)
{
    out->vertex_count = out->index_count = 0;
    for (int a = 0; a < 3; a++) {
        if (box.min[a] > box.max[a] || box.min[a] < -Q_TERRAIN_LIMIT + 2 || box.max[a] > Q_TERRAIN_LIMIT - 2) {
            snprintf(err, errlen, "box must satisfy min <= max within +-%d voxels", Q_TERRAIN_LIMIT - 2);
            return Q_ERR_ARGUMENT;
        }
    }
    if (q_box_volume(box) > Q_DC_MAX_SAMPLES) {
        snprintf(err, errlen, "box of %llu voxels is over the mesher's limit of %llu",
                 (unsigned long long)q_box_volume(box), (unsigned long long)Q_DC_MAX_SAMPLES);
        return Q_ERR_TOO_LARGE;
    }
    if (q_box_volume(box) == 0)
        return Q_OK;
    if (!(isfinite(scale) && scale > 0)) {
        snprintf(err, errlen, "scale must be > 0");
        return Q_ERR_ARGUMENT;
    }

    pthread_once(&edge_once, init_edge_table);
    dc_ctx c;
    memset(&c, 0, sizeof c);
    c.box = box;
    c.surface = surface;
    c.scale = scale;
    c.out = out;
    q_box region;
    for (int a = 0; a < 3; a++) {
        region.min[a] = box.min[a] - 2;
        region.max[a] = box.max[a] + 2;
        c.rmin[a] = region.min[a];
        c.rn[a] = region.max[a] - region.min[a];
        c.cn[a] = (int64_t)box.max[a] - box.min[a] + 1;
    }
    c.sy = c.rn[0];
    c.sz = c.rn[0] * c.rn[1];
    size_t nr = (size_t)(c.rn[0] * c.rn[1] * c.rn[2]);
    size_t ncell = (size_t)(c.cn[0] * c.cn[1] * c.cn[2]);
    size_t need = q_dc_scratch_bytes(box);
    unsigned char *mem = scratch ? scratch : q_alloc(need);
    if (!mem) {
        snprintf(err, errlen, "out of memory");
        return Q_ERR_MEMORY;
    }
    c.density = (float *)mem; /* floats first: alignment */
    c.cell_first = (int32_t *)(mem + nr * sizeof(float));
    c.cell_map = (uint32_t *)(c.cell_first + ncell);
    c.mat = (unsigned char *)(c.cell_map + ncell);
    c.occ = c.mat + nr;
    c.cls = c.occ + nr;

    q_status st = q_terrain_read(t, region, c.mat, c.occ, err, errlen);
    if (st == Q_OK) {
        for (int m = 0; m < q_material_count(); m++)
            c.liquid[m] = q_material_get(m)->liquid;
        for (size_t i = 0; i < nr; i++) {
            bool liquid = c.liquid[c.mat[i]];
            bool ours = surface == Q_SURFACE_WATER ? liquid : !liquid;
            float d = ours ? c.occ[i] / 255.0f : 0.0f;
            c.density[i] = d;
            if (c.occ[i] >= 128 && ours)
                c.cls[i] = INSIDE;
            else if (surface == Q_SURFACE_WATER && !liquid && c.occ[i] > 0)
                c.cls[i] = BLOCKER; /* any solid: no water walls against shores */
            else
                c.cls[i] = OUTSIDE;
        }
        memset(c.cell_first, 0xff, ncell * sizeof(int32_t));
        const int64_t st3[3] = {1, c.sy, c.sz};
        for (int64_t z = box.min[2]; z < box.max[2]; z++)
            for (int64_t y = box.min[1]; y < box.max[1]; y++) {
                int64_t s = sample_index(&c, box.min[0], y, z);
                for (int64_t x = box.min[0]; x < box.max[0]; x++, s++) {
                    uint8_t here = c.cls[s];
                    for (int a = 0; a < 3; a++) {
                        uint8_t next = c.cls[s + st3[a]];
                        if (here == next || here + next != INSIDE + OUTSIDE)
                            continue;
                        int64_t p[3] = {x, y, z};
                        emit_quad(&c, p, a, here == INSIDE);
                    }
                }
            }
        if (c.full) {
            snprintf(err, errlen, "output arrays too small (use q_dc_vertex_bound / q_dc_index_bound)");
            out->vertex_count = out->index_count = 0;
            st = Q_ERR_OUTPUT;
        }
    }
    if (!scratch)
        q_free(mem, need);
    return st;
}
