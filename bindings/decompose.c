/* Mesh:decompose: HACD convex decomposition (engine/geom/hacd.h).
 *
 *   m:decompose{ concavity = 10, connect_dist = 0.1, max_hulls = nil,
 *                max_vertices = nil, trace = false, scale = 1000,
 *                sample_spacing = nil, volume_weight = 0.1 } -> {Mesh, ...}, info
 *
 * Distances are in units of the mesh scaled so its largest bounding-box side
 * is `scale` (design note 001's ScaleFactor): concavity 10 is 1% of the
 * mesh's size. connect_dist is the one quantization distance (weld,
 * coplanarity, joining components closer than it). max_hulls merges on past
 * the concavity, cheapest first, until at most that many hulls are left;
 * max_vertices (>= 4) caps each hull's vertices. volume_weight (>= 0) adds
 * that much of the cube root of the hull volume a merge adds to its cost
 * (0: by concavity error alone; hulls then overlap more).
 *
 * info = {hulls =, max_concavity =, volume_ratio = (nil for open meshes),
 *         time_ms =, merges =, samples =, sample_spacing =, components =,
 *         concavities = {per hull}, trace = {{a =, b =, error =}, ...}}
 * trace (with trace = true) lists every merge in order: a and b name the
 * merged clusters by a 1-based triangle index of each, the result keeps a;
 * triangle_hull (also with trace = true) gives each triangle's hull index,
 * false for a triangle dropped because its corners weld into one point.
 * A mesh the engine cannot decompose (non-finite coordinates, every
 * triangle degenerate) gives nil, message.
 */
#include "common.h"

#include "geom/hacd.h"
#include "mesh/mesh.h"

#include <math.h>
#include <string.h>

#define QL_HACD_RESULT "quarry.HacdResult"

static int result_gc(lua_State *L)
{
    q_hacd_free(luaL_checkudata(L, 1, QL_HACD_RESULT));
    return 0;
}

