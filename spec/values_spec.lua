-- Vec3 and Quat against closed-form answers.
local quarry = require "quarry"
local vec3, quat = quarry.vec3, quarry.quat

local function near(a, b, eps) return math.abs(a - b) <= (eps or 1e-12) end
local function vnear(v, x, y, z, eps)
  return near(v.x, x, eps) and near(v.y, y, eps) and near(v.z, z, eps)
end

describe("Vec3", function()
  it("has fields, arithmetic, equality and tostring", function()
    local a, b = vec3(1, 2, 3), vec3(-4, 5, 0.5)
    assert.are.same({1, 2, 3}, {a.x, a.y, a.z})
    assert.is_true(a + b == vec3(-3, 7, 3.5))
    assert.is_true(a - b == vec3(5, -3, 2.5))
    assert.is_true(a * 2 == vec3(2, 4, 6))
    assert.is_true(2 * a == vec3(2, 4, 6))
    assert.is_true(a / 2 == vec3(0.5, 1, 1.5))
    assert.is_true(-a == vec3(-1, -2, -3))
    assert.is_false(a == b)
    assert.are.equal("vec3(1.0, 2.0, 3.0)", tostring(a))
    a.y = 7
    assert.are.equal(7, a.y)
    assert.has_error(function() a.w = 1 end)
  end)

  it("computes dot, cross, length, normalized and lerp", function()
    local a, b = vec3(1, 2, 3), vec3(-4, 5, 0.5)
    assert.are.equal(1 * -4 + 2 * 5 + 3 * 0.5, a:dot(b))
    local c = a:cross(b)
    assert.is_true(near(c:dot(a), 0) and near(c:dot(b), 0))
    assert.is_true(vnear(c, 2 * 0.5 - 3 * 5, 3 * -4 - 1 * 0.5, 1 * 5 - 2 * -4))
    assert.are.equal(math.sqrt(14), a:length())
    assert.is_true(near(a:normalized():length(), 1))
    assert.is_true(vec3(0, 0, 0):normalized() == vec3(0, 0, 0))
    assert.is_true(vnear(a:lerp(b, 0.25), 1 - 1.25, 2 + 0.75, 3 - 0.625))
  end)

  it("accepts tables wherever a vector is expected", function()
    assert.is_true(vec3(1, 1, 1) + {1, 2, 3} == vec3(2, 3, 4))
    assert.are.equal(3, vec3(1, 1, 1):dot{x = 1, y = 1, z = 1})
  end)
end)

describe("Quat", function()
  it("rotates vectors by axis-angle like the closed-form rotation", function()
    local q = quat.from_axis_angle({0, 1, 0}, math.pi / 2)
    assert.is_true(vnear(q * vec3(1, 0, 0), 0, 0, -1, 1e-12))
    local r = quat.from_axis_angle({1, 1, 1}, 2 * math.pi / 3) -- cycles the axes
    assert.is_true(vnear(r * {1, 0, 0}, 0, 1, 0, 1e-12))
  end)

  it("composes: (a * b) * v == a * (b * v)", function()
    local a = quat.from_axis_angle({0.3, -1, 0.2}, 1.1)
    local b = quat.from_euler(0.4, -0.2, 2.0)
    local v = vec3(0.7, -3, 2)
    local l, r = (a * b) * v, a * (b * v)
    assert.is_true(vnear(l, r.x, r.y, r.z, 1e-12))
  end)

  it("from_euler applies X, then Y, then Z", function()
    local q = quat.from_euler(0.3, 0.5, 0.7)
    local e = quat.from_axis_angle({0, 0, 1}, 0.7) * quat.from_axis_angle({0, 1, 0}, 0.5)
              * quat.from_axis_angle({1, 0, 0}, 0.3)
    local v = vec3(1, 2, 3)
    local a, b = q * v, e * v
    assert.is_true(vnear(a, b.x, b.y, b.z, 1e-12))
  end)

  it("is normalised on construction and rejects zero", function()
    local q = quat(2, 0, 0, 0)
    assert.are.same({1, 0, 0, 0}, {q.w, q.x, q.y, q.z})
    assert.has_error(function() return quat(0, 0, 0, 0) end)
    assert.has_error(function() return quat.from_axis_angle({0, 0, 0}, 1) end)
  end)
end)
