/* quarry.mesh and the Mesh type (API.md, Meshes and geometry).
 *
 * A Mesh userdata owns an engine q_mesh (a value, not part of any world, so
 * it holds the pointer itself; __gc frees it once). Lua sees 1-based indices.
 *   quarry.mesh.new{vertices = {...}, indices = {...}}  flat or nested arrays
 *   m:vertex_count() m:triangle_count() m:vertices() m:indices() m:normals()
 *   m:materials() m:bounds() m:volume() m:area() m:is_closed() m:save(path)
 *   quarry.mesh.load(path [, {merge = s}]) -> Mesh | nil, message
 *   m:hull([{epsilon = s}]) -> Mesh, info
 */
#include "common.h"

#include "mesh/dc.h"
#include "mesh/import.h"
#include "mesh/mesh.h"
#include "physics/kdtree.h"
#include "voxel/material.h"

#include <math.h>
#include <string.h>

typedef struct lmesh {
    q_mesh *m;
} lmesh;

void ql_push_mesh(lua_State *L, struct q_mesh *m)
{
    lmesh *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->m = m;
    luaL_setmetatable(L, QL_MESH);
}

struct q_mesh *ql_check_mesh(lua_State *L, int idx)
{
    lmesh *u = luaL_checkudata(L, idx, QL_MESH);
    if (!u->m) /* its __gc was called by hand (found by fuzz/api.lua) */
        luaL_argerror(L, idx, "attempt to use a freed Mesh");
    return u->m;
}

/* Reads a flat ({x1, y1, z1, x2, ...}) or nested ({{x, y, z}, ...} or Vec3s)
 * coordinate array at idx into a Lua-owned buffer; returns the vertex count. */
static size_t read_vertices(lua_State *L, int idx, float **out)
{
    lua_Integer n = luaL_len(L, idx);
    if (n == 0) {
        *out = NULL;
        return 0;
    }
    bool nested = lua_rawgeti(L, idx, 1) != LUA_TNUMBER;
    lua_pop(L, 1);
    if (!nested && n % 3)
        luaL_argerror(L, 1, "field 'vertices' as a flat array needs 3 numbers per vertex");
    size_t count = nested ? (size_t)n : (size_t)n / 3;
    if (count > (1u << 26))
        luaL_argerror(L, 1, "field 'vertices' holds too many vertices");
    float *v = lua_newuserdatauv(L, count * 3 * sizeof(float), 0);
    for (size_t i = 0; i < count; i++) {
        double p[3];
        if (nested) {
            lua_rawgeti(L, idx, (lua_Integer)i + 1);
            if (!ql_to_vec3(L, -1, p))
                luaL_argerror(L, 1, lua_pushfstring(L, "vertices[%I] is not a point", (lua_Integer)i + 1));
            lua_pop(L, 1);
        } else {
            for (int a = 0; a < 3; a++) {
                lua_rawgeti(L, idx, (lua_Integer)(3 * i + a) + 1);
                int isnum = 0;
                p[a] = lua_tonumberx(L, -1, &isnum);
                lua_pop(L, 1);
                if (!isnum)
                    luaL_argerror(L, 1, lua_pushfstring(L, "vertices[%I] is not a number", (lua_Integer)(3 * i + a) + 1));
            }
        }
        for (int a = 0; a < 3; a++) {
            if (!isfinite(p[a]) || fabs(p[a]) > 1e30)
                luaL_argerror(L, 1, lua_pushfstring(L, "vertex %I has a non-finite coordinate", (lua_Integer)i + 1));
            v[3 * i + a] = (float)p[a];
        }
    }
    *out = v;
    return count;
}

