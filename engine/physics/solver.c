/* The rigid-body step's last stages: the soft-step solver with substeps
 * over the constraints contacts.c made, contact events, buoyancy, islands
 * and sleeping. See bodies.h for the outline.
 *
 * The solver follows Box2D v3's "soft step": each substep integrates
 * velocities, re-applies the accumulated impulses (warm start), solves
 * contacts with a soft (spring-damper) bias on the penetration, integrates
 * positions, and relaxes without the bias so the bias adds no energy. The
 * separation of a contact point is tracked through the substeps from the
 * bodies' motion, so the narrowphase runs once per step.
 */
#include "core/vec3.h"
#include "physics/bodies_internal.h"
#include "physics/physics_internal.h"
#include "physics/solver_wide.h"
#include "voxel/material.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Contact softness (Box2D v3's soft step). Between two moving bodies 30 Hz:
 * at 60 Hz (a quarter of the 240 Hz substep rate, the stiffest the substep
 * resolves) a pile's contacts in series ring at a few Hz for seconds (the
 * top of a 20-row pyramid bounced 3 mm for 4 s and kept it awake); at 30 Hz
 * it settles in under half a second. Against the terrain and static or
 * sleeping bodies twice that, so what rests on the ground sinks a quarter
 * as far (g / omega^2 per supported body: 0.07 mm at 60 Hz). */
#define CONTACT_HERTZ 30.0
#define STATIC_CONTACT_HERTZ 60.0
#define CONTACT_DAMPING 10.0
#define MAX_PUSH_SPEED 3.0  /* m/s: how fast overlap is resolved */
#define WATER_DRAG 1.5      /* 1/s, linear and angular, when fully submerged */
static inline double dmax(double a, double b) { return a > b ? a : b; }
static inline double dmin(double a, double b) { return a < b ? a : b; }

/* Fills a row for direction d at anchors ra (on A) and rb (on B). */
static void make_row(const q_solver_body *A, const q_solver_body *B, const double ra[3], const double rb[3],
                     const double d[3], q_row *row)
{
    v3_cross(row->ja, ra, d);
    v3_cross(row->jb, rb, d);
    m3_mul_v(A->inv_inertia, row->ja, row->ia);
    m3_mul_v(B->inv_inertia, row->jb, row->ib);
    double k = A->inv_mass + B->inv_mass + v3_dot(row->ja, row->ia) + v3_dot(row->jb, row->ib);
    row->mass = k > 0 ? 1 / k : 0;
}


/* An impulse P along the row's direction on one side (sign -1 for A, +1
 * for B): velocity by inv_mass P d, angular velocity by P times the row's
 * inverse-inertia arm. */
static inline void push_a(double v[3], double w[3], double inv_mass, const double arm[3], const double d[3], double P)
{
    double m = inv_mass * P;
    for (int i = 0; i < 3; i++) {
        v[i] -= m * d[i];
        w[i] -= P * arm[i];
    }
}

static inline void push_b(double v[3], double w[3], double inv_mass, const double arm[3], const double d[3], double P)
{
    double m = inv_mass * P;
    for (int i = 0; i < 3; i++) {
        v[i] += m * d[i];
        w[i] += P * arm[i];
    }
}

/* ---- the solver ---- */

typedef struct softness {
    double bias_rate, mass_scale, impulse_scale;
} softness;

static softness make_softness(double hertz, double zeta, double h)
{
    if (hertz == 0)
        return (softness){0, 1, 0};
    double omega = 2 * M_PI * hertz;
    double a1 = 2 * zeta + h * omega, a2 = h * omega * a1, a3 = 1 / (1 + a2);
    return (softness){omega / a1, a2 * a3, a3};
}

/* The solver's view of one step: compact copies (bodies_internal.h,
 * q_solver_body) made by prepare_solver and copied back by finish_solver. */
typedef struct solve_ctx {
    q_bodies *b;
    q_solver_body *bodies;
    q_solver_constraint *constraints;
    q_solver_point *points; /* of the last group's constraints */
    softness soft[2];
    double h, inv_h;
    q_wide_ctx wide;        /* the coloured constraints, four at a time */
    size_t units;           /* of the copy into the solver's arrays (fill_unit) */
} solve_ctx;

static inline void apply(q_solver_body *A, q_solver_body *B, const q_solver_constraint *c, const q_row *row,
                         const double d[3], double P)
{
    if (c->a)
        push_a(A->v, A->w, A->inv_mass, row->ia, d, P);
    if (c->b)
        push_b(B->v, B->w, B->inv_mass, row->ib, d, P);
}

static void warm_start(const solve_ctx *s, const q_solver_constraint *c)
{
    q_solver_body *A = &s->bodies[c->a], *B = &s->bodies[c->b];
    for (uint32_t k = 0; k < c->count; k++) {
        const q_solver_point *p = &s->points[c->first + k];
        apply(A, B, c, &p->rows[0], c->normal, p->normal_impulse);
        apply(A, B, c, &p->rows[1], c->t1, p->tangent_impulse[0]);
        apply(A, B, c, &p->rows[2], c->t2, p->tangent_impulse[1]);
    }
}

/* Current separation of a point: the step-start value moved with the
 * bodies' displacement and rotation since (the ground entry stays at 0). */
