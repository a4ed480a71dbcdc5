/* Rigid bodies: storage, handles, state access, queries and the step's
 * outline. The step's stages are in solver.c; see bodies.h for the design. */
#include "physics/bodies.h"

#include "core/alloc.h"
#include "core/digest.h"
#include "core/vec3.h"
#include "physics/bodies_internal.h"
#include "physics/physics_internal.h"
#include "physics/solver_wide.h"
#include "voxel/material.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

q_body_def q_default_body_def(void)
{
    q_body_def d;
    memset(&d, 0, sizeof d);
    d.rotation[3] = 1;
    d.material = (uint8_t)(q_material_find("rock") >= 0 ? q_material_find("rock") : 0);
    return d;
}

q_bodies *q_bodies_create(q_terrain_physics *tp, q_jobs *jobs, double voxel_size, const double gravity[3],
                          int substeps)
{
    q_bodies *b = q_calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->tp = tp;
    b->jobs = jobs;
    b->voxel_size = voxel_size;
    v3_copy(b->gravity, gravity);
    b->substeps = substeps < 1 ? 1 : substeps;
    b->next_island = 1;
    return b;
}

void q_body_free(q_body *body)
{
    q_collider_free(body->shape);
    if (body->name)
        q_free(body->name, strlen(body->name) + 1);
    q_free(body->samples, body->sample_count * sizeof *body->samples);
    memset(body, 0, sizeof *body);
}

void q_bodies_destroy(q_bodies *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->bodies.count; i++)
        if (b->bodies.data[i].alive)
            q_body_free(&b->bodies.data[i]);
    q_array_free(&b->bodies);
    q_array_free(&b->order);
    q_array_free(&b->pairs);
    q_array_free(&b->constraints);
    q_array_free(&b->previous);
    q_array_free(&b->previous_table);
    q_array_free(&b->colour_masks);
    q_array_free(&b->solve_order);
    q_array_free(&b->solver_bodies);
    q_array_free(&b->solver_index);
    q_array_free(&b->sweep);
    q_array_free(&b->solver_of);
    q_array_free(&b->solver_constraints);
    q_array_free(&b->solver_points);
    q_array_free(&b->wide_batches);
    q_array_free(&b->wide_points);
    q_array_free(&b->pair_manifolds);
    q_array_free(&b->pair_counts);
    q_array_free(&b->terrain_scratch);
    q_array_free(&b->terrain_bodies);
    q_array_free(&b->terrain_counts);
    q_array_free(&b->terrain_reuse);
    q_array_free(&b->frames);
    q_array_free(&b->wake_next);
    q_array_free(&b->kept_scratch);
    q_array_free(&b->kept_counts);
    q_array_free(&b->kept_bodies);
    q_array_free(&b->constraint_first);
    q_array_free(&b->events);
    q_array_free(&b->breakages);
    q_array_free(&b->parent);
    q_array_free(&b->least);
    q_handle_pool_free(&b->handles);
    q_free(b, sizeof *b);
}

q_body *q_bodies_get(const q_bodies *b, q_handle h)
{
    if (!q_handle_valid(&b->handles, h) || q_handle_slot(h) >= b->bodies.count)
        return NULL;
    q_body *body = &b->bodies.data[q_handle_slot(h)];
    return body->alive ? body : NULL;
}

q_xform q_body_frame(const q_body *body)
{
    q_xform t;
    double c[3];
    quat_rotate(body->q, body->com, c);
    v3_sub(t.p, body->x, c);
    memcpy(t.q, body->q, sizeof t.q);
    return t;
}

void q_body_update(q_body *body)
{
    double r[9];
    quat_to_mat(body->q, r);
    m3_rotate(r, body->inv_inertia_local, body->inv_inertia);
    q_xform t = q_body_frame(body);
    q_collider_bounds(body->shape, &t, body->min, body->max);
}

void q_body_wake(q_bodies *b, q_body *body)
{
    if (body->is_static || !body->sleeping)
        return;
    uint32_t island = body->island;
    for (size_t i = 0; i < b->bodies.count; i++) {
        q_body *o = &b->bodies.data[i];
        if (o->alive && o->sleeping && (o == body || (island && o->island == island))) {
            o->sleeping = false;
            o->sleep_time = 0;
            o->island = 0;
            b->awake++;
        }
    }
}

/* ---- creation ---- */

