/* quarry.voronoi and Mesh:shatter (engine/geom/voronoi.h, fracture.h).
 *
 *   quarry.voronoi(sites, min, max [, {gpu = false}]) -> {cell, ...}
 *     cell = {site = Vec3, volume =, vertices = {Vec3, ...},
 *             faces = {{i, j, k, ...}, ...}  (1-based into vertices,
 *                                             counter-clockwise from outside),
 *             neighbors = {n, ...}}           (per face: 1-based site index,
 *                                             or -1..-6 for the walls x0 x1 y0 y1 z0 z1)
 *     Sites: an array of points, all inside the box, no two equal (else an
 *     error). gpu = true computes the cells with the host's compute shaders
 *     (quarry.graphics must exist: only in the host program with a GL 4.3
 *     context); without them it raises an error.
 *
 *   m:shatter{pieces = 16, at = nil, seed = 1, points = nil} -> {Mesh, ...}, info
 *     See fracture.h. info = {convex = {bool per fragment},
 *     interior = {first interior triangle (1-based) per fragment},
 *     sites = {Vec3, ...}, cells = n}.
 */
#include "common.h"

#include "geom/fracture.h"
#include "geom/voronoi.h"
#include "mesh/mesh.h"

#include <math.h>
#include <string.h>

/* Points at idx (argument arg): array of vec3s; returns a Lua-owned buffer. */
static size_t read_sites(lua_State *L, int idx, int arg, double **out, size_t max)
{
    if (!lua_istable(L, idx))
        luaL_typeerror(L, arg, "table of points");
    lua_Integer n = luaL_len(L, idx);
    if (n < 0 || (size_t)n > max)
        luaL_argerror(L, arg, lua_pushfstring(L, "too many points (the limit is %I)", (lua_Integer)max));
    double *p = lua_newuserdatauv(L, (size_t)(n ? n : 1) * 3 * sizeof(double), 0);
    for (lua_Integer i = 0; i < n; i++) {
        lua_rawgeti(L, idx, i + 1);
        if (!ql_to_vec3(L, -1, p + 3 * i))
            luaL_argerror(L, arg, lua_pushfstring(L, "points[%I] is not a finite point", i + 1));
        lua_pop(L, 1);
    }
    *out = p;
    return (size_t)n;
}

