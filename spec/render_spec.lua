-- Specs for the renderer and quarry.graphics: the host program (build/quarry)
-- draws a small generated world in an offscreen window (SDL's offscreen
-- driver on Mesa's llvmpipe), and the specs look at the pixels it writes.
-- Argument checks run headless, where they behave exactly as in a window.

local host = require "support.host"
local build, exe, shell_quote, OFFSCREEN = host.build, host.exe, host.shell_quote, host.OFFSCREEN
local write_file, read_file, lines_of = host.write_file, host.read_file, host.lines_of

local dir -- fresh per test

-- Runs a script (written to dir/name with `body` after a common prelude) in
-- the host. Returns exit code, stderr and the lines the script logged.
local function run_script(name, body, options, env)
  local path = dir .. "/" .. name
  write_file(path, [[
local quarry = require "quarry"
local g = quarry.graphics
LOG = LOG or arg[1]
DIR = DIR or arg[2]
function log(...)
  local f = assert(io.open(LOG, "a"))
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = tostring(select(i, ...)) end
  f:write(table.concat(parts, " "), "\n")
  f:close()
end
-- The scene: small hills with a lake, seen from the south at a slant, so
-- that the top of the picture is sky and the bottom is ground.
function make_world()
  local w = quarry.world.new{}
  w.terrain:generate{kind = "hills", size = {64, 32, 64}, seed = 1, water_level = 13}
  return w
end
function scene_camera()
  g.set_clear_color(0.53, 0.72, 0.92)
  g.set_camera{position = {32, 30, -10}, target = {32, 12, 32}, fov = math.rad(60)}
end
]] .. body)
  local logfile, out, err = dir .. "/log", dir .. "/stdout", dir .. "/stderr"
  local cmd = string.format("%s timeout 120 %s %s %s %s %s >%s 2>%s", env or "", shell_quote(exe),
                            options, shell_quote(path), shell_quote(logfile), shell_quote(dir),
                            shell_quote(out), shell_quote(err))
  local _, _, code = os.execute(cmd)
  return code, read_file(err) or "", lines_of(logfile)
end

-- Runs in an offscreen window; fails with a clear message when SDL says the
-- offscreen driver itself is missing. Returns the logged lines.
local function run_offscreen(name, body, options)
  local code, err, log = run_script(name, body, options, OFFSCREEN)
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
  assert.are.equal(w * h * 3, #data - start + 1)
  local img = {width = w, height = h, data = data, start = start}
  function img.pixel(x, y)
    local i = start + (y * w + x) * 3
    return data:byte(i, i + 2)
  end
  -- Mean colour of rows [y0, y1).
  function img.mean(y0, y1)
    local r, g, b, n = 0, 0, 0, 0
    for y = y0, y1 - 1 do
      for x = 0, w - 1, 4 do
        local pr, pg, pb = img.pixel(x, y)
        r, g, b, n = r + pr, g + pg, b + pb, n + 1
      end
    end
    return r / n, g / n, b / n
  end
  return img
end

-- Pixels that differ between two images of the same size.
local function differing(a, b)
  assert.are.equal(a.width, b.width)
  assert.are.equal(a.height, b.height)
  local n = 0
  for y = 0, a.height - 1 do
    local i = a.start + y * a.width * 3
    local j = b.start + y * b.width * 3
    if a.data:sub(i, i + a.width * 3 - 1) ~= b.data:sub(j, j + b.width * 3 - 1) then
      for x = 0, a.width - 1 do
        local p, q = i + x * 3, j + x * 3
        if a.data:sub(p, p + 2) ~= b.data:sub(q, q + 2) then n = n + 1 end
      end
    end
  end
  return n
end

local function distinct_colours(img, limit)
  local seen, n = {}, 0
  for y = 0, img.height - 1, 3 do
    for x = 0, img.width - 1, 3 do
      local i = img.start + (y * img.width + x) * 3
      local key = img.data:sub(i, i + 2)
      if not seen[key] then
        seen[key], n = true, n + 1
        if n >= limit then return n end
      end
    end
  end
  return n
end

local SKY = {135, 184, 235} -- the clear colour 0.53, 0.72, 0.92 in bytes

local function distance_to_sky(r, g, b)
  return math.sqrt((r - SKY[1]) ^ 2 + (g - SKY[2]) ^ 2 + (b - SKY[3]) ^ 2)
end

local function parse_stats(line)
  local t = {}
  for k, v in line:gmatch("([%w_]+)=([%d%.%-]+)") do t[k] = tonumber(v) end
  return t
end

describe("renderer", function()
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. shell_quote(dir)))
  end)

  after_each(function()
    os.execute("rm -rf " .. shell_quote(dir))
  end)

  describe("in an offscreen window", function()
    -- One run draws the scene six times with a different option each frame
    -- and keeps a picture of every frame.
    local VARIANTS = [[
local variants = {
  {},                     -- 1 plain
  {},                     -- 2 plain again: nothing changed, nothing remeshed
  {wireframe = true},     -- 3
  {chunks = true},        -- 4
  {water = false},        -- 5
  {},                     -- 6 plus a line and text
}
local frame = 0
function quarry.load() world = make_world() scene_camera() end
function quarry.update() frame = frame + 1 end
function quarry.draw()
  assert(g.draw_world(world, variants[frame]))
  if frame == 6 then
    g.line({20, 20, 20}, {44, 20, 20}, {1, 0, 0})
    g.text("QUARRY", 500, 300, {color = {1, 0, 1}, scale = 6})
  end
  local s = g.stats()
  log(string.format("stats frame=%d chunks=%d triangles=%d draw_calls=%d remeshed=%d gpu_bytes=%d",
                    frame, s.chunks, s.triangles, s.draw_calls, s.remeshed, s.gpu_bytes))
  assert(g.screenshot(DIR .. "/frame" .. frame .. ".ppm"))
end
]]

    local log, images

    local function variants()
      if images then return images end
      log = run_offscreen("variants.lua", VARIANTS, "--frames 6 --screenshot " ..
                          shell_quote(dir .. "/last.png"))
      if not log then return nil end
      images = {}
      for i = 1, 6 do images[i] = read_ppm(dir .. "/frame" .. i .. ".ppm") end
      images.png = read_file(dir .. "/last.png")
      images.log = log
      return images
    end

    it("draws sky at the top and lit, textured ground at the bottom", function()
      local img = variants()
      if not img then return end
      local a = img[1]
      assert.is_true(distinct_colours(a, 200) >= 200, "the picture is (nearly) uniform")
      local r, g, b = a.mean(0, 20)
      assert.is_true(b > r and b > g and b > 150, string.format("top rows are not sky: %.0f %.0f %.0f", r, g, b))
      assert.is_true(distance_to_sky(r, g, b) < 10, "top rows are not the clear colour")
      local gr, gg, gb = a.mean(a.height - 40, a.height)
      assert.is_true(distance_to_sky(gr, gg, gb) > 60,
                     string.format("bottom rows look like sky: %.0f %.0f %.0f", gr, gg, gb))
      -- ground is neither black (unlit) nor white (overexposed)
      assert.is_true(gr + gg + gb > 120 and gr + gg + gb < 650,
                     string.format("bottom rows are %.0f %.0f %.0f", gr, gg, gb))
      -- texture and lighting vary across the ground
      local seen = {}
      local n = 0
      for x = 0, a.width - 1, 7 do
        local pr, pg, pb = a.pixel(x, a.height - 10)
        local key = pr .. "," .. pg .. "," .. pb
        if not seen[key] then seen[key], n = true, n + 1 end
      end
      assert.is_true(n > 20, "the ground is flat coloured (" .. n .. " colours in a row)")
    end)

    it("writes the last frame as a PNG with --screenshot", function()
      local img = variants()
      if not img then return end
      assert.is_truthy(img.png, "no PNG written")
      assert.are.equal("\137PNG\r\n\26\n", img.png:sub(1, 8))
      local w, h = string.unpack(">I4>I4", img.png, 17)
      assert.are.equal(img[6].width, w)
      assert.are.equal(img[6].height, h)
    end)

    it("meshes every chunk once and draws the same picture while nothing changes", function()
      local img = variants()
      if not img then return end
      local s1, s2 = parse_stats(img.log[1]), parse_stats(img.log[2])
      assert.is_true(s1.chunks > 0 and s1.triangles > 1000 and s1.draw_calls > 0, img.log[1])
      assert.is_true(s1.remeshed >= s1.chunks, img.log[1])
      assert.is_true(s1.gpu_bytes > 0, img.log[1])
      assert.are.equal(0, s2.remeshed, img.log[2])
      assert.are.equal(s1.triangles, s2.triangles)
      assert.are.equal(s1.gpu_bytes, s2.gpu_bytes)
      assert.are.equal(0, differing(img[1], img[2]))
    end)

    it("draws the wireframe, chunk boxes, water, lines and text when asked", function()
      local img = variants()
      if not img then return end
      local base = img[2]
      local npx = base.width * base.height
      for i, what in pairs{[3] = "wireframe", [4] = "chunk boxes", [5] = "water = false", [6] = "line and text"} do
        local n = differing(base, img[i])
        assert.is_true(n > npx / 1000, what .. " changed only " .. n .. " pixels")
      end
      -- water is drawn translucent over the lake bed: without it some pixels
      -- change but the ground below still shows
      assert.is_true(differing(base, img[5]) < npx / 2)
      local s5 = parse_stats(img.log[5])
      assert.is_true(s5.triangles < parse_stats(img.log[2]).triangles, "water triangles were counted")
      -- the text's fill colour is there
      local magenta = 0
      for y = 300, 380 do
        for x = 500, 760, 2 do
          local r, g, b = img[6].pixel(x, y)
          if r > 240 and g < 20 and b > 240 then magenta = magenta + 1 end
        end
      end
      assert.is_true(magenta > 50, "text pixels not found (" .. magenta .. ")")
    end)

    it("remeshes only the chunks an edit touches, shows the edit and frees emptied chunks", function()
      local log = run_offscreen("edit.lua", [[
local frame = 0
function quarry.load() world = make_world() scene_camera() end
function quarry.update()
  frame = frame + 1
  if frame == 2 then world.terrain:carve_ball({32, 14, 22}, 9) end
  if frame == 4 then world.terrain:clear() end
end
function quarry.draw()
  assert(g.draw_world(world))
  local s = g.stats()
  log(string.format("stats frame=%d chunks=%d triangles=%d remeshed=%d gpu_bytes=%d",
                    frame, s.chunks, s.triangles, s.remeshed, s.gpu_bytes))
  if frame <= 4 then assert(g.screenshot(DIR .. "/edit" .. frame .. ".ppm")) end
end
]], "--frames 4")
      if not log then return end
      local s = {}
      for i = 1, 4 do s[i] = parse_stats(log[i]) end
      assert.is_true(s[2].remeshed > 0, log[2])
      assert.is_true(s[2].remeshed <= 27 and s[2].remeshed < s[1].remeshed, log[2])
      assert.are.equal(0, s[3].remeshed, log[3])
      assert.are_not.equal(s[1].triangles, s[2].triangles)
      assert.are.equal(0, s[4].chunks, log[4])
      assert.are.equal(0, s[4].triangles, log[4])
      assert.are.equal(0, s[4].gpu_bytes, log[4])

      local before, after, cleared = read_ppm(dir .. "/edit1.ppm"), read_ppm(dir .. "/edit2.ppm"),
                                     read_ppm(dir .. "/edit4.ppm")
      local n = differing(before, after)
      assert.is_true(n > before.width * before.height / 50, "the hole changed only " .. n .. " pixels")
      assert.are.equal(0, differing(after, read_ppm(dir .. "/edit3.ppm")))
      -- an empty world is all sky
      assert.are.equal(1, distinct_colours(cleared, 10))
    end)

    it("keeps separate meshes for two worlds and errors on a destroyed one", function()
      local log = run_offscreen("two.lua", [[
function quarry.load() a = make_world() b = quarry.world.new{} scene_camera() end
local frame = 0
function quarry.update() frame = frame + 1 end
function quarry.draw()
  g.draw_world(a)
  local sa = g.stats()
  if frame == 1 then
    b.terrain:fill_ball({32, 20, 32}, 5, "brick")
    g.draw_world(b)
    local sb = g.stats()
    log("two", sa.chunks > 0, sb.chunks > sa.chunks, sb.remeshed > sa.remeshed)
    b:destroy()
    log(pcall(g.draw_world, b))
  else
    log("again", sa.remeshed)
  end
end
]], "--frames 2")
      if not log then return end
      assert.are.equal("two true true true", log[1])
      assert.matches("^false .*destroyed world", log[2])
      assert.are.equal("again 0", log[3])
    end)
  end)

  describe("quarry.graphics arguments (headless)", function()
    it("rejects bad arguments with errors naming them", function()
      local code, err, log = run_script("args.lua", [[
-- Calls g.<name>(<args>) from compiled code, so the error names the function.
local function try(name, args)
  local f = assert(load("local g, w, nan = ... return g." .. name .. "(" .. (args or "") .. ")"))
  local ok, e = pcall(f, g, W, 0 / 0)
  log(name, ok and "no error" or e)
end
W = quarry.world.new{}
try("draw_world")
try("draw_world", "{}")
try("draw_world", "w, {sparkles = true}")
try("draw_world", "w, {wireframe = 1}")
try("draw_world", "w, {contacts = \"yes\"}")
try("draw_world", "w, {fog = -1}")
try("draw_world", "w, {fog = nan}")
try("draw_world", "w, 5")
try("line")
try("line", "{0, 0, 0}")
try("line", "{0, 0, 0}, {1, nan, 0}")
try("line", "{0, 0, 0}, {1, 1, 1}, {2, 0, 0}")
try("line", "{0, 0, 0}, {1, 1, 1}, \"red\"")
try("text")
try("text", "\"hi\", nan, 0")
try("text", "\"hi\", 0")
try("text", "\"hi\", 0, 0, {size = 3}")
try("text", "\"hi\", 0, 0, {scale = 0}")
try("text", "\"hi\", 0, 0, {color = {1, 1}}")
try("screen_ray", "nan, 0")
try("screen_ray", "0")
try("set_camera", "{position = {nan, 0, 0}}")
try("set_camera", "{target = \"up\"}")
try("screenshot")
try("debug", "{wireframe = \"yes\"}")
W:destroy()
try("draw_world", "w")
log("ok", g.draw_world(quarry.world.new{}, {wireframe = true, chunks = true, water = false, fog = false,
                                           bodies = false, contacts = true}))
g.line({0, 0, 0}, quarry.vec3(1, 2, 3))
g.text("hello\n\1\255", 1, 2, {color = {r = 1, g = 0, b = 0, a = 0.5}})
log("ok")
]], "--headless --frames 1")
      assert.are.equal(0, code, err)
      local expect = {
        "^draw_world .*bad argument #1 to 'draw_world' %(quarry.World expected, got no value%)",
        "^draw_world .*bad argument #1 to 'draw_world' %(quarry.World expected, got table%)",
        "^draw_world .*#2 to 'draw_world' %(unknown option 'sparkles' %(valid: wireframe, chunks, water, bodies, contacts, fog, bake%)%)",
        "^draw_world .*#2 to 'draw_world' %(wireframe must be a boolean, got number%)",
        "^draw_world .*#2 to 'draw_world' %(contacts must be a boolean, got string%)",
        "^draw_world .*#2 to 'draw_world' %(fog must be a distance > 0",
        "^draw_world .*#2 to 'draw_world' %(fog must be a distance > 0",
        "^draw_world .*#2 to 'draw_world' %(table expected, got number%)",
        "^line .*#1 to 'line'",
        "^line .*#2 to 'line'",
        "^line .*#2 to 'line' %(components must be finite%)",
        "^line .*#3 to 'line' %(colour component r must be in %[0, 1%], got 2",
        "^line .*#3 to 'line' %(colour must be a table",
        "^text .*#1 to 'text' %(string expected, got no value%)",
        "^text .*#2 to 'text' %(x must be finite",
        "^text .*#3 to 'text' %(number expected, got no value%)",
        "^text .*#4 to 'text' %(unknown option 'size' %(valid: color, scale%)%)",
        "^text .*#4 to 'text' %(scale must be in %(0, ",
        "^text .*#4 to 'text' %(color: colour component b %(%[3%]%) must be a number, got nil%)",
        "^screen_ray .*#1 to 'screen_ray' %(x must be finite",
        "^screen_ray .*#2 to 'screen_ray' %(number expected, got no value%)",
        "^set_camera .*#1 to 'set_camera' %(position.x must be finite",
        "^set_camera .*#1 to 'set_camera' %(target must be a Vec3",
        "^screenshot .*#1 to 'screenshot' %(string expected, got no value%)",
        "^debug .*#1 to 'debug' %(wireframe must be a boolean, got string%)",
        "^draw_world .*attempt to use a destroyed world",
        "^ok true$",
        "^ok$",
      }
      for i, pattern in ipairs(expect) do
        assert.matches(pattern, log[i] or "(missing)")
      end
      assert.are.equal(#expect, #log)
    end)

    it("screen_ray follows the camera and the window size; stats are zero headless", function()
      local code, err, log = run_script("ray.lua", [[
g.set_camera{position = {0, 10, 20}, target = {0, 0, 0}, fov = math.rad(90)}
local w, h = g.size()
log("size", w, h)
local o, d = g.screen_ray(w / 2, h / 2)
local want = quarry.vec3(0, -10, -20):normalized()
log("centre", o == quarry.vec3(0, 10, 20), (d - want):length() < 1e-6, math.abs(d:length() - 1) < 1e-9)
-- fov 90: the top edge of the window is 45 degrees above the view direction
local _, top = g.screen_ray(w / 2, 0)
log("top", math.abs(top:dot(want) - math.cos(math.rad(45))) < 1e-6, top.y > d.y)
local _, left = g.screen_ray(0, h / 2)
local _, right = g.screen_ray(w, h / 2)
log("sides", left.x < 0, right.x > 0, math.abs(left.x + right.x) < 1e-9, math.abs(left.y - right.y) < 1e-9)
-- straight down still has a basis
g.set_camera{position = {0, 10, 0}, target = {0, 0, 0}}
local _, down = g.screen_ray(w / 2, h / 2)
log("down", (down - quarry.vec3(0, -1, 0)):length() < 1e-6)
local s = g.stats()
log("stats", s.chunks, s.triangles, s.draw_calls, s.remeshed, s.gpu_bytes)
log("captured", quarry.mouse.set_captured(true), quarry.mouse.is_captured())
]], "--headless --frames 1")
      assert.are.equal(0, code, err)
      assert.are.same({
        "size 1280 720",
        "centre true true true",
        "top true true",
        "sides true true true true",
        "down true",
        "stats 0 0 0 0 0",
        "captured true true",
      }, log)
    end)
  end)
end)
