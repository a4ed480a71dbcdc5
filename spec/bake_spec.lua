-- Specs for baked terrain lighting (quarry.graphics.draw_world{bake = ...}):
-- the host draws a flat field with a roof held up by a wall in an offscreen
-- window (SDL's offscreen driver on Mesa's llvmpipe) and the specs compare
-- the brightness of ground under the roof with open ground in the pictures.
-- The script finds which pixels show which ground with screen_ray and
-- world:raycast, so the checks do not hang on hand-picked coordinates.

local host = require "support.host"
local exe, shell_quote, OFFSCREEN = host.exe, host.shell_quote, host.OFFSCREEN
local write_file, read_file, lines_of = host.write_file, host.read_file, host.lines_of

local dir -- fresh per test

local PRELUDE = [[
local quarry = require "quarry"
local g = quarry.graphics
LOG, DIR = arg[1], arg[2]
function log(...)
  local f = assert(io.open(LOG, "a"))
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = tostring(select(i, ...)) end
  f:write(table.concat(parts, " "), "\n")
  f:close()
end
-- Ground up to y = 28 (render chunks y = 0), a wall, and a roof 6 m above the
-- ground in the next chunk layer up (y = 34..36): removing the roof remeshes
-- only chunks of layer 1, so the ground below is relit by the bake's reach
-- rule, not by being remeshed.
ROOF_MIN, ROOF_MAX = {24, 34, 24}, {40, 36, 40}
function make_world()
  local w = quarry.world.new{}
  local T = w.terrain
  T:fill_region({0, 0, 0}, {64, 28, 64}, "grass")
  T:fill_region({40, 28, 24}, {42, 36, 40}, "rock")
  T:fill_region(ROOF_MIN, ROOF_MAX, "rock")
  return w
end
function scene_camera()
  g.set_clear_color(0.53, 0.72, 0.92)
  g.set_camera{position = {30, 32, 14}, target = {32, 28, 32}, fov = math.rad(60)}
end
-- Logs "under x,y x,y ..." and "open x,y ..." : pixels (every 12th) whose
-- ray meets the ground well inside the roof's shadow (the sun comes from
-- -x, +y, -z, so the shadow of a roof 6..8 m up is shifted 4 m towards +x
-- and 3 m towards +z), and pixels showing ground far in front of it.
function log_regions(world)
  local w, h = g.size()
  local under, open = {}, {}
  for y = 0, h - 1, 12 do
    for x = 0, w - 1, 12 do
      local o, d = g.screen_ray(x, y)
      local hit = world:raycast(o, d, 200)
      if hit and hit.position.y < 28.5 then
        local p = hit.position
        if p.x >= 29 and p.x <= 36 and p.z >= 29 and p.z <= 37 then under[#under + 1] = x .. "," .. y end
        if p.z < 20 then open[#open + 1] = x .. "," .. y end
      end
    end
  end
  log("under " .. table.concat(under, " "))
  log("open " .. table.concat(open, " "))
end
]]

local function run(name, body, options, env)
  local path = dir .. "/" .. name
  write_file(path, PRELUDE .. body)
  local logfile = dir .. "/log"
  local cmd = string.format("%s timeout 120 %s %s %s %s %s >%s 2>%s", env or "", shell_quote(exe), options,
                            shell_quote(path), shell_quote(logfile), shell_quote(dir),
                            shell_quote(dir .. "/stdout"), shell_quote(dir .. "/stderr"))
  local _, _, code = os.execute(cmd)
  return code, read_file(dir .. "/stderr") or "", lines_of(logfile)
end

local function run_offscreen(name, body, options)
  local code, err, log = run(name, body, options, OFFSCREEN)
  if code ~= 0 and err:find("offscreen not available", 1, true) then
    error("SDL has no offscreen video driver here (the project needs it for GL tests): " .. err)
    return nil
  end
  assert.are.equal(0, code, err)
  assert.is_falsy(err:find("error", 1, true), err)
  return log
end

local function read_ppm(path)
  local data = assert(read_file(path), "no image at " .. path)
  local w, h, start = data:match("^P6\n(%d+) (%d+)\n255\n()")
  assert.is_truthy(w, "not a binary PPM: " .. path)
  w, h = tonumber(w), tonumber(h)
  return {width = w, height = h, data = data, start = start}
end

-- Mean of r + g + b over the pixels listed as "x,y" words.
local function brightness(img, pixels)
  local sum, n = 0, 0
  for x, y in pixels:gmatch("(%d+),(%d+)") do
    local i = img.start + (tonumber(y) * img.width + tonumber(x)) * 3
    local r, g, b = img.data:byte(i, i + 2)
    sum, n = sum + r + g + b, n + 1
  end
  assert.is_true(n > 0, "no pixels listed")
  return sum / n
end

local function parse_stats(line)
  local t = {}
  for k, v in line:gmatch("([%w_]+)=([%d%.%-]+)") do t[k] = tonumber(v) end
  return t
end

describe("baked lighting", function()
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. shell_quote(dir)))
  end)

  after_each(function()
    os.execute("rm -rf " .. shell_quote(dir))
  end)

  describe("in an offscreen window", function()
    -- Frame 1 baked, 2 plain, 3 baked again (everything rebaked), 4 the roof
    -- is removed, 5 nothing changes, 6 a new world made without the roof, 7
    -- that world cleared.
    local SCRIPT = [[
local frame = 0
function quarry.load()
  world = make_world()
  scene_camera()
  log_regions(world)
end
function quarry.update()
  frame = frame + 1
  if frame == 4 then world.terrain:fill_region(ROOF_MIN, ROOF_MAX, "air") end
  if frame == 6 then
    world = make_world()
    world.terrain:fill_region(ROOF_MIN, ROOF_MAX, "air")
  end
  if frame == 7 then world.terrain:clear() end
end
function quarry.draw()
  assert(g.draw_world(world, {bake = frame ~= 2}))
  local s = g.stats()
  log(string.format("stats frame=%d remeshed=%d baked=%d baked_vertices=%d bake_ms=%.3f mesh_ms=%.3f " ..
                    "chunks=%d gpu_bytes=%d", frame, s.remeshed, s.baked, s.baked_vertices, s.bake_ms,
                    s.mesh_ms, s.chunks, s.gpu_bytes))
  if frame <= 6 then assert(g.screenshot(DIR .. "/frame" .. frame .. ".ppm")) end
end
]]
    local result

    local function scene()
      if result then return result end
      local log = run_offscreen("bake.lua", SCRIPT, "--frames 7")
      if not log then return nil end
      assert.are.equal(9, #log, table.concat(log, "\n"))
      result = {under = log[1]:match("^under (.*)"), open = log[2]:match("^open (.*)"), stats = {}, img = {}}
      assert.is_truthy(result.under and #result.under > 0, log[1])
      assert.is_truthy(result.open and #result.open > 0, log[2])
      for i = 1, 7 do
        result.stats[i] = parse_stats(log[2 + i])
        result.stats[i].line = log[2 + i]
        if i <= 6 then result.img[i] = read_ppm(dir .. "/frame" .. i .. ".ppm") end
      end
      return result
    end

    -- under / open brightness of frame i
    local function ratio(r, i)
      return brightness(r.img[i], r.under) / brightness(r.img[i], r.open)
    end

    it("darkens ground under the roof only when baking", function()
      local r = scene()
      if not r then return end
      local baked, plain = ratio(r, 1), ratio(r, 2)
      assert.is_true(baked < 0.7, string.format("baked: under/open brightness %.2f", baked))
      assert.is_true(plain > 0.9, string.format("plain: under/open brightness %.2f", plain))
      assert.is_true(r.stats[1].baked > 0 and r.stats[1].baked_vertices > 0, r.stats[1].line)
      assert.are.equal(0, r.stats[2].baked, r.stats[2].line)
    end)

    it("bakes the same picture again after being switched off and on", function()
      local r = scene()
      if not r then return end
      assert.are.equal(r.img[1].data, r.img[3].data)
      assert.are.equal(r.stats[1].baked, r.stats[3].baked)
    end)

    it("relights the ground below when the roof is removed", function()
      local r = scene()
      if not r then return end
      local after = ratio(r, 5)
      assert.is_true(after > 0.9, string.format("after the edit: under/open brightness %.2f", after))
      assert.are.equal(r.img[4].data, r.img[5].data)
      -- the roof's layer is remeshed; the ground's layer is only relit
      local s4 = r.stats[4]
      assert.is_true(s4.remeshed > 0 and s4.baked > s4.remeshed, s4.line)
      assert.are.equal(0, r.stats[5].remeshed + r.stats[5].baked, r.stats[5].line)
    end)

    it("relights after an edit exactly as a fresh bake of the edited world does", function()
      local r = scene()
      if not r then return end
      assert.is_true(r.stats[6].baked > r.stats[4].baked, r.stats[6].line)
      assert.are.equal(r.img[6].data, r.img[4].data)
    end)

    it("frees every chunk of a cleared world", function()
      local r = scene()
      if not r then return end
      local s = r.stats[7]
      assert.are.equal(0, s.chunks, s.line)
      -- gpu_bytes counts every world's cache: only the first world's is left
      assert.is_true(r.stats[6].gpu_bytes > r.stats[5].gpu_bytes, r.stats[6].line)
      assert.are.equal(r.stats[5].gpu_bytes, s.gpu_bytes, s.line)
    end)
  end)

  it("rejects bad bake options (headless)", function()
    local code, err, log = run("args.lua", [[
local function try(args)
  local f = assert(load("local g, w = ... return g.draw_world(w, " .. args .. ")"))
  local ok, e = pcall(f, g, W)
  log(ok and "no error" or e)
end
W = quarry.world.new{}
try("{bake = 1}")
try("{bake = {sun_rays = 0}}")
try("{bake = {ao_rays = 1.5}}")
try("{bake = {sun_cone = 2}}")
try("{bake = {ao_radius = 0 / 0}}")
try("{bake = {sparkle = true}}")
try("{bake = {sun_distance = 'far'}}")
log("ok", g.draw_world(W, {bake = true}), g.draw_world(W, {bake = {sun_rays = 4, ao_rays = 0}}))
local s = g.stats()
log("stats", s.baked, s.baked_vertices, s.bake_ms)
]], "--headless --frames 1")
    assert.are.equal(0, code, err)
    local expect = {
      "#2 to 'draw_world' %(bake must be a boolean or a table",
      "#2 to 'draw_world' %(bake: sun_rays must be in 1%.%.32, got 0%)",
      "#2 to 'draw_world' %(bake: ao_rays must be an integer, got 1%.5",
      "#2 to 'draw_world' %(bake: sun_cone must be in %[0, 0%.5%] radians, got 2%)",
      "#2 to 'draw_world' %(bake: ao_radius must be > 0, got %-?nan%)",
      "#2 to 'draw_world' %(bake: unknown option 'sparkle' %(valid: sun_rays, sun_cone, sun_distance, ao_rays, ao_radius%)%)",
      "#2 to 'draw_world' %(bake: sun_distance must be a number, got string%)",
      "^ok true true$",
      "^stats 0 0 0%.0$",
    }
    for i, pattern in ipairs(expect) do
      assert.matches(pattern, log[i] or "(missing)")
    end
    assert.are.equal(#expect, #log)
  end)
end)