static bool finite_n(const double *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

static bool check_vec(const double v[3], double limit, const char *what, char *err, size_t errlen)
{
    if (!v3_finite(v)) {
        snprintf(err, errlen, "%s must be finite", what);
        return false;
    }
    if (v3_len(v) > limit) {
        snprintf(err, errlen, "%s is too large (%g > %g)", what, v3_len(v), limit);
        return false;
    }
    return true;
}

static bool check_rotation(const double q[4], double out[4], char *err, size_t errlen)
{
    double l = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!finite_n(q, 4) || !(l > 1e-9)) {
        snprintf(err, errlen, "rotation must be a finite non-zero quaternion");
        return false;
    }
    for (int i = 0; i < 4; i++)
        out[i] = q[i] / l;
    return true;
}

/* Buoyancy samples: cell centres of a grid over the shape's bounds that lie
 * inside the shape, each standing for an equal share of the volume. A box
 * aligned with the grid gets its volume exactly, column by column. */
bool q_body_make_samples(q_body *body)
{
    const q_collider *s = body->shape;
    double ext[3];
    int n[3];
    double longest = 0;
    for (int a = 0; a < 3; a++) {
        ext[a] = s->max[a] - s->min[a];
        longest = fmax(longest, ext[a]);
    }
    for (int a = 0; a < 3; a++) {
        n[a] = (int)ceil(Q_BUOY_CELLS * ext[a] / longest - 1e-9);
        n[a] = n[a] < 1 ? 1 : n[a] > Q_BUOY_CELLS ? Q_BUOY_CELLS : n[a];
    }
    double pts[Q_BUOY_CELLS * Q_BUOY_CELLS * Q_BUOY_CELLS][3];
    uint32_t count = 0;
    q_xform id = {{0, 0, 0}, {0, 0, 0, 1}};
    for (int k = 0; k < n[2]; k++)
        for (int j = 0; j < n[1]; j++)
            for (int i = 0; i < n[0]; i++) {
                double p[3] = {s->min[0] + ext[0] * (i + 0.5) / n[0], s->min[1] + ext[1] * (j + 0.5) / n[1],
                               s->min[2] + ext[2] * (k + 0.5) / n[2]};
                if (q_collider_contains(s, &id, p))
                    v3_copy(pts[count++], p);
            }
    if (count == 0) {
        v3_copy(pts[0], body->com);
        count = 1;
    }
    body->samples = q_alloc(count * sizeof *body->samples);
    if (!body->samples)
        return false;
    body->sample_count = count;
    body->sample_height = ext[1] / n[1];
    for (uint32_t i = 0; i < count; i++) {
        v3_sub(body->samples[i], pts[i], body->com);
        body->samples[i][3] = body->volume / count;
    }
    return true;
}

static bool check_def(const q_body_def *def, char *err, size_t errlen)
{
    if (!def->shape) {
        snprintf(err, errlen, "a body needs a shape");
        return false;
    }
    if (!check_vec(def->position, Q_BODY_MAX_COORD, "position", err, errlen) ||
        !check_vec(def->velocity, Q_BODY_MAX_SPEED, "velocity", err, errlen) ||
        !check_vec(def->angular_velocity, Q_BODY_MAX_SPEED, "angular_velocity", err, errlen))
        return false;
    const q_material *m = q_material_get(def->material);
    if (!m) {
        snprintf(err, errlen, "unknown material id %d", def->material);
        return false;
    }
    if (!(isfinite(def->mass) && def->mass >= 0)) {
        snprintf(err, errlen, "mass must be finite and >= 0 (0 = from the material), got %g", def->mass);
        return false;
    }
    if (m->liquid) {
        snprintf(err, errlen, "a body cannot be made of the liquid '%s'", m->name);
        return false;
    }
    return true;
}

