-- Scenario: a ball rolls into a stack of boxes while a small arch waits to be
-- undermined. Run straight through, and again with a save and load in the
-- middle (scenario.run's save_at), while bodies are still moving and before
-- the dig: the final hashes match, so the world file holds everything the
-- rest of the run depends on (voxels, bodies and their velocities, the
-- clock, the auto_detach flag).
local quarry = require "quarry"
local scenario = require "scenario"

local FRAMES, SAVE_AT, DIG_AT = 180, 60, 90

local function describe_run(extra)
  local log = {detached = 0}
  local desc = {
    world = {auto_detach = true, seed = 4},
    setup = function(w)
      local T = w.terrain
      T:fill_region({0, 0, 0}, {48, 4, 32}, "rock")
      T:fill_region({30, 4, 10}, {32, 10, 13}, "brick")    -- a small arch
      T:fill_region({38, 4, 10}, {40, 10, 13}, "brick")
      T:fill_region({30, 10, 10}, {40, 12, 13}, "brick")
      for i = 0, 3 do
        w:spawn{shape = "box", size = 1, material = "wood", position = {16, 4.5 + i * 1.01, 16}}
      end
      w:spawn{shape = "sphere", radius = 0.5, material = "metal", name = "ball",
              position = {6, 4.5, 16.2}, velocity = {7, 0, 0}}
      w:on("detach", function(bodies) log.detached = log.detached + #bodies end)
    end,
    frames = FRAMES,
    inputs = {
      [DIG_AT] = function(w)
        w.terrain:carve_ball({31, 6, 11.5}, 2)
        w.terrain:carve_ball({39, 6, 11.5}, 2)
      end,
      [DIG_AT + 10] = function(w)
        w:spawn{shape = "capsule", radius = 0.3, height = 1, position = {20, 8, 20}, angular_velocity = {0, 0, 3}}
      end,
    },
    checks = {
      [SAVE_AT] = function(w)
        local fastest = 0
        for _, b in ipairs(w:bodies()) do fastest = math.max(fastest, b.velocity:length()) end
        log.fastest = fastest
        log.hash_at_save = w:hash()
      end,
    },
  }
  for k, v in pairs(extra or {}) do desc[k] = v end
  return desc, log
end

describe("scenario: save and load in the middle", function()
  it("ends with the same hash as a run straight through", function()
    local straight_desc, straight = describe_run()
    local h1, w1 = scenario.run(straight_desc)
    assert.are.equal(1, straight.detached, "the dig cut the arch's span loose")
    assert.is_true(straight.fastest > 0.5, "bodies were moving at the save: " .. straight.fastest)

    local path = os.tmpname()
    os.remove(path)
    path = path .. ".qw"
    local resumed_desc, resumed = describe_run{save_at = SAVE_AT, save_path = path}
    resumed_desc.on_load = function(w, frame)
      resumed.loaded_frame = frame
      w:on("detach", function(bodies) resumed.detached = resumed.detached + #bodies end)
    end
    local h2, w2 = scenario.run(resumed_desc)
    assert.are.equal(SAVE_AT, resumed.loaded_frame)
    assert.are.equal(1, resumed.detached, "the loaded world kept auto_detach")
    assert.are_not.equal(straight.hash_at_save, h1, "the world changed after the save")
    assert.are.equal(straight.hash_at_save, resumed.hash_at_save)
    assert.are.equal(h1, h2)
    assert.are.equal(#w1:bodies(), #w2:bodies())
    assert.are.equal(FRAMES, w2:frame())

    -- the file is the world at the save
    local back = assert(quarry.world.load(path))
    assert.are.equal(SAVE_AT, back:frame())
    assert.are.equal(straight.hash_at_save, back:hash())
    os.remove(path)
  end)

  it("can save before the first frame", function()
    local a = scenario.run((describe_run()))
    local b = scenario.run((describe_run{save_at = 0}))
    assert.are.equal(a, b)
  end)

  it("rejects a save_at outside the run", function()
    assert.has_error(function() scenario.run{frames = 10, save_at = 11} end)
    assert.has_error(function() scenario.run{frames = 10, save_at = 1.5} end)
    assert.has_error(function() scenario.run{frames = 10, save_at = 2, on_load = 3} end)
  end)
end)
