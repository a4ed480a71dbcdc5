/* Four contact constraints at once: see solver_wide.h. Every function here
 * mirrors one of solver.c's scalar ones (named in its comment) operation for
 * operation; change both together. */
#include "physics/solver_wide.h"

#include <string.h>

/* Every helper below is forced inline, so that each version of the pass
 * (pass_avx2, pass_baseline) gets its own copy compiled for its target. */
#define WIDE static inline __attribute__((always_inline))
/* (They pass 32-byte vectors by value, which would change the calling
 * convention between the baseline and AVX if they were ever called; being
 * inlined, they are not.) */
#pragma GCC diagnostic ignored "-Wpsabi"

typedef q_vd vd;
typedef q_vm vm;

WIDE vd splat(double x) { return (vd){x, x, x, x}; }
/* m ? a : b per lane */
WIDE vd sel(vm m, vd a, vd b) { return (vd)((m & (vm)a) | (~m & (vm)b)); }
/* dmax and dmin of solver.c: a > b ? a : b, a < b ? a : b */
WIDE vd vmax(vd a, vd b) { return sel(a > b, a, b); }
WIDE vd vmin(vd a, vd b) { return sel(a < b, a, b); }
WIDE vd dot(const vd a[3], const vd b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* The lanes' copies of one side's bodies. */
typedef struct side {
    vd v[3], w[3], dx[3], q[4], inv_mass;
} side;

WIDE void gather(const q_solver_body *bodies, const uint32_t idx[Q_LANES], bool any, side *s)
{
    if (!any) { /* every lane has the immovable entry 0: zeros (q too: an immovable side never turns) */
        memset(s, 0, sizeof *s);
        return;
    }
    for (int l = 0; l < Q_LANES; l++) {
        const q_solver_body *e = &bodies[idx[l]];
        for (int k = 0; k < 3; k++) {
            s->v[k][l] = e->v[k];
            s->w[k][l] = e->w[k];
            s->dx[k][l] = e->x[k] - e->x0[k]; /* current_separation's (x - x0) */
        }
        for (int k = 0; k < 4; k++)
            s->q[k][l] = e->q[k];
        s->inv_mass[l] = e->inv_mass;
    }
}

WIDE void scatter(q_solver_body *bodies, const uint32_t idx[Q_LANES], vm moves, const side *s)
{
    for (int l = 0; l < Q_LANES; l++) {
        if (!moves[l])
            continue;
        q_solver_body *e = &bodies[idx[l]];
        for (int k = 0; k < 3; k++) {
            e->v[k] = s->v[k][l];
            e->w[k] = s->w[k][l];
        }
    }
}

/* quat_rotate (core/vec3.h) */
WIDE void rotate(const vd q[4], const vd v[3], vd o[3])
{
    vd t[3] = {q[1] * v[2] - q[2] * v[1], q[2] * v[0] - q[0] * v[2], q[0] * v[1] - q[1] * v[0]};
    for (int k = 0; k < 3; k++)
        t[k] = t[k] * 2.0;
    vd c[3] = {q[1] * t[2] - q[2] * t[1], q[2] * t[0] - q[0] * t[2], q[0] * t[1] - q[1] * t[0]};
    for (int k = 0; k < 3; k++)
        o[k] = v[k] + q[3] * t[k] + c[k];
}

/* q_row_speed (bodies_internal.h) */
WIDE vd speed(const side *A, const side *B, const q_wide_row *row, const vd d[3])
{
    return (B->v[0] - A->v[0]) * d[0] + (B->v[1] - A->v[1]) * d[1] + (B->v[2] - A->v[2]) * d[2] +
           dot(B->w, row->jb) - dot(A->w, row->ja);
}

/* apply (push_a on A, push_b on B), only where the mask and the side say */
WIDE void push(const q_wide_batch *c, side *A, side *B, vm am, vm bm, const q_wide_row *row, const vd d[3], vd P)
{
    if (c->any_a) {
        vd ma = A->inv_mass * P;
        for (int i = 0; i < 3; i++) {
            A->v[i] = sel(am, A->v[i] - ma * d[i], A->v[i]);
            A->w[i] = sel(am, A->w[i] - P * row->ia[i], A->w[i]);
        }
    }
    if (c->any_b) {
        vd mb = B->inv_mass * P;
        for (int i = 0; i < 3; i++) {
            B->v[i] = sel(bm, B->v[i] + mb * d[i], B->v[i]);
            B->w[i] = sel(bm, B->w[i] + P * row->ib[i], B->w[i]);
        }
    }
}

/* A side's anchor now: turned with the side where the lane's side turns
 * (any: whether some lane does), else as stored. */
WIDE void anchor_now(const side *S, bool any, vm turn, const vd anchor[3], vd out[3])
{
    if (any) {
        rotate(S->q, anchor, out);
        for (int k = 0; k < 3; k++)
            out[k] = sel(turn, out[k], anchor[k]);
    } else {
        for (int k = 0; k < 3; k++)
            out[k] = anchor[k];
    }
}

/* current_separation */
WIDE vd separation(const side *A, const side *B, const q_wide_batch *c, const q_wide_point *p)
{
    vd pa[3], pb[3];
    anchor_now(A, c->any_turn_a, c->turn_a, p->anchor_a, pa);
    anchor_now(B, c->any_turn_b, c->turn_b, p->anchor_b, pb);
    vd d[3];
    for (int i = 0; i < 3; i++)
        d[i] = B->dx[i] - A->dx[i] + pb[i] - pa[i];
    return dot(d, c->normal) + p->separation;
}

WIDE vm lanes_with(const q_wide_batch *c, uint32_t k)
{
    return (vm){-(int64_t)(c->count[0] > k), -(int64_t)(c->count[1] > k), -(int64_t)(c->count[2] > k),
                -(int64_t)(c->count[3] > k)};
}

/* warm_start */
WIDE void warm(const q_wide_batch *c, q_wide_point *pts, side *A, side *B)
{
    for (uint32_t k = 0; k < c->slots; k++) {
        const q_wide_point *p = &pts[k];
        vm on = lanes_with(c, k), am = on & c->a_moves, bm = on & c->b_moves;
        push(c, A, B, am, bm, &p->rows[0], c->normal, p->normal_impulse);
        push(c, A, B, am, bm, &p->rows[1], c->t1, p->tangent_impulse[0]);
        push(c, A, B, am, bm, &p->rows[2], c->t2, p->tangent_impulse[1]);
    }
}

/* solve_constraint */
WIDE void solve(const q_wide_ctx *w, const q_wide_batch *c, q_wide_point *pts, side *A, side *B, bool use_bias,
                  bool forward)
{
    const vd zero = splat(0), one = splat(1);
    vd bias_rate = sel(c->one_sided, splat(w->bias_rate[1]), splat(w->bias_rate[0]));
    vd soft_mass = sel(c->one_sided, splat(w->mass_scale[1]), splat(w->mass_scale[0]));
    vd soft_impulse = sel(c->one_sided, splat(w->impulse_scale[1]), splat(w->impulse_scale[0]));
    for (uint32_t i = 0; i < c->slots; i++) {
        uint32_t k = forward ? i : c->slots - 1 - i;
        q_wide_point *p = &pts[k];
        vm on = lanes_with(c, k);
        vd s = separation(A, B, c, p);
        vm speculative = s > zero;
        vd bias = sel(speculative, s * w->inv_h, zero), mass_scale = one, impulse_scale = zero;
        if (use_bias) {
            bias = sel(speculative, bias, vmax(bias_rate * s, splat(-w->max_push)));
            mass_scale = sel(speculative, one, soft_mass);
            impulse_scale = sel(speculative, zero, soft_impulse);
        }
        vd vn = speed(A, B, &p->rows[0], c->normal);
        vd impulse = -p->rows[0].mass * mass_scale * (vn + bias) - impulse_scale * p->normal_impulse;
        vd next = vmax(p->normal_impulse + impulse, zero);
        impulse = next - p->normal_impulse;
        p->normal_impulse = sel(on, next, p->normal_impulse);
        p->max_normal_impulse = sel(on, vmax(p->max_normal_impulse, impulse), p->max_normal_impulse);
        push(c, A, B, on & c->a_moves, on & c->b_moves, &p->rows[0], c->normal, impulse);
    }
    for (uint32_t i = 0; i < c->slots; i++) {
        uint32_t k = forward ? i : c->slots - 1 - i;
        q_wide_point *p = &pts[k];
        vm on = lanes_with(c, k);
        vd limit = c->friction * p->normal_impulse;
        for (int t = 0; t < 2; t++) {
            const vd *dir = t == 0 ? c->t1 : c->t2;
            const q_wide_row *row = &p->rows[1 + t];
            vd impulse = -row->mass * speed(A, B, row, dir);
            vd next = vmax(-limit, vmin(limit, p->tangent_impulse[t] + impulse));
            impulse = next - p->tangent_impulse[t];
            p->tangent_impulse[t] = sel(on, next, p->tangent_impulse[t]);
            push(c, A, B, on & c->a_moves, on & c->b_moves, row, dir, impulse);
        }
    }
}

WIDE void pass_body(const q_wide_ctx *w, size_t lo, size_t hi, int pass, bool forward)
{
    for (size_t j = lo; j < hi; j++) {
        const q_wide_batch *c = &w->batches[forward ? j : lo + hi - 1 - j];
        q_wide_point *pts = &w->points[c->first];
        side A, B;
        gather(w->bodies, c->a, c->any_a, &A);
        gather(w->bodies, c->b, c->any_b, &B);
        if (pass == Q_WIDE_WARM) {
            warm(c, pts, &A, &B);
        } else {
            solve(w, c, pts, &A, &B, pass == Q_WIDE_SOLVE, forward);
            if (pass == Q_WIDE_RELAX)
                for (uint32_t k = 0; k < c->slots; k++)
                    pts[k].total_normal_impulse =
                        sel(lanes_with(c, k), pts[k].total_normal_impulse + pts[k].normal_impulse,
                            pts[k].total_normal_impulse);
        }
        if (c->any_a)
            scatter(w->bodies, c->a, c->a_moves, &A);
        if (c->any_b)
            scatter(w->bodies, c->b, c->b_moves, &B);
    }
}

/* The pass compiled twice on x86-64, for AVX2 (four doubles a vector op)
 * and for the baseline (two), and picked by what the processor has, at each
 * call rather than through an ifunc (target_clones), whose resolver runs
 * before sanitizers start. Other processors get the generic build. */
static void pass_baseline(const q_wide_ctx *w, size_t lo, size_t hi, int pass, bool forward)
{
    pass_body(w, lo, hi, pass, forward);
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) static void pass_avx2(const q_wide_ctx *w, size_t lo, size_t hi, int pass,
                                                     bool forward)
{
    pass_body(w, lo, hi, pass, forward);
}

void q_wide_pass(const q_wide_ctx *w, size_t lo, size_t hi, int pass, bool forward)
{
    if (!w->baseline && __builtin_cpu_supports("avx2"))
        pass_avx2(w, lo, hi, pass, forward);
    else
        pass_baseline(w, lo, hi, pass, forward);
}
#else
void q_wide_pass(const q_wide_ctx *w, size_t lo, size_t hi, int pass, bool forward)
{
    pass_baseline(w, lo, hi, pass, forward);
}
#endif

/* ---- moving data in and out ---- */

/* Zeroes lane l of a point slot. */
static void clear_lane(q_wide_point *p, int l)
{
    double *d = (double *)p;
    for (size_t i = 0; i < sizeof *p / sizeof(q_vd); i++)
        d[Q_LANES * i + (size_t)l] = 0;
}

void q_wide_clear(q_wide_batch *batch, q_wide_point *slots)
{
    q_wide_batch kept = *batch;
    memset(batch, 0, sizeof *batch);
    batch->slots = kept.slots;
    batch->first = kept.first;
    batch->order = kept.order;
    batch->lanes = kept.lanes;
    memset(slots, 0, kept.slots * sizeof *slots);
}

static void put_row(q_wide_row *w, int l, const q_row *r)
{
    for (int k = 0; k < 3; k++) {
        w->ja[k][l] = r->ja[k];
        w->jb[k][l] = r->jb[k];
        w->ia[k][l] = r->ia[k];
        w->ib[k][l] = r->ib[k];
    }
    w->mass[l] = r->mass;
}

static void get_row(const q_wide_row *w, int l, q_row *r)
{
    for (int k = 0; k < 3; k++) {
        r->ja[k] = w->ja[k][l];
        r->jb[k] = w->jb[k][l];
        r->ia[k] = w->ia[k][l];
        r->ib[k] = w->ib[k][l];
    }
    r->mass = w->mass[l];
}

void q_wide_set_lane(q_wide_batch *batch, q_wide_point *slots, int l, const q_solver_constraint *c,
                     const q_solver_point *points)
{
    batch->a[l] = c->a;
    batch->b[l] = c->b;
    batch->count[l] = c->count;
    batch->a_moves[l] = c->a ? -1 : 0;
    batch->b_moves[l] = c->b ? -1 : 0;
    batch->turn_a[l] = c->turn_a ? -1 : 0;
    batch->turn_b[l] = c->turn_b ? -1 : 0;
    batch->one_sided[l] = c->one_sided ? -1 : 0;
    batch->any_a |= c->a != 0;
    batch->any_b |= c->b != 0;
    batch->any_turn_a |= c->turn_a;
    batch->any_turn_b |= c->turn_b;
    for (int k = 0; k < 3; k++) {
        batch->normal[k][l] = c->normal[k];
        batch->t1[k][l] = c->t1[k];
        batch->t2[k][l] = c->t2[k];
    }
    batch->friction[l] = c->friction;
    for (uint32_t i = c->count; i < batch->slots; i++)
        clear_lane(&slots[i], l);
    for (uint32_t i = 0; i < c->count; i++) {
        const q_solver_point *p = &points[i];
        q_wide_point *s = &slots[i];
        for (int k = 0; k < 3; k++) {
            s->anchor_a[k][l] = p->anchor_a[k];
            s->anchor_b[k][l] = p->anchor_b[k];
        }
        s->separation[l] = p->separation;
        for (int r = 0; r < 3; r++)
            put_row(&s->rows[r], l, &p->rows[r]);
        q_wide_put_impulses(s, l, p);
    }
}

void q_wide_get_impulses(const q_wide_point *s, int l, q_solver_point *p)
{
    p->normal_impulse = s->normal_impulse[l];
    p->tangent_impulse[0] = s->tangent_impulse[0][l];
    p->tangent_impulse[1] = s->tangent_impulse[1][l];
    p->max_normal_impulse = s->max_normal_impulse[l];
    p->total_normal_impulse = s->total_normal_impulse[l];
}

void q_wide_get_point(const q_wide_point *s, int l, q_solver_point *p)
{
    for (int k = 0; k < 3; k++) {
        p->anchor_a[k] = s->anchor_a[k][l];
        p->anchor_b[k] = s->anchor_b[k][l];
    }
    p->separation = s->separation[l];
    for (int r = 0; r < 3; r++)
        get_row(&s->rows[r], l, &p->rows[r]);
    q_wide_get_impulses(s, l, p);
}

void q_wide_put_impulses(q_wide_point *s, int l, const q_solver_point *p)
{
    s->normal_impulse[l] = p->normal_impulse;
    s->tangent_impulse[0][l] = p->tangent_impulse[0];
    s->tangent_impulse[1][l] = p->tangent_impulse[1];
    s->max_normal_impulse[l] = p->max_normal_impulse;
    s->total_normal_impulse[l] = p->total_normal_impulse;
}
