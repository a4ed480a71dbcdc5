-- quarry.gridsort against brute force: Mesh:raycast tests every triangle with
-- the same ray-triangle function, so distances and triangles must agree on
-- every ray (random, along the sort axis, across it, from inside and outside
-- the bounds); world:raycast answers from the same mesher's triangles.
local quarry = require "quarry"

local function rng(seed)
  local s = seed
  return function() s = (s * 1103515245 + 12345) % 2147483648; return s / 2147483648 end
end

local function vec_norm(v) return v:length() > 0 and v / v:length() or v end

-- Ray kinds around a box [lo, hi]; axis is the grid sort's direction.
local KINDS = {"random", "along", "against", "across", "near_axis", "outside", "short"}
local function make_ray(r, kind, lo, hi, axis)
  local size = hi - lo
  local function inside() return quarry.vec3(lo.x + r() * size.x, lo.y + r() * size.y, lo.z + r() * size.z) end
  local o, d, len = inside(), quarry.vec3(r() - 0.5, r() - 0.5, r() - 0.5), 100
  if kind == "along" then d = axis
  elseif kind == "against" then d = -axis
  elseif kind == "across" then d = d - axis * d:dot(axis)
  elseif kind == "near_axis" then d = axis + quarry.vec3(r() - 0.5, r() - 0.5, r() - 0.5) * 0.02
  elseif kind == "outside" then
    -- from beyond the bounds, towards a point inside
    local far = quarry.vec3(r() - 0.5, r() - 0.5, r() - 0.5)
    o = (lo + hi) / 2 + vec_norm(far) * size:length()
    d = inside() - o
    len = 3 * size:length()
  elseif kind == "short" then len = r() * 3
  end
  return o, d, len
end

local function same_hit(a, b)
  if a == nil or b == nil then return a == b end
  return math.abs(a.distance - b.distance) <= 1e-5 and a.triangle == b.triangle
    and (a.position - b.position):length() <= 1e-5 and (a.normal - b.normal):length() <= 1e-9
end

local function describe_hit(h) return h and ("%.7g (triangle %d)"):format(h.distance, h.triangle) or "miss" end