q_handle q_body_create(q_bodies *b, const q_body_def *def, char *err, size_t errlen)
{
    double rot[4];
    if (!check_def(def, err, errlen) || !check_rotation(def->rotation, rot, err, errlen)) {
        q_collider_free(def->shape);
        return Q_NULL_HANDLE;
    }
    q_mass_props mp = q_collider_mass(def->shape);
    if (!(mp.volume > 0) || !isfinite(mp.volume) || !finite_n(mp.inertia, 9) || !v3_finite(mp.center)) {
        snprintf(err, errlen, "the shape has no volume");
        q_collider_free(def->shape);
        return Q_NULL_HANDLE;
    }
    if (b->live >= Q_BODIES_MAX) {
        snprintf(err, errlen, "too many bodies (at most %d)", Q_BODIES_MAX);
        q_collider_free(def->shape);
        return Q_NULL_HANDLE;
    }
    q_body body;
    memset(&body, 0, sizeof body);
    body.shape = def->shape;
    body.material = def->material;
    body.is_static = def->is_static;
    memcpy(body.q, rot, sizeof rot);
    v3_copy(body.com, mp.center);
    double c[3];
    quat_rotate(rot, mp.center, c);
    v3_add(body.x, def->position, c);
    body.volume = mp.volume;
    double density = q_material_get(def->material)->density;
    if (!def->is_static) {
        v3_copy(body.v, def->velocity);
        v3_copy(body.w, def->angular_velocity);
        if (def->mass > 0)
            density = def->mass / mp.volume;
        body.mass = density * mp.volume;
        body.inv_mass = 1.0 / body.mass;
        double inertia[9];
        for (int i = 0; i < 9; i++)
            inertia[i] = density * mp.inertia[i];
        if (!m3_inverse(inertia, body.inv_inertia_local) || !finite_n(body.inv_inertia_local, 9)) {
            snprintf(err, errlen, "the shape has no volume");
            q_collider_free(def->shape);
            return Q_NULL_HANDLE;
        }
    }
    for (int corner = 0; corner < 8; corner++) {
        double p[3] = {corner & 1 ? def->shape->max[0] : def->shape->min[0],
                       corner & 2 ? def->shape->max[1] : def->shape->min[1],
                       corner & 4 ? def->shape->max[2] : def->shape->min[2]};
        double d[3];
        v3_sub(d, p, mp.center);
        body.radius = fmax(body.radius, v3_len(d));
    }
    size_t name_len = def->name ? strlen(def->name) : 0;
    body.name = def->name ? q_alloc(name_len + 1) : NULL;
    q_handle h = (def->name && !body.name) ? Q_NULL_HANDLE : q_handle_alloc(&b->handles);
    bool ok = !q_handle_is_null(h) && q_body_make_samples(&body) &&
              q_array_reserve(&b->bodies, (size_t)q_handle_slot(h) + 1);
    if (!ok) {
        if (!q_handle_is_null(h))
            q_handle_release(&b->handles, h);
        q_body_free(&body);
        snprintf(err, errlen, "out of memory");
        return Q_NULL_HANDLE;
    }
    if (body.name)
        memcpy(body.name, def->name, name_len + 1);
    body.alive = true;
    q_body_update(&body);
    uint32_t slot = q_handle_slot(h);
    while (b->bodies.count <= slot)
        memset(&b->bodies.data[b->bodies.count++], 0, sizeof(q_body));
    b->bodies.data[slot] = body;
    b->live++;
    if (!body.is_static)
        b->awake++;
    return h;
}

bool q_body_destroy(q_bodies *b, q_handle h)
{
    q_body *body = q_bodies_get(b, h);
    if (!body)
        return false;
    if (!body->is_static && !body->sleeping)
        b->awake--;
    double min[3], max[3];
    v3_copy(min, body->min);
    v3_copy(max, body->max);
    /* Its contacts leave the cache (they would name a dead slot). */
    uint32_t slot = q_handle_slot(h);
    size_t kept = 0;
    for (size_t i = 0; i < b->constraints.count; i++) {
        const q_constraint *c = &b->constraints.data[i];
        if (c->a != slot && c->b != slot)
            b->constraints.data[kept++] = *c;
    }
    b->constraints.count = kept;
    q_body_free(body);
    q_handle_release(&b->handles, h);
    b->live--;
    /* Bodies it held up wake and fall (it is gone first, so it does not
     * wake itself). */
    q_bodies_wake_box(b, min, max);
    return true;
}

bool q_body_valid(const q_bodies *b, q_handle h) { return q_bodies_get(b, h) != NULL; }

size_t q_bodies_list(const q_bodies *b, q_handle *out, size_t cap)
{
    size_t n = 0;
    for (uint32_t i = 0; i < b->bodies.count; i++) {
        if (!b->bodies.data[i].alive)
            continue;
        if (n < cap)
            out[n] = (q_handle){i + 1, b->handles.generations[i]};
        n++;
    }
    return n;
}

size_t q_bodies_count(const q_bodies *b) { return b->live; }
size_t q_bodies_awake(const q_bodies *b) { return b->awake; }

