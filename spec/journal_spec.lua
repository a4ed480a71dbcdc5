-- Terrain:undo, Terrain:redo and Terrain:journal (issue 11: the terrain edit
-- journal, engine/voxel/journal.c). Independent answers: world:hash() and
-- T:read() taken before each edit (undo must give both back exactly, redo
-- the ones after), a model of the history in Lua (a list of hashes and a
-- cursor), and for the byte budget an information bound: records of random
-- voxels cannot be stored in fewer bytes than the entropy of those voxels,
-- so the number of undo steps kept times that entropy must stay under the
-- limit, whatever the journal says about its own bytes.
local quarry = require "quarry"

local function hills(def)
  local w = quarry.world.new(def or {})
  w.terrain:generate{kind = "hills", size = {64, 32, 64}, seed = 7}
  return w
end

local function same_read(a, b)
  assert.are.same(a.size, b.size)
  for i = 1, #a.materials do
    if a.materials[i] ~= b.materials[i] or a.occupancy[i] ~= b.occupancy[i] then
      return false, i
    end
  end
  return true
end

-- Every edit method, each aimed at the hills' surface (about y = 10..20
-- voxels). s is the voxel size: shape edits take metres, fill_region and
-- write voxel coordinates.
local function v(s, x, y, z) return {x * s, y * s, z * s} end
local EDITS = {
  {"fill_ball", function(T, s) T:fill_ball(v(s, 20.3, 14, 21.7), 4.5 * s, "brick") end},
  {"carve_ball", function(T, s) T:carve_ball(v(s, 30, 12.4, 30), 6 * s) end},
  {"paint_ball", function(T, s) T:paint_ball(v(s, 33, 10, 25), 7 * s, "snow") end},
  {"smooth_ball", function(T, s) T:smooth_ball(v(s, 25, 14, 40), 6 * s, 1) end},
  {"fill_block", function(T, s)
    T:fill_block(v(s, 40, 16, 20), v(s, 9, 3, 5), "wood", quarry.quat.from_euler(0.4, 0.9, 0.2))
  end},
  {"fill_cylinder", function(T, s) T:fill_cylinder(v(s, 12, 15, 44), 3.5 * s, 12 * s, "glass") end},
  {"fill_region", function(T) T:fill_region({5, 12, 5}, {15, 22, 9}, "concrete") end},
  {"write", function(T)
    local d = T:read({44, 8, 44}, {50, 14, 47})
    for i = 1, #d.materials do
      d.materials[i] = i % 3 == 0 and "air" or "metal"
      d.occupancy[i] = i % 3 == 0 and 0 or (i % 7 + 1) / 8
    end
    T:write({44, 8, 44}, d)
  end},
}

