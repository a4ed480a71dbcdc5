-- Bad input: every function rejects wrong types, NaN, inf, unknown names,
-- inverted boxes and oversized requests with an error naming the argument,
-- and the world is unchanged afterwards.
local quarry = require "quarry"

local NAN, INF = 0 / 0, math.huge

local function world_with_content()
  local w = quarry.world.new{}
  w.terrain:generate{kind = "hills", size = {40, 32, 40}, seed = 2}
  return w
end

-- Calls fn, expects an error matching each pattern, and checks the world's
-- hash and version did not move.
local function rejects(w, fn, ...)
  local before, version = w:hash(), w.terrain:version()
  local ok, err = pcall(fn)
  assert.is_false(ok, "call was accepted")
  err = tostring(err)
  for _, pat in ipairs{...} do
    assert.is_truthy(err:find(pat, 1, true), ("error %q lacks %q"):format(err, pat))
  end
  assert.are.equal(before, w:hash(), "world changed by a rejected call: " .. err)
  assert.are.equal(version, w.terrain:version())
end

describe("terrain edits reject bad input", function()
  local w, T
  before_each(function() w = world_with_content(); T = w.terrain end)

  it("names the function and argument for a negative radius", function()
    rejects(w, function() T:fill_ball({0, 0, 0}, -1, "rock") end,
      "bad argument #2 to 'fill_ball' (radius must be > 0, got -1)")
  end)

  it("refuses NaN and inf in positions and sizes", function()
    for _, bad in ipairs{NAN, INF, -INF} do
      rejects(w, function() T:fill_ball({bad, 0, 0}, 2, "rock") end, "#1", "fill_ball")
      rejects(w, function() T:fill_ball({0, 0, 0}, bad, "rock") end, "#2", "fill_ball")
      rejects(w, function() T:carve_ball({0, bad, 0}, 2) end, "#1", "carve_ball")
      rejects(w, function() T:fill_block({0, 0, 0}, {1, bad, 1}, "rock") end, "#2", "fill_block")
      rejects(w, function() T:fill_cylinder({0, 0, 0}, 2, bad, "rock") end, "#3", "fill_cylinder")
      rejects(w, function() T:smooth_ball({0, 0, 0}, 2, bad) end, "#3", "smooth_ball")
      rejects(w, function() T:is_solid({bad, 0, 0}) end, "#1", "is_solid")
    end
  end)

  it("refuses wrong types", function()
    rejects(w, function() T:fill_ball("here", 2, "rock") end, "#1", "Vec3")
    rejects(w, function() T:fill_ball({1, 2}, 2, "rock") end, "#1")
    rejects(w, function() T:fill_ball({0, 0, 0}, "big", "rock") end, "#2")
    rejects(w, function() T:fill_ball({0, 0, 0}, 2, 7) end, "#3")
    rejects(w, function() T:fill_block({0, 0, 0}, {1, 1, 1}, "rock", "tilted") end, "#4", "Quat")
    rejects(w, function() T:fill_block({0, 0, 0}, {1, 1, 1}, "rock", {0, 0, 0, 0}) end, "#4", "non-zero")
    rejects(w, function() T:get(1.5, 0, 0) end, "#1", "get")
    rejects(w, function() T.fill_ball(42, {0, 0, 0}, 1, "rock") end, "quarry.Terrain")
  end)

  it("refuses unknown materials, listing the known ones", function()
    rejects(w, function() T:fill_ball({0, 0, 0}, 2, "cheese") end, "#3", "unknown material 'cheese'", "rock")
    rejects(w, function() T:paint_ball({0, 0, 0}, 2, "air") end, "#3", "cannot paint with air")
    rejects(w, function() T:fill_region({0, 0, 0}, {1, 1, 1}, "lava") end, "#3", "unknown material")
  end)

  it("refuses a radius over the per-edit limit quickly instead of working for hours", function()
    local t0 = os.clock()
    rejects(w, function() T:fill_ball({0, 0, 0}, 4097, "rock") end, "#2", "over the limit")
    rejects(w, function() T:carve_ball({0, 0, 0}, 1e9) end, "#2", "limit")
    rejects(w, function() T:fill_block({0, 0, 0}, {1e6, 1, 1e6}, "rock") end, "#2", "over the limit")
    rejects(w, function() T:fill_cylinder({0, 0, 0}, 5000, 4, "rock") end, "#2")
    rejects(w, function() T:smooth_ball({0, 0, 0}, 300, 0.5) end, "#2", "over the limit")
    rejects(w, function() T:fill_ball({1e9, 0, 0}, 1, "rock") end, "world limits")
    assert.is_true(os.clock() - t0 < 1)
  end)

  it("refuses inverted, fractional and oversized boxes", function()
    rejects(w, function() T:fill_region({0, 0, 0}, {-1, 4, 4}, "rock") end, "#2", "max must be >= min")
    rejects(w, function() T:read({0, 0, 0}, {4, -4, 4}) end, "#2", "max must be >= min")
    rejects(w, function() T:read({0.5, 0, 0}, {4, 4, 4}) end, "#1", "integers")
    rejects(w, function() T:read({0, 0, 0}, {1000, 1000, 1000}) end, "#2", "more than")
    rejects(w, function() T:fill_region({0, 0, 0}, {1e8, 1, 1}, "rock") end, "within")
  end)

  it("validates write data completely before writing anything", function()
    local d = T:read({0, 0, 0}, {4, 4, 4})
    d.materials[64] = "cheese"
    rejects(w, function() T:write({0, 0, 0}, d) end, "#2", "materials[64]")
    d.materials[64] = "rock"
    d.occupancy[10] = 1.5
    rejects(w, function() T:write({0, 0, 0}, d) end, "#2", "occupancy[10]")
    d.occupancy[10] = NAN
    rejects(w, function() T:write({0, 0, 0}, d) end, "occupancy[10]")
    d.occupancy[10] = 0.5
    d.occupancy[64] = nil
    rejects(w, function() T:write({0, 0, 0}, d) end, "64 entries")
    rejects(w, function() T:write({0, 0, 0}, {size = {-1, 1, 1}, materials = {}, occupancy = {}}) end, "size")
    rejects(w, function() T:write({0, 0, 0}, {size = {1, 1, 1}, materials = {"rock"}, occupancy = {1}, extra = 1}) end,
      "unknown field 'extra'")
  end)

  it("validates generate options", function()
    rejects(w, function() T:generate{kind = "volcano"} end, "field 'kind' must be one of", "'hills'")
    rejects(w, function() T:generate{size = {0, 10, 10}} end, "size")
    rejects(w, function() T:generate{size = {10000, 10, 10}} end, "size")
    rejects(w, function() T:generate{size = {4096, 4096, 4096}} end, "over the limit")
    rejects(w, function() T:generate{seed = 1.5} end, "seed")
    rejects(w, function() T:generate{water_level = NAN} end, "water_level")
    rejects(w, function() T:generate{kinds = "hills"} end, "unknown field 'kinds'")
  end)
end)

