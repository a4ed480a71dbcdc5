/* Binding helpers: see common.h. */
#include "common.h"

#include "voxel/material.h"
#include "voxel/terrain.h"

#include <math.h>
#include <string.h>

double ql_check_finite(lua_State *L, int idx)
{
    double v = luaL_checknumber(L, idx);
    if (!isfinite(v))
        luaL_argerror(L, idx, lua_pushfstring(L, "must be finite, got %s", luaL_tolstring(L, idx, NULL)));
    return v;
}

double ql_check_positive(lua_State *L, int idx, const char *what)
{
    double v = luaL_checknumber(L, idx);
    if (!(isfinite(v) && v > 0))
        luaL_argerror(L, idx, lua_pushfstring(L, "%s must be > 0, got %s", what, luaL_tolstring(L, idx, NULL)));
    return v;
}

lua_Integer ql_check_int_range(lua_State *L, int idx, lua_Integer lo, lua_Integer hi, const char *what)
{
    lua_Integer v = luaL_checkinteger(L, idx);
    if (v < lo || v > hi)
        luaL_argerror(L, idx, lua_pushfstring(L, "%s must be in %I..%I, got %I", what, lo, hi, v));
    return v;
}

/* Component k of a vector-like table: t[k+1] or t.x / t.y / t.z. */
static bool table_component(lua_State *L, int idx, int k, double *out)
{
    static const char *const names[] = {"x", "y", "z"};
    int type = lua_rawgeti(L, idx, k + 1);
    if (type == LUA_TNIL) {
        lua_pop(L, 1);
        type = lua_getfield(L, idx, names[k]);
    }
    bool ok = type == LUA_TNUMBER;
    if (ok)
        *out = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return ok;
}

bool ql_to_vec3(lua_State *L, int idx, double out[3])
{
    idx = lua_absindex(L, idx);
    double *v = luaL_testudata(L, idx, QL_VEC3);
    if (v) {
        memcpy(out, v, 3 * sizeof *out);
        return true;
    }
    if (!lua_istable(L, idx))
        return false;
    for (int k = 0; k < 3; k++)
        if (!table_component(L, idx, k, &out[k]))
            return false;
    return true;
}

void ql_check_vec3(lua_State *L, int idx, double out[3])
{
    if (!ql_to_vec3(L, idx, out))
        luaL_typeerror(L, idx, "Vec3 or {x, y, z}");
    if (!(isfinite(out[0]) && isfinite(out[1]) && isfinite(out[2])))
        luaL_argerror(L, idx, "components must be finite");
}

void ql_push_vec3(lua_State *L, const double v[3])
{
    double *u = lua_newuserdatauv(L, 3 * sizeof(double), 0);
    memcpy(u, v, 3 * sizeof(double));
    luaL_setmetatable(L, QL_VEC3);
}

void ql_check_ivec3(lua_State *L, int idx, int32_t out[3])
{
    double v[3];
    ql_check_vec3(L, idx, v);
    for (int k = 0; k < 3; k++) {
        if (v[k] != floor(v[k]))
            luaL_argerror(L, idx, lua_pushfstring(L, "voxel coordinates must be integers, got %f", v[k]));
        if (v[k] < -Q_TERRAIN_LIMIT || v[k] > Q_TERRAIN_LIMIT)
            luaL_argerror(L, idx, lua_pushfstring(L, "voxel coordinates must be within +-%d, got %f",
                                                  Q_TERRAIN_LIMIT, v[k]));
        out[k] = (int32_t)v[k];
    }
}

void ql_check_quat(lua_State *L, int idx, double out[4])
{
    idx = lua_absindex(L, idx);
    double *q = luaL_testudata(L, idx, QL_QUAT);
    if (q) {
        memcpy(out, q, 4 * sizeof *out);
    } else if (lua_istable(L, idx)) {
        static const char *const names[] = {"w", "x", "y", "z"};
        for (int k = 0; k < 4; k++) {
            int type = lua_rawgeti(L, idx, k + 1);
            if (type == LUA_TNIL) {
                lua_pop(L, 1);
                type = lua_getfield(L, idx, names[k]);
            }
            if (type != LUA_TNUMBER)
                luaL_typeerror(L, idx, "Quat or {w, x, y, z}");
            out[k] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
    } else {
        luaL_typeerror(L, idx, "Quat or {w, x, y, z}");
    }
    double n = sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2] + out[3] * out[3]);
    if (!(isfinite(n) && n > 1e-12))
        luaL_argerror(L, idx, "rotation must be a finite, non-zero quaternion");
    for (int k = 0; k < 4; k++)
        out[k] /= n;
}

void ql_push_quat(lua_State *L, const double q[4])
{
    double *u = lua_newuserdatauv(L, 4 * sizeof(double), 0);
    memcpy(u, q, 4 * sizeof(double));
    luaL_setmetatable(L, QL_QUAT);
}

int ql_check_material(lua_State *L, int idx)
{
    const char *name = luaL_checkstring(L, idx);
    int id = q_material_find(name);
    if (id >= 0)
        return id;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "unknown material '");
    luaL_addstring(&b, name);
    luaL_addstring(&b, "' (known: ");
    for (int i = 0; i < q_material_count(); i++) {
        if (i)
            luaL_addstring(&b, ", ");
        luaL_addstring(&b, q_material_get(i)->name);
    }
    luaL_addstring(&b, ")");
    luaL_pushresult(&b);
    return luaL_argerror(L, idx, lua_tostring(L, -1));
}

