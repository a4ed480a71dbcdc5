/* world.terrain: editing and reading voxels (API.md, section Terrain).
 *
 * Shape edits take world positions and sizes (metres) and convert to voxel
 * units with the world's voxel_size; get/read/write/fill_region/bounds take
 * integer voxel coordinates. Every argument is checked here before the
 * engine runs; the engine itself refuses edits over its limits and leaves
 * the terrain unchanged, and that refusal is reported against the size
 * argument that caused it.
 */
#include "common.h"

#include "core/alloc.h"
#include "mesh/dc.h"
#include "mesh/mesh.h"
#include "voxel/material.h"
#include "world/world.h"

#include <math.h>
#include <string.h>

typedef struct lterrain {
    q_handle world;
} lterrain;

typedef struct terrain_ref {
    q_terrain *t;
    double voxel_size;
    q_world *w; /* for the frame profile (world.h) */
} terrain_ref;

void ql_push_terrain(lua_State *L, int world_idx)
{
    world_idx = lua_absindex(L, world_idx);
    q_handle *wh = luaL_checkudata(L, world_idx, QL_WORLD); /* lworld starts with its handle */
    lterrain *u = lua_newuserdatauv(L, sizeof *u, 1);
    u->world = *wh;
    luaL_setmetatable(L, QL_TERRAIN);
    lua_pushvalue(L, world_idx); /* keep the world alive while the terrain is referenced */
    lua_setiuservalue(L, -2, 1);
}

static terrain_ref check_terrain(lua_State *L)
{
    lterrain *u = luaL_checkudata(L, 1, QL_TERRAIN);
    q_world *w = q_world_lookup(u->world);
    if (!w)
        luaL_error(L, "attempt to use a destroyed world");
    return (terrain_ref){q_world_terrain(w), q_world_get_def(w)->voxel_size, w};
}

/* Runs an edit; limit and size refusals are reported against size_arg. */
static int run_edit(lua_State *L, terrain_ref r, const q_edit *e, int size_arg)
{
    char err[256];
    double t0 = q_profile_now();
    q_status st = q_terrain_edit(r.t, e, err, sizeof err);
    q_world_profile_call(r.w, Q_PROFILE_EDIT, t0);
    if (st == Q_ERR_ARGUMENT || st == Q_ERR_TOO_LARGE)
        return luaL_argerror(L, size_arg, err);
    if (st != Q_OK)
        return luaL_error(L, "%s", err);
    return 0;
}

static void to_voxels(double v[3], double voxel_size)
{
    for (int a = 0; a < 3; a++)
        v[a] /= voxel_size;
}

static q_edit ball_edit(lua_State *L, terrain_ref r, q_edit_op op)
{
    q_edit e = {.op = op};
    e.shape.kind = Q_SHAPE_BALL;
    ql_check_vec3(L, 2, e.shape.center);
    to_voxels(e.shape.center, r.voxel_size);
    e.shape.radius = ql_check_positive(L, 3, "radius") / r.voxel_size;
    return e;
}

static int terrain_fill_ball(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    q_edit e = ball_edit(L, r, Q_EDIT_FILL);
    e.material = (uint8_t)ql_check_material(L, 4);
    return run_edit(L, r, &e, 3);
}

static int terrain_carve_ball(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    q_edit e = ball_edit(L, r, Q_EDIT_CARVE);
    return run_edit(L, r, &e, 3);
}

static int terrain_paint_ball(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    q_edit e = ball_edit(L, r, Q_EDIT_PAINT);
    int m = ql_check_material(L, 4);
    if (m == Q_MATERIAL_AIR)
        return luaL_argerror(L, 4, "cannot paint with air (use carve_ball)");
    e.material = (uint8_t)m;
    return run_edit(L, r, &e, 3);
}

static int terrain_smooth_ball(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    q_edit e = ball_edit(L, r, Q_EDIT_SMOOTH);
    e.strength = luaL_optnumber(L, 4, 0.5);
    if (!(e.strength >= 0 && e.strength <= 1))
        return luaL_argerror(L, 4, lua_pushfstring(L, "strength must be in 0..1, got %f", e.strength));
    return run_edit(L, r, &e, 3);
}

