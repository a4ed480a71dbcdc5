-- Lua-level API fuzzer: calls every function of the quarry module and every
-- method and metamethod of its classes (found by walking the module and the
-- registry's "quarry.*" metatables, so new classes are fuzzed as they land)
-- with random arguments: wrong types, NaN, inf, huge and negative numbers,
-- integers at the limits, odd strings, tables with wrong fields, userdata of
-- the wrong class, destroyed worlds and their terrain, and functions that
-- call back into the API. Rigid bodies get targets of their own, drawn 3
-- times as often (body_targets): spawns from valid definitions with some
-- fields fuzzed, fuzzed property sets and reads, impulses, shatter and
-- detach_islands options, shapecasts, world:on handlers (and on_contact)
-- that raise, destroy their bodies or the world, step from inside the step,
-- spawn, shatter or write NaN; Body methods get live, destroyed, shattered
-- and foreign bodies. Every call must return or raise a Lua error with a
-- string message, and after every call the world's bodies must be valid,
-- finite and as many as world:stats().bodies; anything else (a crash, a
-- sanitizer report) ends the process, which the caller sees.
--
--   lua5.4 fuzz/api.lua [--seed N] [--calls N] [--seconds S] [--verbose]
--
-- quarry.so is found through QUARRY_BUILD (default build). Deterministic for
-- a seed and a call count. Prints one summary line:
--   api fuzz: seed S, N calls (E errors, R returns) over F functions of C classes,
--   slowest 0.012 s (World:raycast_batch), W files written in the sandbox,
--   B body calls, up to N bodies
--
-- Fuzzed arguments reach functions that write files (World:save, Mesh:save,
-- and whatever lands next) as paths: "-1", "-inf", "../../etc/passwd". So
-- the fuzzer runs as a child of itself whose working directory lies three
-- levels down in a fresh temporary directory, with nothing of the caller's
-- tree reachable by the relative paths it makes up; the parent removes the
-- directory when the child ends, however it ends.

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local sandbox = os.getenv("QUARRY_FUZZ_SANDBOX")
if not sandbox then
  local function absolute(path)
    if path:sub(1, 1) == "/" then return path end
    local p = assert(io.popen("pwd"))
    local cwd = p:read("l")
    p:close()
    return cwd .. "/" .. path
  end
  local lua = arg[0]
  for i = -1, -100, -1 do
    if arg[i] == nil then break end
    lua = arg[i] -- the interpreter is the first word of the command line
  end
  local args = {}
  for i = 1, #arg do args[i] = shell_quote(arg[i]) end
  -- The trap removes the directory also when the run is stopped by a signal
  -- (timeout sends SIGTERM to the whole process group).
  local script = [[
build=$1 lua=$2 script=$3
shift 3
# Under `make sanitize` LD_PRELOAD holds the ASan runtime: mktemp leaks and
# exits 86 (its report lost with its closed stderr), so the tools here run
# without it and only the fuzzer gets it back.
preload=${LD_PRELOAD:-}
unset LD_PRELOAD
root=$(mktemp -d "${TMPDIR:-/tmp}/quarry-apifuzz.XXXXXX") || exit 70
trap 'rm -rf "$root"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
mkdir -p "$root/run/a/b" && cd "$root/run/a/b" || exit 70
LD_PRELOAD=$preload QUARRY_FUZZ_SANDBOX=$root QUARRY_BUILD=$build "$lua" "$script" "$@"
]]
  local ok, how, code = os.execute(table.concat({"sh -c", shell_quote(script), "quarry-apifuzz",
    shell_quote(absolute(os.getenv("QUARRY_BUILD") or "build")), shell_quote(lua),
    shell_quote(absolute(arg[0])), table.concat(args, " ")}, " "))
  if how == "signal" then code = 128 + code end
  os.exit(ok and 0 or code, true)
end

local build = os.getenv("QUARRY_BUILD") or "build"
package.cpath = build .. "/?.so;" .. package.cpath
local quarry = require "quarry"

local seed, calls, seconds, verbose = 1, 3000, nil, false
do
  local i = 1
  while i <= #arg do
    local a = arg[i]
    if a == "--seed" then seed = assert(tonumber(arg[i + 1])); i = i + 1
    elseif a == "--calls" then calls = assert(tonumber(arg[i + 1])); i = i + 1
    elseif a == "--seconds" then seconds = assert(tonumber(arg[i + 1])); i = i + 1
    elseif a == "--verbose" then verbose = true
    else error("unknown argument " .. a) end
    i = i + 1
  end
end
math.randomseed(seed)
local random = math.random

-- ---- the functions to call ----

local targets = {} -- {name =, f =, self = class name or nil}
local seen = {}
local function add_module(t, prefix)
  if seen[t] then return end
  seen[t] = true
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do
    local v = t[k]
    local name = prefix .. tostring(k)
    if k ~= "_test" and k ~= "graphics" then
      if type(v) == "function" then
        targets[#targets + 1] = {name = name, f = v}
      elseif type(v) == "table" then
        local mt = getmetatable(v)
        if type(mt) == "table" and type(mt.__call) == "function" then
          targets[#targets + 1] = {name = name .. "()", f = function(...) return v(...) end}
        end
        add_module(v, name .. ".")
      end
    end
  end
end
add_module(quarry, "quarry.")

local classes = {}
do
  local reg = debug.getregistry()
  local names = {}
  for k, v in pairs(reg) do
    if type(k) == "string" and k:match("^quarry%.%u") and type(v) == "table" then names[#names + 1] = k end
  end
  table.sort(names)
  for _, cname in ipairs(names) do
    local mt = reg[cname]
    classes[#classes + 1] = cname
    local short = cname:gsub("^quarry%.", "")
    local methods = type(mt.methods) == "table" and mt.methods or
                    (type(mt.__index) == "table" and mt.__index or {})
    local keys = {}
    for k, v in pairs(methods) do if type(v) == "function" then keys[#keys + 1] = k end end
    for k, v in pairs(mt) do
      if type(k) == "string" and k:match("^__") and type(v) == "function" then keys[#keys + 1] = k end
    end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local f = methods[k] or mt[k]
      -- __gc and __close are called on live objects by Lua itself: calling
      -- them by hand is fuzzed too (a second collection must be harmless).
      targets[#targets + 1] = {name = short .. ":" .. k, f = f, self = cname}
    end
  end
end

-- ---- values ----

local NAN, INF = 0 / 0, math.huge
local numbers = {0, -0.0, 1, -1, 2, 3, 0.5, -0.5, 7, 1e-300, -1e-300, 1e6, -1e6, 1e9, 1e300,
                 -1e300, INF, -INF, NAN, 2 ^ 24, 2 ^ 31, 2 ^ 53, math.maxinteger,
                 math.mininteger, 0x7fffffff, -0x80000000, 4096, 4097, 255, 256, 65536}
local small = {0, 1, 2, 3, 4, 5, 8, 0.25, 1.5}
local strings = {"", "rock", "air", "water", "stone", "hills", "caves", "flat", "islands",
                 "x", "\0", "\255\254", ("z"):rep(4096), "%s%s%n", "fuzz_a", "fuzz_b",
                 "1", "nan", "inf", "../../etc/passwd", "sphere", "box", "capsule", "hull",
                 "mesh", "contact", "shatter", "detach", "glass", "metal", "position", "velocity",
                 "on_contact", "mass", "name", "static"}
local keys = {"x", "y", "z", "w", "kind", "size", "seed", "lod", "merge", "voxel_size",
              "gravity", "step", "substeps", "threads", "physics_cache", "water_level",
              "max_hulls", "max_vertices", "concavity", "connect_dist", "anchor", "density",
              "friction", "restitution", "color", "brittle", "strength", "liquid", "name",
              "normals", "materials", "indices", "vertices", "positions", "max_distance",
              "origins", "directions", "bodies", "contacts", "bake", "trace", "mask", "axis", "resolution",
              "min", "max", "rotation", "radius", "count", "leaf_size", "occupancy",
              -- bodies (spawn, properties, shatter, detach, shapecast)
              "shape", "height", "points", "mesh", "position", "velocity", "angular_velocity",
              "material", "mass", "static", "on_contact", "center", "sleeping", "at", "pieces",
              "impulse", "gpu", "max_bodies", "auto_detach", "exact", "ignore", "terrain", "water"}

local cache = {}   -- live objects made at the start and refreshed now and then
local pick_value   -- forward

-- A valid definition of a random shape (spawn and shapecast start from one,
-- then get some fields fuzzed).
local SHAPES = {"sphere", "box", "capsule", "hull", "mesh"}
local BODY_MATERIALS = {"rock", "glass", "metal", "wood", "ice", "brick"}
local function shape_def(mesh)
  local kind = SHAPES[random(#SHAPES)]
  if kind == "sphere" then return {shape = kind, radius = 0.2 + random() * 1.5}
  elseif kind == "box" then return {shape = kind, size = {0.2 + random(), 0.2 + random(), 0.2 + random() * 2}}
  elseif kind == "capsule" then return {shape = kind, radius = 0.3, height = 0.6 + random() * 2}
  elseif kind == "hull" then
    local pts = {}
    for i = 1, random(4, 12) do pts[i] = {random() * 2 - 1, random() * 2 - 1, random() * 2 - 1} end
    return {shape = kind, points = pts}
  end
  return {shape = kind, mesh = mesh}
end

local function fresh_objects()
  local w = quarry.world.new{threads = 0, auto_detach = random() < 0.5}
  w.terrain:fill_ball({0, 0, 0}, 4, "rock")
  w.terrain:fill_block({6, 0, 0}, {2, 3, 2}, "brick")
  w.terrain:fill_block({0, -4, 0}, {30, 2, 30}, "rock")
  w.terrain:fill_ball({-8, 9, 5}, 1.5, "glass") -- an island for detach_islands
  local dead = quarry.world.new{threads = 0}
  local dead_terrain = dead.terrain
  local dead_body = dead:spawn{shape = "sphere", radius = 1}
  dead:destroy()
  local mesh = w.terrain:mesh({-6, -6, -6}, {6, 6, 6})
  local empty_mesh = quarry.mesh.new{vertices = {}, indices = {}}
  local ok_gs, gs = pcall(quarry.gridsort.new, mesh)
  -- bodies: one of each shape (the mesh one a small convex mesh, so the
  -- decomposition stays quick), a static one, glass ones that break, a
  -- destroyed one, a shattered one (stale) and one in another world
  local small = quarry.hull{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}}
  local bodies = {}
  for i, kind in ipairs(SHAPES) do
    local d = shape_def(small)
    while d.shape ~= kind do d = shape_def(small) end
    d.position = {i * 2 - 6, 5 + i, 0}
    d.material = BODY_MATERIALS[random(#BODY_MATERIALS)]
    d.velocity = {0, -random() * 20, 0}
    bodies[#bodies + 1] = w:spawn(d)
  end
  bodies[#bodies + 1] = w:spawn{shape = "box", size = {3, 0.5, 3}, position = {0, 2, 4}, static = true}
  bodies[#bodies + 1] = w:spawn{shape = "box", size = 1, position = {2, 9, 4}, material = "glass", velocity = {0, -30, 0}}
  local dead_b = w:spawn{shape = "sphere", radius = 0.5, position = {9, 9, 9}}
  dead_b:destroy()
  local shattered = w:spawn{shape = "box", size = 1.5, position = {-5, 12, -5}, material = "glass"}
  local fragments = shattered:shatter{pieces = 6}
  for _, f in ipairs(fragments or {}) do bodies[#bodies + 1] = f end
  local other = quarry.world.new{threads = 0}
  local other_body = other:spawn{shape = "capsule", radius = 0.2, height = 1}
  cache = {
    world = w, terrain = w.terrain, dead = dead, dead_terrain = dead_terrain,
    mesh = mesh, empty_mesh = empty_mesh, gridsort = ok_gs and gs or nil,
    vec = quarry.vec3(1, 2, 3), quat = quarry.quat(1, 0, 0, 0),
    file = io.stdout, co = coroutine.create(function() end),
    bodies = bodies, body = bodies[1], dead_body = dead_body, destroyed_body = dead_b,
    shattered = shattered, other = other, other_body = other_body, small_mesh = small,
  }
end
fresh_objects()

-- A body of the world, often one made since (fragments, spawns), or a
-- destroyed, stale or foreign one.
local function some_body()
  local r = random()
  if r < 0.6 then
    local ok, list = pcall(cache.world.bodies, cache.world)
    if ok and #list > 0 then return list[random(#list)] end
    return cache.bodies[random(#cache.bodies)]
  elseif r < 0.75 then return cache.bodies[random(#cache.bodies)]
  elseif r < 0.85 then return cache.destroyed_body
  elseif r < 0.9 then return cache.shattered
  elseif r < 0.95 then return cache.dead_body
  else return cache.other_body end
end

-- An instance of a class for `self`, or something that is not one.
local function instance_of(cname)
  local wanted = {
    ["quarry.World"] = "world", ["quarry.Terrain"] = "terrain", ["quarry.Mesh"] = "mesh",
    ["quarry.Vec3"] = "vec", ["quarry.Quat"] = "quat", ["quarry.GridSort"] = "gridsort",
  }
  local key = wanted[cname]
  local r = random()
  if cname == "quarry.Body" and r < 0.9 then return some_body() end
  if key and cache[key] and r < 0.75 then return cache[key] end
  if r < 0.85 and cname == "quarry.World" then return cache.dead end
  if r < 0.85 and cname == "quarry.Terrain" then return cache.dead_terrain end
  return pick_value(1)
end

local function vec_like()
  local r = random(5)
  local function n() return random() < 0.8 and small[random(#small)] * (random() < 0.5 and -1 or 1)
                             or numbers[random(#numbers)] end
  if r == 1 then return {n(), n(), n()}
  elseif r == 2 then return {x = n(), y = n(), z = n()}
  elseif r == 3 then return quarry.vec3(n(), n(), n())
  elseif r == 4 then return {n(), n()}
  else return {n(), n(), n(), n()} end
end

local depth = 0
local call_target -- forward

function pick_value(level)
  level = level or 0
  local r = random(100)
  if r <= 6 then return nil
  elseif r <= 9 then return random() < 0.5
  elseif r <= 30 then return numbers[random(#numbers)]
  elseif r <= 42 then return small[random(#small)]
  elseif r <= 52 then return strings[random(#strings)]
  elseif r <= 66 then return vec_like()
  elseif r <= 78 and level < 2 then
    local t = {}
    for _ = 1, random(0, 4) do t[keys[random(#keys)]] = pick_value(level + 1) end
    for i = 1, random(0, 3) do t[i] = pick_value(level + 1) end
    return t
  elseif r <= 82 then
    -- a callback that calls back into the API (once, not recursively)
    return function(...)
      if depth < 1 then
        depth = depth + 1
        pcall(call_target, targets[random(#targets)])
        depth = depth - 1
      end
      return pick_value(2)
    end
  else
    local names = {"world", "terrain", "dead", "dead_terrain", "mesh", "empty_mesh",
                   "gridsort", "vec", "quat", "file", "co", "body", "body", "other"}
    local name = names[random(#names)]
    if name == "body" then return some_body() end
    return cache[name]
  end
end

-- ---- rigid bodies: calls that start from valid input and fuzz part of it ----

-- Replaces 1 to 3 fields of a valid table by random values (or removes them,
-- or adds unknown ones), so the checks past the first field are reached.
local function mutate(t)
  for _ = 1, random(0, 3) do
    local r = random()
    if r < 0.7 then t[keys[random(#keys)]] = pick_value(1)
    elseif r < 0.85 then
      local fields = {}
      for k in pairs(t) do fields[#fields + 1] = k end
      table.sort(fields, function(a, b) return tostring(a) < tostring(b) end)
      if #fields > 0 then t[fields[random(#fields)]] = nil end
    else t[strings[random(#strings)]] = pick_value(1) end
  end
  return t
end

local PROPS = {"position", "rotation", "velocity", "angular_velocity", "name", "on_contact", "center",
               "mass", "material", "sleeping", "static", "shape", "nope", 1, true}
local EVENTS = {"contact", "shatter", "detach", "contact", "shatter", "detach", "collide", "", 7}

-- Handlers for world:on and on_contact that misbehave: raise, destroy
-- their arguments or the world, step the world from inside its step, spawn,
-- shatter, or call anything.
local function destroy_all(x)
  if type(x) == "table" then for _, v in ipairs(x) do destroy_all(v) end
  elseif type(x) == "userdata" then pcall(function() if x:valid() then x:destroy() end end) end
end
local nested_steps = 0
local function bad_handler()
  local w = cache.world
  local r = random(8)
  if r == 1 then return function() error("handler raised") end
  elseif r == 2 then return function(...) for i = 1, select("#", ...) do destroy_all((select(i, ...))) end end
  elseif r == 3 then return function() if random() < 0.2 then w:destroy() end end
  elseif r == 4 then
    -- a step inside the step's own events (at most 2 deep: deeper, each
    -- level's new contacts step again until Lua's C stack runs out, which
    -- is a clean error but takes seconds with thousands of fragments)
    return function()
      -- (and not with hundreds of fragments: a 4096-piece shatter makes a
      -- step take seconds, which is cost, not a fault)
      local ok_n, n = pcall(function() return w:stats().bodies end)
      if nested_steps < 2 and ok_n and n <= 400 then
        nested_steps = nested_steps + 1
        local ok, err = pcall(w.step, w, 1 / 60)
        nested_steps = nested_steps - 1
        if not ok then error(err, 0) end
      end
    end
  elseif r == 5 then return function() w:spawn(shape_def(cache.small_mesh)) end
  elseif r == 6 then
    return function(a, b)
      for _, x in ipairs{a, b} do
        if type(x) == "userdata" then pcall(x.shatter, x, {pieces = random(1, 8)}) end
      end
    end
  elseif r == 7 then return function(a) if type(a) == "userdata" then a.position = {0 / 0, 0, 0} end end
  end
  return pick_value(0) -- a function that calls a random target, or not a function at all
end

local body_targets = {
  {name = "World:spawn{fuzzed}", f = function()
     local def = shape_def(random() < 0.5 and cache.small_mesh or cache.mesh)
     def.position = {random() * 20 - 10, random() * 10, random() * 20 - 10}
     def.velocity = {0, -random() * 10, 0}
     def.material = BODY_MATERIALS[random(#BODY_MATERIALS)]
     if def.shape == "mesh" and def.mesh == cache.mesh and random() < 0.8 then def.mesh = cache.small_mesh end
     local w = random() < 0.9 and cache.world or cache.dead
     return w:spawn(mutate(def))
   end},
  {name = "Body.property = fuzzed", f = function()
     local b = some_body()
     b[PROPS[random(#PROPS)]] = random() < 0.3 and bad_handler() or pick_value(0)
   end},
  {name = "Body.property", f = function()
     local b = some_body()
     return b[PROPS[random(#PROPS)]]
   end},
  {name = "Body:apply_*(fuzzed)", f = function()
     local b = some_body()
     local m = ({"apply_impulse", "apply_force", "apply_torque"})[random(3)]
     return b[m](b, random() < 0.5 and vec_like() or pick_value(0), random() < 0.5 and vec_like() or pick_value(0))
   end},
  {name = "Body:shatter{fuzzed}", f = function()
     local b = some_body()
     local opts = {pieces = random(1, 24), seed = random(0, 1000)}
     if random() < 0.5 then opts.impulse = random() < 0.5 and random() * 100 or vec_like() end
     if random() < 0.5 then opts.at = vec_like() end
     return b:shatter(mutate(opts))
   end},
  {name = "Terrain:detach_islands{fuzzed}", f = function()
     local t = random() < 0.95 and cache.terrain or cache.dead_terrain
     if random() < 0.7 then
       pcall(t.fill_ball, t, {random() * 20 - 10, 8 + random() * 6, random() * 20 - 10}, 0.5 + random() * 2,
             BODY_MATERIALS[random(#BODY_MATERIALS)])
     end
     local opts = {max_bodies = random(0, 3), max_hulls = random(1, 8)}
     if random() < 0.3 then opts.anchor = vec_like() end
     return t:detach_islands(random() < 0.1 and pick_value(0) or mutate(opts))
   end},
  {name = "World:on(event, bad handler)", f = function()
     local w = random() < 0.95 and cache.world or cache.dead
     return w:on(EVENTS[random(#EVENTS)], bad_handler())
   end},
  {name = "World:step (events fire)", f = function()
     return cache.world:step(({1 / 60, 1 / 30, 0.1, 0.25})[random(4)])
   end},
  {name = "World:shapecast{fuzzed}", f = function()
     local def = shape_def(cache.small_mesh)
     local opts = random() < 0.5 and mutate{ignore = {some_body()}, bodies = true} or nil
     return cache.world:shapecast(mutate(def), vec_like(), vec_like(), opts)
   end},
  {name = "World:raycast (bodies)", f = function()
     return cache.world:raycast({random() * 10 - 5, 30, random() * 10 - 5}, {0, -1, 0}, 100,
                                mutate{bodies = true, ignore = {some_body(), some_body()}})
   end},
  {name = "World:save/load (bodies)", f = function()
     local ok = cache.world:save("bodies.qw")
     if ok then
       local w = quarry.world.load("bodies.qw")
       if w then w:destroy() end
     end
   end},
}
local function_count = #targets + #body_targets
-- Each body target is drawn as often as 3 ordinary ones.
for _, t in ipairs(body_targets) do
  t.body = true
  for _ = 1, 3 do targets[#targets + 1] = t end
end
for _, t in ipairs(targets) do
  if t.self == "quarry.Body" or (t.name:match("spawn") or t.name:match("shatter") or t.name:match("detach")) then
    t.body = true
  end
end

-- No NaN or infinity in the world's bodies, whatever the calls did.
local function check_world(after)
  local w = cache.world
  local ok, list = pcall(w.bodies, w)
  if not ok then return nil end -- destroyed by a call
  for _, b in ipairs(list) do
    if not b:valid() then return "world:bodies() returned a destroyed body after " .. after end
    local p, v, a = b.position, b.velocity, b.angular_velocity
    for _, x in ipairs{p.x, p.y, p.z, v.x, v.y, v.z, a.x, a.y, a.z} do
      if x ~= x or x == math.huge or x == -math.huge then
        return string.format("%s holds position %s velocity %s after %s", tostring(b), tostring(p), tostring(v), after)
      end
    end
  end
  local n = w:stats().bodies
  if n ~= #list then return string.format("stats().bodies %d, world:bodies() %d after %s", n, #list, after) end
  return nil, #list
end

local stats = {calls = 0, errors = 0, returns = 0, slowest = 0, slowest_name = "", bad = {}, body_calls = 0,
               max_bodies = 0}
local clock = os.clock

function call_target(t)
  local n = random(0, 5)
  local args = {}
  local first = 1
  if t.self then
    args[1] = instance_of(t.self)
    first = 2
    n = math.max(n, 1)
  end
  for i = first, n do args[i] = pick_value() end
  local t0 = clock()
  local ok, err = pcall(t.f, table.unpack(args, 1, n))
  local dt = clock() - t0
  stats.calls = stats.calls + 1
  if dt > stats.slowest then stats.slowest, stats.slowest_name = dt, t.name end
  if t.body then stats.body_calls = stats.body_calls + 1 end
  local bodies_now
  if depth == 0 then
    local problem, nb = check_world(t.name)
    if problem then stats.bad[#stats.bad + 1] = problem end
    stats.max_bodies = math.max(stats.max_bodies, nb or 0)
    bodies_now = nb
    if (nb or 0) > 300 then fresh_objects() end -- keep steps quick
  end
  if ok and type(err) == "table" then
    -- a hit (raycast, shapecast, Mesh:raycast) never carries NaN
    local d = rawget(err, "distance")
    if type(d) == "number" and d ~= d then stats.bad[#stats.bad + 1] = t.name .. " returned a NaN distance" end
  end
  if ok then
    stats.returns = stats.returns + 1
  else
    stats.errors = stats.errors + 1
    if type(err) ~= "string" then
      stats.bad[#stats.bad + 1] = t.name .. " raised a " .. type(err) .. " error"
    end
  end
  if verbose then
    local shown = {}
    for i = 1, n do shown[i] = type(args[i]) == "number" and string.format("%.17g", args[i]) or type(args[i]) end
    io.stderr:write(string.format("%s%s(%s) -> %s %s [%.3f s, %s bodies]\n", ("  "):rep(depth), t.name,
                                  table.concat(shown, ", "), tostring(ok), ok and "" or tostring(err):sub(1, 100), dt,
                                  tostring(bodies_now)))
  end
end

local start = clock()
local i = 0
while true do
  i = i + 1
  if seconds then
    if clock() - start > seconds then break end
  elseif i > calls then
    break
  end
  call_target(targets[random(#targets)])
  if i % 200 == 0 then
    collectgarbage()
    -- the live objects may have been destroyed or emptied by the calls
    fresh_objects()
  end
end
cache = {}
collectgarbage()
collectgarbage()
-- What the calls wrote (all of it inside the sandbox, removed by the parent).
local written = 0
do
  local p = io.popen("find " .. shell_quote(sandbox) .. " -type f")
  for _ in p:lines() do written = written + 1 end
  p:close()
end

for _, b in ipairs(stats.bad) do print("bad: " .. b) end
print(string.format("api fuzz: seed %d, %d calls (%d errors, %d returns) over %d functions " ..
                    "of %d classes, slowest %.3f s (%s), %d files written in the sandbox, " ..
                    "%d body calls, up to %d bodies", seed,
                    stats.calls, stats.errors, stats.returns, function_count, #classes, stats.slowest,
                    stats.slowest_name, written, stats.body_calls, stats.max_bodies))
os.exit(#stats.bad == 0 and 0 or 1, true)
