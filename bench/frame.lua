-- Frame budget (issue 11): a scripted game-like scene, timed per frame.
--
--   lua5.4 bench/frame.lua [frames] [out_dir] [threads]  (finds build/quarry.so)
--   build/quarry --headless --frames 1 bench/frame.lua [frames] [out_dir] [threads]
--   make -C bench BUILD=$PWD/build frame               (`make bench` runs it last)
--
-- The scene: hills 256x64x256 voxels (1 m), 500 bodies (boxes, balls and
-- capsules spread over the hills, and four 5x5 rafts of touching boxes),
-- auto_detach on. Every frame: 100 rays (50 straight down onto the hills and
-- the bodies, 50 level ones 1.5 m over the ground, 64 m long) and one terrain
-- edit (a carve under a body, which drops into the hole, or a fill on open
-- ground, in turn). Every second: one body shatters into 12 pieces (the
-- pieces of the shatter three seconds before are removed, so the count
-- stays near 500). Every three seconds: a 2x8x2 pillar is filled on the
-- ground and, half a second later, cut at its base; auto_detach turns it
-- into a body that falls. Then world:step(1/60).
--
-- Simulation time of a frame = world:step + the edits + the rays + the
-- shatter, as the engine's frame profile counts it (world:stats().ms_engine:
-- clock_gettime around each of those calls; world.h "frame profile"). The
-- script's own time (building ray tables, picking bodies) is ms_lua. CPU
-- time per frame is os.clock() over the frame (every thread of the process).
-- The whole run's wall time is also taken independently (date, or
-- quarry.timer.now under the host) to check the profile's sum.
--
-- Runs the scene twice, world.new{threads = 0} (everything on this thread)
-- and threads = 1 (one worker besides it), after WARMUP frames that are not
-- counted (the first fall of 500 bodies); prints median, 99th percentile and
-- max per subsystem; writes per-frame rows to <out_dir>/frame.tsv. Both runs
-- must end with the same world:hash() (the timers change nothing simulated).

local FRAMES = tonumber(arg and arg[1]) or 600
local OUT = arg and arg[2] ~= "" and arg[2] or nil
local CONFIGS = arg and arg[3] and {tonumber(arg[3])} or {0, 1} -- worker threads to run with
local WARMUP = 60
local TARGET_MEDIAN, TARGET_P99 = 8, 16

if not package.loaded.quarry then -- plain lua5.4: $QUARRY_BUILD/quarry.so, else build/ beside bench/
  local dir = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
  package.cpath = (os.getenv("QUARRY_BUILD") or dir .. "/../build") .. "/?.so;" .. package.cpath
end
local quarry = require "quarry"

local function wall_ms()
  if quarry.timer then return quarry.timer.now() * 1e3 end
  local p = io.popen("date +%s%N")
  local ns = tonumber(p:read("l"))
  p:close()
  return ns / 1e6
end

-- The fields of world:stats() summed into the breakdown, in print order.
local STAGES = {"ms_engine", "ms_step", "ms_broadphase", "ms_narrowphase", "ms_solver", "ms_fracture",
                "ms_detach", "ms_edit", "ms_raycast", "ms_lua"}

