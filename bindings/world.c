/* quarry.world: World userdata holding a generational handle to an engine
 * world. The userdata owns the world: __gc, __close and destroy() free it,
 * and any later use raises "attempt to use a destroyed world". Its uservalue
 * caches the Terrain userdata so `world.terrain` is always the same object.
 */
#include "common.h"

#include "world/world.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef struct lworld {
    q_handle h;
} lworld;

struct q_world *ql_check_world(lua_State *L, int idx)
{
    lworld *u = luaL_checkudata(L, idx, QL_WORLD);
    q_world *w = q_world_lookup(u->h);
    if (!w)
        luaL_error(L, "attempt to use a destroyed world");
    return w;
}

/* Wraps an engine world in a new World userdata (taking ownership). */
static void push_world(lua_State *L, q_world *w)
{
    lworld *u = lua_newuserdatauv(L, sizeof *u, 1);
    u->h = Q_NULL_HANDLE;
    luaL_setmetatable(L, QL_WORLD);
    u->h = q_world_register(w);
    if (q_handle_is_null(u->h)) {
        q_world_destroy(w);
        luaL_error(L, "out of memory");
    }
    ql_push_terrain(L, -1);
    lua_setiuservalue(L, -2, 1);
}

static int world_new(lua_State *L)
{
    static const char *const fields[] = {"voxel_size", "gravity", "step", "substeps", "seed", "threads", NULL};
    q_world_def def = q_default_world_def();
    if (!lua_isnoneornil(L, 1)) {
        ql_check_fields(L, 1, fields);
        lua_Integer i;
        ql_field_number(L, 1, 1, "voxel_size", &def.voxel_size);
        ql_field_vec3(L, 1, 1, "gravity", def.gravity);
        ql_field_number(L, 1, 1, "step", &def.step);
        if (ql_field_integer(L, 1, 1, "substeps", &i)) {
            if (i < 1 || i > 64)
                return luaL_argerror(L, 1, "field 'substeps' must be 1..64");
            def.substeps = (int)i;
        }
        if (ql_field_integer(L, 1, 1, "seed", &i))
            def.seed = (uint64_t)i;
        if (ql_field_integer(L, 1, 1, "threads", &i)) {
            if (i < 0 || i > 64)
                return luaL_argerror(L, 1, "field 'threads' must be 0..64 worker threads");
            def.threads = (int)i;
        }
    }
    char err[256];
    q_world *w = q_world_create(&def, err, sizeof err);
    if (!w)
        return luaL_argerror(L, 1, err);
    push_world(L, w);
    return 1;
}

static int world_load(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    char err[512];
    q_world *w = q_world_load(path, err, sizeof err);
    if (!w) {
        luaL_pushfail(L);
        lua_pushstring(L, err);
        return 2;
    }
    push_world(L, w);
    return 1;
}

static int world_step(lua_State *L)
{
    q_world *w = ql_check_world(L, 1);
    double dt = luaL_checknumber(L, 2);
    int n = q_world_step(w, dt);
    if (n < 0)
        return luaL_argerror(L, 2, lua_pushfstring(L, "dt must be finite and >= 0, got %f", dt));
    lua_pushinteger(L, n);
    return 1;
}

static int world_time(lua_State *L)
{
    lua_pushnumber(L, q_world_time(ql_check_world(L, 1)));
    return 1;
}

static int world_frame(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)q_world_frame(ql_check_world(L, 1)));
    return 1;
}

static int world_hash(lua_State *L)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, q_world_hash(ql_check_world(L, 1)));
    lua_pushstring(L, hex);
    return 1;
}

