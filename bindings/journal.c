/* Terrain:undo(), Terrain:redo() and Terrain:journal([opts]) (engine:
 * voxel/journal.h).
 *
 *   T:undo()  -> true, or false when there is nothing to undo
 *   T:redo()  -> true, or false when there is nothing to redo
 *   T:journal{limit_bytes = 16 MiB, steps = 100} -> info
 *   T:journal() -> info {limit_bytes=, steps=, bytes=, undo=, redo=,
 *                        cleared=, dropped=}
 *
 * Every world has one journal, made on its first edit and kept beside the
 * World userdata (a weak-keyed registry table), so every Terrain userdata
 * of a world shares it. limit_bytes (integer >= 1024) bounds the encoded
 * records of both stacks, steps (integer 0..1000000; 0 turns recording off)
 * their number; past either the oldest undo steps go first.
 *
 * How edits are recorded. The Terrain methods that change voxels (fill_ball,
 * fill_block, fill_cylinder, fill_region, carve_ball, paint_ball,
 * smooth_ball, write) are wrapped: the wrapper bounds the box the edit can
 * touch from its arguments (with a margin; no errors raised), lets the
 * journal copy it, runs the original and commits, and the journal keeps only
 * the box the change log reports. The original C function is called
 * directly from the wrapper's own call frame, not through lua_call, so its
 * argument errors still name the method and count arguments as before
 * ("bad argument #2 to 'carve_ball'"). generate and clear forget the
 * journal. Changes not made through these methods (islands detached, a
 * world loaded) are not recorded.
 */
#include "common.h"

#include "voxel/journal.h"
#include "world/world.h"

#include <math.h>

#define JOURNALS_KEY "quarry.journals" /* World userdata -> journal userdata (weak keys) */
#define JOURNAL_META "quarry.journal"  /* lower case: not a class of the API */

typedef struct ljournal {
    q_journal *j;
} ljournal;

static int journal_gc(lua_State *L)
{
    ljournal *u = luaL_checkudata(L, 1, JOURNAL_META);
    q_journal_destroy(u->j);
    u->j = NULL;
    return 0;
}

/* The live world of the Terrain at index 1, or NULL (no error) when index 1
 * is not a Terrain or its world was destroyed. */
static q_world *terrain_world(lua_State *L)
{
    const q_handle *h = luaL_testudata(L, 1, QL_TERRAIN); /* the Terrain starts with its world's handle */
    return h ? q_world_lookup(*h) : NULL;
}

/* The journal of the Terrain at index 1 (made on first use); leaves the
 * stack as it was. */
static q_journal *journal_of(lua_State *L)
{
    int top = lua_gettop(L);
    lua_getfield(L, LUA_REGISTRYINDEX, JOURNALS_KEY);
    lua_getiuservalue(L, 1, 1); /* the World userdata */
    lua_pushvalue(L, -1);
    ljournal *u = lua_rawget(L, -3) == LUA_TUSERDATA ? lua_touserdata(L, -1) : NULL;
    if (!u) {
        lua_pop(L, 1);
        u = lua_newuserdatauv(L, sizeof *u, 0);
        u->j = NULL;
        luaL_setmetatable(L, JOURNAL_META);
        u->j = q_journal_create(NULL);
        if (!u->j)
            luaL_error(L, "out of memory");
        lua_rawset(L, -3);
    }
    lua_settop(L, top);
    return u->j;
}

/* ---- the wrapped edits ---- */

enum { EDIT_BALL, EDIT_BLOCK, EDIT_CYLINDER, EDIT_REGION, EDIT_WRITE, EDIT_RESET };

static bool number_at(lua_State *L, int idx, double *out)
{
    if (lua_type(L, idx) != LUA_TNUMBER)
        return false;
    *out = lua_tonumber(L, idx);
    return isfinite(*out);
}

static bool finite3(const double v[3])
{
    return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]);
}

/* box = [floor(lo), ceil(hi)) per axis, false past int32. */
static bool to_box(const double lo[3], const double hi[3], q_box *b)
{
    for (int a = 0; a < 3; a++) {
        double l = floor(lo[a]), h = ceil(hi[a]);
        if (!(l >= -2147483648.0 && h <= 2147483647.0 && l <= h))
            return false;
        b->min[a] = (int32_t)l;
        b->max[a] = (int32_t)h;
    }
    return true;
}