/* ---- state ---- */

bool q_body_get(const q_bodies *b, q_handle h, q_body_state *out)
{
    const q_body *body = q_bodies_get(b, h);
    if (!body)
        return false;
    q_xform t = q_body_frame(body);
    v3_copy(out->position, t.p);
    memcpy(out->rotation, body->q, sizeof out->rotation);
    v3_copy(out->velocity, body->v);
    v3_copy(out->angular_velocity, body->w);
    out->mass = body->mass;
    v3_copy(out->center, body->x);
    out->material = body->material;
    out->sleeping = body->sleeping;
    out->is_static = body->is_static;
    return true;
}

static q_body *settable(q_bodies *b, q_handle h, char *err, size_t errlen)
{
    q_body *body = q_bodies_get(b, h);
    if (!body)
        snprintf(err, errlen, "body was destroyed");
    return body;
}

/* After a teleport: static bodies may have moved out from under sleepers. */
static void moved(q_bodies *b, q_body *body, const double old_min[3], const double old_max[3])
{
    q_body_update(body);
    q_body_wake(b, body);
    q_bodies_wake_box(b, old_min, old_max);
    q_bodies_wake_box(b, body->min, body->max);
}

bool q_body_set_position(q_bodies *b, q_handle h, const double p[3], char *err, size_t errlen)
{
    q_body *body = settable(b, h, err, errlen);
    if (!body || !check_vec(p, Q_BODY_MAX_COORD, "position", err, errlen))
        return false;
    double old_min[3], old_max[3], c[3];
    v3_copy(old_min, body->min);
    v3_copy(old_max, body->max);
    quat_rotate(body->q, body->com, c);
    v3_add(body->x, p, c);
    moved(b, body, old_min, old_max);
    return true;
}

bool q_body_set_rotation(q_bodies *b, q_handle h, const double q[4], char *err, size_t errlen)
{
    double rot[4];
    q_body *body = settable(b, h, err, errlen);
    if (!body || !check_rotation(q, rot, err, errlen))
        return false;
    double old_min[3], old_max[3];
    v3_copy(old_min, body->min);
    v3_copy(old_max, body->max);
    /* The shape frame's origin stays where it was. */
    q_xform t = q_body_frame(body);
    double c[3];
    memcpy(body->q, rot, sizeof rot);
    quat_rotate(rot, body->com, c);
    v3_add(body->x, t.p, c);
    moved(b, body, old_min, old_max);
    return true;
}

static bool set_velocity(q_bodies *b, q_handle h, const double v[3], bool angular, char *err, size_t errlen)
{
    q_body *body = settable(b, h, err, errlen);
    if (!body || !check_vec(v, Q_BODY_MAX_SPEED, angular ? "angular_velocity" : "velocity", err, errlen))
        return false;
    if (body->is_static)
        return true;
    v3_copy(angular ? body->w : body->v, v);
    q_body_wake(b, body);
    return true;
}

bool q_body_set_velocity(q_bodies *b, q_handle h, const double v[3], char *err, size_t errlen)
{
    return set_velocity(b, h, v, false, err, errlen);
}

bool q_body_set_angular_velocity(q_bodies *b, q_handle h, const double w[3], char *err, size_t errlen)
{
    return set_velocity(b, h, w, true, err, errlen);
}

const char *q_body_name(const q_bodies *b, q_handle h)
{
    const q_body *body = q_bodies_get(b, h);
    return body ? body->name : NULL;
}

bool q_body_set_name(q_bodies *b, q_handle h, const char *name)
{
    q_body *body = q_bodies_get(b, h);
    if (!body)
        return false;
    char *copy = NULL;
    if (name) {
        copy = q_alloc(strlen(name) + 1);
        if (!copy)
            return false;
        memcpy(copy, name, strlen(name) + 1);
    }
    if (body->name)
        q_free(body->name, strlen(body->name) + 1);
    body->name = copy;
    return true;
}

const q_collider *q_body_shape(const q_bodies *b, q_handle h)
{
    const q_body *body = q_bodies_get(b, h);
    return body ? body->shape : NULL;
}

bool q_body_xform(const q_bodies *b, q_handle h, q_xform *out)
{
    const q_body *body = q_bodies_get(b, h);
    if (!body)
        return false;
    *out = q_body_frame(body);
    return true;
}

/* ---- forces ---- */