static size_t read_indices(lua_State *L, int idx, size_t nvert, uint32_t **out)
{
    lua_Integer n = luaL_len(L, idx);
    bool nested = n > 0 && lua_rawgeti(L, idx, 1) == LUA_TTABLE;
    if (n > 0)
        lua_pop(L, 1);
    size_t count = nested ? (size_t)n * 3 : (size_t)n;
    if (count % 3)
        luaL_argerror(L, 1, "field 'indices' needs 3 indices per triangle");
    if (count > (1u << 28))
        luaL_argerror(L, 1, "field 'indices' holds too many triangles");
    uint32_t *ix = lua_newuserdatauv(L, (count ? count : 1) * sizeof(uint32_t), 0);
    for (size_t i = 0; i < count; i++) {
        if (nested) {
            lua_rawgeti(L, idx, (lua_Integer)(i / 3) + 1);
            if (!lua_istable(L, -1))
                luaL_argerror(L, 1, lua_pushfstring(L, "indices[%I] is not a triangle", (lua_Integer)(i / 3) + 1));
            lua_rawgeti(L, -1, (lua_Integer)(i % 3) + 1);
        } else {
            lua_rawgeti(L, idx, (lua_Integer)i + 1);
        }
        int isint = 0;
        lua_Integer k = lua_tointegerx(L, -1, &isint);
        lua_pop(L, nested ? 2 : 1);
        if (!isint || k < 1 || (size_t)k > nvert)
            luaL_argerror(L, 1, lua_pushfstring(L, "index %I must be an integer in 1..%I", (lua_Integer)i + 1,
                                                (lua_Integer)nvert));
        ix[i] = (uint32_t)(k - 1);
    }
    *out = ix;
    return count;
}

/* quarry.mesh.box(size): size a number (a cube) or full extents {x, y, z}. */
static int mesh_box(lua_State *L)
{
    double size[3];
    if (lua_type(L, 1) == LUA_TNUMBER) {
        size[0] = size[1] = size[2] = ql_check_positive(L, 1, "size");
    } else {
        ql_check_vec3(L, 1, size);
        for (int k = 0; k < 3; k++)
            if (!(size[k] > 0))
                return luaL_argerror(L, 1, lua_pushfstring(L, "size must be > 0 on every axis, got %f", size[k]));
    }
    q_mesh *m = q_mesh_box(size);
    if (!m)
        return luaL_error(L, "out of memory");
    ql_push_mesh(L, m);
    return 1;
}

/* quarry.mesh.sphere(radius [, detail = 3]): an icosphere of 20 * 4^detail
 * triangles (detail 0..7). */
static int mesh_sphere(lua_State *L)
{
    double r = ql_check_positive(L, 1, "radius");
    int detail = lua_isnoneornil(L, 2) ? 3 : (int)ql_check_int_range(L, 2, 0, 7, "detail");
    q_mesh *m = q_mesh_sphere(r, detail);
    if (!m)
        return luaL_error(L, "out of memory");
    ql_push_mesh(L, m);
    return 1;
}

static int mesh_new(lua_State *L)
{
    static const char *const fields[] = {"vertices", "indices", NULL};
    ql_check_fields(L, 1, fields);
    if (lua_getfield(L, 1, "vertices") != LUA_TTABLE)
        return luaL_argerror(L, 1, "field 'vertices' must be an array");
    if (lua_getfield(L, 1, "indices") != LUA_TTABLE)
        return luaL_argerror(L, 1, "field 'indices' must be an array");
    float *v;
    uint32_t *ix;
    size_t nv = read_vertices(L, 2, &v);
    size_t ni = read_indices(L, 3, nv, &ix);
    q_mesh *m = q_mesh_create(nv, ni, false, false);
    if (!m)
        return luaL_error(L, "out of memory");
    if (nv)
        memcpy(m->positions, v, nv * 3 * sizeof(float));
    if (ni)
        memcpy(m->indices, ix, ni * sizeof(uint32_t));
    ql_push_mesh(L, m);
    return 1;
}

static int mesh_vertex_count(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)ql_check_mesh(L, 1)->vertex_count);
    return 1;
}

static int mesh_triangle_count(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)(ql_check_mesh(L, 1)->index_count / 3));
    return 1;
}