static void push_cells(lua_State *L, const q_voronoi *v)
{
    lua_createtable(L, (int)v->cell_count, 0);
    for (size_t i = 0; i < v->cell_count; i++) {
        const q_voronoi_cell *c = &v->cells[i];
        lua_createtable(L, 0, 5);
        ql_push_vec3(L, c->site);
        lua_setfield(L, -2, "site");
        lua_pushnumber(L, c->volume);
        lua_setfield(L, -2, "volume");
        lua_createtable(L, c->vertex_count, 0);
        for (int k = 0; k < c->vertex_count; k++) {
            ql_push_vec3(L, c->vertices + 3 * k);
            lua_rawseti(L, -2, k + 1);
        }
        lua_setfield(L, -2, "vertices");
        lua_createtable(L, c->face_count, 0);
        for (int f = 0; f < c->face_count; f++) {
            int s = c->face_start[f], e = c->face_start[f + 1];
            lua_createtable(L, e - s, 0);
            for (int k = s; k < e; k++) {
                lua_pushinteger(L, c->face_vertices[k] + 1);
                lua_rawseti(L, -2, k - s + 1);
            }
            lua_rawseti(L, -2, f + 1);
        }
        lua_setfield(L, -2, "faces");
        lua_createtable(L, c->face_count, 0);
        for (int f = 0; f < c->face_count; f++) {
            int nb = c->face_neighbor[f];
            lua_pushinteger(L, nb >= 0 ? nb + 1 : nb);
            lua_rawseti(L, -2, f + 1);
        }
        lua_setfield(L, -2, "neighbors");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

static int l_voronoi(lua_State *L)
{
    double *sites, lo[3], hi[3];
    lua_settop(L, 4);
    size_t n = read_sites(L, 1, 1, &sites, 1u << 22);
    ql_check_vec3(L, 2, lo);
    ql_check_vec3(L, 3, hi);
    bool gpu = false;
    if (!lua_isnil(L, 4)) {
        static const char *const fields[] = {"gpu", NULL};
        luaL_checktype(L, 4, LUA_TTABLE);
        ql_check_fields(L, 4, fields);
        ql_field_boolean(L, 4, 4, "gpu", &gpu);
    }
    for (int k = 0; k < 3; k++)
        if (!(lo[k] < hi[k]))
            return luaL_argerror(L, 3, "max must be above min on every axis");
    char err[160];
    q_voronoi *v;
    if (gpu) {
        if (!q_voronoi_gpu)
            return luaL_error(L, "quarry.voronoi: gpu = true needs the host program with a GL 4.3 context");
        v = q_voronoi_gpu(sites, n, lo, hi, err, sizeof err);
    } else {
        v = q_voronoi_compute(sites, n, lo, hi, err, sizeof err);
    }
    if (!v)
        return luaL_error(L, "quarry.voronoi: %s", err);
    push_cells(L, v);
    q_voronoi_free(v);
    return 1;
}

static int mesh_shatter(lua_State *L)
{
    q_mesh *m = ql_check_mesh(L, 1);
    lua_settop(L, 2);
    q_fracture_params p = q_default_fracture_params();
    double *points = NULL;
    if (!lua_isnil(L, 2)) {
        static const char *const fields[] = {"pieces", "at", "seed", "points", NULL};
        luaL_checktype(L, 2, LUA_TTABLE);
        ql_check_fields(L, 2, fields);
        lua_Integer i;
        if (ql_field_integer(L, 2, 2, "pieces", &i)) {
            if (i < 1 || i > Q_FRACTURE_MAX_PIECES)
                luaL_argerror(L, 2, lua_pushfstring(L, "field 'pieces' must be in 1..%d, got %I",
                                                    Q_FRACTURE_MAX_PIECES, i));
            p.pieces = (int)i;
        }
        if (ql_field_integer(L, 2, 2, "seed", &i))
            p.seed = (uint64_t)i;
        if (ql_field_vec3(L, 2, 2, "at", p.at))
            p.has_at = true;
        if (lua_getfield(L, 2, "points") != LUA_TNIL) {
            size_t n = read_sites(L, lua_gettop(L), 2, &points, Q_FRACTURE_MAX_PIECES);
            if (n < 1)
                luaL_argerror(L, 2, "field 'points' must hold 1 to 4096 points");
            p.points = points;
            p.pieces = (int)n;
            lua_replace(L, 3); /* keep the buffer alive */
        } else {
            lua_pop(L, 1);
        }
    }
    char err[160];
    q_fracture *fr = q_fracture_mesh(m, &p, err, sizeof err);
    if (!fr) {
        lua_pushnil(L);
        lua_pushfstring(L, "Mesh:shatter: %s", err);
        return 2;
    }
    lua_createtable(L, (int)fr->count, 0);
    lua_createtable(L, 0, 4);
    lua_createtable(L, (int)fr->count, 0);
    lua_createtable(L, (int)fr->count, 0);
    for (size_t i = 0; i < fr->count; i++) {
        lua_pushboolean(L, fr->pieces[i].convex);
        lua_rawseti(L, -3, (lua_Integer)i + 1);
        lua_pushinteger(L, (lua_Integer)fr->pieces[i].interior_first + 1);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -3, "interior");
    lua_setfield(L, -2, "convex");
    lua_createtable(L, (int)fr->site_count, 0);
    for (size_t i = 0; i < fr->site_count; i++) {
        ql_push_vec3(L, fr->sites + 3 * i);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "sites");
    lua_pushinteger(L, (lua_Integer)fr->site_count);
    lua_setfield(L, -2, "cells");
    /* stack: list, info; hand the meshes to Lua */
    for (size_t i = 0; i < fr->count; i++) {
        ql_push_mesh(L, fr->pieces[i].mesh);
        fr->pieces[i].mesh = NULL;
        lua_rawseti(L, -3, (lua_Integer)i + 1);
    }
    q_fracture_free(fr);
    return 2;
}

void ql_open_fracture(lua_State *L)
{
    static const luaL_Reg methods[] = {{"shatter", mesh_shatter}, {NULL, NULL}};
    ql_add_methods(L, QL_MESH, methods);
    lua_pushcfunction(L, l_voronoi);
    lua_setfield(L, -2, "voronoi");
}
