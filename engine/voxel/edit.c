/* Shape edits (fill, carve, paint, smooth) and voxel-aligned region fills.
 *
 * Occupancy at a shape's boundary is anti-aliased: coverage of a voxel is
 * clamp(1/2 + d, 0, 1) with d the exact signed distance (voxel units,
 * positive inside) from the voxel centre to the shape's surface. The ramp is
 * one voxel wide, so the occupancy field crosses 1/2 where the surface is and
 * the mesher can place vertices between voxel centres.
 *
 * Edits walk the chunks of the shape's bounding box. A chunk that lies wholly
 * inside or outside the shape (its centre's distance against its
 * half-diagonal; valid because the distances are exact, 1-Lipschitz) skips
 * the per-voxel loop: big fills and carves cost per chunk, not per voxel.
 */
#include "voxel/terrain_internal.h"

#include "core/alloc.h"
#include "voxel/material.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct shape_eval {
    q_shape_kind kind;
    double c[3];
    double r;       /* ball, cylinder radius */
    double half[3]; /* block half extents; cylinder half height in half[1] */
    double m[9];    /* block: world -> local rotation, row-major */
    double ext[3];  /* half extents of the world-space bounding box */
} shape_eval;

/* Signed distance (positive inside) from p to the shape's surface. */
static double shape_distance(const shape_eval *s, double x, double y, double z)
{
    double dx = x - s->c[0], dy = y - s->c[1], dz = z - s->c[2];
    switch (s->kind) {
    case Q_SHAPE_BALL:
        return s->r - sqrt(dx * dx + dy * dy + dz * dz);
    case Q_SHAPE_BLOCK: {
        double q[3] = {s->m[0] * dx + s->m[1] * dy + s->m[2] * dz, s->m[3] * dx + s->m[4] * dy + s->m[5] * dz,
                       s->m[6] * dx + s->m[7] * dy + s->m[8] * dz};
        double out2 = 0.0, inner = -INFINITY;
        for (int a = 0; a < 3; a++) {
            double e = fabs(q[a]) - s->half[a];
            if (e > 0)
                out2 += e * e;
            if (e > inner)
                inner = e;
        }
        return -(sqrt(out2) + (inner < 0 ? inner : 0.0));
    }
    case Q_SHAPE_CYLINDER: {
        double ex = sqrt(dx * dx + dz * dz) - s->r, ey = fabs(dy) - s->half[1];
        double ox = ex > 0 ? ex : 0, oy = ey > 0 ? ey : 0;
        double in = ex > ey ? ex : ey;
        return -(sqrt(ox * ox + oy * oy) + (in < 0 ? in : 0.0));
    }
    }
    return -INFINITY;
}

static double coverage(const shape_eval *s, double x, double y, double z)
{
    double c = 0.5 + shape_distance(s, x, y, z);
    return c <= 0 ? 0.0 : c >= 1 ? 1.0 : c;
}

static bool finite3(const double v[3]) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

