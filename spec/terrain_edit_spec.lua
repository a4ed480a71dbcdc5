-- Shape edits against brute-force models (spec/support/model.lua).
local quarry = require "quarry"
local model = require "support.model"

local function each_voxel(min, max, fn)
  for z = min[3], max[3] - 1 do
    for y = min[2], max[2] - 1 do
      for x = min[1], max[1] - 1 do fn(x, y, z) end
    end
  end
end

-- Compares every voxel of a box (one voxel larger than the shape on each
-- side) with the model's expected (material, occupancy).
local function expect_box(T, min, max, expected)
  local mismatches = 0
  local first
  each_voxel(min, max, function(x, y, z)
    local mat, occ = T:get(x, y, z)
    local emat, eocc = expected(x, y, z)
    if mat ~= emat or math.abs(occ - eocc) > 0.5 / 255 then
      mismatches = mismatches + 1
      first = first or string.format("(%d,%d,%d): got %s %.4f, want %s %.4f", x, y, z, mat, occ, emat, eocc)
    end
  end)
  assert.are.equal(0, mismatches, first)
end

local function filled(dist, mat)
  return function(x, y, z)
    local c = model.q8(model.coverage(dist, x, y, z))
    if c == 0 then return "air", 0 end
    return mat, c
  end
end

describe("fill_ball", function()
  it("writes exactly the modelled occupancy into every voxel", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_ball({10.3, -4.6, 31.9}, 5.5, "rock") -- crosses chunk borders and negative coords
    expect_box(T, {3, -12, 24}, {18, 3, 40}, filled(model.ball_distance(10.3, -4.6, 31.9, 5.5), "rock"))
  end)

  it("has occupancy that falls monotonically across the boundary", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_ball({0, 0, 0}, 9, "rock")
    for _, dir in ipairs{{1, 0, 0}, {0, 1, 0}, {0, 0, -1}, {1, 1, 0}, {1, 1, 1}} do
      local last = math.huge
      for s = 0, 14 do
        local x, y, z = math.floor(dir[1] * s), math.floor(dir[2] * s), math.floor(dir[3] * s)
        local _, occ = T:get(x, y, z)
        assert.is_true(occ <= last, "occupancy rose along direction at step " .. s)
        last = occ
      end
      assert.are.equal(0, last)
    end
  end)

  for _, r in ipairs{4, 6.3, 10, 17} do
    it("holds 4/3 pi r^3 of solid within 2% for r = " .. r, function()
      local w = quarry.world.new{}
      local T = w.terrain
      T:fill_ball({0.25, 0.5, -0.75}, r, "rock")
      local n = math.ceil(r) + 2
      local sum = model.occupancy_sum(T, {-n, -n, -n}, {n, n, n})
      local exact = 4 / 3 * math.pi * r ^ 3
      assert.is_true(math.abs(sum - exact) / exact < 0.02, ("sum %.2f vs %.2f"):format(sum, exact))
    end)
  end

  it("scales world positions by voxel_size", function()
    local w = quarry.world.new{voxel_size = 0.5}
    local T = w.terrain
    T:fill_ball({2, 2, 2}, 2, "dirt") -- voxel units: centre (4,4,4), radius 4
    expect_box(T, {-1, -1, -1}, {10, 10, 10}, filled(model.ball_distance(4, 4, 4, 4), "dirt"))
  end)

  it("keeps a denser existing material where the new coverage is lower", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_region({0, 0, 0}, {20, 10, 20}, "rock")
    T:fill_ball({10, 10, 10}, 4, "grass")
    -- inside the rock region: rock stays where full, grass only where coverage >= old occupancy
    assert.are.equal("grass", (T:get(10, 9, 10)))
    assert.are.equal("grass", (T:get(10, 12, 10)))
    local m, o = T:get(2, 2, 2)
    assert.are.same({"rock", 1}, {m, o})
  end)
end)

describe("carve_ball and paint_ball", function()
  it("carve lowers occupancy to 1 - coverage, turning empty voxels to air", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_region({-8, -8, -8}, {8, 8, 8}, "rock")
    T:carve_ball({0.5, 0.5, 0.5}, 4.2)
    local dist = model.ball_distance(0.5, 0.5, 0.5, 4.2)
    expect_box(T, {-7, -7, -7}, {7, 7, 7}, function(x, y, z)
      local o = model.q8(1 - model.q8(model.coverage(dist, x, y, z)))
      if o == 0 then return "air", 0 end
      return "rock", o
    end)
  end)

  it("paint changes material where coverage >= 1/2 and keeps occupancy", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_ball({0, 0, 0}, 6, "rock")
    local before = T:read({-7, -7, -7}, {7, 7, 7})
    T:paint_ball({2, 0, 0}, 3, "sand")
    local after = T:read({-7, -7, -7}, {7, 7, 7})
    local dist = model.ball_distance(2, 0, 0, 3)
    local i = 0
    each_voxel({-7, -7, -7}, {7, 7, 7}, function(x, y, z)
      i = i + 1
      assert.are.equal(before.occupancy[i], after.occupancy[i])
      local painted = before.materials[i] ~= "air" and model.q8(model.coverage(dist, x, y, z)) >= 128 / 255
      assert.are.equal(painted and "sand" or before.materials[i], after.materials[i])
    end)
  end)
end)