describe("Terrain:undo / redo", function()
  for _, vs in ipairs{1, 0.5} do
    for _, e in ipairs(EDITS) do
      it(e[1] .. " is undone and redone exactly (voxel_size " .. vs .. ")", function()
        local w = hills{voxel_size = vs}
        local T = w.terrain
        local lo, hi = {0, 0, 0}, {64, 32, 64}
        local before, hash0 = T:read(lo, hi), w:hash()
        e[2](T, vs)
        local after, hash1 = T:read(lo, hi), w:hash()
        assert.are_not.equal(hash0, hash1)
        assert.is_true(T:undo())
        assert.are.equal(hash0, w:hash())
        assert.is_true(same_read(before, T:read(lo, hi)))
        assert.is_false(T:undo())
        assert.is_true(T:redo())
        assert.are.equal(hash1, w:hash())
        assert.is_true(same_read(after, T:read(lo, hi)))
        assert.is_false(T:redo())
        w:destroy()
      end)
    end
  end

  it("follows a random history of edits, undos and redos", function()
    local w = hills()
    local T = w.terrain
    math.randomseed(11)
    local states, cur = {w:hash()}, 1
    for _ = 1, 150 do
      local r = math.random()
      if r < 0.5 then
        local p = {math.random(4, 60), math.random(6, 22), math.random(4, 60)}
        local k = math.random(3)
        if k == 1 then T:carve_ball(p, math.random(2, 6))
        elseif k == 2 then T:fill_ball(p, math.random(2, 6), "dirt")
        else T:fill_block(p, math.random(2, 8), "rock") end
        local h = w:hash()
        if h ~= states[cur] then -- an edit that changed nothing is no step
          for i = #states, cur + 1, -1 do states[i] = nil end
          cur = cur + 1
          states[cur] = h
        end
      elseif r < 0.8 then
        assert.are.equal(cur > 1, T:undo())
        if cur > 1 then cur = cur - 1 end
      else
        assert.are.equal(cur < #states, T:redo())
        if cur < #states then cur = cur + 1 end
      end
      assert.are.equal(states[cur], w:hash())
      local info = T:journal()
      assert.are.equal(cur - 1, info.undo)
      assert.are.equal(#states - cur, info.redo)
    end
  end)

  it("clears redo on a new edit, records no step for an edit that changes nothing", function()
    local w = hills()
    local T = w.terrain
    T:carve_ball({20, 40, 20}, 3) -- in the air above the hills
    assert.is_false(T:undo())
    T:carve_ball({20, 12, 20}, 3)
    assert.is_true(T:undo())
    T:carve_ball({20, 40, 20}, 3) -- changes nothing: redo stays
    assert.is_true(T:redo())
    assert.is_true(T:undo())
    T:fill_ball({30, 12, 30}, 3, "sand")
    assert.is_false(T:redo())
    assert.is_true(T:undo())
    assert.is_false(T:undo())
  end)

  it("is one journal per world, whichever Terrain userdata edits", function()
    local w = hills()
    local h0 = w:hash()
    w.terrain:carve_ball({20, 12, 20}, 4)
    local T2 = w.terrain
    assert.is_true(T2:undo())
    assert.are.equal(h0, w:hash())
    local w2 = hills()
    assert.is_false(w2.terrain:undo()) -- another world's history is its own
  end)

  it("forgets the history on generate and clear", function()
    local w = hills()
    local T = w.terrain
    T:carve_ball({20, 12, 20}, 4)
    T:generate{kind = "flat", size = {32, 8, 32}}
    assert.is_false(T:undo())
    T:fill_ball({10, 8, 10}, 2, "rock")
    T:clear()
    assert.is_false(T:undo())
  end)

  it("undoes what an edit did even after the world stepped and bodies moved", function()
    local w = hills()
    local T = w.terrain
    local before = T:read({10, 0, 10}, {30, 32, 30})
    T:carve_ball({20, 12, 20}, 5)
    w:spawn{shape = "sphere", radius = 0.5, position = {40, 30, 40}}
    w:step(0.5)
    assert.is_true(T:undo())
    assert.is_true(same_read(before, T:read({10, 0, 10}, {30, 32, 30})))
  end)
end)

describe("Terrain:journal", function()
  it("keeps at most `steps` undo steps", function()
    local w = hills()
    local T = w.terrain
    assert.are.equal(100, T:journal().steps)
    T:journal{steps = 3}
    local hashes = {}
    for i = 1, 5 do
      T:carve_ball({8 + 10 * i, 14, 30}, 4)
      hashes[i] = w:hash()
    end
    assert.are.equal(3, T:journal().undo)
    for i = 4, 2, -1 do
      assert.is_true(T:undo())
      assert.are.equal(hashes[i], w:hash())
    end
    assert.is_false(T:undo())
    T:journal{steps = 1} -- fewer steps drop records at once: the farthest redo go
    assert.are.equal(1, T:journal().redo)
    T:journal{steps = 0} -- off: nothing is recorded
    T:carve_ball({30, 14, 50}, 4)
    assert.is_false(T:undo())
    assert.is_false(T:redo())
  end)

  it("stays within limit_bytes: random voxels, counted against their entropy", function()
    local w = quarry.world.new{}
    local T = w.terrain
    local LIMIT = 20000
    T:journal{limit_bytes = LIMIT, steps = 1000}
    local MATS = {"rock", "dirt", "grass", "sand", "snow", "ice", "glass", "wood", "brick"}
    local N = 8 * 8 * 8
    math.randomseed(5)
    local writes = {}
    for k = 1, 40 do
      local d = {size = {8, 8, 8}, materials = {}, occupancy = {}}
      for i = 1, N do
        d.materials[i] = MATS[math.random(#MATS)]
        d.occupancy[i] = math.random(255) / 255
      end
      T:write({0, 0, 0}, d)
      writes[k] = T:read({0, 0, 0}, {8, 8, 8})
      local info = T:journal()
      assert.is_true(info.bytes <= LIMIT, "journal holds " .. info.bytes .. " bytes")
    end
    -- Each undo must give back the previous write exactly.
    local kept = 0
    while T:undo() do
      kept = kept + 1
      local want = writes[40 - kept]
      if want then assert.is_true(same_read(want, T:read({0, 0, 0}, {8, 8, 8}))) end
    end
    -- Kept records (all but the first) hold random voxels: at least
    -- N * log2(9 * 255) bits each, however they are coded.
    local entropy = N * (math.log(#MATS, 2) + math.log(255, 2)) / 8
    assert.is_true(kept >= 5, "only " .. kept .. " steps kept in " .. LIMIT .. " bytes")
    assert.is_true((kept - 1) * entropy <= LIMIT,
                   kept .. " steps of random voxels cannot fit in " .. LIMIT .. " bytes")
    local info = T:journal()
    assert.is_true(info.dropped > 0)
    assert.is_true(info.bytes <= LIMIT)
  end)

  it("stays within limit_bytes over many brush edits", function()
    local w = hills()
    local T = w.terrain
    T:journal{limit_bytes = 32 * 1024, steps = 10000}
    math.randomseed(3)
    for i = 1, 400 do
      local p = {math.random(4, 60), math.random(6, 22), math.random(4, 60)}
      if i % 2 == 0 then T:carve_ball(p, math.random(2, 7)) else T:fill_ball(p, math.random(2, 7), "rock") end
      local info = T:journal()
      assert.is_true(info.bytes <= 32 * 1024)
    end
    local info = T:journal()
    assert.is_true(info.undo > 3 and info.undo < 400 and info.dropped > 0)
    for _ = 1, info.undo do assert.is_true(T:undo()) end
    assert.is_false(T:undo())
  end)

  it("clears the history for an edit too large to record", function()
    local w = hills()
    local T = w.terrain
    T:carve_ball({20, 12, 20}, 4)
    T:journal{limit_bytes = 1024}
    T:fill_ball({30, 16, 30}, 12, "rock") -- its record needs more than 1 KiB
    assert.is_false(T:undo())
    assert.are.equal(1, T:journal().cleared)
    T:journal{limit_bytes = 1 << 24}
    T:fill_region({-300, -100, -300}, {0, 100, 0}, "rock") -- over the 2^24 voxels begin copies
    assert.is_false(T:undo())
    assert.are.equal(2, T:journal().cleared)
  end)

  it("rejects bad arguments with messages naming them", function()
    local w = hills()
    local T = w.terrain
    local function fails(pat, f, ...)
      local ok, err = pcall(f, ...)
      assert.is_false(ok)
      assert.matches(pat, tostring(err))
    end
    fails("limit_bytes.*>= 1024", T.journal, T, {limit_bytes = 100})
    fails("limit_bytes.*integer", T.journal, T, {limit_bytes = 1.5e3 + 0.5})
    fails("steps.*0%.%.", T.journal, T, {steps = -1})
    fails("steps.*integer", T.journal, T, {steps = "many"})
    fails("unknown field 'bogus'", T.journal, T, {bogus = 1})
    fails("table expected", T.journal, T, "x")
    fails("Terrain expected", T.undo, 42)
    fails("Terrain expected", T.redo, {})
    -- the wrapped edits still name themselves and count arguments as before
    fails("bad argument #2 to 'carve_ball' %(radius must be > 0", function() T:carve_ball({1, 2, 3}, -1) end)
    fails("bad argument #1 to 'fill_block'", function() T:fill_block("here", 2, "rock") end)
    fails("bad argument #3 to 'fill_ball' %(unknown material", function() T:fill_ball({1, 2, 3}, 2, "cheese") end)
    w:destroy()
    fails("destroyed world", T.undo, T)
    fails("destroyed world", T.journal, T)
    fails("destroyed world", function() T:carve_ball({1, 2, 3}, 1) end)
  end)
end)
