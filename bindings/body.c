/* Rigid bodies from Lua (API.md "Bodies", and world:shapecast of "Queries"),
 * over engine/physics/bodies.h.
 *
 *   world:spawn{shape =, ...} -> Body        world:bodies() -> {Body, ...}
 *   world:on(event, fn)                      world:shapecast(shape_def, from, to [, opts])
 *
 * Shapes (spawn, and shapecast's shape_def; unknown fields are errors, and so
 * is a size field the shape does not use):
 *   sphere   radius
 *   box      size: full extents, {x, y, z} or one number for a cube
 *   capsule  radius, height: the TOTAL length end to end along local Y, caps
 *            included (so height >= 2 radius; height = 2 radius is a sphere)
 *   hull     points: >= 4 points (Vec3s, {x, y, z} or a flat number array),
 *            not all in one plane; the body's frame is the points' frame
 *   mesh     mesh: a Mesh, decomposed by HACD into a compound of hulls, or
 *            one hull when one part is enough (q_collider_from_mesh)
 * Spawn also takes position (of the shape's frame), rotation (Quat or
 * {w, x, y, z}), velocity (|v| <= 2000 m/s), angular_velocity, material
 * (name, default "rock": density gives the mass), mass (kg, > 0: instead of
 * density x volume), static, name. Sizes must be finite, > 0 and at most 1e7 m.
 *
 * A Body userdata holds the world's handle and the body's generational
 * handle; once either is destroyed, any use but b:valid() and tostring
 * raises "body was destroyed". The world keeps one Body per live body (a
 * table by slot in the World's second uservalue), so world:bodies(), ray
 * hits and callbacks give the same object each time. A Body keeps its world
 * alive, as a Terrain does.
 *
 * Properties: position rotation velocity angular_velocity name on_contact
 * (read/write); mass material sleeping static center (read; center is the
 * world centre of mass). Methods: apply_impulse(j [, at]) apply_force(f [, at])
 * apply_torque(t) mesh() destroy() valid().
 *
 * Contacts. After world:step runs steps, each new contact of the step calls
 *   a.on_contact(a, other, contact)      other: the Body b, or "terrain"
 *   b.on_contact(b, a, contact)          (body pairs; normal flipped)
 *   every world:on("contact", fn) handler: fn(a, other, contact)
 * with contact = {position = Vec3, normal = Vec3 (from other towards self;
 * for world handlers from other towards a), impulse = N s, speed = approach
 * speed m/s, material = the other's material name}. Events are copied before
 * the first call, so callbacks may spawn, destroy or step; once one of the two
 * bodies is destroyed the rest of that contact's calls are skipped. An error
 * in a callback propagates out of world:step (the step itself is complete).
 * Contacts of every step the call ran come first, then
 *   world:on("shatter", fn): fn(body, fragments)  a brittle body broke (body is
 *                            destroyed; fragments the live new Bodies)
 *   world:on("detach", fn):  fn(bodies)           terrain islands became bodies
 * world:on adds a handler (several may be set); fn = nil removes that event's.
 */
#include "common.h"

#include "core/alloc.h"
#include "geom/quickhull.h"
#include "mesh/mesh.h"
#include "physics/bodies.h"
#include "physics/collide.h"
#include "physics/shape.h"
#include "voxel/material.h"
#include "world/world.h"

#include <math.h>
#include <string.h>

typedef struct lbody {
    q_handle world; /* the World userdata's handle */
    q_handle h;
} lbody;

/* Body uservalues. */
enum { BODY_UV_WORLD = 1, BODY_UV_ON_CONTACT = 2 };
/* World uservalue holding {bodies = {[slot + 1] = Body}, contact = {fn...}, ...}. */
#define WORLD_UV_STATE 2

static const char *const EVENTS[] = {"contact", "shatter", "detach", NULL};

#define MAX_SIZE 1.0e7 /* metres: sizes past this overflow mass and inertia */

/* ---- quaternions: Lua {w, x, y, z}, engine {x, y, z, w} ---- */

static void quat_to_engine(const double lq[4], double eq[4])
{
    eq[0] = lq[1];
    eq[1] = lq[2];
    eq[2] = lq[3];
    eq[3] = lq[0];
}

static void push_engine_quat(lua_State *L, const double eq[4])
{
    ql_push_quat(L, (double[4]){eq[3], eq[0], eq[1], eq[2]});
}

/* A rotation at idx (Quat or {w, x, y, z} / {w=, x=, y=, z=}) into engine
 * order, normalised; false when it is not one or is zero or non-finite. */
static bool to_engine_quat(lua_State *L, int idx, double eq[4])
{
    idx = lua_absindex(L, idx);
    double q[4];
    const double *u = luaL_testudata(L, idx, QL_QUAT);
    if (u) {
        memcpy(q, u, sizeof q);
    } else if (lua_istable(L, idx)) {
        static const char *const names[] = {"w", "x", "y", "z"};
        for (int k = 0; k < 4; k++) {
            int type = lua_rawgeti(L, idx, k + 1);
            if (type == LUA_TNIL) {
                lua_pop(L, 1);
                type = lua_getfield(L, idx, names[k]);
            }
            q[k] = lua_tonumber(L, -1);
            lua_pop(L, 1);
            if (type != LUA_TNUMBER)
                return false;
        }
    } else {
        return false;
    }
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(isfinite(n) && n > 1e-12))
        return false;
    for (int k = 0; k < 4; k++)
        q[k] /= n;
    quat_to_engine(q, eq);
    return true;
}

