-- Dual-contouring mesher: watertightness, orientation, volume, sharp
-- features and partition invariance, each against an independent answer.
local quarry = require "quarry"
local model = require "support.model"

-- Every edge shared by exactly two triangles, in opposite directions.
-- Computed here from the index list, independently of Mesh:is_closed.
local function edge_counts_ok(m)
  local ix = m:indices()
  local directed = {}
  for t = 0, #ix // 3 - 1 do
    for k = 0, 2 do
      local a, b = ix[3 * t + k + 1], ix[3 * t + (k + 1) % 3 + 1]
      if a == b then return false, "degenerate triangle" end
      local key = a .. ":" .. b
      if directed[key] then return false, "directed edge used twice " .. key end
      directed[key] = true
    end
  end
  for key in pairs(directed) do
    local a, b = key:match("(%d+):(%d+)")
    if not directed[b .. ":" .. a] then return false, "open edge " .. key end
  end
  return true
end

-- Triangle normals point away from the given centre (star-shaped solids).
local function faces_point_out(m, centre)
  local v, ix = m:vertices(), m:indices()
  local bad = 0
  for t = 0, #ix // 3 - 1 do
    local a, b, c = v[ix[3 * t + 1]], v[ix[3 * t + 2]], v[ix[3 * t + 3]]
    local n = (b - a):cross(c - a)
    local mid = (a + b + c) / 3
    if n:length() > 1e-9 and n:dot(mid - centre) <= 0 then bad = bad + 1 end
  end
  return bad
end

local function occupancy_volume(T, min, max, voxel_size)
  return model.occupancy_sum(T, min, max) * voxel_size ^ 3
end

