-- quarry.hull and Mesh:hull against qhull's command-line tool (qhull-bin):
-- `qconvex Fx n FS` gives the extreme points, the facet hyperplanes and the
-- volume. Random, spherical, cube-grid and degenerate point sets (duplicates,
-- coplanar, near-coplanar within s, collinear, a spread over 1e6 in scale).
-- Every solid hull must be closed, wound outward, contain every input point
-- within s of each face plane, have qhull's volume within 1e-6 and the same
-- vertices (exactly, or within s where s decides what is coplanar).
local quarry = require "quarry"

local function tmpfile(text)
  local name = os.tmpname()
  local f = assert(io.open(name, "w"))
  f:write(text)
  f:close()
  return name
end

local function numbers(text)
  local t = {}
  for w in text:gmatch("%S+") do t[#t + 1] = assert(tonumber(w), w) end
  return t
end

-- qhull on points {{x, y, z} or {x, y}, ...}: extreme point indices
-- (1-based), facet planes {nx, ny, [nz,] offset} (inside: n.p + offset <= 0)
-- and the volume (area in 2D).
local function qhull(points)
  local dim = #points[1]
  local lines = {tostring(dim), tostring(#points)}
  for _, p in ipairs(points) do
    lines[#lines + 1] = table.concat({("%.17g"):rep(dim, " "):format(table.unpack(p))}, "")
  end
  local name = tmpfile(table.concat(lines, "\n") .. "\n")
  local pipe = assert(io.popen("qconvex Fx n FS < " .. name .. " 2>&1"))
  local out = pipe:read("a")
  pipe:close()
  os.remove(name)
  local t = numbers(out)
  local k = 1
  local function take() k = k + 1; return t[k - 1] end
  local extreme = {}
  for _ = 1, take() do extreme[#extreme + 1] = take() + 1 end
  assert(take() == dim + 1, out)
  local planes = {}
  for _ = 1, take() do
    local pl = {}
    for j = 1, dim + 1 do pl[j] = take() end
    planes[#planes + 1] = pl
  end
  assert(take() == 0 and take() == 2, out)
  local _, volume = take(), take()
  return {extreme = extreme, planes = planes, volume = volume}
end

-- Rounds to float, as Mesh positions are stored.
local function f32(x) return (string.unpack("f", string.pack("f", x))) end

local function key(x, y, z) return ("%.9g %.9g %.9g"):format(f32(x), f32(y), f32(z)) end

-- Mesh vertices as number triples and triangles as index triples.
local function mesh_data(m)
  local v, ix, tris = {}, m:indices(), {}
  for i, p in ipairs(m:vertices()) do v[i] = {p.x, p.y, p.z} end
  for t = 1, #ix // 3 do tris[t] = {ix[3 * t - 2], ix[3 * t - 1], ix[3 * t]} end
  return v, tris
end

-- Unit normal and offset of each triangle (n.x = d).
local function face_planes(v, tris)
  local planes = {}
  for t, tri in ipairs(tris) do
    local a, b, c = v[tri[1]], v[tri[2]], v[tri[3]]
    local ux, uy, uz = b[1] - a[1], b[2] - a[2], b[3] - a[3]
    local wx, wy, wz = c[1] - a[1], c[2] - a[2], c[3] - a[3]
    local nx, ny, nz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
    local l = math.sqrt(nx * nx + ny * ny + nz * nz)
    assert(l > 0, "degenerate triangle " .. t)
    nx, ny, nz = nx / l, ny / l, nz / l
    planes[t] = {nx, ny, nz, nx * a[1] + ny * a[2] + nz * a[3]}
  end
  return planes
end

-- Largest distance of any point above any plane {nx, ny, nz, d}.
local function worst_outside(points, planes)
  local worst = -math.huge
  for _, pl in ipairs(planes) do
    local nx, ny, nz, d = pl[1], pl[2], pl[3], pl[4]
    for _, p in ipairs(points) do
      local h = nx * p[1] + ny * p[2] + nz * p[3] - d
      if h > worst then worst = h end
    end
  end
  return worst
end

-- Checks a solid hull of points against qhull. exact: the vertex sets must be
-- equal; otherwise every vertex must lie on qhull's boundary within s.
local function check_solid(points, exact)
  local m, info = quarry.hull(points)
  local s = info.epsilon
  assert.are.equal("solid", info.shape)
  assert.is_true(m:is_closed(), "hull is not closed")
  assert.is_true(m:volume() > 0, "hull is not wound outward")
  local v, tris = mesh_data(m)
  local planes = face_planes(v, tris)
  -- Outward: the centroid of the vertices is below every face.
  local c = {0, 0, 0}
  for _, p in ipairs(v) do for a = 1, 3 do c[a] = c[a] + p[a] / #v end end
  assert.is_true(worst_outside({c}, planes) < 0, "a face is inverted")
  -- Every input point inside or within s.
  local worst = worst_outside(points, planes)
  assert.is_true(worst <= s, ("a point is %.3g above a face (s = %.3g)"):format(worst, s))

  local qh = qhull(points)
  assert.is_true(math.abs(m:volume() - qh.volume) <= 1e-6 * qh.volume,
    ("volume %.10g, qhull %.10g"):format(m:volume(), qh.volume))
  -- Vertices compared by position (duplicated input points are one vertex).
  local index, mine = {}, {}
  for i, p in ipairs(points) do index[key(p[1], p[2], p[3])] = i end
  for _, p in ipairs(v) do
    local k = key(p[1], p[2], p[3])
    assert.is_not_nil(index[k], "a hull vertex is not an input point")
    mine[k] = index[k]
  end
  if exact then
    local theirs = {}
    for _, i in ipairs(qh.extreme) do theirs[key(points[i][1], points[i][2], points[i][3])] = i end
    for k, i in pairs(theirs) do assert.is_not_nil(mine[k], "qhull vertex " .. i .. " missing") end
    for k, i in pairs(mine) do assert.is_not_nil(theirs[k], "vertex " .. i .. " is not a qhull vertex") end
  else
    -- Each of our vertices on qhull's boundary within s...
    for _, i in pairs(mine) do
      local p, best = points[i], -math.huge
      for _, pl in ipairs(qh.planes) do
        best = math.max(best, pl[1] * p[1] + pl[2] * p[2] + pl[3] * p[3] + pl[4])
      end
      assert.is_true(best >= -s, ("vertex %d is %.3g inside qhull's hull"):format(i, -best))
    end
    -- ...and each of qhull's within s of ours (checked above for all points).
  end
  return m, info, qh
end

local function rng(seed)
  math.randomseed(seed)
  return math.random
end

local function random_points(n, seed)
  local r, pts = rng(seed), {}
  for i = 1, n do pts[i] = {r() * 2 - 1, r() * 2 - 1, r() * 2 - 1} end
  return pts
end

local function sphere_points(n, seed, radius)
  local r, pts = rng(seed), {}
  while #pts < n do
    local x, y, z = r() * 2 - 1, r() * 2 - 1, r() * 2 - 1
    local l = math.sqrt(x * x + y * y + z * z)
    if l > 0.1 and l <= 1 then pts[#pts + 1] = {radius * x / l, radius * y / l, radius * z / l} end
  end
  return pts
end

-- A rotation (unit quaternion from three angles) applied to points.
local function rotate(pts, ax, ay, az)
  local out = {}
  local cx, sx, cy, sy, cz, sz = math.cos(ax), math.sin(ax), math.cos(ay), math.sin(ay), math.cos(az), math.sin(az)
  for i, p in ipairs(pts) do
    local x, y, z = p[1], p[2], p[3]
    y, z = cx * y - sx * z, sx * y + cx * z
    x, z = cy * x + sy * z, -sy * x + cy * z
    x, y = cz * x - sz * y, sz * x + cz * y
    out[i] = {x, y, z}
  end
  return out
end

describe("quarry.hull against qhull", function()
  it("hulls 1000 random points with qhull's vertices and volume", function()
    check_solid(random_points(1000, 1), true)
  end)

  it("keeps every point of a sphere as a vertex", function()
    local pts = sphere_points(1000, 2, 3)
    local m = check_solid(pts, true)
    assert.are.equal(1000, m:vertex_count())
    assert.are.equal(2 * 1000 - 4, m:triangle_count())
  end)

  it("reduces a cube grid to its 8 corners with 12 triangles", function()
    local pts = {}
    for x = 0, 5 do for y = 0, 5 do for z = 0, 5 do pts[#pts + 1] = {x / 5, y / 5, z / 5} end end end
    local m = check_solid(pts, true)
    assert.are.equal(8, m:vertex_count())
    assert.are.equal(12, m:triangle_count())
    assert.is_true(math.abs(m:volume() - 1) < 1e-6)
  end)

  it("treats points within s of a rotated cube's faces as on them", function()
    -- The surface of a 7^3 grid, rotated, each point moved off its face by
    -- at most s/50: qhull sees bumps, the hull with s sees 8 corners.
    local r, pts = rng(3), {}
    local s = 1e-6 * math.sqrt(3)
    for x = 0, 6 do for y = 0, 6 do for z = 0, 6 do
      local corner = (x % 6 == 0) and (y % 6 == 0) and (z % 6 == 0)
      if x % 6 == 0 or y % 6 == 0 or z % 6 == 0 then
        local d = corner and 0 or (r() - 0.5) * s / 25
        pts[#pts + 1] = {x / 6 + d, y / 6 + d, z / 6 + d}
      end
    end end end
    pts = rotate(pts, 0.3, 0.5, 0.7)
    local m = check_solid(pts, false)
    assert.are.equal(8, m:vertex_count())
  end)

  it("gives one vertex for duplicated points", function()
    local base, pts = random_points(200, 4), {}
    for k = 1, 5 do for i, p in ipairs(base) do pts[#pts + 1] = {p[1], p[2], p[3]}; _ = k, i end end
    check_solid(pts, true)
  end)

  it("hulls points spread over 1e6 in scale without inverted faces", function()
    local r, pts = rng(5), {}
    for i = 1, 500 do
      local d = sphere_points(1, 100 + i, 1)[1]
      local scale = 10 ^ (r() * 6)
      pts[i] = {d[1] * scale, d[2] * scale, d[3] * scale}
    end
    math.randomseed(5)
    check_solid(pts, false)
  end)

  it("hulls the same points the same way from a Mesh (m:hull)", function()
    local pts = random_points(300, 6)
    local flat = {}
    for _, p in ipairs(pts) do
      for a = 1, 3 do flat[#flat + 1] = f32(p[a]) end
    end
    local m = quarry.mesh.new{vertices = flat, indices = {}}
    local h, info = m:hull()
    local direct = quarry.hull(flat)
    assert.are.equal("solid", info.shape)
    assert.are.equal(direct:vertex_count(), h:vertex_count())
    assert.is_true(math.abs(h:volume() - direct:volume()) < 1e-12)
    local box = quarry.mesh.new{vertices = {0, 0, 0, 2, 0, 0, 0, 3, 0, 2, 3, 0, 0, 0, 4, 2, 0, 4, 0, 3, 4, 2, 3, 4},
                                indices = {}}
    assert.is_true(math.abs(box:hull():volume() - 24) < 1e-9)
  end)
end)

describe("quarry.hull on flat and lower-dimensional input", function()
  -- Points on a tilted plane, as 3D points and as their plane coordinates.
  local function plane_points(n, seed, noise)
    local r, pts, uv = rng(seed), {}, {}
    local u, v, w = {0.6, 0.8, 0}, {0, 0, 1}, {0.8, -0.6, 0}
    for i = 1, n do
      local a, b = r() * 4 - 2, r() * 3 - 1
      if (a * a) / 4 + b * b > 1 then a, b = a / 2, b / 2 end
      local h = (r() - 0.5) * noise
      uv[i] = {a, b}
      pts[i] = {1 + a * u[1] + b * v[1] + h * w[1], -2 + a * u[2] + b * v[2] + h * w[2], 3 + a * u[3] + b * v[3] + h * w[3]}
    end
    return pts, uv
  end

  local function check_polygon(pts, uv)
    local m, info = quarry.hull(pts)
    assert.are.equal("polygon", info.shape)
    assert.is_true(m:is_closed(), "a flat hull is closed (both sides)")
    -- Volume 0, up to the rounding of positions to float.
    assert.is_true(math.abs(m:volume()) <= m:area() * info.epsilon)
    local qh = qhull(uv)
    assert.is_true(math.abs(m:area() / 2 - qh.volume) <= 1e-6 * qh.volume,
      ("area %.10g, qhull %.10g"):format(m:area() / 2, qh.volume))
    assert.are.equal(#qh.extreme, m:vertex_count())
    assert.are.equal(2 * (m:vertex_count() - 2), m:triangle_count())
    -- Each side faces its way: front triangles along info.normal, back ones against.
    local v, tris = mesh_data(m)
    local n, front, back = info.normal, 0, 0
    for _, pl in ipairs(face_planes(v, tris)) do
      local d = pl[1] * n.x + pl[2] * n.y + pl[3] * n.z
      if d > 0.999 then front = front + 1 elseif d < -0.999 then back = back + 1 end
    end
    assert.are.equal(m:triangle_count() // 2, front)
    assert.are.equal(m:triangle_count() // 2, back)
    return m, info
  end

  it("hulls coplanar points as a double-sided polygon matching qhull in 2D", function()
    check_polygon(plane_points(500, 7, 0))
  end)

  it("hulls points within s of a plane as a polygon", function()
    local pts, uv = plane_points(500, 8, 1e-6)
    check_polygon(pts, uv)
  end)

  it("gives a segment of 2 vertices and no triangles for collinear points", function()
    local pts = {}
    for i = 1, 50 do local t = (i * 37 % 50) / 7; pts[i] = {1 + t, 2 + 2 * t, -t} end
    local m, info = quarry.hull(pts)
    assert.are.equal("segment", info.shape)
    assert.are.equal(2, m:vertex_count())
    assert.are.equal(0, m:triangle_count())
    local lo, hi = m:bounds()
    assert.is_true(math.abs(lo.x - 1) < 1e-6 and math.abs(hi.x - (1 + 49 / 7)) < 1e-5)
  end)

  it("gives a single vertex for equal points", function()
    local pts = {}
    for i = 1, 20 do pts[i] = quarry.vec3(1.5, -2, 7) end
    local m, info = quarry.hull(pts)
    assert.are.equal("point", info.shape)
    assert.are.equal(1, m:vertex_count())
    assert.are.equal(0, m:triangle_count())
  end)

  it("takes a single point, flat number arrays and keyed tables", function()
    assert.are.equal(1, quarry.hull{{0, 0, 0}}:vertex_count())
    assert.are.equal(4, quarry.hull{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}:vertex_count())
    assert.are.equal(4, quarry.hull{{x = 0, y = 0, z = 0}, {x = 1, y = 0, z = 0}, {x = 0, y = 1, z = 0},
                                    {x = 0, y = 0, z = 1}}:vertex_count())
  end)

  it("uses the epsilon given", function()
    local pts = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 0.01}}
    local _, a = quarry.hull(pts)
    local _, b = quarry.hull(pts, {epsilon = 0.05})
    assert.are.equal("solid", a.shape)
    assert.are.equal("polygon", b.shape)
    assert.are.equal(0.05, b.epsilon)
  end)
end)

describe("quarry.hull argument errors", function()
  local function fails(pattern, ...)
    local ok, err = pcall(quarry.hull, ...)
    assert.is_false(ok)
    assert.matches(pattern, err)
  end

  it("names the argument and the problem", function()
    fails("bad argument #1 .*table of points expected, got nil")
    fails("bad argument #1 .*table of points expected, got string", "points")
    fails("bad argument #1 .*must not be empty", {})
    fails("bad argument #1 .*points%[2%] is not a point", {{0, 0, 0}, "x"})
    fails("bad argument #1 .*points%[2%] is not a point", {{0, 0, 0}, {1, 2}})
    fails("bad argument #1 .*3 numbers per point", {0, 0, 0, 1})
    fails("bad argument #1 .*points%[5%] is not a number", {0, 0, 0, 1, "y", 0})
    fails("bad argument #1 .*point 2 has a non%-finite coordinate", {{0, 0, 0}, {0 / 0, 0, 0}})
    fails("bad argument #1 .*point 1 has a non%-finite coordinate", {{math.huge, 0, 0}})
    fails("bad argument #1 .*point 2 has a non%-finite coordinate", {0, 0, 0, 1, -math.huge, 0})
    fails("bad argument #2 .*epsilon' must be > 0", {{0, 0, 0}}, {epsilon = 0})
    fails("bad argument #2 .*epsilon' must be a number", {{0, 0, 0}}, {epsilon = "1"})
    fails("bad argument #2 .*unknown field 'eps'", {{0, 0, 0}}, {eps = 1})
    fails("bad argument #2 .*table expected", {{0, 0, 0}}, 5)
  end)

  it("refuses Mesh:hull on a mesh without vertices", function()
    local m = quarry.mesh.new{vertices = {}, indices = {}}
    local ok, err = pcall(m.hull, m)
    assert.is_false(ok)
    assert.matches("no vertices", err)
  end)
end)
