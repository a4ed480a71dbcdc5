-- Terrain:islands and Terrain:remove_islands (issue 10, connectivity half).
-- Independent answers: voxel counts of axis-aligned boxes, a brute-force
-- flood fill written here over T:read, and world hashes of worlds built
-- without the island.
local quarry = require "quarry"

local function box(T, min, max, mat) T:fill_region(min, max, mat or "rock") end

local function ground(T) box(T, {0, 0, 0}, {48, 8, 48}) end

local function sorted_counts(list)
  local c = {}
  for i, r in ipairs(list) do c[i] = r.voxels end
  table.sort(c)
  return c
end

-- Islands by brute force over the box [min, max): solid = occupancy at
-- least half and not water; anchored = y <= 0; faces only. Returns the
-- islands as {seed = {x, y, z}, voxels = n}, in (z, y, x) order of seeds.
local function brute_force(T, min, max)
  local d = T:read(min, max)
  local nx, ny, nz = d.size[1], d.size[2], d.size[3]
  local solid, seen = {}, {}
  for i = 1, nx * ny * nz do
    solid[i] = d.occupancy[i] * 255 >= 127.5 and d.materials[i] ~= "water" and d.materials[i] ~= "air"
  end
  local function id(x, y, z) return 1 + x + nx * (y + ny * z) end
  local function flood(start)
    local stack, n = {start}, 0
    seen[start] = true
    while #stack > 0 do
      local i = table.remove(stack)
      n = n + 1
      local x = (i - 1) % nx
      local y = ((i - 1) // nx) % ny
      local z = (i - 1) // (nx * ny)
      local nb = {}
      if x > 0 then nb[#nb + 1] = i - 1 end
      if x < nx - 1 then nb[#nb + 1] = i + 1 end
      if y > 0 then nb[#nb + 1] = i - nx end
      if y < ny - 1 then nb[#nb + 1] = i + nx end
      if z > 0 then nb[#nb + 1] = i - nx * ny end
      if z < nz - 1 then nb[#nb + 1] = i + nx * ny end
      for _, j in ipairs(nb) do
        if solid[j] and not seen[j] then
          seen[j] = true
          stack[#stack + 1] = j
        end
      end
    end
    return n
  end
  for z = 0, nz - 1 do
    for x = 0, nx - 1 do
      for y = 0, ny - 1 do
        if y + min[2] <= 0 and solid[id(x, y, z)] and not seen[id(x, y, z)] then flood(id(x, y, z)) end
      end
    end
  end
  local out = {}
  for i = 1, nx * ny * nz do
    if solid[i] and not seen[i] then
      local x = (i - 1) % nx
      local y = ((i - 1) // nx) % ny
      local z = (i - 1) // (nx * ny)
      out[#out + 1] = {seed = {x + min[1], y + min[2], z + min[3]}, voxels = flood(i)}
    end
  end
  return out
end

local function same_as_brute_force(list, bf)
  if #list ~= #bf then return false, ("%d islands, brute force %d"):format(#list, #bf) end
  for i, r in ipairs(list) do
    local b = bf[i]
    if r.voxels ~= b.voxels or r.seed.x ~= b.seed[1] or r.seed.y ~= b.seed[2] or r.seed.z ~= b.seed[3] then
      return false, ("island %d: %d voxels at (%d,%d,%d), brute force %d at (%d,%d,%d)"):format(
        i, r.voxels, r.seed.x, r.seed.y, r.seed.z, b.voxels, b.seed[1], b.seed[2], b.seed[3])
    end
  end
  return true
end

describe("Terrain:islands", function()
  it("finds nothing in an empty world or on plain ground", function()
    local w = quarry.world.new{}
    assert.are.same({}, (w.terrain:islands()))
    ground(w.terrain)
    assert.are.same({}, (w.terrain:islands()))
  end)

  -- A pillar standing on the ground and holding up a bridge deck: cutting
  -- one end leaves it hanging, cutting both ends frees exactly the pillar.
  local function bridge(with_pillar)
    local w = quarry.world.new{}
    local T = w.terrain
    ground(T)
    box(T, {4, 8, 20}, {8, 28, 28})      -- wall
    box(T, {40, 8, 20}, {44, 28, 28})    -- wall
    box(T, {4, 24, 20}, {44, 28, 28})    -- deck
    if with_pillar then box(T, {22, 8, 22}, {26, 24, 26}, "brick") end
    return w
  end

  local function cut_ring(T, y0, y1)
    -- an 8x8 slab around the pillar, cutting through it: a ring of air all round
    box(T, {20, y0, 20}, {28, y1, 28}, "air")
  end

  it("carving rings around a pillar makes exactly the pillar an island", function()
    local w = bridge(true)
    local T = w.terrain
    assert.are.same({}, (T:islands()))
    cut_ring(T, 8, 10)
    assert.are.same({}, (T:islands()), "still hangs from the deck")
    -- the deck's ring cut must not touch the deck: cut only the pillar's top
    cut_ring(T, 22, 24)
    local list = T:islands()
    assert.are.equal(1, #list)
    local r = list[1]
    assert.are.equal(4 * 4 * 12, r.voxels)
    assert.are.same({22, 10, 22}, {r.min.x, r.min.y, r.min.z})
    assert.are.same({26, 22, 26}, {r.max.x, r.max.y, r.max.z})
    assert.are.same({22, 10, 22}, {r.seed.x, r.seed.y, r.seed.z})
    assert.is_false(r.too_large)
  end)

  it("removing the pillar leaves the hash of a world where it was never built", function()
    local a, b = bridge(true), bridge(false)
    for _, w in ipairs{a, b} do
      cut_ring(w.terrain, 8, 10)
      cut_ring(w.terrain, 22, 24)
    end
    assert.are_not.equal(a:hash(), b:hash())
    local removed = a.terrain:remove_islands()
    assert.are.equal(1, #removed)
    assert.are.equal(192, removed[1].removed)
    assert.are.equal(b:hash(), a:hash())
    assert.are.same({}, (a.terrain:islands()))
  end)

  it("a floating ball leaves with its partly filled skin", function()
    local a, b = quarry.world.new{}, quarry.world.new{}
    ground(a.terrain)
    ground(b.terrain)
    a.terrain:fill_ball({20.3, 30.6, 21.1}, 5.2, "rock")
    local list = a.terrain:islands()
    assert.are.equal(1, #list)
    local removed = a.terrain:remove_islands()
    assert.is_true(removed[1].removed > removed[1].voxels) -- the skin went too
    assert.are.equal(b:hash(), a:hash())
  end)

  it("connects over faces, not over edges or corners", function()
    local w = quarry.world.new{}
    local T = w.terrain
    box(T, {10, 30, 10}, {14, 34, 14})
    box(T, {14, 34, 10}, {18, 38, 14}) -- touches the first along an edge
    assert.are.same({64, 64}, sorted_counts(T:islands()))
    box(T, {18, 38, 14}, {22, 42, 18}) -- touches the second at a corner
    assert.are.same({64, 64, 64}, sorted_counts(T:islands()))
    box(T, {14, 30, 10}, {18, 34, 14}) -- shares faces with the first two
    assert.are.same({64, 192}, sorted_counts(T:islands()))
  end)

  it("a block resting on a tower's edge is an island, on its face it is not", function()
    local w = quarry.world.new{}
    local T = w.terrain
    box(T, {0, 0, 0}, {4, 20, 4})      -- tower on the floor
    box(T, {4, 20, 0}, {8, 24, 4})     -- touches the tower's top edge only
    local list = T:islands()
    assert.are.equal(1, #list)
    assert.are.equal(64, list[1].voxels)
    box(T, {4, 16, 0}, {5, 20, 1})     -- one voxel joins them over faces
    assert.are.same({}, (T:islands()))
  end)

  it("half-full voxels are solid, less is not, and water never is", function()
    local w = quarry.world.new{}
    local T = w.terrain
    ground(T)
    box(T, {10, 8, 10}, {11, 9, 11}, "water")
    box(T, {10, 9, 10}, {12, 11, 12})
    assert.are.equal(1, #T:islands(), "water does not hold it")
    local d = T:read({10, 8, 10}, {11, 9, 11})
    d.materials[1], d.occupancy[1] = "rock", 128 / 255
    T:write({10, 8, 10}, d)
    assert.are.same({}, (T:islands()), "occupancy 128/255 holds it")
    d.occupancy[1] = 127 / 255
    T:write({10, 8, 10}, d)
    assert.are.equal(1, #T:islands(), "127/255 does not")
  end)

  it("finds nothing in generated hills", function()
    for seed = 1, 3 do
      local w = quarry.world.new{}
      w.terrain:generate{kind = "hills", size = {128, 64, 128}, seed = seed}
      assert.are.same({}, (w.terrain:islands()))
    end
  end)

  -- The caves generator does leave loose pieces: single voxels, and rock cut
  -- off where a cave meets the world's edge. They are real islands.
  it("agrees with brute force on generated caves", function()
    local w = quarry.world.new{}
    w.terrain:generate{kind = "caves", size = {64, 48, 64}, seed = 3}
    local list = w.terrain:islands()
    local ok, why = same_as_brute_force(list, brute_force(w.terrain, {0, 0, 0}, {64, 48, 64}))
    assert.is_true(ok, why)
    assert.is_true(#list < 10)
  end)

  it("agrees with brute force after random edits, relabelling only what changed", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:generate{kind = "hills", size = {48, 32, 48}, seed = 5}
    math.randomseed(42)
    T:islands()
    for round = 1, 12 do
      for _ = 1, 3 do
        local c = {math.random() * 36 + 6, math.random() * 28 + 6, math.random() * 36 + 6}
        local r = 1 + math.random() * 3.5
        if math.random() < 0.5 then T:fill_ball(c, r, "rock") else T:carve_ball(c, r) end
      end
      local list, info = T:islands()
      assert.is_false(info.full)
      assert.is_true(info.relabelled <= 3 * 8)
      local ok, why = same_as_brute_force(list, brute_force(T, {0, 0, 0}, {48, 44, 48}))
      assert.is_true(ok, ("round %d: %s"):format(round, why))
    end
  end)

  it("checks only the edited neighbourhood of a large world", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:generate{kind = "hills", size = {512, 64, 512}, seed = 2}
    local _, info = T:islands()
    assert.is_true(info.full)
    T:carve_ball({100, 30, 100}, 4)
    local _, again = T:islands()
    assert.is_false(again.full)
    assert.is_true(again.relabelled <= 8)
    assert.is_true(again.visited < 50)
  end)

  it("takes a point or a list of points as anchors", function()
    local w = quarry.world.new{}
    local T = w.terrain
    ground(T)
    box(T, {10, 30, 10}, {14, 34, 14})
    box(T, {30, 30, 30}, {32, 32, 32})
    assert.are.same({8, 64}, sorted_counts(T:islands()))
    -- anchored at the first block: the ground and the second block float
    assert.are.same({8, 48 * 48 * 8}, sorted_counts(T:islands({12.5, 31, 12})))
    assert.are.same({8}, sorted_counts(T:islands({{12.5, 31, 12}, quarry.vec3(1, 1, 1)})))
    -- a point in the air anchors nothing
    assert.are.same({8, 64, 48 * 48 * 8}, sorted_counts(T:islands({20, 50, 20})))
    assert.are.same({8, 64}, sorted_counts(T:islands()))
  end)

  it("scales anchor points by voxel_size", function()
    local w = quarry.world.new{voxel_size = 0.5}
    local T = w.terrain
    box(T, {10, 30, 10}, {14, 34, 14})
    box(T, {20, 30, 10}, {24, 34, 14})
    local list = T:islands({5.5, 15.5, 5.5}) -- voxel (11, 31, 11)
    assert.are.equal(1, #list)
    assert.are.equal(20, list[1].min.x)
    assert.are.equal(64 * 0.125, list[1].volume)
  end)

  it("refuses bad anchors and destroyed worlds", function()
    local w = quarry.world.new{}
    local T = w.terrain
    assert.has_error(function() T:islands(5) end)
    assert.has_error(function() T:islands({{1, 2}}) end)
    assert.has_error(function() T:islands({0 / 0, 1, 2}) end)
    assert.has_error(function() T:islands({1e300, 1, 2}) end)
    local ok, err = pcall(function() return T:islands("x") end)
    assert.is_false(ok)
    assert.matches("islands", err)
    w:destroy()
    assert.has_error(function() T:islands() end, "attempt to use a destroyed world")
  end)
end)