static int mesh_decompose(lua_State *L)
{
    q_mesh *m = ql_check_mesh(L, 1);
    lua_settop(L, 2);
    q_hacd_params p = q_default_hacd_params();
    if (!lua_isnil(L, 2)) {
        static const char *const fields[] = {"concavity", "connect_dist", "max_hulls", "max_vertices", "trace",
                                             "scale", "sample_spacing", "volume_weight", NULL};
        luaL_checktype(L, 2, LUA_TTABLE);
        ql_check_fields(L, 2, fields);
        double v;
        lua_Integer i;
        if (ql_field_number(L, 2, 2, "concavity", &v)) {
            if (!(v >= 0))
                luaL_argerror(L, 2, lua_pushfstring(L, "field 'concavity' must be >= 0, got %f", v));
            p.concavity = v;
        }
        if (ql_field_number(L, 2, 2, "scale", &v)) {
            if (!(v > 0))
                luaL_argerror(L, 2, lua_pushfstring(L, "field 'scale' must be > 0, got %f", v));
            p.scale = v;
        }
        if (ql_field_number(L, 2, 2, "connect_dist", &v)) {
            if (!(v > 0) || !(v < p.scale))
                luaL_argerror(L, 2, lua_pushfstring(L, "field 'connect_dist' must be > 0 and below scale, got %f", v));
            p.connect_dist = v;
        }
        if (ql_field_number(L, 2, 2, "sample_spacing", &v)) {
            if (!(v > 0))
                luaL_argerror(L, 2, lua_pushfstring(L, "field 'sample_spacing' must be > 0, got %f", v));
            p.sample_spacing = v;
        }
        if (ql_field_number(L, 2, 2, "volume_weight", &v)) {
            if (!(v >= 0))
                luaL_argerror(L, 2, lua_pushfstring(L, "field 'volume_weight' must be >= 0, got %f", v));
            p.volume_weight = v;
        }
        if (ql_field_integer(L, 2, 2, "max_hulls", &i)) {
            if (i < 1)
                luaL_argerror(L, 2, lua_pushfstring(L, "field 'max_hulls' must be >= 1, got %I", i));
            p.max_hulls = (size_t)i;
        }
        if (ql_field_integer(L, 2, 2, "max_vertices", &i)) {
            if (i < 4 || i > (lua_Integer)Q_HULL_MAX_POINTS)
                luaL_argerror(L, 2, lua_pushfstring(L, "field 'max_vertices' must be >= 4, got %I", i));
            p.max_vertices = (size_t)i;
        }
        ql_field_boolean(L, 2, 2, "trace", &p.trace);
    }
    /* The result lives in a userdata whose __gc frees it, so that a Lua
     * memory error while building the tables below leaks nothing. */
    q_hacd_result *r = lua_newuserdatauv(L, sizeof *r, 0); /* index 3 */
    memset(r, 0, sizeof *r);
    if (luaL_newmetatable(L, QL_HACD_RESULT)) {
        lua_pushcfunction(L, result_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    char err[256];
    q_status st = q_hacd(m, &p, r, err, sizeof err);
    if (st == Q_ERR_MEMORY)
        return luaL_error(L, "decompose: out of memory");
    if (st != Q_OK) {
        lua_pushnil(L);
        lua_pushfstring(L, "decompose: %s", err);
        return 2;
    }
    lua_createtable(L, (int)r->hull_count, 0); /* 4: hulls */
    for (size_t i = 0; i < r->hull_count; i++) {
        ql_push_mesh(L, r->hulls[i].mesh);
        r->hulls[i].mesh = NULL; /* owned by the userdata now */
        lua_rawseti(L, 4, (lua_Integer)i + 1);
    }
    lua_createtable(L, 0, 10); /* 5: info */
    lua_pushinteger(L, (lua_Integer)r->hull_count);
    lua_setfield(L, 5, "hulls");
    lua_pushnumber(L, r->max_concavity);
    lua_setfield(L, 5, "max_concavity");
    if (isfinite(r->volume_ratio)) {
        lua_pushnumber(L, r->volume_ratio);
        lua_setfield(L, 5, "volume_ratio");
    }
    lua_pushnumber(L, r->time_ms);
    lua_setfield(L, 5, "time_ms");
    lua_pushinteger(L, (lua_Integer)r->merges);
    lua_setfield(L, 5, "merges");
    lua_pushinteger(L, (lua_Integer)r->samples);
    lua_setfield(L, 5, "samples");
    lua_pushnumber(L, r->sample_spacing);
    lua_setfield(L, 5, "sample_spacing");
    lua_pushinteger(L, (lua_Integer)r->components);
    lua_setfield(L, 5, "components");
    lua_createtable(L, (int)r->hull_count, 0);
    for (size_t i = 0; i < r->hull_count; i++) {
        lua_pushnumber(L, r->hulls[i].concavity);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, 5, "concavities");
    if (p.trace) {
        lua_createtable(L, (int)r->merges, 0);
        for (size_t i = 0; i < r->merges; i++) {
            lua_createtable(L, 0, 3);
            lua_pushinteger(L, (lua_Integer)r->trace[i].a + 1);
            lua_setfield(L, -2, "a");
            lua_pushinteger(L, (lua_Integer)r->trace[i].b + 1);
            lua_setfield(L, -2, "b");
            lua_pushnumber(L, r->trace[i].error);
            lua_setfield(L, -2, "error");
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_setfield(L, 5, "trace");
        lua_createtable(L, (int)r->triangle_count, 0);
        for (size_t t = 0; t < r->triangle_count; t++) {
            if (r->triangle_hull[t] == UINT32_MAX)
                lua_pushboolean(L, 0);
            else
                lua_pushinteger(L, (lua_Integer)r->triangle_hull[t] + 1);
            lua_rawseti(L, -2, (lua_Integer)t + 1);
        }
        lua_setfield(L, 5, "triangle_hull");
    }
    q_hacd_free(r);
    return 2;
}

void ql_open_decompose(lua_State *L)
{
    static const luaL_Reg methods[] = {{"decompose", mesh_decompose}, {NULL, NULL}};
    ql_add_methods(L, QL_MESH, methods);
}
