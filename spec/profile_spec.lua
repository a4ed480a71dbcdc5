-- The frame profile in world:stats() (engine/world/world.h, "frame profile"):
-- ms_* per subsystem over the frame that the last world:step call ended.
-- Answers come from what the script did in the frame: a subsystem the frame
-- never ran reads exactly 0 (its timer never started) and one it ran reads
-- > 0; the parts fit inside the whole; every timed interval fits inside an
-- outer interval the spec measures with the host's clock or `date`; and the
-- timers change nothing simulated (equal hashes with and without reading
-- them). No figure is compared with a speed.
local quarry = require "quarry"

local DT = 1 / 60
local FIELDS = {"ms_step", "ms_broadphase", "ms_narrowphase", "ms_solver", "ms_fracture", "ms_detach", "ms_edit",
                "ms_raycast", "ms_mesh", "ms_engine", "ms_lua"}

local function wall_ms()
  local p = assert(io.popen("date +%s%N"))
  local ns = tonumber(p:read("l"))
  p:close()
  return ns / 1e6
end

local function hills(def)
  local w = quarry.world.new(def or {threads = 0})
  w.terrain:generate{kind = "hills", size = {48, 24, 48}, seed = 5}
  return w
end

describe("world:stats() frame profile", function()
  it("has every ms_ field, a finite number >= 0, all 0 before the first step", function()
    local w = hills()
    local s = w:stats()
    for _, k in ipairs(FIELDS) do
      assert.are.equal("number", type(s[k]), k)
      assert.are.equal(0, s[k], k)
    end
    w:step(DT)
    s = w:stats()
    for _, k in ipairs(FIELDS) do
      assert.is_true(s[k] >= 0 and s[k] < math.huge, k)
    end
  end)

  it("reads 0 for what the frame did not do and > 0 for what it did", function()
    local w = hills()
    w:spawn{shape = "box", size = 1, position = {24, 30, 24}}
    w:step(DT)
    -- A frame of only a step: no edits, rays, shatters, detaches or drawing.
    w:step(DT)
    local s = w:stats()
    assert.is_true(s.ms_step > 0)
    assert.are.equal(0, s.ms_raycast)
    assert.are.equal(0, s.ms_fracture)
    assert.are.equal(0, s.ms_detach) -- auto_detach is off
    assert.are.equal(0, s.ms_mesh)   -- nothing draws outside the host
    -- A frame with a ray, an edit and a shatter.
    assert.is_truthy(w:raycast({10, 40, 10}, {0, -1, 0}, 60))
    w.terrain:carve_ball({12, 10, 12}, 4)
    local box = w:spawn{shape = "box", size = 1, position = {30, 30, 30}}
    assert.are.equal(8, #assert(box:shatter{pieces = 8}))
    w:step(DT)
    s = w:stats()
    assert.is_true(s.ms_raycast > 0)
    assert.is_true(s.ms_edit > 0)
    assert.is_true(s.ms_fracture > 0)
    -- The next frame did none of it again.
    w:step(DT)
    s = w:stats()
    assert.are.equal(0, s.ms_raycast)
    assert.are.equal(0, s.ms_fracture)
  end)

  it("times the world's own shatters and auto_detach inside the step", function()
    quarry.material.define{name = "profile_glass", density = 2500, strength = 500, brittle = true}
    local w = quarry.world.new{threads = 0, auto_detach = true}
    local T = w.terrain
    T:fill_region({0, 0, 0}, {32, 4, 32}, "rock")
    T:fill_region({20, 4, 20}, {24, 14, 24}, "wood")
    w:spawn{shape = "box", size = 0.5, material = "profile_glass", position = {8, 7.25, 8}}
    local broke, detached = false, false
    w:on("shatter", function() broke = true end)
    w:on("detach", function() detached = true end)
    local frac, det = 0, 0
    for i = 1, 120 do
      if i == 2 then T:fill_region({20, 4, 20}, {24, 5, 24}, "air") end -- cut the pillar loose
      broke, detached = false, false
      w:step(DT)
      local s = w:stats()
      assert.is_true(s.ms_detach > 0, "auto_detach runs in every step")
      if detached then det = det + 1 end
      if broke then
        frac = frac + 1
        assert.is_true(s.ms_fracture > 0, "a shatter in the step is timed")
      else
        assert.are.equal(0, s.ms_fracture)
      end
    end
    assert.are.equal(1, frac)
    assert.are.equal(1, det)
  end)

  it("fits the parts inside the whole and the whole inside an outer clock", function()
    local w = hills{threads = 1}
    for i = 0, 24 do
      w:spawn{shape = "sphere", radius = 0.5, position = {8 + (i % 5) * 7, 28, 8 + (i // 5) * 7}}
    end
    for _ = 1, 30 do
      local t0 = wall_ms()
      for r = 1, 20 do w:raycast({r * 2, 40, 20}, {0, -1, 0}, 60) end
      w.terrain:fill_ball({20, 12, 20}, 2, "dirt")
      w:step(DT)
      local outer = wall_ms() - t0
      local s = w:stats()
      local eps = 1e-6
      assert.is_true(s.ms_broadphase + s.ms_narrowphase + s.ms_solver <= s.ms_step + eps)
      assert.is_true(s.ms_step + s.ms_raycast <= s.ms_engine + eps)
      -- The frame began when the previous step ended, after t0 was taken
      -- for the previous iteration and before it is taken for this one; so
      -- this frame's engine time fits in this iteration's outer interval.
      assert.is_true(s.ms_engine <= outer + eps, string.format("%f > %f", s.ms_engine, outer))
    end
  end)

  it("counts script time between steps as ms_lua", function()
    local w = hills()
    local t0 = wall_ms() -- before the frame below begins (when this step ends)
    w:step(DT)
    local x = 0
    for i = 1, 2e6 do x = x + i % 7 end -- a busy script
    w:step(DT)
    local outer = wall_ms() - t0
    local s = w:stats()
    assert.is_true(x > 0)
    assert.is_true(s.ms_lua > 0)
    assert.is_true(s.ms_lua + s.ms_engine <= outer + 1e-6)
  end)

  it("changes nothing simulated: equal hashes whether it is read or not", function()
    local function run(read)
      local w = hills{threads = 1}
      for i = 0, 9 do w:spawn{shape = "box", size = 1, position = {10 + i * 3, 30, 20}} end
      for f = 1, 60 do
        w.terrain:carve_ball({10 + f % 30, 10, 20}, 1.5)
        w:raycast({f % 40 + 2, 40, 24}, {0, -1, 0}, 60)
        w:step(DT)
        if read then w:stats() end
      end
      return w:hash()
    end
    assert.are.equal(run(false), run(true))
  end)
end)

describe("scripts/hud.lua", function()
  it("formats the smoothed profile in one line", function()
    local hud = require "hud"
    local w = hills()
    w:step(DT)
    local line = hud.line(w)
    for _, f in ipairs(hud.FIELDS) do
      assert.matches(f[1] .. " %d+%.%d%d", line)
    end
    local p = hud.profile(w)
    assert.are.equal(w:stats().ms_step, p.ms_step) -- the first reading is taken as is
    hud.draw(w) -- nothing to draw on outside the host: no error
  end)
end)
