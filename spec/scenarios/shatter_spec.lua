-- Scenario: a tower of glass bricks on a concrete slab is hit by a heavy
-- metal ball. Glass is brittle, so the impact breaks bricks into fragment
-- bodies: the body count grows while the glass keeps its mass (the sum over
-- every body but the ball, before and after), and each "shatter" event's
-- fragments weigh what their brick weighed.
local scenario = require "scenario"

local BRICK = {0.6, 0.3, 0.3}

local function glass_mass(world)
  local sum, n = 0, 0
  for _, b in ipairs(world:bodies()) do
    if b.name ~= "ball" then
      sum, n = sum + b.mass, n + 1
    end
  end
  return sum, n
end

describe("scenario: a glass tower is shattered by a heavy ball", function()
  it("breaks into more bodies and keeps the glass's mass", function()
    local mass0, count0, events = nil, nil, {}
    -- a broken body is gone by the time the event comes: remember masses as
    -- {body, mass} pairs (bodies compare with ==)
    local known = {}
    local function mass_of(body)
      for _, k in ipairs(known) do if k[1] == body then return k[2] end end
    end
    local _, world = scenario.run{
      setup = function(w)
        w.terrain:fill_region({0, 0, 0}, {40, 8, 40}, "concrete")
        for layer = 0, 3 do
          for i = 0, 1 do
            for j = 0, 1 do
              local b = w:spawn{shape = "box", size = BRICK, material = "glass",
                                position = {20 + i * 0.62, 8.15 + layer * 0.3, 20 + j * 0.31}}
              known[#known + 1] = {b, b.mass}
            end
          end
        end
        w:on("shatter", function(body, fragments)
          local sum = 0
          for _, f in ipairs(fragments) do
            sum = sum + f.mass
            known[#known + 1] = {f, f.mass}
          end
          events[#events + 1] = {before = assert(mass_of(body), "a body never seen broke"), after = sum,
                                 pieces = #fragments}
        end)
      end,
      frames = 60,
      checks = {
        [20] = function(w)
          -- the tower has settled unbroken: resting loads never break glass
          assert.are.equal(0, #events)
          mass0, count0 = glass_mass(w)
          assert.are.equal(16, count0)
        end,
      },
      inputs = {
        [21] = function(w)
          w:spawn{shape = "sphere", radius = 0.5, material = "metal", name = "ball",
                  position = {17, 8.75, 20.3}, velocity = {18, 0, 0}}
        end,
      },
    }
    local mass1, count1 = glass_mass(world)
    assert.is_true(#events >= 2, #events .. " bricks broke")
    assert.is_true(count1 > count0 + #events, ("%d bodies of glass, %d before"):format(count1, count0))
    assert.is_true(math.abs(mass1 - mass0) <= 1e-6 * mass0, ("glass %.6f kg, before %.6f kg"):format(mass1, mass0))
    for i, e in ipairs(events) do
      assert.is_true(e.pieces >= 2)
      assert.is_true(math.abs(e.after - e.before) <= 1e-6 * e.before,
                     ("brick %d: %.6f kg of fragments from %.6f kg"):format(i, e.after, e.before))
    end
    -- an independent figure for the start: 16 bricks of glass at its density
    local density = require("quarry").material.get("glass").density
    local volume = BRICK[1] * BRICK[2] * BRICK[3]
    assert.is_true(math.abs(mass0 - 16 * volume * density) <= 1e-3 * mass0, "tower mass " .. mass0)
  end)
end)