static double current_separation(const q_solver_body *A, const q_solver_body *B, const q_solver_constraint *c,
                                 const q_solver_point *p)
{
    double pa[3], pb[3], d[3];
    if (c->turn_a)
        quat_rotate(A->q, p->anchor_a, pa);
    else
        v3_copy(pa, p->anchor_a);
    if (c->turn_b)
        quat_rotate(B->q, p->anchor_b, pb);
    else
        v3_copy(pb, p->anchor_b);
    for (int i = 0; i < 3; i++)
        d[i] = (B->x[i] - B->x0[i]) - (A->x[i] - A->x0[i]) + pb[i] - pa[i];
    return v3_dot(d, c->normal) + p->separation;
}

static void solve_constraint(const solve_ctx *s, const q_solver_constraint *c, bool use_bias, bool forward)
{
    q_solver_body *A = &s->bodies[c->a], *B = &s->bodies[c->b];
    softness sf = s->soft[c->one_sided];
    q_solver_point *points = &s->points[c->first];
    /* Gauss-Seidel over the points favours the first one solved; the relax
     * pass runs them backwards so a flat face's points pull evenly. */
    for (uint32_t i = 0; i < c->count; i++) {
        q_solver_point *p = &points[forward ? i : c->count - 1 - i];
        double sep = current_separation(A, B, c, p);
        double bias = 0, mass_scale = 1, impulse_scale = 0;
        if (sep > 0) {
            bias = sep * s->inv_h; /* speculative: may close the gap, no more */
        } else if (use_bias) {
            bias = dmax(sf.bias_rate * sep, -MAX_PUSH_SPEED);
            mass_scale = sf.mass_scale;
            impulse_scale = sf.impulse_scale;
        }
        double vn = q_row_speed(A->v, A->w, B->v, B->w, &p->rows[0], c->normal);
        double impulse = -p->rows[0].mass * mass_scale * (vn + bias) - impulse_scale * p->normal_impulse;
        double next = dmax(p->normal_impulse + impulse, 0);
        impulse = next - p->normal_impulse;
        p->normal_impulse = next;
        p->max_normal_impulse = dmax(p->max_normal_impulse, impulse);
        apply(A, B, c, &p->rows[0], c->normal, impulse);
    }
    for (uint32_t i = 0; i < c->count; i++) {
        q_solver_point *p = &points[forward ? i : c->count - 1 - i];
        double limit = c->friction * p->normal_impulse;
        for (int t = 0; t < 2; t++) {
            const double *dir = t == 0 ? c->t1 : c->t2;
            const q_row *row = &p->rows[1 + t];
            double impulse = -row->mass * q_row_speed(A->v, A->w, B->v, B->w, row, dir);
            double next = dmax(-limit, dmin(limit, p->tangent_impulse[t] + impulse));
            impulse = next - p->tangent_impulse[t];
            p->tangent_impulse[t] = next;
            apply(A, B, c, row, dir, impulse);
        }
    }
}

static void emit_events(q_bodies *b);

/* A brittle body whose contact impulse beat its strength: one entry per
 * body, the strongest contact's. */
static void note_breakage(q_bodies *b, uint32_t slot, const double at[3], double impulse)
{
    if (slot == Q_TERRAIN || !q_body_moving(&b->bodies.data[slot]) || b->bodies.data[slot].unbreakable_steps > 0 ||
        b->bodies.data[slot].generation >= Q_BRITTLE_GENERATIONS)
        return;
    const q_material *m = q_material_get(b->bodies.data[slot].material);
    if (!m || !m->brittle || !(impulse > m->strength))
        return;
    q_handle h = {slot + 1, b->handles.generations[slot]};
    for (size_t i = 0; i < b->breakages.count; i++) {
        q_breakage *k = &b->breakages.data[i];
        if (q_handle_equal(k->body, h)) {
            if (impulse > k->impulse) {
                v3_copy(k->at, at);
                k->impulse = impulse;
            }
            return;
        }
    }
    q_breakage k = {h, {at[0], at[1], at[2]}, impulse};
    q_array_push(&b->breakages, k);
}

/* Speeds stay within Q_BODY_MAX_SPEED (m/s, rad/s) whatever forces were
 * applied; a velocity that overflowed stops. */
static void clamp_speed(double v[3])
{
    /* scaled by the largest component first, so 1e160 m/s clamps instead
     * of overflowing the length */
    double big = fmax(fabs(v[0]), fmax(fabs(v[1]), fabs(v[2])));
    if (!isfinite(big)) {
        v3_set(v, 0, 0, 0);
        return;
    }
    if (big <= Q_BODY_MAX_SPEED / 2)
        return;
    double u[3] = {v[0] / big, v[1] / big, v[2] / big}, l = big * v3_len(u);
    if (l > Q_BODY_MAX_SPEED)
        v3_scale(v, u, Q_BODY_MAX_SPEED / v3_len(u));
}

static void integrate_velocities(const solve_ctx *s, size_t lo, size_t hi)
{
    double h = s->h;
    for (size_t i = lo; i < hi; i++) {
        q_solver_body *o = &s->bodies[i];
        const q_body *body = &s->b->bodies.data[o->slot];
        double dw[3], f[3], t[3];
        v3_add(f, body->force, body->water_force);
        v3_add(t, body->torque, body->water_torque);
        v3_madd(o->v, s->b->gravity, h);
        v3_madd(o->v, f, h * o->inv_mass);
        m3_mul_v(o->inv_inertia, t, dw);
        v3_madd(o->w, dw, h);
        clamp_speed(o->v);
        clamp_speed(o->w);
    }
}

