/* Host-only Lua modules: quarry.graphics, quarry.keyboard, quarry.mouse,
 * quarry.timer. They exist only inside the `quarry` executable, which owns
 * the window; every function reaches the host through the light userdata
 * upvalue set by q_lua_open_host_modules.
 *
 * Headless, state setters still work (so scripts run the same) and the
 * functions that need a picture say so: screenshot returns nil, message.
 */
#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <string.h>

#include "app/host.h"
#include "quarry.h"

static q_host *host_of(lua_State *L)
{
    return lua_touserdata(L, lua_upvalueindex(1));
}

/* Raises "bad argument #arg to 'fn' (unknown option 'x' (valid: a, b))"
 * for any key of the table at `arg` that is not in `valid` (NULL-terminated). */
static void check_table_keys(lua_State *L, int arg, const char *const valid[])
{
    lua_pushnil(L);
    while (lua_next(L, arg) != 0) {
        lua_pop(L, 1);
        bool known = false;
        if (lua_type(L, -1) == LUA_TSTRING) {
            const char *key = lua_tostring(L, -1);
            for (int i = 0; valid[i]; i++)
                if (strcmp(key, valid[i]) == 0)
                    known = true;
        }
        if (!known) {
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            for (int i = 0; valid[i]; i++) {
                if (i)
                    luaL_addstring(&b, ", ");
                luaL_addstring(&b, valid[i]);
            }
            luaL_pushresult(&b);
            const char *name = lua_type(L, -2) == LUA_TSTRING
                                   ? lua_pushfstring(L, "'%s'", lua_tostring(L, -2))
                                   : lua_pushfstring(L, "key of type %s", luaL_typename(L, -2));
            luaL_argerror(L, arg, lua_pushfstring(L, "unknown option %s (valid: %s)", name,
                                                  lua_tostring(L, -2)));
        }
    }
}

static float check_unit(lua_State *L, int arg, const char *what)
{
    lua_Number v = luaL_checknumber(L, arg);
    if (!(v >= 0.0 && v <= 1.0))
        luaL_argerror(L, arg, lua_pushfstring(L, "%s must be in [0, 1], got %f", what, v));
    return (float)v;
}

/* A colour from arguments 1..4: (r, g, b [, a]) or one table {r, g, b [, a]}
 * or {r=, g=, b=, a=}; components in [0, 1], a defaults to 1. */
static void check_color(lua_State *L, float rgba[4])
{
    static const char *const names[] = {"r", "g", "b", "a"};
    if (lua_istable(L, 1)) {
        for (int i = 0; i < 4; i++) {
            int t = lua_geti(L, 1, i + 1);
            if (t == LUA_TNIL) {
                lua_pop(L, 1);
                t = lua_getfield(L, 1, names[i]);
            }
            lua_Number v = 1.0;
            if (t == LUA_TNUMBER)
                v = lua_tonumber(L, -1);
            else if (t != LUA_TNIL || i < 3)
                luaL_argerror(L, 1, lua_pushfstring(L, "colour component %s ([%d]) must be a number, got %s",
                                                    names[i], i + 1, luaL_typename(L, -1)));
            lua_pop(L, 1);
            if (!(v >= 0.0 && v <= 1.0))
                luaL_argerror(L, 1, lua_pushfstring(L, "colour component %s must be in [0, 1], got %f",
                                                    names[i], v));
            rgba[i] = (float)v;
        }
    } else {
        for (int i = 0; i < 3; i++)
            rgba[i] = check_unit(L, i + 1, names[i]);
        rgba[3] = lua_isnoneornil(L, 4) ? 1.0f : check_unit(L, 4, "a");
    }
}

/* set_clear_color(r, g, b [, a]) or set_clear_color{...}: the colour every
 * frame is cleared to before draw() (so set inside draw it shows from the
 * next frame on). */
static int g_set_clear_color(lua_State *L)
{
    float rgba[4];
    check_color(L, rgba);
    memcpy(q_host_clear_color(host_of(L)), rgba, sizeof rgba);
    return 0;
}

/* clear(r, g, b [, a]) or clear{...}: clears the frame being drawn to that
 * colour now (and depth); meant for draw(). Nothing headless. */
static int g_clear(lua_State *L)
{
    float rgba[4];
    check_color(L, rgba);
    q_host_clear(host_of(L), rgba);
    return 0;
}

/* get_clear_color() -> r, g, b, a */
static int g_get_clear_color(lua_State *L)
{
    const float *c = q_host_clear_color(host_of(L));
    for (int i = 0; i < 4; i++)
        lua_pushnumber(L, c[i]);
    return 4;
}

