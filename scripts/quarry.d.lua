---@meta quarry
-- LuaLS definitions of the Quarry Lua API (docs/api.md is the reference).
-- Nothing here runs: the language server reads it through .luarc.json so
-- editors complete and type-check scripts. spec/docs_spec.lua checks that it
-- declares exactly the functions, methods and Body properties the bindings
-- export.

---A point or direction: a Vec3, `{x, y, z}` or `{x =, y =, z =}` (finite).
---@alias quarry.Point Vec3|number[]|{x: number, y: number, z: number}
---A rotation: a Quat, `{w, x, y, z}` or `{w =, x =, y =, z =}` (normalised).
---@alias quarry.Rotation Quat|number[]|{w: number, x: number, y: number, z: number}
---A colour `{r, g, b [, a]}` or `{r =, g =, b =, a =}`, components in 0..1.
---@alias quarry.Color number[]|{r: number, g: number, b: number, a?: number}
---@alias quarry.Event "contact"|"shatter"|"detach"
---@alias quarry.ShapeKind "sphere"|"box"|"capsule"|"hull"|"mesh"
---@alias quarry.TerrainKind "flat"|"hills"|"caves"|"islands"

---The module table (`local quarry = require "quarry"`). Host callbacks are
---optional fields the script sets.
---@class quarry
---@field load? fun(args: string[]) host: once before the first frame
---@field update? fun(dt: number) host: every frame
---@field draw? fun() host: every frame after update
---@field keypressed? fun(key: string) host
---@field keyreleased? fun(key: string) host
---@field mousepressed? fun(x: number, y: number, button: integer) host
---@field mousereleased? fun(x: number, y: number, button: integer) host
---@field mousemoved? fun(x: number, y: number, dx: number, dy: number) host
---@field wheelmoved? fun(dx: number, dy: number) host
---@field quit? fun() host: Escape, window closed or end of --frames
local quarry = {}

---The module's version string.
---@type string
quarry.version = "0.1.0"

-- ---------------------------------------------------------------- values

---@class Vec3
---@field x number
---@field y number
---@field z number
---@operator add(quarry.Point): Vec3
---@operator sub(quarry.Point): Vec3
---@operator mul(number): Vec3
---@operator div(number): Vec3
---@operator unm: Vec3
local Vec3 = {}

---@param v quarry.Point
---@return number
function Vec3:dot(v) end

---@param v quarry.Point
---@return Vec3
function Vec3:cross(v) end

---@return number
function Vec3:length() end

---Unit vector; the zero vector stays zero.
---@return Vec3
function Vec3:normalized() end

---`self + (v - self) * t` (t not clamped).
---@param v quarry.Point
---@param t number
---@return Vec3
function Vec3:lerp(v, t) end

---@return number x
---@return number y
---@return number z
function Vec3:unpack() end

---A new vector; missing components are 0.
---@param x? number
---@param y? number
---@param z? number
---@return Vec3
function quarry.vec3(x, y, z) end

---@class Quat
---@field w number
---@field x number
---@field y number
---@field z number
---@operator mul(Quat): Quat
---@operator mul(quarry.Point): Vec3
local Quat = {}

---The inverse rotation.
---@return Quat
function Quat:conjugate() end

---`quarry.quat(w, x, y, z)`: a normalised quaternion (not all zero).
---@class quarry.quat
---@overload fun(w: number, x: number, y: number, z: number): Quat
quarry.quat = {}

---@param axis quarry.Point non-zero
---@param angle number radians
---@return Quat
function quarry.quat.from_axis_angle(axis, angle) end

---Rotation about X, then Y, then Z (radians).
---@param x number
---@param y number
---@param z number
---@return Quat
function quarry.quat.from_euler(x, y, z) end

-- ------------------------------------------------------------- materials

---@class quarry.MaterialDef
---@field name string 1..31 of letters, digits, _ and -
---@field density? number kg/m^3 (1000)
---@field friction? number >= 0 (0.6)
---@field restitution? number 0..1 (0.1)
---@field color? number[] {r, g, b} in 0..1
---@field brittle? boolean (false)
---@field strength? number N s that breaks a brittle body (1000)
---@field liquid? boolean (false)

---@class quarry.Material
---@field name string
---@field density number
---@field friction number
---@field restitution number
---@field color number[]
---@field brittle boolean
---@field strength number
---@field liquid boolean