/* Centre at arg 2 (world units) with half extents ext (voxels), plus a
 * margin of two voxels: an edit touches voxels whose centres lie within
 * half a voxel of its shape, i.e. indices floor(c - ext - 1/2) ..
 * floor(c + ext + 1/2). */
static bool centred_box(lua_State *L, double vs, const double ext[3], q_box *b)
{
    double c[3], lo[3], hi[3];
    if (!ql_to_vec3(L, 2, c) || !finite3(c) || !finite3(ext))
        return false;
    for (int a = 0; a < 3; a++) {
        lo[a] = c[a] / vs - ext[a] - 2;
        hi[a] = c[a] / vs + ext[a] + 2;
    }
    return to_box(lo, hi, b);
}

/* A box holding every voxel the edit of this kind may change, from its
 * arguments; false when they do not say (the original then reports them). */
static bool edit_bound(lua_State *L, int kind, double vs, q_box *b)
{
    double r, h, s[3], lo[3], hi[3];
    switch (kind) {
    case EDIT_BALL:
        return number_at(L, 3, &r) && centred_box(L, vs, (double[3]){r / vs, r / vs, r / vs}, b);
    case EDIT_BLOCK: /* any rotation stays inside the ball round its diagonal */
        if (number_at(L, 3, &r))
            s[0] = s[1] = s[2] = r;
        else if (!ql_to_vec3(L, 3, s))
            return false;
        r = 0.5 * sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]) / vs;
        return centred_box(L, vs, (double[3]){r, r, r}, b);
    case EDIT_CYLINDER:
        return number_at(L, 3, &r) && number_at(L, 4, &h) &&
               centred_box(L, vs, (double[3]){r / vs, 0.5 * h / vs, r / vs}, b);
    case EDIT_REGION: /* integer voxel corners [min, max) */
        return ql_to_vec3(L, 2, lo) && ql_to_vec3(L, 3, hi) && finite3(lo) && finite3(hi) && to_box(lo, hi, b);
    case EDIT_WRITE: /* min (voxels) and data.size */
        if (!ql_to_vec3(L, 2, lo) || !finite3(lo) || !lua_istable(L, 3))
            return false;
        lua_getfield(L, 3, "size");
        bool ok = ql_to_vec3(L, -1, s) && finite3(s);
        lua_pop(L, 1);
        if (!ok)
            return false;
        for (int a = 0; a < 3; a++)
            hi[a] = lo[a] + s[a];
        return to_box(lo, hi, b);
    }
    return false;
}

static int journaled_edit(lua_State *L)
{
    lua_CFunction original = lua_tocfunction(L, lua_upvalueindex(1));
    int kind = (int)lua_tointeger(L, lua_upvalueindex(2));
    int top = lua_gettop(L);
    q_world *w = terrain_world(L);
    if (!w)
        return original(L); /* raises its own error */
    q_journal *j = journal_of(L);
    q_terrain *t = q_world_terrain(w);
    if (kind == EDIT_RESET) {
        int n = original(L);
        q_journal_clear(j);
        return n;
    }
    q_box bound;
    bool known = edit_bound(L, kind, q_world_get_def(w)->voxel_size, &bound);
    lua_settop(L, top); /* the original sees exactly its arguments */
    /* Out of memory for the copy: the edit still runs; commit clears. An
     * error raised by the original leaves the copy begun; the journal frees
     * it at its next begin, undo, redo or destroy. */
    (void)q_journal_begin(j, t, known ? &bound : NULL);
    int n = original(L);
    q_journal_commit(j, t);
    return n;
}

/* ---- undo, redo, journal ---- */

static q_world *check_world(lua_State *L)
{
    luaL_checkudata(L, 1, QL_TERRAIN);
    q_world *w = terrain_world(L);
    if (!w)
        luaL_error(L, "attempt to use a destroyed world");
    return w;
}