local function run(threads, frames)
  math.randomseed(42)
  local rnd = math.random
  local world = quarry.world.new{threads = threads, auto_detach = true, seed = 7}
  local T = world.terrain
  T:generate{kind = "hills", size = {256, 64, 256}, seed = 3}

  local function ground(x, z)
    local hit = world:raycast({x, 70, z}, {0, -1, 0}, 80, {bodies = false})
    return hit and hit.position.y or 0
  end

  -- 400 bodies spread on a 20x20 grid, 100 in four rafts of 5x5 boxes.
  local bodies = {}
  local shapes = {
    {shape = "box", size = 1},
    {shape = "sphere", radius = 0.5, material = "metal"},
    {shape = "capsule", radius = 0.3, height = 1.4, material = "wood"},
    {shape = "box", size = {2, 0.5, 1}, material = "wood"},
  }
  for i = 0, 19 do
    for k = 0, 19 do
      local x, z = 12 + i * 12 + rnd() * 4, 12 + k * 12 + rnd() * 4
      local def = {}
      for key, v in pairs(shapes[(i + k) % 4 + 1]) do def[key] = v end
      def.position = {x, ground(x, z) + 1.5, z}
      def.rotation = quarry.quat.from_euler(rnd(), rnd(), rnd())
      bodies[#bodies + 1] = world:spawn(def)
    end
  end
  for _, c in ipairs{{64, 64}, {192, 64}, {64, 192}, {192, 192}} do
    for i = 0, 4 do
      for k = 0, 4 do
        local x, z = c[1] + i * 1.05, c[2] + k * 1.05
        bodies[#bodies + 1] = world:spawn{shape = "box", size = 1, position = {x, ground(x, z) + 3, z}}
      end
    end
  end
  assert(#bodies == 500)

  local detached, shards = 0, {}
  world:on("detach", function(list) detached = detached + #list end)

  local rows = {}
  local next_body, pillar = 1, nil
  local origins, dirs = {}, {}
  for frame = 1, WARMUP + frames do
    local cpu0 = os.clock()
    -- 100 rays.
    local hits = 0
    for r = 1, 50 do
      local x, z = 2 + rnd() * 252, 2 + rnd() * 252
      local hit = world:raycast({x, 70, z}, {0, -1, 0}, 80)
      if hit then hits = hits + 1 end
      origins[r] = {x, hit and hit.position.y or 20, z}
    end
    for r = 1, 50 do
      local o = origins[r]
      local a = rnd() * 2 * math.pi
      dirs[r] = {math.cos(a), 0, math.sin(a)}
      if world:raycast({o[1], o[2] + 1.5, o[3]}, dirs[r], 64) then hits = hits + 1 end
    end
    -- One edit: a carve under a body (it drops into the hole), or a fill on
    -- open ground, in turn.
    if frame % 2 == 0 then
      local b = bodies[rnd(#bodies)]
      if b:valid() then
        local p = b.position
        T:carve_ball({p.x, p.y - 1, p.z}, 1.5)
      end
    else
      T:fill_ball(origins[1], 1.5, "rock")
    end
    -- One shatter a second; pieces from three seconds ago go away.
    if frame % 60 == 30 then
      while not bodies[next_body]:valid() do next_body = next_body % #bodies + 1 end
      local b = bodies[next_body]
      next_body = next_body % #bodies + 1
      local pieces = assert(b:shatter{pieces = 12, seed = frame})
      shards[#shards + 1] = pieces
      if #shards > 3 then
        for _, p in ipairs(table.remove(shards, 1)) do
          if p:valid() then p:destroy() end
        end
      end
    end
    -- A pillar every three seconds, cut at its base half a second later.
    if frame % 180 == 90 then
      local x, y, z = origins[2][1], origins[2][2], origins[2][3]
      T:fill_block({x, y + 3, z}, {2, 8, 2}, "rock")
      pillar = {x, y, z}
    elseif frame % 180 == 120 and pillar then
      T:carve_ball({pillar[1], pillar[2] + 1, pillar[3]}, 2.2)
      pillar = nil
    end
    world:step(1 / 60)
    local cpu = (os.clock() - cpu0) * 1e3
    if frame > WARMUP then
      local s = world:stats()
      local row = {frame = frame, cpu = cpu, bodies = s.bodies, awake = s.awake, hits = hits}
      for _, k in ipairs(STAGES) do row[k] = s[k] end
      rows[#rows + 1] = row
    end
  end
  return rows, world:hash(), detached
end

local function quantile(sorted, q)
  local i = math.max(1, math.min(#sorted, math.ceil(q * #sorted)))
  return sorted[i]
end

local function summary(rows, key)
  local v = {}
  for i, r in ipairs(rows) do v[i] = r[key] end
  table.sort(v)
  local sum = 0
  for _, x in ipairs(v) do sum = sum + x end
  return quantile(v, 0.5), quantile(v, 0.99), v[#v], sum / #v
end

local function uptime()
  local f = io.open("/proc/loadavg")
  local s = f and f:read("l") or "?"
  if f then f:close() end
  return s:match("^(%S+ %S+ %S+)") or s
end

print(string.format("frame budget: hills 256x64x256, 500 bodies, 100 rays + 1 edit/frame, 1 shatter/s, " ..
                    "1 detach/3 s; %d frames after %d warm-up; load average %s", FRAMES, WARMUP, uptime()))
local results, hashes = {}, {}
for _, threads in ipairs(CONFIGS) do
  local w0, c0 = wall_ms(), os.clock()
  local rows, hash, detached = run(threads, FRAMES)
  local wall, cpu = wall_ms() - w0, (os.clock() - c0) * 1e3
  results[threads], hashes[threads] = rows, hash
  local profiled = 0
  for _, r in ipairs(rows) do profiled = profiled + r.ms_engine + r.ms_lua end
  print(string.format("\nthreads = %d: hash %s, %d pillars detached, bodies %d..%d, awake median %d; " ..
                      "run %.1f s wall, %.1f s CPU (world build included); load %s",
                      threads, hash, detached, rows[1].bodies, rows[#rows].bodies,
                      (summary(rows, "awake")), wall / 1e3, cpu / 1e3, uptime()))
  print(string.format("  profile sum over the counted frames %.1f s (engine + lua)", profiled / 1e3))
  print(string.format("  %-16s %9s %9s %9s %9s", "ms per frame", "median", "p99", "max", "mean"))
  for _, k in ipairs(STAGES) do
    print(string.format("  %-16s %9.3f %9.3f %9.3f %9.3f", k == "ms_engine" and "simulation" or k:sub(4),
                        summary(rows, k)))
  end
  print(string.format("  %-16s %9.3f %9.3f %9.3f %9.3f", "cpu (os.clock)", summary(rows, "cpu")))
  -- The slowest frames and what they held (shatter: frame % 60 == 30;
  -- pillar filled: % 180 == 90, cut: % 180 == 120).
  local slow = {}
  for i, r in ipairs(rows) do slow[i] = r end
  table.sort(slow, function(a, b) return a.ms_engine > b.ms_engine end)
  for i = 1, math.min(6, #slow) do
    local r = slow[i]
    local parts = {}
    for k = 2, #STAGES do
      if r[STAGES[k]] >= 0.5 then parts[#parts + 1] = string.format("%s %.1f", STAGES[k]:sub(4), r[STAGES[k]]) end
    end
    local what = r.frame % 60 == 30 and " shatter" or ""
    what = what .. (r.frame % 180 == 90 and " pillar" or r.frame % 180 == 120 and " cut" or "")
    print(string.format("  slow frame %d%s: %.1f ms (cpu %.1f): %s", r.frame, what, r.ms_engine, r.cpu,
                        table.concat(parts, ", ")))
  end
  local med, p99 = summary(rows, "ms_engine")
  print(string.format("  target median < %d ms: %s; p99 < %d ms: %s", TARGET_MEDIAN,
                      med < TARGET_MEDIAN and "met" or "NOT met", TARGET_P99, p99 < TARGET_P99 and "met" or "NOT met"))
end
if hashes[0] and hashes[1] then
  print(string.format("\nsame hash on 0 and 1 worker threads: %s", tostring(hashes[0] == hashes[1])))
end

if OUT then
  os.execute("mkdir -p '" .. OUT .. "'")
  local f = assert(io.open(OUT .. "/frame.tsv", "w"))
  f:write("threads\tframe\tbodies\tawake\tcpu")
  for _, k in ipairs(STAGES) do f:write("\t", k) end
  f:write("\n")
  for _, threads in ipairs(CONFIGS) do
    for _, r in ipairs(results[threads]) do
      f:write(string.format("%d\t%d\t%d\t%d\t%.4f", threads, r.frame, r.bodies, r.awake, r.cpu))
      for _, k in ipairs(STAGES) do f:write(string.format("\t%.4f", r[k])) end
      f:write("\n")
    end
  end
  f:close()
  print("per-frame rows: " .. OUT .. "/frame.tsv")
end
