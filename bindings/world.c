/* quarry.world: World userdata holding a generational handle to an engine
 * world. The userdata owns the world: __gc, __close and destroy() free it,
 * and any later use raises "attempt to use a destroyed world". Its first
 * uservalue caches the Terrain userdata so `world.terrain` is always the same
 * object; the second holds body.c's Body objects and event handlers.
 */
#include "common.h"

#include "physics/terrain_physics.h"
#include "voxel/material.h"
#include "world/world.h"

#include <math.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef struct lworld {
    q_handle h;
    double script_mark; /* script clock at the end of the last world:step (ms) */
    double ms_lua;      /* script time of the last frame outside the engine */
} lworld;

/* Milliseconds of script time: under the host, the time spent in its
 * callbacks, from the clock quarry.graphics leaves in the registry;
 * elsewhere (plain lua5.4, where the script is the whole process) the wall
 * clock. */
static double script_clock(lua_State *L)
{
    double ms;
    if (lua_getfield(L, LUA_REGISTRYINDEX, QL_SCRIPT_CLOCK) == LUA_TFUNCTION) {
        lua_call(L, 0, 1);
        ms = lua_tonumber(L, -1);
    } else {
        ms = q_profile_now();
    }
    lua_pop(L, 1);
    return ms;
}

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
    lworld *u = lua_newuserdatauv(L, sizeof *u, 2);
    u->h = Q_NULL_HANDLE;
    u->script_mark = script_clock(L);
    u->ms_lua = 0;
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
    static const char *const fields[] = {"voxel_size", "gravity",       "step",        "substeps", "seed",
                                         "threads",    "physics_cache", "auto_detach", NULL};
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
        if (ql_field_integer(L, 1, 1, "physics_cache", &i)) {
            if (i < 0 || i > ((lua_Integer)1 << 40))
                return luaL_argerror(L, 1, "field 'physics_cache' must be 0..2^40 bytes (0 = default)");
            def.physics_cache = (size_t)i;
        }
        ql_field_boolean(L, 1, 1, "auto_detach", &def.auto_detach);
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
    /* The frame just ended (world.h, frame profile): its script time is the
     * script clock's advance less the engine calls the script made. */
    lworld *u = lua_touserdata(L, 1);
    double now = script_clock(L), prof[Q_PROFILE_COUNT];
    q_world_profile(w, prof);
    u->ms_lua = fmax(0.0, now - u->script_mark - prof[Q_PROFILE_CALLS]);
    u->script_mark = now;
    if (n > 0)
        ql_dispatch_events(L, 1);
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
    q_world *w = ql_check_world(L, 1);
    q_world_stats s = q_world_get_stats(w);
    double prof[Q_PROFILE_COUNT];
    q_world_profile(w, prof);
    const lworld *u = lua_touserdata(L, 1);
    const struct {
        const char *name;
        size_t value;
    } fields[] = {{"chunks", s.chunks},
                  {"dense_chunks", s.dense_chunks},
                  {"voxel_bytes", s.voxel_bytes},
                  {"memory", s.memory},
                  {"bodies", s.bodies},
                  {"awake", s.awake},
                  {"broadphase_chunks", s.broadphase_chunks},
                  {"broadphase_bytes", s.broadphase_bytes},
                  {"cached_chunks", s.cached_chunks},
                  {"triangles", s.triangles},
                  {"kd_nodes", s.kd_nodes},
                  {"gridsort_batches", s.gridsort_batches},
                  {"pairs", s.body_pairs},
                  {"manifolds", s.manifolds},
                  {"contacts", s.contacts}};
    const struct {
        const char *name;
        double value;
    } times[] = {{"ms_broadphase", s.ms_broadphase},
                 {"ms_narrowphase", s.ms_narrowphase},
                 {"ms_solver", s.ms_solver},
                 {"ms_step", prof[Q_PROFILE_STEP]},
                 {"ms_fracture", prof[Q_PROFILE_FRACTURE]},
                 {"ms_detach", prof[Q_PROFILE_DETACH]},
                 {"ms_edit", prof[Q_PROFILE_EDIT]},
                 {"ms_raycast", prof[Q_PROFILE_RAYCAST]},
                 {"ms_mesh", prof[Q_PROFILE_MESH]},
                 {"ms_engine", prof[Q_PROFILE_CALLS]},
                 {"ms_lua", u->ms_lua}};
    int n = (int)(sizeof fields / sizeof fields[0]), nt = (int)(sizeof times / sizeof times[0]);
    lua_createtable(L, 0, n + nt);
    for (int i = 0; i < n; i++) {
        lua_pushinteger(L, (lua_Integer)fields[i].value);
        lua_setfield(L, -2, fields[i].name);
    }
    for (int i = 0; i < nt; i++) {
        lua_pushnumber(L, times[i].value);
        lua_setfield(L, -2, times[i].name);
    }
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

/* ---- queries (API.md "Queries"): terrain here, bodies through body.c ---- */

