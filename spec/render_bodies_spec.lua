-- Specs for drawing rigid bodies and their contacts: the host program
-- (build/quarry) draws in an offscreen window (SDL's offscreen driver on
-- Mesa's llvmpipe) and the specs look at the pixels it writes.
--
-- Where a body must appear is worked out here from the camera's definition
-- (look-at basis, vertical field of view, window aspect), not from the
-- renderer's matrices: a box is convex, so its picture is exactly the convex
-- hull of its eight projected corners.

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
function shot(name) assert(g.screenshot(DIR .. "/" .. name .. ".ppm")) end
-- The camera every test uses: from the south-east and above, looking at
-- (0, 1, 0); the sky colour is the clear colour.
CAMERA = {position = {6, 7, 14}, target = {0, 1, 0}, fov = math.rad(50)}
function setup_view()
  g.set_clear_color(0.53, 0.72, 0.92)
  g.set_camera(CAMERA)
end
]]

-- Runs body (after the prelude) for `frames` frames in an offscreen window;
-- returns the lines it logged.
local function run_offscreen(name, body, frames)
  local path = dir .. "/" .. name
  write_file(path, PRELUDE .. body)
  local logfile, err = dir .. "/log", dir .. "/stderr"
  local cmd = string.format("%s timeout 120 %s --frames %d %s %s %s >/dev/null 2>%s", OFFSCREEN,
                            shell_quote(exe), frames, shell_quote(path), shell_quote(logfile),
                            shell_quote(dir), shell_quote(err))
  local _, _, code = os.execute(cmd)
  local stderr = read_file(err) or ""
  if code ~= 0 and stderr:find("offscreen not available", 1, true) then
    error("SDL has no offscreen video driver here (the project needs it for GL tests): " .. stderr)
  end
  assert.are.equal(0, code, stderr)
  assert.is_falsy(stderr:find("error", 1, true), stderr)
  return lines_of(logfile)
end

local function read_ppm(name)
  local path = dir .. "/" .. name .. ".ppm"
  local data = assert(read_file(path), "no image at " .. path)
  local w, h, start = data:match("^P6\n(%d+) (%d+)\n255\n()")
  assert.is_truthy(w, "not a binary PPM: " .. path)
  return {width = tonumber(w), height = tonumber(h), data = data, start = start}
end

-- Calls fn(x, y) for every pixel that differs between two images.
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

-- ---- the camera, from its definition ----

local function sub(a, b) return {a[1] - b[1], a[2] - b[2], a[3] - b[3]} end
local function dot(a, b) return a[1] * b[1] + a[2] * b[2] + a[3] * b[3] end
local function cross(a, b)
  return {a[2] * b[3] - a[3] * b[2], a[3] * b[1] - a[1] * b[3], a[1] * b[2] - a[2] * b[1]}
end
local function unit(a)
  local l = math.sqrt(dot(a, a))
  return {a[1] / l, a[2] / l, a[3] / l}
end

local CAMERA = {position = {6, 7, 14}, target = {0, 1, 0}, fov = math.rad(50)}

-- Image point of world point p on a w x h image, in pixels from the
-- bottom-left corner (y up, so that outlines turn counter-clockwise).
local function project(p, w, h)
  local f = unit(sub(CAMERA.target, CAMERA.position))
  local r = unit(cross(f, {0, 1, 0}))
  local u = cross(r, f)
  local d = sub(p, CAMERA.position)
  local z = dot(d, f)
  local t = math.tan(CAMERA.fov / 2)
  local nx, ny = dot(d, r) / (z * t * w / h), dot(d, u) / (z * t)
  return {(nx + 1) / 2 * w, (ny + 1) / 2 * h}
end