static int mesh_vertices(lua_State *L)
{
    q_mesh *m = ql_check_mesh(L, 1);
    lua_createtable(L, (int)m->vertex_count, 0);
    for (size_t i = 0; i < m->vertex_count; i++) {
        const float *p = m->positions + 3 * i;
        ql_push_vec3(L, (double[3]){p[0], p[1], p[2]});
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int mesh_normals(lua_State *L)
{
    q_mesh *m = ql_check_mesh(L, 1);
    if (!m->normals) {
        lua_pushnil(L);
        return 1;
    }
    lua_createtable(L, (int)m->vertex_count, 0);
    for (size_t i = 0; i < m->vertex_count; i++) {
        const float *p = m->normals + 3 * i;
        ql_push_vec3(L, (double[3]){p[0], p[1], p[2]});
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int mesh_materials(lua_State *L)
{
    q_mesh *m = ql_check_mesh(L, 1);
    if (!m->materials) {
        lua_pushnil(L);
        return 1;
    }
    lua_createtable(L, (int)m->vertex_count, 0);
    for (size_t i = 0; i < m->vertex_count; i++) {
        const q_material *mat = q_material_get(m->materials[i]);
        lua_pushstring(L, mat ? mat->name : "air");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int mesh_indices(lua_State *L)
{
    q_mesh *m = ql_check_mesh(L, 1);
    lua_createtable(L, (int)m->index_count, 0);
    for (size_t i = 0; i < m->index_count; i++) {
        lua_pushinteger(L, (lua_Integer)m->indices[i] + 1);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int mesh_bounds(lua_State *L)
{
    double mn[3], mx[3];
    if (!q_mesh_bounds(ql_check_mesh(L, 1), mn, mx)) {
        lua_pushnil(L);
        return 1;
    }
    ql_push_vec3(L, mn);
    ql_push_vec3(L, mx);
    return 2;
}

static int mesh_volume(lua_State *L)
{
    lua_pushnumber(L, q_mesh_volume(ql_check_mesh(L, 1)));
    return 1;
}

static int mesh_area(lua_State *L)
{
    lua_pushnumber(L, q_mesh_area(ql_check_mesh(L, 1)));
    return 1;
}

static int mesh_is_closed(lua_State *L)
{
    lua_pushboolean(L, q_mesh_is_closed(ql_check_mesh(L, 1)));
    return 1;
}

static int mesh_save(lua_State *L)
{
    q_mesh *m = ql_check_mesh(L, 1);
    const char *path = luaL_checkstring(L, 2);
    char err[512];
    if (q_mesh_save_obj(m, path, err, sizeof err) != Q_OK) {
        luaL_pushfail(L);
        lua_pushstring(L, err);
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* m:raycast(origin, direction, max_distance) -> {position, normal, distance,
 * triangle} | nil. Brute force over every triangle (two-sided): meshes are
 * values, and this is also the reference the terrain queries are checked
 * against. */
static int mesh_raycast(lua_State *L)
{
    q_mesh *m = ql_check_mesh(L, 1);
    double o[3], d[3];
    ql_check_vec3(L, 2, o);
    ql_check_vec3(L, 3, d);
    double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (!(len > 0))
        return luaL_argerror(L, 3, "direction must be non-zero");
    double maxd = luaL_checknumber(L, 4);
    if (!(maxd >= 0))
        return luaL_argerror(L, 4, "max_distance must be >= 0");
    float of[3], df[3];
    for (int k = 0; k < 3; k++) {
        of[k] = (float)o[k];
        df[k] = (float)(d[k] / len);
    }
    float best = INFINITY;
    size_t best_tri = 0;
    for (size_t t = 0; t < m->index_count / 3; t++) {
        const uint32_t *ix = m->indices + 3 * t;
        float h = q_ray_triangle(of, df, m->positions + 3 * ix[0], m->positions + 3 * ix[1], m->positions + 3 * ix[2]);
        if (h >= 0 && h <= maxd && h < best) {
            best = h;
            best_tri = t;
        }
    }
    if (best == INFINITY) {
        lua_pushnil(L);
        return 1;
    }
    const uint32_t *ix = m->indices + 3 * best_tri;
    const float *a = m->positions + 3 * ix[0], *b = m->positions + 3 * ix[1], *c = m->positions + 3 * ix[2];
    double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
    double nl = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    double sign = (n[0] * d[0] + n[1] * d[1] + n[2] * d[2]) > 0 ? -1 : 1;
    lua_createtable(L, 0, 4);
    ql_push_vec3(L, (double[3]){o[0] + d[0] / len * best, o[1] + d[1] / len * best, o[2] + d[2] / len * best});
    lua_setfield(L, -2, "position");
    ql_push_vec3(L, (double[3]){sign * n[0] / nl, sign * n[1] / nl, sign * n[2] / nl});
    lua_setfield(L, -2, "normal");
    lua_pushnumber(L, best);
    lua_setfield(L, -2, "distance");
    lua_pushinteger(L, (lua_Integer)best_tri + 1);
    lua_setfield(L, -2, "triangle");
    return 1;
}

/* quarry.mesh.load(path [, {merge = s}]) -> Mesh | nil, message
 * (mesh/import.h: OBJ, OFF, STL, PLY, glTF 2; meshes of the scene joined
 * with node transforms, vertices within s welded, default 1e-6 of the
 * bounding-box diagonal, the hull's quantization distance). Bad arguments
 * raise errors; files that cannot be loaded return nil and the reason. */
static int mesh_load(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    q_import_def def = q_default_import_def();
    if (!lua_isnoneornil(L, 2)) {
        static const char *const fields[] = {"merge", NULL};
        ql_check_fields(L, 2, fields);
        double merge;
        if (ql_field_number(L, 2, 2, "merge", &merge)) {
            if (!(merge > 0))
                return luaL_argerror(L, 2, lua_pushfstring(L, "field 'merge' must be > 0, got %f", merge));
            def.merge = merge;
        }
    }
    q_status st;
    char err[512];
    q_mesh *m = q_mesh_import(path, &def, &st, err, sizeof err);
    if (!m) {
        luaL_pushfail(L);
        lua_pushstring(L, err);
        return 2;
    }
    ql_push_mesh(L, m);
    return 1;
}

/* m:hull([{epsilon = s}]) -> Mesh, info: the convex hull of the mesh's
 * vertices (see geom.c for the shapes and info). */
static int mesh_hull(lua_State *L)
{
    q_mesh *m = ql_check_mesh(L, 1);
    lua_settop(L, 2); /* the options stay at 2 */
    if (m->vertex_count == 0)
        return luaL_argerror(L, 1, "the mesh has no vertices");
    size_t n = m->vertex_count;
    double *p = lua_newuserdatauv(L, 3 * n * sizeof(double), 0);
    for (size_t i = 0; i < 3 * n; i++)
        p[i] = m->positions[i];
    return ql_hull_points(L, p, n, 2);
}

static int mesh_gc(lua_State *L)
{
    lmesh *u = luaL_checkudata(L, 1, QL_MESH);
    q_mesh_destroy(u->m);
    u->m = NULL;
    return 0;
}

static int mesh_tostring(lua_State *L)
{
    q_mesh *m = ql_check_mesh(L, 1);
    lua_pushfstring(L, "Mesh (%I vertices, %I triangles)", (lua_Integer)m->vertex_count,
                    (lua_Integer)(m->index_count / 3));
    return 1;
}

int ql_open_mesh(lua_State *L)
{
    static const luaL_Reg methods[] = {{"vertex_count", mesh_vertex_count},
                                       {"triangle_count", mesh_triangle_count},
                                       {"vertices", mesh_vertices},
                                       {"normals", mesh_normals},
                                       {"materials", mesh_materials},
                                       {"indices", mesh_indices},
                                       {"bounds", mesh_bounds},
                                       {"volume", mesh_volume},
                                       {"area", mesh_area},
                                       {"is_closed", mesh_is_closed},
                                       {"save", mesh_save},
                                       {"raycast", mesh_raycast},
                                       {"hull", mesh_hull},
                                       {NULL, NULL}};
    static const luaL_Reg meta[] = {{"__gc", mesh_gc}, {"__tostring", mesh_tostring}, {NULL, NULL}};
    ql_new_class(L, QL_MESH, methods, meta);
    static const luaL_Reg funcs[] = {
        {"new", mesh_new}, {"load", mesh_load}, {"box", mesh_box}, {"sphere", mesh_sphere}, {NULL, NULL}};
    luaL_newlib(L, funcs);
    return 1;
}