describe("world functions reject bad input", function()
  it("checks world definitions", function()
    for _, def in ipairs{
      {voxel_size = 0}, {voxel_size = -1}, {voxel_size = NAN}, {gravity = {0, NAN, 0}},
      {step = 0}, {step = 2}, {substeps = 0}, {substeps = 1.5}, {seed = "x"}, {threads = -1},
      {voxel_siz = 1},
    } do
      local ok, err = pcall(function() quarry.world.new(def) end)
      assert.is_false(ok)
      assert.is_truthy(err:find("bad argument #1 to 'new'", 1, true), err)
    end
  end)

  it("checks step", function()
    local w = quarry.world.new{}
    for _, dt in ipairs{-1, NAN, INF} do
      local ok, err = pcall(w.step, w, dt)
      assert.is_false(ok)
      assert.matches("dt must be finite", err)
    end
    assert.are.equal(0, w:frame())
  end)

  it("raises a clear error for a destroyed world, also through its terrain", function()
    local w = quarry.world.new{}
    local T = w.terrain
    w:destroy()
    w:destroy() -- twice is fine
    assert.is_false(w:valid())
    for _, f in ipairs{
      function() w:step(1) end, function() return w:hash() end, function() return w.terrain end,
      function() T:fill_ball({0, 0, 0}, 1, "rock") end, function() return T:get(0, 0, 0) end,
    } do
      local ok, err = pcall(f)
      assert.is_false(ok)
      assert.matches("attempt to use a destroyed world", err)
    end
  end)

  it("keeps the world alive while only its terrain is referenced", function()
    local T = quarry.world.new{}.terrain
    collectgarbage()
    collectgarbage()
    T:fill_ball({0, 0, 0}, 2, "rock")
    assert.are.equal("rock", (T:get(0, 0, 0)))
  end)

  it("closes with <close>", function()
    local ref
    do
      local w <close> = quarry.world.new{}
      ref = w
    end
    assert.is_false(ref:valid())
  end)

  it("checks material definitions", function()
    for _, def in ipairs{
      {}, {name = ""}, {name = "has space"}, {name = "rock"}, {name = "m1", density = 0},
      {name = "m1", density = NAN}, {name = "m1", restitution = 2}, {name = "m1", color = {1, 2, 0}},
      {name = "m1", friction = -1}, {name = "m1", strength = 0}, {name = "m1", brittle = "yes"},
      {name = "m1", colour = {1, 1, 1}}, {name = string.rep("a", 40)}, {name = "a\0b"},
    } do
      local ok, err = pcall(function() quarry.material.define(def) end)
      assert.is_false(ok, "accepted a bad definition")
      assert.is_truthy(err:find("bad argument #1 to 'define'", 1, true), err)
    end
    local ok, err = pcall(quarry.material.get, "unobtainium")
    assert.is_false(ok)
    assert.matches("unknown material 'unobtainium'", err)
  end)

  it("survives a stream of random arguments to every function", function()
    local w = world_with_content()
    local T = w.terrain
    local values = {nil, true, 0, -1, 1, 0.5, NAN, INF, -INF, 1e300, "rock", "x", {}, {1, 2, 3},
                    {NAN, 0, 0}, {x = 1, y = 2, z = 3}, quarry.vec3(1, 2, 3), function() end, T, w}
    local calls = {"fill_ball", "fill_block", "fill_cylinder", "fill_region", "carve_ball",
                   "paint_ball", "smooth_ball", "get", "read", "write", "is_solid", "bounds",
                   "changes_since"}
    local s = 7
    local function pick()
      s = (s * 1103515245 + 12345) % 2147483648
      return values[s % (#values + 1) + 1]
    end
    for i = 1, 3000 do
      local name = calls[i % #calls + 1]
      pcall(T[name], T, pick(), pick(), pick(), pick())
    end
    -- still a working world
    T:fill_ball({5, 5, 5}, 2, "rock")
    assert.are.equal("rock", (T:get(5, 5, 5)))
  end)
end)
