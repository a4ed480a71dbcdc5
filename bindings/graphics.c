/* Host-only Lua modules: quarry.graphics, quarry.keyboard, quarry.mouse,
 * quarry.timer. They exist only inside the `quarry` executable, which owns
 * the window; every function reaches the host through the light userdata
 * upvalue set by q_lua_open_host_modules.
 *
 * Headless, nothing here touches GL: every function checks its arguments
 * exactly as in a window (so scripts fail the same way), setters record
 * state, drawing calls do nothing, and the functions that need a picture say
 * so: screenshot returns nil, message.
 *
 * Added to API.md's host modules (options only; nothing renamed):
 *
 *   g.draw_world(world, {bake = true})      -- baked sun shadows and ambient occlusion
 *   g.draw_world(world, {bake = {sun_rays = 6, sun_cone = 0.035, sun_distance = 48,
 *                                ao_rays = 8, ao_radius = 4}})   -- the defaults (1 m voxels)
 *   g.stats()  -- also baked=, baked_vertices=, bake_ms= (chunks, vertices, ms this frame)
 *
 * Baking is off by default: it costs milliseconds per chunk whenever a chunk
 * is (re)meshed or relit (nothing while the terrain does not change). Sun
 * visibility (fraction of rays towards the sun that escape) scales the sun
 * term, ambient occlusion (fraction of hemisphere rays that escape) the
 * ambient term. An edit relights the vertices whose sun or hemisphere rays
 * can reach what it changed. See draw_world below and render/render.h.
 */
#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "app/host.h"
#include "common.h"
#include "quarry.h"
#include "world/world.h"

#define WORLD_IDS "quarry.graphics.world_ids" /* registry: weak World -> render cache id */
#define MAX_TEXT_SCALE 64.0

static q_host *host_of(lua_State *L)
{
    return lua_touserdata(L, lua_upvalueindex(1));
}

/* Raises "bad argument #arg to 'fn' ([field: ]unknown option 'x' (valid:
 * a, b))" for any key of the table at stack index t that is not in `valid`
 * (NULL-terminated); field names the table when it is a field of argument
 * arg, else NULL. */
static void check_keys(lua_State *L, int t, int arg, const char *field, const char *const valid[])
{
    t = lua_absindex(L, t);
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
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
            luaL_argerror(L, arg, lua_pushfstring(L, "%s%sunknown option %s (valid: %s)", field ? field : "",
                                                  field ? ": " : "", name, lua_tostring(L, -2)));
        }
    }
}

static void check_table_keys(lua_State *L, int arg, const char *const valid[])
{
    check_keys(L, arg, arg, NULL, valid);
}

static float check_unit(lua_State *L, int arg, const char *what)
{
    lua_Number v = luaL_checknumber(L, arg);
    if (!(v >= 0.0 && v <= 1.0))
        luaL_argerror(L, arg, lua_pushfstring(L, "%s must be in [0, 1], got %f", what, v));
    return (float)v;
}

/* A colour table {r, g, b [, a]} or {r=, g=, b=, a=} at stack index v
 * (components in [0, 1], a defaults to 1); errors name argument `arg` and,
 * when the table is a field, `field`. */
static void read_color(lua_State *L, int v, int arg, const char *field, float rgba[4])
{
    v = lua_absindex(L, v);
    static const char *const names[] = {"r", "g", "b", "a"};
    const char *prefix = field ? lua_pushfstring(L, "%s: ", field) : "";
    if (!lua_istable(L, v))
        luaL_argerror(L, arg, lua_pushfstring(L, "%scolour must be a table {r, g, b [, a]}, got %s",
                                              prefix, luaL_typename(L, v)));
    for (int i = 0; i < 4; i++) {
        int t = lua_geti(L, v, i + 1);
        if (t == LUA_TNIL) {
            lua_pop(L, 1);
            t = lua_getfield(L, v, names[i]);
        }
        lua_Number c = 1.0;
        if (t == LUA_TNUMBER)
            c = lua_tonumber(L, -1);
        else if (t != LUA_TNIL || i < 3)
            luaL_argerror(L, arg, lua_pushfstring(L, "%scolour component %s ([%d]) must be a number, got %s",
                                                  prefix, names[i], i + 1, luaL_typename(L, -1)));
        lua_pop(L, 1);
        if (!(c >= 0.0 && c <= 1.0))
            luaL_argerror(L, arg, lua_pushfstring(L, "%scolour component %s must be in [0, 1], got %f",
                                                  prefix, names[i], c));
        rgba[i] = (float)c;
    }
    if (field)
        lua_pop(L, 1);
}