static int terrain_fill_block(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    q_edit e = {.op = Q_EDIT_FILL};
    e.shape.kind = Q_SHAPE_BLOCK;
    ql_check_vec3(L, 2, e.shape.center);
    to_voxels(e.shape.center, r.voxel_size);
    if (lua_type(L, 3) == LUA_TNUMBER) {
        double s = ql_check_positive(L, 3, "size");
        e.shape.size[0] = e.shape.size[1] = e.shape.size[2] = s;
    } else {
        ql_check_vec3(L, 3, e.shape.size);
        for (int a = 0; a < 3; a++)
            if (!(e.shape.size[a] > 0))
                return luaL_argerror(L, 3, lua_pushfstring(L, "size components must be > 0, got %f",
                                                           e.shape.size[a]));
    }
    to_voxels(e.shape.size, r.voxel_size);
    e.material = (uint8_t)ql_check_material(L, 4);
    e.shape.rotation[0] = 1;
    if (!lua_isnoneornil(L, 5))
        ql_check_quat(L, 5, e.shape.rotation);
    return run_edit(L, r, &e, 3);
}

static int terrain_fill_cylinder(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    q_edit e = {.op = Q_EDIT_FILL};
    e.shape.kind = Q_SHAPE_CYLINDER;
    ql_check_vec3(L, 2, e.shape.center);
    to_voxels(e.shape.center, r.voxel_size);
    e.shape.radius = ql_check_positive(L, 3, "radius") / r.voxel_size;
    e.shape.height = ql_check_positive(L, 4, "height") / r.voxel_size;
    e.material = (uint8_t)ql_check_material(L, 5);
    char err[256];
    double t0 = q_profile_now();
    q_status st = q_terrain_edit(r.t, &e, err, sizeof err);
    q_world_profile_call(r.w, Q_PROFILE_EDIT, t0);
    if (st == Q_ERR_ARGUMENT || st == Q_ERR_TOO_LARGE) /* blame the larger dimension */
        return luaL_argerror(L, e.shape.radius * 2 >= e.shape.height ? 3 : 4, err);
    if (st != Q_OK)
        return luaL_error(L, "%s", err);
    return 0;
}

/* min and max voxel corners at idx, idx+1, with max >= min. */
static q_box check_box(lua_State *L, int idx)
{
    q_box b;
    ql_check_ivec3(L, idx, b.min);
    ql_check_ivec3(L, idx + 1, b.max);
    for (int a = 0; a < 3; a++)
        if (b.max[a] < b.min[a])
            luaL_argerror(L, idx + 1, "max must be >= min on every axis");
    return b;
}

static int terrain_fill_region(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    q_box b = check_box(L, 2);
    int m = ql_check_material(L, 4);
    char err[256];
    double t0 = q_profile_now();
    q_status st = q_terrain_fill_region(r.t, b, (uint8_t)m, err, sizeof err);
    q_world_profile_call(r.w, Q_PROFILE_EDIT, t0);
    if (st == Q_ERR_ARGUMENT || st == Q_ERR_TOO_LARGE)
        return luaL_argerror(L, 3, err);
    if (st != Q_OK)
        return luaL_error(L, "%s", err);
    return 0;
}

static int terrain_get(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    int32_t p[3];
    for (int a = 0; a < 3; a++)
        p[a] = (int32_t)ql_check_int_range(L, 2 + a, -Q_TERRAIN_LIMIT, Q_TERRAIN_LIMIT - 1, "coordinate");
    q_voxel v = q_terrain_get(r.t, p[0], p[1], p[2]);
    lua_pushstring(L, q_material_get(v.material)->name);
    lua_pushnumber(L, v.occupancy / 255.0);
    return 2;
}

/* Scratch memory owned by Lua, so an error cannot leak it. */
static uint8_t *scratch(lua_State *L, size_t n)
{
    return lua_newuserdatauv(L, n ? n : 1, 0);
}

static int terrain_read(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    q_box b = check_box(L, 2);
    if (q_box_volume(b) > Q_READ_MAX_VOXELS)
        return luaL_argerror(L, 3, lua_pushfstring(L, "box holds more than %I voxels",
                                                   (lua_Integer)Q_READ_MAX_VOXELS));
    size_t n = (size_t)q_box_volume(b);
    uint8_t *mat = scratch(L, n), *occ = scratch(L, n);
    char err[256];
    if (q_terrain_read(r.t, b, mat, occ, err, sizeof err) != Q_OK)
        return luaL_error(L, "%s", err);
    lua_createtable(L, 0, 3);
    lua_createtable(L, 3, 0);
    for (int a = 0; a < 3; a++) {
        lua_pushinteger(L, b.max[a] - b.min[a]);
        lua_rawseti(L, -2, a + 1);
    }
    lua_setfield(L, -2, "size");
    /* Material names pushed once and reused from a small cache. */
    int names = lua_gettop(L) + 1;
    lua_createtable(L, q_material_count(), 0);
    for (int i = 0; i < q_material_count(); i++) {
        lua_pushstring(L, q_material_get(i)->name);
        lua_rawseti(L, names, i + 1);
    }
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, names, mat[i] + 1);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -3, "materials");
    lua_pop(L, 1);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushnumber(L, occ[i] / 255.0);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "occupancy");
    return 1;
}

