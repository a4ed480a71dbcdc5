/* luaopen_quarry: assembles the module table from the per-module files.
 *
 *   quarry.vec3, quarry.quat      (vec.c)
 *   quarry.material               (material.c)
 *   quarry.world                  (world.c; Terrain in terrain.c, bodies in body.c)
 *   quarry.mesh                   (mesh.c: the Mesh type)
 *   quarry.hull                   (geom.c)
 *   quarry.gridsort               (gridsort.c: grid-sort raycasts over a Mesh)
 *   quarry.version                the module's version string
 *   quarry._test                  hooks for specs; not part of the API
 *
 * The table is cached in the registry so that the host program and
 * `require "quarry"` see the same one.
 */
#include "quarry.h"

#include "common.h"

#define QUARRY_VERSION "0.1.0"
#define REGISTRY_KEY "quarry.module"

int luaopen_quarry(lua_State *L)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, REGISTRY_KEY) == LUA_TTABLE)
        return 1;
    lua_pop(L, 1);

    lua_newtable(L);
    ql_open_terrain(L);
    ql_open_islands(L);
    ql_open_journal(L);
    ql_open_vec(L);
    lua_setfield(L, -3, "quat");
    lua_setfield(L, -2, "vec3");
    ql_open_material(L);
    lua_setfield(L, -2, "material");
    ql_open_world(L);
    lua_setfield(L, -2, "world");
    ql_open_bodies(L);
    ql_open_shatter(L);
    ql_open_mesh(L);
    lua_setfield(L, -2, "mesh");
    ql_open_decompose(L);
    ql_open_lod(L);
    ql_open_fracture(L);
    lua_pushcfunction(L, ql_hull);
    lua_setfield(L, -2, "hull");
    ql_open_gridsort(L);
    lua_setfield(L, -2, "gridsort");
    ql_push_test_hooks(L);
    lua_setfield(L, -2, "_test");
    lua_pushliteral(L, QUARRY_VERSION);
    lua_setfield(L, -2, "version");

    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, REGISTRY_KEY);
    return 1;
}
