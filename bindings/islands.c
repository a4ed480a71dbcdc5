/* Terrain:islands([anchor]) and Terrain:remove_islands([anchor]) (API.md,
 * Terrain; engine: voxel/islands.h).
 *
 * Each world has one island tracker (world.h q_world_islands), so repeated
 * calls are incremental: only chunks changed since the last call are
 * relabelled.
 *
 * anchor: nil for the world floor (solid voxels at y <= 0 and all connected
 * to them), or a point (world units) or a list of points: the solid voxel
 * containing each point anchors its region (a point in air anchors nothing).
 */
#include "common.h"

#include "voxel/islands.h"
#include "world/world.h"

#include <math.h>
#include <string.h>

#define MAX_ANCHORS 1024

/* The world of the Terrain at index 1, and its island tracker (the world's,
 * shared with detaching: world.h q_world_islands). */
static q_islands *check_tracker(lua_State *L, q_world **wout)
{
    luaL_checkudata(L, 1, QL_TERRAIN);
    lua_getiuservalue(L, 1, 1); /* the World userdata */
    q_world *w = ql_check_world(L, -1);
    lua_pop(L, 1);
    q_islands *s = q_world_islands(w);
    if (!s)
        luaL_error(L, "out of memory");
    *wout = w;
    return s;
}

static void to_voxel(lua_State *L, int arg, const double p[3], double voxel_size, int32_t out[3])
{
    for (int a = 0; a < 3; a++) {
        double v = floor(p[a] / voxel_size);
        if (!(v >= -Q_TERRAIN_LIMIT && v < Q_TERRAIN_LIMIT))
            luaL_argerror(L, arg, "anchor point is outside the terrain's limits");
        out[a] = (int32_t)v;
    }
}

/* Reads the anchor value at idx (argument number arg) into the tracker. */
static void check_anchor(lua_State *L, int idx, int arg, q_islands *s, q_world *w)
{
    double vs = q_world_get_def(w)->voxel_size;
    int32_t pts[MAX_ANCHORS][3];
    size_t n = 0;
    bool floor_anchor = lua_isnoneornil(L, idx);
    double p[3];
    if (!floor_anchor && ql_to_vec3(L, idx, p)) {
        ql_check_vec3(L, idx, p);
        to_voxel(L, arg, p, vs, pts[n++]);
    } else if (!floor_anchor) {
        luaL_argexpected(L, lua_istable(L, idx), arg, "nil, a point or a list of points");
        lua_Integer len = luaL_len(L, idx);
        if (len > MAX_ANCHORS)
            luaL_argerror(L, arg, lua_pushfstring(L, "at most %d anchor points, got %d", MAX_ANCHORS, (int)len));
        for (lua_Integer i = 1; i <= len; i++) {
            lua_geti(L, idx, i);
            if (!ql_to_vec3(L, -1, p) || !(isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2])))
                luaL_argerror(L, arg, lua_pushfstring(L, "anchor %d must be a finite point", (int)i));
            lua_pop(L, 1);
            to_voxel(L, arg, p, vs, pts[n++]);
        }
    }
    if (q_islands_set_anchors(s, floor_anchor, (const int32_t(*)[3])pts, n) != Q_OK)
        luaL_error(L, "out of memory");
}

static void update(lua_State *L, q_islands *s, q_world *w)
{
    char err[128];
    bool done;
    if (q_islands_update(s, q_world_terrain(w), 0, &done, err, sizeof err) != Q_OK)
        luaL_error(L, "%s", err);
}

static void push_region(lua_State *L, const q_island *isl, double vs)
{
    lua_createtable(L, 0, 6);
    ql_push_vec3(L, (double[3]){isl->box.min[0], isl->box.min[1], isl->box.min[2]});
    lua_setfield(L, -2, "min");
    ql_push_vec3(L, (double[3]){isl->box.max[0], isl->box.max[1], isl->box.max[2]});
    lua_setfield(L, -2, "max");
    lua_pushinteger(L, (lua_Integer)isl->voxels);
    lua_setfield(L, -2, "voxels");
    ql_push_vec3(L, (double[3]){isl->seed[0], isl->seed[1], isl->seed[2]});
    lua_setfield(L, -2, "seed");
    lua_pushboolean(L, isl->too_large);
    lua_setfield(L, -2, "too_large");
    lua_pushnumber(L, (double)isl->voxels * vs * vs * vs);
    lua_setfield(L, -2, "volume");
}

static void push_info(lua_State *L, q_islands *s)
{
    q_islands_stats st = q_islands_get_stats(s);
    lua_createtable(L, 0, 7);
    lua_pushinteger(L, (lua_Integer)st.relabelled);
    lua_setfield(L, -2, "relabelled");
    lua_pushinteger(L, (lua_Integer)st.candidates);
    lua_setfield(L, -2, "candidates");
    lua_pushinteger(L, (lua_Integer)st.visited);
    lua_setfield(L, -2, "visited");
    lua_pushboolean(L, st.full);
    lua_setfield(L, -2, "full");
    lua_pushinteger(L, (lua_Integer)st.chunks);
    lua_setfield(L, -2, "chunks");
    lua_pushinteger(L, (lua_Integer)st.components);
    lua_setfield(L, -2, "components");
    lua_pushinteger(L, (lua_Integer)st.bytes);
    lua_setfield(L, -2, "bytes");
}

