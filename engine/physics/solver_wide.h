/* Four contact constraints of one colour solved at once (solver.c's passes
 * on lanes of 4 doubles).
 *
 * The constraints of a colour share no moving body, so solving them in any
 * order gives the same result; here four of them run side by side, each in
 * its own lane, through exactly the arithmetic of the scalar passes in
 * solver.c (the same operations in the same order, lane by lane, IEEE
 * doubles, no fused multiply-add: C11 mode keeps -ffp-contract=off). The
 * result is bit for bit the scalar solver's, so world hashes do not change;
 * spec/c/bodies_test.c checks it against the scalar path (q_bodies's
 * scalar_solve) on a scene of mixed shapes and materials. Written with
 * GCC's vector extensions; q_wide_pass is compiled for AVX2 and for the
 * x86-64 baseline and picks one by what the processor has.
 *
 * A batch holds the constraints' shared data per lane (bodies, directions,
 * friction, which sides move and turn) and up to Q_MANIFOLD_POINTS point
 * slots; lane l uses the first count[l] slots. Empty lanes (the last batch
 * of a colour) have count 0 and touch nothing.
 */
#ifndef Q_SOLVER_WIDE_H
#define Q_SOLVER_WIDE_H

#include "physics/bodies_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define Q_LANES 4

/* aligned(8): the arrays come from q_alloc, which promises 16 bytes */
typedef double q_vd __attribute__((vector_size(32), aligned(8)));
typedef int64_t q_vm __attribute__((vector_size(32), aligned(8)));

typedef struct q_wide_row {
    q_vd ja[3], jb[3], ia[3], ib[3], mass;
} q_wide_row;

typedef struct q_wide_point {
    q_vd anchor_a[3], anchor_b[3], separation;
    q_wide_row rows[3];
    q_vd normal_impulse, tangent_impulse[2], max_normal_impulse, total_normal_impulse;
} q_wide_point;

typedef struct q_wide_batch {
    uint32_t a[Q_LANES], b[Q_LANES]; /* q_solver_body indices (0: immovable) */
    uint32_t count[Q_LANES];         /* points per lane (0: empty lane) */
    uint32_t slots;                  /* the largest count */
    uint32_t first;                  /* its first point slot */
    uint32_t order, lanes;           /* lane 0's solve position; lanes in use */
    bool any_a, any_b, any_turn_a, any_turn_b; /* some lane's A moves, ... (else that work is skipped) */
    q_vm a_moves, b_moves, turn_a, turn_b, one_sided;
    q_vd normal[3], t1[3], t2[3], friction;
} q_wide_batch;

typedef struct q_wide_ctx {
    q_solver_body *bodies;
    q_wide_batch *batches;
    q_wide_point *points;
    double bias_rate[2], mass_scale[2], impulse_scale[2]; /* [one_sided] */
    double inv_h, max_push;
    bool baseline; /* tests: the baseline build even where AVX2 is there */
} q_wide_ctx;

enum { Q_WIDE_WARM, Q_WIDE_SOLVE, Q_WIDE_RELAX };

/* One pass (Q_WIDE_*) over batches [lo, hi); forward as in solver.c. */
void q_wide_pass(const q_wide_ctx *w, size_t lo, size_t hi, int pass, bool forward);

/* Empties a batch whose slots, first, order and lanes are set (slots at
 * least the largest count of the constraints it will hold) and its point
 * slots; its lanes are then set from scalar constraints and their points
 * with q_wide_set_lane. Lanes left unset stay empty. */
void q_wide_clear(q_wide_batch *batch, q_wide_point *slots);
void q_wide_set_lane(q_wide_batch *batch, q_wide_point *slots, int lane, const q_solver_constraint *c,
                     const q_solver_point *points);
/* A lane's point as a scalar point (or only its impulses), and its
 * impulses back. */
void q_wide_get_point(const q_wide_point *slot, int lane, q_solver_point *out);
void q_wide_get_impulses(const q_wide_point *slot, int lane, q_solver_point *out);
void q_wide_put_impulses(q_wide_point *slot, int lane, const q_solver_point *in);

#endif
