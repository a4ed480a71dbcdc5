/* QEF accumulation and solve: see qef.h. The symmetric eigenproblem uses
 * cyclic Jacobi rotations (a handful of sweeps converge for 3x3). */
#include "mesh/qef.h"

#include <math.h>

void q_qef_add(q_qef *q, const double p[3], const double n[3])
{
    double d = n[0] * p[0] + n[1] * p[1] + n[2] * p[2];
    q->ata[0] += n[0] * n[0];
    q->ata[1] += n[0] * n[1];
    q->ata[2] += n[0] * n[2];
    q->ata[3] += n[1] * n[1];
    q->ata[4] += n[1] * n[2];
    q->ata[5] += n[2] * n[2];
    for (int a = 0; a < 3; a++) {
        q->atb[a] += n[a] * d;
        q->mass[a] += p[a];
    }
    q->count++;
}

/* Eigen-decomposition of symmetric m (full 3x3): m = V diag(w) V^T. */
static void jacobi3(double m[3][3], double v[3][3], double w[3])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            v[i][j] = i == j;
    /* Converged once the off-diagonal is negligible against the diagonal:
     * the truncation threshold (Q_QEF_TRUNCATION) is far coarser. */
    double scale = fabs(m[0][0]) + fabs(m[1][1]) + fabs(m[2][2]);
    for (int sweep = 0; sweep < 6; sweep++) {
        double off = fabs(m[0][1]) + fabs(m[0][2]) + fabs(m[1][2]);
        if (off <= 1e-9 * scale)
            break;
        for (int p = 0; p < 2; p++)
            for (int r = p + 1; r < 3; r++) {
                if (fabs(m[p][r]) < 1e-18)
                    continue;
                double theta = (m[r][r] - m[p][p]) / (2 * m[p][r]);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < 3; k++) { /* m = J^T m J */
                    double mkp = m[k][p], mkr = m[k][r];
                    m[k][p] = c * mkp - s * mkr;
                    m[k][r] = s * mkp + c * mkr;
                }
                for (int k = 0; k < 3; k++) {
                    double mpk = m[p][k], mrk = m[r][k];
                    m[p][k] = c * mpk - s * mrk;
                    m[r][k] = s * mpk + c * mrk;
                }
                for (int k = 0; k < 3; k++) {
                    double vkp = v[k][p], vkr = v[k][r];
                    v[k][p] = c * vkp - s * vkr;
                    v[k][r] = s * vkp + c * vkr;
                }
            }
    }
    for (int i = 0; i < 3; i++)
        w[i] = m[i][i];
}

void q_qef_solve(const q_qef *q, double out[3])
{
    double mp[3];
    for (int a = 0; a < 3; a++)
        mp[a] = q->mass[a] / q->count;
    double m[3][3] = {{q->ata[0], q->ata[1], q->ata[2]},
                      {q->ata[1], q->ata[3], q->ata[4]},
                      {q->ata[2], q->ata[4], q->ata[5]}};
    /* residual right-hand side relative to the mass point */
    double r[3];
    for (int a = 0; a < 3; a++)
        r[a] = q->atb[a] - (m[a][0] * mp[0] + m[a][1] * mp[1] + m[a][2] * mp[2]);
    double v[3][3], w[3];
    jacobi3(m, v, w);
    double wmax = fmax(fabs(w[0]), fmax(fabs(w[1]), fabs(w[2])));
    double x[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        if (wmax <= 0 || fabs(w[i]) < Q_QEF_TRUNCATION * wmax)
            continue;
        double proj = (v[0][i] * r[0] + v[1][i] * r[1] + v[2][i] * r[2]) / w[i];
        for (int a = 0; a < 3; a++)
            x[a] += v[a][i] * proj;
    }
    for (int a = 0; a < 3; a++)
        out[a] = mp[a] + x[a];
}