static double length3(const double v[3])
{
    return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

static const char *material_name(uint8_t id)
{
    const q_material *m = q_material_get(id);
    return m ? m->name : "air";
}

/* ---- the world's Lua-side state ---- */

static q_handle world_handle(lua_State *L, int world_idx)
{
    return *(q_handle *)luaL_checkudata(L, world_idx, QL_WORLD); /* lworld starts with its handle */
}

/* Pushes the World's state table, made on first use. */
static void push_state(lua_State *L, int world_idx)
{
    world_idx = lua_absindex(L, world_idx);
    if (lua_getiuservalue(L, world_idx, WORLD_UV_STATE) == LUA_TTABLE)
        return;
    lua_pop(L, 1);
    lua_createtable(L, 0, 4);
    lua_newtable(L);
    lua_setfield(L, -2, "bodies");
    lua_pushvalue(L, -1);
    if (!lua_setiuservalue(L, world_idx, WORLD_UV_STATE))
        luaL_error(L, "World userdata has no slot for bodies");
}

/* Pushes the state's field `key` (the bodies table or an event's handlers). */
static void push_state_field(lua_State *L, int world_idx, const char *key)
{
    push_state(L, world_idx);
    if (lua_getfield(L, -1, key) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, key);
    }
    lua_remove(L, -2);
}

/* The live bodies of a world userdata's handle, or NULL. */
static q_bodies *lookup_bodies(q_handle world)
{
    q_world *w = q_world_lookup(world);
    return w ? q_world_bodies(w) : NULL;
}

void ql_push_body(lua_State *L, int world_idx, q_handle h)
{
    world_idx = lua_absindex(L, world_idx);
    q_handle wh = world_handle(L, world_idx);
    push_state_field(L, world_idx, "bodies");
    if (lua_rawgeti(L, -1, h.index) == LUA_TUSERDATA) {
        const lbody *old = lua_touserdata(L, -1);
        if (q_handle_equal(old->h, h) && q_handle_equal(old->world, wh)) {
            lua_remove(L, -2);
            return;
        }
    }
    lua_pop(L, 1);
    lbody *u = lua_newuserdatauv(L, sizeof *u, 2);
    u->world = wh;
    u->h = h;
    luaL_setmetatable(L, QL_BODY);
    lua_pushvalue(L, world_idx);
    lua_setiuservalue(L, -2, BODY_UV_WORLD);
    q_bodies *b = lookup_bodies(wh);
    if (b && q_body_valid(b, h)) {
        /* a stale handle (a shattered body) must not displace a live slot's Body */
        lua_pushvalue(L, -1);
        lua_rawseti(L, -3, h.index);
    }
    lua_remove(L, -2);
}

typedef struct body_ref {
    q_bodies *b;
    q_handle h;
} body_ref;

static bool body_alive(const lbody *u, body_ref *out)
{
    q_bodies *b = lookup_bodies(u->world);
    if (!b || !q_body_valid(b, u->h))
        return false;
    *out = (body_ref){b, u->h};
    return true;
}

/* The live body at idx; an argument error once it (or its world) was destroyed. */
static body_ref check_body(lua_State *L, int idx)
{
    body_ref r = {NULL, Q_NULL_HANDLE};
    if (!body_alive(luaL_checkudata(L, idx, QL_BODY), &r))
        luaL_argerror(L, idx, "body was destroyed");
    return r;
}

q_bodies *ql_check_body(lua_State *L, int idx, q_handle *h)
{
    body_ref r = check_body(L, idx);
    *h = r.h;
    return r.b;
}

/* ---- shape definitions (spawn and shapecast) ---- */

enum { SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_HULL, SHAPE_MESH };
static const char *const SHAPES[] = {"sphere", "box", "capsule", "hull", "mesh", NULL};

typedef struct shape_spec {
    int kind;
    double radius, half[3], half_height;
    const double *points; /* Lua-owned buffer on the stack */
    size_t point_count;
    const q_mesh *mesh;   /* owned by the Mesh userdata in the table */
} shape_spec;

static double field_size(lua_State *L, int idx, int arg, const char *key)
{
    double v;
    if (!ql_field_number(L, idx, arg, key, &v))
        luaL_argerror(L, arg, lua_pushfstring(L, "field '%s' is required for this shape", key));
    if (!(v > 0) || v > MAX_SIZE)
        luaL_argerror(L, arg, lua_pushfstring(L, "field '%s' must be > 0 and <= 1e7, got %f", key, v));
    return v;
}

/* points: an array of points or a flat number array; pushes a buffer. */
static size_t field_points(lua_State *L, int idx, int arg, double **out)
{
    if (lua_getfield(L, idx, "points") != LUA_TTABLE)
        luaL_argerror(L, arg, "field 'points' must be a table of points");
    int t = lua_gettop(L);
    lua_Integer n = luaL_len(L, t);
    bool flat = lua_rawgeti(L, t, 1) == LUA_TNUMBER;
    lua_pop(L, 1);
    size_t count = flat ? (size_t)(n / 3) : (size_t)n;
    if ((flat && n % 3) || count < 4)
        luaL_argerror(L, arg, "field 'points' needs at least 4 points (a flat array needs 3 numbers each)");
    if (count > Q_HULL_MAX_POINTS)
        luaL_argerror(L, arg, "field 'points' holds too many points");
    double *p = lua_newuserdatauv(L, count * 3 * sizeof(double), 0);
    for (size_t i = 0; i < count; i++) {
        bool ok = true;
        if (flat) {
            for (int a = 0; a < 3; a++) {
                int isnum = 0;
                lua_rawgeti(L, t, (lua_Integer)(3 * i + a) + 1);
                p[3 * i + a] = lua_tonumberx(L, -1, &isnum);
                lua_pop(L, 1);
                ok = ok && isnum;
            }
        } else {
            lua_rawgeti(L, t, (lua_Integer)i + 1);
            ok = ql_to_vec3(L, -1, p + 3 * i);
            lua_pop(L, 1);
        }
        if (!ok || !isfinite(p[3 * i] + p[3 * i + 1] + p[3 * i + 2]) || length3(p + 3 * i) > MAX_SIZE)
            luaL_argerror(L, arg, lua_pushfstring(L, "field 'points': point %I is not a finite point within 1e7",
                                                  (lua_Integer)i + 1));
    }
    lua_remove(L, t); /* the buffer stays */
    *out = p;
    return count;
}