/* Reads a point given as a Vec3 (anything with numeric x, y, z fields),
 * {x, y, z} or {x=, y=, z=}, at stack index `v`; raises on argument `arg`. */
static void read_point(lua_State *L, int v, int arg, const char *what, float out[3])
{
    static const char *const axes[] = {"x", "y", "z"};
    int type = lua_type(L, v);
    if (type != LUA_TTABLE && type != LUA_TUSERDATA)
        luaL_argerror(L, arg, lua_pushfstring(L, "%s must be a Vec3, {x, y, z} or {x=, y=, z=}, got %s",
                                              what, luaL_typename(L, v)));
    for (int i = 0; i < 3; i++) {
        int t = type == LUA_TTABLE ? lua_geti(L, v, i + 1) : LUA_TNIL;
        if (t == LUA_TNIL) {
            lua_pop(L, 1);
            t = lua_getfield(L, v, axes[i]);
        }
        if (t != LUA_TNUMBER)
            luaL_argerror(L, arg, lua_pushfstring(L, "%s.%s must be a number, got %s", what, axes[i],
                                                  luaL_typename(L, -1)));
        lua_Number n = lua_tonumber(L, -1);
        lua_pop(L, 1);
        if (!isfinite(n))
            luaL_argerror(L, arg, lua_pushfstring(L, "%s.%s must be finite", what, axes[i]));
        out[i] = (float)n;
    }
}

/* set_camera{position=, target=, fov=}: fields left out keep their value.
 * fov is the vertical field of view in radians, in (0, pi). */
static int g_set_camera(lua_State *L)
{
    static const char *const keys[] = {"position", "target", "fov", NULL};
    luaL_checktype(L, 1, LUA_TTABLE);
    check_table_keys(L, 1, keys);
    q_camera cam = *q_host_camera(host_of(L));
    if (lua_getfield(L, 1, "position") != LUA_TNIL)
        read_point(L, lua_gettop(L), 1, "position", cam.position);
    lua_pop(L, 1);
    if (lua_getfield(L, 1, "target") != LUA_TNIL)
        read_point(L, lua_gettop(L), 1, "target", cam.target);
    lua_pop(L, 1);
    int t = lua_getfield(L, 1, "fov");
    if (t != LUA_TNIL) {
        if (t != LUA_TNUMBER)
            luaL_argerror(L, 1, lua_pushfstring(L, "fov must be a number (radians), got %s",
                                                luaL_typename(L, -1)));
        lua_Number fov = lua_tonumber(L, -1);
        if (!(fov > 0.0 && fov < 3.14159265358979))
            luaL_argerror(L, 1, lua_pushfstring(L, "fov must be in (0, pi) radians, got %f", fov));
        cam.fov = (float)fov;
    }
    lua_pop(L, 1);
    if (cam.position[0] == cam.target[0] && cam.position[1] == cam.target[1] &&
        cam.position[2] == cam.target[2])
        luaL_argerror(L, 1, "position and target must differ");
    *q_host_camera(host_of(L)) = cam;
    return 0;
}

/* Pushes a point as quarry.vec3 when the module has it, else as {x=, y=, z=}. */
static void push_point(lua_State *L, const float p[3])
{
    if (lua_getfield(L, lua_upvalueindex(2), "vec3") != LUA_TNIL) {
        for (int i = 0; i < 3; i++)
            lua_pushnumber(L, p[i]);
        lua_call(L, 3, 1);
        return;
    }
    lua_pop(L, 1);
    lua_createtable(L, 0, 3);
    lua_pushnumber(L, p[0]);
    lua_setfield(L, -2, "x");
    lua_pushnumber(L, p[1]);
    lua_setfield(L, -2, "y");
    lua_pushnumber(L, p[2]);
    lua_setfield(L, -2, "z");
}

/* get_camera() -> {position=Vec3, target=Vec3, fov=radians} */
static int g_get_camera(lua_State *L)
{
    const q_camera *cam = q_host_camera(host_of(L));
    lua_createtable(L, 0, 3);
    push_point(L, cam->position);
    lua_setfield(L, -2, "position");
    push_point(L, cam->target);
    lua_setfield(L, -2, "target");
    lua_pushnumber(L, cam->fov);
    lua_setfield(L, -2, "fov");
    return 1;
}

static const char *const debug_names[] = {"wireframe", "chunks", "broadphase", "contacts",
                                          "kdtree", "lod", NULL};