---@class quarry.material
quarry.material = {}

---@param def quarry.MaterialDef
---@return quarry.Material
function quarry.material.define(def) end

---@param name string
---@return quarry.Material
function quarry.material.get(name) end

---@return string[] names in id order, "air" first
function quarry.material.list() end

-- ----------------------------------------------------------------- world

---@class quarry.WorldDef
---@field voxel_size? number metres per voxel (1)
---@field gravity? quarry.Point m/s^2 ({0, -9.81, 0})
---@field step? number fixed step in (0, 1] (1/60)
---@field substeps? integer 1..64 (4)
---@field seed? integer (1)
---@field threads? integer worker threads 0..64 (one per core less one)
---@field physics_cache? integer bytes (0 = 32 MiB)
---@field auto_detach? boolean islands become bodies during step (false)

---@class quarry.WorldSettings
---@field voxel_size number
---@field gravity Vec3
---@field step number
---@field substeps integer
---@field seed integer
---@field auto_detach boolean

---@class quarry.world
quarry.world = {}

---@param def? quarry.WorldDef
---@return World
function quarry.world.new(def) end

---@param path string
---@return World|nil world
---@return string? err
function quarry.world.load(path) end

---@class World
---@field terrain Terrain
local World = {}

---Runs whole fixed steps for dt seconds (at most 240); returns the steps run.
---@param dt number
---@return integer
function World:step(dt) end

---@return number seconds simulated
function World:time() end

---@return integer fixed steps run
function World:frame() end

---@return string 16 hex digits
function World:hash() end

---Counts (chunks, memory, bodies, awake, triangles, contacts, lod_triangles, ...) and the
---frame profile in ms (ms_step, ms_solver, ms_fracture, ms_edit, ms_raycast, ms_mesh, ms_lua, ...).
---@return table stats
function World:stats() end

---@return quarry.WorldSettings
function World:settings() end

---@param path string
---@return true|nil ok
---@return string? err
function World:save(path) end

function World:destroy() end

---@return boolean
function World:valid() end

---Adds a handler; fn = nil removes that event's handlers.
---@param event quarry.Event
---@param fn? function contact: (a, other, contact); shatter: (body, fragments); detach: (bodies)
function World:on(event, fn) end

-- --------------------------------------------------------------- queries

---@class quarry.QueryOptions
---@field terrain? boolean (true)
---@field water? boolean (false)
---@field bodies? boolean (true)
---@field ignore? Body[]
---@field exact? boolean overlaps: false asks the broadphase alone (true)

---@class quarry.Hit
---@field position Vec3
---@field normal Vec3
---@field distance number
---@field material string
---@field terrain boolean
---@field water boolean
---@field body? Body
---@field fraction? number shapecast only

---@class quarry.ShapeDef
---@field shape quarry.ShapeKind
---@field radius? number
---@field size? number|quarry.Point full extents
---@field height? number capsule: total length
---@field points? quarry.Point[]|number[]
---@field mesh? Mesh
---@field rotation? quarry.Rotation

---@param origin quarry.Point
---@param direction quarry.Point
---@param max_distance number
---@param opts? quarry.QueryOptions
---@return quarry.Hit|nil
function World:raycast(origin, direction, max_distance, opts) end

---@param origin quarry.Point
---@param direction quarry.Point
---@param max_distance number
---@param opts? quarry.QueryOptions
---@return quarry.Hit[]
function World:raycast_all(origin, direction, max_distance, opts) end

---Terrain only: one distance per ray, false for a miss.
---@param origins quarry.Point[]
---@param directions quarry.Point[]
---@param max_distance number
---@param opts? quarry.QueryOptions
---@return (number|false)[]
function World:raycast_batch(origins, directions, max_distance, opts) end

---@param center quarry.Point
---@param radius number
---@param opts? quarry.QueryOptions
---@return Body[] bodies
---@return boolean touches_terrain
---@return boolean touches_water
function World:overlap_sphere(center, radius, opts) end

---@param center quarry.Point
---@param half_extents quarry.Point
---@param opts? quarry.QueryOptions
---@return Body[] bodies
---@return boolean touches_terrain
---@return boolean touches_water
function World:overlap_box(center, half_extents, opts) end