static void integrate_positions(const solve_ctx *s, size_t lo, size_t hi)
{
    double h = s->h;
    for (size_t i = lo; i < hi; i++) {
        q_solver_body *o = &s->bodies[i];
        /* At most a quarter turn per substep: beyond it the linearised
         * rotation below is meaningless. */
        double wl = v3_len(o->w);
        if (wl * h > 0.25 * M_PI)
            v3_scale(o->w, o->w, 0.25 * M_PI / (wl * h));
        v3_madd(o->x, o->v, h);
        double wq[4] = {o->w[0], o->w[1], o->w[2], 0}, dq[4];
        quat_mul(dq, wq, o->q);
        for (int k = 0; k < 4; k++)
            o->q[k] += 0.5 * h * dq[k];
        quat_normalize(o->q);
        double r[9];
        quat_to_mat(o->q, r);
        m3_rotate(r, s->b->bodies.data[o->slot].inv_inertia_local, o->inv_inertia);
    }
}

#define Q_COLOUR_MIN 64 /* constraints in a colour worth splitting among threads */

/* Greedy colouring in constraint order (deterministic): each constraint
 * takes the lowest colour free on both of its moving bodies (a side that
 * cannot move does not count); colours of fewer than Q_COLOUR_MIN join the
 * last group. Then solve_order lists the constraints colour by colour (see
 * below for the order within one). False when out of memory. */
static bool colour_constraints(q_bodies *b)
{
    size_t count = b->constraints.count;
    if (!q_array_reserve(&b->colour_masks, b->bodies.count) || !q_array_reserve(&b->solve_order, count))
        return false;
    _Static_assert(Q_COLOURS <= 32, "colour masks are 32 bits");
    uint32_t *mask = b->colour_masks.data, counts[Q_COLOURS + 1] = {0};
    if (b->bodies.count > 0) /* (no array is allocated for none) */
        memset(mask, 0, b->bodies.count * sizeof *mask);
    for (size_t i = 0; i < count; i++) {
        q_constraint *c = &b->constraints.data[i];
        uint32_t used = (c->a_moves ? mask[c->a] : 0) | (c->b_moves ? mask[c->b] : 0), k = 0;
        while (k < Q_COLOURS && (used & 1u << k))
            k++;
        if (k < Q_COLOURS) {
            if (c->a_moves)
                mask[c->a] |= 1u << k;
            if (c->b_moves)
                mask[c->b] |= 1u << k;
        }
        c->colour = (uint8_t)k;
        counts[k]++;
    }
    /* A colour too small to split is solved with the last group: every
     * colour costs the threads a meeting per pass. */
    for (size_t i = 0; i < count; i++) {
        q_constraint *c = &b->constraints.data[i];
        if (c->colour < Q_COLOURS && counts[c->colour] < Q_COLOUR_MIN) {
            counts[Q_COLOURS]++;
            c->colour = Q_COLOURS;
        }
    }
    for (int k = 0; k < Q_COLOURS; k++)
        if (counts[k] < Q_COLOUR_MIN)
            counts[k] = 0;
    uint32_t next[Q_COLOURS + 1];
    b->colour_start[0] = 0;
    for (int k = 0; k <= Q_COLOURS; k++) {
        next[k] = b->colour_start[k];
        b->colour_start[k + 1] = b->colour_start[k] + counts[k];
    }
    /* Within a colour the order does not change the result; there the
     * constraints are grouped by which sides move (both, B only, A only),
     * so that most batches of four skip an immovable side's work. The last
     * group keeps constraint order. */
    for (int kind = 0; kind < 3; kind++)
        for (size_t i = 0; i < count; i++) {
            const q_constraint *c = &b->constraints.data[i];
            int ck = c->colour == Q_COLOURS ? 0 : c->a_moves && c->b_moves ? 0 : c->b_moves ? 1 : 2;
            if (ck == kind)
                b->solve_order.data[next[c->colour]++] = (uint32_t)i;
        }
    b->solve_order.count = count;
    return true;
}

enum { PASS_WARM = Q_WIDE_WARM, PASS_SOLVE = Q_WIDE_SOLVE, PASS_RELAX = Q_WIDE_RELAX };

/* This thread's share [lo, hi) of n items. */
static void share(const q_team *t, size_t n, size_t *lo, size_t *hi)
{
    size_t k = (size_t)q_team_thread(t), m = (size_t)q_team_size(t);
    *lo = n * k / m;
    *hi = n * (k + 1) / m;
}

/* One pass over the constraints, colour by colour (in reverse when not
 * forward): the threads split each colour's batches of four and meet after
 * it. The last group (no colour; its constraints may share bodies) is solved
 * one constraint at a time by thread 0 alone, in the pass's direction. */
