-- The game prototypes (examples/marble.lua, examples/miner.lua) run headless,
-- under their autopilots or driven by --input events. Each run goes through
-- a small wrapper script that loads the game and measures, outside the
-- game's own logic, what the game claims: that the ball floats (how long it
-- stays clear of the pool's bottom, found with a ray through the water),
-- that the ore counted equals the ore the terrain lost (a whole-world
-- Terrain:read after load and at the end), that the keys move the ball and
-- the miner where they should, that each event the game prints agrees with
-- its summary, and that equal runs end with equal hashes.
local host = require "support.host"

-- Runs the host on `wrapper` (Lua source, written to a temporary file) for
-- `frames` frames, with the --input events `input` if given; returns
-- everything it printed.
local function run(wrapper, frames, input)
  local path, events = os.tmpname(), os.tmpname()
  host.write_file(path, wrapper)
  host.write_file(events, input or "")
  local pipe = assert(io.popen(("%s --headless --frames %d --input %s %s 2>&1"):format(host.shell_quote(host.exe),
                               frames, host.shell_quote(events), host.shell_quote(path))))
  local out = pipe:read("a")
  local ok = pipe:close()
  os.remove(path)
  os.remove(events)
  assert.is_true(ok, out)
  assert.is_nil(out:match("quarry: error"), out)
  return out
end

local function count(out, pattern)
  local n = 0
  for _ in out:gmatch(pattern) do n = n + 1 end
  return n
end