/* Validates the shape and fills the evaluator; false with a message. */
static bool prepare_shape(const q_shape *in, shape_eval *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->kind = in->kind;
    if (!finite3(in->center)) {
        snprintf(err, errlen, "center must be finite");
        return false;
    }
    memcpy(s->c, in->center, sizeof s->c);
    switch (in->kind) {
    case Q_SHAPE_BALL:
        if (!(isfinite(in->radius) && in->radius > 0)) {
            snprintf(err, errlen, "radius must be > 0, got %g", in->radius);
            return false;
        }
        s->r = in->radius;
        s->ext[0] = s->ext[1] = s->ext[2] = s->r;
        break;
    case Q_SHAPE_CYLINDER:
        if (!(isfinite(in->radius) && in->radius > 0)) {
            snprintf(err, errlen, "radius must be > 0, got %g", in->radius);
            return false;
        }
        if (!(isfinite(in->height) && in->height > 0)) {
            snprintf(err, errlen, "height must be > 0, got %g", in->height);
            return false;
        }
        s->r = in->radius;
        s->half[1] = in->height / 2;
        s->ext[0] = s->ext[2] = s->r;
        s->ext[1] = s->half[1];
        break;
    case Q_SHAPE_BLOCK: {
        for (int a = 0; a < 3; a++) {
            if (!(isfinite(in->size[a]) && in->size[a] > 0)) {
                snprintf(err, errlen, "size components must be > 0, got %g", in->size[a]);
                return false;
            }
            s->half[a] = in->size[a] / 2;
        }
        double w = in->rotation[0], x = in->rotation[1], y = in->rotation[2], z = in->rotation[3];
        double n = sqrt(w * w + x * x + y * y + z * z);
        if (!(isfinite(n) && n > 1e-12)) {
            snprintf(err, errlen, "rotation must be a finite, non-zero quaternion");
            return false;
        }
        w /= n, x /= n, y /= n, z /= n;
        /* Rows of R^T (the local axes expressed in world space). */
        double r[9] = {1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y),
                       2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x),
                       2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)};
        memcpy(s->m, r, sizeof r);
        for (int a = 0; a < 3; a++)
            s->ext[a] = fabs(r[a]) * s->half[0] + fabs(r[3 + a]) * s->half[1] + fabs(r[6 + a]) * s->half[2];
        break;
    }
    default:
        snprintf(err, errlen, "unknown shape kind %d", (int)in->kind);
        return false;
    }
    return true;
}

/* Voxel box of every voxel whose centre is within half a voxel of the shape. */
static q_status shape_box(const shape_eval *s, uint64_t max_voxels, q_box *box, char *err, size_t errlen)
{
    for (int a = 0; a < 3; a++) {
        double lo = floor(s->c[a] - s->ext[a] - 0.5), hi = floor(s->c[a] + s->ext[a] + 0.5) + 1;
        if (!(lo >= -Q_TERRAIN_LIMIT && hi <= Q_TERRAIN_LIMIT)) {
            snprintf(err, errlen, "edit reaches outside the world limits of +-%d voxels", Q_TERRAIN_LIMIT);
            return Q_ERR_TOO_LARGE;
        }
        box->min[a] = (int32_t)lo;
        box->max[a] = (int32_t)hi;
    }
    if (q_box_volume(*box) > max_voxels) {
        snprintf(err, errlen, "edit covers %llu voxels, over the limit of %llu per edit",
                 (unsigned long long)q_box_volume(*box), (unsigned long long)max_voxels);
        return Q_ERR_TOO_LARGE;
    }
    return Q_OK;
}

/* Occupancy snapshot of the edit box grown by one voxel, for smoothing. */
typedef struct snapshot {
    q_box box;
    int32_t n[3];
    uint8_t *mat, *occ;
} snapshot;

static size_t snap_index(const snapshot *s, int32_t x, int32_t y, int32_t z)
{
    return (size_t)(x - s->box.min[0]) +
           (size_t)s->n[0] * ((size_t)(y - s->box.min[1]) + (size_t)s->n[1] * (size_t)(z - s->box.min[2]));
}

