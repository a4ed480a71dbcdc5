-- Soak: a long run of random actions on a world, checking that memory stays
-- flat, that nothing becomes NaN, and that the run is deterministic.
--
--   lua5.4 scripts/soak.lua [--seconds S] [--seed N] [--quiet]
--   (make soak: 600 s; spec/soak_spec.lua: a short run in CI)
--
-- Two worlds, A and B, get the same actions in lockstep; their hashes and
-- query answers must agree at every checkpoint (so two runs give the same
-- hash). A alone is saved and loaded back now and then (it continues as the
-- loaded world), which proves save/load keeps the state exactly.
--
-- Actions are entries of ACTIONS: {name, weight, run = function(s, w, r)}
-- where w is the world and r an answer recorder (r(value) records a value
-- that must match between A and B). To add rigid-body actions (spawn,
-- shatter, detach) when bodies land, append entries here; nothing else
-- changes.
--
-- Ends with one line:
--   soak: OK|FAIL, T ticks in S s, <counts per action>, rss MB first/peak/last, hash H
-- and exit status 0 when every check held.

local build = os.getenv("QUARRY_BUILD") or "build"
package.cpath = build .. "/?.so;" .. package.cpath
local quarry = require "quarry"

local seconds, seed, quiet = 600, 1, false
do
  local i = 1
  while i <= #arg do
    local a = arg[i]
    if a == "--seconds" then seconds = assert(tonumber(arg[i + 1])); i = i + 1
    elseif a == "--seed" then seed = assert(tonumber(arg[i + 1])); i = i + 1
    elseif a == "--quiet" then quiet = true
    else error("soak.lua: unknown argument " .. a) end
    i = i + 1
  end
end

-- A PRNG of our own (xorshift64*), so the action stream does not depend on
-- math.random's implementation or on anything else drawing from it.
local state = seed * 0x9E3779B97F4A7C15 | 1
local function rand() -- [0, 1)
  state = state ~ (state >> 12)
  state = state ~ (state << 25)
  state = state ~ (state >> 27)
  return ((state * 0x2545F4914F6CDD1D) >> 11) / 2.0 ^ 53