static q_body *pushable(q_bodies *b, q_handle h, const double v[3], const double *at, const char *what, char *err,
                        size_t errlen)
{
    q_body *body = settable(b, h, err, errlen);
    if (!body)
        return NULL;
    if (!v3_finite(v) || (at && !v3_finite(at))) {
        snprintf(err, errlen, "%s must be finite", what);
        return NULL;
    }
    return body;
}

bool q_body_apply_impulse(q_bodies *b, q_handle h, const double impulse[3], const double *at, char *err,
                          size_t errlen)
{
    q_body *body = pushable(b, h, impulse, at, "impulse", err, errlen);
    if (!body)
        return false;
    if (body->is_static)
        return true;
    double v[3], w[3], dw[3];
    v3_copy(v, body->v);
    v3_madd(v, impulse, body->inv_mass);
    v3_copy(w, body->w);
    if (at) {
        double r[3], t[3];
        v3_sub(r, at, body->x);
        v3_cross(t, r, impulse);
        m3_mul_v(body->inv_inertia, t, dw);
        v3_add(w, w, dw);
    }
    if (!check_vec(v, Q_BODY_MAX_SPEED, "the resulting velocity", err, errlen) ||
        !check_vec(w, Q_BODY_MAX_SPEED, "the resulting angular velocity", err, errlen))
        return false;
    v3_copy(body->v, v);
    v3_copy(body->w, w);
    q_body_wake(b, body);
    return true;
}

bool q_body_apply_force(q_bodies *b, q_handle h, const double force[3], const double *at, char *err,
                        size_t errlen)
{
    q_body *body = pushable(b, h, force, at, "force", err, errlen);
    if (!body)
        return false;
    if (body->is_static)
        return true;
    double f[3], t[3] = {0, 0, 0};
    v3_add(f, body->force, force);
    if (at) {
        double r[3], rt[3];
        v3_sub(r, at, body->x);
        v3_cross(rt, r, force);
        v3_add(t, body->torque, rt);
    } else {
        v3_copy(t, body->torque);
    }
    if (!check_vec(f, Q_BODY_MAX_FORCE, "the resulting force", err, errlen) ||
        !check_vec(t, Q_BODY_MAX_FORCE, "the resulting torque", err, errlen))
        return false;
    v3_copy(body->force, f);
    v3_copy(body->torque, t);
    q_body_wake(b, body);
    return true;
}

bool q_body_apply_torque(q_bodies *b, q_handle h, const double torque[3], char *err, size_t errlen)
{
    q_body *body = pushable(b, h, torque, NULL, "torque", err, errlen);
    if (!body)
        return false;
    if (body->is_static)
        return true;
    double t[3];
    v3_add(t, body->torque, torque);
    if (!check_vec(t, Q_BODY_MAX_FORCE, "the resulting torque", err, errlen))
        return false;
    v3_copy(body->torque, t);
    q_body_wake(b, body);
    return true;
}

static bool boxes_overlap(const double amin[3], const double amax[3], const double bmin[3], const double bmax[3])
{
    return amin[0] <= bmax[0] && bmin[0] <= amax[0] && amin[1] <= bmax[1] && bmin[1] <= amax[1] &&
           amin[2] <= bmax[2] && bmin[2] <= amax[2];
}

void q_bodies_wake_box(q_bodies *b, const double min[3], const double max[3])
{
    double lo[3], hi[3];
    for (int a = 0; a < 3; a++)
        lo[a] = min[a] - Q_SPECULATIVE, hi[a] = max[a] + Q_SPECULATIVE;
    for (size_t i = 0; i < b->bodies.count; i++) {
        q_body *o = &b->bodies.data[i];
        if (o->alive && o->sleeping && boxes_overlap(lo, hi, o->min, o->max))
            q_body_wake(b, o);
    }
}

/* ---- step ---- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* The world box a terrain change over voxel box `box` reaches (a voxel
 * further: the surface between voxels moves). */
static void change_bounds(const q_bodies *b, q_box box, double lo[3], double hi[3])
{
    for (int a = 0; a < 3; a++)
        lo[a] = (box.min[a] - 1) * b->voxel_size, hi[a] = (box.max[a] + 1) * b->voxel_size;
}

/* What a terrain change over voxel box `box` does to body o in the next
 * step's edit check: Q_EDIT_WAKE (a sleeper near it wakes, with its
 * island), Q_EDIT_DROP (kept terrain contacts, which see as far as their
 * query did, contacts.c, are dropped). */