---@param shape_def quarry.ShapeDef sphere, box, capsule or hull
---@param from quarry.Point
---@param to quarry.Point
---@param opts? {terrain?: boolean, bodies?: boolean, ignore?: Body[]}
---@return quarry.Hit|nil
function World:shapecast(shape_def, from, to, opts) end

-- ------------------------------------------------------------------- LOD

---@param pos quarry.Point
---@param opts? {distances?: number[]}
function World:set_viewer(pos, opts) end

---`lod_mesh([min, max] [, opts])` or `lod_mesh(opts)`.
---@param min? quarry.Point|{wait?: boolean}
---@param max? quarry.Point
---@param opts? {wait?: boolean}
---@return Mesh mesh
---@return table info chunk_triangles, seam_triangles, triangles_per_level, current, ...
function World:lod_mesh(min, max, opts) end

-- --------------------------------------------------------------- terrain

---@class quarry.GenerateDef
---@field kind? quarry.TerrainKind ("hills")
---@field size? quarry.Point voxels, 1..4096 each ({256, 64, 256})
---@field seed? integer (1)
---@field water_level? number voxels

---@class quarry.VoxelData
---@field size integer[] {nx, ny, nz}
---@field materials string[]
---@field occupancy number[]

---@class quarry.Island
---@field min Vec3
---@field max Vec3
---@field voxels integer
---@field seed Vec3
---@field too_large boolean
---@field volume number
---@field removed? integer remove_islands only

---@alias quarry.Anchor nil|quarry.Point|quarry.Point[]

---@class Terrain
local Terrain = {}

---@param center quarry.Point
---@param radius number
---@param material string
function Terrain:fill_ball(center, radius, material) end

---@param center quarry.Point
---@param size number|quarry.Point full extents
---@param material string
---@param rotation? quarry.Rotation
function Terrain:fill_block(center, size, material, rotation) end

---@param center quarry.Point
---@param radius number
---@param height number
---@param material string
function Terrain:fill_cylinder(center, radius, height, material) end

---@param min quarry.Point integer voxel coordinates
---@param max quarry.Point exclusive
---@param material string
function Terrain:fill_region(min, max, material) end

---@param center quarry.Point
---@param radius number
function Terrain:carve_ball(center, radius) end

---@param center quarry.Point
---@param radius number
---@param material string not "air"
function Terrain:paint_ball(center, radius, material) end

---@param center quarry.Point
---@param radius number
---@param strength? number 0..1 (0.5)
function Terrain:smooth_ball(center, radius, strength) end

---@param def quarry.GenerateDef
function Terrain:generate(def) end

function Terrain:clear() end

---Undoes the last recorded edit; false when there is nothing to undo.
---@return boolean
function Terrain:undo() end

---Redoes the last undone edit; false when there is nothing to redo.
---@return boolean
function Terrain:redo() end

---Sets the edit journal's bounds and returns its state.
---@param opts? {limit_bytes?: integer, steps?: integer}
---@return {limit_bytes: integer, steps: integer, bytes: integer, undo: integer, redo: integer, cleared: integer, dropped: integer}
function Terrain:journal(opts) end

---@param x integer
---@param y integer
---@param z integer
---@return string material
---@return number occupancy 0..1
function Terrain:get(x, y, z) end

---@param min quarry.Point
---@param max quarry.Point
---@return quarry.VoxelData
function Terrain:read(min, max) end

---@param min quarry.Point
---@param data quarry.VoxelData
function Terrain:write(min, data) end

---@param point quarry.Point
---@return boolean
function Terrain:is_solid(point) end

---@return Vec3|nil min
---@return Vec3? max
function Terrain:bounds() end

---@return integer
function Terrain:version() end

---@param version integer
---@return {min: Vec3, max: Vec3, version: integer}[]|nil changes
---@return integer current_version
function Terrain:changes_since(version) end

---@param min quarry.Point
---@param max quarry.Point
---@param opts? {lod?: integer, surface?: "solid"|"water"}
---@return Mesh
function Terrain:mesh(min, max, opts) end

---@param anchor? quarry.Anchor
---@return quarry.Island[] islands
---@return table info relabelled, candidates, visited, full, chunks, components, bytes
function Terrain:islands(anchor) end

---@param anchor? quarry.Anchor
---@return quarry.Island[]
function Terrain:remove_islands(anchor) end

