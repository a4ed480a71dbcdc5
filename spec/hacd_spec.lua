-- Mesh:decompose (HACD, engine/geom/hacd.c). Answers checked independently of
-- the engine: hull counts of shapes whose decomposition is known (a convex
-- mesh, an L-shaped prism, a torus), a ray through the torus's hole, every
-- mesh vertex inside some hull (plane tests written here), hull volumes by
-- the divergence theorem against closed-form mesh volumes, and the trace
-- replayed with a union-find over triangles.
local quarry = require "quarry"
local host = require "support.host"

local function mesh(v, idx)
  return quarry.mesh.new{vertices = v, indices = idx}
end

-- Torus around the y axis: R ring radius, r tube radius.
local function torus(R, r, nu, nv)
  local v, idx = {}, {}
  for i = 0, nu - 1 do
    local u = 2 * math.pi * i / nu
    for j = 0, nv - 1 do
      local w = 2 * math.pi * j / nv
      v[#v + 1] = {(R + r * math.cos(w)) * math.cos(u), r * math.sin(w), (R + r * math.cos(w)) * math.sin(u)}
    end
  end
  for i = 0, nu - 1 do
    for j = 0, nv - 1 do
      local a, b = i * nv + j, ((i + 1) % nu) * nv + j
      local c, d = ((i + 1) % nu) * nv + (j + 1) % nv, i * nv + (j + 1) % nv
      for _, k in ipairs{a, d, c, a, c, b} do idx[#idx + 1] = k + 1 end
    end
  end
  return mesh(v, idx)
end

-- Prism over a polygon {{x, z}, ...} (star-shaped from its first vertex)
-- from y = 0 to y = h, wound outward.
local function prism(poly, h)
  local v, idx, n = {}, {}, #poly
  for _, y in ipairs{0, h} do
    for _, p in ipairs(poly) do v[#v + 1] = {p[1], y, p[2]} end
  end
  for i = 2, n - 1 do
    for _, k in ipairs{1, i + 1, i, n + 1, n + i, n + i + 1} do idx[#idx + 1] = k end
  end
  for i = 1, n do
    local j = i % n + 1
    for _, k in ipairs{i, j, n + j, i, n + j, n + i} do idx[#idx + 1] = k end
  end
  local m = mesh(v, idx)
  if m:volume() < 0 then
    for t = 1, #idx, 3 do idx[t + 1], idx[t + 2] = idx[t + 2], idx[t + 1] end
    m = mesh(v, idx)
  end
  return m
end

local function sphere_points(n, seed)
  math.randomseed(seed)
  local p = {}
  for i = 1, n do
    local a, c = 2 * math.pi * math.random(), 2 * math.random() - 1
    local s = math.sqrt(1 - c * c)
    p[i] = {s * math.cos(a), c, s * math.sin(a)}
  end
  return p
end

local function flat(list)
  local t = {}
  for _, p in ipairs(list) do t[#t + 1] = p[1]; t[#t + 1] = p[2]; t[#t + 1] = p[3] end
  return t
end

local function sub(a, b) return {a[1] - b[1], a[2] - b[2], a[3] - b[3]} end
local function dot(a, b) return a[1] * b[1] + a[2] * b[2] + a[3] * b[3] end
local function cross(a, b) return {a[2] * b[3] - a[3] * b[2], a[3] * b[1] - a[1] * b[3], a[1] * b[2] - a[2] * b[1]} end

-- Per hull: bounds and a test "point p within tol of the hull". Solid hulls
-- by their face planes; flat (zero-volume) hulls by distance to the plane
-- and the point's projection inside one of the triangles.
local function hull_testers(hulls)
  local testers = {}
  for i, h in ipairs(hulls) do
    local idx = h:indices()
    local P = {}
    for k, q in ipairs(h:vertices()) do P[k] = {q.x, q.y, q.z} end
    local tris = {}
    for k = 1, #idx, 3 do
      local a, b, c = P[idx[k]], P[idx[k + 1]], P[idx[k + 2]]
      local n = cross(sub(b, a), sub(c, a))
      local l = math.sqrt(dot(n, n))
      if l > 0 then tris[#tris + 1] = {a, b, c, {n[1] / l, n[2] / l, n[3] / l}} end
    end
    local lo, hi = h:bounds()
    local solid = h:volume() > 0
    testers[i] = function(p, tol)
      if p[1] < lo.x - tol or p[2] < lo.y - tol or p[3] < lo.z - tol or
         p[1] > hi.x + tol or p[2] > hi.y + tol or p[3] > hi.z + tol then
        return false
      end
      if solid then
        for _, t in ipairs(tris) do
          if dot(t[4], sub(p, t[1])) > tol then return false end
        end
        return true
      end
      for _, t in ipairs(tris) do
        local n = t[4]
        local d = dot(n, sub(p, t[1]))
        if math.abs(d) <= tol then
          local q = {p[1] - d * n[1], p[2] - d * n[2], p[3] - d * n[3]}
          local inside = true
          for e = 1, 3 do
            local a, b = t[e], t[e % 3 + 1]
            local en = cross(n, sub(b, a))
            local l = math.sqrt(dot(en, en))
            if dot(en, sub(q, a)) < -tol * l then inside = false; break end
          end
          if inside then return true end
        end
      end
      return false
    end
  end
  return testers
end

-- Mesh vertices used by some triangle that no hull contains within tol.
local function vertices_outside(m, hulls, tol)
  local testers = hull_testers(hulls)
  local v, used = m:vertices(), {}
  for _, i in ipairs(m:indices()) do used[i] = true end
  local missing = 0
  for i in pairs(used) do
    local p = {v[i].x, v[i].y, v[i].z}
    local found = false
    for _, test in ipairs(testers) do
      if test(p, tol) then found = true; break end
    end
    if not found then missing = missing + 1 end
  end
  return missing
end

local function total_volume(hulls)
  local s = 0
  for _, h in ipairs(hulls) do s = s + h:volume() end
  return s
end

-- Tolerance for "inside a hull": the quantization distance in mesh units
-- (connect_dist 0.1 of a 1000 cube), a few times over, plus float rounding.
local function tolerance(m)
  local lo, hi = m:bounds()
  local size = math.max(hi.x - lo.x, hi.y - lo.y, hi.z - lo.z)
  return 4 * 0.1 / 1000 * size + 1e-5 * size
end

describe("Mesh:decompose", function()
  it("gives one hull for a convex mesh", function()
    local m = quarry.hull(sphere_points(300, 7))
    local hulls, info = m:decompose()
    assert.are.equal(1, #hulls)
    assert.are.equal(1, info.hulls)
    assert.is_true(hulls[1]:is_closed())
    assert.is_true(math.abs(hulls[1]:volume() / m:volume() - 1) < 1e-3)
    assert.is_true(info.volume_ratio <= 1.15)
    assert.are.equal(0, vertices_outside(m, hulls, tolerance(m)))
    assert.is_true(info.time_ms >= 0)
  end)

  it("gives two hulls for an L-shaped prism, one per arm", function()
    local m = prism({{0, 0}, {2, 0}, {2, 1}, {1, 1}, {1, 2}, {0, 2}}, 1)
    assert.is_true(m:is_closed())
    assert.is_true(math.abs(m:volume() - 3) < 1e-6)
    local hulls, info = m:decompose()
    assert.are.equal(2, #hulls)
    local vols = {hulls[1]:volume(), hulls[2]:volume()}
    table.sort(vols)
    -- each arm is a 2 x 1 x 1 box; the split along the diagonal of the
    -- shared corner leaves each hull between 1.5 and 2
    assert.is_true(vols[1] >= 1.5 - 1e-3 and vols[2] <= 2 + 1e-3)
    assert.is_true(info.volume_ratio <= 1.15)
    assert.is_true(info.max_concavity <= 10)
    assert.are.equal(0, vertices_outside(m, hulls, tolerance(m)))
  end)

  it("rings a torus with hulls that leave the hole open", function()
    local m = torus(1, 0.3, 48, 24)
    assert.is_true(m:is_closed())
    local hulls, info = m:decompose()
    assert.is_true(#hulls >= 6, "a ring needs several hulls, got " .. #hulls)
    -- the hole: rays along the axis and parallel to it, inside the inner radius
    for _, x in ipairs{0, 0.3, -0.3} do
      for _, h in ipairs(hulls) do
        assert.is_nil(h:raycast({x, -2, x}, {0, 1, 0}, 4))
      end
    end
    -- no hull reaches into the hole further than the allowed concavity
    -- (10 of 1000 of the torus's 2.6 size)
    for _, h in ipairs(hulls) do
      for _, q in ipairs(h:vertices()) do
        assert.is_true(math.sqrt(q.x ^ 2 + q.z ^ 2) >= 0.7 - 0.026 - 1e-4)
      end
    end
    assert.is_true(info.max_concavity <= 10)
    assert.is_true(info.volume_ratio <= 1.15, "volume ratio " .. info.volume_ratio)
    assert.are.equal(0, vertices_outside(m, hulls, tolerance(m)))
  end)

  it("keeps every vertex of open imported meshes inside some hull", function()
    for _, file in ipairs{"OBJ/spider.obj", "OFF/Wuson.off"} do
      local m = assert(quarry.mesh.load("/usr/share/assimp/models/" .. file))
      assert.is_false(m:is_closed())
      local hulls, info = m:decompose{trace = true}
      assert.is_true(#hulls >= 1)
      assert.is_nil(info.volume_ratio) -- open: no volume to compare with
      assert.is_true(info.max_concavity <= 10)
      assert.are.equal(0, vertices_outside(m, hulls, tolerance(m)), file)
      -- each triangle's hull holds that triangle's corners
      local testers, v, idx = hull_testers(hulls), m:vertices(), m:indices()
      for t, h in ipairs(info.triangle_hull) do
        assert.is_truthy(h)
        for k = 3 * t - 2, 3 * t do
          local p = v[idx[k]]
          assert.is_true(testers[h]({p.x, p.y, p.z}, tolerance(m)), file)
        end
      end
    end
  end)

  it("rates a hull by the surface between samples, not just at them", function()
    -- A floor triangle (normal up) with a thin plate standing on it, in a
    -- 1000 box (scale 1), sampled every 30 units. The floor's frame starts
    -- at (1000, 0, 0) along -x, rows at z = 15, 45, ...; the plate's foot
    -- covers z in [17, 43], between two rows: no floor sample lies under
    -- the plate, but the plate's hull stands 200 over that strip of floor,
    -- which seed 001's error counts (rays up from the floor to the hull's
    -- top). Points of the strip are tested here against every solid hull.
    local v = {{0, 0, 0}, {500, 0, 600}, {1000, 0, 0}}
    local idx = {1, 2, 3}
    local x0, x1, z0, z1, h = 300, 700, 17, 43, 200
    local base = #v
    for _, y in ipairs{0, h} do
      for _, p in ipairs{{x0, z0}, {x1, z0}, {x1, z1}, {x0, z1}} do v[#v + 1] = {p[1], y, p[2]} end
    end
    local box = {1, 3, 2, 1, 4, 3, 5, 6, 7, 5, 7, 8, 1, 2, 6, 1, 6, 5, 2, 3, 7, 2, 7, 6,
                 3, 4, 8, 3, 8, 7, 4, 1, 5, 4, 5, 8}
    for _, k in ipairs(box) do idx[#idx + 1] = base + k end
    local m = mesh(v, idx)
    local hulls, info = m:decompose{sample_spacing = 30}
    assert.are.equal(1, info.components)
    assert.is_true(math.abs(info.sample_spacing - 30) < 1e-9)
    local worst = 0
    for _, hull in ipairs(hulls) do
      if hull:volume() > 1 then
        local hidx, P, planes = hull:indices(), {}, {}
        for k, q in ipairs(hull:vertices()) do P[k] = {q.x, q.y, q.z} end
        for k = 1, #hidx, 3 do
          local a, b, c = P[hidx[k]], P[hidx[k + 1]], P[hidx[k + 2]]
          local n = cross(sub(b, a), sub(c, a))
          local l = math.sqrt(dot(n, n))
          if l > 1e-9 then planes[#planes + 1] = {n[1] / l, n[2] / l, n[3] / l, dot(n, a) / l} end
        end
        for x = x0 + 5, x1 - 5, 10 do
          for z = z0 + 1, z1 - 1, 2 do
            local p, inside, ray = {x, 0, z}, true, math.huge
            for _, pl in ipairs(planes) do
              local d = dot(pl, p) - pl[4]
              if d > 0.1 then inside = false; break end
              if pl[2] > 1e-9 then ray = math.min(ray, -d / pl[2]) end
            end
            if inside and ray < math.huge then worst = math.max(worst, ray) end
          end
        end
      end
    end
    assert.is_true(worst <= 10 + 0.5, "a hull stands " .. worst .. " over the plate's foot")
    assert.are.equal(0, vertices_outside(m, hulls, tolerance(m)))
  end)

  it("rates a hull by a crease that dips into it along a triangle's edge", function()
    -- A box and a tall triangle standing in the plane x = 300 whose lower
    -- edge runs from 0.2 under the box's top (at z = 100) up to the top (at
    -- z = 500): only a sliver along that edge, at most 0.2 wide, is inside
    -- the box, with the triangle's normal (+-x) across it (300 to either
    -- side). No sample or finer point of the triangle is in the sliver; the
    -- points of its edge are. Points of the edge are tested here against
    -- every solid hull.
    local v = {}
    for _, p in ipairs{{0, 0, 0}, {600, 0, 0}, {600, 0, 600}, {0, 0, 600},
                       {0, 200, 0}, {600, 200, 0}, {600, 200, 600}, {0, 200, 600}} do v[#v + 1] = p end
    local idx = {1, 2, 3, 1, 3, 4, 5, 7, 6, 5, 8, 7, 1, 6, 2, 1, 5, 6, 2, 7, 3, 2, 6, 7,
                 3, 8, 4, 3, 7, 8, 4, 5, 1, 4, 8, 5}
    local a, b, c = {300, 199.8, 100}, {300, 200, 500}, {300, 900, 300}
    v[9], v[10], v[11] = a, b, c
    for _, k in ipairs{9, 10, 11} do idx[#idx + 1] = k end
    local m = mesh(v, idx)
    local hulls, info = m:decompose{sample_spacing = 30}
    assert.are.equal(1, info.components)
    local lo, hi = m:bounds()
    local limit = 10 * math.max(hi.x - lo.x, hi.y - lo.y, hi.z - lo.z) / 1000 -- the concavity in mesh units
    local worst = 0
    for _, hull in ipairs(hulls) do
      if hull:volume() > 1 then
        local hidx, P, planes = hull:indices(), {}, {}
        for k, q in ipairs(hull:vertices()) do P[k] = {q.x, q.y, q.z} end
        for k = 1, #hidx, 3 do
          local p1, p2, p3 = P[hidx[k]], P[hidx[k + 1]], P[hidx[k + 2]]
          local n = cross(sub(p2, p1), sub(p3, p1))
          local l = math.sqrt(dot(n, n))
          if l > 1e-9 then planes[#planes + 1] = {n[1] / l, n[2] / l, n[3] / l, dot(n, p1) / l} end
        end
        for t = 0, 0.9, 0.05 do
          local p = {a[1] + t * (b[1] - a[1]), a[2] + t * (b[2] - a[2]), a[3] + t * (b[3] - a[3])}
          for _, dir in ipairs{1, -1} do
            local inside, ray = true, math.huge
            for _, pl in ipairs(planes) do
              local d = dot(pl, p) - pl[4]
              if d > 0.05 then inside = false; break end
              local nd = pl[1] * dir
              if nd > 1e-9 then ray = math.min(ray, -d / nd) end
            end
            if inside and ray < math.huge then worst = math.max(worst, ray) end
          end
        end
      end
    end
    assert.is_true(worst <= limit + 0.5, "a hull reaches " .. worst .. " across the crease (limit " .. limit .. ")")
    assert.are.equal(0, vertices_outside(m, hulls, tolerance(m)))
  end)

  it("merges more with a larger concavity and stops at max_hulls", function()
    local m = torus(1, 0.3, 32, 16)
    local a = m:decompose{concavity = 5}
    local b = m:decompose{concavity = 40}
    assert.is_true(#b < #a)
    local c, info = m:decompose{concavity = 5, max_hulls = 3}
    assert.is_true(#c <= 3)
    assert.are.equal(#c, info.hulls)
    assert.is_true(info.max_concavity > 5) -- merged past the concavity
  end)

  it("caps the vertices of each hull with max_vertices", function()
    local m = quarry.hull(sphere_points(400, 3))
    local hulls = m:decompose{max_vertices = 16}
    assert.are.equal(1, #hulls)
    assert.is_true(hulls[1]:vertex_count() <= 16)
    assert.is_true(hulls[1]:volume() > 0.5 * m:volume())
  end)

  it("records every merge in the trace, and replaying it gives the hulls", function()
    local m = prism({{0, 0}, {2, 0}, {2, 1}, {1, 1}, {1, 2}, {0, 2}}, 1)
    local hulls, info = m:decompose{trace = true}
    local n = m:triangle_count()
    assert.are.equal(info.merges, #info.trace)
    assert.are.equal(n - #hulls, #info.trace)
    local parent = {}
    for t = 1, n do parent[t] = t end
    local function find(x)
      while parent[x] ~= x do x = parent[x] end
      return x
    end
    for _, step in ipairs(info.trace) do
      assert.is_true(step.a >= 1 and step.a <= n and step.b >= 1 and step.b <= n)
      assert.is_true(step.error >= 0 and step.error <= 10)
      local ra, rb = find(step.a), find(step.b)
      assert.are_not.equal(ra, rb)
      parent[rb] = ra
    end
    local roots = {}
    for t = 1, n do roots[find(t)] = true end
    local count = 0
    for _ in pairs(roots) do count = count + 1 end
    assert.are.equal(#hulls, count)
    local _, plain = m:decompose()
    assert.is_nil(plain.trace)
  end)

  it("decomposes open, non-manifold and partly degenerate meshes", function()
    -- a box without its top (open)
    local box = quarry.hull({{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}, {0, 0, 1}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}})
    local v, idx = box:vertices(), box:indices()
    local keep = {}
    for t = 1, #idx, 3 do
      local top = true
      for k = 0, 2 do if v[idx[t + k]].y < 0.5 then top = false end end
      if not top then for k = 0, 2 do keep[#keep + 1] = idx[t + k] end end
    end
    local open = mesh(v, keep)
    local hulls = open:decompose()
    assert.is_true(#hulls >= 1)
    assert.are.equal(0, vertices_outside(open, hulls, tolerance(open)))
    -- three triangles on one edge (non-manifold fin), plus a zero-area
    -- triangle and a triangle whose corners coincide
    local fin = mesh({{0, 0, 0}, {1, 0, 0}, {0.5, 1, 0}, {0.5, -1, 0.2}, {0.5, 0, 1}, {2, 0, 0}, {3, 0, 0}},
                     {1, 2, 3, 2, 1, 4, 1, 2, 5, 2, 6, 7, 1, 1, 1})
    local fh, finfo = fin:decompose()
    assert.is_true(#fh >= 1)
    assert.is_true(finfo.hulls == #fh)
    -- two separate boxes: two components, two hulls
    local two = {}
    local tv, ti = {}, {}
    for _, dx in ipairs{0, 3} do
      local b = quarry.hull({{dx, 0, 0}, {dx + 1, 0, 0}, {dx, 1, 0}, {dx + 1, 1, 0}, {dx, 0, 1}, {dx + 1, 0, 1},
                             {dx, 1, 1}, {dx + 1, 1, 1}})
      local base = #tv // 3
      for _, q in ipairs(b:vertices()) do tv[#tv + 1] = q.x; tv[#tv + 1] = q.y; tv[#tv + 1] = q.z end
      for _, i in ipairs(b:indices()) do ti[#ti + 1] = i + base end
      two[#two + 1] = b
    end
    local th, tinfo = mesh(tv, ti):decompose()
    assert.are.equal(2, #th)
    assert.are.equal(2, tinfo.components)
  end)

  it("gives nil and a message for meshes it cannot decompose", function()
    -- every triangle degenerate (collinear points)
    local line = mesh({{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0}}, {1, 2, 3, 2, 3, 4})
    local h, err = line:decompose()
    assert.is_nil(h)
    assert.matches("decompose: .*degenerate", err)
    -- all corners in one point
    local dot1 = mesh({{1, 1, 1}, {1, 1, 1}, {1, 1, 1}}, {1, 2, 3})
    h, err = dot1:decompose()
    assert.is_nil(h)
    assert.matches("decompose: ", err)
    -- NaN coordinates: refused when the mesh is made or when decomposed
    local ok, m = pcall(mesh, {{0, 0, 0}, {1, 0, 0}, {0, 0 / 0, 1}}, {1, 2, 3})
    if ok and m then
      h, err = m:decompose()
      assert.is_nil(h)
      assert.matches("non%-finite", err)
    else
      assert.matches("finite", tostring(m))
    end
  end)

  it("rejects bad options with errors naming them", function()
    local m = quarry.hull(sphere_points(50, 1))
    assert.has_error(function() m:decompose{concavity = -1} end)
    assert.has_error(function() m:decompose{connect_dist = 0} end)
    assert.has_error(function() m:decompose{max_hulls = 0} end)
    assert.has_error(function() m:decompose{max_vertices = 3} end)
    assert.has_error(function() m:decompose{trace = 1} end)
    assert.has_error(function() m:decompose{bogus = 1} end)
    assert.has_error(function() m:decompose{volume_weight = -1} end)
    assert.has_error(function() m:decompose{sample_spacing = 0} end)
    assert.has_error(function() m:decompose{concavity = 0 / 0} end)
    local ok, e = pcall(function() return m:decompose{concavity = -1} end)
    assert.is_false(ok)
    assert.matches("concavity", e)
    assert.matches("decompose", e)
  end)

  it("runs examples/decompose.lua headless, in the hulls view and through the trace", function()
    host.need_exe()
    for _, extra in ipairs{"", " --trace"} do
      local cmd = host.OFFSCREEN .. " " .. host.shell_quote(host.exe) ..
                  " --headless --frames 5 examples/decompose.lua" .. extra .. " 2>&1"
      local pipe = assert(io.popen(cmd))
      local out = pipe:read("a")
      local ok = pipe:close()
      assert.is_true(ok, out)
      assert.matches("decompose: .* %-> %d+ hulls", out)
      assert.matches("decompose: 5 frames", out)
      if extra ~= "" then
        -- playing: a few merges a frame from the start, not yet at the end
        local step, total = out:match("step (%d+) of (%d+)")
        assert.is_true(tonumber(step) > 0 and tonumber(step) < tonumber(total), out)
      end
    end
  end)
end)
