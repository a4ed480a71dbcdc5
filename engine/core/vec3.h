/* Small double-precision vector, quaternion and 3x3 matrix helpers for the
 * physics code (static inline: no call overhead in solver loops).
 * Quaternions are (x, y, z, w); matrices are row-major double[9].
 */
#ifndef Q_VEC3_H
#define Q_VEC3_H

#include <math.h>

static inline void v3_set(double o[3], double x, double y, double z) { o[0] = x, o[1] = y, o[2] = z; }
static inline void v3_copy(double o[3], const double a[3]) { o[0] = a[0], o[1] = a[1], o[2] = a[2]; }
static inline void v3_add(double o[3], const double a[3], const double b[3])
{
    o[0] = a[0] + b[0], o[1] = a[1] + b[1], o[2] = a[2] + b[2];
}
static inline void v3_sub(double o[3], const double a[3], const double b[3])
{
    o[0] = a[0] - b[0], o[1] = a[1] - b[1], o[2] = a[2] - b[2];
}
static inline void v3_scale(double o[3], const double a[3], double s) { o[0] = a[0] * s, o[1] = a[1] * s, o[2] = a[2] * s; }
/* o += a * s */
static inline void v3_madd(double o[3], const double a[3], double s)
{
    o[0] += a[0] * s, o[1] += a[1] * s, o[2] += a[2] * s;
}
static inline double v3_dot(const double a[3], const double b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static inline void v3_cross(double o[3], const double a[3], const double b[3])
{
    double x = a[1] * b[2] - a[2] * b[1], y = a[2] * b[0] - a[0] * b[2], z = a[0] * b[1] - a[1] * b[0];
    o[0] = x, o[1] = y, o[2] = z;
}
static inline double v3_len(const double a[3]) { return sqrt(v3_dot(a, a)); }
static inline int v3_finite(const double a[3]) { return isfinite(a[0]) && isfinite(a[1]) && isfinite(a[2]); }
/* Normalises in place; returns the old length (0 leaves a unchanged). */
static inline double v3_normalize(double a[3])
{
    double l = v3_len(a);
    if (l > 0)
        v3_scale(a, a, 1.0 / l);
    return l;
}
/* Two unit vectors completing the unit n to an orthonormal basis. */
static inline void v3_basis(const double n[3], double t1[3], double t2[3])
{
    if (fabs(n[0]) >= 0.57735)
        v3_set(t1, n[1], -n[0], 0);
    else
        v3_set(t1, 0, n[2], -n[1]);
    v3_normalize(t1);
    v3_cross(t2, n, t1);
}

/* Rotates v by the unit quaternion q. */
static inline void quat_rotate(const double q[4], const double v[3], double o[3])
{
    double u[3] = {q[0], q[1], q[2]}, t[3], c[3];
    v3_cross(t, u, v);
    v3_scale(t, t, 2.0);
    v3_cross(c, u, t);
    o[0] = v[0] + q[3] * t[0] + c[0];
    o[1] = v[1] + q[3] * t[1] + c[1];
    o[2] = v[2] + q[3] * t[2] + c[2];
}
static inline void quat_rotate_inv(const double q[4], const double v[3], double o[3])
{
    double c[4] = {-q[0], -q[1], -q[2], q[3]};
    quat_rotate(c, v, o);
}
static inline void quat_mul(double o[4], const double a[4], const double b[4])
{
    double x = a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1];
    double y = a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0];
    double z = a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3];
    double w = a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2];
    o[0] = x, o[1] = y, o[2] = z, o[3] = w;
}
/* Normalises in place; a zero or non-finite quaternion becomes the identity.
 * Returns the old length. */
static inline double quat_normalize(double q[4])
{
    double l = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(l > 0) || !isfinite(l)) {
        q[0] = q[1] = q[2] = 0, q[3] = 1;
        return l;
    }
    for (int i = 0; i < 4; i++)
        q[i] /= l;
    return l;
}
/* Rotation matrix of a unit quaternion. */
static inline void quat_to_mat(const double q[4], double m[9])
{
    double x = q[0], y = q[1], z = q[2], w = q[3];
    m[0] = 1 - 2 * (y * y + z * z), m[1] = 2 * (x * y - z * w), m[2] = 2 * (x * z + y * w);
    m[3] = 2 * (x * y + z * w), m[4] = 1 - 2 * (x * x + z * z), m[5] = 2 * (y * z - x * w);
    m[6] = 2 * (x * z - y * w), m[7] = 2 * (y * z + x * w), m[8] = 1 - 2 * (x * x + y * y);
}

static inline void m3_mul_v(const double m[9], const double v[3], double o[3])
{
    double x = m[0] * v[0] + m[1] * v[1] + m[2] * v[2];
    double y = m[3] * v[0] + m[4] * v[1] + m[5] * v[2];
    double z = m[6] * v[0] + m[7] * v[1] + m[8] * v[2];
    o[0] = x, o[1] = y, o[2] = z;
}
/* o = r * m * r^T */
static inline void m3_rotate(const double r[9], const double m[9], double o[9])
{
    double t[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            t[i * 3 + j] = r[i * 3] * m[j] + r[i * 3 + 1] * m[3 + j] + r[i * 3 + 2] * m[6 + j];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            o[i * 3 + j] = t[i * 3] * r[j * 3] + t[i * 3 + 1] * r[j * 3 + 1] + t[i * 3 + 2] * r[j * 3 + 2];
}
/* Inverse of a 3x3 matrix; returns 0 (and leaves o zero) when singular. */
static inline int m3_inverse(const double m[9], double o[9])
{
    double c0 = m[4] * m[8] - m[5] * m[7], c1 = m[5] * m[6] - m[3] * m[8], c2 = m[3] * m[7] - m[4] * m[6];
    double det = m[0] * c0 + m[1] * c1 + m[2] * c2;
    for (int i = 0; i < 9; i++)
        o[i] = 0;
    if (!(fabs(det) > 1e-300) || !isfinite(det))
        return 0;
    double inv = 1.0 / det;
    o[0] = c0 * inv, o[1] = (m[2] * m[7] - m[1] * m[8]) * inv, o[2] = (m[1] * m[5] - m[2] * m[4]) * inv;
    o[3] = c1 * inv, o[4] = (m[0] * m[8] - m[2] * m[6]) * inv, o[5] = (m[2] * m[3] - m[0] * m[5]) * inv;
    o[6] = c2 * inv, o[7] = (m[1] * m[6] - m[0] * m[7]) * inv, o[8] = (m[0] * m[4] - m[1] * m[3]) * inv;
    return 1;
}

#endif