---@param opts? {anchor?: quarry.Anchor, max_hulls?: integer, max_bodies?: integer}
---@return Body[] bodies
---@return integer too_large
function Terrain:detach_islands(opts) end

-- ---------------------------------------------------------------- bodies

---@class quarry.BodyDef: quarry.ShapeDef
---@field position? quarry.Point
---@field velocity? quarry.Point
---@field angular_velocity? quarry.Point
---@field material? string ("rock")
---@field mass? number kg
---@field static? boolean
---@field name? string

---@class quarry.Contact
---@field position Vec3
---@field normal Vec3 from other towards self
---@field impulse number N s
---@field speed number approach speed, m/s
---@field material string the other's

---@class Body
---@field position Vec3 read/write
---@field rotation Quat read/write
---@field velocity Vec3 read/write
---@field angular_velocity Vec3 read/write
---@field name string|nil read/write
---@field on_contact fun(self: Body, other: Body|"terrain", contact: quarry.Contact)|nil read/write
---@field center Vec3 read only: world centre of mass
---@field mass number read only
---@field material string read only
---@field sleeping boolean read only
---@field static boolean read only
local Body = {}

---@param def quarry.BodyDef
---@return Body
function World:spawn(def) end

---@return Body[]
function World:bodies() end

---@param impulse quarry.Point N s
---@param at? quarry.Point world point (centre of mass)
function Body:apply_impulse(impulse, at) end

---@param force quarry.Point N, through every fixed step of the next world:step call
---@param at? quarry.Point
function Body:apply_force(force, at) end

---@param torque quarry.Point N m, through every fixed step of the next world:step call
function Body:apply_torque(torque) end

---@return Mesh world-space triangles
function Body:mesh() end

---@param opts? {at?: quarry.Point, pieces?: integer, seed?: integer, impulse?: number|quarry.Point, gpu?: boolean}
---@return Body[]|nil fragments
---@return string? err
function Body:shatter(opts) end

function Body:destroy() end

---@return boolean
function Body:valid() end

-- ---------------------------------------------------------------- meshes

---@class quarry.MeshHit
---@field position Vec3
---@field normal Vec3
---@field distance number
---@field triangle integer

---@class quarry.mesh
quarry.mesh = {}

---@param def {vertices: number[]|quarry.Point[], indices: integer[]|integer[][]}
---@return Mesh
function quarry.mesh.new(def) end

---A closed box centred on the origin, full extents size (or a cube).
---@param size number|quarry.Point
---@return Mesh
function quarry.mesh.box(size) end

---A closed icosphere: 20 * 4^detail triangles (detail 0..7, default 3).
---@param radius number
---@param detail? integer
---@return Mesh
function quarry.mesh.sphere(radius, detail) end

---OBJ, OFF, STL, PLY, glTF.
---@param path string
---@param opts? {merge?: number}
---@return Mesh|nil mesh
---@return string? err
function quarry.mesh.load(path, opts) end

---@class Mesh
local Mesh = {}

---@return integer
function Mesh:vertex_count() end

---@return integer
function Mesh:triangle_count() end

---@return Vec3[]
function Mesh:vertices() end

---@return integer[] flat, 1-based
function Mesh:indices() end

---@return Vec3[]|nil
function Mesh:normals() end

---@return string[]|nil
function Mesh:materials() end

---@return Vec3|nil min
---@return Vec3? max
function Mesh:bounds() end

---@return number
function Mesh:volume() end

---@return number
function Mesh:area() end

---@return boolean
function Mesh:is_closed() end

---Writes OBJ.
---@param path string
---@return true|nil ok
---@return string? err
function Mesh:save(path) end

---@param origin quarry.Point
---@param direction quarry.Point
---@param max_distance number
---@return quarry.MeshHit|nil
function Mesh:raycast(origin, direction, max_distance) end

---@param opts? {epsilon?: number}
---@return Mesh hull
---@return {shape: string, epsilon: number, normal?: Vec3} info
function Mesh:hull(opts) end

---@param opts? {concavity?: number, connect_dist?: number, max_hulls?: integer, max_vertices?: integer, scale?: number, sample_spacing?: number, volume_weight?: number, trace?: boolean}
---@return Mesh[]|nil hulls
---@return table|string info or err
function Mesh:decompose(opts) end