static void run_pass(const solve_ctx *s, q_team *t, int pass, bool forward)
{
    const q_bodies *b = s->b;
    for (int k = 0; k <= Q_COLOURS; k++) {
        int colour = forward ? k : Q_COLOURS - k;
        size_t first = b->colour_start[colour], end = b->colour_start[colour + 1];
        if (first == end)
            continue;
        if (colour < Q_COLOURS && !b->scalar_solve) {
            size_t lo, hi;
            share(t, b->batch_start[colour + 1] - b->batch_start[colour], &lo, &hi);
            q_wide_pass(&s->wide, b->batch_start[colour] + lo, b->batch_start[colour] + hi, pass, forward);
        } else if (colour < Q_COLOURS || q_team_thread(t) == 0) {
            size_t lo = first, hi = end;
            if (colour < Q_COLOURS) {
                share(t, end - first, &lo, &hi);
                lo += first;
                hi += first;
            }
            for (size_t j = lo; j < hi; j++) {
                const q_solver_constraint *c = &s->constraints[forward ? j : lo + hi - 1 - j];
                if (pass == PASS_WARM) {
                    warm_start(s, c);
                } else if (pass == PASS_SOLVE) {
                    solve_constraint(s, c, true, forward);
                } else {
                    solve_constraint(s, c, false, forward);
                    for (uint32_t p = 0; p < c->count; p++)
                        s->points[c->first + p].total_normal_impulse += s->points[c->first + p].normal_impulse;
                }
            }
        }
        q_team_sync(t);
    }
}

static void fill_unit(const solve_ctx *s, size_t u);

static void solve_team(void *ctx, q_team *t)
{
    const solve_ctx *s = ctx;
    size_t lo, hi;
    share(t, s->units, &lo, &hi);
    for (size_t u = lo; u < hi; u++)
        fill_unit(s, u);
    q_team_sync(t);
    /* entry 0 is the ground, which does not move */
    share(t, s->b->solver_bodies.count - 1, &lo, &hi);
    lo++;
    hi++;
    for (int sub = 0; sub < s->b->substeps; sub++) {
        integrate_velocities(s, lo, hi);
        q_team_sync(t);
        run_pass(s, t, PASS_WARM, true);
        /* Gauss-Seidel favours what it solves first; the solve and relax
         * passes run the colours in opposite orders, swapping each substep,
         * so no side of a pile is always first (a pyramid crept sideways
         * when every pass ran the same way). */
        bool forward = (sub & 1) == 0;
        run_pass(s, t, PASS_SOLVE, forward);
        integrate_positions(s, lo, hi);
        q_team_sync(t);
        run_pass(s, t, PASS_RELAX, !forward);
    }
}

/* Where solve position j's constraint lives: a lane of a batch (coloured
 * constraints) or the scalar arrays (the last group). */
static q_wide_batch *batch_of(const solve_ctx *s, uint32_t j, int *lane)
{
    const q_bodies *b = s->b;
    int colour = b->constraints.data[s->constraints[j].source].colour;
    if (colour >= Q_COLOURS || b->scalar_solve)
        return NULL;
    uint32_t at = j - b->colour_start[colour];
    *lane = (int)(at % Q_LANES);
    return &s->wide.batches[b->batch_start[colour] + at / Q_LANES];
}

/* Point k of solve position j: the scalar point itself, or a copy of its
 * lane in `copy` (store_point writes the copy's impulses back). */
static q_solver_point *load_point(const solve_ctx *s, uint32_t j, uint32_t k, q_solver_point *copy)
{
    int lane;
    const q_wide_batch *w = batch_of(s, j, &lane);
    if (!w)
        return &s->points[s->constraints[j].first + k];
    q_wide_get_point(&s->wide.points[w->first + k], lane, copy);
    return copy;
}

static void store_point(const solve_ctx *s, uint32_t j, uint32_t k, const q_solver_point *p)
{
    int lane;
    const q_wide_batch *w = batch_of(s, j, &lane);
    if (w)
        q_wide_put_impulses(&s->wide.points[w->first + k], lane, p);
}

/* After the substeps, points that approached faster than
 * Q_RESTITUTION_SPEED and pushed get the bounce their material asks for;
 * constraints in the narrowphase's order. */
static void restitution(const solve_ctx *s)
{
    const q_bodies *b = s->b;
    for (size_t i = 0; i < b->constraints.count; i++) {
        const q_constraint *c = &b->constraints.data[i];
        if (c->restitution == 0)
            continue;
        uint32_t j = b->solver_of.data[i];
        const q_solver_constraint *d = &s->constraints[j];
        q_solver_body *A = &s->bodies[d->a], *B = &s->bodies[d->b];
        for (uint32_t k = 0; k < c->count; k++) {
            const q_contact *cp = &c->points[k];
            if (cp->relative_velocity > -Q_RESTITUTION_SPEED)
                continue;
            q_solver_point copy, *p = load_point(s, j, k, &copy);
            if (p->max_normal_impulse == 0)
                continue;
            double vn = q_row_speed(A->v, A->w, B->v, B->w, &p->rows[0], c->normal);
            double impulse = -p->rows[0].mass * (vn + c->restitution * cp->relative_velocity);
            double next = dmax(p->normal_impulse + impulse, 0);
            impulse = next - p->normal_impulse;
            p->normal_impulse = next;
            p->total_normal_impulse += impulse;
            apply(A, B, d, &p->rows[0], c->normal, impulse);
            store_point(s, j, k, p);
        }
    }
}

