-- World clock, stats, hashing, determinism and the scenario runner.
local quarry = require "quarry"
local scenario = require "scenario"

describe("world:step", function()
  it("runs whole fixed steps from an accumulator", function()
    local w = quarry.world.new{step = 1 / 60}
    local total = 0
    for _ = 1, 60 do total = total + w:step(1 / 60) end
    assert.are.equal(60, total)
    assert.are.equal(60, w:frame())
    assert.is_true(math.abs(w:time() - 1) < 1e-12)
    assert.are.equal(0, w:step(0.004))
    assert.are.equal(0, w:step(0.004))
    assert.are.equal(1, w:step(0.01)) -- 0.018 accumulated
    assert.are.equal(0, w:step(0))
  end)

  it("caps the steps of one call and drops the backlog", function()
    local w = quarry.world.new{step = 1 / 60}
    assert.are.equal(240, w:step(3600))
    assert.are.equal(0, w:step(0))
  end)
end)

describe("world:stats", function()
  it("reports chunks and memory that follow the content", function()
    local w = quarry.world.new{}
    local s0 = w:stats()
    assert.are.equal(0, s0.chunks)
    assert.are.equal(0, s0.bodies)
    w.terrain:fill_ball({0, 0, 0}, 20, "rock")
    local s1 = w:stats()
    assert.is_true(s1.chunks >= 8 and s1.dense_chunks >= 8)
    assert.is_true(s1.memory >= s1.dense_chunks * 32 * 32 * 32 * 2)
  end)
end)

describe("world:hash", function()
  it("depends on content only, not on edit history", function()
    local a, b = quarry.world.new{}, quarry.world.new{}
    a.terrain:fill_ball({0, 0, 0}, 6, "rock")
    a.terrain:fill_ball({40, 0, 0}, 6, "dirt")
    b.terrain:fill_ball({40, 0, 0}, 6, "dirt")
    b.terrain:fill_region({-100, -100, -100}, {-90, -90, -90}, "metal")
    b.terrain:fill_ball({0, 0, 0}, 6, "rock")
    assert.are_not.equal(a:hash(), b:hash())
    b.terrain:fill_region({-100, -100, -100}, {-90, -90, -90}, "air")
    assert.are.equal(a:hash(), b:hash())
  end)

  it("changes when one voxel changes", function()
    local w = quarry.world.new{}
    w.terrain:generate{kind = "hills", size = {64, 32, 64}}
    local h = w:hash()
    local m, o = w.terrain:get(10, 3, 10)
    w.terrain:write({10, 3, 10}, {size = {1, 1, 1}, materials = {m}, occupancy = {o - 1 / 255}})
    assert.are_not.equal(h, w:hash())
  end)
end)

describe("determinism", function()
  local function script(world)
    local T = world.terrain
    T:generate{kind = "caves", size = {96, 48, 96}, seed = 11}
    for i = 1, 30 do
      T:carve_ball({i * 3, 20 + i % 7, 40}, 2 + i % 3)
      T:fill_block({i * 2, 40, i}, {3, 2, 4}, "brick", quarry.quat.from_euler(i, 0, 0))
      T:smooth_ball({i * 3, 22, 40}, 3, 0.3)
      T:paint_ball({i, 30, i}, 4, "snow")
    end
  end

  it("gives equal hashes for the same generate and edits in two worlds", function()
    local a, b = quarry.world.new{}, quarry.world.new{threads = 0}
    script(a)
    script(b)
    assert.are.equal(a:hash(), b:hash())
  end)

  it("gives equal hashes for two runs of a scenario", function()
    local desc = {
      world = {seed = 5},
      setup = function(world) world.terrain:generate{kind = "flat", size = {64, 32, 64}} end,
      frames = 30,
      inputs = {[5] = function(world) world.terrain:carve_ball({10, 16, 10}, 4) end},
      checks = {[30] = function(world) assert(world:frame() == 30) end},
    }
    local h1 = scenario.run(desc)
    local h2 = scenario.run(desc)
    assert.are.equal(h1, h2)
    local other = scenario.run{world = {seed = 5}, setup = desc.setup, frames = 30}
    assert.are_not.equal(h1, other)
  end)
end)

describe("materials", function()
  it("lists the built-ins of the API with their properties", function()
    local names = quarry.material.list()
    for _, n in ipairs{"air", "water", "rock", "grass", "dirt", "sand", "snow", "ice", "glass",
                       "wood", "metal", "concrete", "brick"} do
      local found = false
      for _, m in ipairs(names) do found = found or m == n end
      assert.is_true(found, n)
    end
    assert.is_true(quarry.material.get("water").liquid)
    assert.is_true(quarry.material.get("glass").brittle)
    assert.is_true(quarry.material.get("metal").density > quarry.material.get("wood").density)
  end)

  it("defines and redefines user materials", function()
    local m = quarry.material.define{name = "world_spec_lava", density = 3100, liquid = true,
                                     color = {1, 0.3, 0}}
    assert.are.equal(3100, m.density)
    assert.is_true(m.liquid)
    local again = quarry.material.define{name = "world_spec_lava", density = 3000}
    assert.are.equal(3000, again.density)
    local w = quarry.world.new{}
    w.terrain:fill_ball({0, 0, 0}, 3, "world_spec_lava")
    assert.are.equal("world_spec_lava", (w.terrain:get(0, 0, 0)))
  end)
end)