describe("fill_block", function()
  it("matches the model for an axis-aligned block", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_block({0.2, 30.7, -3}, {6, 3.5, 9}, "brick")
    expect_box(T, {-5, 27, -9}, {5, 35, 3}, filled(model.block_distance({0.2, 30.7, -3}, {6, 3.5, 9}), "brick"))
  end)

  it("matches the model for a rotated block and keeps its volume", function()
    local w = quarry.world.new{}
    local T = w.terrain
    local q = quarry.quat.from_euler(0.3, 0.7, -0.2)
    T:fill_block({1, 2, 3}, {10, 8, 12}, "metal", q)
    expect_box(T, {-10, -8, -7}, {12, 12, 13},
      filled(model.block_distance({1, 2, 3}, {10, 8, 12}, {q.w, q.x, q.y, q.z}), "metal"))
    local sum = model.occupancy_sum(T, {-10, -8, -7}, {12, 12, 13})
    assert.is_true(math.abs(sum - 960) / 960 < 0.02, "volume " .. sum)
  end)
end)

describe("fill_cylinder", function()
  it("matches the model and holds pi r^2 h within 2%", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_cylinder({0.5, 0, 0.5}, 6, 10, "concrete")
    local dist = model.cylinder_distance({0.5, 0, 0.5}, 6, 10)
    expect_box(T, {-8, -7, -8}, {9, 7, 9}, filled(dist, "concrete"))
    local sum = model.occupancy_sum(T, {-8, -7, -8}, {9, 7, 9})
    local exact = math.pi * 36 * 10
    assert.is_true(math.abs(sum - exact) / exact < 0.02, "volume " .. sum)
  end)
end)

describe("fill_region", function()
  it("fills exactly the half-open box, across chunks, including whole-chunk fast paths", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_region({-40, -3, 5}, {70, 2, 100}, "rock")
    local mn, mx = T:bounds()
    assert.are.same({-40, -3, 5, 70, 2, 100}, {mn.x, mn.y, mn.z, mx.x, mx.y, mx.z})
    assert.are.equal(110 * 5 * 95, model.occupancy_sum(T, {-41, -4, 4}, {71, 3, 101}))
    T:fill_region({-64, -64, -64}, {128, 64, 128}, "air")
    assert.is_nil(T:bounds())
    assert.are.equal(0, w:stats().chunks)
  end)
end)

describe("smooth_ball", function()
  -- Reference: occupancy moves towards the 3^3 mean by strength * coverage.
  it("matches a brute-force 3x3x3 blur inside the ball", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_block({0, 0, 0}, {8, 8, 8}, "rock")
    local lo, hi = {-8, -8, -8}, {8, 8, 8}
    local before = T:read(lo, hi)
    local n = 16
    local function occ_at(x, y, z)
      if x < lo[1] or y < lo[2] or z < lo[3] or x >= hi[1] or y >= hi[2] or z >= hi[3] then return 0 end
      return before.occupancy[(x - lo[1]) + n * ((y - lo[2]) + n * (z - lo[3])) + 1]
    end
    T:smooth_ball({4, 4, 4}, 3, 0.8)
    local dist = model.ball_distance(4, 4, 4, 3)
    expect_box(T, {0, 0, 0}, {8, 8, 8}, function(x, y, z)
      local cov = model.q8(model.coverage(dist, x, y, z))
      local o = occ_at(x, y, z)
      if cov > 0 then
        local s = 0
        for dz = -1, 1 do for dy = -1, 1 do for dx = -1, 1 do s = s + occ_at(x + dx, y + dy, z + dz) end end end
        local target = s / 27
        o = math.floor((o * 255 + (target * 255 - o * 255) * 0.8 * cov) + 0.5) / 255
      end
      if o <= 0 then return "air", 0 end
      return "rock", o
    end)
  end)
end)

describe("is_solid", function()
  it("is true inside a filled region and false outside, with the boundary on the voxel faces", function()
    local w = quarry.world.new{voxel_size = 2}
    local T = w.terrain
    T:fill_region({0, 0, 0}, {4, 4, 4}, "rock") -- world [0, 8)^3
    assert.is_true(T:is_solid({4, 4, 4}))
    assert.is_true(T:is_solid({7.9, 4, 4}))
    assert.is_false(T:is_solid({8.1, 4, 4}))
    assert.is_false(T:is_solid({-0.1, 4, 4}))
    T:fill_ball({20, 20, 20}, 3, "water")
    assert.is_false(T:is_solid({20, 20, 20}), "water is not solid")
  end)
end)
