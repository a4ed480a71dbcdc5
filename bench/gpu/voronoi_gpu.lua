-- GPU against CPU Voronoi cells and body shattering, run by the host program
-- (a GL 4.3 context is needed for gpu = true):
--   SDL_VIDEODRIVER=offscreen build/quarry --max-memory 8G --frames 1 bench/gpu/voronoi_gpu.lua OUT
-- Writes one line per case: sites, CPU ms, GPU ms (median of repeats after a
-- warm-up), worst relative volume difference, cells with other face counts.
local quarry = require "quarry"
local out = assert(io.open(arg[1] or "voronoi_gpu.txt", "w"))
local now = quarry.timer.now
local s = 5
local function r()
  s = (s * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff
  return ((s >> 11) & 0xfffffffffff) / 0x100000000000
end
local function median(t) table.sort(t) return t[(#t + 1) // 2] end
local function timed(f, reps)
  f() -- warm up (shader compile, buffers)
  local times = {}
  for i = 1, reps do
    local t0 = now()
    f()
    times[i] = (now() - t0) * 1e3
  end
  return median(times)
end
for _, n in ipairs({50, 300, 1000, 10000}) do
  local sites = {}
  for i = 1, n do sites[i] = {r(), r(), r()} end
  local c, g
  local reps = n >= 10000 and 3 or 10
  local tc = timed(function() c = quarry.voronoi(sites, {0, 0, 0}, {1, 1, 1}) end, reps)
  local ok, err = pcall(quarry.voronoi, sites, {0, 0, 0}, {1, 1, 1}, {gpu = true})
  if not ok then
    out:write(("voronoi %d cpu_ms %.3f gpu_error %s\n"):format(n, tc, err))
  else
    local tg = timed(function() g = quarry.voronoi(sites, {0, 0, 0}, {1, 1, 1}, {gpu = true}) end, reps)
    local worst, faces = 0, 0
    for i = 1, n do
      worst = math.max(worst, math.abs(c[i].volume - g[i].volume) / c[i].volume)
      if #c[i].faces ~= #g[i].faces then faces = faces + 1 end
    end
    out:write(("voronoi %d cpu_ms %.3f gpu_ms %.3f worst %.3g faces_differ %d\n"):format(n, tc, tg, worst, faces))
  end
  out:flush()
end
for _, gpu in ipairs({false, true}) do
  local times = {}
  for rep = 1, 6 do
    local w = quarry.world.new{gravity = {0, 0, 0}}
    local b = w:spawn{shape = "sphere", radius = 1}
    local t0 = now()
    local parts, err = b:shatter{pieces = 32, seed = rep, at = {0.3, 0.2, 0.1}, gpu = gpu}
    times[rep] = (now() - t0) * 1e3
    w:destroy()
    if not parts then out:write("shatter error ", tostring(err), "\n") break end
  end
  table.remove(times, 1)
  out:write(("shatter32 gpu=%s ms %.3f\n"):format(tostring(gpu), median(times)))
end
out:close()
