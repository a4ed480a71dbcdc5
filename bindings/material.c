/* quarry.material: define(def) -> table, get(name) -> table, list() -> names. */
#include "common.h"

#include "voxel/material.h"

#include <string.h>

static void push_material(lua_State *L, const q_material *m)
{
    lua_createtable(L, 0, 9);
    lua_pushstring(L, m->name);
    lua_setfield(L, -2, "name");
    lua_pushnumber(L, m->density);
    lua_setfield(L, -2, "density");
    lua_pushnumber(L, m->friction);
    lua_setfield(L, -2, "friction");
    lua_pushnumber(L, m->restitution);
    lua_setfield(L, -2, "restitution");
    lua_createtable(L, 3, 0);
    for (int c = 0; c < 3; c++) {
        lua_pushnumber(L, m->color[c]);
        lua_rawseti(L, -2, c + 1);
    }
    lua_setfield(L, -2, "color");
    lua_pushboolean(L, m->brittle);
    lua_setfield(L, -2, "brittle");
    lua_pushnumber(L, m->strength);
    lua_setfield(L, -2, "strength");
    lua_pushboolean(L, m->liquid);
    lua_setfield(L, -2, "liquid");
}

static int material_define(lua_State *L)
{
    static const char *const fields[] = {"name",    "density", "friction", "restitution", "color",
                                         "brittle", "strength", "liquid",  NULL};
    ql_check_fields(L, 1, fields);
    q_material m = q_default_material();
    if (lua_getfield(L, 1, "name") != LUA_TSTRING)
        return luaL_argerror(L, 1, "field 'name' must be a string");
    size_t len;
    const char *name = lua_tolstring(L, -1, &len);
    if (strlen(name) != len)
        return luaL_argerror(L, 1, "field 'name' must not contain zero bytes");
    if (len > Q_MATERIAL_NAME_MAX)
        return luaL_argerror(L, 1, lua_pushfstring(L, "field 'name' is longer than %d characters",
                                                   Q_MATERIAL_NAME_MAX));
    memcpy(m.name, name, len + 1);
    lua_pop(L, 1);
    double v;
    if (ql_field_number(L, 1, 1, "density", &v))
        m.density = (float)v;
    if (ql_field_number(L, 1, 1, "friction", &v))
        m.friction = (float)v;
    if (ql_field_number(L, 1, 1, "restitution", &v))
        m.restitution = (float)v;
    if (ql_field_number(L, 1, 1, "strength", &v))
        m.strength = (float)v;
    ql_field_boolean(L, 1, 1, "brittle", &m.brittle);
    ql_field_boolean(L, 1, 1, "liquid", &m.liquid);
    if (lua_getfield(L, 1, "color") != LUA_TNIL) {
        if (!lua_istable(L, -1))
            return luaL_argerror(L, 1, "field 'color' must be {r, g, b}");
        for (int c = 0; c < 3; c++) {
            if (lua_rawgeti(L, -1, c + 1) != LUA_TNUMBER)
                return luaL_argerror(L, 1, "field 'color' must be {r, g, b} with numbers in 0..1");
            m.color[c] = (float)lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    char err[160];
    int id = q_material_define(&m, err, sizeof err);
    if (id < 0)
        return luaL_argerror(L, 1, err);
    push_material(L, q_material_get(id));
    return 1;
}

static int material_get(lua_State *L)
{
    push_material(L, q_material_get(ql_check_material(L, 1)));
    return 1;
}

static int material_list(lua_State *L)
{
    int n = q_material_count();
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushstring(L, q_material_get(i)->name);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

int ql_open_material(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        {"define", material_define}, {"get", material_get}, {"list", material_list}, {NULL, NULL}};
    luaL_newlib(L, funcs);
    return 1;
}
