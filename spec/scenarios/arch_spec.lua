-- Scenario: a stone arch stands on two pillars; at frame 30 both pillars are
-- dug through. The span and what is left of the pillars above the cuts lose
-- their connection to the ground, come loose as one rigid body (auto_detach,
-- a "detach" event) and fall onto the ground. The body's mass is the mass
-- the terrain lost (occupancy x density read back with Terrain:read), and a
-- world without auto_detach that calls Terrain:detach_islands after the same
-- dig gets a body of the same mass.
local quarry = require "quarry"
local scenario = require "scenario"

-- Not brittle, so the arch lands in one piece and its fall can be followed.
quarry.material.define{name = "scenario_stone", density = 2200, friction = 0.7, restitution = 0.05,
                       color = {0.8, 0.7, 0.5}}
local DENSITY = 2200
local BOX_MIN, BOX_MAX = {10, 8, 18}, {38, 27, 28}   -- holds the arch and its pillars

local function build(w)
  local T = w.terrain
  T:fill_region({0, 0, 0}, {48, 8, 48}, "rock")
  T:fill_region({12, 8, 20}, {16, 22, 26}, "scenario_stone")  -- left pillar
  T:fill_region({32, 8, 20}, {36, 22, 26}, "scenario_stone")  -- right pillar
  T:fill_region({12, 22, 20}, {36, 26, 26}, "scenario_stone") -- the span
end

local function dig(w)
  w.terrain:carve_ball({14, 11, 23}, 3.2)
  w.terrain:carve_ball({34, 11, 23}, 3.2)
end

local function stone_mass(T)
  local d = T:read(BOX_MIN, BOX_MAX)
  local sum = 0
  for i, m in ipairs(d.materials) do
    if m == "scenario_stone" then sum = sum + d.occupancy[i] * DENSITY end
  end
  return sum
end

describe("scenario: an arch is undermined and falls", function()
  it("comes loose as one body when its pillars are dug through, and lands", function()
    local detached, mass_before_dig, mass_after_dig = {}, nil, nil
    local top0
    local _, world = scenario.run{
      world = {auto_detach = true},
      setup = function(w)
        build(w)
        w:on("detach", function(bodies)
          for _, b in ipairs(bodies) do
            detached[#detached + 1] = {body = b, frame = w:frame(), low = (b:mesh():bounds()).y}
          end
        end)
      end,
      frames = 240,
      inputs = {
        [30] = function(w)
          mass_before_dig = stone_mass(w.terrain)
          dig(w)
          mass_after_dig = stone_mass(w.terrain)
        end,
      },
      checks = {
        [29] = function(w)
          assert.are.equal(0, #detached, "nothing comes loose before the dig")
          assert.are.equal(0, #w:bodies())
          top0 = assert(w:raycast({24.5, 40, 23.5}, {0, -1, 0}, 100)).position.y
          assert.is_true(math.abs(top0 - 26) < 0.05, "top of the span at " .. top0)
        end,
      },
    }
    assert.are.equal(1, #detached, "one body comes loose")
    local arch = detached[1].body
    assert.is_true(detached[1].frame >= 30 and detached[1].frame <= 40, "loose at frame " .. detached[1].frame)
    assert.are.equal("scenario_stone", arch.material)
    -- the dig took something off, and everything else left the terrain in the body
    assert.is_true(mass_after_dig < mass_before_dig)
    local left = stone_mass(world.terrain)
    assert.is_true(math.abs(arch.mass - (mass_after_dig - left)) <= 1e-6 * arch.mass,
                   ("body %.1f kg, the terrain lost %.1f kg"):format(arch.mass, mass_after_dig - left))
    -- the span alone is 24 x 4 x 6 voxels
    assert.is_true(arch.mass > 24 * 4 * 6 * DENSITY)
    -- it fell: the span's top and the body's lowest point went down together
    -- by the same height, and it came to rest on what is left of the pillars
    local hit = assert(world:raycast({24.5, 40, 23.5}, {0, -1, 0}, 100))
    assert.are.equal(arch, hit.body)
    local low = (arch:mesh():bounds()).y
    local drop_top, drop_low = top0 - hit.position.y, detached[1].low - low
    assert.is_true(drop_top > 2, ("the top went down by %.2f m"):format(drop_top))
    assert.is_true(math.abs(drop_top - drop_low) < 0.3,
                   ("top down by %.2f m, bottom by %.2f m"):format(drop_top, drop_low))
    assert.is_true(low > 8 and low < 11, "lowest point at y = " .. low)
    assert.is_true(arch.velocity:length() < 0.5, "still moving at " .. tostring(arch.velocity))

    -- the same dig without auto_detach: nothing moves until detach_islands is called
    local w2 = quarry.world.new{}
    build(w2)
    dig(w2)
    for _ = 1, 10 do w2:step(1 / 60) end
    assert.are.equal(0, #w2:bodies())
    local bodies = w2.terrain:detach_islands()
    assert.are.equal(1, #bodies)
    assert.is_true(math.abs(bodies[1].mass - arch.mass) <= 1e-9 * arch.mass,
                   ("detach_islands: %.1f kg, auto_detach %.1f kg"):format(bodies[1].mass, arch.mass))
  end)
end)