/* Point k of a constraint as the solver reads it. */
static void make_point(const q_solver_body *sb, const q_constraint *c, const q_solver_constraint *d, uint32_t k,
                       q_solver_point *q)
{
    const q_contact *p = &c->points[k];
    v3_copy(q->anchor_a, d->turn_a ? p->ra_local : p->ra);
    v3_copy(q->anchor_b, d->turn_b ? p->rb_local : p->rb);
    q->separation = p->separation;
    const q_solver_body *A = &sb[d->a], *B = &sb[d->b];
    make_row(A, B, p->ra, p->rb, c->normal, &q->rows[0]);
    make_row(A, B, p->ra, p->rb, c->t1, &q->rows[1]);
    make_row(A, B, p->ra, p->rb, c->t2, &q->rows[2]);
    q->normal_impulse = p->normal_impulse;
    q->tangent_impulse[0] = p->tangent_impulse[0];
    q->tangent_impulse[1] = p->tangent_impulse[1];
    q->max_normal_impulse = p->max_normal_impulse;
    q->total_normal_impulse = p->total_normal_impulse;
}

/* Batches of four for each colour, in solve order, with their point slots
 * (as many as the batch's largest manifold); only for solve positions
 * before scalar_from (none with scalar_solve). Filled by fill_unit. False
 * when out of memory. */
static bool make_batches(q_bodies *b, uint32_t scalar_from)
{
    size_t nbatch = 0, nslots = 0;
    for (int k = 0; k < Q_COLOURS; k++) {
        b->batch_start[k] = (uint32_t)nbatch;
        if (b->colour_start[k] < scalar_from)
            nbatch += (b->colour_start[k + 1] - b->colour_start[k] + Q_LANES - 1) / Q_LANES;
    }
    b->batch_start[Q_COLOURS] = (uint32_t)nbatch;
    if (!q_array_reserve(&b->wide_batches, nbatch))
        return false;
    for (int k = 0; k < Q_COLOURS; k++)
        for (uint32_t j = b->colour_start[k]; j < b->colour_start[k + 1] && j < scalar_from; j += Q_LANES) {
            q_wide_batch *w = &b->wide_batches.data[b->batch_start[k] + (j - b->colour_start[k]) / Q_LANES];
            w->order = j;
            w->lanes = b->colour_start[k + 1] - j < Q_LANES ? b->colour_start[k + 1] - j : Q_LANES;
            w->slots = 0;
            for (uint32_t l = j; l < j + w->lanes; l++) {
                uint32_t n = b->constraints.data[b->solve_order.data[l]].count;
                w->slots = n > w->slots ? n : w->slots;
            }
            w->first = (uint32_t)nslots;
            nslots += w->slots;
        }
    if (!q_array_reserve(&b->wide_points, nslots))
        return false;
    b->wide_batches.count = nbatch;
    b->wide_points.count = nslots;
    return true;
}

/* The solver's copy of the constraint at solve position j (its points'
 * place, `first`, is set by prepare_solver for the last group). */
static q_solver_constraint *fill_header(q_bodies *b, uint32_t j)
{
    uint32_t ci = b->solve_order.data[j];
    const q_constraint *c = &b->constraints.data[ci];
    q_solver_constraint *d = &b->solver_constraints.data[j];
    d->a = c->a_moves ? b->solver_index.data[c->a] : 0;
    d->b = c->b_moves ? b->solver_index.data[c->b] : 0;
    d->source = ci;
    d->count = c->count;
    d->turn_a = !c->round_a && c->a_moves;
    d->turn_b = !c->round_b && c->b_moves;
    d->one_sided = !(c->a_moves && c->b_moves);
    v3_copy(d->normal, c->normal);
    v3_copy(d->t1, c->t1);
    v3_copy(d->t2, c->t2);
    d->friction = c->friction;
    b->solver_of.data[ci] = j;
    return d;
}

/* One unit of the copy into the solver's arrays: a batch (units below the
 * batch count) or one constraint of the last group. Units write disjoint
 * memory, so the team splits them. */
static void fill_unit(const solve_ctx *s, size_t u)
{
    q_bodies *b = s->b;
    const q_solver_body *sb = s->bodies;
    if (u < b->wide_batches.count) {
        q_wide_batch *w = &b->wide_batches.data[u];
        q_wide_point *slots = &b->wide_points.data[w->first];
        q_wide_clear(w, slots);
        for (uint32_t l = 0; l < w->lanes; l++) {
            q_solver_constraint *d = fill_header(b, w->order + l);
            const q_constraint *c = &b->constraints.data[d->source];
            q_solver_point pts[Q_MANIFOLD_POINTS];
            for (uint32_t k = 0; k < c->count; k++)
                make_point(sb, c, d, k, &pts[k]);
            d->first = UINT32_MAX;
            q_wide_set_lane(w, slots, (int)l, d, pts);
        }
        return;
    }
    uint32_t j = b->scalar_from + (uint32_t)(u - b->wide_batches.count);
    uint32_t first = b->solver_constraints.data[j].first;
    q_solver_constraint *d = fill_header(b, j);
    d->first = first;
    const q_constraint *c = &b->constraints.data[d->source];
    for (uint32_t k = 0; k < c->count; k++)
        make_point(sb, c, d, k, &b->solver_points.data[first + k]);
}

