/* quarry.hull: convex hulls of point sets (engine/geom/quickhull.h).
 *
 *   quarry.hull(points [, {epsilon = s}]) -> Mesh, info
 *
 * points: an array of points (Vec3, {x, y, z} or {x =, y =, z =}) or a flat
 * array of numbers {x1, y1, z1, x2, ...}; at least one point, all finite.
 * epsilon: the quantization distance s (> 0); default 1e-6 of the points'
 * bounding-box diagonal. Points within s of a plane are coplanar, and
 * points within s of each other are one point.
 *
 * The Mesh, by info.shape:
 *   "solid"    closed and welded (m:is_closed()), wound counter-clockwise
 *              seen from outside, m:volume() > 0;
 *   "polygon"  all points within s of a plane (info.normal): the convex
 *              polygon triangulated on both sides, closed, volume 0;
 *   "segment"  all points within s of a line: its 2 end vertices, no
 *              triangles;
 *   "point"    all points within s of one another: 1 vertex, no triangles.
 * info = {shape =, epsilon = s used, normal = Vec3 (polygon only)}.
 *
 * m:hull([opts]) (mesh.c) takes the mesh's vertices through the same path.
 */
#include "common.h"

#include "geom/quickhull.h"
#include "mesh/mesh.h"

#include <math.h>
#include <string.h>

/* Reads the points at idx (argument arg) into a Lua-owned buffer; returns
 * the count. Raises an argument error naming the bad entry. */
static size_t read_points(lua_State *L, int idx, int arg, double **out)
{
    if (!lua_istable(L, idx))
        luaL_typeerror(L, arg, "table of points");
    lua_Integer n = luaL_len(L, idx);
    if (n <= 0)
        luaL_argerror(L, arg, "points must not be empty");
    bool flat = lua_rawgeti(L, idx, 1) == LUA_TNUMBER;
    lua_pop(L, 1);
    if (flat && n % 3)
        luaL_argerror(L, arg, "a flat array of points needs 3 numbers per point");
    size_t count = flat ? (size_t)n / 3 : (size_t)n;
    if (count > Q_HULL_MAX_POINTS)
        luaL_argerror(L, arg, "too many points (the limit is 16777216)");
    double *p = lua_newuserdatauv(L, count * 3 * sizeof(double), 0);
    for (size_t i = 0; i < count; i++) {
        double v[3];
        if (flat) {
            for (int a = 0; a < 3; a++) {
                lua_rawgeti(L, idx, (lua_Integer)(3 * i + a) + 1);
                int isnum = 0;
                v[a] = lua_tonumberx(L, -1, &isnum);
                lua_pop(L, 1);
                if (!isnum)
                    luaL_argerror(L, arg,
                                  lua_pushfstring(L, "points[%I] is not a number", (lua_Integer)(3 * i + a) + 1));
            }
        } else {
            lua_rawgeti(L, idx, (lua_Integer)i + 1);
            if (!ql_to_vec3(L, -1, v))
                luaL_argerror(L, arg,
                              lua_pushfstring(L, "points[%I] is not a point (Vec3 or {x, y, z})", (lua_Integer)i + 1));
            lua_pop(L, 1);
        }
        for (int a = 0; a < 3; a++)
            if (!isfinite(v[a]) || fabs(v[a]) > 1e30)
                luaL_argerror(L, arg, lua_pushfstring(L, "point %I has a non-finite coordinate", (lua_Integer)i + 1));
        memcpy(p + 3 * i, v, sizeof v);
    }
    *out = p;
    return count;
}

int ql_hull_points(lua_State *L, const double *points, size_t count, int opts)
{
    q_hull_def def = q_default_hull_def();
    if (!lua_isnoneornil(L, opts)) {
        static const char *const fields[] = {"epsilon", NULL};
        ql_check_fields(L, opts, fields);
        double eps;
        if (ql_field_number(L, opts, opts, "epsilon", &eps)) {
            if (!(eps > 0))
                luaL_argerror(L, opts, lua_pushfstring(L, "field 'epsilon' must be > 0, got %f", eps));
            def.epsilon = eps;
        }
    }
    q_hull_info info;
    q_status st;
    char err[256];
    q_mesh *m = q_hull_mesh(points, count, &def, &info, &st, err, sizeof err);
    if (!m)
        return luaL_error(L, "hull: %s", err);
    ql_push_mesh(L, m);
    static const char *const shapes[] = {"point", "segment", "polygon", "solid"};
    lua_createtable(L, 0, 3);
    lua_pushstring(L, shapes[info.shape]);
    lua_setfield(L, -2, "shape");
    lua_pushnumber(L, info.epsilon);
    lua_setfield(L, -2, "epsilon");
    if (info.shape == Q_HULL_POLYGON) {
        ql_push_vec3(L, info.normal);
        lua_setfield(L, -2, "normal");
    }
    return 2;
}

int ql_hull(lua_State *L)
{
    lua_settop(L, 2); /* the options stay at 2 whatever is pushed after */
    double *points;
    size_t count = read_points(L, 1, 1, &points);
    return ql_hull_points(L, points, count, 2);
}