end
local function uniform(a, b) return a + (b - a) * rand() end
local function pick(list) return list[1 + math.floor(rand() * #list)] end

local EXTENT = 56 -- actions stay within +-EXTENT horizontally, so memory can settle
local MATERIALS = {"rock", "dirt", "sand", "brick", "ice", "water", "grass"}

local failures = {}
local function fail(msg)
  failures[#failures + 1] = msg
  if not quiet then io.stderr:write("soak: " .. msg .. "\n") end
end

local function finite(x) return x == x and x > -math.huge and x < math.huge end

local function point()
  return {uniform(-EXTENT, EXTENT), uniform(-6, 30), uniform(-EXTENT, EXTENT)}
end

local function direction()
  local d = {uniform(-1, 1), uniform(-1, 0.3), uniform(-1, 1)}
  if math.abs(d[1]) + math.abs(d[2]) + math.abs(d[3]) < 1e-3 then d = {0, -1, 0} end
  return d
end

local counts = {}

-- The random inputs of an action are drawn once (by `plan`) and applied to
-- both worlds, so A and B see exactly the same calls.
local ACTIONS = {
  {name = "fill", weight = 4, plan = function()
     local c, rad, m = point(), uniform(1, 5), pick(MATERIALS)
     return function(w) w.terrain:fill_ball(c, rad, m) end
   end},
  {name = "carve", weight = 4, plan = function()
     local c, rad = point(), uniform(1, 6)
     return function(w) w.terrain:carve_ball(c, rad) end
   end},
  {name = "block", weight = 2, plan = function()
     local c, size, m = point(), {uniform(1, 8), uniform(1, 8), uniform(1, 8)}, pick(MATERIALS)
     local rot = quarry.quat.from_euler(uniform(0, 3), uniform(0, 3), uniform(0, 3))
     return function(w) w.terrain:fill_block(c, size, m, rot) end
   end},
  {name = "paint", weight = 1, plan = function()
     local c, rad, m = point(), uniform(1, 6), pick(MATERIALS)
     return function(w) w.terrain:paint_ball(c, rad, m) end
   end},
  {name = "smooth", weight = 1, plan = function()
     local c, rad, s = point(), uniform(1, 5), uniform(0, 1)
     return function(w) w.terrain:smooth_ball(c, rad, s) end
   end},
  {name = "raycast", weight = 4, plan = function()
     local o, d = point(), direction()
     o[2] = o[2] + 30
     return function(w, r)
       local hit = w:raycast(o, d, 200)
       if hit then
         if not (finite(hit.distance) and finite(hit.position.x) and finite(hit.normal.y)) then
           fail("raycast returned a non-finite hit")
         end
         r(hit.distance); r(hit.material)
       else
         r(false)
       end
     end
   end},
  {name = "raycast_batch", weight = 1, plan = function()
     local os_, ds = {}, {}
     for i = 1, 64 do os_[i] = point(); os_[i][2] = 40; ds[i] = direction() end
     return function(w, r)
       local d = w:raycast_batch(os_, ds, 300)
       for i = 1, #d do
         if d[i] and not finite(d[i]) then fail("raycast_batch: non-finite distance") end
         r(d[i])
       end
     end
   end},
  {name = "overlap", weight = 1, plan = function()
     local c, rad = point(), uniform(0.5, 6)
     return function(w, r)
       local _, terrain, water = w:overlap_sphere(c, rad)
       r(terrain); r(water)
     end
   end},
  {name = "mesh", weight = 1, plan = function()
     local c = point()
     local lo = {math.floor(c[1]) - 10, math.floor(c[2]) - 10, math.floor(c[3]) - 10}
     local hi = {lo[1] + 20, lo[2] + 20, lo[3] + 20}
     return function(w, r)
       local m = w.terrain:mesh(lo, hi)
       local v = m:vertices()
       for i = 1, #v do
         local p = v[i]
         if not (finite(p.x) and finite(p.y) and finite(p.z)) then
           fail("terrain:mesh returned a non-finite vertex")
           break
         end
       end
       r(m:vertex_count()); r(m:triangle_count())
     end
   end},
  {name = "step", weight = 3, plan = function()
     local dt = pick{1 / 60, 1 / 30, 0.1}
     return function(w) w:step(dt) end
   end},
  -- Bodies (spawn, shatter, detach) go here when they land.
}

local total_weight = 0
for _, a in ipairs(ACTIONS) do total_weight = total_weight + a.weight; counts[a.name] = 0 end
local function choose()
  local x = rand() * total_weight
  for _, a in ipairs(ACTIONS) do
    x = x - a.weight
    if x < 0 then return a end
  end
  return ACTIONS[#ACTIONS]
end

local function rss_mb()
  local f = io.open("/proc/self/statm")
  if not f then return 0 end
  local pages = f:read("n") and f:read("n")
  f:close()
  return (pages or 0) * 4096 / 2 ^ 20
end

local function new_world()
  local w = quarry.world.new{seed = seed}
  w.terrain:generate{kind = "hills", size = {2 * EXTENT, 48, 2 * EXTENT}, seed = seed}
  return w
end

local tmp = os.tmpname()
local save_path = tmp .. ".qw"
local A, B = new_world(), new_world()
if A:hash() ~= B:hash() then fail("two worlds made alike have different hashes") end

local clock = os.clock
local t0 = os.time()
local start_clock = clock()
local ticks, saves = 0, 0
local rss = {}          -- sampled every checkpoint: process RSS in MB
local held = {}         -- and what the engine says the worlds hold plus the Lua heap, in MB
local CHECK_EVERY = 50  -- ticks between hash comparisons
local SAVE_EVERY = 400  -- ticks between save/load of A

while #failures == 0 do
  ticks = ticks + 1
  local action = choose()
  local apply = action.plan()
  local answers_a, answers_b = {}, {}
  local ok, err = pcall(apply, A, function(v) answers_a[#answers_a + 1] = v end)
  if not ok then fail(action.name .. " on A raised: " .. tostring(err)) break end
  ok, err = pcall(apply, B, function(v) answers_b[#answers_b + 1] = v end)
  if not ok then fail(action.name .. " on B raised: " .. tostring(err)) break end
  counts[action.name] = counts[action.name] + 1
  for i = 1, math.max(#answers_a, #answers_b) do
    if answers_a[i] ~= answers_b[i] then
      fail(string.format("tick %d: %s answered %s on A and %s on B", ticks, action.name,
                         tostring(answers_a[i]), tostring(answers_b[i])))
      break
    end
  end
  if ticks % CHECK_EVERY == 0 then
    if A:hash() ~= B:hash() then fail("tick " .. ticks .. ": the twin worlds' hashes differ") end
    collectgarbage()
    rss[#rss + 1] = rss_mb()
    held[#held + 1] = (A:stats().memory + B:stats().memory) / 2 ^ 20 + collectgarbage("count") / 1024
    if os.time() - t0 >= seconds then break end
  end
  if ticks % SAVE_EVERY == 0 then
    local h = A:hash()
    local okk, e = A:save(save_path)
    if not okk then fail("save: " .. tostring(e)) break end
    local loaded, le = quarry.world.load(save_path)
    if not loaded then fail("load: " .. tostring(le)) break end
    if loaded:hash() ~= h then fail("tick " .. ticks .. ": the loaded world's hash differs") end
    A:destroy()
    A = loaded
    saves = saves + 1
  end
end
os.remove(save_path)
os.remove(tmp)

-- Memory is flat: after the first quarter (warm-up: the worlds fill their
-- region, caches fill), the peak of the last quarter is not above the peak
-- of the second quarter by more than 10 % + 24 MB. Under AddressSanitizer
-- (QUARRY_SANITIZE=1) the RSS holds its quarantine of freed blocks, so
-- there the engine's own accounting is checked instead.
local function flat(series, what)
  if #series < 8 then return end
  local q = #series // 4
  local peak2, peak4 = 0, 0
  for i = q + 1, 2 * q do peak2 = math.max(peak2, series[i]) end
  for i = 3 * q + 1, #series do peak4 = math.max(peak4, series[i]) end
  if peak4 > peak2 * 1.1 + 24 then
    fail(string.format("memory grows: %s peak %.1f MB in the second quarter, %.1f MB in the last",
                       what, peak2, peak4))
  end
end
flat(held, "engine + Lua heap")
if os.getenv("QUARRY_SANITIZE") ~= "1" then flat(rss, "rss") end
local first, peak, last = rss[1] or 0, 0, rss[#rss] or 0
for _, v in ipairs(rss) do peak = math.max(peak, v) end
local stats = A:stats()
local parts = {}
for _, a in ipairs(ACTIONS) do parts[#parts + 1] = a.name .. " " .. counts[a.name] end
print(string.format("soak: %s, %d ticks in %d s (%.1f s cpu), %s, save/load %d, rss MB %.1f/%.1f/%.1f, " ..
                    "world memory %.1f MB, lua heap %.1f MB, hash %s",
                    #failures == 0 and "OK" or "FAIL", ticks, os.time() - t0, clock() - start_clock,
                    table.concat(parts, ", "), saves, first, peak, last, stats.memory / 2 ^ 20,
                    collectgarbage("count") / 1024, A:hash()))
for _, f in ipairs(failures) do print("soak failure: " .. f) end
A:destroy()
B:destroy()
os.exit(#failures == 0 and 0 or 1, true)