/* Copies the moving bodies into the solver's array (entry 0 the ground)
 * and lays out the constraints: batches for the coloured ones, point
 * places for the last group. The constraints themselves are copied by the
 * team (fill_unit). False when out of memory. */
static bool prepare_solver(q_bodies *b, solve_ctx *s)
{
    size_t nb = b->bodies.count, nc = b->constraints.count, np = 0, nm = 0;
    uint32_t scalar_from = b->scalar_solve ? 0 : b->colour_start[Q_COLOURS];
    for (uint32_t j = scalar_from; j < nc; j++)
        np += b->constraints.data[b->solve_order.data[j]].count;
    for (size_t i = 0; i < nb; i++)
        nm += q_body_moving(&b->bodies.data[i]);
    if (!q_array_reserve(&b->solver_index, nb) || !q_array_reserve(&b->solver_bodies, nm + 1) ||
        !q_array_reserve(&b->solver_constraints, nc) || !q_array_reserve(&b->solver_of, nc) ||
        !q_array_reserve(&b->solver_points, np) || !make_batches(b, scalar_from))
        return false;
    q_solver_body *sb = b->solver_bodies.data;
    memset(&sb[0], 0, sizeof sb[0]);
    sb[0].q[3] = 1;
    size_t count = 1;
    for (size_t i = 0; i < nb; i++) {
        const q_body *o = &b->bodies.data[i];
        b->solver_index.data[i] = 0;
        if (!q_body_moving(o))
            continue;
        q_solver_body *e = &sb[count];
        v3_copy(e->v, o->v);
        v3_copy(e->w, o->w);
        v3_copy(e->x, o->x);
        v3_copy(e->x0, o->x0);
        memcpy(e->q, o->q, sizeof e->q);
        memcpy(e->inv_inertia, o->inv_inertia, sizeof e->inv_inertia);
        e->inv_mass = o->inv_mass;
        e->slot = (uint32_t)i;
        b->solver_index.data[i] = (uint32_t)count++;
    }
    b->solver_bodies.count = count;
    uint32_t first = 0;
    for (uint32_t j = scalar_from; j < nc; j++) {
        b->solver_constraints.data[j].first = first;
        first += b->constraints.data[b->solve_order.data[j]].count;
    }
    b->scalar_from = scalar_from;
    b->solver_constraints.count = nc;
    b->solver_points.count = np;
    s->units = b->wide_batches.count + (nc - scalar_from);
    s->bodies = sb;
    s->constraints = b->solver_constraints.data;
    s->points = b->solver_points.data;
    s->wide = (q_wide_ctx){sb,
                           b->wide_batches.data,
                           b->wide_points.data,
                           {s->soft[0].bias_rate, s->soft[1].bias_rate},
                           {s->soft[0].mass_scale, s->soft[1].mass_scale},
                           {s->soft[0].impulse_scale, s->soft[1].impulse_scale},
                           s->inv_h,
                           MAX_PUSH_SPEED,
                           b->wide_baseline};
    return true;
}

/* The solved state back into the bodies and the constraints' points. */
static void finish_solver(const solve_ctx *s)
{
    q_bodies *b = s->b;
    for (size_t i = 1; i < b->solver_bodies.count; i++) {
        const q_solver_body *e = &b->solver_bodies.data[i];
        q_body *o = &b->bodies.data[e->slot];
        v3_copy(o->v, e->v);
        v3_copy(o->w, e->w);
        v3_copy(o->x, e->x);
        memcpy(o->q, e->q, sizeof o->q);
        memcpy(o->inv_inertia, e->inv_inertia, sizeof o->inv_inertia);
    }
    for (uint32_t j = 0; j < b->solver_constraints.count; j++) {
        const q_solver_constraint *d = &b->solver_constraints.data[j];
        q_constraint *c = &b->constraints.data[d->source];
        int lane;
        const q_wide_batch *w = batch_of(s, j, &lane);
        for (uint32_t k = 0; k < d->count; k++) {
            q_solver_point copy;
            const q_solver_point *q = &copy;
            if (w)
                q_wide_get_impulses(&s->wide.points[w->first + k], lane, &copy);
            else
                q = &s->points[d->first + k];
            q_contact *p = &c->points[k];
            p->normal_impulse = q->normal_impulse;
            p->tangent_impulse[0] = q->tangent_impulse[0];
            p->tangent_impulse[1] = q->tangent_impulse[1];
            p->max_normal_impulse = q->max_normal_impulse;
            p->total_normal_impulse = q->total_normal_impulse;
        }
    }
}

/* Below this many constraints one thread solves: a colour's share would
 * not pay for the threads meeting after it. The order is the same either
 * way, so is the result. */
#define Q_PARALLEL_SOLVE 256

void q_bodies_solve(q_bodies *b, double dt)
{
    for (size_t i = 0; i < b->bodies.count; i++) {
        q_body *o = &b->bodies.data[i];
        if (q_body_moving(o))
            q_bodies_buoyancy(b, o, dt);
    }
    double h = dt / b->substeps, inv_h = 1 / h;
    /* [0] between moving bodies, [1] against an immovable side; never
     * stiffer than a quarter of the substep rate. */
    solve_ctx s = {.b = b,
                   .soft = {make_softness(fmin(CONTACT_HERTZ, 0.25 * inv_h), CONTACT_DAMPING, h),
                            make_softness(fmin(STATIC_CONTACT_HERTZ, 0.25 * inv_h), CONTACT_DAMPING, h)},
                   .h = h,
                   .inv_h = inv_h};
    if (!colour_constraints(b) || !prepare_solver(b, &s)) {
        /* out of memory: no contacts this step, and bodies keep their state */
        b->constraints.count = 0;
        return;
    }
    q_jobs_team(b->constraints.count >= Q_PARALLEL_SOLVE ? b->jobs : NULL, solve_team, &s);
    restitution(&s);
    finish_solver(&s);
    emit_events(b);
}