typedef struct query_opts {
    unsigned flags;
    bool exact; /* overlaps: false asks the bit broadphase only (conservative) */
    bool bodies;
} query_opts;

static query_opts check_query_opts(lua_State *L, int idx)
{
    query_opts o = {Q_RAY_SOLID, true, true};
    if (lua_isnoneornil(L, idx))
        return o;
    static const char *const fields[] = {"terrain", "bodies", "water", "ignore", "exact", NULL};
    ql_check_fields(L, idx, fields);
    bool terrain = true, water = false, bodies = true;
    ql_field_boolean(L, idx, idx - 1, "terrain", &terrain);
    ql_field_boolean(L, idx, idx - 1, "water", &water);
    ql_field_boolean(L, idx, idx - 1, "bodies", &bodies);
    ql_field_boolean(L, idx, idx - 1, "exact", &o.exact);
    int t = lua_getfield(L, idx, "ignore");
    if (t != LUA_TNIL && t != LUA_TTABLE)
        luaL_argerror(L, idx, "field 'ignore' must be a list of bodies");
    lua_pop(L, 1);
    o.flags = (terrain ? Q_RAY_SOLID : 0u) | (water ? Q_RAY_WATER : 0u);
    o.bodies = bodies;
    return o;
}

static void check_ray(lua_State *L, int idx, double origin[3], double dir[3], double *max_distance)
{
    ql_check_vec3(L, idx, origin);
    ql_check_vec3(L, idx + 1, dir);
    if (dir[0] == 0 && dir[1] == 0 && dir[2] == 0)
        luaL_argerror(L, idx + 1, "direction must be non-zero");
    double m = luaL_checknumber(L, idx + 2);
    if (!(m >= 0) || isnan(m))
        luaL_argerror(L, idx + 2, lua_pushfstring(L, "max_distance must be >= 0, got %s", luaL_tolstring(L, idx + 2, NULL)));
    *max_distance = m;
}

static void normalize(const double v[3], double out[3])
{
    double n = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    for (int a = 0; a < 3; a++)
        out[a] = v[a] / n;
}

static void push_hit(lua_State *L, const q_ray_hit *h)
{
    lua_createtable(L, 0, 6);
    ql_push_vec3(L, h->position);
    lua_setfield(L, -2, "position");
    ql_push_vec3(L, h->normal);
    lua_setfield(L, -2, "normal");
    lua_pushnumber(L, h->distance);
    lua_setfield(L, -2, "distance");
    const q_material *m = q_material_get(h->material);
    lua_pushstring(L, m ? m->name : "air");
    lua_setfield(L, -2, "material");
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "terrain");
    lua_pushboolean(L, h->water);
    lua_setfield(L, -2, "water");
}

static int world_raycast(lua_State *L)
{
    q_world *w = ql_check_world(L, 1);
    double o[3], d[3], maxd;
    check_ray(L, 2, o, d, &maxd);
    query_opts opts = check_query_opts(L, 5);
    double t0 = q_profile_now();
    q_ray_hit hit;
    bool terrain = opts.flags && q_terrain_physics_raycast(q_world_terrain_physics(w), o, d, maxd, opts.flags, &hit);
    ql_body_hit *body;
    double unit[3];
    normalize(d, unit);
    bool on_body = opts.bodies && ql_raycast_bodies(L, 1, 5, o, unit, terrain ? hit.distance : maxd, 1, &body);
    q_world_profile_call(w, Q_PROFILE_RAYCAST, t0);
    if (on_body)
        ql_push_body_hit(L, 1, o, unit, body);
    else if (terrain)
        push_hit(L, &hit);
    else
        lua_pushnil(L);
    return 1;
}

static int world_raycast_all(lua_State *L)
{
    q_world *w = ql_check_world(L, 1);
    double o[3], d[3], maxd;
    check_ray(L, 2, o, d, &maxd);
    query_opts opts = check_query_opts(L, 5);
    lua_settop(L, 5); /* opts stays at 5 for ql_raycast_bodies */
    double t0 = q_profile_now();
    q_terrain_physics *p = q_world_terrain_physics(w);
    size_t cap = 64, n = 0;
    q_ray_hit *hits = NULL;
    while (opts.flags) {
        hits = lua_newuserdatauv(L, cap * sizeof *hits, 0);
        n = q_terrain_physics_raycast_all(p, o, d, maxd, opts.flags, hits, cap);
        if (n <= cap)
            break;
        lua_pop(L, 1);
        cap = n;
    }
    ql_body_hit *bh = NULL;
    double unit[3];
    normalize(d, unit);
    size_t nb = opts.bodies ? ql_raycast_bodies(L, 1, 5, o, unit, maxd, SIZE_MAX, &bh) : 0;
    q_world_profile_call(w, Q_PROFILE_RAYCAST, t0);
    lua_createtable(L, (int)(n + nb), 0);
    for (size_t i = 0, j = 0; i + j < n + nb;) { /* merge: both lists are nearest first */
        if (j < nb && (i == n || bh[j].distance < hits[i].distance))
            ql_push_body_hit(L, 1, o, unit, &bh[j++]);
        else
            push_hit(L, &hits[i++]);
        lua_rawseti(L, -2, (lua_Integer)(i + j));
    }
    return 1;
}

