-- Rigid bodies from Lua (API.md "Bodies", "Queries"), each checked against an
-- answer worked out here: closed forms of free fall, rolling and sliding,
-- Archimedes for floating, analytic distances for rays, overlaps and casts,
-- mass = density * volume, and invariants (no drift, no height gained, no
-- tunnelling, equal hashes for equal runs whatever the thread count).
local quarry = require "quarry"
local V = quarry.vec3
local Q = quarry.quat

local G = 9.81
local DT = 1 / 60

local function step(w, seconds, each)
  local n = math.floor(seconds / DT + 0.5)
  for i = 1, n do
    assert.are.equal(1, w:step(DT))
    if each then each(i * DT) end
  end
end

-- Height of the terrain surface under (x, z): the first terrain hit from above.
local function ground(w, x, z)
  local hit = assert(w:raycast({x, 500, z}, {0, -1, 0}, 1000, {bodies = false}))
  return hit.position.y
end

local function flat_world(size, def)
  local w = quarry.world.new(def or {})
  w.terrain:generate{kind = "flat", size = size or {32, 16, 32}}
  return w
end

local materials = {}
-- A user material with the given friction and restitution (defined once per name).
local function material(name, friction, restitution, density)
  if not materials[name] then
    quarry.material.define{name = name, friction = friction, restitution = restitution,
                           density = density or 1000}
    materials[name] = true
  end
  return name
end

local function finite(v) return v == v and v > -math.huge and v < math.huge end
local function finite_vec(v) return finite(v.x) and finite(v.y) and finite(v.z) end

local function near(a, b, tol, what)
  assert.is_true(math.abs(a - b) <= tol, ("%s: %.6f, expected %.6f +- %g"):format(what or "value", a, b, tol))
end

local function error_of(f)
  local ok, e = pcall(f)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