static int terrain_write(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    q_box b;
    ql_check_ivec3(L, 2, b.min);
    luaL_checktype(L, 3, LUA_TTABLE);
    static const char *const fields[] = {"size", "materials", "occupancy", NULL};
    ql_check_fields(L, 3, fields);
    if (lua_getfield(L, 3, "size") != LUA_TTABLE)
        return luaL_argerror(L, 3, "field 'size' must be {nx, ny, nz}");
    for (int a = 0; a < 3; a++) {
        int isint = 0;
        lua_rawgeti(L, -1, a + 1);
        lua_Integer v = lua_tointegerx(L, -1, &isint);
        lua_pop(L, 1);
        if (!isint || v < 0 || v > Q_TERRAIN_LIMIT)
            return luaL_argerror(L, 3, "field 'size' must hold three integers >= 0");
        if ((lua_Integer)b.min[a] + v > Q_TERRAIN_LIMIT)
            return luaL_argerror(L, 3, "box reaches outside the world limits");
        b.max[a] = b.min[a] + (int32_t)v;
    }
    lua_pop(L, 1);
    if (q_box_volume(b) > Q_READ_MAX_VOXELS)
        return luaL_argerror(L, 3, lua_pushfstring(L, "box holds more than %I voxels",
                                                   (lua_Integer)Q_READ_MAX_VOXELS));
    size_t n = (size_t)q_box_volume(b);
    uint8_t *mat = scratch(L, n), *occ = scratch(L, n);
    if (lua_getfield(L, 3, "materials") != LUA_TTABLE || lua_getfield(L, 3, "occupancy") != LUA_TTABLE)
        return luaL_argerror(L, 3, "fields 'materials' and 'occupancy' must be arrays");
    int mt = lua_gettop(L) - 1, ot = lua_gettop(L);
    if (luaL_len(L, mt) != (lua_Integer)n || luaL_len(L, ot) != (lua_Integer)n)
        return luaL_argerror(L, 3, lua_pushfstring(L, "'materials' and 'occupancy' must hold %I entries",
                                                   (lua_Integer)n));
    /* Material names resolve through a name -> id table built once. */
    lua_createtable(L, 0, q_material_count());
    int ids = lua_gettop(L);
    for (int i = 0; i < q_material_count(); i++) {
        lua_pushinteger(L, i);
        lua_setfield(L, ids, q_material_get(i)->name);
    }
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, mt, (lua_Integer)i + 1);
        lua_pushvalue(L, -1);
        if (lua_rawget(L, ids) != LUA_TNUMBER)
            return luaL_argerror(L, 3, lua_pushfstring(L, "materials[%I] is not a known material name: %s",
                                                       (lua_Integer)i + 1, luaL_tolstring(L, -2, NULL)));
        mat[i] = (uint8_t)lua_tointeger(L, -1);
        lua_pop(L, 2);
        lua_rawgeti(L, ot, (lua_Integer)i + 1);
        int isnum = 0;
        double o = lua_tonumberx(L, -1, &isnum);
        lua_pop(L, 1);
        if (!isnum || !(o >= 0 && o <= 1))
            return luaL_argerror(L, 3, lua_pushfstring(L, "occupancy[%I] must be a number in 0..1",
                                                       (lua_Integer)i + 1));
        occ[i] = (uint8_t)lrint(o * 255.0);
    }
    char err[256];
    if (q_terrain_write(r.t, b, mat, occ, err, sizeof err) != Q_OK)
        return luaL_error(L, "%s", err);
    return 0;
}

static int terrain_is_solid(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    double p[3];
    ql_check_vec3(L, 2, p);
    to_voxels(p, r.voxel_size);
    lua_pushboolean(L, q_terrain_solid_density(r.t, p) >= 0.5);
    return 1;
}