/* New value of one voxel under a per-voxel edit. */
static q_voxel apply_voxel(const q_edit *e, const snapshot *snap, q_voxel old, double cov, int32_t x,
                           int32_t y, int32_t z)
{
    int c8 = (int)lrint(cov * 255.0);
    switch (e->op) {
    case Q_EDIT_FILL:
        if (c8 == 0)
            return old;
        if (old.material == Q_MATERIAL_AIR || c8 >= old.occupancy)
            return (q_voxel){e->material, (uint8_t)c8};
        return old;
    case Q_EDIT_CARVE: {
        int occ = old.occupancy < 255 - c8 ? old.occupancy : 255 - c8;
        return q_voxel_normalise((q_voxel){old.material, (uint8_t)occ});
    }
    case Q_EDIT_PAINT:
        if (c8 >= 128 && old.material != Q_MATERIAL_AIR)
            old.material = e->material;
        return old;
    case Q_EDIT_SMOOTH: {
        double k = e->strength * cov;
        if (k <= 0)
            return old;
        /* Mean occupancy of the 3^3 neighbourhood; the material of a voxel
         * that turns solid is the heaviest (by occupancy) among neighbours,
         * lowest id on ties, so the result is order-independent. */
        int sum = 0;
        int mats[27], weights[27], nm = 0;
        for (int dz = -1; dz <= 1; dz++)
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    size_t i = snap_index(snap, x + dx, y + dy, z + dz);
                    int o = snap->occ[i];
                    sum += o;
                    if (o == 0)
                        continue;
                    int m = snap->mat[i], j = 0;
                    while (j < nm && mats[j] != m)
                        j++;
                    if (j == nm) {
                        mats[nm] = m;
                        weights[nm++] = 0;
                    }
                    weights[j] += o;
                }
        double target = sum / 27.0;
        int occ = (int)lrint(old.occupancy + (target - old.occupancy) * k);
        occ = occ < 0 ? 0 : occ > 255 ? 255 : occ;
        uint8_t mat = old.material;
        if (mat == Q_MATERIAL_AIR && occ > 0) {
            int best = -1;
            for (int j = 0; j < nm; j++)
                if (best < 0 || weights[j] > weights[best] || (weights[j] == weights[best] && mats[j] < mats[best]))
                    best = j;
            mat = best >= 0 ? (uint8_t)mats[best] : Q_MATERIAL_AIR;
        }
        return q_voxel_normalise((q_voxel){mat, (uint8_t)occ});
    }
    }
    return old;
}

typedef struct edit_run {
    q_terrain *t;
    bool logged;
    q_box box;
} edit_run;

static void mark_changed(edit_run *r, q_chunk *c)
{
    if (!r->logged) {
        q_terrain_log_change(r->t, r->box);
        r->logged = true;
    }
    c->version = r->t->version;
}

/* Sets a whole chunk to one value; returns whether anything changed. */
static bool set_chunk_uniform(edit_run *r, long at, q_voxel v)
{
    q_chunk *c = &r->t->chunks.data[at];
    if (!c->voxels && c->uniform.material == v.material && c->uniform.occupancy == v.occupancy)
        return false;
    q_free(c->voxels, Q_CHUNK_VOXELS * sizeof *c->voxels);
    c->voxels = NULL;
    c->uniform = v;
    mark_changed(r, c);
    return true;
}

static q_status oom(char *err, size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    return Q_ERR_MEMORY;
}