static int world_stats(lua_State *L)
{
    q_world_stats s = q_world_get_stats(ql_check_world(L, 1));
    lua_createtable(L, 0, 6);
    lua_pushinteger(L, (lua_Integer)s.chunks);
    lua_setfield(L, -2, "chunks");
    lua_pushinteger(L, (lua_Integer)s.dense_chunks);
    lua_setfield(L, -2, "dense_chunks");
    lua_pushinteger(L, (lua_Integer)s.voxel_bytes);
    lua_setfield(L, -2, "voxel_bytes");
    lua_pushinteger(L, (lua_Integer)s.memory);
    lua_setfield(L, -2, "memory");
    lua_pushinteger(L, (lua_Integer)s.bodies);
    lua_setfield(L, -2, "bodies");
    lua_pushinteger(L, (lua_Integer)s.awake);
    lua_setfield(L, -2, "awake");
    return 1;
}

static int world_save(lua_State *L)
{
    q_world *w = ql_check_world(L, 1);
    const char *path = luaL_checkstring(L, 2);
    char err[512];
    if (q_world_save(w, path, err, sizeof err) != Q_OK) {
        luaL_pushfail(L);
        lua_pushstring(L, err);
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int world_destroy(lua_State *L)
{
    lworld *u = luaL_checkudata(L, 1, QL_WORLD);
    q_world *w = q_world_lookup(u->h);
    if (w) {
        q_world_unregister(u->h);
        q_world_destroy(w);
    }
    u->h = Q_NULL_HANDLE;
    return 0;
}

static int world_valid(lua_State *L)
{
    lworld *u = luaL_checkudata(L, 1, QL_WORLD);
    lua_pushboolean(L, q_world_lookup(u->h) != NULL);
    return 1;
}

static int world_settings(lua_State *L)
{
    const q_world_def *d = q_world_get_def(ql_check_world(L, 1));
    lua_createtable(L, 0, 5);
    lua_pushnumber(L, d->voxel_size);
    lua_setfield(L, -2, "voxel_size");
    ql_push_vec3(L, d->gravity);
    lua_setfield(L, -2, "gravity");
    lua_pushnumber(L, d->step);
    lua_setfield(L, -2, "step");
    lua_pushinteger(L, d->substeps);
    lua_setfield(L, -2, "substeps");
    lua_pushinteger(L, (lua_Integer)d->seed);
    lua_setfield(L, -2, "seed");
    return 1;
}

static int world_index(lua_State *L)
{
    luaL_checkudata(L, 1, QL_WORLD);
    const char *k = lua_tostring(L, 2);
    if (k && strcmp(k, "terrain") == 0) {
        ql_check_world(L, 1);
        lua_getiuservalue(L, 1, 1);
        return 1;
    }
    lua_getmetatable(L, 1);
    lua_getfield(L, -1, "methods");
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
}

static int world_tostring(lua_State *L)
{
    lworld *u = luaL_checkudata(L, 1, QL_WORLD);
    q_world *w = q_world_lookup(u->h);
    if (w)
        lua_pushfstring(L, "World (frame %I)", (lua_Integer)q_world_frame(w));
    else
        lua_pushliteral(L, "World (destroyed)");
    return 1;
}

/* Test hooks (quarry._test): not part of the API contract. */
static int test_fail_save_after(lua_State *L)
{
    q_world_debug_fail_save_after((long)luaL_checkinteger(L, 1));
    return 0;
}

int ql_open_world(lua_State *L)
{
    static const luaL_Reg methods[] = {{"step", world_step},       {"time", world_time},
                                       {"frame", world_frame},     {"hash", world_hash},
                                       {"stats", world_stats},     {"save", world_save},
                                       {"destroy", world_destroy}, {"valid", world_valid},
                                       {"settings", world_settings}, {NULL, NULL}};
    static const luaL_Reg meta[] = {{"__index", world_index},
                                    {"__gc", world_destroy},
                                    {"__close", world_destroy},
                                    {"__tostring", world_tostring},
                                    {NULL, NULL}};
    ql_new_class(L, QL_WORLD, methods, meta);
    static const luaL_Reg funcs[] = {{"new", world_new}, {"load", world_load}, {NULL, NULL}};
    luaL_newlib(L, funcs);
    return 1;
}

void ql_push_test_hooks(lua_State *L)
{
    lua_newtable(L);
    lua_pushcfunction(L, test_fail_save_after);
    lua_setfield(L, -2, "fail_save_after");
}