void ql_check_fields(lua_State *L, int idx, const char *const fields[])
{
    idx = lua_absindex(L, idx);
    luaL_checktype(L, idx, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        bool known = false;
        if (lua_type(L, -1) == LUA_TSTRING) {
            const char *k = lua_tostring(L, -1);
            for (int i = 0; fields[i] && !known; i++)
                known = strcmp(k, fields[i]) == 0;
        }
        if (!known) {
            const char *key = luaL_tolstring(L, -1, NULL);
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            luaL_addstring(&b, "unknown field '");
            luaL_addstring(&b, key);
            luaL_addstring(&b, "' (expected one of: ");
            for (int i = 0; fields[i]; i++) {
                if (i)
                    luaL_addstring(&b, ", ");
                luaL_addstring(&b, fields[i]);
            }
            luaL_addstring(&b, ")");
            luaL_pushresult(&b);
            luaL_argerror(L, idx, lua_tostring(L, -1));
        }
    }
}

static void field_error(lua_State *L, int arg, const char *key, const char *what)
{
    luaL_argerror(L, arg, lua_pushfstring(L, "field '%s' %s", key, what));
}

bool ql_field_number(lua_State *L, int idx, int arg, const char *key, double *out)
{
    int type = lua_getfield(L, idx, key);
    if (type == LUA_TNIL) {
        lua_pop(L, 1);
        return false;
    }
    if (type != LUA_TNUMBER)
        field_error(L, arg, key, lua_pushfstring(L, "must be a number, got %s", luaL_typename(L, -1)));
    *out = lua_tonumber(L, -1);
    if (!isfinite(*out))
        field_error(L, arg, key, "must be finite");
    lua_pop(L, 1);
    return true;
}

bool ql_field_integer(lua_State *L, int idx, int arg, const char *key, lua_Integer *out)
{
    int type = lua_getfield(L, idx, key);
    if (type == LUA_TNIL) {
        lua_pop(L, 1);
        return false;
    }
    int isint = 0;
    *out = lua_tointegerx(L, -1, &isint);
    if (type != LUA_TNUMBER || !isint)
        field_error(L, arg, key, "must be an integer");
    lua_pop(L, 1);
    return true;
}

bool ql_field_boolean(lua_State *L, int idx, int arg, const char *key, bool *out)
{
    int type = lua_getfield(L, idx, key);
    if (type == LUA_TNIL) {
        lua_pop(L, 1);
        return false;
    }
    if (type != LUA_TBOOLEAN)
        field_error(L, arg, key, lua_pushfstring(L, "must be a boolean, got %s", luaL_typename(L, -1)));
    *out = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return true;
}

bool ql_field_vec3(lua_State *L, int idx, int arg, const char *key, double out[3])
{
    int type = lua_getfield(L, idx, key);
    if (type == LUA_TNIL) {
        lua_pop(L, 1);
        return false;
    }
    if (!ql_to_vec3(L, -1, out))
        field_error(L, arg, key, "must be a Vec3 or {x, y, z}");
    if (!(isfinite(out[0]) && isfinite(out[1]) && isfinite(out[2])))
        field_error(L, arg, key, "must have finite components");
    lua_pop(L, 1);
    return true;
}

int ql_field_option(lua_State *L, int idx, int arg, const char *key, const char *const options[])
{
    int type = lua_getfield(L, idx, key);
    if (type == LUA_TNIL) {
        lua_pop(L, 1);
        return -1;
    }
    const char *s = type == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    for (int i = 0; s && options[i]; i++) {
        if (strcmp(s, options[i]) == 0) {
            lua_pop(L, 1);
            return i;
        }
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "must be one of ");
    for (int i = 0; options[i]; i++) {
        luaL_addstring(&b, i ? ", '" : "'");
        luaL_addstring(&b, options[i]);
        luaL_addstring(&b, "'");
    }
    luaL_pushresult(&b);
    field_error(L, arg, key, lua_tostring(L, -1));
    return -1;
}

int ql_index_method(lua_State *L)
{
    lua_getmetatable(L, 1);
    lua_getfield(L, -1, "methods");
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
}

void ql_new_class(lua_State *L, const char *name, const luaL_Reg *methods, const luaL_Reg *meta)
{
    luaL_newmetatable(L, name);
    luaL_setfuncs(L, meta, 0);
    lua_getfield(L, -1, "__index");
    bool has_index = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (!has_index) {
        lua_newtable(L);
        luaL_setfuncs(L, methods, 0);
        lua_setfield(L, -2, "__index");
    } else if (methods) {
        /* Custom __index: it finds methods in the metatable's "methods". */
        lua_newtable(L);
        luaL_setfuncs(L, methods, 0);
        lua_setfield(L, -2, "methods");
    }
    lua_pop(L, 1);
}

void ql_add_methods(lua_State *L, const char *name, const luaL_Reg *methods)
{
    luaL_getmetatable(L, name);
    luaL_argcheck(L, lua_istable(L, -1), 1, "class not registered");
    if (lua_getfield(L, -1, "methods") != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_getfield(L, -1, "__index");
    }
    luaL_setfuncs(L, methods, 0);
    lua_pop(L, 2);
}