---@param opts? {pieces?: integer, at?: quarry.Point, seed?: integer, points?: quarry.Point[]}
---@return Mesh[]|nil fragments
---@return table|string info or err
function Mesh:shatter(opts) end

-- -------------------------------------------------------------- geometry

---@param points quarry.Point[]|number[]
---@param opts? {epsilon?: number}
---@return Mesh hull
---@return {shape: "solid"|"polygon"|"segment"|"point", epsilon: number, normal?: Vec3} info
function quarry.hull(points, opts) end

---@class quarry.VoronoiCell
---@field site Vec3
---@field volume number
---@field vertices Vec3[]
---@field faces integer[][]
---@field neighbors integer[] site index, or -1..-6 for the walls

---@param sites quarry.Point[]
---@param min quarry.Point
---@param max quarry.Point
---@param opts? {gpu?: boolean}
---@return quarry.VoronoiCell[]
function quarry.voronoi(sites, min, max, opts) end

---@class quarry.gridsort
quarry.gridsort = {}

---@param mesh Mesh
---@param opts? {axis?: quarry.Point, resolution?: integer}
---@return GridSort
function quarry.gridsort.new(mesh, opts) end

---@class GridSort
local GridSort = {}

---@param origin quarry.Point
---@param direction quarry.Point
---@param max_distance number
---@return quarry.MeshHit|nil
function GridSort:raycast(origin, direction, max_distance) end

---@param origins quarry.Point[]
---@param directions quarry.Point[]
---@param max_distance number
---@return (number|false)[]
function GridSort:raycast_batch(origins, directions, max_distance) end

---@return integer
function GridSort:bytes() end

---@return integer
function GridSort:triangle_count() end

-- ------------------------------------------------- host program only

---Host program only.
---@class quarry.graphics
quarry.graphics = {}

---@param camera {position?: quarry.Point, target?: quarry.Point, fov?: number}
function quarry.graphics.set_camera(camera) end

---@return {position: Vec3, target: Vec3, fov: number}
function quarry.graphics.get_camera() end

---@param r number|quarry.Color
---@param g? number
---@param b? number
---@param a? number
function quarry.graphics.set_clear_color(r, g, b, a) end

---@return number r
---@return number g
---@return number b
---@return number a
function quarry.graphics.get_clear_color() end

---@param r number|quarry.Color
---@param g? number
---@param b? number
---@param a? number
function quarry.graphics.clear(r, g, b, a) end

---@param world World
---@param opts? {wireframe?: boolean, chunks?: boolean, contacts?: boolean, water?: boolean, bodies?: boolean, fog?: number|false, bake?: boolean|table}
---@return true|nil ok
---@return string? err
function quarry.graphics.draw_world(world, opts) end

---@param flags? {wireframe?: boolean, chunks?: boolean, broadphase?: boolean, contacts?: boolean, kdtree?: boolean, lod?: boolean}
---@return table flags
function quarry.graphics.debug(flags) end

---@param a quarry.Point
---@param b quarry.Point
---@param color? quarry.Color
function quarry.graphics.line(a, b, color) end

---@param s string
---@param x number
---@param y number
---@param opts? {color?: quarry.Color, scale?: number}
function quarry.graphics.text(s, x, y, opts) end

---@param x number
---@param y number
---@return Vec3 origin
---@return Vec3 direction
function quarry.graphics.screen_ray(x, y) end

---@return integer width
---@return integer height
function quarry.graphics.size() end

---@param path string PNG, or PPM for *.ppm
---@return true|nil ok
---@return string? err
function quarry.graphics.screenshot(path) end

---@return table stats chunks, triangles, draw_calls, remeshed, mesh_ms, gpu_bytes, bodies, contacts, ...
function quarry.graphics.stats() end

---Host program only.
---@class quarry.keyboard
quarry.keyboard = {}

---@param key string
---@return boolean
function quarry.keyboard.is_down(key) end

---Host program only.
---@class quarry.mouse
quarry.mouse = {}

---@return number x
---@return number y
function quarry.mouse.position() end

---@param on boolean
---@return boolean
function quarry.mouse.set_captured(on) end

---@return boolean
function quarry.mouse.is_captured() end

---Host program only.
---@class quarry.timer
quarry.timer = {}

---@return integer
function quarry.timer.fps() end

---Monotonic wall-clock seconds (only differences mean anything).
---@return number
function quarry.timer.now() end

return quarry