describe("examples/marble.lua", function()
  local out

  setup(function()
    host.need_exe()
    -- Counts the frames the ball spends in water with its underside more
    -- than 1 m above the pool's bottom (a ray that ignores water).
    out = run([[
local quarry = require "quarry"
dofile("examples/marble.lua")
local update, afloat = quarry.update, 0
quarry.update = function(dt)
  update(dt)
  local p = ball.position
  local _, _, wet = world:overlap_sphere(p, 0.5, {bodies = false})
  if wet then
    local floor = world:raycast(p, {0, -1, 0}, 20, {bodies = false, water = false})
    if floor and p.y - 0.5 - floor.position.y > 1 then afloat = afloat + 1 end
  end
end
local quit = quarry.quit
quarry.quit = function()
  quit()
  print(string.format("check: afloat %d frames, bodies %d", afloat, #world:bodies()))
end
]], 1680)
  end)

  it("runs headless: the autopilot passes checkpoint 1 and breaks a glass pane", function()
    assert(out, "the game did not run (see the setup's error)")
    assert.matches("marble: [%d.]+ s, checkpoint 1\n", out)
    local broken = count(out, "a glass pane broke into %d+ pieces")
    assert.is_true(broken >= 1, out)
    assert.are.equal(broken, tonumber(out:match("(%d+) panes broken")), out)
  end)

  it("passes the checkpoints in order, crosses the pool afloat and wins", function()
    assert(out, "the game did not run (see the setup's error)")
    local last = -1
    for i = 1, 3 do
      local t = tonumber(out:match("marble: ([%d.]+) s, checkpoint " .. i .. "\n"))
      assert.is_truthy(t, "checkpoint " .. i .. "\n" .. out)
      assert.is_true(t > last, out)
      last = t
    end
    local finish = tonumber(out:match("goal! the course took ([%d.]+) s"))
    assert.is_true(finish and finish > last, out)
    assert.matches("checkpoints 3/3, 2 panes broken, floated, finished", out)
    -- Floating, measured outside the game: frames in water more than 1 m
    -- above the bottom of the 3 m deep pool. A ball that sinks (try rock)
    -- spends under a second there on the way down, then rolls along the bottom.
    local afloat = tonumber(out:match("check: afloat (%d+) frames"))
    assert.is_true(afloat > 120, out)
    -- Shards are swept 3 s after they break: only the ball is left.
    assert.matches("bodies 1\n", out)
  end)

  it("rolls where the keys say once a key is pressed (the autopilot stops)", function()
    host.need_exe()
    -- W held for 4 s from the start: the camera looks down the first leg
    -- (+x), so the ball rolls straight along it, through checkpoint 1 at
    -- x = 28 and the pane at x = 36; then nothing for 6 s, in which the
    -- autopilot would have turned the corner at x = 44 and broken the
    -- second pane.
    local keys = run([[
local quarry = require "quarry"
dofile("examples/marble.lua")
local quit = quarry.quit
quarry.quit = function()
  quit()
  print(string.format("check: ball %.2f %.2f %.2f", ball.position.x, ball.position.y, ball.position.z))
end
]], 600, "0 key down w\n240 key up w\n")
    assert.matches("checkpoint 1\n", keys)
    assert.matches("a glass pane broke", keys)
    local x, y, z = keys:match("check: ball ([%-%d.]+) ([%-%d.]+) ([%-%d.]+)")
    x, y, z = tonumber(x), tonumber(y), tonumber(z)
    assert.is_true(x > 30 and x < 47, keys)
    assert.is_true(math.abs(z - 8) < 1.5, keys)
    assert.is_nil(keys:match("checkpoint 2"), keys)
    assert.matches("1 panes broken", keys)
  end)
end)

describe("examples/miner.lua", function()
  -- The wrapper counts the ore in the whole world after load and at quit.
  local wrapper = [[
local quarry = require "quarry"
dofile("examples/miner.lua")
local function all_ore()
  local d = world.terrain:read({0, 0, 0}, {64, 32, 64})
  local n = 0
  for i, m in ipairs(d.materials) do
    if m == "ore" then n = n + d.occupancy[i] end
  end
  return n
end
local load, start = quarry.load
quarry.load = function(args)
  load(args)
  start = all_ore()
end
local quit = quarry.quit
quarry.quit = function()
  quit()
  print(string.format("check: start %.6f lost %.6f counted %.6f", start, start - all_ore(), ore))
end
]]

  it("runs headless: the autopilot collects ore, a ledge comes loose and costs a life", function()
    host.need_exe()
    local out = run(wrapper, 900)
    local ore = tonumber(out:match("miner: 900 frames, (%d+) ore"))
    assert.is_true(ore and ore >= 20, out)
    local loose = count(out, "t of rock came loose")
    assert.is_true(loose >= 1, out)
    assert.matches(loose .. " rocks came loose", out)
    assert.matches("hit by a falling rock at [%d.]+ m/s! 2 lives left", out)
    assert.matches("2 lives left, hash", out)
    -- The detached ledge took part of its ore seam with it: the terrain lost
    -- at least what the miner counted.
    local _, lost, counted = out:match("check: start ([%d.]+) lost ([%d.]+) counted ([%d.]+)")
    assert.is_true(tonumber(lost) >= tonumber(counted) - 1e-6, out)
  end)

  it("counts exactly the ore its digs took out of the terrain", function()
    host.need_exe()
    -- 420 frames: the veins are dug, the ledge still holds.
    local out = run(wrapper, 420)
    assert.matches("0 rocks came loose", out)
    local start, lost, counted = out:match("check: start ([%d.]+) lost ([%d.]+) counted ([%d.]+)")
    assert.is_true(tonumber(start) > 0, out)
    assert.is_true(tonumber(counted) > 10, out)
    assert.is_true(math.abs(tonumber(lost) - tonumber(counted)) < 1e-6, out)
  end)

  it("walks and digs where the player says once a key is pressed", function()
    host.need_exe()
    -- W for 1 s walks the miner 4 m towards the cliff (from z = 34); a click
    -- at the middle of the screen then digs once, where the camera looks.
    local out = run([[
local quarry = require "quarry"
dofile("examples/miner.lua")
local quit = quarry.quit
quarry.quit = function()
  quit()
  print(string.format("check: miner %.2f %.2f", miner.position.x, miner.position.z))
end
]], 120, "0 key down w\n60 key up w\n80 mouse down 640 360 1\n81 mouse up 640 360 1\n")
    assert.matches("in 1 digs", out)
    local x, z = out:match("check: miner ([%-%d.]+) ([%-%d.]+)")
    assert.is_true(math.abs(tonumber(x) - 31) < 1e-6, out)
    assert.is_true(math.abs(tonumber(z) - 38) < 0.1, out)
  end)

  it("plays the same way twice (equal hashes)", function()
    host.need_exe()
    local a = run("dofile('examples/miner.lua')", 600):match("hash (%x+)")
    local b = run("dofile('examples/miner.lua')", 600):match("hash (%x+)")
    assert.is_truthy(a)
    assert.are.equal(a, b)
  end)
end)