q_status q_terrain_edit(q_terrain *t, const q_edit *e, char *err, size_t errlen)
{
    shape_eval s;
    if (!prepare_shape(&e->shape, &s, err, errlen))
        return Q_ERR_ARGUMENT;
    q_edit edit = *e;
    if ((edit.op == Q_EDIT_FILL || edit.op == Q_EDIT_PAINT) && edit.material >= q_material_count()) {
        snprintf(err, errlen, "material id %d is not defined", edit.material);
        return Q_ERR_ARGUMENT;
    }
    if (edit.op == Q_EDIT_FILL && edit.material == Q_MATERIAL_AIR)
        edit.op = Q_EDIT_CARVE;
    if (edit.op == Q_EDIT_PAINT && edit.material == Q_MATERIAL_AIR) {
        snprintf(err, errlen, "cannot paint with air (carve instead)");
        return Q_ERR_ARGUMENT;
    }
    if (edit.op == Q_EDIT_SMOOTH && !(isfinite(edit.strength) && edit.strength >= 0 && edit.strength <= 1)) {
        snprintf(err, errlen, "strength must be in 0..1, got %g", edit.strength);
        return Q_ERR_ARGUMENT;
    }
    q_box box;
    q_status st = shape_box(&s, edit.op == Q_EDIT_SMOOTH ? Q_SMOOTH_MAX_VOXELS : Q_EDIT_MAX_VOXELS, &box,
                            err, errlen);
    if (st != Q_OK)
        return st;

    snapshot snap = {0};
    if (edit.op == Q_EDIT_SMOOTH) {
        for (int a = 0; a < 3; a++) {
            snap.box.min[a] = box.min[a] - 1;
            snap.box.max[a] = box.max[a] + 1;
            snap.n[a] = snap.box.max[a] - snap.box.min[a];
        }
        size_t n = (size_t)q_box_volume(snap.box);
        snap.mat = q_alloc(n);
        snap.occ = q_alloc(n);
        if (!snap.mat || !snap.occ ||
            q_terrain_read(t, snap.box, snap.mat, snap.occ, err, errlen) != Q_OK) {
            q_free(snap.mat, n);
            q_free(snap.occ, n);
            return oom(err, errlen);
        }
    }

    edit_run run = {t, false, box};
    q_status result = Q_OK;
    const bool creates = edit.op == Q_EDIT_FILL || edit.op == Q_EDIT_SMOOTH;
    int32_t cmin[3], cmax[3];
    for (int a = 0; a < 3; a++) {
        cmin[a] = q_floor_div_chunk(box.min[a]);
        cmax[a] = q_floor_div_chunk(box.max[a] - 1);
    }
    for (int32_t cz = cmin[2]; cz <= cmax[2] && result == Q_OK; cz++)
        for (int32_t cy = cmin[1]; cy <= cmax[1] && result == Q_OK; cy++)
            for (int32_t cx = cmin[0]; cx <= cmax[0] && result == Q_OK; cx++) {
                int32_t base[3] = {cx * Q_CHUNK_SIZE, cy * Q_CHUNK_SIZE, cz * Q_CHUNK_SIZE};
                int32_t lo[3], hi[3];
                bool whole = true;
                double mid[3], half2 = 0;
                for (int a = 0; a < 3; a++) {
                    lo[a] = box.min[a] > base[a] ? box.min[a] - base[a] : 0;
                    hi[a] = box.max[a] < base[a] + Q_CHUNK_SIZE ? box.max[a] - base[a] : Q_CHUNK_SIZE;
                    whole = whole && lo[a] == 0 && hi[a] == Q_CHUNK_SIZE;
                    /* voxel centres of the span run from base+lo+.5 to base+hi-.5 */
                    mid[a] = base[a] + (lo[a] + hi[a]) * 0.5;
                    double h = (hi[a] - lo[a] - 1) * 0.5;
                    half2 += h * h;
                }
                double d = shape_distance(&s, mid[0], mid[1], mid[2]), half = sqrt(half2);
                if (d + half <= -0.5)
                    continue; /* no voxel of the span is touched */
                bool full = d - half >= 0.5;

                long at = creates ? q_chunk_get_or_add(t, cx, cy, cz) : q_chunk_find(t, cx, cy, cz);
                if (at < 0) {
                    if (creates)
                        result = oom(err, errlen);
                    continue;
                }
                if (full && whole && edit.op == Q_EDIT_FILL) {
                    set_chunk_uniform(&run, at, (q_voxel){edit.material, 255});
                    q_chunk_settle(t, at);
                    continue;
                }
                if (full && whole && edit.op == Q_EDIT_CARVE) {
                    set_chunk_uniform(&run, at, (q_voxel){0, 0});
                    q_chunk_settle(t, at);
                    continue;
                }
                q_chunk *c = &t->chunks.data[at];
                if (full && whole && edit.op == Q_EDIT_PAINT && !c->voxels) {
                    if (c->uniform.material != Q_MATERIAL_AIR)
                        set_chunk_uniform(&run, at, (q_voxel){edit.material, c->uniform.occupancy});
                    continue;
                }
                for (int32_t z = lo[2]; z < hi[2] && result == Q_OK; z++)
                    for (int32_t y = lo[1]; y < hi[1] && result == Q_OK; y++)
                        for (int32_t x = lo[0]; x < hi[0]; x++) {
                            int32_t gx = base[0] + x, gy = base[1] + y, gz = base[2] + z;
                            double cov = full ? 1.0 : coverage(&s, gx + 0.5, gy + 0.5, gz + 0.5);
                            if (cov <= 0)
                                continue;
                            int i = Q_VOXEL_INDEX(x, y, z);
                            q_voxel old = c->voxels ? c->voxels[i] : c->uniform;
                            q_voxel v = apply_voxel(&edit, &snap, old, cov, gx, gy, gz);
                            if (v.material == old.material && v.occupancy == old.occupancy)
                                continue;
                            if (!c->voxels && !q_chunk_densify(c)) {
                                result = oom(err, errlen);
                                break;
                            }
                            c->voxels[i] = v;
                            mark_changed(&run, c);
                        }
                q_chunk_settle(t, at);
            }
    if (snap.mat) {
        size_t n = (size_t)q_box_volume(snap.box);
        q_free(snap.mat, n);
        q_free(snap.occ, n);
    }
    return result;
}