static int terrain_bounds(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    q_box b;
    if (!q_terrain_bounds(r.t, &b)) {
        lua_pushnil(L);
        return 1;
    }
    ql_push_vec3(L, (double[3]){b.min[0], b.min[1], b.min[2]});
    ql_push_vec3(L, (double[3]){b.max[0], b.max[1], b.max[2]});
    return 2;
}

static int terrain_generate(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    static const char *const fields[] = {"kind", "size", "seed", "water_level", NULL};
    static const char *const kinds[] = {"flat", "hills", "caves", "islands", NULL};
    ql_check_fields(L, 2, fields);
    q_generate_def def = q_default_generate_def();
    int kind = ql_field_option(L, 2, 1, "kind", kinds);
    if (kind >= 0)
        def.kind = (q_terrain_kind)kind;
    double size[3];
    if (ql_field_vec3(L, 2, 1, "size", size)) {
        for (int a = 0; a < 3; a++) {
            if (size[a] != floor(size[a]) || size[a] < 1 || size[a] > 4096)
                return luaL_argerror(L, 2, "field 'size' must hold integers in 1..4096");
            def.size[a] = (int32_t)size[a];
        }
    }
    lua_Integer seed;
    if (ql_field_integer(L, 2, 1, "seed", &seed))
        def.seed = (uint64_t)seed;
    def.has_water = ql_field_number(L, 2, 1, "water_level", &def.water_level);
    char err[256];
    q_status st = q_terrain_generate(r.t, &def, err, sizeof err);
    if (st == Q_ERR_ARGUMENT || st == Q_ERR_TOO_LARGE)
        return luaL_argerror(L, 2, err);
    if (st != Q_OK)
        return luaL_error(L, "%s", err);
    return 0;
}

static int terrain_clear(lua_State *L)
{
    q_terrain_clear(check_terrain(L).t);
    return 0;
}

static int terrain_version(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)q_terrain_version(check_terrain(L).t));
    return 1;
}

typedef struct change_list {
    q_box box[Q_CHANGE_LOG_SIZE];
    uint64_t version[Q_CHANGE_LOG_SIZE];
    int n;
} change_list;

static void collect_change(void *ud, q_box box, uint64_t version)
{
    change_list *c = ud;
    if (c->n < Q_CHANGE_LOG_SIZE) {
        c->box[c->n] = box;
        c->version[c->n++] = version;
    }
}

/* changes_since(v) -> list of {min=, max=, version=} (oldest first) and the
 * current version; nil and the current version when the log no longer
 * reaches back to v (treat everything as changed). */
static int terrain_changes_since(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    lua_Integer since = luaL_checkinteger(L, 2);
    if (since < 0)
        return luaL_argerror(L, 2, "version must be >= 0");
    change_list *c = lua_newuserdatauv(L, sizeof *c, 0);
    c->n = 0;
    bool ok = q_terrain_changes_since(r.t, (uint64_t)since, collect_change, c);
    if (!ok) {
        lua_pushnil(L);
    } else {
        lua_createtable(L, c->n, 0);
        for (int i = 0; i < c->n; i++) {
            lua_createtable(L, 0, 3);
            ql_push_vec3(L, (double[3]){c->box[i].min[0], c->box[i].min[1], c->box[i].min[2]});
            lua_setfield(L, -2, "min");
            ql_push_vec3(L, (double[3]){c->box[i].max[0], c->box[i].max[1], c->box[i].max[2]});
            lua_setfield(L, -2, "max");
            lua_pushinteger(L, (lua_Integer)c->version[i]);
            lua_setfield(L, -2, "version");
            lua_rawseti(L, -2, i + 1);
        }
    }
    lua_pushinteger(L, (lua_Integer)q_terrain_version(r.t));
    return 2;
}

/* mesh(min, max [, {lod = 0, surface = "solid" | "water"}]) -> Mesh in world
 * units: the triangles of the edges owned by the voxel box (see mesh/dc.h). */
