/* quarry.vec3 and quarry.quat: small value types as full userdata.
 *
 * Vec3 {x, y, z}: + - (vectors), * / (by a number; * also number * vec),
 * unary -, == (exact), tostring; :dot :cross :length :normalized :lerp.
 * Quat {w, x, y, z}, unit length: q * v rotates a vector, q1 * q2 composes
 * (q1 after q2); from_axis_angle(axis, angle), from_euler(x, y, z) applies
 * the X rotation first, then Y, then Z (radians).
 */
#include "common.h"

#include <math.h>
#include <string.h>

/* ---- Vec3 ---- */

static double *vec_arg(lua_State *L, int idx, double tmp[3])
{
    double *v = luaL_testudata(L, idx, QL_VEC3);
    if (v)
        return v;
    ql_check_vec3(L, idx, tmp);
    return tmp;
}

static int vec3_new(lua_State *L)
{
    double v[3] = {luaL_optnumber(L, 1, 0), luaL_optnumber(L, 2, 0), luaL_optnumber(L, 3, 0)};
    ql_push_vec3(L, v);
    return 1;
}

static int vec3_index(lua_State *L)
{
    double *v = luaL_checkudata(L, 1, QL_VEC3);
    const char *k = lua_tostring(L, 2);
    if (k && k[0] && !k[1] && k[0] >= 'x' && k[0] <= 'z') {
        lua_pushnumber(L, v[k[0] - 'x']);
        return 1;
    }
    return ql_index_method(L);
}

static int vec3_newindex(lua_State *L)
{
    double *v = luaL_checkudata(L, 1, QL_VEC3);
    const char *k = lua_tostring(L, 2);
    if (!(k && k[0] && !k[1] && k[0] >= 'x' && k[0] <= 'z'))
        return luaL_error(L, "Vec3 has no field '%s' (fields are x, y, z)", k ? k : "?");
    v[k[0] - 'x'] = luaL_checknumber(L, 3);
    return 0;
}

static int vec3_add(lua_State *L)
{
    double a[3], b[3], *p = vec_arg(L, 1, a), *q = vec_arg(L, 2, b);
    ql_push_vec3(L, (double[3]){p[0] + q[0], p[1] + q[1], p[2] + q[2]});
    return 1;
}

static int vec3_sub(lua_State *L)
{
    double a[3], b[3], *p = vec_arg(L, 1, a), *q = vec_arg(L, 2, b);
    ql_push_vec3(L, (double[3]){p[0] - q[0], p[1] - q[1], p[2] - q[2]});
    return 1;
}

static int vec3_mul(lua_State *L)
{
    int vi = lua_isnumber(L, 1) ? 2 : 1;
    double tmp[3], *v = vec_arg(L, vi, tmp);
    double s = luaL_checknumber(L, vi == 1 ? 2 : 1);
    ql_push_vec3(L, (double[3]){v[0] * s, v[1] * s, v[2] * s});
    return 1;
}

static int vec3_div(lua_State *L)
{
    double tmp[3], *v = vec_arg(L, 1, tmp);
    double s = luaL_checknumber(L, 2);
    ql_push_vec3(L, (double[3]){v[0] / s, v[1] / s, v[2] / s});
    return 1;
}

static int vec3_unm(lua_State *L)
{
    double *v = luaL_checkudata(L, 1, QL_VEC3);
    ql_push_vec3(L, (double[3]){-v[0], -v[1], -v[2]});
    return 1;
}

static int vec3_eq(lua_State *L)
{
    double a[3], b[3];
    bool ok = ql_to_vec3(L, 1, a) && ql_to_vec3(L, 2, b);
    lua_pushboolean(L, ok && a[0] == b[0] && a[1] == b[1] && a[2] == b[2]);
    return 1;
}

static int vec3_tostring(lua_State *L)
{
    double *v = luaL_checkudata(L, 1, QL_VEC3);
    lua_pushfstring(L, "vec3(%f, %f, %f)", v[0], v[1], v[2]);
    return 1;
}

