/* Clipmap LOD from Lua: world:set_viewer, world:lod_mesh, the lod option of
 * terrain:mesh and the LOD fields of world:stats (mesh/octree.h,
 * mesh/clipmap.h). Terrain:mesh and World:stats are wrapped: the original
 * functions run first and stay the only path for lod = 0. */
#include "common.h"

#include "core/alloc.h"
#include "mesh/clipmap.h"
#include "mesh/mesh.h"
#include "world/world.h"

#include <string.h>

static q_clipmap *check_clipmap(lua_State *L, q_world *w)
{
    q_clipmap *c = q_world_clipmap(w);
    if (!c)
        luaL_error(L, "out of memory");
    return c;
}

/* world:set_viewer(pos [, {distances = {d1, d2, d3, d4}}]) -- world units */
static int world_set_viewer(lua_State *L)
{
    q_world *w = ql_check_world(L, 1);
    double p[3], d[Q_LOD_MAX_LEVEL];
    ql_check_vec3(L, 2, p);
    bool have_d = false;
    double vs = q_world_get_def(w)->voxel_size;
    if (!lua_isnoneornil(L, 3)) {
        static const char *const fields[] = {"distances", NULL};
        ql_check_fields(L, 3, fields);
        if (lua_getfield(L, 3, "distances") != LUA_TNIL) {
            if (!lua_istable(L, -1) || luaL_len(L, -1) != Q_LOD_MAX_LEVEL)
                return luaL_argerror(L, 3, "field 'distances' must be a list of 4 increasing distances > 0");
            for (int i = 0; i < Q_LOD_MAX_LEVEL; i++) {
                lua_geti(L, -1, i + 1);
                int ok;
                d[i] = lua_tonumberx(L, -1, &ok) / vs;
                lua_pop(L, 1);
                if (!ok || !(d[i] > 0) || (i > 0 && !(d[i] > d[i - 1])) || d[i] != d[i] || d[i] > 1e300)
                    return luaL_argerror(L, 3, "field 'distances' must be a list of 4 increasing distances > 0");
            }
            have_d = true;
        }
        lua_pop(L, 1);
    }
    q_clipmap *c = check_clipmap(L, w);
    for (int a = 0; a < 3; a++)
        p[a] /= vs;
    if (have_d)
        q_clipmap_set_distances(c, d);
    q_clipmap_set_viewer(c, p);
    return 0;
}

static void push_info(lua_State *L, const q_lod_result *r)
{
    lua_createtable(L, 0, 10);
    lua_pushinteger(L, (lua_Integer)r->chunk_triangles);
    lua_setfield(L, -2, "chunk_triangles");
    lua_pushinteger(L, (lua_Integer)r->seam_triangles);
    lua_setfield(L, -2, "seam_triangles");
    lua_pushinteger(L, (lua_Integer)r->lod0_triangles);
    lua_setfield(L, -2, "lod0_triangles");
    lua_createtable(L, Q_LOD_MAX_LEVEL + 1, 0);
    for (int i = 0; i <= Q_LOD_MAX_LEVEL; i++) {
        lua_pushinteger(L, (lua_Integer)r->triangles_per_level[i]);
        lua_seti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "triangles_per_level");
    lua_pushinteger(L, (lua_Integer)r->remeshed_chunks);
    lua_setfield(L, -2, "remeshed_chunks");
    lua_pushinteger(L, (lua_Integer)r->blocks);
    lua_setfield(L, -2, "blocks");
    lua_pushinteger(L, (lua_Integer)r->rebuilt_blocks);
    lua_setfield(L, -2, "rebuilt_blocks");
    lua_pushinteger(L, (lua_Integer)r->seams);
    lua_setfield(L, -2, "seams");
    lua_pushinteger(L, (lua_Integer)r->rebuilt_seams);
    lua_setfield(L, -2, "rebuilt_seams");
}

