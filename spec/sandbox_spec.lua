-- examples/sandbox.lua driven headless (issue 11): a wrapper script calls
-- the sandbox's callbacks as the host would for key presses and clicks at
-- the crosshair, and logs what happened. Independent answers: the terrain
-- read around the crosshair before and after each click (carving lowers the
-- summed occupancy, adding raises it, painting keeps it and raises the
-- count of the painted material), world:hash() before the edits (Ctrl+Z
-- back to it exactly, Ctrl+Y forward to the hash after them), mass
-- conservation of a shatter, the hash of the world at F5 after F9, and the
-- sandbox's own source for the keys its help must list.
local host = require "support.host"
local exe, shell_quote = host.exe, host.shell_quote
local write_file, read_file, lines_of = host.write_file, host.read_file, host.lines_of

local DRIVER = [==[
local quarry = require "quarry"
local g = quarry.graphics
local out = assert(io.open(arg[1], "w"))
sandbox_save_path = arg[2]
local function log(...)
  local t = {}
  for i = 1, select("#", ...) do t[i] = tostring(select(i, ...)) end
  out:write(table.concat(t, " "), "\n")
  out:flush()
end
dofile("examples/sandbox.lua")

local function press(...) -- keys held together, released in reverse order
  local ks = {...}
  for _, k in ipairs(ks) do quarry.keypressed(k) end
  for i = #ks, 1, -1 do quarry.keyreleased(ks[i]) end
end
local function centre_ray()
  local w, h = g.size()
  return g.screen_ray(w / 2, h / 2)
end
local function centre_hit()
  local o, d = centre_ray()
  return world:raycast(o, d, 200, {bodies = false})
end
-- Summed occupancy and count of material m in a cube round the crosshair's
-- terrain point (taken before the click, so the same cube after it).
local BOX = 20
local function cube()
  local p = assert(centre_hit(), "nothing at the crosshair").position
  return {math.floor(p.x) - BOX, math.floor(p.y) - BOX, math.floor(p.z) - BOX},
         {math.floor(p.x) + BOX, math.floor(p.y) + BOX, math.floor(p.z) + BOX}
end
local function measure(lo, hi, m)
  local d = world.terrain:read(lo, hi)
  local occ, n = 0, 0
  for i = 1, #d.occupancy do
    occ = occ + d.occupancy[i]
    if d.materials[i] == m then n = n + 1 end
  end
  return occ, n
end
-- Clicks (button 1 left, 2 right) and logs how the cube changed.
local edits = 0
local function click(name, button, m)
  local lo, hi = cube()
  local occ0, n0 = measure(lo, hi, m)
  local h0 = world:hash()
  quarry.mousepressed(0, 0, button)
  quarry.mousereleased(0, 0, button)
  local occ1, n1 = measure(lo, hi, m)
  if world:hash() ~= h0 then edits = edits + 1 end
  local d = occ1 - occ0
  if name == "smooth" then -- which way depends on the surface: only that it changed
    log(name, world:hash() ~= h0)
  else
    log(name, d > 1e-6 and "more" or d < -1e-6 and "less" or "same", n1 > n0 and "painted" or "-")
  end
end

local steps = {}
steps[2] = function()
  quarry.mouse.set_captured(true)
  log("auto_detach", world:settings().auto_detach)
  local start = world:hash()
  -- ball brush, carve mode (the default), left click digs, right click adds
  click("ball carve", 1, "rock")
  click("ball add", 2, "rock")
  press("g") -- block
  click("block carve", 1, "rock")
  click("block add", 2, "rock")
  press("g") -- cylinder
  click("cylinder carve", 1, "rock")
  click("cylinder add", 2, "rock")
  press("m") -- paint mode
  press("7") -- glass
  click("cylinder paint", 1, "glass")
  press("g") press("g") -- smooth, then paint
  press("m") -- add mode: the paint brush paints in any mode
  press("9") -- brick
  click("paint brush", 1, "brick")
  press("g") -- ball again
  press("m") press("m") -- carve... then paint
  press("3") -- grass
  click("ball paint", 1, "grass")
  press("g") press("g") press("g") -- smooth
  click("smooth", 1, "rock")
  press("g") -- paint brush: right click picks the material under the cursor
  local under = centre_hit().material
  quarry.mousepressed(0, 0, 2)
  log("picked", under == ({"rock", "dirt", "grass", "sand", "snow", "ice", "glass", "wood", "brick", "metal",
                           "concrete"})[material])
  local after = world:hash()
  for _ = 1, edits do press("left ctrl", "z") end
  log("undo all", world:hash() == start, world.terrain:journal().undo)
  press("left ctrl", "z")
  log("undo more", status)
  for _ = 1, edits do press("right ctrl", "y") end
  log("redo all", world:hash() == after)
  press("left ctrl", "z")
  press("left ctrl", "left shift", "z")
  log("ctrl shift z", world:hash() == after)
  press("z") -- without Ctrl: nothing
  log("plain z", world:hash() == after)
end

steps[3] = function()
  for _ = 1, 20 do press("]") end
  local big = brush
  for _ = 1, 30 do press("[") end
  local small = brush
  quarry.wheelmoved(0, 1) quarry.wheelmoved(0, 1)
  log("size", big, small, brush)
  press("0") local m0 = material
  press(".") local m1 = material
  press(".") local m2 = material
  press(",") local m3 = material
  log("materials", m0, m1, m2, m3)
  local d0 = g.debug()
  press("f2") press("f3") press("f4") press("f6")
  local d1 = g.debug()
  log("debug", d1.wireframe ~= d0.wireframe, d1.contacts ~= d0.contacts, d1.chunks ~= d0.chunks,
      d1.lod ~= d0.lod)
  press("h") local h1 = show_help
  press("f1") local h2 = show_help
  press("f1") local h3 = show_help
  log("help", h1, h2, h3)
  press("f8") -- the probe runs in this frame's draw
end

steps[4] = function()
  -- probe: every cell of the lattice whose centre is solid must be reported
  -- (the broadphase is conservative), and not every cell is
  local p = centre_hit().position
  local set, missing = {}, 0
  for _, c in ipairs(probed or {}) do set[string.format("%d %d %d", c.x - 0.5, c.y - 0.5, c.z - 0.5)] = true end
  for z = math.floor(p.z) - 4, math.floor(p.z) + 4 do
    for y = math.floor(p.y) - 4, math.floor(p.y) + 4 do
      for x = math.floor(p.x) - 4, math.floor(p.x) + 4 do
        if world.terrain:is_solid{x + 0.5, y + 0.5, z + 0.5} and not set[string.format("%d %d %d", x, y, z)] then
          missing = missing + 1
        end
      end
    end
  end
  log("probe", #(probed or {}) > 0, #(probed or {}) < 9 * 9 * 9, missing)
  local o, d = centre_ray()
  local b = world:spawn{shape = "box", size = {2, 2, 2}, material = "glass", position = o + d * 5}
  local mass = b.mass
  press("k")
  local sum, n = 0, 0
  for _, f in ipairs(world:bodies()) do sum = sum + f.mass n = n + 1 end
  log("shatter", (status:gsub("%d+ pieces", "N pieces")), b:valid(), n > 1, math.abs(sum - mass) < 1e-6 * mass)
  for _, f in ipairs(world:bodies()) do f:destroy() end
  press("k")
  log("shatter nothing", status)
  -- save, change, load: the world at the save comes back
  world:spawn{shape = "sphere", radius = 0.5, position = o + d * 10, material = "wood"}
  press("f5")
  local saved, old = world:hash(), world
  quarry.mousepressed(0, 0, 1)
  local changed = world:hash() ~= saved
  press("f9")
  log("load", changed, world ~= old, world:hash() == saved, #world:bodies(), world:settings().auto_detach,
      world.terrain:undo())
end

local update = quarry.update
local frame = 0
function quarry.update(dt)
  update(dt)
  frame = frame + 1
  if steps[frame] then
    local ok, err = pcall(steps[frame])
    if not ok then log("error", err) end
  end
end
]==]

local dir

local function run(script, frames)
  local path = dir .. "/drive.lua"
  write_file(path, script)
  local cmd = string.format("timeout 300 %s --headless --frames %d %s %s %s >%s 2>&1", shell_quote(exe), frames,
                            shell_quote(path), shell_quote(dir .. "/log"), shell_quote(dir .. "/saved.world"),
                            shell_quote(dir .. "/stdout"))
  local _, _, code = os.execute(cmd)
  return code, lines_of(dir .. "/log"), read_file(dir .. "/stdout") or ""
end

describe("examples/sandbox.lua", function()
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. shell_quote(dir)))
  end)
  after_each(function() os.execute("rm -rf " .. shell_quote(dir)) end)

  it("runs headless for 120 frames as make run does", function()
    local cmd = string.format("timeout 300 %s --headless --frames 120 examples/sandbox.lua >%s 2>&1",
                              shell_quote(exe), shell_quote(dir .. "/out"))
    local _, _, code = os.execute(cmd)
    local out = read_file(dir .. "/out") or ""
    assert.are.equal(0, code, out)
    assert.matches("sandbox: 120 frames, 2%.00 s simulated", out)
    assert.is_nil(out:find("error"), out)
  end)

  it("brushes, modes, undo and redo, sizes, materials, views, shatter, save and load", function()
    local code, log, out = run(DRIVER, 6)
    assert.are.equal(0, code, out)
    assert.are.same({
      "auto_detach true",
      "ball carve less -", "ball add more painted",
      "block carve less -", "block add more painted",
      "cylinder carve less -", "cylinder add more painted",
      "cylinder paint same painted",
      "paint brush same painted",
      "ball paint same painted",
      "smooth true",
      "picked true",
      "undo all true 0",
      "undo more nothing to undo (0 to undo, 10 to redo)",
      "redo all true",
      "ctrl shift z true",
      "plain z true",
      "size 16 1 3",
      "materials 10 11 1 11",
      "debug true true true true",
      "help true false true",
      "probe true true 0",
      "shatter shattered a glass body into N pieces false true true",
      "shatter nothing no body under the cursor",
      "load true true true 1 true false",
    }, log)
  end)

  it("lists every key it handles in its help", function()
    local src = assert(read_file("examples/sandbox.lua"))
    local help = assert(src:match("local HELP = (%b{})"), "no HELP table")
    local keys = {}
    for k in src:gmatch('k == "([^"]+)"') do keys[k] = true end
    for k in src:gmatch('key%("([^"]+)"%)') do keys[k] = true end
    local shown = {tab = "Tab", space = "Space", ["left shift"] = "Shift", ["left ctrl"] = "Ctrl",
                   ["right ctrl"] = "Ctrl", ["right shift"] = "Shift", z = "Ctrl+Z", y = "Ctrl+Y"}
    local missing = {}
    for k in pairs(keys) do
      local want = shown[k] or k:upper()
      local pat = want:gsub("%p", "%%%0")
      if want:match("^%w") then pat = "%f[%w]" .. pat .. "%f[%W]" end
      if not help:find(pat) then missing[#missing + 1] = k end
    end
    table.sort(missing)
    assert.are.same({}, missing)
    assert.is_true(next(keys) ~= nil)
    -- number keys and the mouse are there too
    assert.matches("1%-9, 0 material", help)
    assert.matches("wheel", help)
    assert.matches("right click", help)
  end)
end)
