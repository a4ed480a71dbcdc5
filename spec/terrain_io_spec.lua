-- read/write round trips, get, bounds, generation and change tracking.
local quarry = require "quarry"

local MATS = {"air", "rock", "grass", "water", "sand", "metal"}

-- Random data obeying the storage invariant (air <=> occupancy 0).
local function random_data(rng, nx, ny, nz)
  local d = {size = {nx, ny, nz}, materials = {}, occupancy = {}}
  for i = 1, nx * ny * nz do
    local m = MATS[rng(#MATS)]
    local o = m == "air" and 0 or rng(255) / 255
    d.materials[i], d.occupancy[i] = m, o
  end
  return d
end

describe("read and write", function()
  it("round-trip random boxes that cross chunk borders and negative coordinates", function()
    local w = quarry.world.new{}
    local T = w.terrain
    local rng = (function()
      local s = 12345
      return function(n) s = (s * 1103515245 + 12345) % 2147483648; return s % n + 1 end
    end)()
    for _ = 1, 12 do
      local min = {rng(120) - 60, rng(120) - 60, rng(120) - 60}
      local nx, ny, nz = rng(40), rng(40), rng(40)
      local d = random_data(rng, nx, ny, nz)
      T:write(min, d)
      local back = T:read(min, {min[1] + nx, min[2] + ny, min[3] + nz})
      assert.are.same(d.size, back.size)
      assert.are.same(d.materials, back.materials)
      for i = 1, #d.occupancy do
        assert.is_true(math.abs(d.occupancy[i] - back.occupancy[i]) < 1e-9)
      end
      -- x fastest, then y, then z: spot-check with get
      local x, y, z = nx - 1, ny - 1, math.floor(nz / 2)
      local m, o = T:get(min[1] + x, min[2] + y, min[3] + z)
      local i = x + nx * (y + ny * z) + 1
      assert.are.equal(d.materials[i], m)
      assert.are.equal(d.occupancy[i], o)
    end
  end)

  it("normalises voxels: air gets occupancy 0 and occupancy 0 becomes air", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:write({0, 0, 0}, {size = {2, 1, 1}, materials = {"air", "rock"}, occupancy = {0.5, 0}})
    assert.are.same({"air", 0}, {T:get(0, 0, 0)})
    assert.are.same({"air", 0}, {T:get(1, 0, 0)})
    assert.is_nil(T:bounds())
  end)

  it("writing air everywhere frees the chunks again", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_ball({0, 0, 0}, 10, "rock")
    assert.is_true(w:stats().chunks > 0)
    local d = T:read({-12, -12, -12}, {12, 12, 12})
    for i = 1, #d.materials do d.materials[i], d.occupancy[i] = "air", 0 end
    T:write({-12, -12, -12}, d)
    assert.are.equal(0, w:stats().chunks)
  end)

  it("empty boxes read as empty tables", function()
    local w = quarry.world.new{}
    local d = w.terrain:read({3, 3, 3}, {3, 9, 9})
    assert.are.same({0, 6, 6}, d.size)
    assert.are.equal(0, #d.materials)
  end)
end)

describe("storage", function()
  it("keeps uniform chunks without per-voxel memory and shrinks back after edits", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_region({0, 0, 0}, {64, 32, 32}, "rock")
    local s = w:stats()
    assert.are.equal(2, s.chunks)
    assert.are.equal(0, s.dense_chunks)
    T:carve_ball({10, 10, 10}, 3)
    assert.are.equal(1, w:stats().dense_chunks)
    T:fill_ball({10, 10, 10}, 5, "rock")
    assert.are.equal(0, w:stats().dense_chunks, "refilled chunk shrinks back to uniform")
  end)

  it("bounds are tight", function()
    local w = quarry.world.new{}
    local T = w.terrain
    assert.is_nil(T:bounds())
    T:fill_region({-5, 7, 33}, {-4, 9, 34}, "ice")
    T:fill_region({40, -70, 0}, {41, -69, 1}, "ice")
    local mn, mx = T:bounds()
    assert.are.same({-5, -70, 0}, {mn.x, mn.y, mn.z})
    assert.are.same({41, 9, 34}, {mx.x, mx.y, mx.z})
    T:clear()
    assert.is_nil(T:bounds())
  end)
end)

describe("generate", function()
  for _, kind in ipairs{"flat", "hills", "caves", "islands"} do
    it("makes a " .. kind .. " world inside its size, the same for the same seed", function()
      local a, b, c = quarry.world.new{}, quarry.world.new{threads = 0}, quarry.world.new{}
      a.terrain:generate{kind = kind, size = {70, 40, 50}, seed = 7}
      b.terrain:generate{kind = kind, size = {70, 40, 50}, seed = 7} -- other thread count
      c.terrain:generate{kind = kind, size = {70, 40, 50}, seed = 8}
      assert.are.equal(a:hash(), b:hash())
      if kind ~= "flat" then assert.are_not.equal(a:hash(), c:hash()) end
      local mn, mx = a.terrain:bounds()
      assert.is_true(mn.x >= 0 and mn.y >= 0 and mn.z >= 0)
      assert.is_true(mx.x <= 70 and mx.y <= 40 and mx.z <= 50)
      assert.are.equal(0, mn.y, "the floor row is solid")
      -- the bottom layer is solid everywhere (the world floor)
      local d = a.terrain:read({0, 0, 0}, {70, 1, 50})
      for i = 1, #d.materials do assert.are_not.equal("air", d.materials[i]) end
    end)
  end

  it("fills water below water_level where there is no ground", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:generate{kind = "flat", size = {32, 32, 32}, water_level = 25.5}
    assert.are.equal("rock", (T:get(5, 2, 5)))
    assert.are.equal("water", (T:get(5, 20, 5)))
    local m, o = T:get(5, 25, 5)
    assert.are.equal("water", m)
    assert.is_true(math.abs(o - 0.5) < 1 / 255, "top water voxel half full, got " .. o)
    assert.are.equal("air", (T:get(5, 26, 5)))
  end)

  it("replaces what was there", function()
    local w = quarry.world.new{}
    w.terrain:fill_ball({500, 500, 500}, 4, "rock")
    w.terrain:generate{kind = "flat", size = {16, 16, 16}}
    local _, mx = w.terrain:bounds()
    assert.is_true(mx.x <= 16)
  end)
end)

describe("change tracking", function()
  it("records each edit's box with increasing versions", function()
    local w = quarry.world.new{}
    local T = w.terrain
    local v0 = T:version()
    T:fill_ball({0, 0, 0}, 3, "rock")
    T:fill_region({10, 10, 10}, {12, 11, 13}, "dirt")
    local changes, now = T:changes_since(v0)
    assert.are.equal(2, #changes)
    assert.are.equal(v0 + 2, now)
    assert.is_true(changes[1].version < changes[2].version)
    local c = changes[2]
    assert.are.same({10, 10, 10, 12, 11, 13}, {c.min.x, c.min.y, c.min.z, c.max.x, c.max.y, c.max.z})
    -- the ball's box covers every voxel the ball touched
    local b = changes[1]
    for _, p in ipairs{{-3, 0, 0}, {2, 0, 0}, {0, -3, 0}, {0, 2, 0}} do
      assert.is_true(p[1] >= b.min.x and p[1] < b.max.x and p[2] >= b.min.y and p[2] < b.max.y)
    end
    local since_now = T:changes_since(now)
    assert.are.equal(0, #since_now)
  end)

  it("does not bump the version for edits that change nothing", function()
    local w = quarry.world.new{}
    local T = w.terrain
    local v = T:version()
    T:carve_ball({0, 0, 0}, 5) -- nothing to carve
    T:paint_ball({0, 0, 0}, 5, "rock") -- nothing to paint
    assert.are.equal(v, T:version())
  end)

  it("says so when the log no longer reaches back", function()
    local w = quarry.world.new{}
    local T = w.terrain
    for i = 1, 4100 do T:fill_region({i, 0, 0}, {i + 1, 1, 1}, "rock") end
    local changes, now = T:changes_since(0)
    assert.is_nil(changes)
    assert.are.equal(4100, now)
    assert.are.equal(4096, #T:changes_since(4))
  end)
end)