/* Reads the shape fields of the definition table at idx (argument arg);
 * `allowed` is a mask of (1 << SHAPE_*). May push a points buffer that must
 * stay on the stack until the shape is built. Raises errors naming the field. */
static shape_spec check_shape(lua_State *L, int idx, int arg, unsigned allowed)
{
    static const char *const size_fields[] = {"radius", "size", "height", "points", "mesh"};
    /* which size fields each shape uses, by the order above */
    static const unsigned uses[] = {1u << 0, 1u << 1, 1u << 0 | 1u << 2, 1u << 3, 1u << 4};
    shape_spec s = {0};
    s.kind = ql_field_option(L, idx, arg, "shape", SHAPES);
    if (s.kind < 0)
        luaL_argerror(L, arg, "field 'shape' is required (sphere, box, capsule, hull or mesh)");
    if (!(allowed & (1u << s.kind)))
        luaL_argerror(L, arg, lua_pushfstring(L, "field 'shape': '%s' is not supported here", SHAPES[s.kind]));
    for (int f = 0; f < 5; f++) {
        bool present = lua_getfield(L, idx, size_fields[f]) != LUA_TNIL;
        lua_pop(L, 1);
        if (present && !(uses[s.kind] & (1u << f)))
            luaL_argerror(L, arg, lua_pushfstring(L, "field '%s' does not apply to a %s", size_fields[f],
                                                  SHAPES[s.kind]));
    }
    switch (s.kind) {
    case SHAPE_SPHERE:
        s.radius = field_size(L, idx, arg, "radius");
        break;
    case SHAPE_BOX: {
        double size[3];
        int type = lua_getfield(L, idx, "size");
        if (type == LUA_TNUMBER) {
            size[0] = size[1] = size[2] = lua_tonumber(L, -1);
        } else if (type == LUA_TNIL || !ql_to_vec3(L, -1, size)) {
            luaL_argerror(L, arg, "field 'size' must be the box's full extents, {x, y, z} or a number");
        }
        lua_pop(L, 1);
        for (int a = 0; a < 3; a++) {
            if (!(size[a] > 0) || size[a] > MAX_SIZE)
                luaL_argerror(L, arg, lua_pushfstring(L, "field 'size' components must be > 0 and <= 1e7, got %f",
                                                      size[a]));
            s.half[a] = 0.5 * size[a];
        }
        break;
    }
    case SHAPE_CAPSULE: {
        s.radius = field_size(L, idx, arg, "radius");
        double height = field_size(L, idx, arg, "height");
        if (height < 2 * s.radius)
            luaL_argerror(L, arg, lua_pushfstring(L, "field 'height' is the total length and must be >= 2 * radius "
                                                     "(%f), got %f", 2 * s.radius, height));
        s.half_height = 0.5 * height - s.radius;
        break;
    }
    case SHAPE_HULL: {
        double *p;
        s.point_count = field_points(L, idx, arg, &p);
        s.points = p;
        break;
    }
    case SHAPE_MESH: {
        lua_getfield(L, idx, "mesh");
        if (!luaL_testudata(L, -1, QL_MESH))
            luaL_argerror(L, arg, "field 'mesh' must be a Mesh");
        s.mesh = ql_check_mesh(L, lua_gettop(L));
        lua_pop(L, 1); /* the definition table keeps the Mesh alive */
        break;
    }
    }
    return s;
}

/* Builds the collider of a checked spec; NULL with a message. No Lua calls. */
static q_collider *build_shape(const shape_spec *s, char *err, size_t errlen)
{
    switch (s->kind) {
    case SHAPE_SPHERE:
        return q_collider_sphere(s->radius, err, errlen);
    case SHAPE_BOX:
        return q_collider_box(s->half, err, errlen);
    case SHAPE_CAPSULE:
        return q_collider_capsule(s->radius, s->half_height, err, errlen);
    case SHAPE_HULL:
        return q_collider_hull(s->points, s->point_count, err, errlen);
    default:
        return q_collider_from_mesh(s->mesh, 0, err, errlen);
    }
}

/* ---- world:spawn, world:bodies, world:on ---- */

static q_bodies *check_world_bodies(lua_State *L, int idx)
{
    q_bodies *b = q_world_bodies(ql_check_world(L, idx));
    if (!b)
        luaL_error(L, "world has no rigid bodies (out of memory)");
    return b;
}