q_status q_terrain_fill_region(q_terrain *t, q_box box, uint8_t material, char *err, size_t errlen)
{
    if (!q_box_in_limits(box)) {
        snprintf(err, errlen, "box must satisfy min <= max within +-%d voxels", Q_TERRAIN_LIMIT);
        return Q_ERR_ARGUMENT;
    }
    if (q_box_volume(box) > Q_REGION_MAX_VOXELS) {
        snprintf(err, errlen, "region of %llu voxels is over the limit of %llu",
                 (unsigned long long)q_box_volume(box), (unsigned long long)Q_REGION_MAX_VOXELS);
        return Q_ERR_TOO_LARGE;
    }
    if (material >= q_material_count()) {
        snprintf(err, errlen, "material id %d is not defined", material);
        return Q_ERR_ARGUMENT;
    }
    if (q_box_volume(box) == 0)
        return Q_OK;
    q_voxel v = q_voxel_normalise((q_voxel){material, 255});
    edit_run run = {t, false, box};
    int32_t cmin[3], cmax[3];
    for (int a = 0; a < 3; a++) {
        cmin[a] = q_floor_div_chunk(box.min[a]);
        cmax[a] = q_floor_div_chunk(box.max[a] - 1);
    }
    for (int32_t cz = cmin[2]; cz <= cmax[2]; cz++)
        for (int32_t cy = cmin[1]; cy <= cmax[1]; cy++)
            for (int32_t cx = cmin[0]; cx <= cmax[0]; cx++) {
                int32_t base[3] = {cx * Q_CHUNK_SIZE, cy * Q_CHUNK_SIZE, cz * Q_CHUNK_SIZE};
                int32_t lo[3], hi[3];
                bool whole = true;
                for (int a = 0; a < 3; a++) {
                    lo[a] = box.min[a] > base[a] ? box.min[a] - base[a] : 0;
                    hi[a] = box.max[a] < base[a] + Q_CHUNK_SIZE ? box.max[a] - base[a] : Q_CHUNK_SIZE;
                    whole = whole && lo[a] == 0 && hi[a] == Q_CHUNK_SIZE;
                }
                long at = v.material ? q_chunk_get_or_add(t, cx, cy, cz) : q_chunk_find(t, cx, cy, cz);
                if (at < 0) {
                    if (v.material)
                        return oom(err, errlen);
                    continue;
                }
                if (whole) {
                    set_chunk_uniform(&run, at, v);
                    q_chunk_settle(t, at);
                    continue;
                }
                q_chunk *c = &t->chunks.data[at];
                for (int32_t z = lo[2]; z < hi[2]; z++)
                    for (int32_t y = lo[1]; y < hi[1]; y++)
                        for (int32_t x = lo[0]; x < hi[0]; x++) {
                            int i = Q_VOXEL_INDEX(x, y, z);
                            q_voxel old = c->voxels ? c->voxels[i] : c->uniform;
                            if (old.material == v.material && old.occupancy == v.occupancy)
                                continue;
                            if (!c->voxels && !q_chunk_densify(c)) {
                                q_chunk_settle(t, at);
                                return oom(err, errlen);
                            }
                            c->voxels[i] = v;
                            mark_changed(&run, c);
                        }
                q_chunk_settle(t, at);
            }
    return Q_OK;
}