static unsigned change_effect(const q_bodies *b, const q_body *o, q_box box)
{
    if (!o->alive)
        return 0;
    double lo[3], hi[3];
    change_bounds(b, box, lo, hi);
    unsigned e = 0;
    double s = Q_SPECULATIVE, r = o->kept_reach;
    double wlo[3] = {lo[0] - s, lo[1] - s, lo[2] - s}, whi[3] = {hi[0] + s, hi[1] + s, hi[2] + s};
    double klo[3] = {lo[0] - r, lo[1] - r, lo[2] - r}, khi[3] = {hi[0] + r, hi[1] + r, hi[2] + r};
    if (o->sleeping && boxes_overlap(wlo, whi, o->min, o->max))
        e |= Q_EDIT_WAKE;
    if (o->kept && boxes_overlap(klo, khi, o->min, o->max))
        e |= Q_EDIT_DROP;
    return e;
}

typedef struct effects_ctx {
    const q_bodies *b;
    uint8_t *flags;
} effects_ctx;

static void note_change(void *ud, q_box box, uint64_t version)
{
    (void)version;
    effects_ctx *c = ud;
    for (size_t i = 0; i < c->b->bodies.count; i++)
        c->flags[i] |= (uint8_t)change_effect(c->b, &c->b->bodies.data[i], box);
}

bool q_bodies_edit_effects(const q_bodies *b, uint8_t *flags)
{
    memset(flags, 0, b->bodies.count);
    const q_terrain *t = b->tp->terrain;
    if (q_terrain_version(t) == b->terrain_version)
        return true;
    effects_ctx c = {b, flags};
    return q_terrain_changes_since(t, b->terrain_version, note_change, &c);
}

static void apply_change(void *ud, q_box box, uint64_t version)
{
    (void)version;
    q_bodies *b = ud;
    /* a sleeper wakes its whole island, so the bodies' order does not
     * change which end up awake */
    for (size_t i = 0; i < b->bodies.count; i++) {
        unsigned e = change_effect(b, &b->bodies.data[i], box);
        if (e & Q_EDIT_DROP)
            b->bodies.data[i].kept = 0;
        if (e & Q_EDIT_WAKE)
            q_body_wake(b, &b->bodies.data[i]);
    }
}

static void wake_all(q_bodies *b)
{
    for (size_t i = 0; i < b->bodies.count; i++)
        if (b->bodies.data[i].alive) {
            q_body_wake(b, &b->bodies.data[i]);
            b->bodies.data[i].kept = 0;
        }
}

/* Sleepers whose surroundings changed since the last step wake up, and
 * bodies near the change drop their kept terrain contacts. When the change
 * log no longer reaches back that far, every body does. A set read from a
 * file first does what the saved set's check would have done for changes
 * made before it was written (bodies_io.c). */
static void wake_for_edits(q_bodies *b)
{
    if (b->wake_all_next)
        wake_all(b);
    for (size_t i = 0; i < b->wake_next.count; i++) {
        q_body *o = &b->bodies.data[b->wake_next.data[i]];
        if (o->alive)
            q_body_wake(b, o);
    }
    b->wake_all_next = false;
    b->wake_next.count = 0;
    const q_terrain *t = b->tp->terrain;
    uint64_t version = q_terrain_version(t);
    if (version == b->terrain_version)
        return;
    if (!q_terrain_changes_since(t, b->terrain_version, apply_change, b))
        wake_all(b);
    b->terrain_version = version;
}

/* A body whose state stopped being finite (a solver blow-up) goes back to
 * where the step began, at rest, rather than poisoning the world. */
static void guard_body(q_body *body)
{
    double max_w = Q_BODY_MAX_SPEED;
    for (int a = 0; a < 3; a++) {
        body->v[a] = fmax(-Q_BODY_MAX_SPEED, fmin(Q_BODY_MAX_SPEED, body->v[a]));
        body->w[a] = fmax(-max_w, fmin(max_w, body->w[a]));
    }
    if (v3_finite(body->x) && finite_n(body->q, 4) && v3_finite(body->v) && v3_finite(body->w) &&
        fabs(body->x[0]) <= Q_BODY_MAX_COORD && fabs(body->x[1]) <= Q_BODY_MAX_COORD &&
        fabs(body->x[2]) <= Q_BODY_MAX_COORD)
        return;
    q_log(Q_LOG_WARN, "bodies: a body's state became non-finite; it was put back at rest");
    v3_copy(body->x, body->x0);
    memcpy(body->q, body->q0, sizeof body->q);
    v3_set(body->v, 0, 0, 0);
    v3_set(body->w, 0, 0, 0);
}