static int vec3_dot(lua_State *L)
{
    double a[3], b[3], *p = vec_arg(L, 1, a), *q = vec_arg(L, 2, b);
    lua_pushnumber(L, p[0] * q[0] + p[1] * q[1] + p[2] * q[2]);
    return 1;
}

static int vec3_cross(lua_State *L)
{
    double a[3], b[3], *p = vec_arg(L, 1, a), *q = vec_arg(L, 2, b);
    ql_push_vec3(L, (double[3]){p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0]});
    return 1;
}

static int vec3_length(lua_State *L)
{
    double a[3], *p = vec_arg(L, 1, a);
    lua_pushnumber(L, sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]));
    return 1;
}

/* The zero vector stays zero rather than turning into NaNs. */
static int vec3_normalized(lua_State *L)
{
    double a[3], *p = vec_arg(L, 1, a);
    double n = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
    double s = n > 0 ? 1.0 / n : 0.0;
    ql_push_vec3(L, (double[3]){p[0] * s, p[1] * s, p[2] * s});
    return 1;
}

static int vec3_lerp(lua_State *L)
{
    double a[3], b[3], *p = vec_arg(L, 1, a), *q = vec_arg(L, 2, b);
    double t = luaL_checknumber(L, 3);
    ql_push_vec3(L, (double[3]){p[0] + (q[0] - p[0]) * t, p[1] + (q[1] - p[1]) * t, p[2] + (q[2] - p[2]) * t});
    return 1;
}

static int vec3_unpack(lua_State *L)
{
    double *v = luaL_checkudata(L, 1, QL_VEC3);
    lua_pushnumber(L, v[0]);
    lua_pushnumber(L, v[1]);
    lua_pushnumber(L, v[2]);
    return 3;
}

/* ---- Quat ---- */

