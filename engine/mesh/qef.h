/* Quadratic error functions for dual contouring (Garland-Heckbert form as
 * used by Ju et al. 2002, "Dual Contouring of Hermite Data", section 2.3).
 *
 * E(x) = sum_i (n_i . (x - p_i))^2 over a cell's edge crossings p_i with unit
 * normals n_i. The minimiser solves (A^T A) x = A^T b. A^T A is symmetric
 * positive semi-definite; on flat or cylindrical areas it is singular, so we
 * solve relative to the mass point m (mean of the p_i) with a truncated
 * pseudo-inverse: x = m + pinv(A^T A) (A^T b - A^T A m), dropping eigenvalues
 * under Q_QEF_TRUNCATION of the largest. Flat areas then put the vertex at
 * the mass point's projection instead of spiking. Everything is in doubles
 * and relative to the cell's minimum corner, so the result depends only on
 * the crossings, never on where the cell is in the world.
 */
#ifndef Q_QEF_H
#define Q_QEF_H

#define Q_QEF_TRUNCATION 0.1

typedef struct q_qef {
    double ata[6]; /* xx, xy, xz, yy, yz, zz */
    double atb[3];
    double mass[3];
    int count;
} q_qef;

static inline void q_qef_clear(q_qef *q)
{
    *q = (q_qef){{0}, {0}, {0}, 0};
}

/* Adds the plane through p with unit normal n. */
void q_qef_add(q_qef *q, const double p[3], const double n[3]);
/* Minimiser as described above (mass point when count == 0 is undefined:
 * callers only solve cells with crossings). */
void q_qef_solve(const q_qef *q, double out[3]);

#endif