describe("world:spawn", function()
  it("gives mass = density * volume for every shape (capsule height is the total length)", function()
    local w = quarry.world.new{}
    local rho = quarry.material.get("rock").density
    local s = w:spawn{shape = "sphere", radius = 0.5}
    near(s.mass, rho * 4 / 3 * math.pi * 0.125, 1e-6 * s.mass, "sphere mass")
    assert.are.equal("rock", s.material)
    local b = w:spawn{shape = "box", size = {1, 2, 3}, position = {5, 0, 0}, material = "wood"}
    near(b.mass, 700 * 6, 1e-6, "box mass")
    local cube = w:spawn{shape = "box", size = 2, position = {10, 0, 0}}
    near(cube.mass, rho * 8, 1e-6, "cube mass")
    local c = w:spawn{shape = "capsule", radius = 0.5, height = 3, position = {15, 0, 0}}
    local vol = math.pi * 0.25 * (3 - 1) + 4 / 3 * math.pi * 0.125
    near(c.mass, rho * vol, 1e-6 * c.mass, "capsule mass")
    local pts = {}
    for _, x in ipairs{0, 2} do for _, y in ipairs{0, 2} do for _, z in ipairs{0, 2} do
      pts[#pts + 1] = {x, y, z}
    end end end
    local h = w:spawn{shape = "hull", points = pts, position = {20, 0, 0}}
    near(h.mass, rho * 8, 1e-6 * h.mass, "hull mass")
    -- the hull's frame is the points' frame: its centre of mass is at (1, 1, 1) from position
    assert.is_true((h.center - V(21, 1, 1)):length() < 1e-9)
    local flat = {}
    for _, p in ipairs(pts) do flat[#flat + 1] = p[1]; flat[#flat + 1] = p[2]; flat[#flat + 1] = p[3] end
    near(w:spawn{shape = "hull", points = flat, position = {25, 0, 0}}.mass, rho * 8, 1e-6 * rho, "flat points")
    near(w:spawn{shape = "box", size = 1, mass = 50, position = {30, 0, 0}}.mass, 50, 1e-9, "given mass")
  end)

  it("turns a mesh into one hull, or a compound for a non-convex mesh", function()
    local w = quarry.world.new{}
    local cube = quarry.hull{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}, {0, 0, 1}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}}
    local b = w:spawn{shape = "mesh", mesh = cube, material = "wood"}
    near(b.mass, 700, 1e-6, "cube mesh mass")
    assert.matches("hull", tostring(b))
    -- an L of two 1x1x4 bars (7 unit cubes): the cubes' outer faces, welded
    local function solid(x, y, z)
      return z == 0 and x >= 0 and y >= 0 and ((y < 1 and x < 4) or (x < 1 and y < 4))
    end
    local v, idx, ids = {}, {}, {}
    local function vid(x, y, z)
      local k = x .. "," .. y .. "," .. z
      if not ids[k] then v[#v + 1] = {x, y, z}; ids[k] = #v end
      return ids[k]
    end
    local function quad(a, b2, c, d) for _, i in ipairs{a, b2, c, a, c, d} do idx[#idx + 1] = i end end
    for x = 0, 3 do for y = 0, 3 do
      if solid(x, y, 0) then
        if not solid(x + 1, y, 0) then quad(vid(x+1, y, 0), vid(x+1, y+1, 0), vid(x+1, y+1, 1), vid(x+1, y, 1)) end
        if not solid(x - 1, y, 0) then quad(vid(x, y, 0), vid(x, y, 1), vid(x, y+1, 1), vid(x, y+1, 0)) end
        if not solid(x, y + 1, 0) then quad(vid(x, y+1, 0), vid(x, y+1, 1), vid(x+1, y+1, 1), vid(x+1, y+1, 0)) end
        if not solid(x, y - 1, 0) then quad(vid(x, y, 0), vid(x+1, y, 0), vid(x+1, y, 1), vid(x, y, 1)) end
        quad(vid(x, y, 1), vid(x+1, y, 1), vid(x+1, y+1, 1), vid(x, y+1, 1))
        quad(vid(x, y, 0), vid(x, y+1, 0), vid(x+1, y+1, 0), vid(x+1, y, 0))
      end
    end end
    local L = quarry.mesh.new{vertices = v, indices = idx}
    assert.is_true(L:is_closed())
    near(L:volume(), 7, 1e-9, "L volume")
    local hull_volume = 0
    for _, h in ipairs((L:decompose())) do hull_volume = hull_volume + h:volume() end
    local l = w:spawn{shape = "mesh", mesh = L, position = {10, 0, 0}, material = "wood"}
    assert.matches("compound", tostring(l))
    near(l.mass, 700 * hull_volume, 1e-6 * l.mass, "L mesh mass against its hulls")
    near(l.mass, 700 * 7, 0.05 * 700 * 7, "L mesh mass against the mesh")
  end)

  it("keeps position, rotation ({w, x, y, z}), velocities and name as given", function()
    local w = quarry.world.new{}
    local q = Q.from_axis_angle({0, 1, 0}, math.pi / 2)
    local b = w:spawn{shape = "box", size = {4, 1, 1}, position = {1, 2, 3}, rotation = q,
                      velocity = {1, 0, 0}, angular_velocity = {0, 0.5, 0}, name = "plank"}
    assert.are.equal(V(1, 2, 3), b.position)
    local r = b.rotation
    assert.is_true(math.abs(math.abs(r.w * q.w + r.x * q.x + r.y * q.y + r.z * q.z) - 1) < 1e-12)
    assert.is_true((b.velocity - V(1, 0, 0)):length() < 1e-12)
    assert.is_true((b.angular_velocity - V(0, 0.5, 0)):length() < 1e-12)
    assert.are.equal("plank", b.name)
    -- the 4 m side now lies along z: the mesh's bounds say so
    local mn, mx = b:mesh():bounds()
    assert.is_true((mn - V(0.5, 1.5, 1)):length() < 1e-5, tostring(mn))
    assert.is_true((mx - V(1.5, 2.5, 5)):length() < 1e-5, tostring(mx))
    b.name = "board"
    assert.are.equal("board", b.name)
    b.name = nil
    assert.is_nil(b.name)
    b.position = {4, 5, 6}
    assert.are.equal(V(4, 5, 6), b.position)
    b.rotation = {1, 0, 0, 0}
    assert.is_true(math.abs(b.rotation.w - 1) < 1e-12)
    b.velocity = V(0, 3, 0)
    assert.are.equal(V(0, 3, 0), b.velocity)
    b.angular_velocity = {1, 2, 3}
    assert.is_true((b.angular_velocity - V(1, 2, 3)):length() < 1e-12)
  end)

  it("b:mesh() is the shape in world space", function()
    local w = quarry.world.new{}
    local s = w:spawn{shape = "sphere", radius = 0.75, position = {3, 4, 5}}
    local m = s:mesh()
    assert.is_true(m:triangle_count() > 20)
    for _, p in ipairs(m:vertices()) do
      near((p - V(3, 4, 5)):length(), 0.75, 1e-5, "sphere vertex radius")
    end
    local b = w:spawn{shape = "box", size = {1, 2, 3}, position = {0, 10, 0}}
    near(b:mesh():volume(), 6, 1e-5, "box mesh volume")
  end)

  it("lists bodies in creation order, the same Body objects each time", function()
    local w = quarry.world.new{}
    local made = {}
    for i = 1, 5 do made[i] = w:spawn{shape = "sphere", radius = 0.5, position = {i * 3, 0, 0}} end
    local list = w:bodies()
    assert.are.equal(5, #list)
    for i = 1, 5 do assert.are.equal(made[i], list[i]) end
    assert.are.equal(w:bodies()[3], made[3])
    made[2]:destroy()
    list = w:bodies()
    assert.are.equal(4, #list)
    assert.are.equal(made[3], list[2])
    assert.is_false(made[2]:valid())
    assert.is_true(made[3]:valid())
    made[2]:destroy() -- twice is harmless
    assert.are.equal(4, w:stats().bodies)
  end)

  it("static bodies have no mass and do not move", function()
    local w = quarry.world.new{}
    local b = w:spawn{shape = "box", size = {4, 1, 4}, static = true, position = {0, 10, 0}}
    assert.is_true(b.static)
    assert.are.equal(0, b.mass)
    step(w, 0.5)
    assert.are.equal(V(0, 10, 0), b.position)
  end)
end)

describe("dynamics", function()
  it("free fall matches the closed form", function()
    local w = quarry.world.new{}
    local b = w:spawn{shape = "sphere", radius = 0.5, position = {0, 100, 0}, velocity = {3, 0, 0}}
    step(w, 2)
    local t = 2
    local drop = 0.5 * G * t * t
    near(b.position.y, 100 - drop, 0.01 * drop, "height after 2 s")
    near(b.velocity.y, -G * t, 1e-6 * G * t, "vertical speed")
    near(b.position.x, 3 * t, 1e-6, "horizontal travel")
    near(b.velocity.x, 3, 1e-12, "horizontal speed")
  end)

  it("impulses, forces and torques change the motion as Newton says", function()
    local w = quarry.world.new{gravity = {0, 0, 0}}
    local r = 0.5
    local a = w:spawn{shape = "sphere", radius = r, position = {0, 0, 0}}
    local m, I = a.mass, 0.4 * a.mass * r * r
    -- 10 N s along z at the sphere's +x point: dv = J / m, dw = (r x J) / I
    a:apply_impulse({0, 0, 10}, {r, 0, 0})
    assert.is_true((a.velocity - V(0, 0, 10 / m)):length() < 1e-9 * 10 / m)
    assert.is_true((a.angular_velocity - V(0, -10 * r / I, 0)):length() < 1e-6 * 10 * r / I)
    local b = w:spawn{shape = "sphere", radius = r, position = {10, 0, 0}}
    b:apply_force({6 * m, 0, 0})   -- 6 m/s^2 for one step
    b:apply_torque({0, 3 * I, 0})  -- 3 rad/s^2 for one step
    step(w, DT)
    near(b.velocity.x, 6 * DT, 1e-6 * 6 * DT, "velocity after one step of force")
    near(b.angular_velocity.y, 3 * DT, 1e-6 * 3 * DT, "spin after one step of torque")
    step(w, DT)
    near(b.velocity.x, 6 * DT, 1e-6 * 6 * DT, "the force acts for one step only")
  end)

  -- A large static box rotated by theta about z is a clean slope; up is its
  -- normal n, uphill its x axis u.
  local function slope(w, theta, mat)
    local q = Q.from_axis_angle({0, 0, 1}, theta)
    w:spawn{shape = "box", size = {60, 1, 10}, rotation = q, static = true, material = mat}
    return q, q * V(0, 1, 0), q * V(1, 0, 0)
  end

  it("a sphere rolls down a slope at (5/7) g sin(theta)", function()
    local w = quarry.world.new{}
    local theta = math.rad(20)
    local _, n, u = slope(w, theta, "rock")
    local r = 0.5
    local b = w:spawn{shape = "sphere", radius = r, position = n * (0.5 + r) + u * 15}
    local v1, v2
    step(w, 2, function(t)
      if math.abs(t - 0.5) < 1e-9 then v1 = b.velocity:dot(-u) end
      if math.abs(t - 2) < 1e-9 then v2 = b.velocity:dot(-u) end
    end)
    local a = (v2 - v1) / 1.5
    local expect = 5 / 7 * G * math.sin(theta)
    near(a, expect, 0.05 * expect, "rolling acceleration")
    -- rolling, not sliding: w r = v
    near(b.angular_velocity:length() * r, b.velocity:length(), 0.05 * b.velocity:length(), "w r")
  end)

  it("a box on a slope stays put when friction > tan(theta), slides at g (sin - mu cos) otherwise", function()
    local theta = math.rad(20)
    local grip = material("spec_grip", 0.9, 0)
    local slick = material("spec_slick", 0.1, 0)
    for _, case in ipairs{{grip, 0.9}, {slick, 0.1}} do
      local w = quarry.world.new{}
      local q, n, u = slope(w, theta, case[1])
      local b = w:spawn{shape = "box", size = 1, rotation = q, position = n * 1.0 + u * 10, material = case[1]}
      local p0 = b.position
      local v1, v2
      step(w, 2, function(t)
        if math.abs(t - 0.5) < 1e-9 then v1 = b.velocity:dot(-u) end
        if math.abs(t - 2) < 1e-9 then v2 = b.velocity:dot(-u) end
      end)
      if case[2] > math.tan(theta) then
        assert.is_true((b.position - p0):length() < 0.02, "box crept " .. (b.position - p0):length() .. " m")
      else
        local expect = G * (math.sin(theta) - case[2] * math.cos(theta))
        near((v2 - v1) / 1.5, expect, 0.05 * expect, "sliding acceleration")
      end
    end
  end)

  it("a stack of 10 boxes on terrain stands for 10 s with drift under 0.05 m", function()
    local w = flat_world()
    local y0 = ground(w, 16.3, 16.3)
    local boxes, start = {}, {}
    for i = 1, 10 do
      boxes[i] = w:spawn{shape = "box", size = 1, position = {16.3, y0 + 0.5 + (i - 1), 16.3}}
      start[i] = boxes[i].position
    end
    step(w, 10)
    for i = 1, 10 do
      local d = (boxes[i].position - start[i]):length()
      assert.is_true(d < 0.05, ("box %d drifted %.4f m"):format(i, d))
    end
  end)

  it("a 55-box pyramid settles and every body sleeps", function()
    local w = flat_world({48, 16, 48})
    local y0 = ground(w, 24, 24)
    local top, top0
    for row = 0, 9 do
      for i = 0, 9 - row do
        local x = 24 + (i - (9 - row) / 2) * 1.02
        local b = w:spawn{shape = "box", size = 1, position = {x, y0 + 0.5 + row, 24}}
        if row == 9 then top, top0 = b, b.position end
      end
    end
    assert.are.equal(55, #w:bodies())
    local slept
    for t = 1, 30 do
      step(w, 1)
      local all = true
      for _, b in ipairs(w:bodies()) do all = all and b.sleeping end
      if all then slept = t break end
    end
    assert.is_truthy(slept, "not every body fell asleep in 30 s")
    assert.are.equal(0, w:stats().awake)
    assert.is_true((top.position - top0):length() < 0.1, "the top box moved " .. (top.position - top0):length())
  end)

  -- A ball of material mat dropped onto a floor of the same material; returns
  -- the rest height of its centre and the heights at every step.
  local function drop(mat, height)
    local w = quarry.world.new{}
    w.terrain:fill_region({0, 0, 0}, {16, 4, 16}, mat)
    local floor = ground(w, 8.3, 8.3)
    local rest = floor + 0.5
    local b = w:spawn{shape = "sphere", radius = 0.5, position = {8.3, rest + height, 8.3}, material = mat}
    local ys = {}
    step(w, 4, function() ys[#ys + 1] = b.position.y end)
    return rest, ys
  end

  it("restitution 0 never gains height", function()
    local rest, ys = drop(material("spec_dead", 0.5, 0), 3)
    local touched = false
    for i, y in ipairs(ys) do
      if y < rest + 0.05 then touched = true end
      if touched then assert.is_true(y < rest + 0.02, ("step %d: %.4f above rest"):format(i, y - rest)) end
    end
    assert.is_true(touched)
  end)

  it("restitution 1 returns at least 90% of the drop height", function()
    local h = 3
    local rest, ys = drop(material("spec_bouncy", 0.5, 1), h)
    local first
    for i = 2, #ys - 1 do
      if ys[i] < ys[i - 1] and ys[i] <= ys[i + 1] then first = i break end
    end
    assert.is_truthy(first, "no bounce")
    -- the way back up to 3 m takes 0.78 s; the next bounce comes after 1.5 s
    local peak = -math.huge
    for i = first, math.min(#ys, first + 70) do peak = math.max(peak, ys[i]) end
    local back = (peak - rest) / h
    assert.is_true(back >= 0.9, ("bounced back to %.3f of the drop height"):format(back))
    assert.is_true(back <= 1.05, ("gained energy: %.3f of the drop height"):format(back))
  end)

  it("wood floats with its draft at the density ratio; rock sinks", function()
    local w = quarry.world.new{}
    w.terrain:generate{kind = "flat", size = {32, 24, 32}, water_level = 16}
    local floor = ground(w, 16.3, 16.3)
    local surface = assert(w:raycast({16.3, 100, 16.3}, {0, -1, 0}, 200,
                                     {terrain = false, water = true, bodies = false})).position.y
    assert.is_true(surface > floor + 3)
    local plank = w:spawn{shape = "box", size = {2, 1, 2}, material = "wood", position = {10, surface + 0.5, 10}}
    local rock = w:spawn{shape = "box", size = 1, material = "rock", position = {22, surface + 0.5, 22}}
    step(w, 15)
    local ratio = quarry.material.get("wood").density / quarry.material.get("water").density
    local draft = surface - (plank.center.y - 0.5)
    near(draft, ratio * 1, 0.1 * ratio, "draft of a wood plank 1 m thick")
    assert.is_true(math.abs(plank.velocity.y) < 0.05, "plank still bobbing at " .. plank.velocity.y)
    near(rock.center.y, ground(w, 22, 22) + 0.5, 0.1, "rock on the bottom")
  end)

  it("a sphere at 200 m/s does not pass through a wall one voxel thick", function()
    local w = quarry.world.new{}
    w.terrain:fill_region({30, 0, 0}, {31, 20, 20}, "rock")
    local near_face = assert(w:raycast({0, 10.3, 10.3}, {1, 0, 0}, 100)).position.x
    local far_face = assert(w:raycast({60, 10.3, 10.3}, {-1, 0, 0}, 100)).position.x
    assert.is_true(far_face > near_face, "the wall has two faces")
    local b = w:spawn{shape = "sphere", radius = 0.25, position = {5, 10.3, 10.3}, velocity = {200, 0, 0}}
    local max_x = -math.huge
    step(w, 1, function() max_x = math.max(max_x, b.position.x) end)
    assert.is_true(max_x < far_face, ("reached x = %.3f, the wall's far face is at %.3f"):format(max_x, far_face))
    assert.is_true(b.position.x < near_face)
  end)

  it("a box sliding over flat terrain across chunk borders keeps |vy| < 0.05", function()
    local slick = material("spec_frictionless", 0, 0)
    for _, v in ipairs{{12, 0, 0}, {8, 0, 8}} do
      local w = flat_world({112, 16, 112})
      local x0, z0 = 4.3, 4.3
      local rest = ground(w, x0, z0) + 0.5
      local b = w:spawn{shape = "box", size = 1, position = {x0, rest, z0}, velocity = v, material = slick}
      local worst, dy = 0, 0
      step(w, 8, function(t)
        if t > 0.1 then
          worst = math.max(worst, math.abs(b.velocity.y))
          dy = math.max(dy, math.abs(b.position.y - rest))
        end
      end)
      assert.is_true(b.position.x > x0 + 60, "slid to " .. tostring(b.position))
      assert.is_true(worst < 0.05, ("|vy| reached %.4f m/s going %s"):format(worst, tostring(V(v[1], v[2], v[3]))))
      assert.is_true(dy < 0.02, ("height changed by %.4f m"):format(dy))
      near(b.velocity:length(), V(v[1], v[2], v[3]):length(), 0.01 * V(v[1], v[2], v[3]):length(), "speed")
    end
  end)

  it("a sphere rolling over flat terrain across chunk borders keeps |vy| < 0.05 and its speed", function()
    local w = flat_world({112, 16, 32})
    local rest = ground(w, 4.3, 12.3) + 0.5
    -- rolling without slipping along +x: w = -v / r about z
    local b = w:spawn{shape = "sphere", radius = 0.5, position = {4.3, rest, 12.3}, velocity = {8, 0, 0},
                      angular_velocity = {0, 0, -16}}
    local worst, dy = 0, 0
    step(w, 5, function(t)
      if t > 0.1 then
        worst = math.max(worst, math.abs(b.velocity.y))
        dy = math.max(dy, math.abs(b.position.y - rest))
      end
    end)
    assert.is_true(worst < 0.05, ("|vy| reached %.3f m/s"):format(worst))
    assert.is_true(dy < 0.02, ("height changed by %.3f m"):format(dy))
    near(b.velocity.x, 8, 0.05 * 8, "rolling speed after 5 s")
  end)

  it("a sleeping body wakes when the terrain under it is carved, or a body lands on it", function()
    local w = flat_world()
    local y0 = ground(w, 10.3, 10.3)
    local b = w:spawn{shape = "box", size = 1, position = {10.3, y0 + 0.5, 10.3}}
    local c = w:spawn{shape = "box", size = 1, position = {20.3, y0 + 0.5, 20.3}}
    for _ = 1, 50 do
      if b.sleeping and c.sleeping then break end
      step(w, 0.1)
    end
    assert.is_true(b.sleeping and c.sleeping, "the boxes never slept")
    w.terrain:carve_ball({10.3, y0 - 0.5, 10.3}, 2.5)
    step(w, DT)
    assert.is_false(b.sleeping)
    assert.is_true(c.sleeping, "a far sleeper stays asleep")
    step(w, 1)
    assert.is_true(b.position.y < y0 - 0.3, "the box did not fall into the hole")
    local d = w:spawn{shape = "box", size = 1, position = {4.3, y0 + 0.5, 26.3}}
    for _ = 1, 50 do
      if d.sleeping then break end
      step(w, 0.1)
    end
    assert.is_true(d.sleeping)
    d.velocity = {1, 0, 0}
    assert.is_false(d.sleeping, "setting a velocity wakes the body")
    w:spawn{shape = "sphere", radius = 0.5, position = {20.3, y0 + 3, 20.3}}
    local woke = false
    step(w, 1, function() woke = woke or not c.sleeping end)
    assert.is_true(woke, "a body landing on a sleeper did not wake it")
  end)
end)

describe("determinism", function()
  local function scenario(threads)
    local w = quarry.world.new{threads = threads}
    w.terrain:generate{kind = "hills", size = {64, 32, 64}, seed = 3}
    local shapes = {
      {shape = "sphere", radius = 0.4},
      {shape = "box", size = {0.8, 0.5, 1.1}},
      {shape = "capsule", radius = 0.3, height = 1.2},
      {shape = "hull", points = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0.7, 0.7, 0.7}}},
    }
    for i = 0, 299 do
      local def = {}
      for k, v in pairs(shapes[i % 4 + 1]) do def[k] = v end
      local x, z, layer = i % 10, (i // 10) % 10, i // 100
      def.position = {12 + x * 4, 34 + layer * 3, 12 + z * 4}
      def.rotation = Q.from_euler(i * 0.37, i * 0.11, i * 0.23)
      def.material = ({"rock", "wood", "metal", "dirt"})[i % 4 + 1]
      w:spawn(def)
    end
    step(w, 2)
    return w
  end

  it("two runs of a 300-body scenario give equal hashes, on 0 or 2 worker threads", function()
    local a, b = scenario(0), scenario(2)
    assert.are.equal(a:hash(), b:hash())
    assert.are.equal(300, #a:bodies())
    local s = a:stats()
    assert.are.equal(300, s.bodies)
    assert.is_true(s.awake <= 300 and s.pairs > 0 and s.contacts > 0 and s.manifolds > 0)
    assert.is_true(s.ms_broadphase >= 0 and s.ms_narrowphase >= 0 and s.ms_solver >= 0)
    for _, body in ipairs(a:bodies()) do
      assert.is_true(finite_vec(body.position))
    end
  end)

  it("a buried body is pushed towards the surface above it, whatever the terrain cache holds", function()
    -- Rock below y = 20, and maybe a slab of rock from y = 30 to 34. The box
    -- is buried at y = 13 in a physics chunk that a hole far from it keeps
    -- from being solid throughout, so its contact comes from a ray up to the
    -- surface at 20, in a chunk the step does not build before its parallel
    -- queries. A raycast from y = 25 first puts only the slab's chunk in one
    -- world's cache; there the ray must not take the slab's underside (30)
    -- for the surface: every world must push the box as the world without
    -- the slab does.
    local function buried(slab, cache_slab)
      local w = quarry.world.new{}
      local T = w.terrain
      T:fill_region({0, 0, 0}, {32, 20, 32}, "rock")
      if slab then T:fill_region({0, 30, 0}, {32, 34, 32}, "rock") end
      T:fill_region({8, 8, 8}, {9, 9, 9}, "air")
      if cache_slab then
        near(w:raycast({12.5, 25, 12.5}, {0, 1, 0}, 20).distance, 5, 1e-9, "raycast to the slab")
      end
      local b = w:spawn{shape = "box", size = 1, position = {12.5, 13, 12.5}}
      step(w, DT)
      return w, b
    end
    local reference = select(2, buried(false, false))
    assert.is_true(reference.velocity.y > 0.5, "the box is pushed up")
    for _, cache_slab in ipairs{false, true} do
      local w, b = buried(true, cache_slab)
      assert.are.equal(reference.velocity.y, b.velocity.y)
      assert.are.equal(reference.position.y, b.position.y)
      step(w, 1)
      assert.is_true(b.position.y > 13.5 and b.position.y < 20.5, "rising towards y = 20: " .. b.position.y)
    end
  end)

  it("a physics cache too small for a step's chunks changes nothing but speed", function()
    -- 32 bodies dropped 1.5 m onto hills. With a 64 KiB cache the chunk meshes
    -- built for one step's parallel terrain queries push each other out, so
    -- queries miss chunks; they must be redone, not answered without them.
    local function run(cache)
      local w = quarry.world.new{physics_cache = cache}
      w.terrain:generate{kind = "hills", size = {96, 32, 96}, seed = 2}
      for i = 0, 31 do
        local x, z = 4 + (i % 8) * 12, 4 + (i // 8) * 12
        local p = {x, ground(w, x, z) + 1.5, z}
        w:spawn(i % 2 == 0 and {shape = "box", size = 0.8, position = p} or {shape = "sphere", radius = 0.4, position = p})
      end
      step(w, 40 * DT)
      return w
    end
    local big, small = run(32 * 2 ^ 20), run(2 ^ 16)
    assert.is_true(small:stats().cached_chunks < big:stats().cached_chunks / 2, "the small cache evicted chunks")
    assert.are.equal(big:hash(), small:hash())
    for _, b in ipairs(small:bodies()) do
      assert.is_true(b.position.y > ground(small, b.position.x, b.position.z), "above the ground")
    end
  end)

  it("the hash covers every body's state", function()
    local w = quarry.world.new{}
    local b = w:spawn{shape = "box", size = 1, position = {0, 5, 0}}
    local h0 = w:hash()
    b.position = b.position + V(0, 1e-9, 0)
    local h1 = w:hash()
    assert.are_not.equal(h0, h1)
    b.velocity = {0, 0, 1e-9}
    assert.are_not.equal(h1, w:hash())
    local h2 = w:hash()
    w:spawn{shape = "sphere", radius = 1, position = {10, 0, 0}}
    assert.are_not.equal(h2, w:hash())
  end)
end)

describe("contacts", function()
  it("on_contact and world:on('contact') report a landing with its speed, normal and material", function()
    local w = flat_world()
    local y0 = ground(w, 8.3, 8.3)
    local under = assert(w:raycast({8.3, 50, 8.3}, {0, -1, 0}, 100)).material
    local b = w:spawn{shape = "sphere", radius = 0.5, position = {8.3, y0 + 0.5 + 2, 8.3}}
    local calls, world_calls = {}, {}
    b.on_contact = function(self, other, c) calls[#calls + 1] = {self = self, other = other, c = c} end
    w:on("contact", function(a, other, c) world_calls[#world_calls + 1] = {a = a, other = other, c = c} end)
    assert.is_function(b.on_contact)
    step(w, 2)
    assert.is_true(#calls >= 1 and #calls <= 3, "calls: " .. #calls)
    assert.are.equal(#calls, #world_calls)
    local c = calls[1]
    assert.are.equal(b, c.self)
    assert.are.equal("terrain", c.other)
    assert.are.equal(b, world_calls[1].a)
    assert.is_true(c.c.normal.y > 0.99)
    near(c.c.speed, math.sqrt(2 * G * 2), 0.1 * math.sqrt(2 * G * 2), "impact speed")
    assert.is_true(c.c.impulse > 0)
    assert.are.equal(under, c.c.material)
    near(c.c.position.y, y0, 0.1, "contact height")
  end)

  it("body pairs call both bodies with normals from the other towards self", function()
    local w = quarry.world.new{gravity = {0, 0, 0}}
    local a = w:spawn{shape = "sphere", radius = 0.5, position = {0, 0, 0}, velocity = {5, 0, 0}, material = "metal"}
    local b = w:spawn{shape = "sphere", radius = 0.5, position = {3, 0, 0}, material = "wood"}
    local got = {}
    a.on_contact = function(self, other, c) got.a = {self, other, c} end
    b.on_contact = function(self, other, c) got.b = {self, other, c} end
    local pair
    w:on("contact", function(x, y, c) pair = {x, y, c} end)
    step(w, 1)
    assert.are.equal(a, got.a[1]); assert.are.equal(b, got.a[2])
    assert.are.equal(b, got.b[1]); assert.are.equal(a, got.b[2])
    assert.is_true(got.a[3].normal.x < -0.99, "normal towards a")
    assert.is_true(got.b[3].normal.x > 0.99, "normal towards b")
    assert.are.equal("wood", got.a[3].material)
    assert.are.equal("metal", got.b[3].material)
    local x, y, c = pair[1], pair[2], pair[3]
    assert.is_true((x == a and y == b) or (x == b and y == a))
    assert.is_true(c.normal:dot(x.position - y.position) > 0)
  end)

  it("destroying bodies (or spawning) inside callbacks is safe", function()
    local w = quarry.world.new{gravity = {0, 0, 0}}
    local a = w:spawn{shape = "sphere", radius = 0.5, position = {0, 0, 0}, velocity = {5, 0, 0}}
    local b = w:spawn{shape = "sphere", radius = 0.5, position = {3, 0, 0}}
    local calls, world_calls = 0, 0
    local function die(self) calls = calls + 1; self:destroy() end
    a.on_contact, b.on_contact = die, die
    w:on("contact", function() world_calls = world_calls + 1 end)
    step(w, 1)
    assert.are.equal(1, calls)
    assert.are.equal(0, world_calls)
    assert.are.equal(1, #w:bodies())
    local dead = a:valid() and b or a
    assert.is_false(dead:valid())
    assert.matches("body was destroyed", error_of(function() return dead.position end))
    assert.matches("body was destroyed", error_of(function() dead:apply_impulse({1, 0, 0}) end))
    assert.matches("body was destroyed", error_of(function() dead.velocity = {1, 0, 0} end))
    assert.are.equal("Body (destroyed)", tostring(dead))

    -- a world handler that destroys both, spawns, and steps from inside
    local w2 = quarry.world.new{gravity = {0, 0, 0}}
    w2:spawn{shape = "box", size = 1, position = {0, 0, 0}, velocity = {5, 0, 0}}
    w2:spawn{shape = "box", size = 1, position = {3, 0, 0}}
    local fired = 0
    w2:on("contact", function(x, y)
      fired = fired + 1
      x:destroy(); y:destroy()
      w2:spawn{shape = "sphere", radius = 1, position = {0, 10, 0}}
      w2:step(DT)
    end)
    step(w2, 1)
    assert.are.equal(1, fired)
    assert.are.equal(1, #w2:bodies())
    -- destroying the world inside a callback ends the dispatch
    local w3 = quarry.world.new{gravity = {0, 0, 0}}
    w3:spawn{shape = "sphere", radius = 0.5, velocity = {5, 0, 0}}
    w3:spawn{shape = "sphere", radius = 0.5, position = {3, 0, 0}}
    w3:on("contact", function() w3:destroy() end)
    assert.has_error(function() step(w3, 1) end) -- the next step finds the world destroyed
  end)

  it("an error in a callback comes out of world:step; the world goes on", function()
    local w = quarry.world.new{gravity = {0, 0, 0}}
    local a = w:spawn{shape = "sphere", radius = 0.5, velocity = {5, 0, 0}}
    w:spawn{shape = "sphere", radius = 0.5, position = {3, 0, 0}}
    a.on_contact = function() error("boom") end
    local ok, e
    for _ = 1, 60 do
      ok, e = pcall(w.step, w, DT)
      if not ok then break end
    end
    assert.is_false(ok)
    assert.matches("boom", tostring(e))
    a.on_contact = nil
    assert.are.equal(1, w:step(DT))
  end)

  it("reports contacts of every step of a world:step call, once each", function()
    local w = quarry.world.new{gravity = {0, 0, 0}}
    local a = w:spawn{shape = "sphere", radius = 0.5, velocity = {5, 0, 0}}
    w:spawn{shape = "sphere", radius = 0.5, position = {3, 0, 0}}
    local calls = 0
    a.on_contact = function() calls = calls + 1 end
    assert.are.equal(60, w:step(1)) -- they meet after 0.4 s, in the middle of the call
    assert.are.equal(1, calls)
  end)

  it("one landing is one contact, on a chunk border too; rolling across borders adds none", function()
    local w = flat_world({64, 16, 32})
    local y0 = ground(w, 16, 16)
    -- (16, 16) is a corner of four physics chunks. Dropped from 3 cm it lands
    -- below the restitution threshold (1 m/s), so there is no rebound (a real
    -- bounce would be a second contact).
    local b = w:spawn{shape = "sphere", radius = 0.5, position = {16, y0 + 0.53, 16}}
    local calls = 0
    b.on_contact = function() calls = calls + 1 end
    step(w, 1)
    assert.are.equal(1, calls)
    local r = w:spawn{shape = "sphere", radius = 0.5, position = {4.3, y0 + 0.5, 12.3}, velocity = {8, 0, 0},
                      angular_velocity = {0, 0, -16}}
    calls = 0
    r.on_contact = function() calls = calls + 1 end
    step(w, 5)
    assert.is_true(r.position.x > 40, "rolled to " .. tostring(r.position))
    assert.is_true(calls <= 1, calls .. " contacts while rolling across " .. math.floor(r.position.x / 8) .. " chunks")
  end)

  it("a ball set rolling on the ground reports its contact under it, with no approach speed", function()
    local w = flat_world({64, 16, 32})
    local rest = ground(w, 4.3, 12.3) + 0.5
    for _, spin in ipairs{6, 16} do
      local b = w:spawn{shape = "sphere", radius = 0.5, position = {4.3, rest, 12.3}, velocity = {spin / 2, 0, 0},
                        angular_velocity = {0, 0, -spin}}
      local c, at
      b.on_contact = function(self, _, contact) c, at = c or contact, at or self.position end
      step(w, DT)
      assert.is_truthy(c, "no contact")
      assert.is_true(c.speed < 0.5, ("spin %g rad/s: approach speed %.3f"):format(spin, c.speed))
      local off = V(c.position.x - at.x, 0, c.position.z - at.z):length()
      assert.is_true(off < 0.2, ("spin %g rad/s: contact %.3f m beside the ball"):format(spin, off))
      near(c.position.y, rest - 0.5, 0.05, "contact height")
      b:destroy()
    end
  end)

  it("world:on('shatter') gets the broken body and its fragments", function()
    local w = flat_world()
    local y0 = ground(w, 10.3, 10.3)
    local b = w:spawn{shape = "box", size = 0.3, material = "glass", position = {10.3, y0 + 3, 10.3},
                      velocity = {0, -20, 0}}
    local mass = b.mass
    local got
    w:on("shatter", function(body, fragments) got = {body = body, fragments = fragments} end)
    step(w, 1)
    assert.is_truthy(got, "the glass did not break")
    assert.are.equal(b, got.body)
    assert.is_false(b:valid())
    assert.is_true(#got.fragments >= 2)
    local m = 0
    for _, f in ipairs(got.fragments) do
      assert.is_true(f:valid())
      m = m + f.mass
    end
    near(m, mass, 0.01 * mass, "fragment masses")
  end)

  it("world:on takes contact, shatter and detach", function()
    local w = quarry.world.new{}
    w:on("contact", function() end)
    w:on("shatter", function() end)
    w:on("detach", function() end)
    w:on("contact", nil)
    assert.matches("invalid option 'explode'", error_of(function() w:on("explode", function() end) end))
    assert.matches("function expected", error_of(function() w:on("contact", 5) end))
  end)
end)

describe("queries with bodies", function()
  local function scene()
    local w = quarry.world.new{}
    local box = w:spawn{shape = "box", size = 2, position = {10, 0, 0}, material = "wood"}
    local ball = w:spawn{shape = "sphere", radius = 1, position = {20, 0, 0}}
    return w, box, ball
  end

  it("raycast and raycast_all hit bodies, nearest first, merged with terrain", function()
    local w, box, ball = scene()
    local hit = assert(w:raycast({0, 0, 0}, {2, 0, 0}, 100))
    assert.are.equal(box, hit.body)
    assert.is_false(hit.terrain)
    near(hit.distance, 9, 1e-6, "distance to the box")
    assert.is_true((hit.position - V(9, 0, 0)):length() < 1e-6)
    assert.is_true((hit.normal - V(-1, 0, 0)):length() < 1e-6)
    assert.are.equal("wood", hit.material)
    hit = assert(w:raycast({0, 0, 0}, {1, 0, 0}, 100, {ignore = {box}}))
    assert.are.equal(ball, hit.body)
    near(hit.distance, 19, 1e-6, "distance to the ball")
    assert.is_nil(w:raycast({0, 0, 0}, {1, 0, 0}, 100, {bodies = false}))
    assert.is_nil(w:raycast({0, 0, 0}, {1, 0, 0}, 8.9))
    local all = w:raycast_all({0, 0, 0}, {1, 0, 0}, 100)
    assert.are.equal(2, #all)
    assert.are.equal(box, all[1].body)
    assert.are.equal(ball, all[2].body)
    -- with terrain: a body above the ground is hit before it
    local g = flat_world()
    local y0 = ground(g, 8.3, 8.3)
    local b = g:spawn{shape = "box", size = 1, position = {8.3, y0 + 5, 8.3}}
    all = g:raycast_all({8.3, y0 + 20, 8.3}, {0, -1, 0}, 100)
    assert.is_true(#all >= 2)
    assert.are.equal(b, all[1].body)
    near(all[1].distance, 14.5, 1e-6, "box top")
    assert.is_true(all[2].terrain)
    near(all[2].distance, 20, 1e-4, "ground")
    for i = 2, #all do assert.is_true(all[i].distance >= all[i - 1].distance) end
    assert.is_true(g:raycast({8.3, y0 + 20, 8.3}, {0, -1, 0}, 100, {ignore = {b}}).terrain)
  end)

  it("overlap_sphere and overlap_box return the bodies they touch", function()
    local w, box, ball = scene()
    local bodies, terrain, water = w:overlap_sphere({12.5, 0, 0}, 1)
    assert.are.same({}, bodies)
    assert.is_false(terrain)
    assert.is_false(water)
    bodies = w:overlap_sphere({12.5, 0, 0}, 1.6)
    assert.are.equal(1, #bodies)
    assert.are.equal(box, bodies[1])
    assert.are.same({}, (w:overlap_box({20, 2.5, 0}, {1, 1.4, 1})))
    bodies = w:overlap_box({20, 2.5, 0}, {1, 1.6, 1})
    assert.are.equal(ball, bodies[1])
    assert.are.same({}, (w:overlap_box({20, 2.5, 0}, {1, 1.6, 1}, {ignore = {ball}})))
    assert.are.same({}, (w:overlap_box({20, 2.5, 0}, {1, 1.6, 1}, {bodies = false})))
    bodies = w:overlap_box({15, 0, 0}, {6, 1, 1})
    assert.are.equal(2, #bodies)
  end)

  it("shapecast moves spheres and boxes against bodies and terrain", function()
    local w, box, ball = scene()
    local hit = assert(w:shapecast({shape = "sphere", radius = 0.5}, {0, 0, 0}, {30, 0, 0}))
    assert.are.equal(box, hit.body)
    near(hit.distance, 8.5, 1e-3, "sphere to box")
    near(hit.fraction, 8.5 / 30, 1e-4, "fraction")
    assert.is_true(hit.normal.x < -0.99)
    assert.is_false(hit.terrain)
    hit = assert(w:shapecast({shape = "box", size = 1}, {0, 0, 0}, {30, 0, 0}))
    near(hit.distance, 8.5, 1e-3, "box to box")
    hit = assert(w:shapecast({shape = "sphere", radius = 0.5}, {0, 0, 0}, {30, 0, 0}, {ignore = {box}}))
    assert.are.equal(ball, hit.body)
    near(hit.distance, 18.5, 1e-3, "sphere to ball")
    assert.is_nil(w:shapecast({shape = "sphere", radius = 0.5}, {0, 0, 0}, {8, 0, 0}))
    assert.is_nil(w:shapecast({shape = "sphere", radius = 0.5}, {0, 0, 0}, {30, 0, 0}, {bodies = false}))
    local g = flat_world()
    local y0 = ground(g, 8.3, 8.3)
    hit = assert(g:shapecast({shape = "sphere", radius = 0.5}, {8.3, y0 + 10, 8.3}, {8.3, y0 - 10, 8.3}))
    assert.is_true(hit.terrain)
    assert.is_nil(hit.body)
    near(hit.distance, 9.5, 1e-3, "sphere to ground")
    hit = assert(g:shapecast({shape = "box", size = {1, 2, 1}}, {8.3, y0 + 10, 8.3}, {8.3, y0 - 10, 8.3}))
    near(hit.distance, 9, 1e-3, "box to ground")
    assert.matches("not supported", error_of(function()
      g:shapecast({shape = "mesh"}, {0, 0, 0}, {1, 0, 0})
    end))
    assert.matches("unknown field 'position'", error_of(function()
      g:shapecast({shape = "sphere", radius = 1, position = {0, 0, 0}}, {0, 0, 0}, {1, 0, 0})
    end))
  end)
end)

describe("bad input", function()
  local w = quarry.world.new{}
  local function spawn_error(def)
    local e = error_of(function() w:spawn(def) end)
    assert.matches("spawn", e)
    return e
  end

  it("is refused with errors naming spawn and the field", function()
    assert.matches("shape", spawn_error{shape = "cone", radius = 1})
    assert.matches("shape", spawn_error{radius = 1})
    assert.matches("radius", spawn_error{shape = "sphere", radius = -1})
    assert.matches("radius", spawn_error{shape = "sphere", radius = 0})
    assert.matches("radius", spawn_error{shape = "sphere"})
    assert.matches("radius", spawn_error{shape = "sphere", radius = 0 / 0})
    assert.matches("radius", spawn_error{shape = "sphere", radius = 1e300})
    assert.matches("size", spawn_error{shape = "box", size = {1, -1, 1}})
    assert.matches("size", spawn_error{shape = "box", size = {1, 0 / 0, 1}})
    assert.matches("size", spawn_error{shape = "box"})
    assert.matches("radius", spawn_error{shape = "box", size = 1, radius = 1})
    assert.matches("height", spawn_error{shape = "capsule", radius = 1, height = 1})
    assert.matches("height", spawn_error{shape = "capsule", radius = 1})
    assert.matches("points", spawn_error{shape = "hull", points = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}}})
    assert.matches("points", spawn_error{shape = "hull", points = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0 / 0, 1}}})
    spawn_error{shape = "hull", points = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}}} -- flat: no volume
    assert.matches("mesh", spawn_error{shape = "mesh", mesh = {}})
    assert.matches("position", spawn_error{shape = "sphere", radius = 1, position = {0 / 0, 0, 0}})
    assert.matches("position", spawn_error{shape = "sphere", radius = 1, position = {1 / 0, 0, 0}})
    assert.matches("position", spawn_error{shape = "sphere", radius = 1, position = {1e8, 0, 0}})
    assert.matches("position", spawn_error{shape = "sphere", radius = 1, position = "here"})
    assert.matches("rotation", spawn_error{shape = "sphere", radius = 1, rotation = {0, 0, 0, 0}})
    assert.matches("rotation", spawn_error{shape = "sphere", radius = 1, rotation = {0 / 0, 0, 0, 1}})
    assert.matches("velocity", spawn_error{shape = "sphere", radius = 1, velocity = {3000, 0, 0}})
    assert.matches("velocity", spawn_error{shape = "sphere", radius = 1, velocity = {0, 0 / 0, 0}})
    assert.matches("angular_velocity", spawn_error{shape = "sphere", radius = 1, angular_velocity = {1 / 0, 0, 0}})
    assert.matches("material", spawn_error{shape = "sphere", radius = 1, material = "cheese"})
    assert.matches("static", spawn_error{shape = "sphere", radius = 1, static = 1})
    assert.matches("name", spawn_error{shape = "sphere", radius = 1, name = 5})
    assert.matches("mass", spawn_error{shape = "sphere", radius = 1, mass = 0})
    assert.matches("mass", spawn_error{shape = "sphere", radius = 1, mass = -5})
    assert.matches("unknown field 'colour'", spawn_error{shape = "sphere", radius = 1, colour = 1})
    assert.matches("table expected", error_of(function() w:spawn() end))
    assert.are.equal(0, #w:bodies())
  end)

  it("property writes and methods check their values", function()
    local b = w:spawn{shape = "box", size = 1}
    assert.matches("position", error_of(function() b.position = {0 / 0, 0, 0} end))
    assert.matches("velocity", error_of(function() b.velocity = {1e5, 0, 0} end))
    assert.matches("velocity", error_of(function() b.velocity = "fast" end))
    assert.matches("angular_velocity", error_of(function() b.angular_velocity = {0, 1 / 0, 0} end))
    assert.matches("rotation", error_of(function() b.rotation = {0, 0, 0, 0} end))
    assert.matches("name", error_of(function() b.name = {} end))
    assert.matches("on_contact", error_of(function() b.on_contact = 3 end))
    assert.matches("mass", error_of(function() b.mass = 3 end))
    assert.matches("sleeping", error_of(function() b.sleeping = false end))
    assert.matches("apply_impulse", error_of(function() b:apply_impulse({0 / 0, 0, 0}) end))
    assert.matches("apply_force", error_of(function() b:apply_force({1, 0, 0}, {1 / 0, 0, 0}) end))
    assert.matches("apply_torque", error_of(function() b:apply_torque("spin") end))
    assert.is_nil(b.no_such_field)
    b:destroy()
  end)

  it("lets no NaN or runaway speed into the world", function()
    local g = flat_world()
    local y0 = ground(g, 16, 16)
    local bodies = {}
    for i = 1, 8 do
      bodies[i] = g:spawn{shape = ({"sphere", "box", "capsule", "box"})[i % 4 + 1], radius = i % 2 == 0 and 0.5 or nil,
                          size = i % 2 == 1 and 0.5 or nil, height = i % 4 == 2 and 2 or nil,
                          position = {8 + i, y0 + 2, 16}}
    end
    local nan, inf = 0 / 0, 1 / 0
    local bad = {{nan, 0, 0}, {0, inf, 0}, {0, 0, -inf}, {1e300, 1e300, 1e300}, {1e30, 0, 0}}
    for _, b in ipairs(bodies) do
      for _, v in ipairs(bad) do
        pcall(function() b.position = v end)
        pcall(function() b.velocity = v end)
        pcall(function() b.angular_velocity = v end)
        pcall(function() b.rotation = {v[1], v[2], v[3], 1} end)
        pcall(b.apply_impulse, b, v)
        pcall(b.apply_impulse, b, {1, 0, 0}, v)
        pcall(b.apply_force, b, v)
        pcall(b.apply_torque, b, v)
      end
    end
    -- legal but violent, one body each: huge impulses, torques and forces, off the centre too
    local violent = {
      function(b) b:apply_impulse({1e9, 0, 0}) end,
      function(b) b:apply_torque({0, 1e12, 0}) end,
      function(b) b:apply_force({0, 1e12, 0}, b.position + V(100, 0, 0)) end,
      function(b) b:apply_force({1e30, 0, 0}) end,
      function(b) b:apply_force({1e300, 0, 0}) end,
      function(b) b:apply_torque({1e300, 0, 0}) end,
    }
    for i, f in ipairs(violent) do
      local b = g:spawn{shape = "box", size = 0.5, position = {8 + i, y0 + 4, 20}}
      bodies[#bodies + 1] = b
      pcall(f, b)
    end
    local start = {}
    for i, b in ipairs(bodies) do start[i] = b.position end
    step(g, 1)
    for i, b in ipairs(bodies) do
      -- at most 2000 m/s for 1 s, whatever was applied
      local moved = (b.position - start[i]):length()
      assert.is_true(moved <= 2000 + 1, ("body %d moved %.0f m in 1 s"):format(i, moved))
    end
    for _, b in ipairs(g:bodies()) do
      assert.is_true(finite_vec(b.position), tostring(b.position))
      assert.is_true(finite_vec(b.velocity), tostring(b.velocity))
      assert.is_true(finite_vec(b.angular_velocity), tostring(b.angular_velocity))
      local r = b.rotation
      assert.is_true(finite(r.w) and finite(r.x) and finite(r.y) and finite(r.z))
      assert.is_true(b.velocity:length() <= 2000 * (1 + 1e-9), "speed " .. b.velocity:length())
    end
  end)

  it("a destroyed world makes its bodies destroyed", function()
    local g = quarry.world.new{}
    local b = g:spawn{shape = "sphere", radius = 1}
    g:destroy()
    assert.is_false(b:valid())
    assert.matches("body was destroyed", error_of(function() return b.velocity end))
    b:destroy()
  end)
end)

describe("examples/bodies.lua", function()
  it("runs headless", function()
    local host = require "support.host"
    local out, ok = host.run_headless("examples/bodies.lua", 120)
    assert.is_true(ok, out)
    assert.matches("bodies: 120 frames", out)
  end)
end)