static int world_spawn(lua_State *L)
{
    static const char *const fields[] = {"shape",    "radius",           "size",     "height", "points",
                                         "mesh",     "position",         "rotation", "velocity",
                                         "angular_velocity", "material", "mass",     "static", "name",
                                         NULL};
    q_bodies *b = check_world_bodies(L, 1);
    ql_check_fields(L, 2, fields);
    shape_spec s = check_shape(L, 2, 2, ~0u);
    q_body_def def = q_default_body_def();
    if (ql_field_vec3(L, 2, 2, "position", def.position) && length3(def.position) > Q_BODY_MAX_COORD)
        luaL_argerror(L, 2, "field 'position' must be within 1e7 m of the origin");
    if (lua_getfield(L, 2, "rotation") != LUA_TNIL && !to_engine_quat(L, -1, def.rotation))
        luaL_argerror(L, 2, "field 'rotation' must be a finite, non-zero Quat or {w, x, y, z}");
    lua_pop(L, 1);
    if (ql_field_vec3(L, 2, 2, "velocity", def.velocity) && length3(def.velocity) > Q_BODY_MAX_SPEED)
        luaL_argerror(L, 2, lua_pushfstring(L, "field 'velocity': speed %f is over the limit of %f m/s",
                                            length3(def.velocity), Q_BODY_MAX_SPEED));
    if (ql_field_vec3(L, 2, 2, "angular_velocity", def.angular_velocity) &&
        length3(def.angular_velocity) > Q_BODY_MAX_SPEED)
        luaL_argerror(L, 2, lua_pushfstring(L, "field 'angular_velocity' is over the limit of %f rad/s",
                                            Q_BODY_MAX_SPEED));
    int mt = lua_getfield(L, 2, "material");
    int material = q_material_find("rock");
    if (mt != LUA_TNIL) {
        const char *name = mt == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        material = name ? q_material_find(name) : -1;
        if (material < 0)
            luaL_argerror(L, 2, lua_pushfstring(L, "field 'material': unknown material '%s'",
                                                name ? name : luaL_typename(L, -1)));
    }
    lua_pop(L, 1);
    def.material = (uint8_t)material;
    if (ql_field_number(L, 2, 2, "mass", &def.mass) && !(def.mass > 0 && def.mass <= 1e12))
        luaL_argerror(L, 2, lua_pushfstring(L, "field 'mass' must be > 0 and <= 1e12 kg, got %f", def.mass));
    ql_field_boolean(L, 2, 2, "static", &def.is_static);
    int nt = lua_getfield(L, 2, "name"); /* stays on the stack while def.name points into it */
    if (nt == LUA_TSTRING) {
        size_t len;
        def.name = lua_tolstring(L, -1, &len);
        if (strlen(def.name) != len)
            luaL_argerror(L, 2, "field 'name' must not contain zero bytes");
    } else if (nt != LUA_TNIL) {
        luaL_argerror(L, 2, "field 'name' must be a string");
    }

    /* Every check is done: from here engine memory is held until handed over. */
    char err[256];
    def.shape = build_shape(&s, err, sizeof err);
    if (!def.shape)
        return luaL_argerror(L, 2, err);
    q_handle h = q_body_create(b, &def, err, sizeof err);
    if (q_handle_is_null(h))
        return luaL_argerror(L, 2, err);
    ql_push_body(L, 1, h);
    return 1;
}

