-- Scenario: a miner digs a tunnel through a rock hill, one carve_ball per
-- frame along a straight line. A ray along the tunnel's axis hits the rock
-- face right at the dig front while the tunnel is being dug, and passes
-- through once it is open; rays just outside the tunnel's radius still hit
-- the hill's face.
local scenario = require "scenario"

local Y, Z = 10.5, 16.5           -- tunnel axis (x from 8 to 40)
local X0, X1 = 8, 40              -- the hill's faces
local STEP, RADIUS = 0.5, 1.5     -- one carve every frame, STEP metres further on
local DIG_FRAMES = math.floor((X1 - X0 + 2 * RADIUS) / STEP) + 1

local function front(frame)       -- x of the dig front after `frame` carves: the last ball's far side
  return X0 - RADIUS + (frame - 1) * STEP + RADIUS
end

local function axis_ray(world)
  return world:raycast({0, Y, Z}, {1, 0, 0}, 100, {bodies = false})
end

describe("scenario: a tunnel is dug", function()
  it("lets a ray through that hit the rock before, hitting the dig front on the way", function()
    local inputs = {}
    for f = 1, DIG_FRAMES do
      inputs[f] = function(world) world.terrain:carve_ball({X0 - RADIUS + (f - 1) * STEP, Y, Z}, RADIUS) end
    end
    local fronts = {}
    local checks = {}
    for _, f in ipairs{10, 30, 50} do
      checks[f] = function(world)
        local hit = assert(axis_ray(world), "no hit at frame " .. f)
        fronts[#fronts + 1] = hit.position.x
        -- within a voxel of the front (the surface is a mesh over whole voxels)
        assert.is_true(math.abs(hit.position.x - front(f)) < 1,
                       ("frame %d: hit at x = %.2f, front at %.2f"):format(f, hit.position.x, front(f)))
        assert.are.equal("rock", hit.material)
      end
    end
    local before, before_side
    local _, world = scenario.run{
      setup = function(w)
        w.terrain:fill_region({0, 0, 0}, {48, 4, 32}, "dirt")     -- ground
        w.terrain:fill_region({X0, 4, 4}, {X1, 20, 28}, "rock")   -- the hill
        before = axis_ray(w)
        before_side = w:raycast({0, Y + RADIUS + 1, Z}, {1, 0, 0}, 100, {bodies = false})
      end,
      frames = DIG_FRAMES + 1,
      inputs = inputs,
      checks = checks,
    }
    assert.is_truthy(before, "the hill stops the ray before the dig")
    assert.is_true(math.abs(before.position.x - X0) < 0.05, "first hit at x = " .. before.position.x)
    -- the front moves forward by STEP per frame
    assert.is_true(fronts[1] < fronts[2] and fronts[2] < fronts[3], table.concat(fronts, " "))
    assert.is_true(math.abs((fronts[3] - fronts[1]) - 40 * STEP) < 1, ("fronts %.2f .. %.2f"):format(fronts[1], fronts[3]))
    local after = axis_ray(world)
    assert.is_nil(after, after and ("still hits at " .. tostring(after.position)))
    -- the tunnel is only as wide as it was dug: beside it the face is still there
    local side = world:raycast({0, Y + RADIUS + 1, Z}, {1, 0, 0}, 100, {bodies = false})
    assert.is_truthy(side)
    assert.is_true(math.abs(side.position.x - before_side.position.x) < 0.5,
                   ("beside the tunnel: x = %.3f, before the dig %.3f"):format(side.position.x, before_side.position.x))
    -- a ball rolled into the tunnel comes out of the far side
    local ball = world:spawn{shape = "sphere", radius = 0.4, position = {X0 + 1, Y - RADIUS + 0.5, Z}, velocity = {8, 0, 0}}
    for _ = 1, 420 do world:step(1 / 60) end
    assert.is_true(ball.position.x > X1, "the ball stopped at x = " .. ball.position.x)
  end)
end)
