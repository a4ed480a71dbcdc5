-- Lua-level API fuzzer: calls every function of the quarry module and every
-- method and metamethod of its classes (found by walking the module and the
-- registry's "quarry.*" metatables, so new classes are fuzzed as they land)
-- with random arguments: wrong types, NaN, inf, huge and negative numbers,
-- integers at the limits, odd strings, tables with wrong fields, userdata of
-- the wrong class, destroyed worlds and their terrain, and functions that
-- call back into the API. Every call must return or raise a Lua error with
-- a string message; anything else (a crash, a sanitizer report) ends the
-- process, which the caller sees.
--
--   lua5.4 fuzz/api.lua [--seed N] [--calls N] [--seconds S] [--verbose]
--
-- quarry.so is found through QUARRY_BUILD (default build). Deterministic for
-- a seed and a call count. Prints one summary line:
--   api fuzz: seed S, N calls (E errors, R returns) over F functions of C classes,
--   slowest 0.012 s (World:raycast_batch), W files written in the sandbox
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
root=$(mktemp -d "${TMPDIR:-/tmp}/quarry-apifuzz.XXXXXX") || exit 70
trap 'rm -rf "$root"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
mkdir -p "$root/run/a/b" && cd "$root/run/a/b" || exit 70
QUARRY_FUZZ_SANDBOX=$root QUARRY_BUILD=$build "$lua" "$script" "$@"
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
                 "1", "nan", "inf", "../../etc/passwd"}
local keys = {"x", "y", "z", "w", "kind", "size", "seed", "lod", "merge", "voxel_size",
              "gravity", "step", "substeps", "threads", "physics_cache", "water_level",
              "max_hulls", "max_vertices", "concavity", "connect_dist", "anchor", "density",
              "friction", "restitution", "color", "brittle", "strength", "liquid", "name",
              "normals", "materials", "indices", "vertices", "positions", "max_distance",
              "origins", "directions", "bodies", "contacts", "bake", "trace", "mask", "axis", "resolution",
              "min", "max", "rotation", "radius", "count", "leaf_size", "occupancy"}

local cache = {}   -- live objects made at the start and refreshed now and then
local pick_value   -- forward

local function fresh_objects()
  local w = quarry.world.new{threads = 0}
  w.terrain:fill_ball({0, 0, 0}, 4, "rock")
  w.terrain:fill_block({6, 0, 0}, {2, 3, 2}, "brick")
  local dead = quarry.world.new{threads = 0}
  local dead_terrain = dead.terrain
  dead:destroy()
  local mesh = w.terrain:mesh({-6, -6, -6}, {6, 6, 6})
  local empty_mesh = quarry.mesh.new{vertices = {}, indices = {}}
  local ok_gs, gs = pcall(quarry.gridsort.new, mesh)
  cache = {
    world = w, terrain = w.terrain, dead = dead, dead_terrain = dead_terrain,
    mesh = mesh, empty_mesh = empty_mesh, gridsort = ok_gs and gs or nil,
    vec = quarry.vec3(1, 2, 3), quat = quarry.quat(1, 0, 0, 0),
    file = io.stdout, co = coroutine.create(function() end),
  }
end
fresh_objects()

-- An instance of a class for `self`, or something that is not one.
local function instance_of(cname)
  local wanted = {
    ["quarry.World"] = "world", ["quarry.Terrain"] = "terrain", ["quarry.Mesh"] = "mesh",
    ["quarry.Vec3"] = "vec", ["quarry.Quat"] = "quat", ["quarry.GridSort"] = "gridsort",
  }
  local key = wanted[cname]
  local r = random()
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
                   "gridsort", "vec", "quat", "file", "co"}
    return cache[names[random(#names)]]
  end
end

local stats = {calls = 0, errors = 0, returns = 0, slowest = 0, slowest_name = "", bad = {}}
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
    io.stderr:write(string.format("%s(%s) -> %s %s\n", t.name, table.concat(shown, ", "),
                                  tostring(ok), ok and "" or tostring(err):sub(1, 100)))
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
                    "of %d classes, slowest %.3f s (%s), %d files written in the sandbox", seed,
                    stats.calls, stats.errors, stats.returns, #targets, #classes, stats.slowest,
                    stats.slowest_name, written))
os.exit(#stats.bad == 0 and 0 or 1, true)