static void quat_mul(const double a[4], const double b[4], double out[4])
{
    out[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    out[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    out[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    out[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

static void quat_rotate(const double q[4], const double v[3], double out[3])
{
    /* v' = v + 2w (u x v) + 2 u x (u x v), u = (x, y, z) */
    const double *u = q + 1;
    double t[3] = {2 * (u[1] * v[2] - u[2] * v[1]), 2 * (u[2] * v[0] - u[0] * v[2]), 2 * (u[0] * v[1] - u[1] * v[0])};
    out[0] = v[0] + q[0] * t[0] + (u[1] * t[2] - u[2] * t[1]);
    out[1] = v[1] + q[0] * t[1] + (u[2] * t[0] - u[0] * t[2]);
    out[2] = v[2] + q[0] * t[2] + (u[0] * t[1] - u[1] * t[0]);
}

static int quat_call(lua_State *L)
{
    /* quarry.quat(w, x, y, z): argument 1 is the quat table itself. */
    double q[4] = {ql_check_finite(L, 2), ql_check_finite(L, 3), ql_check_finite(L, 4), ql_check_finite(L, 5)};
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(n > 1e-12))
        return luaL_error(L, "bad argument to 'quat' (quaternion must be non-zero)");
    for (int k = 0; k < 4; k++)
        q[k] /= n;
    ql_push_quat(L, q);
    return 1;
}

static int quat_from_axis_angle(lua_State *L)
{
    double axis[3];
    ql_check_vec3(L, 1, axis);
    double angle = ql_check_finite(L, 2);
    double n = sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
    if (!(n > 1e-12))
        return luaL_argerror(L, 1, "axis must be non-zero");
    double s = sin(angle / 2) / n;
    ql_push_quat(L, (double[4]){cos(angle / 2), axis[0] * s, axis[1] * s, axis[2] * s});
    return 1;
}

static int quat_from_euler(lua_State *L)
{
    double a[3] = {ql_check_finite(L, 1), ql_check_finite(L, 2), ql_check_finite(L, 3)};
    double qx[4] = {cos(a[0] / 2), sin(a[0] / 2), 0, 0};
    double qy[4] = {cos(a[1] / 2), 0, sin(a[1] / 2), 0};
    double qz[4] = {cos(a[2] / 2), 0, 0, sin(a[2] / 2)};
    double t[4], q[4];
    quat_mul(qy, qx, t);
    quat_mul(qz, t, q);
    ql_push_quat(L, q);
    return 1;
}

static int quat_index(lua_State *L)
{
    double *q = luaL_checkudata(L, 1, QL_QUAT);
    const char *k = lua_tostring(L, 2);
    if (k && k[0] && !k[1]) {
        const char *p = strchr("wxyz", k[0]);
        if (p) {
            lua_pushnumber(L, q[p - "wxyz"]);
            return 1;
        }
    }
    return ql_index_method(L);
}

static int quat_mul_meta(lua_State *L)
{
    double *q = luaL_checkudata(L, 1, QL_QUAT);
    double *r = luaL_testudata(L, 2, QL_QUAT);
    if (r) {
        double out[4];
        quat_mul(q, r, out);
        ql_push_quat(L, out);
        return 1;
    }
    double v[3], out[3];
    ql_check_vec3(L, 2, v);
    quat_rotate(q, v, out);
    ql_push_vec3(L, out);
    return 1;
}

static int quat_conjugate(lua_State *L)
{
    double *q = luaL_checkudata(L, 1, QL_QUAT);
    ql_push_quat(L, (double[4]){q[0], -q[1], -q[2], -q[3]});
    return 1;
}

static int quat_eq(lua_State *L)
{
    double *a = luaL_testudata(L, 1, QL_QUAT), *b = luaL_testudata(L, 2, QL_QUAT);
    lua_pushboolean(L, a && b && memcmp(a, b, 4 * sizeof(double)) == 0);
    return 1;
}

static int quat_tostring(lua_State *L)
{
    double *q = luaL_checkudata(L, 1, QL_QUAT);
    lua_pushfstring(L, "quat(%f, %f, %f, %f)", q[0], q[1], q[2], q[3]);
    return 1;
}

int ql_open_vec(lua_State *L)
{
    static const luaL_Reg vec_methods[] = {{"dot", vec3_dot},
                                           {"cross", vec3_cross},
                                           {"length", vec3_length},
                                           {"normalized", vec3_normalized},
                                           {"lerp", vec3_lerp},
                                           {"unpack", vec3_unpack},
                                           {NULL, NULL}};
    static const luaL_Reg vec_meta[] = {{"__index", vec3_index}, {"__newindex", vec3_newindex},
                                        {"__add", vec3_add},     {"__sub", vec3_sub},
                                        {"__mul", vec3_mul},     {"__div", vec3_div},
                                        {"__unm", vec3_unm},     {"__eq", vec3_eq},
                                        {"__tostring", vec3_tostring}, {NULL, NULL}};
    static const luaL_Reg quat_methods[] = {{"conjugate", quat_conjugate}, {NULL, NULL}};
    static const luaL_Reg quat_meta[] = {{"__index", quat_index},
                                         {"__mul", quat_mul_meta},
                                         {"__eq", quat_eq},
                                         {"__tostring", quat_tostring},
                                         {NULL, NULL}};
    ql_new_class(L, QL_VEC3, vec_methods, vec_meta);
    ql_new_class(L, QL_QUAT, quat_methods, quat_meta);

    lua_pushcfunction(L, vec3_new);
    lua_newtable(L); /* quarry.quat: callable table */
    lua_pushcfunction(L, quat_from_axis_angle);
    lua_setfield(L, -2, "from_axis_angle");
    lua_pushcfunction(L, quat_from_euler);
    lua_setfield(L, -2, "from_euler");
    lua_newtable(L);
    lua_pushcfunction(L, quat_call);
    lua_setfield(L, -2, "__call");
    lua_setmetatable(L, -2);
    return 2;
}