/* T:islands([anchor]) -> list of {min=, max=, voxels=, seed=, too_large=,
 * volume=}, info {relabelled=, candidates=, visited=, full=, ...} */
static int terrain_islands(lua_State *L)
{
    q_world *w;
    q_islands *s = check_tracker(L, &w);
    check_anchor(L, 2, 2, s, w);
    update(L, s, w);
    double vs = q_world_get_def(w)->voxel_size;
    size_t n = q_islands_count(s);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        push_region(L, q_islands_get(s, i), vs);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    push_info(L, s);
    return 2;
}

/* T:remove_islands([anchor]) -> list of the regions removed (each with
 * `removed`, the voxels taken including the partly filled skin); islands
 * over the size cap stay. */
static int terrain_remove_islands(lua_State *L)
{
    q_world *w;
    q_islands *s = check_tracker(L, &w);
    check_anchor(L, 2, 2, s, w);
    update(L, s, w);
    double vs = q_world_get_def(w)->voxel_size;
    q_terrain *t = q_world_terrain(w);
    size_t n = q_islands_count(s);
    lua_createtable(L, (int)n, 0);
    int out = 0;
    for (size_t i = 0; i < n; i++) {
        const q_island *isl = q_islands_get(s, i);
        if (isl->too_large)
            continue;
        q_box eb = q_islands_extract_box(isl);
        size_t bytes = (size_t)q_box_volume(eb);
        uint8_t *buf = lua_newuserdatauv(L, 2 * bytes, 0); /* freed by the GC, even on error */
        char err[160];
        uint64_t taken = 0;
        q_status st = q_islands_extract(s, t, i, buf, buf + bytes, &taken, err, sizeof err);
        lua_pop(L, 1);
        if (st != Q_OK)
            return luaL_error(L, "remove_islands: %s", err);
        push_region(L, isl, vs);
        lua_pushinteger(L, (lua_Integer)taken);
        lua_setfield(L, -2, "removed");
        lua_rawseti(L, -2, ++out);
    }
    return 1;
}

/* T:detach_islands([{anchor=, max_hulls=16, max_bodies=0}]) -> list of the
 * Bodies made, count of islands too large to detach (they stay terrain).
 * Each island's voxels leave the terrain and become one body (world.h
 * q_world_detach_islands). world:on("detach") handlers hear of bodies
 * detached inside world:step (auto_detach), not of these. */
static int terrain_detach_islands(lua_State *L)
{
    q_world *w;
    q_islands *s = check_tracker(L, &w);
    q_detach_params p = q_default_detach_params();
    if (!lua_isnoneornil(L, 2)) {
        static const char *const fields[] = {"anchor", "max_hulls", "max_bodies", NULL};
        luaL_checktype(L, 2, LUA_TTABLE);
        ql_check_fields(L, 2, fields);
        lua_Integer v;
        if (ql_field_integer(L, 2, 2, "max_hulls", &v)) {
            if (v < 1 || v > 1024)
                return luaL_argerror(L, 2, "field 'max_hulls' must be 1..1024");
            p.max_hulls = (size_t)v;
        }
        if (ql_field_integer(L, 2, 2, "max_bodies", &v)) {
            if (v < 0)
                return luaL_argerror(L, 2, "field 'max_bodies' must be >= 0 (0 = all)");
            p.max_bodies = (size_t)v;
        }
        lua_getfield(L, 2, "anchor");
        check_anchor(L, lua_gettop(L), 2, s, w);
        lua_pop(L, 1);
    } else {
        check_anchor(L, 2, 2, s, w);
    }
    const q_handle *before;
    size_t first = q_world_detached(w, &before);
    char err[160];
    size_t too_large = 0;
    size_t made = q_world_detach_islands(w, &p, &too_large, NULL, err, sizeof err);
    const q_handle *list;
    q_world_detached(w, &list);
    lua_getiuservalue(L, 1, 1); /* the World userdata */
    int world_idx = lua_gettop(L);
    lua_createtable(L, (int)made, 0);
    for (size_t i = 0; i < made; i++) {
        ql_push_body(L, world_idx, list[first + i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_pushinteger(L, (lua_Integer)too_large);
    return 2;
}

void ql_open_islands(lua_State *L)
{
    static const luaL_Reg methods[] = {{"islands", terrain_islands},
                                       {"remove_islands", terrain_remove_islands},
                                       {"detach_islands", terrain_detach_islands},
                                       {NULL, NULL}};
    ql_add_methods(L, QL_TERRAIN, methods);
}
