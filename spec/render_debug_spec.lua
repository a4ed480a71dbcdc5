-- Specs for the physics debug views of the renderer (render_debug.c):
-- quarry.graphics.debug{broadphase = true} and debug{kdtree = true} draw the
-- terrain physics (bit broadphase masks, kD trees of the chunk meshes) near
-- the camera target over the scene. The host draws in an offscreen window
-- and the specs compare its frames with the plain picture.

local host = require "support.host"
local exe, shell_quote, OFFSCREEN = host.exe, host.shell_quote, host.OFFSCREEN
local write_file, read_file, lines_of = host.write_file, host.read_file, host.lines_of

local dir

local SCRIPT = [==[
local quarry = require "quarry"
local g = quarry.graphics
local DIR = arg[1]
-- hills up to y = 32 with a lake at y = 13, as in render_spec.lua
local views = {
  ground = {position = {32, 30, -10}, target = {32, 12, 32}, fov = math.rad(60)},
  -- looking up at the sky: the target is 40 voxels over the highest terrain
  sky = {position = {32, 60, -10}, target = {32, 72, 32}, fov = math.rad(60)},
  -- over the hills towards a point 56 voxels past their far edge (z = 64):
  -- terrain fills the view, none is near the target
  beyond = {position = {32, 40, -20}, target = {32, 20, 120}, fov = math.rad(60)},
}
local frames = {
  {"ground", {}}, {"ground", {broadphase = true}}, {"ground", {kdtree = true}}, {"ground", {}},
  {"sky", {}}, {"sky", {broadphase = true}}, {"sky", {kdtree = true}},
  {"beyond", {}}, {"beyond", {broadphase = true}}, {"beyond", {kdtree = true}},
}
local frame = 0
function quarry.load()
  world = quarry.world.new{}
  world.terrain:generate{kind = "hills", size = {64, 32, 64}, seed = 1, water_level = 13}
  g.set_clear_color(0.53, 0.72, 0.92)
end
function quarry.update() frame = frame + 1 end
function quarry.draw()
  local f = frames[frame]
  g.set_camera(views[f[1]])
  local d = g.debug{broadphase = f[2].broadphase == true, kdtree = f[2].kdtree == true}
  assert(d.broadphase == (f[2].broadphase == true) and d.kdtree == (f[2].kdtree == true))
  assert(g.draw_world(world))
  assert(g.screenshot(DIR .. "/frame" .. frame .. ".ppm"))
end
]==]

