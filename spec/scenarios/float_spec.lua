-- Scenario: balls roll along a rock shelf, drop into a pool and float. At
-- rest a floating ball's submerged cap holds the fraction of its volume
-- given by Archimedes (body density / water density); the draft that gives
-- that cap is found here by bisection on the cap's closed-form volume.
local quarry = require "quarry"
local scenario = require "scenario"

local R = 0.5
local SURFACE = 7        -- top of the water voxels (y = 2..7)

-- Draft d (depth of the lowest point below the surface) at which a sphere's
-- cap of height d holds `fraction` of the sphere: pi d^2 (3R - d) / 3.
local function archimedes_draft(fraction)
  local lo, hi = 0, 2 * R
  for _ = 1, 60 do
    local d = (lo + hi) / 2
    local cap = math.pi * d * d * (3 * R - d) / 3
    if cap / (4 / 3 * math.pi * R ^ 3) < fraction then lo = d else hi = d end
  end
  return (lo + hi) / 2
end

describe("scenario: a ball rolls into water", function()
  it("floats at the draft Archimedes gives for its density (wood, and a lighter pine at half the density of water)", function()
    quarry.material.define{name = "scenario_pine", density = 500, friction = 0.6, restitution = 0.2}
    local balls, water_density = {}, quarry.material.get("water").density
    local hash, world = scenario.run{
      setup = function(w)
        local T = w.terrain
        T:fill_region({0, 0, 0}, {64, 8, 32}, "rock")   -- a shelf, top at y = 8
        T:fill_region({32, 2, 4}, {60, 8, 28}, "air")   -- a basin cut into it
        T:fill_region({32, 2, 4}, {60, SURFACE, 28}, "water")
        for i, material in ipairs{"wood", "scenario_pine"} do
          balls[i] = w:spawn{shape = "sphere", radius = R, material = material, name = material,
                             position = {20, 8 + R + 0.1, 10 + 10 * (i - 1)}, velocity = {4, 0, 0}}
        end
      end,
      frames = 1500,
      checks = {
        [120] = function()
          for _, b in ipairs(balls) do
            -- still on the shelf, rolling: no slip means spin = speed / R
            assert.is_true(b.position.x < 32 and b.position.y > 8, tostring(b.position))
            local spin = b.angular_velocity:length()
            assert.is_true(math.abs(spin * R - b.velocity:length()) < 0.05 * b.velocity:length(),
                           ("spin %.3f rad/s at %.3f m/s"):format(spin, b.velocity:length()))
          end
        end,
      },
    }
    local surface = assert(world:raycast({45.3, 20, 16.3}, {0, -1, 0}, 50,
                                         {terrain = false, water = true, bodies = false})).position.y
    assert.is_true(math.abs(surface - SURFACE) < 0.05, "water surface at " .. surface)
    for _, b in ipairs(balls) do
      local ratio = quarry.material.get(b.material).density / water_density
      local want = archimedes_draft(ratio)
      local draft = surface - (b.position.y - R)
      assert.is_true(b.position.x > 32 and b.position.x < 60, b.name .. " is not in the pool: " .. tostring(b.position))
      assert.is_true(math.abs(draft - want) <= 0.1 * want,
                     ("%s: draft %.3f m, Archimedes %.3f m"):format(b.name, draft, want))
      assert.is_true(b.velocity:length() < 0.05, b.name .. " still moving at " .. tostring(b.velocity))
    end
    -- the lighter ball floats higher
    assert.is_true(balls[2].position.y > balls[1].position.y + 0.1)
    assert.are.equal(hash, world:hash())
  end)
end)
