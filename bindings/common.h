/* Helpers shared by the binding files: argument checks that raise errors
 * naming the function and argument (STYLE.md item 8), and conversions of
 * points and rotations. Every check finishes before engine code runs, so no
 * error is raised while C state is half-changed. */
#ifndef Q_BINDINGS_COMMON_H
#define Q_BINDINGS_COMMON_H

#include <lauxlib.h>
#include <lua.h>
#include <stdbool.h>

#include "core/handle.h"

#define QL_VEC3 "quarry.Vec3"
#define QL_QUAT "quarry.Quat"
#define QL_WORLD "quarry.World"
#define QL_TERRAIN "quarry.Terrain"
#define QL_MESH "quarry.Mesh"
#define QL_BODY "quarry.Body"
/* Registry field: the host's script clock (graphics.c), a function returning
 * milliseconds spent in script callbacks; absent outside the host. */
#define QL_SCRIPT_CLOCK "quarry.script_clock"

/* A finite number at idx ("must be finite" otherwise). */
double ql_check_finite(lua_State *L, int idx);
/* A finite number > 0; what names it in the message: "radius must be > 0, got -1". */
double ql_check_positive(lua_State *L, int idx, const char *what);
/* An integer at idx within [lo, hi]. */
lua_Integer ql_check_int_range(lua_State *L, int idx, lua_Integer lo, lua_Integer hi, const char *what);

/* A point or direction: Vec3, {x, y, z} or {x=, y=, z=}, all finite. */
void ql_check_vec3(lua_State *L, int idx, double out[3]);
/* The same, false (no error) when idx holds something else. */
bool ql_to_vec3(lua_State *L, int idx, double out[3]);
void ql_push_vec3(lua_State *L, const double v[3]);
/* Integer voxel coordinates given as a Vec3 or table of integral numbers. */
void ql_check_ivec3(lua_State *L, int idx, int32_t out[3]);
/* A rotation: Quat or {w, x, y, z}; normalised; error for zero or non-finite. */
void ql_check_quat(lua_State *L, int idx, double out[4]);
void ql_push_quat(lua_State *L, const double q[4]);

/* Material name at idx -> id; unknown names list the known ones. */
int ql_check_material(lua_State *L, int idx);

/* Table at idx whose keys must all be among `fields` (NULL-terminated). */
void ql_check_fields(lua_State *L, int idx, const char *const fields[]);
/* Optional fields of a definition table at idx (argument number arg for
 * messages). Each returns false when the field is nil. */
bool ql_field_number(lua_State *L, int idx, int arg, const char *key, double *out);
bool ql_field_integer(lua_State *L, int idx, int arg, const char *key, lua_Integer *out);
bool ql_field_boolean(lua_State *L, int idx, int arg, const char *key, bool *out);
bool ql_field_vec3(lua_State *L, int idx, int arg, const char *key, double out[3]);
/* A string field that must be one of options; returns its index or -1 when nil. */
int ql_field_option(lua_State *L, int idx, int arg, const char *key, const char *const options[]);

/* For a custom __index(self, key): pushes the method named by key from the
 * metatable's "methods" table (nil when there is none); returns 1. */
int ql_index_method(lua_State *L);

/* Registers a metatable with methods (looked up by __index unless the
 * metatable defines its own) and metamethods. */
void ql_new_class(lua_State *L, const char *name, const luaL_Reg *methods, const luaL_Reg *meta);

/* Adds methods to a class made by ql_new_class, so a feature keeps its
 * methods in its own file (e.g. Mesh:decompose in decompose.c). */
void ql_add_methods(lua_State *L, const char *name, const luaL_Reg *methods);

/* Sub-module openers (each leaves its table on the stack). */
int ql_open_vec(lua_State *L);      /* pushes vec3 function and quat table */
int ql_open_material(lua_State *L);
int ql_open_world(lua_State *L);
int ql_open_mesh(lua_State *L);   /* quarry.mesh and the Mesh class */
void ql_open_decompose(lua_State *L); /* Mesh:decompose (decompose.c) */
void ql_open_lod(lua_State *L); /* World:set_viewer, World:lod_mesh, lod option of Terrain:mesh (lod.c) */
/* quarry.voronoi into the module table on top, Mesh:shatter (fracture.c) */
void ql_open_fracture(lua_State *L);
int ql_open_gridsort(lua_State *L); /* quarry.gridsort and the GridSort class */
struct q_mesh;
/* Pushes a Mesh userdata that takes ownership of m. */
void ql_push_mesh(lua_State *L, struct q_mesh *m);
/* The mesh of the Mesh userdata at idx (error otherwise). */
struct q_mesh *ql_check_mesh(lua_State *L, int idx);
/* quarry.hull (geom.c), and its tail for m:hull: hulls count points (x, y,
 * z triples) with the options table at index opts; pushes Mesh, info. */
int ql_hull(lua_State *L);
int ql_hull_points(lua_State *L, const double *points, size_t count, int opts);
void ql_open_terrain(lua_State *L); /* registers the Terrain class only */
void ql_open_islands(lua_State *L); /* Terrain:islands, Terrain:remove_islands (islands.c) */
void ql_open_journal(lua_State *L); /* Terrain:undo, redo, journal; journals edits (journal.c) */
void ql_push_test_hooks(lua_State *L); /* quarry._test: hooks for specs, not API */

/* World access for other binding files. */
struct q_world;
struct q_world *ql_check_world(lua_State *L, int idx);
/* Pushes a Terrain userdata for the World userdata at idx. */
void ql_push_terrain(lua_State *L, int world_idx);

/* Rigid bodies (body.c): the Body class; World:spawn, bodies, on, shapecast. */
void ql_open_bodies(lua_State *L);
/* Pushes the Body of handle h in the World userdata at world_idx (the same
 * userdata every time for the same body). */
void ql_push_body(lua_State *L, int world_idx, q_handle h);
/* The live body of the Body at idx (its World userdata is the Body's
 * uservalue 1); an argument error once it or its world was destroyed. */
struct q_bodies *ql_check_body(lua_State *L, int idx, q_handle *h);
/* Body:shatter (shatter.c). */
void ql_open_shatter(lua_State *L);
/* Calls the contact, shatter and detach callbacks for what the last
 * world:step produced. */
void ql_dispatch_events(lua_State *L, int world_idx);
/* opts.ignore (a list of Bodies) of the options table at opts_idx (none or
 * nil: empty) as handles in a buffer pushed on the stack; returns the count. */
size_t ql_check_ignore(lua_State *L, int opts_idx, q_handle **out);
typedef struct ql_body_hit {
    q_handle body;
    double distance, normal[3];
} ql_body_hit;
/* Bodies along the ray (dir unit length) within max_distance, nearest first,
 * at most max_hits, skipping opts.ignore; pushes scratch values, among them
 * the hits buffer *out. Returns the count. */
size_t ql_raycast_bodies(lua_State *L, int world_idx, int opts_idx, const double origin[3], const double dir[3],
                         double max_distance, size_t max_hits, ql_body_hit **out);
/* Pushes a hit table like the terrain's with body = Body and terrain = false. */
void ql_push_body_hit(lua_State *L, int world_idx, const double origin[3], const double dir[3],
                      const ql_body_hit *h);
/* Pushes the array of bodies overlapping a sphere (half NULL) or a box of
 * half extents half, less opts.ignore; a size the engine refuses is an
 * error against argument opts_idx - 1. */
void ql_push_overlap_bodies(lua_State *L, int world_idx, int opts_idx, const double center[3], double radius,
                            const double *half);

#endif