static int push_result(lua_State *L, q_status st, q_lod_result *r, const char *err, int box_arg)
{
    if (st == Q_ERR_ARGUMENT || st == Q_ERR_TOO_LARGE)
        return luaL_argerror(L, box_arg, err);
    if (st != Q_OK)
        return luaL_error(L, "%s", err);
    q_mesh *m = r->mesh;
    if (!m) {
        m = q_mesh_create(0, 0, true, true);
        if (!m)
            return luaL_error(L, "out of memory");
        m->vertex_count = m->index_count = 0;
    }
    r->mesh = NULL;
    ql_push_mesh(L, m);
    push_info(L, r);
    return 2;
}

static q_box check_box(lua_State *L, int idx)
{
    q_box b;
    ql_check_ivec3(L, idx, b.min);
    ql_check_ivec3(L, idx + 1, b.max);
    for (int a = 0; a < 3; a++)
        if (b.max[a] < b.min[a])
            luaL_argerror(L, idx + 1, "max must be >= min on every axis");
    if (!q_box_in_limits(b))
        luaL_argerror(L, idx + 1, "box outside the terrain limits");
    return b;
}

/* world:lod_mesh([min, max] [, {wait = false}]) or world:lod_mesh{wait = ...}
 * -> Mesh, info: the active chunk meshes then the seams, over the voxel box
 * (default: the terrain's bounds). Without wait it returns the last complete
 * mesh of that box at once (info.current = false while a rebuild for the
 * present viewer or terrain runs on the clipmap's worker thread, which this
 * call starts when needed); it waits only when the box has no mesh yet.
 * With wait = true it returns the mesh for the present viewer and terrain. */
static int world_lod_mesh(lua_State *L)
{
    q_world *w = ql_check_world(L, 1);
    q_box b;
    int opt = 0;
    if (lua_istable(L, 2) && lua_isnoneornil(L, 3)) {
        opt = 2; /* a box needs both corners: one table is the options */
        lua_settop(L, 2);
    } else if (!lua_isnoneornil(L, 2)) {
        b = check_box(L, 2);
        opt = lua_isnoneornil(L, 4) ? 0 : 4;
    }
    bool wait = false;
    if (opt) {
        static const char *const fields[] = {"wait", NULL};
        luaL_checktype(L, opt, LUA_TTABLE);
        ql_check_fields(L, opt, fields);
        ql_field_boolean(L, opt, opt, "wait", &wait);
    }
    if (opt == 2 || lua_isnoneornil(L, 2)) {
        if (!q_terrain_bounds(q_world_terrain(w), &b))
            b = (q_box){{0, 0, 0}, {0, 0, 0}};
        else
            for (int a = 0; a < 3; a++) {
                b.min[a] -= 1;
                b.max[a] += 1;
            }
    }
    q_clipmap *c = check_clipmap(L, w);
    char err[256];
    q_jobs *jobs = q_world_jobs(w);
    const q_terrain *t = q_world_terrain(w);
    float scale = (float)q_world_get_def(w)->voxel_size;
    double t0 = q_profile_now();
    q_status st = q_clipmap_update(c, jobs, t, b, scale, wait, err, sizeof err);
    q_clipmap_result res = q_clipmap_get(c);
    if (st == Q_OK && (res.serial == 0 || memcmp(&res.box, &b, sizeof b) != 0)) {
        st = q_clipmap_update(c, jobs, t, b, scale, true, err, sizeof err);
        res = q_clipmap_get(c);
    }
    q_world_profile_call(w, Q_PROFILE_MESH, t0);
    q_lod_result r = res.info;
    r.mesh = NULL;
    if (st == Q_OK && res.mesh && res.mesh->vertex_count) {
        const q_mesh *m = res.mesh;
        r.mesh = q_mesh_create(m->vertex_count, m->index_count, true, true);
        if (!r.mesh)
            return luaL_error(L, "out of memory");
        memcpy(r.mesh->positions, m->positions, 3 * m->vertex_count * sizeof(float));
        memcpy(r.mesh->normals, m->normals, 3 * m->vertex_count * sizeof(float));
        memcpy(r.mesh->materials, m->materials, m->vertex_count);
        memcpy(r.mesh->indices, m->indices, m->index_count * sizeof(uint32_t));
    }
    int n = push_result(L, st, &r, err, opt == 4 || opt == 0 ? 3 : 2);
    lua_pushboolean(L, res.current);
    lua_setfield(L, -2, "current");
    return n;
}

