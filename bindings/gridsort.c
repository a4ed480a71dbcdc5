/* quarry.gridsort and the GridSort type (API.md, Meshes and geometry).
 *
 *   quarry.gridsort.new(mesh [, {axis = {0, -1, 0}, resolution = 2048}])
 *   gs:raycast(origin, direction, max_distance) -> {position, normal,
 *       distance, triangle} | nil
 *   gs:raycast_batch(origins, directions, max_distance) -> {distance | false}
 *   gs:bytes() gs:triangle_count()
 *
 * A GridSort copies the mesh's triangles, so it needs nothing from the Mesh
 * after new. Like a Mesh it is a value outside any world: the userdata holds
 * the engine pointer itself, and __gc / __close free it once. Rays are
 * converted exactly as Mesh:raycast converts them (float origin, direction
 * normalised in double, then float), so both return the same distances.
 */
#include "common.h"

#include "geom/gridsort.h"
#include "mesh/mesh.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define QL_GRIDSORT "quarry.GridSort"
#define QL_MESH "quarry.Mesh" /* bindings/mesh.c: the userdata starts with its q_mesh pointer */

typedef struct lgridsort {
    q_gridsort *gs;
} lgridsort;

static q_gridsort *check_gridsort(lua_State *L, int idx)
{
    lgridsort *u = luaL_checkudata(L, idx, QL_GRIDSORT);
    if (!u->gs)
        luaL_argerror(L, idx, "attempt to use a closed GridSort");
    return u->gs;
}

static int gridsort_new(lua_State *L)
{
    q_mesh *m = *(q_mesh **)luaL_checkudata(L, 1, QL_MESH);
    if (!m)
        return luaL_argerror(L, 1, "the Mesh has been freed");
    double axis[3] = {0, -1, 0};
    lua_Integer resolution = Q_GRIDSORT_MAX_RESOLUTION;
    if (!lua_isnoneornil(L, 2)) {
        static const char *const fields[] = {"axis", "resolution", NULL};
        ql_check_fields(L, 2, fields);
        ql_field_vec3(L, 2, 2, "axis", axis);
        if (ql_field_integer(L, 2, 2, "resolution", &resolution) &&
            (resolution < 1 || resolution > Q_GRIDSORT_MAX_RESOLUTION))
            return luaL_argerror(L, 2, lua_pushfstring(L, "field 'resolution' must be in 1..%d, got %I",
                                                       Q_GRIDSORT_MAX_RESOLUTION, resolution));
    }
    double len = sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
    if (!(len > 0) || !isfinite(len))
        return luaL_argerror(L, 2, "field 'axis' must be a finite non-zero vector");
    float axisf[3] = {(float)(axis[0] / len), (float)(axis[1] / len), (float)(axis[2] / len)};

    lgridsort *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->gs = NULL;
    luaL_setmetatable(L, QL_GRIDSORT);
    char err[256];
    q_status st = q_gridsort_build(&u->gs, m->positions, m->vertex_count, m->indices, m->index_count, axisf,
                                   (int)resolution, err, sizeof err);
    if (st != Q_OK)
        return luaL_error(L, "gridsort.new: %s", err);
    return 1;
}

/* A Lua max distance as the largest float <= it, so that a float t passes
 * t <= max exactly when it passes the double comparison Mesh:raycast makes. */
static float max_to_float(double m)
{
    float f = (float)m;
    return (double)f > m ? nextafterf(f, 0.0f) : f;
}

static double check_max(lua_State *L, int idx)
{
    double m = luaL_checknumber(L, idx);
    if (!(m >= 0))
        luaL_argerror(L, idx, lua_pushfstring(L, "max_distance must be >= 0, got %s", luaL_tolstring(L, idx, NULL)));
    return m;
}

/* Unit direction as Mesh:raycast makes it; false for a zero vector. */
static bool unit_dir(const double d[3], double *len, float out[3])
{
    *len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (!(*len > 0) || !isfinite(*len))
        return false;
    for (int k = 0; k < 3; k++)
        out[k] = (float)(d[k] / *len);
    return true;
}