static int world_bodies(lua_State *L)
{
    q_bodies *b = check_world_bodies(L, 1);
    size_t n = q_bodies_count(b);
    q_handle *hs = lua_newuserdatauv(L, (n ? n : 1) * sizeof *hs, 0);
    n = q_bodies_list(b, hs, n);
    /* Drop the Body objects of bodies destroyed other than by b:destroy(). */
    push_state_field(L, 1, "bodies");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        const lbody *u = lua_touserdata(L, -1);
        lua_pop(L, 1);
        if (!u || !q_body_valid(b, u->h)) {
            lua_pushvalue(L, -1);
            lua_pushnil(L);
            lua_rawset(L, -4); /* clearing a present key during lua_next is allowed */
        }
    }
    lua_pop(L, 1);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        ql_push_body(L, 1, hs[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int world_on(lua_State *L)
{
    ql_check_world(L, 1);
    const char *event = EVENTS[luaL_checkoption(L, 2, NULL, EVENTS)];
    if (!lua_isnoneornil(L, 3))
        luaL_checktype(L, 3, LUA_TFUNCTION);
    if (lua_isnoneornil(L, 3)) {
        push_state(L, 1);
        lua_pushnil(L);
        lua_setfield(L, -2, event);
        return 0;
    }
    push_state_field(L, 1, event);
    lua_pushvalue(L, 3);
    lua_rawseti(L, -2, luaL_len(L, -2) + 1);
    return 0;
}

/* ---- contact dispatch ---- */

/* contact = {position, normal (scaled by sign), impulse, speed, material}. */
static void push_contact(lua_State *L, const q_contact_event *e, double sign, const char *material)
{
    lua_createtable(L, 0, 5);
    ql_push_vec3(L, e->position);
    lua_setfield(L, -2, "position");
    ql_push_vec3(L, (double[3]){sign * e->normal[0], sign * e->normal[1], sign * e->normal[2]});
    lua_setfield(L, -2, "normal");
    lua_pushnumber(L, e->impulse);
    lua_setfield(L, -2, "impulse");
    lua_pushnumber(L, e->speed);
    lua_setfield(L, -2, "speed");
    lua_pushstring(L, material);
    lua_setfield(L, -2, "material");
}

/* Whether both bodies of an event still live (terrain always does). */
static bool event_alive(q_handle world, const q_contact_event *e)
{
    q_bodies *b = lookup_bodies(world);
    return b && q_body_valid(b, e->a) && (q_handle_is_null(e->b) || q_body_valid(b, e->b));
}

/* Calls self.on_contact(self, other, contact) when set; self and other are
 * stack indices. */
static void call_on_contact(lua_State *L, int self, int other, const q_contact_event *e, double sign,
                            const char *material)
{
    if (lua_getiuservalue(L, self, BODY_UV_ON_CONTACT) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        return;
    }
    lua_pushvalue(L, self);
    lua_pushvalue(L, other);
    push_contact(L, e, sign, material);
    lua_call(L, 3, 0);
}

/* Contacts of the last world:step, from the copy at ev. */
static void dispatch_contacts(lua_State *L, int world_idx, q_handle wh, const q_contact_event *ev, size_t n)
{
    int top = lua_gettop(L);
    for (size_t i = 0; i < n; i++) {
        const q_contact_event *e = &ev[i];
        lua_settop(L, top);
        if (!event_alive(wh, e))
            continue;
        bool terrain = q_handle_is_null(e->b);
        ql_push_body(L, world_idx, e->a); /* top + 1 */
        if (terrain)
            lua_pushliteral(L, "terrain"); /* top + 2 */
        else
            ql_push_body(L, world_idx, e->b);
        call_on_contact(L, top + 1, top + 2, e, 1.0, material_name(e->material));
        if (!terrain && event_alive(wh, e)) {
            q_body_state sa;
            q_body_get(lookup_bodies(wh), e->a, &sa);
            call_on_contact(L, top + 2, top + 1, e, -1.0, material_name(sa.material));
        }
        push_state_field(L, world_idx, "contact"); /* top + 3 */
        for (lua_Integer k = 1; event_alive(wh, e) && lua_rawgeti(L, top + 3, k) == LUA_TFUNCTION; k++) {
            lua_pushvalue(L, top + 1);
            lua_pushvalue(L, top + 2);
            push_contact(L, e, 1.0, material_name(e->material));
            lua_call(L, 3, 0);
        }
    }
    lua_settop(L, top);
}

/* Pushes an array of the live bodies among hs[0..n). */
static void push_live_bodies(lua_State *L, int world_idx, q_handle wh, const q_handle *hs, size_t n)
{
    lua_createtable(L, (int)n, 0);
    lua_Integer k = 0;
    for (size_t i = 0; i < n; i++) {
        q_bodies *b = lookup_bodies(wh);
        if (!b || !q_body_valid(b, hs[i]))
            continue;
        ql_push_body(L, world_idx, hs[i]);
        lua_rawseti(L, -2, ++k);
    }
}

/* Calls every handler of event with the values at top + 1 .. top + nargs;
 * stops when the world is destroyed. */
static void call_handlers(lua_State *L, int world_idx, q_handle wh, const char *event, int nargs)
{
    int args = lua_gettop(L) - nargs + 1;
    push_state_field(L, world_idx, event);
    int list = lua_gettop(L);
    for (lua_Integer k = 1; q_world_lookup(wh) && lua_rawgeti(L, list, k) == LUA_TFUNCTION; k++) {
        for (int a = 0; a < nargs; a++)
            lua_pushvalue(L, args + a);
        lua_call(L, nargs, 0);
    }
    lua_settop(L, args - 1);
}

/* Pushes a Lua-owned copy of n elements of size bytes (src may be NULL when n is 0). */
static void *copy_to_lua(lua_State *L, const void *src, size_t n, size_t size)
{
    void *dst = lua_newuserdatauv(L, n ? n * size : 1, 0);
    if (n)
        memcpy(dst, src, n * size);
    return dst;
}

void ql_dispatch_events(lua_State *L, int world_idx)
{
    world_idx = lua_absindex(L, world_idx);
    q_handle wh = world_handle(L, world_idx);
    q_world *w = q_world_lookup(wh);
    if (!w)
        return;
    /* Callbacks may step, spawn or destroy: work from copies. */
    const q_contact_event *src;
    const q_shatter_event *shat;
    const q_handle *frags, *det;
    size_t nc = q_world_contacts(w, &src);
    size_t ns = q_world_shatters(w, &shat, &frags);
    size_t nf = ns ? shat[ns - 1].first + shat[ns - 1].count : 0;
    size_t nd = q_world_detached(w, &det);
    if (nc + ns + nd == 0)
        return;
    int top = lua_gettop(L);
    q_contact_event *ev = copy_to_lua(L, src, nc, sizeof *ev);
    q_shatter_event *sh = copy_to_lua(L, shat, ns, sizeof *sh);
    q_handle *fr = copy_to_lua(L, frags, nf, sizeof *fr);
    q_handle *de = copy_to_lua(L, det, nd, sizeof *de);

    dispatch_contacts(L, world_idx, wh, ev, nc);
    for (size_t i = 0; i < ns && q_world_lookup(wh); i++) {
        ql_push_body(L, world_idx, sh[i].body); /* destroyed: the script's own Body when it has one */
        push_live_bodies(L, world_idx, wh, fr + sh[i].first, sh[i].count);
        call_handlers(L, world_idx, wh, "shatter", 2);
    }
    if (nd && q_world_lookup(wh)) {
        push_live_bodies(L, world_idx, wh, de, nd);
        call_handlers(L, world_idx, wh, "detach", 1);
    }
    lua_settop(L, top);
}

/* ---- Body properties and methods ---- */

enum { P_POSITION, P_ROTATION, P_VELOCITY, P_ANGULAR_VELOCITY, P_NAME, P_ON_CONTACT, /* writable */
       P_CENTER, P_MASS, P_MATERIAL, P_SLEEPING, P_STATIC };
static const char *const PROPS[] = {"position", "rotation", "velocity", "angular_velocity", "name", "on_contact",
                                    "center",   "mass",     "material", "sleeping",         "static", NULL};
#define WRITABLE "position, rotation, velocity, angular_velocity, name, on_contact"

static int find_prop(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TSTRING)
        return -1;
    const char *key = lua_tostring(L, idx);
    for (int i = 0; PROPS[i]; i++)
        if (strcmp(key, PROPS[i]) == 0)
            return i;
    return -1;
}

static int body_index(lua_State *L)
{
    luaL_checkudata(L, 1, QL_BODY);
    int p = find_prop(L, 2);
    if (p < 0)
        return ql_index_method(L);
    body_ref r;
    q_body_state s;
    if (!body_alive(lua_touserdata(L, 1), &r) || !q_body_get(r.b, r.h, &s))
        return luaL_error(L, "cannot read '%s': body was destroyed", PROPS[p]);
    switch (p) {
    case P_POSITION:
        ql_push_vec3(L, s.position);
        break;
    case P_ROTATION:
        push_engine_quat(L, s.rotation);
        break;
    case P_VELOCITY:
        ql_push_vec3(L, s.velocity);
        break;
    case P_ANGULAR_VELOCITY:
        ql_push_vec3(L, s.angular_velocity);
        break;
    case P_NAME: {
        const char *name = q_body_name(r.b, r.h);
        if (name)
            lua_pushstring(L, name);
        else
            lua_pushnil(L);
        break;
    }
    case P_ON_CONTACT:
        lua_getiuservalue(L, 1, BODY_UV_ON_CONTACT);
        break;
    case P_CENTER:
        ql_push_vec3(L, s.center);
        break;
    case P_MASS:
        lua_pushnumber(L, s.mass);
        break;
    case P_MATERIAL:
        lua_pushstring(L, material_name(s.material));
        break;
    case P_SLEEPING:
        lua_pushboolean(L, s.sleeping);
        break;
    default:
        lua_pushboolean(L, s.is_static);
        break;
    }
    return 1;
}

static void check_prop_vec3(lua_State *L, int p, double v[3])
{
    if (!ql_to_vec3(L, 3, v) || !isfinite(v[0] + v[1] + v[2]))
        luaL_error(L, "bad value for '%s' (a Vec3 or {x, y, z} with finite components expected, got %s)",
                   PROPS[p], luaL_typename(L, 3));
}

static int body_newindex(lua_State *L)
{
    luaL_checkudata(L, 1, QL_BODY);
    int p = find_prop(L, 2);
    if (p < 0 || p > P_ON_CONTACT)
        return luaL_error(L, "cannot set field '%s' of Body (writable: " WRITABLE ")", luaL_tolstring(L, 2, NULL));
    body_ref r;
    if (!body_alive(lua_touserdata(L, 1), &r))
        return luaL_error(L, "cannot set '%s': body was destroyed", PROPS[p]);
    char err[256] = "";
    bool ok = true;
    double v[4];
    switch (p) {
    case P_POSITION:
        check_prop_vec3(L, p, v);
        ok = q_body_set_position(r.b, r.h, v, err, sizeof err);
        break;
    case P_ROTATION:
        if (!to_engine_quat(L, 3, v))
            return luaL_error(L, "bad value for 'rotation' (a finite, non-zero Quat or {w, x, y, z} expected)");
        ok = q_body_set_rotation(r.b, r.h, v, err, sizeof err);
        break;
    case P_VELOCITY:
        check_prop_vec3(L, p, v);
        ok = q_body_set_velocity(r.b, r.h, v, err, sizeof err);
        break;
    case P_ANGULAR_VELOCITY:
        check_prop_vec3(L, p, v);
        ok = q_body_set_angular_velocity(r.b, r.h, v, err, sizeof err);
        break;
    case P_NAME: {
        size_t len = 0;
        const char *name = lua_type(L, 3) == LUA_TSTRING ? lua_tolstring(L, 3, &len) : NULL;
        if (!lua_isnil(L, 3) && (!name || strlen(name) != len))
            return luaL_error(L, "bad value for 'name' (a string without zero bytes or nil expected)");
        if (!q_body_set_name(r.b, r.h, name))
            return luaL_error(L, "cannot set 'name': out of memory");
        break;
    }
    default:
        if (!lua_isnil(L, 3) && !lua_isfunction(L, 3))
            return luaL_error(L, "bad value for 'on_contact' (a function or nil expected, got %s)",
                              luaL_typename(L, 3));
        lua_settop(L, 3);
        lua_setiuservalue(L, 1, BODY_UV_ON_CONTACT);
        break;
    }
    if (!ok)
        return luaL_error(L, "bad value for '%s' (%s)", PROPS[p], err);
    return 0;
}

/* b:apply_impulse(j [, at]) and b:apply_force(f [, at]). */
static int body_apply(lua_State *L, bool impulse)
{
    body_ref r = check_body(L, 1);
    double v[3], at[3];
    ql_check_vec3(L, 2, v);
    bool has_at = !lua_isnoneornil(L, 3);
    if (has_at)
        ql_check_vec3(L, 3, at);
    char err[256];
    bool ok = impulse ? q_body_apply_impulse(r.b, r.h, v, has_at ? at : NULL, err, sizeof err)
                      : q_body_apply_force(r.b, r.h, v, has_at ? at : NULL, err, sizeof err);
    if (!ok)
        return luaL_argerror(L, 2, err);
    return 0;
}

static int body_apply_impulse(lua_State *L)
{
    return body_apply(L, true);
}

static int body_apply_force(lua_State *L)
{
    return body_apply(L, false);
}

static int body_apply_torque(lua_State *L)
{
    body_ref r = check_body(L, 1);
    double t[3];
    ql_check_vec3(L, 2, t);
    char err[256];
    if (!q_body_apply_torque(r.b, r.h, t, err, sizeof err))
        return luaL_argerror(L, 2, err);
    return 0;
}

/* The shape's triangles placed in the world, as a Mesh with the body's material. */
static int body_mesh(lua_State *L)
{
    body_ref r = check_body(L, 1);
    q_xform x;
    q_body_state s;
    const q_collider *c = q_body_shape(r.b, r.h);
    double *v = NULL;
    uint32_t *idx = NULL, nv = 0, nt = 0;
    if (!c || !q_body_xform(r.b, r.h, &x) || !q_body_get(r.b, r.h, &s) ||
        !q_collider_triangles(c, &v, &nv, &idx, &nt))
        return luaL_error(L, "mesh: out of memory");
    q_mesh *m = q_mesh_create(nv, (size_t)nt * 3, false, true);
    if (m) {
        for (uint32_t i = 0; i < nv; i++) {
            double p[3];
            q_xform_point(&x, v + 3 * i, p);
            for (int a = 0; a < 3; a++)
                m->positions[3 * i + a] = (float)p[a];
            m->materials[i] = s.material;
        }
        memcpy(m->indices, idx, (size_t)nt * 3 * sizeof *idx);
    }
    q_free(v, (size_t)nv * 3 * sizeof *v);
    q_free(idx, (size_t)nt * 3 * sizeof *idx);
    if (!m)
        return luaL_error(L, "mesh: out of memory");
    ql_push_mesh(L, m);
    return 1;
}

static int body_destroy(lua_State *L)
{
    lbody *u = luaL_checkudata(L, 1, QL_BODY);
    body_ref r;
    if (!body_alive(u, &r))
        return 0;
    q_body_destroy(r.b, r.h);
    lua_pushnil(L);
    lua_setiuservalue(L, 1, BODY_UV_ON_CONTACT);
    if (lua_getiuservalue(L, 1, BODY_UV_WORLD) == LUA_TUSERDATA) {
        push_state_field(L, -1, "bodies");
        lua_pushnil(L);
        lua_rawseti(L, -2, u->h.index);
    }
    return 0;
}

static int body_valid(lua_State *L)
{
    body_ref r;
    lua_pushboolean(L, body_alive(luaL_checkudata(L, 1, QL_BODY), &r));
    return 1;
}

static int body_tostring(lua_State *L)
{
    lbody *u = luaL_checkudata(L, 1, QL_BODY);
    body_ref r;
    if (!body_alive(u, &r)) {
        lua_pushliteral(L, "Body (destroyed)");
        return 1;
    }
    const q_collider *c = q_body_shape(r.b, r.h);
    static const char *const kinds[] = {"sphere", "box", "capsule", "hull", "compound"};
    const char *name = q_body_name(r.b, r.h);
    lua_pushfstring(L, "Body %s%s%s (%s, slot %d)", name ? "'" : "", name ? name : "", name ? "'" : "",
                    c ? kinds[c->kind] : "?", (int)u->h.index - 1);
    return 1;
}

/* ---- shapecast ---- */

/* opts.ignore as handles in a buffer pushed on the stack; returns the count.
 * Destroyed bodies may be listed (they match nothing). */
size_t ql_check_ignore(lua_State *L, int opts_idx, q_handle **out)
{
    opts_idx = lua_absindex(L, opts_idx);
    int type = LUA_TNIL;
    if (lua_isnoneornil(L, opts_idx))
        lua_pushnil(L);
    else
        type = lua_getfield(L, opts_idx, "ignore");
    if (type != LUA_TNIL && type != LUA_TTABLE)
        luaL_argerror(L, opts_idx, "field 'ignore' must be a list of bodies");
    lua_Integer len = type == LUA_TTABLE ? luaL_len(L, -1) : 0;
    q_handle *buf = lua_newuserdatauv(L, (size_t)(len > 0 ? len : 1) * sizeof *buf, 0);
    for (lua_Integer i = 1; i <= len; i++) {
        lua_rawgeti(L, -2, i);
        const lbody *u = luaL_testudata(L, -1, QL_BODY);
        if (!u)
            luaL_argerror(L, opts_idx, lua_pushfstring(L, "field 'ignore': entry %I is not a Body", i));
        buf[i - 1] = u->h;
        lua_pop(L, 1);
    }
    lua_remove(L, -2);
    *out = buf;
    return len > 0 ? (size_t)len : 0;
}

static bool ignored(const q_handle *list, size_t n, q_handle h)
{
    for (size_t i = 0; i < n; i++)
        if (q_handle_equal(list[i], h))
            return true;
    return false;
}

/* ---- body queries for world:raycast, raycast_all, overlap_* (world.c) ---- */

size_t ql_raycast_bodies(lua_State *L, int world_idx, int opts_idx, const double origin[3], const double dir[3],
                         double max_distance, size_t max_hits, ql_body_hit **out)
{
    q_bodies *b = check_world_bodies(L, world_idx);
    q_handle *ignore;
    size_t nignore = ql_check_ignore(L, opts_idx, &ignore);
    size_t live = q_bodies_count(b);
    if (max_hits > live)
        max_hits = live;
    /* Each hit joins the ignore list so the next cast finds the one behind it. */
    q_handle *skip = lua_newuserdatauv(L, (nignore + max_hits + 1) * sizeof *skip, 0);
    memcpy(skip, ignore, nignore * sizeof *skip);
    ql_body_hit *hits = lua_newuserdatauv(L, (max_hits ? max_hits : 1) * sizeof *hits, 0);
    size_t n = 0;
    while (n < max_hits) {
        ql_body_hit *h = &hits[n];
        if (!q_bodies_raycast(b, origin, dir, max_distance, skip, nignore + n, &h->body, &h->distance, h->normal))
            break;
        skip[nignore + n++] = h->body;
    }
    *out = hits;
    return n;
}

void ql_push_body_hit(lua_State *L, int world_idx, const double origin[3], const double dir[3],
                      const ql_body_hit *h)
{
    world_idx = lua_absindex(L, world_idx);
    q_body_state s = {0};
    q_bodies *b = check_world_bodies(L, world_idx);
    q_body_get(b, h->body, &s);
    lua_createtable(L, 0, 7);
    ql_push_vec3(L, (double[3]){origin[0] + dir[0] * h->distance, origin[1] + dir[1] * h->distance,
                                origin[2] + dir[2] * h->distance});
    lua_setfield(L, -2, "position");
    ql_push_vec3(L, h->normal);
    lua_setfield(L, -2, "normal");
    lua_pushnumber(L, h->distance);
    lua_setfield(L, -2, "distance");
    lua_pushstring(L, material_name(s.material));
    lua_setfield(L, -2, "material");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "terrain");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "water");
    ql_push_body(L, world_idx, h->body);
    lua_setfield(L, -2, "body");
}