/* Sums over one constraint's points after the solve: the impulse, the
 * approach speed and where it pushed (over the points that pushed, impulse
 * weighted; the deepest point when none did). */
static double constraint_impulse(const q_bodies *b, q_constraint *c, double pos[3], double *approach)
{
    double impulse = 0, min_sep = INFINITY, deepest[3] = {0, 0, 0}, pushed = 0, deepest_speed = 0;
    v3_set(pos, 0, 0, 0);
    for (uint32_t k = 0; k < c->count; k++) {
        const q_contact *p = &c->points[k];
        double at[3], sep = p->separation + v3_dot(p->rb, c->normal) - v3_dot(p->ra, c->normal);
        v3_add(at, b->bodies.data[c->b].x0, p->rb);
        impulse += p->total_normal_impulse;
        v3_madd(pos, at, p->total_normal_impulse);
        /* the approach of points that pushed: a speculative point beside a
         * spinning ball "approaches" without ever touching */
        if (p->total_normal_impulse > 0)
            pushed = fmax(pushed, -p->relative_velocity);
        if (sep < min_sep) {
            min_sep = sep;
            v3_copy(deepest, at);
            deepest_speed = -p->relative_velocity;
        }
    }
    if (impulse > 0) {
        v3_scale(pos, pos, 1 / impulse);
        *approach = fmax(*approach, pushed);
    } else {
        v3_copy(pos, deepest);
        *approach = fmax(*approach, deepest_speed);
    }
    c->touching = impulse > 0 || min_sep < Q_LINEAR_SLOP;
    return impulse;
}

/* One event when two bodies, or a body and the terrain, begin to touch:
 * the manifolds of one pair (compound parts; terrain chunks and their
 * normal clusters) are consecutive runs in the constraint list, and a run
 * reports once, at its strongest manifold. For the terrain, "touching
 * before" is the body's own flag, so rolling onto the next chunk is no new
 * contact. Brittle bodies note the strongest impulse they took in an
 * impact (approach faster than Q_BREAK_SPEED). */
static void emit_events(q_bodies *b)
{
    q_constraint *cs = b->constraints.data;
    size_t count = b->constraints.count;
    /* a moving body with no terrain manifold this step has left the ground */
    for (size_t i = 0; i < b->bodies.count; i++) {
        q_body *o = &b->bodies.data[i];
        if (q_body_moving(o)) {
            o->was_on_terrain = o->touching_terrain;
            o->touching_terrain = false;
        }
    }
    for (size_t i = 0; i < count;) {
        size_t end = i;
        while (end < count && cs[end].a == cs[i].a && cs[end].b == cs[i].b)
            end++;
        bool touching = false, before = false;
        double best = -1, best_pos[3] = {0, 0, 0}, approach = 0;
        size_t strongest = i;
        for (size_t k = i; k < end; k++) {
            double pos[3], speed = 0;
            double impulse = constraint_impulse(b, &cs[k], pos, &speed);
            approach = fmax(approach, speed);
            /* only impacts break things: a resting load, however heavy, is
             * not one (its impulse per step grows with the step) */
            if (speed > Q_BREAK_SPEED) {
                note_breakage(b, cs[k].a, pos, impulse);
                note_breakage(b, cs[k].b, pos, impulse);
            }
            touching |= cs[k].touching;
            before |= cs[k].was_touching;
            if (cs[k].touching && impulse > best) {
                best = impulse;
                strongest = k;
                v3_copy(best_pos, pos);
            }
        }
        q_body *body = &b->bodies.data[cs[i].b];
        if (cs[i].a == Q_TERRAIN) {
            before = body->was_on_terrain;
            body->touching_terrain = touching;
        }
        if (touching && !before) {
            double impulse = 0;
            for (size_t k = i; k < end; k++)
                for (uint32_t p = 0; p < cs[k].count; p++)
                    impulse += cs[k].points[p].total_normal_impulse;
            const q_constraint *c = &cs[strongest];
            q_contact_event e;
            memset(&e, 0, sizeof e);
            v3_copy(e.position, best_pos);
            e.impulse = impulse;
            e.speed = approach;
            e.material = c->material;
            if (c->a == Q_TERRAIN) {
                e.a = (q_handle){c->b + 1, b->handles.generations[c->b]};
                v3_copy(e.normal, c->normal);
            } else {
                e.a = (q_handle){c->a + 1, b->handles.generations[c->a]};
                e.b = (q_handle){c->b + 1, b->handles.generations[c->b]};
                v3_scale(e.normal, c->normal, -1);
            }
            q_array_push(&b->events, e);
        }
        i = end;
    }
}

/* ---- water ---- */

static bool liquid(uint8_t material)
{
    const q_material *m = q_material_get(material);
    return m && m->liquid;
}

