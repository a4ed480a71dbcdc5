-- Terrain queries against brute force: rays against every triangle of
-- terrain:mesh (Mesh:raycast tests all of them, no tree, no chunks), overlaps
-- against point-triangle distances computed here, the broadphase against a
-- voxel scan.
local quarry = require "quarry"

local function rng(seed)
  local s = seed
  return function() s = (s * 1103515245 + 12345) % 2147483648; return s / 2147483648 end
end

local function cave_world(voxel_size)
  local w = quarry.world.new{voxel_size = voxel_size}
  w.terrain:generate{kind = "caves", size = {48, 40, 48}, seed = 5, water_level = 14}
  return w
end

describe("world:raycast", function()
  it("agrees with brute force over every triangle on 10,000 rays", function()
    local w = cave_world(1)
    local T = w.terrain
    local mesh = T:mesh({-3, -3, -3}, {51, 43, 51})
    local r = rng(42)
    local kinds = {"short", "long", "axis", "grazing", "in_cave", "in_solid"}
    local mismatches, hits, tried = 0, 0, 0
    local first
    for i = 1, 10000 do
      local kind = kinds[i % #kinds + 1]
      local o = quarry.vec3(r() * 54 - 3, r() * 46 - 3, r() * 54 - 3)
      local d = quarry.vec3(r() - 0.5, r() - 0.5, r() - 0.5)
      local len = 80
      if kind == "short" then len = 4
      elseif kind == "axis" then
        local a = i % 3
        d = quarry.vec3(a == 0 and 1 or 0, a == 1 and -1 or 0, a == 2 and 1 or 0)
      elseif kind == "grazing" then
        -- shallow, not parallel: a float ulp of position error moves a hit by
        -- ulp / slope along the ray, so slopes under ~0.05 exceed 1e-4
        d = quarry.vec3(r() - 0.5, (r() < 0.5 and -1 or 1) * (0.05 + r() * 0.05), r() - 0.5)
      elseif kind == "in_cave" or kind == "in_solid" then
        -- pick an origin on the wanted side of the surface
        for _ = 1, 50 do
          if T:is_solid(o) == (kind == "in_solid") then break end
          o = quarry.vec3(r() * 48, r() * 40, r() * 48)
        end
      end
      tried = tried + 1
      local a = w:raycast(o, d, len)
      local b = mesh:raycast(o, d, len)
      if (a == nil) ~= (b == nil) or (a and math.abs(a.distance - b.distance) > 1e-4) then
        mismatches = mismatches + 1
        first = first or ("%s ray from %s dir %s: %s vs brute %s"):format(kind, tostring(o), tostring(d),
          a and a.distance or "miss", b and b.distance or "miss")
      end
      if a then
        hits = hits + 1
        assert.is_true(a.normal:dot(d) <= 1e-9, "normal must face the ray's origin")
        assert.is_true(math.abs(a.normal:length() - 1) < 1e-6)
        assert.is_true(((o + d:normalized() * a.distance) - a.position):length() < 1e-6)
        assert.is_true(a.terrain)
      end
    end
    assert.are.equal(0, mismatches, first)
    assert.is_true(hits > 3000 and hits < tried, "hits " .. hits)
  end)

  it("scales with voxel_size and reports materials", function()
    local w = quarry.world.new{voxel_size = 0.25}
    w.terrain:fill_region({0, 0, 0}, {40, 8, 40}, "sand") -- top at y = 2 m
    local hit = w:raycast({5, 10, 5}, {0, -1, 0}, 20)
    assert.is_true(math.abs(hit.distance - 8) < 1e-5)
    assert.are.equal("sand", hit.material)
    assert.is_true(hit.normal == quarry.vec3(0, 1, 0))
    assert.is_nil(w:raycast({5, 10, 5}, {0, -1, 0}, 7.9))
    assert.is_nil(w:raycast({5, 10, 5}, {0, 1, 0}, 100))
  end)

  it("sees an edit on the very next query", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_region({-20, 0, -20}, {20, 10, 20}, "rock")
    assert.is_true(math.abs(w:raycast({0.3, 30, 0.2}, {0, -1, 0}, 100).distance - 20) < 1e-5)
    T:carve_ball({0, 10, 0}, 4)
    local h = w:raycast({0.3, 30, 0.2}, {0, -1, 0}, 100)
    assert.is_true(h.distance > 23, "the crater is seen: " .. h.distance)
    T:fill_block({0, 20, 0}, {4, 2, 4}, "metal")
    h = w:raycast({0.3, 30, 0.2}, {0, -1, 0}, 100)
    assert.is_true(math.abs(h.distance - 9) < 1e-5)
    assert.are.equal("metal", h.material)
    T:clear()
    assert.is_nil(w:raycast({0.3, 30, 0.2}, {0, -1, 0}, 100))
  end)

  it("hits water only when asked", function()
    local w = quarry.world.new{}
    w.terrain:generate{kind = "flat", size = {32, 32, 32}, water_level = 24.5}
    local dry = w:raycast({10, 40, 10}, {0, -1, 0}, 100)
    assert.are.equal("rock", dry.material == "rock" and "rock" or dry.material ~= "water" and "rock")
    assert.is_true(math.abs(dry.distance - 24) < 1e-4)
    local wet = w:raycast({10, 40, 10}, {0, -1, 0}, 100, {water = true})
    assert.are.equal("water", wet.material)
    assert.is_true(wet.water)
    assert.is_true(math.abs(wet.distance - 15.5) < 0.01)
    assert.is_nil(w:raycast({10, 40, 10}, {0, -1, 0}, 100, {terrain = false}))
  end)

  it("raycast_all returns every crossing in order, raycast_batch the first distances", function()
    local w = quarry.world.new{}
    local T = w.terrain
    for i = 0, 3 do T:fill_region({i * 10, 0, 0}, {i * 10 + 4, 8, 8}, "rock") end
    local hits = w:raycast_all({-5, 4.3, 4.2}, {1, 0, 0}, 100)
    assert.are.equal(8, #hits)
    for i = 0, 3 do
      assert.is_true(math.abs(hits[2 * i + 1].distance - (5 + i * 10)) < 1e-5)
      assert.is_true(math.abs(hits[2 * i + 2].distance - (9 + i * 10)) < 1e-5)
    end
    local d = w:raycast_batch({{-5, 4.3, 4.2}, {-5, 20, 4}, {35, 4, 4}}, {{1, 0, 0}, {1, 0, 0}, {-1, 0, 0}}, 100)
    assert.is_true(math.abs(d[1] - 5) < 1e-5)
    assert.is_false(d[2])
    assert.is_true(math.abs(d[3] - 1) < 1e-5)
  end)

  it("rejects bad rays", function()
    local w = quarry.world.new{}
    for _, f in ipairs{
      function() w:raycast({0, 0, 0}, {0, 0, 0}, 10) end,
      function() w:raycast({0, 0 / 0, 0}, {0, 1, 0}, 10) end,
      function() w:raycast({0, 0, 0}, {0, 1, 0}, -1) end,
      function() w:raycast({0, 0, 0}, {0, 1, 0}, 0 / 0) end,
      function() w:raycast({0, 0, 0}, {0, 1, 0}, 10, {wet = true}) end,
      function() w:raycast_batch({{0, 0, 0}}, {}, 10) end,
      function() w:raycast_batch({{0, 0, 0}}, {{0, 0, 0}}, 10) end,
      function() w:overlap_sphere({0, 0, 0}, -1) end,
      function() w:overlap_box({0, 0, 0}, {1, 0, 1}) end,
    } do
      assert.has_error(f)
    end
    assert.is_nil(w:raycast({0, 0, 0}, {0, 1, 0}, math.huge))
  end)
end)

-- Squared distance from p to triangle abc, by projecting on the plane and
-- clamping to the edges (written independently of the C version).
local function seg_dist2(p, a, b)
  local ab = b - a
  local t = math.max(0, math.min(1, (p - a):dot(ab) / math.max(ab:dot(ab), 1e-30)))
  local q = a + ab * t
  return (p - q):dot(p - q)
end

local function tri_dist2(p, a, b, c)
  local n = (b - a):cross(c - a)
  local nn = n:dot(n)
  if nn > 1e-20 then
    local q = p - n * ((p - a):dot(n) / nn)
    local function side(u, v) return (v - u):cross(q - u):dot(n) end
    if side(a, b) >= 0 and side(b, c) >= 0 and side(c, a) >= 0 then
      return (p - q):dot(p - q)
    end
  end
  return math.min(seg_dist2(p, a, b), seg_dist2(p, b, c), seg_dist2(p, c, a))
end

describe("overlaps", function()
  it("overlap_sphere matches brute-force distances to the surface", function()
    local w = cave_world(1)
    local T = w.terrain
    local r = rng(9)
    local agree, touched = 0, 0
    for _ = 1, 150 do
      local c = quarry.vec3(r() * 48, r() * 40, r() * 48)
      local radius = 0.3 + r() * 2
      local _, solid = w:overlap_sphere(c, radius)
      -- triangles near the sphere: mesh the voxels around it (a triangle
      -- lies within half a voxel of the voxel box that owns it)
      local lo = {math.floor(c.x - radius) - 2, math.floor(c.y - radius) - 2, math.floor(c.z - radius) - 2}
      local hi = {math.floor(c.x + radius) + 3, math.floor(c.y + radius) + 3, math.floor(c.z + radius) + 3}
      local m = T:mesh(lo, hi)
      local v, ix = m:vertices(), m:indices()
      local near = false
      for t = 0, #ix // 3 - 1 do
        if tri_dist2(c, v[ix[3 * t + 1]], v[ix[3 * t + 2]], v[ix[3 * t + 3]]) <= radius * radius then
          near = true
          break
        end
      end
      local expect = near or T:is_solid(c)
      if expect == solid then agree = agree + 1 end
      if solid then touched = touched + 1 end
    end
    assert.are.equal(150, agree)
    assert.is_true(touched > 20 and touched < 140)
  end)

  it("the broadphase never misses and its false positives are measured", function()
    local w = cave_world(1)
    local T = w.terrain
    local r = rng(3)
    local positives, false_positives = 0, 0
    for _ = 1, 400 do
      local c = quarry.vec3(r() * 52 - 2, r() * 44 - 2, r() * 52 - 2)
      local h = quarry.vec3(0.2 + r() * 3, 0.2 + r() * 3, 0.2 + r() * 3)
      local _, exact_solid, exact_water = w:overlap_box(c, h)
      local _, bp_solid, bp_water = w:overlap_box(c, h, {exact = false})
      assert.is_true(bp_solid or not exact_solid, "broadphase missed solid at " .. tostring(c))
      assert.is_true(bp_water or not exact_water, "broadphase missed water at " .. tostring(c))
      -- independent voxel scan: the grown box holds a voxel within one voxel of an inside sample
      local lo = {math.floor(c.x - h.x) - 2, math.floor(c.y - h.y) - 2, math.floor(c.z - h.z) - 2}
      local hi = {math.floor(c.x + h.x) + 3, math.floor(c.y + h.y) + 3, math.floor(c.z + h.z) + 3}
      local d = T:read(lo, hi)
      local any = false
      for i = 1, #d.materials do
        if d.materials[i] ~= "water" and d.occupancy[i] >= 128 / 255 then any = true break end
      end
      if bp_solid then assert.is_true(any, "broadphase claims solid where no voxel is solid") end
      if bp_solid then
        positives = positives + 1
        if not exact_solid then false_positives = false_positives + 1 end
      end
    end
    assert.is_true(positives > 50)
    print(("\nbroadphase false positives: %d of %d positives (%.1f%%)"):format(
      false_positives, positives, 100 * false_positives / positives))
  end)

  it("reports buried and submerged shapes", function()
    local w = quarry.world.new{}
    w.terrain:fill_region({-40, -40, -40}, {40, 0, 40}, "rock")
    w.terrain:fill_region({-40, 0, -40}, {40, 30, 40}, "water")
    local _, solid, water = w:overlap_sphere({0, -20, 0}, 1)
    assert.is_true(solid)
    assert.is_false(water)
    _, solid, water = w:overlap_box({5, 15, 5}, {1, 1, 1})
    assert.is_false(solid)
    assert.is_true(water)
    _, solid, water = w:overlap_sphere({0, 60, 0}, 2)
    assert.is_false(solid or water)
  end)
end)

describe("physics stats", function()
  it("reports broadphase memory (masks at most 2 bits per voxel) and cached trees", function()
    local w = quarry.world.new{}
    w.terrain:generate{kind = "hills", size = {128, 48, 128}}
    w:raycast({64, 60, 64}, {0, -1, 0}, 100)
    local s = w:stats()
    assert.is_true(s.broadphase_chunks > 0)
    assert.is_true(s.broadphase_bytes * 8 / (128 * 48 * 128) < 2)
    assert.is_true(s.cached_chunks >= 1 and s.kd_nodes > 0 and s.triangles > 0)
  end)
end)

describe("world:raycast_batch", function()
  it("gives the single-ray answers for a large batch of sun rays (grid-sort path)", function()
    local w = quarry.world.new{}
    w.terrain:generate{kind = "caves", size = {64, 40, 64}, seed = 2}
    local r = rng(17)
    local origins, dirs = {}, {}
    local sun = quarry.vec3(0.3, -1, 0.2)
    local n = 40000 -- over the grid-sort threshold (32768)
    for i = 1, n do
      origins[i] = quarry.vec3(r() * 70 - 3, 45 + r() * 5, r() * 70 - 3)
      dirs[i] = i % 2 == 0 and sun or (sun + quarry.vec3((r() - 0.5) * 0.05, 0, (r() - 0.5) * 0.05))
    end
    local d = w:raycast_batch(origins, dirs, 120)
    assert.are.equal(n, #d)
    assert.are.equal(1, w:stats().gridsort_batches, "the batch went through a grid sort")
    local hits, bad = 0, 0
    for i = 1, n, 7 do -- a sample against single rays
      local h = w:raycast(origins[i], dirs[i], 120)
      if (h == nil) ~= (d[i] == false) or (h and math.abs(h.distance - d[i]) > 1e-4) then bad = bad + 1 end
      if h then hits = hits + 1 end
    end
    assert.are.equal(0, bad)
    assert.is_true(hits > 1000)
  end)
end)

describe("queries with huge finite input", function()
  -- found by the body bindings' fuzzing: the query box's chunk range was
  -- walked chunk by chunk (radius 1e4 took seconds, 1e300 never returned),
  -- and a ray from 1e300 overflowed the chunk index (UBSan)
  it("answer at once and exactly", function()
    local w = quarry.world.new{}
    w.terrain:generate{kind = "hills", size = {64, 32, 64}}
    local _, solid, water = w:overlap_sphere({32, 16, 32}, 1e11)
    assert.is_true(solid)
    assert.is_false(water)
    _, solid = w:overlap_box({32, 16, 32}, {1e11, 1e11, 1e11})
    assert.is_true(solid)
    _, solid = w:overlap_sphere({1e300, 0, 0}, 5)
    assert.is_false(solid)
    assert.is_nil(w:raycast({1e300, 1e300, 1}, {0, -1, 0}, 100))
    assert.are.equal(0, #w:raycast_all({1e300, 1e300, 1}, {0, -1, 0}, 100))
    assert.is_truthy(w:raycast({32, 1e3, 32}, {0, -1, 0}, 2e3), "an ordinary ray still hits")
  end)
end)