static bool *debug_flag(q_debug_flags *f, int i)
{
    bool *flags[] = {&f->wireframe, &f->chunks, &f->broadphase, &f->contacts, &f->kdtree, &f->lod};
    return flags[i];
}

/* debug{wireframe=, chunks=, broadphase=, contacts=, kdtree=, lod=} sets the
 * named switches (booleans; others unchanged); debug() only reads. Returns a
 * table of all switches. */
static int g_debug(lua_State *L)
{
    q_debug_flags flags = *q_host_debug_flags(host_of(L));
    if (!lua_isnoneornil(L, 1)) {
        luaL_checktype(L, 1, LUA_TTABLE);
        check_table_keys(L, 1, debug_names);
        for (int i = 0; debug_names[i]; i++) {
            int t = lua_getfield(L, 1, debug_names[i]);
            if (t != LUA_TNIL) {
                if (t != LUA_TBOOLEAN)
                    luaL_argerror(L, 1, lua_pushfstring(L, "%s must be a boolean, got %s",
                                                        debug_names[i], luaL_typename(L, -1)));
                *debug_flag(&flags, i) = lua_toboolean(L, -1);
            }
            lua_pop(L, 1);
        }
        *q_host_debug_flags(host_of(L)) = flags;
    }
    lua_createtable(L, 0, 6);
    for (int i = 0; debug_names[i]; i++) {
        lua_pushboolean(L, *debug_flag(&flags, i));
        lua_setfield(L, -2, debug_names[i]);
    }
    return 1;
}

/* screenshot(path) -> true | nil, message. The image is the current frame as
 * it stands when the frame ends (after draw): PNG, or PPM for *.ppm. */
static int g_screenshot(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    if (!path[0])
        luaL_argerror(L, 1, "path must not be empty");
    char err[512];
    if (!q_host_request_screenshot(host_of(L), path, err, sizeof err)) {
        luaL_pushfail(L);
        lua_pushstring(L, err);
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* keyboard.is_down(key): key names as passed to keypressed ("a", "space",
 * "left shift", "escape"); false headless. */
static int k_is_down(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    int key = q_host_key_lookup(name);
    if (key == 0)
        luaL_argerror(L, 1, lua_pushfstring(L, "unknown key '%s' (names as keypressed gets them: "
                                               "'a', 'space', 'left shift', 'escape', 'f1', ...)",
                                            name));
    lua_pushboolean(L, q_host_key_down(host_of(L), key));
    return 1;
}

/* mouse.position() -> x, y in window coordinates (0, 0 headless). */
static int m_position(lua_State *L)
{
    double x, y;
    q_host_mouse_position(host_of(L), &x, &y);
    lua_pushnumber(L, x);
    lua_pushnumber(L, y);
    return 2;
}

/* timer.fps() -> integer frames per second over the last 60 frames. */
static int t_fps(lua_State *L)
{
    lua_pushinteger(L, q_host_fps(host_of(L)));
    return 1;
}

static const luaL_Reg graphics_funcs[] = {
    {"set_clear_color", g_set_clear_color},
    {"get_clear_color", g_get_clear_color},
    {"clear", g_clear},
    {"set_camera", g_set_camera},
    {"get_camera", g_get_camera},
    {"debug", g_debug},
    {"screenshot", g_screenshot},
    {NULL, NULL},
};

static const luaL_Reg keyboard_funcs[] = {
    {"is_down", k_is_down},
    {NULL, NULL},
};

static const luaL_Reg mouse_funcs[] = {
    {"position", m_position},
    {NULL, NULL},
};

static const luaL_Reg timer_funcs[] = {
    {"fps", t_fps},
    {NULL, NULL},
};

/* module[name] = new table of funcs, each with upvalues (host, module). */
static void add_module(lua_State *L, int module, const char *name, const luaL_Reg *funcs, void *host)
{
    lua_newtable(L);
    lua_pushlightuserdata(L, host);
    lua_pushvalue(L, module);
    luaL_setfuncs(L, funcs, 2);
    lua_setfield(L, module, name);
}

void q_lua_open_host_modules(lua_State *L, void *host)
{
    int module = lua_gettop(L);
    luaL_checktype(L, module, LUA_TTABLE);
    add_module(L, module, "graphics", graphics_funcs, host);
    add_module(L, module, "keyboard", keyboard_funcs, host);
    add_module(L, module, "mouse", mouse_funcs, host);
    add_module(L, module, "timer", timer_funcs, host);
}