void ql_push_overlap_bodies(lua_State *L, int world_idx, int opts_idx, const double center[3], double radius,
                            const double *half)
{
    q_bodies *b = check_world_bodies(L, world_idx);
    world_idx = lua_absindex(L, world_idx);
    q_handle *ignore;
    size_t nignore = ql_check_ignore(L, opts_idx, &ignore);
    size_t cap = q_bodies_count(b);
    q_handle *found = lua_newuserdatauv(L, (cap ? cap : 1) * sizeof *found, 0);
    char err[256];
    q_collider *c = half ? q_collider_box(half, err, sizeof err) : q_collider_sphere(radius, err, sizeof err);
    if (!c)
        luaL_argerror(L, opts_idx - 1, err); /* the radius or half extents */
    q_xform x = {{center[0], center[1], center[2]}, {0, 0, 0, 1}};
    size_t n = q_bodies_overlap(b, c, &x, found, cap);
    q_collider_free(c);
    if (n > cap)
        n = cap;
    lua_createtable(L, (int)n, 0);
    lua_Integer k = 0;
    for (size_t i = 0; i < n; i++) {
        if (ignored(ignore, nignore, found[i]))
            continue;
        ql_push_body(L, world_idx, found[i]);
        lua_rawseti(L, -2, ++k);
    }
    lua_replace(L, -3); /* the array takes the place of the ignore buffer */
    lua_pop(L, 1);
}