-- Casts n rays through each grid sort and the mesh; returns mismatches,
-- hits, and the first mismatch described.
local function compare(mesh, sorts, n, seed, lo, hi)
  local r = rng(seed)
  local mismatches, hits, first = 0, 0, nil
  for i = 1, n do
    local kind = KINDS[i % #KINDS + 1]
    local brute = nil
    for _, s in ipairs(sorts) do
      local o, d, len = make_ray(r, kind, lo, hi, s.axis)
      brute = mesh:raycast(o, d, len)
      local got = s.gs:raycast(o, d, len)
      if not same_hit(got, brute) then
        mismatches = mismatches + 1
        first = first or ("%s ray from %s dir %s (%s): grid %s, brute %s"):format(kind, tostring(o), tostring(d),
          s.name, describe_hit(got), describe_hit(brute))
      end
      if brute then hits = hits + 1 end
      if got then assert.is_true(got.normal:dot(d) <= 1e-9, "normal must face the ray's origin") end
    end
  end
  return mismatches, hits, first
end

local function make_sorts(mesh, configs)
  local sorts = {}
  for _, c in ipairs(configs) do
    local axis = vec_norm(quarry.vec3(c.axis[1], c.axis[2], c.axis[3]))
    sorts[#sorts + 1] = {gs = quarry.gridsort.new(mesh, c), axis = axis,
                         name = ("axis %s, resolution %s"):format(tostring(axis), tostring(c.resolution or 2048))}
  end
  return sorts
end

describe("quarry.gridsort", function()
  local w, mesh
  local lo, hi = quarry.vec3(-2, -2, -2), quarry.vec3(50, 42, 50)
  setup(function()
    w = quarry.world.new{}
    w.terrain:generate{kind = "caves", size = {48, 40, 48}}
    mesh = w.terrain:mesh({-2, -2, -2}, {50, 42, 50})
  end)
  teardown(function() w, mesh = nil, nil; collectgarbage() end)

  it("agrees with brute force on a caves terrain, for several axes and resolutions", function()
    assert.is_true(mesh:triangle_count() > 5000)
    local sorts = make_sorts(mesh, {
      {axis = {0, -1, 0}},
      {axis = {0.3, -0.8, 0.2}, resolution = 256},
      {axis = {1, 0, 0}, resolution = 7},
      {axis = {0, 0, 1}, resolution = 1},
    })
    local mismatches, hits, first = compare(mesh, sorts, 280, 11, lo, hi)
    assert.are.equal(0, mismatches, first)
    assert.is_true(hits > 500, "hits " .. hits)
    for _, s in ipairs(sorts) do
      assert.is_true(s.gs:bytes() > 0)
      assert.are.equal(mesh:triangle_count(), s.gs:triangle_count())
    end
  end)

  it("agrees with world:raycast on the terrain", function()
    local gs = quarry.gridsort.new(mesh)
    local r = rng(5)
    local hits = 0
    for i = 1, 300 do
      local o, d, len = make_ray(r, KINDS[i % #KINDS + 1], quarry.vec3(0, 0, 0), quarry.vec3(48, 40, 48),
        quarry.vec3(0, -1, 0))
      -- skip grazing rays: a float ulp of position moves a hit by ulp / slope
      if math.abs(vec_norm(d).y) > 0.05 or math.abs(vec_norm(d).y) == 0 then
        local a, b = gs:raycast(o, d, len), w:raycast(o, d, len)
        assert.are.equal(a == nil, b == nil, ("ray %s %s: grid %s, world %s"):format(tostring(o), tostring(d),
          describe_hit(a), b and b.distance or "miss"))
        if a then
          hits = hits + 1
          assert.is_true(math.abs(a.distance - b.distance) < 1e-4)
        end
      end
    end
    assert.is_true(hits > 100, "hits " .. hits)
  end)

  it("casts batches with the same distances as single rays", function()
    local gs = quarry.gridsort.new(mesh, {axis = {0, -1, 0}, resolution = 512})
    local r = rng(9)
    local origins, dirs = {}, {}
    for i = 1, 200 do
      local o, d = make_ray(r, KINDS[i % #KINDS + 1], lo, hi, quarry.vec3(0, -1, 0))
      origins[i], dirs[i] = o, d
    end
    origins[#origins + 1], dirs[#dirs + 1] = {24, 200, 24}, {0, -3, 0} -- plain tables, unnormalised
    local t = gs:raycast_batch(origins, dirs, 60)
    assert.are.equal(#origins, #t)
    local hits = 0
    for i = 1, #origins do
      local h = gs:raycast(origins[i], dirs[i], 60)
      if h then
        hits = hits + 1
        assert.are.equal(h.distance, t[i])
      else
        assert.is_false(t[i])
      end
    end
    assert.is_true(hits > 50)
    assert.are.same({}, gs:raycast_batch({}, {}, 10))
  end)

  it("agrees with brute force on a random triangle soup", function()
    local r = rng(3)
    local vertices, indices = {}, {}
    for t = 0, 1999 do
      local c = {r() * 100, r() * 100, r() * 100}
      local s = r() < 0.1 and 30 or 6
      for k = 1, 3 do
        for a = 1, 3 do vertices[#vertices + 1] = c[a] + (r() - 0.5) * s end
        indices[#indices + 1] = 3 * t + k
      end
    end
    -- a few degenerate ones: a point and a segment
    for _, v in ipairs{{5, 5, 5, 5, 5, 5, 5, 5, 5}, {1, 1, 1, 2, 2, 2, 3, 3, 3}} do
      local base = #vertices // 3
      for _, x in ipairs(v) do vertices[#vertices + 1] = x end
      for k = 1, 3 do indices[#indices + 1] = base + k end
    end
    local soup = quarry.mesh.new{vertices = vertices, indices = indices}
    local sorts = make_sorts(soup, {
      {axis = {0, -1, 0}},
      {axis = {-1, 2, 0.5}, resolution = 100},
      {axis = {0, 0, -1}, resolution = 3},
    })
    local mismatches, hits, first = compare(soup, sorts, 250, 17, quarry.vec3(0, 0, 0), quarry.vec3(100, 100, 100))
    assert.are.equal(0, mismatches, first)
    assert.is_true(hits > 200, "hits " .. hits)
  end)

  it("handles empty meshes, max distances and closing", function()
    local empty = quarry.gridsort.new(quarry.mesh.new{vertices = {}, indices = {}})
    assert.is_nil(empty:raycast({0, 0, 0}, {0, -1, 0}, 100))
    assert.is_true(empty:bytes() > 0)
    local tri = quarry.mesh.new{vertices = {0, 0, 0, 4, 0, 0, 0, 0, 4}, indices = {1, 2, 3}}
    local gs = quarry.gridsort.new(tri, {resolution = 16})
    local h = gs:raycast({1, 2, 1}, {0, -1, 0}, 2)
    assert.are.equal(2, h.distance)
    assert.are.equal(1, h.triangle)
    assert.are.same({0, 1, 0}, {h.normal.x, h.normal.y, h.normal.z})
    assert.are.same({1, 0, 1}, {h.position.x, h.position.y, h.position.z})
    assert.are.same({0, -1, 0}, {gs:raycast({1, -2, 1}, {0, 1, 0}, 5).normal:unpack()})
    assert.is_nil(gs:raycast({1, 2, 1}, {0, -1, 0}, 1.999))
    assert.is_nil(gs:raycast({1, 2, 1}, {0, 1, 0}, math.huge))
    assert.matches("GridSort %(1 triangles", tostring(gs))
    do
      local closing <close> = quarry.gridsort.new(tri)
      assert.is_truthy(closing:raycast({1, 2, 1}, {0, -1, 0}, 5))
      gs = closing
    end
    assert.has_error(function() gs:raycast({1, 2, 1}, {0, -1, 0}, 5) end)
    getmetatable(gs).__gc(gs) -- a second free is harmless
    assert.matches("closed", tostring(gs))
  end)

  it("rejects bad input, naming the argument", function()
    local tri = quarry.mesh.new{vertices = {0, 0, 0, 4, 0, 0, 0, 0, 4}, indices = {1, 2, 3}}
    local gs = quarry.gridsort.new(tri)
    local NAN = 0 / 0
    local cases = {
      {function() quarry.gridsort.new({}) end, "#1", "quarry.Mesh expected"},
      {function() quarry.gridsort.new(tri, {axis = {0, 0, 0}}) end, "#2", "axis"},
      {function() quarry.gridsort.new(tri, {axis = {NAN, 1, 0}}) end, "#2", "axis"},
      {function() quarry.gridsort.new(tri, {axis = "down"}) end, "#2", "axis"},
      {function() quarry.gridsort.new(tri, {resolution = 0}) end, "#2", "resolution"},
      {function() quarry.gridsort.new(tri, {resolution = 4096}) end, "#2", "resolution"},
      {function() quarry.gridsort.new(tri, {resolution = 2.5}) end, "#2", "resolution"},
      {function() quarry.gridsort.new(tri, {axes = {0, 1, 0}}) end, "#2", "unknown field 'axes'"},
      {function() gs:raycast({0, 0, 0}, {0, 0, 0}, 10) end, "#2", "direction"},
      {function() gs:raycast({0, NAN, 0}, {0, 1, 0}, 10) end, "#1", "finite"},
      {function() gs:raycast({0, 0, 0}, {0, 1, 0}, -1) end, "#3", "max_distance"},
      {function() gs:raycast({0, 0, 0}, {0, 1, 0}, NAN) end, "#3", "max_distance"},
      {function() gs:raycast_batch({{0, 0, 0}}, {}, 10) end, "#2", "same length"},
      {function() gs:raycast_batch({{0, 0, 0}}, {{0, 0, 0}}, 10) end, "#2", "directions[1]"},
      {function() gs:raycast_batch({{0, NAN, 0}}, {{0, 1, 0}}, 10) end, "#1", "origins[1]"},
      {function() gs.raycast(tri, {0, 0, 0}, {0, 1, 0}, 10) end, "quarry.GridSort expected"},
    }
    for i, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok, "case " .. i .. " was accepted")
      for k = 2, #c do
        assert.is_truthy(tostring(err):find(c[k], 1, true), ("case %d: %q lacks %q"):format(i, tostring(err), c[k]))
      end
    end
  end)
end)