static int step(lua_State *L, bool undo)
{
    q_world *w = check_world(L);
    q_journal *j = journal_of(L);
    char err[160];
    bool done;
    q_status st = undo ? q_journal_undo(j, q_world_terrain(w), &done, err, sizeof err)
                       : q_journal_redo(j, q_world_terrain(w), &done, err, sizeof err);
    if (st != Q_OK)
        return luaL_error(L, "%s: %s", undo ? "undo" : "redo", err);
    lua_pushboolean(L, done);
    return 1;
}

static int terrain_undo(lua_State *L)
{
    return step(L, true);
}

static int terrain_redo(lua_State *L)
{
    return step(L, false);
}

static int terrain_journal(lua_State *L)
{
    check_world(L);
    q_journal *j = journal_of(L);
    if (!lua_isnoneornil(L, 2)) {
        static const char *const fields[] = {"limit_bytes", "steps", NULL};
        luaL_checktype(L, 2, LUA_TTABLE);
        ql_check_fields(L, 2, fields);
        q_journal_def d = q_journal_get_def(j);
        lua_Integer v;
        if (ql_field_integer(L, 2, 2, "limit_bytes", &v)) {
            if (v < Q_JOURNAL_MIN_BYTES)
                return luaL_argerror(L, 2, lua_pushfstring(L, "field 'limit_bytes' must be >= %d, got %I",
                                                           Q_JOURNAL_MIN_BYTES, v));
            d.limit_bytes = (size_t)v;
        }
        if (ql_field_integer(L, 2, 2, "steps", &v)) {
            if (v < 0 || v > Q_JOURNAL_MAX_STEPS)
                return luaL_argerror(L, 2, lua_pushfstring(L, "field 'steps' must be 0..%d, got %I",
                                                           Q_JOURNAL_MAX_STEPS, v));
            d.steps = (size_t)v;
        }
        q_journal_configure(j, &d);
    }
    q_journal_def d = q_journal_get_def(j);
    q_journal_stats s = q_journal_get_stats(j);
    const struct {
        const char *name;
        size_t value;
    } fields[] = {{"limit_bytes", d.limit_bytes}, {"steps", d.steps},     {"bytes", s.bytes},
                  {"undo", s.undo_steps},         {"redo", s.redo_steps}, {"cleared", s.cleared},
                  {"dropped", s.dropped}};
    lua_createtable(L, 0, (int)(sizeof fields / sizeof fields[0]));
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        lua_pushinteger(L, (lua_Integer)fields[i].value);
        lua_setfield(L, -2, fields[i].name);
    }
    return 1;
}

/* Replaces Terrain method `name` by journaled_edit around it. */
static void wrap_edit(lua_State *L, int methods, const char *name, int kind)
{
    lua_getfield(L, methods, name);
    lua_CFunction f = lua_tocfunction(L, -1);
    /* called from journaled_edit's frame, so it must not use upvalues */
    if (!f || lua_getupvalue(L, -1, 1) != NULL)
        luaL_error(L, "journal: Terrain:%s is not a plain C function", name);
    lua_pushinteger(L, kind);
    lua_pushcclosure(L, journaled_edit, 2);
    lua_setfield(L, methods, name);
}

void ql_open_journal(lua_State *L)
{
    luaL_newmetatable(L, JOURNAL_META);
    lua_pushcfunction(L, journal_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, JOURNALS_KEY);

    static const luaL_Reg methods[] = {
        {"undo", terrain_undo}, {"redo", terrain_redo}, {"journal", terrain_journal}, {NULL, NULL}};
    ql_add_methods(L, QL_TERRAIN, methods);

    static const struct {
        const char *name;
        int kind;
    } edits[] = {{"fill_ball", EDIT_BALL},         {"carve_ball", EDIT_BALL},   {"paint_ball", EDIT_BALL},
                 {"smooth_ball", EDIT_BALL},       {"fill_block", EDIT_BLOCK},  {"fill_cylinder", EDIT_CYLINDER},
                 {"fill_region", EDIT_REGION},     {"write", EDIT_WRITE},       {"generate", EDIT_RESET},
                 {"clear", EDIT_RESET}};
    luaL_getmetatable(L, QL_TERRAIN);
    if (lua_getfield(L, -1, "methods") != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_getfield(L, -1, "__index");
    }
    int t = lua_gettop(L);
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++)
        wrap_edit(L, t, edits[i].name, edits[i].kind);
    lua_pop(L, 2);
}