static int gridsort_raycast(lua_State *L)
{
    q_gridsort *gs = check_gridsort(L, 1);
    double o[3], d[3], len;
    ql_check_vec3(L, 2, o);
    ql_check_vec3(L, 3, d);
    float of[3] = {(float)o[0], (float)o[1], (float)o[2]}, df[3];
    if (!unit_dir(d, &len, df))
        return luaL_argerror(L, 3, "direction must be non-zero");
    double maxd = check_max(L, 4);
    float t;
    uint32_t tri;
    if (!q_gridsort_raycast(gs, of, df, max_to_float(maxd), &t, &tri)) {
        lua_pushnil(L);
        return 1;
    }
    const float *a = q_gridsort_triangle(gs, tri), *b = a + 3, *c = a + 6;
    double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
    double nl = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    double sign = (n[0] * d[0] + n[1] * d[1] + n[2] * d[2]) > 0 ? -1 : 1;
    if (!(nl > 0))
        nl = 1; /* unreachable: q_ray_triangle misses degenerate triangles */
    lua_createtable(L, 0, 4);
    ql_push_vec3(L, (double[3]){o[0] + d[0] / len * t, o[1] + d[1] / len * t, o[2] + d[2] / len * t});
    lua_setfield(L, -2, "position");
    ql_push_vec3(L, (double[3]){sign * n[0] / nl, sign * n[1] / nl, sign * n[2] / nl});
    lua_setfield(L, -2, "normal");
    lua_pushnumber(L, t);
    lua_setfield(L, -2, "distance");
    lua_pushinteger(L, (lua_Integer)tri + 1);
    lua_setfield(L, -2, "triangle");
    return 1;
}

static int gridsort_raycast_batch(lua_State *L)
{
    q_gridsort *gs = check_gridsort(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TTABLE);
    double maxd = check_max(L, 4);
    lua_Integer n = luaL_len(L, 2);
    if (luaL_len(L, 3) != n)
        return luaL_argerror(L, 3, "origins and directions must have the same length");
    if ((lua_Unsigned)n > (1u << 26))
        return luaL_argerror(L, 2, "too many rays (at most 2^26 per call)");
    /* Every ray is checked before any is cast; the arrays are Lua-owned. */
    size_t count = (size_t)n;
    float *rays = lua_newuserdatauv(L, (count ? count : 1) * 6 * sizeof(float), 0);
    float *t = lua_newuserdatauv(L, (count ? count : 1) * sizeof(float), 0);
    for (size_t i = 0; i < count; i++) {
        double o[3], d[3], len;
        lua_rawgeti(L, 2, (lua_Integer)i + 1);
        lua_rawgeti(L, 3, (lua_Integer)i + 1);
        if (!ql_to_vec3(L, -2, o) || !isfinite(o[0] + o[1] + o[2]))
            return luaL_argerror(L, 2, lua_pushfstring(L, "origins[%I] is not a finite point", (lua_Integer)i + 1));
        if (!ql_to_vec3(L, -1, d) || !isfinite(d[0] + d[1] + d[2]) || !unit_dir(d, &len, rays + 3 * (count + i)))
            return luaL_argerror(L, 3, lua_pushfstring(L, "directions[%I] is not a finite non-zero vector",
                                                       (lua_Integer)i + 1));
        lua_pop(L, 2);
        for (int k = 0; k < 3; k++)
            rays[3 * i + k] = (float)o[k];
    }
    q_gridsort_raycast_batch(gs, rays, rays + 3 * count, count, max_to_float(maxd), t);
    lua_createtable(L, (int)count, 0);
    for (size_t i = 0; i < count; i++) {
        if (t[i] >= 0)
            lua_pushnumber(L, t[i]);
        else
            lua_pushboolean(L, 0);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int gridsort_bytes(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)q_gridsort_bytes(check_gridsort(L, 1)));
    return 1;
}

static int gridsort_triangle_count(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)q_gridsort_triangle_count(check_gridsort(L, 1)));
    return 1;
}

static int gridsort_gc(lua_State *L)
{
    lgridsort *u = luaL_checkudata(L, 1, QL_GRIDSORT);
    q_gridsort_free(u->gs);
    u->gs = NULL;
    return 0;
}

static int gridsort_tostring(lua_State *L)
{
    lgridsort *u = luaL_checkudata(L, 1, QL_GRIDSORT);
    if (!u->gs) {
        lua_pushliteral(L, "GridSort (closed)");
        return 1;
    }
    int levels, nu, nv;
    q_gridsort_info(u->gs, &levels, &nu, &nv);
    lua_pushfstring(L, "GridSort (%I triangles, %dx%d finest cells, %d levels kept, %I bytes)",
                    (lua_Integer)q_gridsort_triangle_count(u->gs), nu, nv, levels,
                    (lua_Integer)q_gridsort_bytes(u->gs));
    return 1;
}

int ql_open_gridsort(lua_State *L)
{
    static const luaL_Reg methods[] = {{"raycast", gridsort_raycast},
                                       {"raycast_batch", gridsort_raycast_batch},
                                       {"bytes", gridsort_bytes},
                                       {"triangle_count", gridsort_triangle_count},
                                       {NULL, NULL}};
    static const luaL_Reg meta[] = {
        {"__gc", gridsort_gc}, {"__close", gridsort_gc}, {"__tostring", gridsort_tostring}, {NULL, NULL}};
    ql_new_class(L, QL_GRIDSORT, methods, meta);
    static const luaL_Reg funcs[] = {{"new", gridsort_new}, {NULL, NULL}};
    luaL_newlib(L, funcs);
    return 1;
}