describe("the mesher", function()
  for _, r in ipairs{6, 9.5, 14} do
    it("closes a ball of radius " .. r .. " with outward faces and the occupancy volume", function()
      local w = quarry.world.new{}
      local T = w.terrain
      local c = quarry.vec3(3.3, -7.6, 40.2)
      T:fill_ball(c, r, "rock")
      local n = math.ceil(r) + 3
      local min = {math.floor(c.x) - n, math.floor(c.y) - n, math.floor(c.z) - n}
      local max = {math.floor(c.x) + n, math.floor(c.y) + n, math.floor(c.z) + n}
      local m = T:mesh(min, max)
      assert.is_true(m:triangle_count() > 100)
      assert.is_true(edge_counts_ok(m))
      assert.is_true(m:is_closed())
      assert.are.equal(0, faces_point_out(m, c))
      local occ = occupancy_volume(T, min, max, 1)
      assert.is_true(math.abs(m:volume() - occ) / occ < 0.03, ("mesh %.1f vs occupancy %.1f"):format(m:volume(), occ))
      local exact = 4 / 3 * math.pi * r ^ 3
      assert.is_true(math.abs(m:volume() - exact) / exact < 0.03)
    end)
  end

  it("closes rotated blocks, cylinders and noise blobs", function()
    local w = quarry.world.new{voxel_size = 0.5}
    local T = w.terrain
    T:fill_block({0, 0, 0}, {7, 4, 5}, "brick", quarry.quat.from_euler(0.4, 0.9, 0.1))
    T:fill_cylinder({20, 0, 0}, 3, 6, "wood")
    -- a blob: union of overlapping balls along a noisy path
    local s = 3
    for i = 1, 12 do
      s = (s * 1103515245 + 12345) % 2147483648
      T:fill_ball({40 + i * 0.8, (s % 100) / 40, ((s // 100) % 100) / 40}, 2 + (s % 7) / 4, "dirt")
    end
    for _, box in ipairs{{{-16, -16, -16}, {16, 16, 16}}, {{20, -16, -16}, {66, 16, 16}}, {{68, -16, -16}, {120, 16, 16}}} do
      local m = T:mesh(box[1], box[2])
      assert.is_true(m:triangle_count() > 0)
      local ok, why = edge_counts_ok(m)
      assert.is_true(ok, why)
      local occ = occupancy_volume(T, box[1], box[2], 0.5)
      assert.is_true(math.abs(m:volume() - occ) / occ < 0.03, ("mesh %.2f vs occupancy %.2f"):format(m:volume(), occ))
    end
  end)

  it("keeps a voxel-aligned block sharp: corners within 0.05 voxel, flat faces", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:fill_region({2, -3, 5}, {10, 4, 11}, "concrete")
    local m = T:mesh({-2, -7, 1}, {14, 8, 15})
    assert.is_true(m:is_closed())
    assert.are.equal(8 * 7 * 6, m:volume())
    local v = m:vertices()
    for _, c in ipairs{{2, -3, 5}, {10, -3, 5}, {2, 4, 5}, {10, 4, 5}, {2, -3, 11}, {10, -3, 11}, {2, 4, 11}, {10, 4, 11}} do
      local best = math.huge
      for i = 1, #v do best = math.min(best, (v[i] - c):length()) end
      assert.is_true(best < 0.05, "corner " .. table.concat(c, ",") .. " missed by " .. best)
    end
    -- every vertex lies on one of the six face planes
    for i = 1, #v do
      local p = v[i]
      local on = math.abs(p.x - 2) < 1e-6 or math.abs(p.x - 10) < 1e-6 or math.abs(p.y + 3) < 1e-6
              or math.abs(p.y - 4) < 1e-6 or math.abs(p.z - 5) < 1e-6 or math.abs(p.z - 11) < 1e-6
      assert.is_true(on, "vertex off the faces: " .. tostring(p))
    end
    assert.are.equal(2 * (8 * 7 + 8 * 6 + 7 * 6), m:area())
  end)

  -- Triangles as strings of exact coordinates, so that two meshes compare as
  -- sets regardless of vertex numbering.
  local function triangle_set(meshes)
    local set, count = {}, 0
    for _, m in ipairs(meshes) do
      local v, ix = m:vertices(), m:indices()
      for t = 0, #ix // 3 - 1 do
        local parts = {}
        for k = 1, 3 do
          local p = v[ix[3 * t + k]]
          parts[k] = string.format("%a,%a,%a", p.x, p.y, p.z)
        end
        -- rotate so the smallest corner comes first (keeps orientation)
        local first = 1
        for k = 2, 3 do if parts[k] < parts[first] then first = k end end
        local key = parts[first] .. "|" .. parts[first % 3 + 1] .. "|" .. parts[(first + 1) % 3 + 1]
        assert.is_nil(set[key], "duplicate triangle " .. key)
        set[key] = true
        count = count + 1
      end
    end
    return set, count
  end

  it("gives the same triangles for a box and for any partition of it", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:generate{kind = "caves", size = {64, 48, 64}, seed = 4, water_level = 20}
    local s = 99
    local function rnd(n) s = (s * 1103515245 + 12345) % 2147483648; return s % n end
    for _ = 1, 4 do
      local min = {rnd(30), rnd(20), rnd(30)}
      local size = {8 + rnd(24), 8 + rnd(24), 8 + rnd(24)}
      local max = {min[1] + size[1], min[2] + size[2], min[3] + size[3]}
      local whole, n = triangle_set{T:mesh(min, max)}
      -- split along random planes on every axis: 8 pieces (some may be empty)
      local cut = {min[1] + rnd(size[1] + 1), min[2] + rnd(size[2] + 1), min[3] + rnd(size[3] + 1)}
      local pieces = {}
      for i = 0, 7 do
        local lo, hi = {}, {}
        for a = 1, 3 do
          local upper = (i >> (a - 1)) & 1 == 1
          lo[a] = upper and cut[a] or min[a]
          hi[a] = upper and max[a] or cut[a]
        end
        pieces[#pieces + 1] = T:mesh(lo, hi)
      end
      local parts, pn = triangle_set(pieces)
      assert.are.equal(n, pn)
      for k in pairs(whole) do assert.is_true(parts[k], "missing in the partition: " .. k) end
    end
    -- and 8^3 physics chunks against a 32^3 render chunk
    local big = triangle_set{T:mesh({0, 0, 0}, {32, 32, 32})}
    local small = {}
    for z = 0, 24, 8 do for y = 0, 24, 8 do for x = 0, 24, 8 do
      small[#small + 1] = T:mesh({x, y, z}, {x + 8, y + 8, z + 8})
    end end end
    local chunks = triangle_set(small)
    for k in pairs(big) do assert.is_true(chunks[k]) end
    for k in pairs(chunks) do assert.is_true(big[k]) end
  end)

  it("makes a separate water surface and keeps materials", function()
    local w = quarry.world.new{}
    local T = w.terrain
    T:generate{kind = "flat", size = {32, 32, 32}, water_level = 24.5}
    local solid = T:mesh({4, 4, 4}, {28, 28, 28})
    local water = T:mesh({4, 4, 4}, {28, 28, 28}, {surface = "water"})
    assert.is_true(solid:triangle_count() > 0 and water:triangle_count() > 0)
    -- occupancy 128/255 puts the crossing 0.004 voxel above the half
    for _, p in ipairs(water:vertices()) do assert.is_true(math.abs(p.y - 24.5) < 0.01, tostring(p)) end
    for _, name in ipairs(water:materials()) do assert.are.equal("water", name) end
    for _, name in ipairs(solid:materials()) do assert.are_not.equal("water", name) end
    for _, p in ipairs(solid:vertices()) do assert.is_true(math.abs(p.y - 16) < 1e-4) end
  end)

  it("gives an empty mesh for an empty region and rejects bad boxes", function()
    local w = quarry.world.new{}
    local T = w.terrain
    local m = T:mesh({0, 0, 0}, {16, 16, 16})
    assert.are.equal(0, m:triangle_count())
    assert.is_nil(m:bounds())
    assert.are.equal(0, T:mesh({5, 5, 5}, {5, 9, 9}):triangle_count())
    assert.has_error(function() T:mesh({0, 0, 0}, {-1, 4, 4}) end)
    local ok, err = pcall(function() T:mesh({0, 0, 0}, {1000, 1000, 1000}) end)
    assert.is_false(ok)
    assert.matches("more than", err)
    ok, err = pcall(function() T:mesh({0, 0, 0}, {4, 4, 4}, {surface = "lava"}) end)
    assert.is_false(ok)
    assert.matches("'solid'", err)
    ok, err = pcall(function() T:mesh({0, 0, 0}, {4, 4, 4}, {lod = 9}) end)
    assert.is_false(ok)
  end)
end)

describe("Mesh values", function()
  local cube = {
    vertices = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}},
    indices = {{1, 3, 2}, {1, 4, 3}, {5, 6, 7}, {5, 7, 8}, {1, 2, 6}, {1, 6, 5},
               {2, 3, 7}, {2, 7, 6}, {3, 4, 8}, {3, 8, 7}, {4, 1, 5}, {4, 5, 8}},
  }

  it("computes volume, area, bounds and closedness of a unit cube", function()
    local m = quarry.mesh.new(cube)
    assert.are.equal(8, m:vertex_count())
    assert.are.equal(12, m:triangle_count())
    assert.is_true(math.abs(m:volume() - 1) < 1e-12)
    assert.is_true(math.abs(m:area() - 6) < 1e-12)
    assert.is_true(m:is_closed())
    local mn, mx = m:bounds()
    assert.is_true(mn == quarry.vec3(0, 0, 0) and mx == quarry.vec3(1, 1, 1))
    local open = quarry.mesh.new{vertices = cube.vertices, indices = {{1, 3, 2}, {1, 4, 3}}}
    assert.is_false(open:is_closed())
  end)

  it("accepts flat arrays and writes OBJ", function()
    local m = quarry.mesh.new{vertices = {0, 0, 0, 1, 0, 0, 0, 1, 0}, indices = {1, 2, 3}}
    assert.are.equal(1, m:triangle_count())
    local path = os.tmpname()
    assert.is_true(m:save(path))
    local f = io.open(path)
    local text = f:read("a")
    f:close()
    os.remove(path)
    assert.matches("v 1 0 0", text)
    assert.matches("f 1 2 3", text)
    local ok, err = m:save("/nonexistent/dir/m.obj")
    assert.is_nil(ok)
    assert.matches("cannot open", err)
  end)

  it("rejects bad mesh data", function()
    for _, def in ipairs{
      {vertices = {0, 0, 0, 1}, indices = {}},
      {vertices = {0, 0, 0}, indices = {1, 1}},
      {vertices = {0, 0, 0}, indices = {1, 1, 2}},
      {vertices = {0, 0 / 0, 0}, indices = {}},
      {vertices = {{0, 0, 0}}, indices = {{1, 1, 0.5}}},
      {vertices = {}, indices = {}, colors = {}},
    } do
      assert.has_error(function() quarry.mesh.new(def) end)
    end
  end)
end)

describe("quarry.mesh.box and quarry.mesh.sphere", function()
  it("a box has the volume and area of its extents, closed, facing out", function()
    local b = quarry.mesh.box({2, 3, 4})
    assert.are.equal(12, b:triangle_count())
    assert.are.equal(24, b:volume())
    assert.are.equal(2 * (6 + 8 + 12), b:area())
    assert.is_true(b:is_closed())
    local lo, hi = b:bounds()
    assert.are.equal(-1, lo.x)
    assert.are.equal(2, hi.z)
    assert.are.equal(1, quarry.mesh.box(1):volume())
  end)

  it("a sphere's vertices lie on it and its volume approaches 4/3 pi r^3 from below", function()
    local exact = 4 / 3 * math.pi * 8
    local last = 0
    for detail = 0, 5 do
      local s = quarry.mesh.sphere(2, detail)
      assert.are.equal(20 * 4 ^ detail, s:triangle_count())
      assert.is_true(s:is_closed())
      for _, v in ipairs(s:vertices()) do
        assert.is_true(math.abs(v:length() - 2) < 1e-6)
      end
      local vol = s:volume()
      assert.is_true(vol > last and vol < exact, ("detail %d: volume %g"):format(detail, vol))
      last = vol
    end
    assert.is_true(math.abs(last - exact) / exact < 1e-3)
    assert.are.equal(1280, quarry.mesh.sphere(1):triangle_count()) -- detail 3 by default
  end)

  it("checks its arguments", function()
    assert.has_error(function() quarry.mesh.box(-1) end)
    assert.has_error(function() quarry.mesh.box({1, 0, 1}) end)
    assert.has_error(function() quarry.mesh.box({1, 0 / 0, 1}) end)
    assert.has_error(function() quarry.mesh.sphere(0) end)
    assert.has_error(function() quarry.mesh.sphere(1, 8) end)
    assert.has_error(function() quarry.mesh.sphere(1, 1.5) end)
  end)
end)