-- Rotates v by the unit quaternion {w, x, y, z}.
local function rotate(q, v)
  local qv = {q[2], q[3], q[4]}
  local t = cross(qv, v)
  t = {2 * t[1], 2 * t[2], 2 * t[3]}
  local c = cross(qv, t)
  return {v[1] + q[1] * t[1] + c[1], v[2] + q[1] * t[2] + c[2], v[3] + q[1] * t[3] + c[3]}
end

-- Convex hull (counter-clockwise; monotone chain) of 2D points.
local function hull2d(points)
  table.sort(points, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
  local function turn(o, a, b) return (a[1] - o[1]) * (b[2] - o[2]) - (a[2] - o[2]) * (b[1] - o[1]) end
  local lower, upper = {}, {}
  for _, p in ipairs(points) do
    while #lower >= 2 and turn(lower[#lower - 1], lower[#lower], p) <= 0 do lower[#lower] = nil end
    lower[#lower + 1] = p
  end
  for i = #points, 1, -1 do
    local p = points[i]
    while #upper >= 2 and turn(upper[#upper - 1], upper[#upper], p) <= 0 do upper[#upper] = nil end
    upper[#upper + 1] = p
  end
  lower[#lower] = nil
  upper[#upper] = nil
  for _, p in ipairs(upper) do lower[#lower + 1] = p end
  return lower
end

-- Signed distance of point p from a counter-clockwise convex polygon's
-- boundary: negative inside (exact inside; outside a lower bound of the
-- distance, which is all the tests need).
local function signed_distance(poly, p)
  local worst = -math.huge
  for i = 1, #poly do
    local a, b = poly[i], poly[i % #poly + 1]
    local ex, ey = b[1] - a[1], b[2] - a[2]
    local len = math.sqrt(ex * ex + ey * ey)
    -- the outside is to the right of each edge
    local d = ((p[1] - a[1]) * ey - (p[2] - a[2]) * ex) / len
    if d > worst then worst = d end
  end
  return worst
end

local function area(poly)
  local s = 0
  for i = 1, #poly do
    local a, b = poly[i], poly[i % #poly + 1]
    s = s + a[1] * b[2] - a[2] * b[1]
  end
  return math.abs(s) / 2
end

-- The picture of a box (full size, centre, rotation {w, x, y, z}) on a w x h
-- image: a convex polygon, y up.
local function box_outline(size, centre, q, w, h)
  local corners = {}
  for i = 0, 7 do
    local c = {(i & 1 == 0 and -0.5 or 0.5) * size[1], (i & 2 == 0 and -0.5 or 0.5) * size[2],
               (i & 4 == 0 and -0.5 or 0.5) * size[3]}
    local p = rotate(q, c)
    corners[#corners + 1] = project({p[1] + centre[1], p[2] + centre[2], p[3] + centre[3]}, w, h)
  end
  return hull2d(corners)
end

describe("drawing bodies", function()
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. shell_quote(dir)))
  end)

  after_each(function()
    os.execute("rm -rf " .. shell_quote(dir))
  end)

  -- A box turned about two axes in an empty world (sky only): frame 1 has no
  -- body, frame 2 the box, frame 3 after it is destroyed, frame 4 a sphere
  -- spawned into the box's slot (a new handle), frame 5 a fresh world with
  -- the same sphere only.
  local SIZE, CENTRE = {2, 1, 1.5}, {0.5, 1.5, 0}
  local C, S = math.cos(0.35), math.sin(0.35)
  local Q = {C, S * 0.6, S * 0.8, 0} -- {w, x, y, z}: 0.7 rad about (0.6, 0.8, 0)

  local function box_frames()
    return run_offscreen("box.lua", string.format([[
local frame, box = 0, nil
function quarry.load() world = quarry.world.new{} setup_view() end
function quarry.update()
  frame = frame + 1
  if frame == 2 then
    box = world:spawn{shape = "box", size = {%g, %g, %g}, position = {%g, %g, %g},
                      rotation = {%.17g, %.17g, %.17g, %.17g}, material = "rock"}
  elseif frame == 3 then
    box:destroy()
  elseif frame == 4 then
    ball = world:spawn{shape = "sphere", radius = 0.8, position = {-1, 2, 1}, material = "wood"}
    log("slot", tostring(ball):match("slot (%%d+)"))
  elseif frame == 5 then
    world = quarry.world.new{}
    world:spawn{shape = "sphere", radius = 0.8, position = {-1, 2, 1}, material = "wood"}
  end
end
function quarry.draw()
  assert(g.draw_world(world))
  local s = g.stats()
  log(string.format("stats frame=%%d bodies=%%d triangles=%%d gpu_bytes=%%d", frame, s.bodies, s.triangles,
                    s.gpu_bytes))
  shot("frame" .. frame)
end
]], SIZE[1], SIZE[2], SIZE[3], CENTRE[1], CENTRE[2], CENTRE[3], Q[1], Q[2], Q[3], Q[4]), 5)
  end

  it("draws a box exactly over its projection, and nothing once it is destroyed", function()
    local log = box_frames()
    local none, box, gone = read_ppm("frame1"), read_ppm("frame2"), read_ppm("frame3")
    local w, h = none.width, none.height
    local outline = box_outline(SIZE, CENTRE, Q, w, h)
    local expect = area(outline)
    assert.is_true(expect > 5000, "the box should cover a good part of the picture: " .. expect)

    -- every changed pixel lies on the box's picture (pixel centres within
    -- 1.5 px of it), and every pixel centre 1.5 px inside it changed; image
    -- rows count from the top, the outline's y from the bottom
    local changed, stray = 0, 0
    local seen = {}
    each_difference(none, box, function(x, y)
      changed = changed + 1
      seen[y * w + x] = true
      if signed_distance(outline, {x + 0.5, h - (y + 0.5)}) > 1.5 then stray = stray + 1 end
    end)
    assert.are.equal(0, stray, "pixels changed away from the box")
    local missed, inside = 0, 0
    local lo_x, hi_x, lo_y, hi_y = math.huge, -math.huge, math.huge, -math.huge
    for _, p in ipairs(outline) do
      lo_x, hi_x = math.min(lo_x, p[1]), math.max(hi_x, p[1])
      lo_y, hi_y = math.min(lo_y, p[2]), math.max(hi_y, p[2])
    end
    for y = math.max(0, math.floor(h - hi_y)), math.min(h - 1, math.ceil(h - lo_y)) do
      for x = math.max(0, math.floor(lo_x)), math.min(w - 1, math.ceil(hi_x)) do
        if signed_distance(outline, {x + 0.5, h - (y + 0.5)}) < -1.5 then
          inside = inside + 1
          if not seen[y * w + x] then missed = missed + 1 end
        end
      end
    end
    assert.is_true(inside > 1000)
    assert.are.equal(0, missed, "pixels inside the box did not change")
    -- and the count matches the silhouette's area (edges are half covered)
    assert.is_true(math.abs(changed - expect) < 0.03 * expect,
                   string.format("%d pixels changed, the box covers %.0f", changed, expect))

    -- destroyed: the picture is the body-less one again
    assert.are.equal(0, count_differences(none, gone))
    assert.matches("frame=1 bodies=0 ", log[1])
    assert.matches("frame=2 bodies=1 triangles=12 ", log[2])
    assert.matches("frame=3 bodies=0 triangles=0 gpu_bytes=0", log[3])
  end)

  it("keys meshes by handle: a new body in a reused slot gets its own mesh", function()
    local log = box_frames()
    assert.are.equal("slot 0", log[4], "the sphere should reuse the box's slot")
    local reused, fresh = read_ppm("frame4"), read_ppm("frame5")
    assert.is_true(count_differences(read_ppm("frame1"), reused) > 1000, "the sphere is not drawn")
    assert.are.equal(0, count_differences(reused, fresh))
  end)

  it("keeps meshes through repacking the arena", function()
    -- 100 spheres in a grid; 80 destroyed leave more garbage than live mesh,
    -- so the arena is repacked; the 20 left must draw as in a world that
    -- only ever had them.
    local log = run_offscreen("many.lua", [[
local frame, balls = 0, {}
local function grid(w, keep)
  for i = 0, 99 do
    if not keep or i % 5 == 0 then
      local b = w:spawn{shape = "sphere", radius = 0.3, material = i % 2 == 0 and "rock" or "wood",
                        position = {(i % 10) * 0.8 - 3.6, 0.2 + math.floor(i / 10) * 0.8, 0}}
      balls[#balls + 1] = {b, i}
    end
  end
end
function quarry.load() world = quarry.world.new{} setup_view() grid(world) end
function quarry.update()
  frame = frame + 1
  if frame == 2 then
    for _, e in ipairs(balls) do if e[2] % 5 ~= 0 then e[1]:destroy() end end
  elseif frame == 3 then
    world, balls = quarry.world.new{}, {}
    grid(world, true)
  end
end
function quarry.draw()
  assert(g.draw_world(world))
  local s = g.stats()
  log(string.format("stats frame=%d bodies=%d gpu_bytes=%d", frame, s.bodies, s.gpu_bytes))
  shot("many" .. frame)
end
]], 3)
    assert.matches("bodies=100 ", log[1])
    assert.matches("bodies=20 ", log[2])
    assert.matches("bodies=20 ", log[3])
    local before, after = tonumber(log[1]:match("gpu_bytes=(%d+)")), tonumber(log[2]:match("gpu_bytes=(%d+)"))
    assert.is_true(after < before, "the arena was not repacked: " .. log[2])
    assert.is_true(count_differences(read_ppm("many1"), read_ppm("many2")) > 1000)
    assert.are.equal(0, count_differences(read_ppm("many2"), read_ppm("many3")))
    -- each sphere is where its body is, in its body's material, before and
    -- after repacking: the side facing the camera is lit by the bluish sky
    -- only, so wood (0.55, 0.38, 0.2) stays redder than blue and rock
    -- (0.45, 0.44, 0.42) turns bluer than red
    for frame, step in pairs{[1] = 1, [2] = 5} do
      local img = read_ppm("many" .. frame)
      for i = 0, 99, step do
        local p = project({(i % 10) * 0.8 - 3.6, 0.2 + (i // 10) * 0.8, 0}, img.width, img.height)
        local x, y = math.floor(p[1]), img.height - 1 - math.floor(p[2])
        local at = img.start + (y * img.width + x) * 3
        local r, _, b = img.data:byte(at, at + 2)
        local wood = i % 2 == 1
        assert.is_true(wood and r - b > 10 or not wood and r - b < 0,
                       string.format("frame %d sphere %d at (%d, %d) is %d, %d, %d", frame, i, x, y,
                                     img.data:byte(at, at + 2)))
      end
    end
  end)

  it("colours a body by its material, darker while it sleeps", function()
    -- The same box, at the same place, in two materials whose colours are in
    -- ratio 1/2, then asleep. Lighting multiplies the colour and the image
    -- is gamma encoded (1/2.2), so decoded pixels keep the ratio.
    local log = run_offscreen("colour.lua", [[
quarry.material.define{name = "paint_a", color = {0.8, 0.6, 0.4}}
quarry.material.define{name = "paint_b", color = {0.4, 0.3, 0.2}}
local frame, box = 0, nil
local function spawn(m)
  if box then box:destroy() end
  box = world:spawn{shape = "box", size = {2, 1.5, 1}, position = {0, 1.5, 0}, material = m,
                    rotation = {0.95, 0.1, 0.3, 0.0}}
end
function quarry.load() world = quarry.world.new{gravity = {0, 0, 0}} setup_view() end
function quarry.update()
  frame = frame + 1
  if frame == 2 then spawn("paint_a")
  elseif frame == 3 then spawn("paint_b")
  elseif frame == 4 then
    spawn("paint_a")
    for i = 1, 90 do world:step(1 / 60) end
    log("sleeping", box.sleeping, box.position == quarry.vec3(0, 1.5, 0))
  end
end
function quarry.draw()
  assert(g.draw_world(world))
  shot("colour" .. frame)
end
]], 4)
    assert.are.same({"sleeping true true"}, log)
    local bg, a, b, asleep = read_ppm("colour1"), read_ppm("colour2"), read_ppm("colour3"), read_ppm("colour4")
    local w = bg.width
    local on = {}
    each_difference(bg, a, function(x, y) on[y * w + x] = true end)
    local function linear(img, x, y, k)
      return (img.data:byte(img.start + (y * w + x) * 3 + k) / 255) ^ 2.2
    end
    local sum_b, sum_s, n = {0, 0, 0}, {0, 0, 0}, 0
    local worst = 0
    for key in pairs(on) do
      local x, y = key % w, key // w
      -- inside the box: all four neighbours are box too (no edge blending)
      if on[key - 1] and on[key + 1] and on[key - w] and on[key + w] then
        n = n + 1
        for k = 0, 2 do
          local la = linear(a, x, y, k)
          if la > 0.05 then
            local rb = linear(b, x, y, k) / la
            worst = math.max(worst, math.abs(rb - 0.5))
          end
          sum_b[k + 1] = sum_b[k + 1] + linear(b, x, y, k)
          sum_s[k + 1] = sum_s[k + 1] + linear(asleep, x, y, k)
          sum_b[k + 1], sum_s[k + 1] = sum_b[k + 1], sum_s[k + 1]
        end
      end
    end
    assert.is_true(n > 2000, "too few box pixels: " .. n)
    assert.is_true(worst < 0.03, "material colour ratio off by " .. worst)
    local sum_a = {0, 0, 0}
    for key in pairs(on) do
      local x, y = key % w, key // w
      if on[key - 1] and on[key + 1] and on[key - w] and on[key + w] then
        for k = 0, 2 do sum_a[k + 1] = sum_a[k + 1] + linear(a, x, y, k) end
      end
    end
    -- asleep: darker by one factor in every channel (the hue kept)
    local r = {}
    for k = 1, 3 do r[k] = sum_s[k] / sum_a[k] end
    assert.is_true(r[1] < 0.9 and r[1] > 0.2, "sleeping shade " .. r[1])
    assert.is_true(math.abs(r[2] - r[1]) < 0.02 and math.abs(r[3] - r[1]) < 0.02,
                   string.format("sleeping changes the hue: %.3f %.3f %.3f", r[1], r[2], r[3]))
  end)
end)

describe("the contacts debug view", function()
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. shell_quote(dir)))
  end)

  after_each(function()
    os.execute("rm -rf " .. shell_quote(dir))
  end)

  it("marks contact points only when there are contacts", function()
    local log = run_offscreen("contacts.lua", [[
local frame, box = 0, nil
function quarry.load()
  world = quarry.world.new{}
  world.terrain:fill_region({-8, -4, -8}, {8, 0, 8}, "rock")
  box = world:spawn{shape = "box", size = {1, 1, 1}, position = {0, 0.55, 0}, material = "wood"}
  for i = 1, 20 do world:step(1 / 60) end
  setup_view()
end
function quarry.update()
  frame = frame + 1
  if frame == 3 then
    -- lifted far from everything: the next step has no contact
    box.position = {0, 6, 0}
    box.velocity = {0, 0, 0}
    box.angular_velocity = {0, 0, 0}
    world:step(1 / 60)
  end
end
function quarry.draw()
  local on = frame == 2 or frame == 4
  if frame == 5 then g.debug{contacts = true} end
  assert(g.draw_world(world, frame ~= 5 and {contacts = on} or nil))
  local s = g.stats()
  log(string.format("frame=%d contacts=%d sleeping=%s", frame, s.contacts, tostring(box.sleeping)))
  shot("contacts" .. frame)
end
]], 5)
    local n = tonumber(log[2]:match("contacts=(%d+)"))
    assert.matches("frame=1 contacts=0 sleeping=false", log[1])
    assert.is_true(n >= 4, "a box resting on flat ground has at least 4 contact points: " .. log[2])
    assert.matches("frame=3 contacts=0", log[3])
    assert.matches("frame=4 contacts=0", log[4])
    assert.matches("frame=5 contacts=0", log[5])

    -- resting: the marks change pixels, all near the box (contact points lie
    -- on its bottom face; marks reach 0.6 voxels from them)
    local off, on = read_ppm("contacts1"), read_ppm("contacts2")
    local w, h = off.width, off.height
    local outline = box_outline({3.4, 3.4, 3.4}, {0, 0.5, 0}, {1, 0, 0, 0}, w, h)
    local changed, stray = 0, 0
    each_difference(off, on, function(x, y)
      changed = changed + 1
      if signed_distance(outline, {x + 0.5, h - (y + 0.5)}) > 1 then stray = stray + 1 end
    end)
    assert.is_true(changed > 30, "the contact marks changed only " .. changed .. " pixels")
    assert.are.equal(0, stray, "pixels changed away from the contacts")
    -- no contacts: switching the view on (by option or by debug{}) draws nothing
    assert.are.equal(0, count_differences(read_ppm("contacts3"), read_ppm("contacts4")))
    assert.are.equal(0, count_differences(read_ppm("contacts3"), read_ppm("contacts5")))
    assert.is_true(count_differences(read_ppm("contacts1"), read_ppm("contacts3")) > 1000, "the box did not move")
  end)
end)

describe("examples/sandbox.lua", function()
  it("drops a box (B) and a ball (N) above the terrain at the crosshair and removes them (X)", function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. shell_quote(dir)))
    -- The sandbox's callbacks, driven by a wrapper that presses its keys.
    local path = dir .. "/drive.lua"
    write_file(path, [[
local quarry = require "quarry"
local g = quarry.graphics
local LOG = arg[1]
local function log(...)
  local f = assert(io.open(LOG, "a"))
  f:write(table.concat({...}, " "), "\n")
  f:close()
end
dofile("examples/sandbox.lua")
local update = quarry.update
local frame = 0
function quarry.update(dt)
  update(dt)
  frame = frame + 1
  if frame == 2 then
    quarry.mouse.set_captured(true)
    local w, h = g.size()
    local origin, dir = g.screen_ray(w / 2, h / 2)
    local hit = assert(world:raycast(origin, dir, 200))
    quarry.keypressed("b")
    quarry.keypressed("n")
    for _, b in ipairs(world:bodies()) do
      local d = b.position - hit.position
      log("body", tostring(b):match("%((%a+)"), b.material, tostring(d.y > 1.5 and d:length() < 5))
    end
  elseif frame == 3 then
    quarry.keypressed("f3")
    log("contacts", tostring(g.debug().contacts))
    quarry.keypressed("x")
    log("left", #world:bodies())
  end
end
]])
    local logfile = dir .. "/log"
    local cmd = string.format("timeout 120 %s --headless --frames 4 %s %s >/dev/null 2>%s", shell_quote(exe),
                              shell_quote(path), shell_quote(logfile), shell_quote(dir .. "/stderr"))
    local _, _, code = os.execute(cmd)
    local err = read_file(dir .. "/stderr") or ""
    local log = lines_of(logfile)
    os.execute("rm -rf " .. shell_quote(dir))
    assert.are.equal(0, code, err)
    assert.are.same({"body box rock true", "body sphere rock true", "contacts true", "left 0"}, log)
  end)
end)