/* Length of the vertical segment [y0, y0 + height] (metres) under the water
 * surface of the voxel column at (x, z), and the water's density. The
 * topmost water voxel near the segment sets the level: its floor plus its
 * occupancy, so flat water gives the exact draft. */
static double submerged_length(const q_bodies *b, double x, double y0, double height, double z, double *density)
{
    const q_terrain *t = b->tp->terrain;
    double vs = b->voxel_size;
    int32_t vx = (int32_t)floor(x / vs), vz = (int32_t)floor(z / vs);
    int32_t top = (int32_t)floor((y0 + height) / vs) + 1, bottom = (int32_t)floor(y0 / vs) - 1;
    for (int32_t vy = top; vy >= bottom; vy--) {
        q_voxel v = q_terrain_get(t, vx, vy, vz);
        if (v.occupancy == 0 || !liquid(v.material))
            continue;
        *density = q_material_get(v.material)->density;
        double level = (vy + v.occupancy / 255.0) * vs;
        return fmax(0, fmin(height, level - y0));
    }
    return 0;
}

void q_bodies_buoyancy(q_bodies *b, q_body *body, double dt)
{
    double g = v3_len(b->gravity);
    v3_set(body->water_force, 0, 0, 0);
    v3_set(body->water_torque, 0, 0, 0);
    if (!q_terrain_physics_broadphase(b->tp, body->min, body->max).water)
        return;
    double volume = 0, centroid[3] = {0, 0, 0}, density = 0;
    double h = body->sample_height;
    for (uint32_t i = 0; i < body->sample_count; i++) {
        double p[3], rho = 0;
        quat_rotate(body->q, body->samples[i], p);
        v3_add(p, p, body->x);
        double f = submerged_length(b, p[0], p[1] - 0.5 * h, h, p[2], &rho) / h;
        if (f <= 0)
            continue;
        double vol = f * body->samples[i][3];
        volume += vol;
        density += rho * vol;
        /* The submerged part of the cell is its lower fraction f. */
        p[1] += 0.5 * h * (f - 1);
        v3_madd(centroid, p, vol);
    }
    if (volume <= 0)
        return;
    density /= volume;
    v3_scale(centroid, centroid, 1 / volume);
    double force[3], r[3], torque[3];
    v3_scale(force, b->gravity, g > 0 ? -density * volume : 0);
    v3_copy(body->water_force, force);
    v3_sub(r, centroid, body->x);
    v3_cross(torque, r, force);
    v3_copy(body->water_torque, torque);
    /* Drag grows with the submerged share and with how light the body is
     * against the water (a light ball is stopped by the water it pushes;
     * with drag by volume alone it bobbed for many seconds). */
    double body_density = body->mass / body->volume;
    double keep = fmax(0, 1 - WATER_DRAG * (volume / body->volume) * fmax(1, density / body_density) * dt);
    v3_scale(body->v, body->v, keep);
    v3_scale(body->w, body->w, keep);
}

/* ---- islands and sleep ---- */

static uint32_t find_root(uint32_t *parent, uint32_t i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

void q_bodies_sleep(q_bodies *b, double dt)
{
    size_t n = b->bodies.count;
    if (!q_array_reserve(&b->parent, n))
        return;
    uint32_t *parent = b->parent.data;
    for (uint32_t i = 0; i < n; i++) {
        parent[i] = i;
        q_body *o = &b->bodies.data[i];
        if (!q_body_moving(o))
            continue;
        if (v3_len(o->v) < Q_SLEEP_LINEAR && v3_len(o->w) < Q_SLEEP_ANGULAR)
            o->sleep_time += dt;
        else
            o->sleep_time = 0;
    }
    /* Bodies in touch form islands; the terrain and static bodies do not join them. */
    for (size_t i = 0; i < b->constraints.count; i++) {
        const q_constraint *c = &b->constraints.data[i];
        if (c->a == Q_TERRAIN || !c->touching || !q_body_moving(&b->bodies.data[c->a]) ||
            !q_body_moving(&b->bodies.data[c->b]))
            continue;
        uint32_t ra = find_root(parent, c->a), rb = find_root(parent, c->b);
        if (ra != rb)
            parent[ra > rb ? ra : rb] = ra < rb ? ra : rb;
    }
    /* An island sleeps when its most restless body has been still long
     * enough: the shortest sleep time of each island is gathered at its root. */
    if (!q_array_reserve(&b->least, n))
        return;
    double *least = b->least.data;
    for (uint32_t i = 0; i < n; i++)
        least[i] = INFINITY;
    for (uint32_t i = 0; i < n; i++) {
        q_body *o = &b->bodies.data[i];
        if (q_body_moving(o)) {
            uint32_t r = find_root(parent, i);
            least[r] = fmin(least[r], o->sleep_time);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        q_body *o = &b->bodies.data[i];
        uint32_t r = find_root(parent, i);
        if (!q_body_moving(o) || !(least[r] >= Q_SLEEP_TIME))
            continue;
        o->sleeping = true;
        o->island = b->next_island + r;
        v3_set(o->v, 0, 0, 0);
        v3_set(o->w, 0, 0, 0);
        b->awake--;
    }
    b->next_island += (uint32_t)n;
    if (b->next_island > UINT32_MAX / 2)
        b->next_island = 1;
}