void q_bodies_clear_forces(q_bodies *b)
{
    for (size_t i = 0; i < b->bodies.count; i++) {
        v3_set(b->bodies.data[i].force, 0, 0, 0);
        v3_set(b->bodies.data[i].torque, 0, 0, 0);
    }
}

void q_bodies_step(q_bodies *b, double dt)
{
    b->events.count = 0;
    b->breakages.count = 0;
    wake_for_edits(b);
    double t0 = now_ms();
    q_bodies_find_pairs(b, dt);
    double t1 = now_ms();
    q_bodies_collide(b);
    double t2 = now_ms();
    q_bodies_solve(b, dt);
    for (size_t i = 0; i < b->bodies.count; i++) {
        q_body *body = &b->bodies.data[i];
        if (body->alive && !body->is_static && !body->sleeping) {
            guard_body(body);
            q_body_update(body);
        }
    }
    q_bodies_sleep(b, dt);
    for (size_t i = 0; i < b->bodies.count; i++)
        if (b->bodies.data[i].unbreakable_steps > 0)
            b->bodies.data[i].unbreakable_steps--;
    b->dt = dt;
    double t3 = now_ms();
    b->ms_broadphase = t1 - t0;
    b->ms_narrowphase = t2 - t1;
    b->ms_solver = t3 - t2;
}

size_t q_bodies_events(const q_bodies *b, const q_contact_event **events)
{
    *events = b->events.data;
    return b->events.count;
}

size_t q_bodies_contacts(const q_bodies *b, q_debug_contact *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < b->constraints.count; i++) {
        const q_constraint *c = &b->constraints.data[i];
        for (uint32_t k = 0; k < c->count; k++, n++) {
            if (n >= cap)
                continue;
            /* Anchors are relative to B's centre of mass at step start. */
            const q_contact *p = &c->points[k];
            v3_add(out[n].position, b->bodies.data[c->b].x0, p->rb);
            v3_copy(out[n].normal, c->normal);
            out[n].separation = p->separation + v3_dot(p->rb, c->normal) - v3_dot(p->ra, c->normal);
            out[n].terrain = c->a == Q_TERRAIN;
        }
    }
    return n;
}

/* ---- queries ---- */

static bool ray_box(const double o[3], const double d[3], double tmax, const double min[3], const double max[3])
{
    double t0 = 0, t1 = tmax;
    for (int a = 0; a < 3; a++) {
        if (fabs(d[a]) < 1e-300) {
            if (o[a] < min[a] || o[a] > max[a])
                return false;
            continue;
        }
        double inv = 1.0 / d[a];
        double ta = (min[a] - o[a]) * inv, tb = (max[a] - o[a]) * inv;
        if (ta > tb) {
            double s = ta;
            ta = tb, tb = s;
        }
        t0 = fmax(t0, ta);
        t1 = fmin(t1, tb);
        if (t0 > t1)
            return false;
    }
    return true;
}

bool q_bodies_raycast(const q_bodies *b, const double origin[3], const double dir[3], double max_distance,
                      const q_handle *ignore, size_t ignore_count, q_handle *body, double *distance,
                      double normal[3])
{
    double d[3];
    v3_copy(d, dir);
    if (!(v3_normalize(d) > 0) || !v3_finite(origin) || !(max_distance >= 0))
        return false;
    bool found = false;
    double best = max_distance;
    for (uint32_t i = 0; i < b->bodies.count; i++) {
        const q_body *o = &b->bodies.data[i];
        if (!o->alive || !ray_box(origin, d, best, o->min, o->max))
            continue;
        q_handle h = {i + 1, b->handles.generations[i]};
        bool skip = false;
        for (size_t k = 0; k < ignore_count && !skip; k++)
            skip = q_handle_equal(ignore[k], h);
        double t, n[3];
        q_xform x = q_body_frame(o);
        if (skip || !q_collider_raycast(o->shape, &x, origin, d, best, &t, n))
            continue;
        if (!found || t < best) {
            found = true;
            best = t;
            *body = h;
            *distance = t;
            v3_copy(normal, n);
        }
    }
    return found;
}