static int world_shapecast(lua_State *L)
{
    static const char *const shape_fields[] = {"shape", "radius", "size", "height", "points", "rotation", NULL};
    static const char *const opt_fields[] = {"terrain", "bodies", "ignore", NULL};
    q_world *w = ql_check_world(L, 1);
    q_bodies *b = check_world_bodies(L, 1);
    ql_check_fields(L, 2, shape_fields);
    double from[3], to[3];
    ql_check_vec3(L, 3, from);
    ql_check_vec3(L, 4, to);
    for (int k = 0; k < 3; k++) {
        /* the bodies' coordinate limit: a cast between farther points has
         * no terrain or body to meet and would take minutes to say so */
        if (fabs(from[k]) > Q_BODY_MAX_COORD)
            return luaL_argerror(L, 3, lua_pushfstring(L, "from is beyond the %f m coordinate limit", Q_BODY_MAX_COORD));
        if (fabs(to[k]) > Q_BODY_MAX_COORD)
            return luaL_argerror(L, 4, lua_pushfstring(L, "to is beyond the %f m coordinate limit", Q_BODY_MAX_COORD));
    }
    bool terrain = true, bodies = true;
    if (!lua_isnoneornil(L, 5)) {
        ql_check_fields(L, 5, opt_fields);
        ql_field_boolean(L, 5, 5, "terrain", &terrain);
        ql_field_boolean(L, 5, 5, "bodies", &bodies);
    }
    lua_settop(L, 5);
    shape_spec s = check_shape(L, 2, 2,
                               1u << SHAPE_SPHERE | 1u << SHAPE_BOX | 1u << SHAPE_CAPSULE | 1u << SHAPE_HULL);
    q_xform x = {{from[0], from[1], from[2]}, {0, 0, 0, 1}};
    if (lua_getfield(L, 2, "rotation") != LUA_TNIL && !to_engine_quat(L, -1, x.q))
        luaL_argerror(L, 2, "field 'rotation' must be a finite, non-zero Quat or {w, x, y, z}");
    lua_pop(L, 1);
    q_handle *ignore;
    size_t nignore = ql_check_ignore(L, 5, &ignore);
    size_t cap = bodies ? q_bodies_count(b) : 0;
    q_handle *list = lua_newuserdatauv(L, (cap ? cap : 1) * sizeof *list, 0);
    double delta[3] = {to[0] - from[0], to[1] - from[1], to[2] - from[2]};

    char err[256];
    q_collider *c = build_shape(&s, err, sizeof err);
    if (!c)
        return luaL_argerror(L, 2, err);
    q_cast_hit best = {.fraction = INFINITY}, h;
    q_handle best_body = Q_NULL_HANDLE;
    if (terrain && q_shapecast_terrain(q_world_terrain_physics(w), c, &x, delta, &h))
        best = h;
    size_t n = cap ? q_bodies_list(b, list, cap) : 0;
    double smin[3], smax[3], emin[3], emax[3];
    q_xform end = x;
    for (int a = 0; a < 3; a++)
        end.p[a] += delta[a];
    q_collider_bounds(c, &x, smin, smax);
    q_collider_bounds(c, &end, emin, emax);
    for (size_t i = 0; i < n; i++) {
        q_xform bx;
        const q_collider *bc = q_body_shape(b, list[i]);
        if (ignored(ignore, nignore, list[i]) || !bc || !q_body_xform(b, list[i], &bx))
            continue;
        double bmin[3], bmax[3];
        q_collider_bounds(bc, &bx, bmin, bmax);
        bool apart = false;
        for (int a = 0; a < 3; a++)
            apart = apart || fmin(smin[a], emin[a]) > bmax[a] || fmax(smax[a], emax[a]) < bmin[a];
        if (!apart && q_shapecast_shape(c, &x, delta, bc, &bx, &h) && h.fraction < best.fraction) {
            q_body_state st;
            q_body_get(b, list[i], &st);
            h.material = st.material;
            best = h;
            best_body = list[i];
        }
    }
    q_collider_free(c);
    if (!(best.fraction <= 1)) {
        lua_pushnil(L);
        return 1;
    }
    lua_createtable(L, 0, 7);
    ql_push_vec3(L, best.position);
    lua_setfield(L, -2, "position");
    ql_push_vec3(L, best.normal);
    lua_setfield(L, -2, "normal");
    lua_pushnumber(L, best.fraction * length3(delta));
    lua_setfield(L, -2, "distance");
    lua_pushnumber(L, best.fraction);
    lua_setfield(L, -2, "fraction");
    lua_pushstring(L, material_name(best.material));
    lua_setfield(L, -2, "material");
    lua_pushboolean(L, q_handle_is_null(best_body));
    lua_setfield(L, -2, "terrain");
    if (!q_handle_is_null(best_body)) {
        ql_push_body(L, 1, best_body);
        lua_setfield(L, -2, "body");
    }
    return 1;
}

void ql_open_bodies(lua_State *L)
{
    static const luaL_Reg methods[] = {{"apply_impulse", body_apply_impulse},
                                       {"apply_force", body_apply_force},
                                       {"apply_torque", body_apply_torque},
                                       {"mesh", body_mesh},
                                       {"destroy", body_destroy},
                                       {"valid", body_valid},
                                       {NULL, NULL}};
    static const luaL_Reg meta[] = {{"__index", body_index},
                                    {"__newindex", body_newindex},
                                    {"__tostring", body_tostring},
                                    {NULL, NULL}};
    ql_new_class(L, QL_BODY, methods, meta);
    static const luaL_Reg world_methods[] = {{"spawn", world_spawn},
                                             {"bodies", world_bodies},
                                             {"on", world_on},
                                             {"shapecast", world_shapecast},
                                             {NULL, NULL}};
    ql_add_methods(L, QL_WORLD, world_methods);
}