static int terrain_mesh(lua_State *L)
{
    terrain_ref r = check_terrain(L);
    q_box b = check_box(L, 2);
    q_surface surface = Q_SURFACE_SOLID;
    if (!lua_isnoneornil(L, 4)) {
        static const char *const fields[] = {"lod", "surface", NULL};
        static const char *const surfaces[] = {"solid", "water", NULL};
        ql_check_fields(L, 4, fields);
        lua_Integer lod;
        if (ql_field_integer(L, 4, 3, "lod", &lod) && lod != 0)
            return luaL_argerror(L, 4, "field 'lod' must be 0 (clipmap LOD meshes come from world:lod_mesh)");
        int s = ql_field_option(L, 4, 3, "surface", surfaces);
        if (s >= 0)
            surface = (q_surface)s;
    }
    if (q_box_volume(b) > Q_DC_MAX_SAMPLES)
        return luaL_argerror(L, 3, lua_pushfstring(L, "box holds more than %I voxels (mesh it in parts)",
                                                   (lua_Integer)Q_DC_MAX_SAMPLES));
    /* Output sized for a surface crossing the box a few times; grown and
     * retried in the rare case it is too small (never past the bounds). */
    size_t faces = 0;
    for (int a = 0; a < 3; a++) {
        int b1 = (a + 1) % 3, b2 = (a + 2) % 3;
        faces += (size_t)(b.max[b1] - b.min[b1]) * (size_t)(b.max[b2] - b.min[b2]);
    }
    size_t nv = 4 * faces + 1024, ni = 12 * faces + 4096;
    q_dc_output out = {0};
    q_status st;
    char err[256];
    unsigned char *mem = NULL;
    size_t bytes = 0;
    for (;;) {
        nv = nv < q_dc_vertex_bound(b) ? nv : q_dc_vertex_bound(b);
        ni = ni < q_dc_index_bound(b) ? ni : q_dc_index_bound(b);
        bytes = nv * (6 * sizeof(float) + 1) + ni * sizeof(uint32_t) + 1;
        mem = q_alloc(bytes);
        if (!mem)
            return luaL_error(L, "out of memory");
        out = (q_dc_output){0};
        out.positions = (float *)mem;
        out.normals = out.positions + 3 * nv;
        out.indices = (uint32_t *)(out.normals + 3 * nv);
        out.materials = (uint8_t *)(out.indices + ni);
        out.vertex_capacity = nv;
        out.index_capacity = ni;
        st = q_dc_mesh(r.t, b, surface, (float)r.voxel_size, &out, NULL, err, sizeof err);
        if (st != Q_ERR_OUTPUT)
            break;
        q_free(mem, bytes);
        nv *= 4;
        ni *= 4;
    }
    q_mesh *m = st == Q_OK ? q_mesh_create(out.vertex_count, out.index_count, true, true) : NULL;
    if (m && out.vertex_count > 0) { /* an empty mesh has no arrays at all */
        memcpy(m->positions, out.positions, out.vertex_count * 3 * sizeof(float));
        memcpy(m->normals, out.normals, out.vertex_count * 3 * sizeof(float));
        memcpy(m->materials, out.materials, out.vertex_count);
        memcpy(m->indices, out.indices, out.index_count * sizeof(uint32_t));
    }
    q_free(mem, bytes);
    if (st != Q_OK)
        return luaL_error(L, "%s", err);
    if (!m)
        return luaL_error(L, "out of memory");
    ql_push_mesh(L, m);
    return 1;
}

static int terrain_tostring(lua_State *L)
{
    lterrain *u = luaL_checkudata(L, 1, QL_TERRAIN);
    lua_pushstring(L, q_world_lookup(u->world) ? "Terrain" : "Terrain (destroyed world)");
    return 1;
}

void ql_open_terrain(lua_State *L)
{
    static const luaL_Reg methods[] = {{"fill_ball", terrain_fill_ball},
                                       {"fill_block", terrain_fill_block},
                                       {"fill_cylinder", terrain_fill_cylinder},
                                       {"fill_region", terrain_fill_region},
                                       {"carve_ball", terrain_carve_ball},
                                       {"paint_ball", terrain_paint_ball},
                                       {"smooth_ball", terrain_smooth_ball},
                                       {"generate", terrain_generate},
                                       {"clear", terrain_clear},
                                       {"get", terrain_get},
                                       {"read", terrain_read},
                                       {"write", terrain_write},
                                       {"is_solid", terrain_is_solid},
                                       {"bounds", terrain_bounds},
                                       {"version", terrain_version},
                                       {"changes_since", terrain_changes_since},
                                       {"mesh", terrain_mesh},
                                       {NULL, NULL}};
    static const luaL_Reg meta[] = {{"__tostring", terrain_tostring}, {NULL, NULL}};
    ql_new_class(L, QL_TERRAIN, methods, meta);
}