size_t q_bodies_overlap(const q_bodies *b, const q_collider *shape, const q_xform *t, q_handle *out, size_t cap)
{
    double min[3], max[3];
    q_collider_bounds(shape, t, min, max);
    size_t n = 0;
    q_manifold m[Q_PAIR_MANIFOLDS];
    for (uint32_t i = 0; i < b->bodies.count; i++) {
        const q_body *o = &b->bodies.data[i];
        if (!o->alive || !boxes_overlap(min, max, o->min, o->max))
            continue;
        q_xform x = q_body_frame(o);
        int count = q_collide_shapes(shape, t, o->shape, &x, 0, m, Q_PAIR_MANIFOLDS);
        bool touching = false;
        for (int k = 0; k < count && !touching; k++)
            for (uint32_t p = 0; p < m[k].count; p++)
                touching |= m[k].points[p].separation <= 0;
        if (!touching)
            continue;
        if (n < cap)
            out[n] = (q_handle){i + 1, b->handles.generations[i]};
        n++;
    }
    return n;
}

uint64_t q_bodies_hash(const q_bodies *b)
{
    q_digest d;
    q_digest_init(&d, 0x626f646965730001ull);
    for (uint32_t i = 0; i < b->bodies.count; i++) {
        const q_body *o = &b->bodies.data[i];
        if (!o->alive)
            continue;
        q_digest_u64(&d, ((uint64_t)i << 32) | b->handles.generations[i]);
        q_digest_bytes(&d, o->x, sizeof o->x);
        q_digest_bytes(&d, o->q, sizeof o->q);
        q_digest_bytes(&d, o->v, sizeof o->v);
        q_digest_bytes(&d, o->w, sizeof o->w);
        q_digest_u64(&d, (uint64_t)o->sleeping << 1 | o->is_static);
    }
    return q_digest_final(&d);
}

q_bodies_stats q_bodies_get_stats(const q_bodies *b)
{
    q_bodies_stats s;
    memset(&s, 0, sizeof s);
    s.bodies = b->live;
    s.awake = b->awake;
    s.pairs = b->pairs.count;
    s.manifolds = b->constraints.count;
    s.terrain_manifolds = b->terrain_constraints;
    s.terrain_kept = b->terrain_kept;
    for (size_t i = 0; i < b->constraints.count; i++)
        s.contacts += b->constraints.data[i].count;
    s.bytes = sizeof *b + b->bodies.capacity * sizeof(q_body) + b->order.capacity * sizeof(uint32_t) +
              b->pairs.capacity * sizeof(q_pair) +
              (b->constraints.capacity + b->previous.capacity) * sizeof(q_constraint) +
              b->pair_manifolds.capacity * sizeof(q_manifold) + b->pair_counts.capacity * sizeof(int) +
              b->terrain_scratch.capacity * sizeof(q_terrain_manifold) +
              b->terrain_bodies.capacity * sizeof(uint32_t) + b->terrain_counts.capacity * sizeof(int) +
              b->kept_scratch.capacity * sizeof(q_terrain_manifold) + b->kept_counts.capacity * sizeof(int) +
              (b->kept_bodies.capacity + b->terrain_reuse.capacity) * sizeof(uint32_t) +
              b->frames.capacity * sizeof(q_xform) +
              b->constraint_first.capacity * sizeof(uint32_t) +
              b->events.capacity * sizeof(q_contact_event) + b->parent.capacity * sizeof(uint32_t) +
              b->least.capacity * sizeof(double) + b->previous_table.capacity * sizeof(uint32_t) +
              (b->colour_masks.capacity + b->solve_order.capacity + b->solver_index.capacity + b->solver_of.capacity) *
                  sizeof(uint32_t) +
              b->solver_bodies.capacity * sizeof(q_solver_body) + b->sweep.capacity * sizeof(q_sweep_box) +
              b->solver_constraints.capacity * sizeof(q_solver_constraint) +
              b->solver_points.capacity * sizeof(q_solver_point) +
              b->wide_batches.capacity * sizeof(q_wide_batch) + b->wide_points.capacity * sizeof(q_wide_point);
    for (size_t i = 0; i < b->bodies.count; i++)
        s.bytes += b->bodies.data[i].sample_count * sizeof *b->bodies.data[i].samples;
    s.ms_broadphase = b->ms_broadphase;
    s.ms_narrowphase = b->ms_narrowphase;
    s.ms_solver = b->ms_solver;
    return s;
}
