-- Mesh:shatter (engine/geom/fracture.c): fragments of a box, a sphere and a
-- torus. Independent checks: total volume equals the mesh's (divergence
-- theorem) within 1e-4 relative; every fragment closed (m:is_closed());
-- no overlap and no gap: random points inside the mesh fall in exactly one
-- fragment and points outside in none, by winding numbers (solid angles,
-- Van Oosterom and Strackee) computed here in Lua. Same seed, same
-- fragments; bad input gives errors.
local quarry = require "quarry"

local function box_mesh(sx, sy, sz)
  local v = {}
  for i = 0, 7 do
    v[#v + 1] = {(i & 1 == 1) and sx or -sx, (i & 2 == 2) and sy or -sy, (i & 4 == 4) and sz or -sz}
  end
  local quads = {{0, 4, 6, 2}, {1, 3, 7, 5}, {0, 1, 5, 4}, {2, 6, 7, 3}, {0, 2, 3, 1}, {4, 5, 7, 6}}
  local idx = {}
  for _, q in ipairs(quads) do
    for _, k in ipairs({q[1], q[2], q[3], q[1], q[3], q[4]}) do idx[#idx + 1] = k + 1 end
  end
  return quarry.mesh.new{vertices = v, indices = idx}
end

-- UV sphere: rings x segments, poles shared; 2 * segments * (rings - 1) triangles.
local function sphere_mesh(r, rings, segs)
  local v, idx = {{0, 0, r}}, {}
  for i = 1, rings - 1 do
    local th = math.pi * i / rings
    for j = 0, segs - 1 do
      local ph = 2 * math.pi * j / segs
      v[#v + 1] = {r * math.sin(th) * math.cos(ph), r * math.sin(th) * math.sin(ph), r * math.cos(th)}
    end
  end
  v[#v + 1] = {0, 0, -r}
  local function at(i, j) return 2 + (i - 1) * segs + (j % segs) end
  for j = 0, segs - 1 do
    idx[#idx + 1] = 1; idx[#idx + 1] = at(1, j); idx[#idx + 1] = at(1, j + 1)
  end
  for i = 1, rings - 2 do
    for j = 0, segs - 1 do
      local a, b, c, d = at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)
      for _, k in ipairs({a, b, c, a, c, d}) do idx[#idx + 1] = k end
    end
  end
  local s = #v
  for j = 0, segs - 1 do
    idx[#idx + 1] = s; idx[#idx + 1] = at(rings - 1, j + 1); idx[#idx + 1] = at(rings - 1, j)
  end
  return quarry.mesh.new{vertices = v, indices = idx}
end

local function torus_mesh(R, r, nu, nv)
  local v, idx = {}, {}
  for i = 0, nu - 1 do
    local u = 2 * math.pi * i / nu
    for j = 0, nv - 1 do
      local w = 2 * math.pi * j / nv
      v[#v + 1] = {(R + r * math.cos(w)) * math.cos(u), (R + r * math.cos(w)) * math.sin(u), r * math.sin(w)}
    end
  end
  local function at(i, j) return (i % nu) * nv + (j % nv) + 1 end
  for i = 0, nu - 1 do
    for j = 0, nv - 1 do
      local a, b, c, d = at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)
      for _, k in ipairs({a, b, c, a, c, d}) do idx[#idx + 1] = k end
    end
  end
  return quarry.mesh.new{vertices = v, indices = idx}
end

-- Winding number of mesh m about point p (1 inside a closed outward mesh).
local function winding(m, p)
  local vs, ids = m:vertices(), m:indices()
  local px, py, pz = p[1], p[2], p[3]
  local total = 0
  for k = 1, #ids, 3 do
    local a, b, c = vs[ids[k]], vs[ids[k + 1]], vs[ids[k + 2]]
    local ax, ay, az = a.x - px, a.y - py, a.z - pz
    local bx, by, bz = b.x - px, b.y - py, b.z - pz
    local cx, cy, cz = c.x - px, c.y - py, c.z - pz
    local la = math.sqrt(ax * ax + ay * ay + az * az)
    local lb = math.sqrt(bx * bx + by * by + bz * bz)
    local lc = math.sqrt(cx * cx + cy * cy + cz * cz)
    local det = ax * (by * cz - bz * cy) + ay * (bz * cx - bx * cz) + az * (bx * cy - by * cx)
    local den = la * lb * lc + (ax * bx + ay * by + az * bz) * lc + (bx * cx + by * cy + bz * cz) * la
      + (cx * ax + cy * ay + cz * az) * lb
    total = total + 2 * math.atan(det, den)
  end
  return total / (4 * math.pi)
end

local function rng(seed)
  local s = seed
  return function()
    s = (s * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff
    return ((s >> 11) & 0xfffffffffff) / 0x100000000000
  end
end

local function check_fragments(m, frags, samples)
  local total = 0
  for i, f in ipairs(frags) do
    assert.is_true(f:is_closed(), "fragment " .. i .. " is not closed")
    local v = f:volume()
    assert(v > 0, "fragment " .. i .. " has volume " .. v)
    total = total + v
  end
  local mv = m:volume()
  assert(math.abs(total - mv) <= 1e-4 * mv, ("fragments add to %.9g, mesh %.9g"):format(total, mv))
  local lo, hi = m:bounds()
  local r = rng(99)
  for _ = 1, samples do
    local p = {lo.x + r() * (hi.x - lo.x), lo.y + r() * (hi.y - lo.y), lo.z + r() * (hi.z - lo.z)}
    local inside = winding(m, p) > 0.5 and 1 or 0
    local n = 0
    for _, f in ipairs(frags) do
      if winding(f, p) > 0.5 then n = n + 1 end
    end
    assert.are.equal(inside, n, ("point %.6g %.6g %.6g in %d fragments"):format(p[1], p[2], p[3], n))
  end
end

local function hash(frags)
  local parts = {}
  for _, f in ipairs(frags) do
    local vs = f:vertices()
    for _, v in ipairs(vs) do parts[#parts + 1] = ("%.9g,%.9g,%.9g"):format(v.x, v.y, v.z) end
    parts[#parts + 1] = table.concat(f:indices(), ",")
  end
  return table.concat(parts, ";")
end

describe("Mesh:shatter", function()
  it("splits a box into closed convex pieces that fill it exactly", function()
    local m = box_mesh(1, 0.5, 2)
    local frags, info = m:shatter{pieces = 16, seed = 3}
    assert.are.equal(16, #frags)
    for i = 1, #frags do assert.is_true(info.convex[i]) end
    check_fragments(m, frags, 150)
  end)

  it("splits a sphere (2k triangles) with an impact point", function()
    local m = sphere_mesh(1, 32, 32)
    assert.is_true(m:is_closed())
    local frags, info = m:shatter{pieces = 32, at = {1, 0, 0}, seed = 5}
    assert.are.equal(32, #frags)
    check_fragments(m, frags, 60)
    -- Denser near the impact: sites uniform in the ball put half of them in
    -- the half facing it (x > 0). One seed's 32 sites are too few to tell a
    -- bias from luck (at one seed, a bound on this count is a bet on that
    -- seed), so the count is taken over 16 seeds: 512 sites, where uniform
    -- ones give 256 +- 11 and clustered ones about 390.
    local near, total = 0, 0
    for seed = 1, 16 do
      local _, more = m:shatter{pieces = 32, at = {1, 0, 0}, seed = seed}
      for _, s in ipairs(more.sites) do
        near = near + (s.x > 0 and 1 or 0)
        total = total + 1
      end
    end
    assert.are.equal(512, total)
    assert(near > 0.6 * total, "only " .. near .. " of " .. total .. " sites face the impact")
    -- interior triangles come after the surface ones
    for i, f in ipairs(frags) do
      assert(info.interior[i] >= 1 and info.interior[i] <= f:triangle_count() + 1)
    end
  end)

  it("splits a torus (not convex) into closed pieces", function()
    local m = torus_mesh(1, 0.35, 48, 24)
    assert.is_true(m:is_closed())
    local frags, info = m:shatter{pieces = 12, seed = 2}
    assert(#frags >= 12)
    check_fragments(m, frags, 60)
    local concave = 0
    for i = 1, #frags do if not info.convex[i] then concave = concave + 1 end end
    assert(concave > 0, "a torus piece must be concave")
  end)

  it("uses explicit points as sites", function()
    local m = box_mesh(1, 1, 1)
    local frags = m:shatter{points = {{-0.5, 0, 0}, {0.5, 0, 0}}}
    assert.are.equal(2, #frags)
    assert.near(4, frags[1]:volume(), 1e-5)
    assert.near(4, frags[2]:volume(), 1e-5)
  end)

  it("gives the same fragments for the same seed", function()
    local m = sphere_mesh(1, 12, 16)
    local a = hash((m:shatter{pieces = 10, seed = 42, at = {0, 1, 0}}))
    local b = hash((m:shatter{pieces = 10, seed = 42, at = {0, 1, 0}}))
    local c = hash((m:shatter{pieces = 10, seed = 43, at = {0, 1, 0}}))
    assert.are.equal(a, b)
    assert.are_not.equal(a, c)
  end)

  it("rejects bad input", function()
    local m = box_mesh(1, 1, 1)
    assert.has_error(function() m:shatter{pieces = 0} end)
    assert.has_error(function() m:shatter{pieces = 4097} end)
    assert.has_error(function() m:shatter{pieces = -3} end)
    assert.has_error(function() m:shatter{at = {0 / 0, 0, 0}} end)
    assert.has_error(function() m:shatter{colour = 1} end)
    local frags, err = m:shatter{at = {100, 0, 0}}
    assert.is_nil(frags)
    assert.matches("impact point is farther", err)
    frags, err = m:shatter{points = {{5, 0, 0}}}
    assert.is_nil(frags)
    assert.matches("outside the mesh's bounds", err)
    assert.are.equal(1, #m:shatter{pieces = 1})
    assert.are.equal(4096, #(m:shatter{pieces = 4096}))
  end)
end)