static int world_raycast_batch(lua_State *L)
{
    q_world *w = ql_check_world(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TTABLE);
    double maxd = luaL_checknumber(L, 4);
    if (!(maxd >= 0))
        return luaL_argerror(L, 4, "max_distance must be >= 0");
    query_opts opts = check_query_opts(L, 5);
    lua_Integer n = luaL_len(L, 2);
    if (luaL_len(L, 3) != n)
        return luaL_argerror(L, 3, "origins and directions must have the same length");
    /* Check every ray before casting any. */
    double *rays = lua_newuserdatauv(L, (size_t)(n ? n : 1) * 6 * sizeof(double), 0);
    for (lua_Integer i = 0; i < n; i++) {
        lua_rawgeti(L, 2, i + 1);
        lua_rawgeti(L, 3, i + 1);
        double *r = rays + 6 * i;
        if (!ql_to_vec3(L, -2, r) || !isfinite(r[0] + r[1] + r[2]))
            return luaL_argerror(L, 2, lua_pushfstring(L, "origins[%I] is not a finite point", i + 1));
        if (!ql_to_vec3(L, -1, r + 3) || !isfinite(r[3] + r[4] + r[5]) || (r[3] == 0 && r[4] == 0 && r[5] == 0))
            return luaL_argerror(L, 3, lua_pushfstring(L, "directions[%I] is not a finite non-zero vector", i + 1));
        lua_pop(L, 2);
    }
    double *dist = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof(double), 0);
    double t0 = q_profile_now();
    q_terrain_physics_raycast_batch(q_world_terrain_physics(w), rays, (size_t)n, maxd, opts.flags, dist);
    q_world_profile_call(w, Q_PROFILE_RAYCAST, t0);
    lua_createtable(L, (int)n, 0);
    for (lua_Integer i = 0; i < n; i++) {
        if (dist[i] >= 0)
            lua_pushnumber(L, dist[i]);
        else
            lua_pushboolean(L, 0);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* Pushes bodies, touches_terrain, touches_water; the shape is a sphere of
 * radius r, or a box of half extents half. */
static int push_overlap(lua_State *L, q_overlap o, query_opts opts, const double c[3], double r, const double *half)
{
    unsigned flags = opts.flags;
    if (opts.bodies)
        ql_push_overlap_bodies(L, 1, 4, c, r, half);
    else
        lua_newtable(L);
    lua_pushboolean(L, (flags & Q_RAY_SOLID) && o.solid);
    lua_pushboolean(L, o.water);
    return 3;
}

static int world_overlap_sphere(lua_State *L)
{
    q_world *w = ql_check_world(L, 1);
    double c[3];
    ql_check_vec3(L, 2, c);
    double r = ql_check_positive(L, 3, "radius");
    query_opts opts = check_query_opts(L, 4);
    q_terrain_physics *p = q_world_terrain_physics(w);
    if (!opts.exact) {
        double mn[3] = {c[0] - r, c[1] - r, c[2] - r}, mx[3] = {c[0] + r, c[1] + r, c[2] + r};
        return push_overlap(L, q_terrain_physics_broadphase(p, mn, mx), opts, c, r, NULL);
    }
    return push_overlap(L, q_terrain_physics_overlap_sphere(p, c, r), opts, c, r, NULL);
}

static int world_overlap_box(lua_State *L)
{
    q_world *w = ql_check_world(L, 1);
    double c[3], h[3];
    ql_check_vec3(L, 2, c);
    ql_check_vec3(L, 3, h);
    for (int a = 0; a < 3; a++)
        if (!(h[a] > 0))
            return luaL_argerror(L, 3, "half extents must be > 0");
    query_opts opts = check_query_opts(L, 4);
    q_terrain_physics *p = q_world_terrain_physics(w);
    if (!opts.exact) {
        double mn[3] = {c[0] - h[0], c[1] - h[1], c[2] - h[2]}, mx[3] = {c[0] + h[0], c[1] + h[1], c[2] + h[2]};
        return push_overlap(L, q_terrain_physics_broadphase(p, mn, mx), opts, c, 0, h);
    }
    return push_overlap(L, q_terrain_physics_overlap_box(p, c, h), opts, c, 0, h);
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
    lua_createtable(L, 0, 6);
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
    lua_pushboolean(L, d->auto_detach);
    lua_setfield(L, -2, "auto_detach");
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
    return ql_index_method(L);
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
                                       {"settings", world_settings},
                                       {"raycast", world_raycast},
                                       {"raycast_all", world_raycast_all},
                                       {"raycast_batch", world_raycast_batch},
                                       {"overlap_sphere", world_overlap_sphere},
                                       {"overlap_box", world_overlap_box},
                                       {NULL, NULL}};
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
