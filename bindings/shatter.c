/* Body:shatter (API.md, Bodies; engine: physics/bodies.h q_body_shatter).
 *
 *   b:shatter{at = point, pieces = 16, seed = 1, impulse = nil, gpu = false}
 *     -> list of fragment Bodies
 *
 * The body is replaced by Voronoi fragments of its shape: sites cluster
 * around `at` (a world point; default the centre of mass). impulse is either
 * a number, N s spread over the fragments and pushing each straight away
 * from `at` (a burst), or a vector, one impulse shared by the fragments in
 * proportion to their mass. gpu = true computes the cells with the host's
 * compute shaders (needs the host program and GL 4.3). Errors: a destroyed
 * or static body, pieces outside 1..4096, non-finite values. A fracture
 * that cannot be made (no site fits inside the shape) returns nil, message
 * and leaves the body as it was. */
#include "common.h"

#include "geom/fracture.h"
#include "physics/bodies.h"
#include "world/world.h"

#include <math.h>
#include <string.h>

static int body_shatter(lua_State *L)
{
    q_handle h;
    q_bodies *b = ql_check_body(L, 1, &h);
    q_shatter_params p = q_default_shatter_params();
    if (!lua_isnoneornil(L, 2)) {
        static const char *const fields[] = {"at", "pieces", "seed", "impulse", "gpu", NULL};
        luaL_checktype(L, 2, LUA_TTABLE);
        ql_check_fields(L, 2, fields);
        p.has_at = ql_field_vec3(L, 2, 2, "at", p.at);
        lua_Integer v;
        if (ql_field_integer(L, 2, 2, "pieces", &v)) {
            if (v < 1 || v > Q_FRACTURE_MAX_PIECES)
                return luaL_argerror(L, 2, lua_pushfstring(L, "field 'pieces' must be 1..%d, got %I",
                                                           Q_FRACTURE_MAX_PIECES, (LUAI_UACINT)v));
            p.pieces = (int)v;
        }
        if (ql_field_integer(L, 2, 2, "seed", &v))
            p.seed = (uint64_t)v;
        ql_field_boolean(L, 2, 2, "gpu", &p.gpu);
        lua_getfield(L, 2, "impulse");
        if (lua_type(L, -1) == LUA_TNUMBER) {
            p.burst = lua_tonumber(L, -1);
            if (!(isfinite(p.burst) && p.burst >= 0))
                return luaL_argerror(L, 2, "field 'impulse' must be a finite number >= 0 or a vector");
        } else if (!lua_isnil(L, -1) && !ql_to_vec3(L, -1, p.impulse)) {
            return luaL_argerror(L, 2, "field 'impulse' must be a number (a burst, N s) or a vector");
        }
        lua_pop(L, 1);
        if (!(isfinite(p.impulse[0]) && isfinite(p.impulse[1]) && isfinite(p.impulse[2])))
            return luaL_argerror(L, 2, "field 'impulse' must be finite");
    }
    q_body_state st;
    q_body_get(b, h, &st);
    if (st.is_static)
        return luaL_argerror(L, 1, "static bodies do not shatter");
    if (p.gpu && !q_voronoi_gpu)
        return luaL_argerror(L, 2, "gpu = true needs the host program with a GL 4.3 context");
    q_handle *out = lua_newuserdatauv(L, (size_t)p.pieces * sizeof *out, 0);
    char err[256];
    double t0 = q_profile_now();
    size_t n = q_body_shatter(b, h, &p, out, (size_t)p.pieces, err, sizeof err);
    lua_getiuservalue(L, 1, 1); /* the World userdata, for the frame profile */
    q_world_profile_call(ql_check_world(L, lua_gettop(L)), Q_PROFILE_FRACTURE, t0);
    lua_pop(L, 1);
    if (n == 0) {
        lua_pushnil(L);
        lua_pushstring(L, err);
        return 2;
    }
    lua_getiuservalue(L, 1, 1); /* the World userdata */
    int world_idx = lua_gettop(L);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        ql_push_body(L, world_idx, out[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

void ql_open_shatter(lua_State *L)
{
    static const luaL_Reg methods[] = {{"shatter", body_shatter}, {NULL, NULL}};
    ql_add_methods(L, QL_BODY, methods);
}