typedef struct uniform_level {
    int level;
} uniform_level;

static int uniform_cb(void *ud, const int32_t ch[3])
{
    (void)ch;
    return ((uniform_level *)ud)->level;
}

/* terrain:mesh(min, max, {lod = n}) with n > 0: every chunk at level n. */
static int terrain_mesh(lua_State *L)
{
    lua_Integer lod = 0;
    if (lua_istable(L, 4)) {
        lua_getfield(L, 4, "lod");
        if (lua_isinteger(L, -1))
            lod = lua_tointeger(L, -1);
        lua_pop(L, 1);
    }
    if (lod == 0 || !lua_istable(L, 4)) {
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_insert(L, 1);
        lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
        return lua_gettop(L);
    }
    q_handle *h = luaL_checkudata(L, 1, QL_TERRAIN); /* the Terrain userdata starts with its world's handle */
    q_world *w = q_world_lookup(*h);
    if (!w)
        return luaL_error(L, "attempt to use a destroyed world");
    q_box b = check_box(L, 2);
    static const char *const fields[] = {"lod", "surface", NULL};
    static const char *const surfaces[] = {"solid", "water", NULL};
    ql_check_fields(L, 4, fields);
    if (lod < 0 || lod > Q_LOD_MAX_LEVEL)
        return luaL_argerror(L, 4, "field 'lod' must be 0..4");
    int s = ql_field_option(L, 4, 4, "surface", surfaces);
    uniform_level u = {(int)lod};
    q_lod_result r;
    char err[256];
    q_status st = q_lod_build(q_world_terrain(w), b, s == 1 ? Q_SURFACE_WATER : Q_SURFACE_SOLID,
                              (float)q_world_get_def(w)->voxel_size, uniform_cb, &u, &r, err, sizeof err);
    push_result(L, st, &r, err, 3);
    lua_pop(L, 1); /* just the Mesh, as for lod = 0 */
    return 1;
}

/* world:stats() plus lod_triangles = {LOD0, ..., LOD4} and seam_triangles of
 * the last world:lod_mesh. */
static int world_stats(lua_State *L)
{
    q_world *w = ql_check_world(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    q_clipmap *c = check_clipmap(L, w);
    lua_createtable(L, Q_LOD_MAX_LEVEL + 1, 0);
    for (int i = 0; i <= Q_LOD_MAX_LEVEL; i++) {
        lua_pushinteger(L, (lua_Integer)c->last.triangles_per_level[i]);
        lua_seti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "lod_triangles");
    lua_pushinteger(L, (lua_Integer)c->last.seam_triangles);
    lua_setfield(L, -2, "seam_triangles");
    return 1;
}

/* Replaces method `name` of class `cls` by fn with the old one as upvalue. */
static void wrap_method(lua_State *L, const char *cls, const char *name, lua_CFunction fn)
{
    luaL_getmetatable(L, cls);
    if (lua_getfield(L, -1, "methods") != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_getfield(L, -1, "__index");
    }
    lua_getfield(L, -1, name);
    lua_pushcclosure(L, fn, 1);
    lua_setfield(L, -2, name);
    lua_pop(L, 2);
}

void ql_open_lod(lua_State *L)
{
    static const luaL_Reg world_methods[] = {{"set_viewer", world_set_viewer}, {"lod_mesh", world_lod_mesh}, {NULL, NULL}};
    ql_add_methods(L, QL_WORLD, world_methods);
    wrap_method(L, QL_WORLD, "stats", world_stats);
    wrap_method(L, QL_TERRAIN, "mesh", terrain_mesh);
}