/* A colour from arguments 1..4: (r, g, b [, a]) or one table {r, g, b [, a]}
 * or {r=, g=, b=, a=}; components in [0, 1], a defaults to 1. */
static void check_color(lua_State *L, float rgba[4])
{
    static const char *const names[] = {"r", "g", "b"};
    if (lua_istable(L, 1)) {
        read_color(L, 1, 1, NULL, rgba);
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

/* Reads a point given as a Vec3, {x, y, z} or {x=, y=, z=} at stack index
 * `v` (a field of argument `arg`, named `what` in errors). */
static void read_point(lua_State *L, int v, int arg, const char *what, float out[3])
{
    double p[3];
    if (!ql_to_vec3(L, v, p))
        luaL_argerror(L, arg, lua_pushfstring(L, "%s must be a Vec3, {x, y, z} or {x=, y=, z=}, got %s",
                                              what, luaL_typename(L, v)));
    for (int i = 0; i < 3; i++) {
        if (!isfinite((float)p[i]))
            luaL_argerror(L, arg, lua_pushfstring(L, "%s.%c must be finite (and within float range)", what,
                                                  "xyz"[i]));
        out[i] = (float)p[i];
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

static void push_point(lua_State *L, const float p[3])
{
    const double v[3] = {p[0], p[1], p[2]};
    ql_push_vec3(L, v);
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
 * table of all switches. wireframe, chunks, contacts and lod are the
 * defaults of draw_world's options of those names; broadphase and kdtree
 * make draw_world also show the terrain physics within 24 voxels of the
 * camera target (render.h, q_render_draw_physics_debug). */
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

/* A finite number at argument arg, named `what` in errors. */
static double check_finite_arg(lua_State *L, int arg, const char *what)
{
    lua_Number v = luaL_checknumber(L, arg);
    if (!isfinite(v))
        luaL_argerror(L, arg, lua_pushfstring(L, "%s must be finite, got %f", what, v));
    return v;
}

/* screen_ray(x, y) -> origin, direction (Vec3s): the ray from the camera
 * through window point (x, y), for the current camera and window size
 * (1280 x 720 headless). direction is a unit vector. */
static int g_screen_ray(lua_State *L)
{
    double x = check_finite_arg(L, 1, "x");
    double y = check_finite_arg(L, 2, "y");
    q_host *h = host_of(L);
    int w, ht;
    q_host_window_size(h, &w, &ht);
    double origin[3], dir[3];
    q_camera_ray(q_host_camera(h), w, ht, x, y, origin, dir);
    ql_push_vec3(L, origin);
    ql_push_vec3(L, dir);
    return 2;
}

/* size() -> width, height of the window in window coordinates (those of
 * mouse events, screen_ray and text); 1280, 720 headless. */
static int g_size(lua_State *L)
{
    int w, ht;
    q_host_window_size(host_of(L), &w, &ht);
    lua_pushinteger(L, w);
    lua_pushinteger(L, ht);
    return 2;
}

/* An id for the World userdata at idx that no other world ever gets: the
 * renderer keeps chunk meshes under it. Held in a weak-keyed table, so a
 * collected world's entry goes away and a new userdata gets a new id even at
 * the same address. */
static uint64_t world_id(lua_State *L, int idx)
{
    static uint64_t next_id;
    idx = lua_absindex(L, idx);
    if (luaL_getsubtable(L, LUA_REGISTRYINDEX, WORLD_IDS) == 0) {
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "k");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
    }
    lua_pushvalue(L, idx);
    uint64_t id;
    if (lua_rawget(L, -2) == LUA_TNUMBER) {
        id = (uint64_t)lua_tointeger(L, -1);
    } else {
        id = ++next_id;
        lua_pushvalue(L, idx);
        lua_pushinteger(L, (lua_Integer)id);
        lua_rawset(L, -4);
    }
    lua_pop(L, 2);
    return id;
}

/* The draw_world option bake at stack index v (a field of argument arg):
 * true, false, or a table of ray settings that turns baking on. */
static void read_bake(lua_State *L, int v, int arg, q_draw_world_opts *o)
{
    static const char *const keys[] = {"sun_rays", "sun_cone", "sun_distance", "ao_rays", "ao_radius", NULL};
    v = lua_absindex(L, v);
    if (lua_type(L, v) == LUA_TBOOLEAN) {
        o->bake = lua_toboolean(L, v);
        return;
    }
    if (!lua_istable(L, v))
        luaL_argerror(L, arg, lua_pushfstring(L, "bake must be a boolean or a table {sun_rays=, sun_cone=, "
                                                 "sun_distance=, ao_rays=, ao_radius=}, got %s",
                                              luaL_typename(L, v)));
    check_keys(L, v, arg, "bake", keys);
    q_bake_def d = o->bake_def;
    for (int i = 0; keys[i]; i++) {
        int t = lua_getfield(L, v, keys[i]);
        if (t != LUA_TNIL) {
            bool count = i == 0 || i == 3;
            if (t != LUA_TNUMBER)
                luaL_argerror(L, arg, lua_pushfstring(L, "bake: %s must be a number, got %s", keys[i],
                                                      luaL_typename(L, -1)));
            int is_int = 0;
            lua_Integer n = lua_tointegerx(L, -1, &is_int);
            lua_Number x = lua_tonumber(L, -1);
            if (count && !is_int)
                luaL_argerror(L, arg, lua_pushfstring(L, "bake: %s must be an integer, got %f", keys[i], x));
            if (count) /* clamped into int range; the range check below names the value */
                *(i == 0 ? &d.sun_rays : &d.ao_rays) = n < -1 ? -1 : n > 1000000 ? 1000000 : (int)n;
            else
                *(i == 1 ? &d.sun_cone : i == 2 ? &d.sun_distance : &d.ao_radius) = (float)x;
        }
        lua_pop(L, 1);
    }
    char err[160];
    if (q_bake_def_check(&d, err, sizeof err) != Q_OK)
        luaL_argerror(L, arg, lua_pushfstring(L, "bake: %s", err));
    o->bake_def = d;
    o->bake = true;
}

/* draw_world(world [, opts]) -> true | nil, message. Draws the world into
 * the frame now (call it from quarry.draw), remeshing the render chunks that
 * changed since it was last drawn, and its bodies. opts: wireframe, chunks,
 * contacts (booleans; default from debug{}), water, bodies (booleans,
 * default true), fog (metres at which fog is half, or false for none;
 * default 400 voxels), bake (default false; see below). Headless it only
 * checks its arguments.
 *
 * Bodies are drawn with their shapes' triangles in their materials'
 * colours, darker while asleep. contacts = true marks the contact points of
 * the last step over everything: a cross (red between bodies, orange on
 * terrain, grey while only speculative) and a green normal.
 *
 * bake = true, or a table {sun_rays = 6, sun_cone = 0.035, sun_distance =
 * 48 voxels, ao_rays = 8, ao_radius = 4 voxels} (counts; cone half-angle in
 * radians up to 0.5; distances in metres), shades the terrain with baked
 * light: the sun term is scaled by the fraction of sun_rays rays towards the
 * sun that meet no terrain within sun_distance, the ambient term by the
 * fraction of ao_rays rays over the hemisphere (cosine-weighted) that meet
 * none within ao_radius (ao_rays = 0: no occlusion). Rays follow a fixed
 * pattern per vertex, so pictures repeat. Chunks are baked when meshed;
 * an edit also relights the vertices whose rays can reach what it changed
 * (below it and away from the sun, up to sun_distance; ao_radius all
 * round). Turning bake on, or changing its settings, bakes the whole world
 * again (stats().bake_ms says how long); bake = false (or leaving it out)
 * draws unbaked and frees the bake data. */
static int g_draw_world(lua_State *L)
{
    static const char *const keys[] = {"wireframe", "chunks", "water", "bodies", "contacts", "fog", "bake", NULL};
    q_world *w = ql_check_world(L, 1);
    q_host *h = host_of(L);
    q_draw_world_opts o = q_default_draw_world_opts(w);
    const q_debug_flags *dbg = q_host_debug_flags(h);
    o.wireframe = dbg->wireframe;
    o.chunks = dbg->chunks;
    o.lod = dbg->lod;
    o.contacts = dbg->contacts;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        check_table_keys(L, 2, keys);
        bool *flags[] = {&o.wireframe, &o.chunks, &o.water, &o.bodies, &o.contacts};
        for (int i = 0; i < 5; i++) {
            int t = lua_getfield(L, 2, keys[i]);
            if (t == LUA_TBOOLEAN)
                *flags[i] = lua_toboolean(L, -1);
            else if (t != LUA_TNIL)
                luaL_argerror(L, 2, lua_pushfstring(L, "%s must be a boolean, got %s", keys[i],
                                                    luaL_typename(L, -1)));
            lua_pop(L, 1);
        }
        int t = lua_getfield(L, 2, "fog");
        if (t == LUA_TBOOLEAN && !lua_toboolean(L, -1)) {
            o.fog = 0.0f;
        } else if (t == LUA_TNUMBER) {
            lua_Number fog = lua_tonumber(L, -1);
            if (!(fog > 0.0 && isfinite(fog)))
                luaL_argerror(L, 2, lua_pushfstring(L, "fog must be a distance > 0 (metres) or false, got %f",
                                                    fog));
            o.fog = (float)fog;
        } else if (t != LUA_TNIL) {
            luaL_argerror(L, 2, lua_pushfstring(L, "fog must be a distance > 0 (metres) or false, got %s",
                                                lua_type(L, -1) == LUA_TBOOLEAN ? "true"
                                                                                 : luaL_typename(L, -1)));
        }
        lua_pop(L, 1);
        if (lua_getfield(L, 2, "bake") != LUA_TNIL)
            read_bake(L, -1, 2, &o);
        lua_pop(L, 1);
    }
    q_renderer *r = q_host_renderer(h);
    if (r) {
        char err[256];
        uint64_t id = world_id(L, 1);
        double t0 = q_profile_now(), mesh_ms = q_render_get_stats(r).mesh_ms;
        bool drawn = q_render_draw_world(r, id, w, q_host_camera(h), &o, err, sizeof err);
        /* debug{broadphase=, kdtree=}: the terrain physics around the camera target */
        q_render_draw_physics_debug(r, w, q_host_camera(h), dbg->broadphase, dbg->kdtree);
        /* world:stats() ms_mesh and ms_engine (world.h, frame profile) */
        q_world_profile_add(w, Q_PROFILE_MESH, q_render_get_stats(r).mesh_ms - mesh_ms);
        q_world_profile_add(w, Q_PROFILE_CALLS, q_profile_now() - t0);
        if (!drawn) {
            luaL_pushfail(L);
            lua_pushstring(L, err);
            return 2;
        }
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* line(a, b [, color]): a line between two points (metres) in this frame,
 * hidden behind terrain like any geometry. color {r, g, b [, a]} in [0, 1],
 * white by default. */
static int g_line(lua_State *L)
{
    double a[3], b[3];
    ql_check_vec3(L, 1, a);
    ql_check_vec3(L, 2, b);
    float rgba[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    if (!lua_isnoneornil(L, 3))
        read_color(L, 3, 3, NULL, rgba);
    q_renderer *r = q_host_renderer(host_of(L));
    if (r) {
        const float fa[3] = {(float)a[0], (float)a[1], (float)a[2]};
        const float fb[3] = {(float)b[0], (float)b[1], (float)b[2]};
        q_render_line(r, fa, fb, rgba);
    }
    return 0;
}

/* text(s, x, y [, opts]): text with its top-left corner at window point
 * (x, y), drawn over everything at the end of the frame. opts: color
 * {r, g, b [, a]} (white), scale (> 0, the 6x12 pixel font's size
 * multiplier, default 2). ASCII; other bytes show as '?'. */
static int g_text(lua_State *L)
{
    static const char *const keys[] = {"color", "scale", NULL};
    const char *s = luaL_checkstring(L, 1);
    double x = check_finite_arg(L, 2, "x");
    double y = check_finite_arg(L, 3, "y");
    float rgba[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    double scale = 2.0;
    if (!lua_isnoneornil(L, 4)) {
        luaL_checktype(L, 4, LUA_TTABLE);
        check_table_keys(L, 4, keys);
        if (lua_getfield(L, 4, "color") != LUA_TNIL)
            read_color(L, lua_gettop(L), 4, "color", rgba);
        lua_pop(L, 1);
        int t = lua_getfield(L, 4, "scale");
        if (t != LUA_TNIL) {
            if (t != LUA_TNUMBER)
                luaL_argerror(L, 4, lua_pushfstring(L, "scale must be a number, got %s", luaL_typename(L, -1)));
            scale = lua_tonumber(L, -1);
            if (!(scale > 0.0 && scale <= MAX_TEXT_SCALE))
                luaL_argerror(L, 4, lua_pushfstring(L, "scale must be in (0, %f], got %f", MAX_TEXT_SCALE,
                                                    scale));
        }
        lua_pop(L, 1);
    }
    q_renderer *r = q_host_renderer(host_of(L));
    if (r)
        q_render_text(r, s, (float)x, (float)y, (float)scale, rgba);
    return 0;
}

/* stats() -> {chunks=, triangles=, draw_calls=, remeshed=, mesh_ms=,
 * gpu_bytes=, baked=, baked_vertices=, bake_ms=, bodies=, contacts=} for
 * the frame so far (call after draw_world): render chunks holding a mesh in
 * the worlds drawn, triangles and draw calls issued (terrain and bodies),
 * chunks remeshed and the milliseconds it took (baking included), bytes of
 * chunk and body meshes on the GPU, chunks and vertices baked and the
 * milliseconds baking took, bodies drawn (inside the view) and contact
 * points marked. All zero headless. */
static int g_stats(lua_State *L)
{
    q_renderer *r = q_host_renderer(host_of(L));
    q_render_stats st = {0};
    if (r)
        st = q_render_get_stats(r);
    lua_createtable(L, 0, 11);
    lua_pushinteger(L, st.chunks);
    lua_setfield(L, -2, "chunks");
    lua_pushinteger(L, (lua_Integer)st.triangles);
    lua_setfield(L, -2, "triangles");
    lua_pushinteger(L, st.draw_calls);
    lua_setfield(L, -2, "draw_calls");
    lua_pushinteger(L, st.remeshed);
    lua_setfield(L, -2, "remeshed");
    lua_pushnumber(L, st.mesh_ms);
    lua_setfield(L, -2, "mesh_ms");
    lua_pushinteger(L, (lua_Integer)st.gpu_bytes);
    lua_setfield(L, -2, "gpu_bytes");
    lua_pushinteger(L, st.baked);
    lua_setfield(L, -2, "baked");
    lua_pushinteger(L, (lua_Integer)st.baked_vertices);
    lua_setfield(L, -2, "baked_vertices");
    lua_pushnumber(L, st.bake_ms);
    lua_setfield(L, -2, "bake_ms");
    lua_pushinteger(L, st.bodies);
    lua_setfield(L, -2, "bodies");
    lua_pushinteger(L, st.contacts);
    lua_setfield(L, -2, "contacts");
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

/* mouse.set_captured(on) -> true | false: captures the mouse (hidden
 * cursor, mousemoved keeps reporting dx, dy at the window edge) or releases
 * it. Headless the state is only recorded. */
static int m_set_captured(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TBOOLEAN);
    lua_pushboolean(L, q_host_capture_mouse(host_of(L), lua_toboolean(L, 1)));
    return 1;
}

/* mouse.is_captured() -> boolean */
static int m_is_captured(lua_State *L)
{
    lua_pushboolean(L, q_host_mouse_captured(host_of(L)));
    return 1;
}

/* timer.fps() -> integer frames per second over the last 60 frames. */
static int t_fps(lua_State *L)
{
    lua_pushinteger(L, q_host_fps(host_of(L)));
    return 1;
}

/* timer.now() -> seconds (wall clock, monotonic, sub-microsecond; only
 * differences mean anything): for timing work in scripts, GPU work
 * included, which os.clock (processor time) does not see. */
static int t_now(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (double)ts.tv_sec + ts.tv_nsec * 1e-9);
    return 1;
}

/* QL_SCRIPT_CLOCK: milliseconds spent in script callbacks so far. */
static int t_script_clock(lua_State *L)
{
    lua_pushnumber(L, q_host_script_ms(host_of(L)));
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
    {"screen_ray", g_screen_ray},
    {"size", g_size},
    {"draw_world", g_draw_world},
    {"line", g_line},
    {"text", g_text},
    {"stats", g_stats},
    {NULL, NULL},
};

static const luaL_Reg keyboard_funcs[] = {
    {"is_down", k_is_down},
    {NULL, NULL},
};

static const luaL_Reg mouse_funcs[] = {
    {"position", m_position},
    {"set_captured", m_set_captured},
    {"is_captured", m_is_captured},
    {NULL, NULL},
};

static const luaL_Reg timer_funcs[] = {
    {"fps", t_fps},
    {"now", t_now},
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
    /* world:stats() ms_lua (bindings/world.c) reads the script clock here. */
    lua_pushlightuserdata(L, host);
    lua_pushcclosure(L, t_script_clock, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, QL_SCRIPT_CLOCK);
}