local function read_ppm(path)
  local data = assert(read_file(path), "no image at " .. path)
  local w, h, start = data:match("^P6\n(%d+) (%d+)\n255\n()")
  assert.is_truthy(w, "not a binary PPM: " .. path)
  w, h = tonumber(w), tonumber(h)
  assert.are.equal(w * h * 3, #data - start + 1)
  local img = {width = w, height = h, data = data, start = start}
  function img.pixel(x, y)
    local i = start + (y * w + x) * 3
    return data:byte(i, i + 2)
  end
  return img
end

-- Calls fn(x, y) for every pixel that differs between a and b.
local function each_difference(a, b, fn)
  assert.are.equal(a.width, b.width)
  assert.are.equal(a.height, b.height)
  local row = a.width * 3
  for y = 0, a.height - 1 do
    local i, j = a.start + y * row, b.start + y * row
    if a.data:sub(i, i + row - 1) ~= b.data:sub(j, j + row - 1) then
      for x = 0, a.width - 1 do
        local p, q = i + x * 3, j + x * 3
        if a.data:sub(p, p + 2) ~= b.data:sub(q, q + 2) then fn(x, y) end
      end
    end
  end
end

local function count_differences(a, b)
  local n = 0
  each_difference(a, b, function() n = n + 1 end)
  return n
end

local SKY = {135, 184, 235} -- the clear colour 0.53, 0.72, 0.92 in bytes

local function is_sky(img, x, y)
  local r, g, b = img.pixel(x, y)
  return math.abs(r - SKY[1]) + math.abs(g - SKY[2]) + math.abs(b - SKY[3]) <= 6
end

-- Whether some pixel within `reach` pixels of (x, y) in the plain image
-- shows terrain (anything but the clear colour).
local function terrain_near(img, x, y, reach)
  if not is_sky(img, x, y) then return true end
  for v = math.max(0, y - reach), math.min(img.height - 1, y + reach) do
    for u = math.max(0, x - reach), math.min(img.width - 1, x + reach) do
      if not is_sky(img, u, v) then return true end
    end
  end
  return false
end

-- Pixels of img whose colour passes test.
local function count_colour(img, test)
  local n = 0
  for y = 0, img.height - 1 do
    for x = 0, img.width - 1 do
      if test(img.pixel(x, y)) then n = n + 1 end
    end
  end
  return n
end

local function orange(r, g, b) return r > 200 and g > 90 and g < 180 and b < 90 end
local function cyan(r, g, b) return r < 90 and g > 170 and b > 200 end
local function bright_green(r, g, b) return r < 120 and g > 220 and b < 140 end
local function magenta(r, g, b) return r > 200 and g < 120 and b > 180 end

describe("physics debug views", function()
  local images

  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. shell_quote(dir)))
    local path = dir .. "/views.lua"
    write_file(path, SCRIPT)
    local err = dir .. "/stderr"
    local cmd = string.format("%s timeout 120 %s --frames 10 %s %s >/dev/null 2>%s", OFFSCREEN, shell_quote(exe),
                              shell_quote(path), shell_quote(dir), shell_quote(err))
    local _, _, code = os.execute(cmd)
    local msg = read_file(err) or ""
    if code ~= 0 and msg:find("offscreen not available", 1, true) then
      error("SDL has no offscreen video driver here (the project needs it for GL tests): " .. msg)
    end
    assert.are.equal(0, code, msg)
    images = {}
    for i = 1, 10 do images[i] = read_ppm(dir .. "/frame" .. i .. ".ppm") end
  end)

  teardown(function()
    os.execute("rm -rf " .. shell_quote(dir))
  end)

  it("the plain picture repeats, so any change below is the debug view's", function()
    assert.are.equal(0, count_differences(images[1], images[4]))
  end)

  for i, what in pairs{[2] = "broadphase", [3] = "kdtree"} do
    it(what .. " changes pixels, only where terrain is near", function()
      local plain, shown = images[1], images[i]
      local changed, stray = 0, 0
      each_difference(plain, shown, function(x, y)
        changed = changed + 1
        -- cubes reach a voxel above the surface: about 15 pixels at the
        -- far side of the region (45 voxels away, 720 rows for 60 degrees)
        if not terrain_near(plain, x, y, 20) then stray = stray + 1 end
      end)
      local npx = plain.width * plain.height
      assert.is_true(changed > npx / 200, what .. " changed only " .. changed .. " pixels")
      assert.are.equal(0, stray, what .. " changed pixels away from the terrain")
    end)
  end

  it("draws solid bits orange and water bits cyan, trees' leaves green and split planes magenta", function()
    local plain, bp, kd = images[1], images[2], images[3]
    -- colours the plain scene (sand, grass, water, sky) does not have
    for _, c in ipairs{{orange, "orange"}, {cyan, "cyan"}, {bright_green, "green"}, {magenta, "magenta"}} do
      assert.are.equal(0, count_colour(plain, c[1]), "the plain scene has " .. c[2] .. " pixels")
    end
    local o, c = count_colour(bp, orange), count_colour(bp, cyan)
    -- the lake is inside the reach of the view: both masks show
    assert.is_true(o > 1000, "orange (solid bits): " .. o)
    assert.is_true(c > 100, "cyan (water bits): " .. c)
    assert.are.equal(0, count_colour(bp, bright_green))
    local gr, m = count_colour(kd, bright_green), count_colour(kd, magenta)
    assert.is_true(gr > 500, "green (kD leaves): " .. gr)
    assert.is_true(m > 20, "magenta (kD split planes): " .. m)
    assert.are.equal(0, count_colour(kd, orange))
  end)

  it("draws nothing in a view with no terrain near the camera target", function()
    local sky = images[5]
    assert.are.equal(0, count_differences(sky, images[6]), "broadphase changed the sky view")
    assert.are.equal(0, count_differences(sky, images[7]), "kdtree changed the sky view")
  end)

  it("draws nothing for terrain in view but far from the camera target", function()
    local far = images[8]
    local ground = 0
    for y = 0, far.height - 1, 4 do
      for x = 0, far.width - 1, 4 do
        if not is_sky(far, x, y) then ground = ground + 1 end
      end
    end
    assert.is_true(ground > far.width * far.height / 16 / 8, "the terrain is not in view: " .. ground)
    assert.are.equal(0, count_differences(far, images[9]), "broadphase drew terrain away from the target")
    assert.are.equal(0, count_differences(far, images[10]), "kdtree drew terrain away from the target")
  end)
end)
