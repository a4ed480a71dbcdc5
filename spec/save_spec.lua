-- World files: round trips, corruption, truncation and failed saves.
local quarry = require "quarry"

local function tmpname()
  local p = os.tmpname()
  os.remove(p)
  return p .. ".qw"
end

local function read_all(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function write_all(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

local function sample_world()
  local w = quarry.world.new{voxel_size = 0.5, seed = 9, gravity = {0, -3, 1}}
  w.terrain:generate{kind = "caves", size = {80, 48, 70}, seed = 3}
  w.terrain:fill_ball({-10, -10, -10}, 3, "glass")
  w:step(0.5)
  return w
end

describe("save and load", function()
  it("round-trips voxels, settings and clock with equal hashes", function()
    local w = sample_world()
    local path = tmpname()
    assert.is_true(w:save(path))
    local back = assert(quarry.world.load(path))
    assert.are.equal(w:hash(), back:hash())
    assert.are.same(w:stats().chunks, back:stats().chunks)
    assert.are.equal(w:frame(), back:frame())
    local s = back:settings()
    assert.are.equal(0.5, s.voxel_size)
    assert.are.equal(9, s.seed)
    assert.are.equal(-3, s.gravity.y)
    -- content, not just the digest
    local a = w.terrain:read({-14, -14, -14}, {80, 48, 70})
    local b = back.terrain:read({-14, -14, -14}, {80, 48, 70})
    assert.are.same(a.materials, b.materials)
    assert.are.same(a.occupancy, b.occupancy)
    os.remove(path)
  end)

  it("keeps user materials by name", function()
    quarry.material.define{name = "save_spec_clay", density = 1800, color = {0.7, 0.4, 0.3}}
    local w = quarry.world.new{}
    w.terrain:fill_ball({0, 0, 0}, 4, "save_spec_clay")
    local path = tmpname()
    assert.is_true(w:save(path))
    local back = assert(quarry.world.load(path))
    assert.are.equal("save_spec_clay", (back.terrain:get(0, 0, 0)))
    os.remove(path)
  end)

  it("saves an empty world", function()
    local path = tmpname()
    assert.is_true(quarry.world.new{}:save(path))
    local back = assert(quarry.world.load(path))
    assert.is_nil(back.terrain:bounds())
    os.remove(path)
  end)

  it("rejects missing, garbage and foreign files with a message", function()
    local w, err = quarry.world.load("/nonexistent/dir/x.qw")
    assert.is_nil(w)
    assert.matches("cannot open", err)
    local path = tmpname()
    write_all(path, "")
    w, err = quarry.world.load(path)
    assert.is_nil(w)
    assert.matches("not a Quarry world file", err)
    write_all(path, string.rep("garbage!", 1000))
    w, err = quarry.world.load(path)
    assert.is_nil(w)
    assert.matches("not a Quarry world file", err)
    os.remove(path)
  end)

  it("rejects every truncation of a valid file", function()
    local w = quarry.world.new{}
    w.terrain:generate{kind = "hills", size = {40, 40, 40}}
    local path = tmpname()
    assert.is_true(w:save(path))
    local data = read_all(path)
    local cut = tmpname()
    local step = math.max(1, #data // 200)
    for n = 0, #data - 1, step do
      write_all(cut, data:sub(1, n))
      local back, err = quarry.world.load(cut)
      assert.is_nil(back, "truncated to " .. n .. " bytes loaded")
      assert.is_string(err)
    end
    write_all(cut, data:sub(1, #data - 1))
    assert.is_nil(quarry.world.load(cut))
    write_all(cut, data .. "x")
    assert.is_nil(quarry.world.load(cut))
    os.remove(path)
    os.remove(cut)
  end)

  it("rejects single bit flips anywhere in the file", function()
    local w = quarry.world.new{}
    w.terrain:generate{kind = "hills", size = {40, 40, 40}}
    w.terrain:fill_ball({60, 60, 60}, 2, "rock")
    local path = tmpname()
    assert.is_true(w:save(path))
    local data = read_all(path)
    local bad = tmpname()
    local rejected, tried = 0, 0
    local step = math.max(1, #data // 300)
    for pos = 1, #data, step do
      for _, bit in ipairs{1, 16, 128} do
        local b = data:byte(pos) ~ bit
        write_all(bad, data:sub(1, pos - 1) .. string.char(b) .. data:sub(pos + 1))
        tried = tried + 1
        local back, err = quarry.world.load(bad)
        if back == nil then
          rejected = rejected + 1
          assert.is_string(err)
        end
      end
    end
    assert.are.equal(tried, rejected)
    os.remove(path)
    os.remove(bad)
  end)

  it("leaves the previous file loadable when a save fails half-way", function()
    local w = quarry.world.new{}
    w.terrain:generate{kind = "hills", size = {64, 40, 64}}
    local path = tmpname()
    assert.is_true(w:save(path))
    local good = w:hash()
    local size = #read_all(path)
    w.terrain:fill_ball({20, 20, 20}, 8, "metal")
    for _, n in ipairs{0, 7, 100, size // 2, size - 10} do
      quarry._test.fail_save_after(n)
      local ok, err = w:save(path)
      quarry._test.fail_save_after(-1)
      assert.is_nil(ok)
      assert.matches("simulated failure", err)
      local back = assert(quarry.world.load(path))
      assert.are.equal(good, back:hash())
    end
    -- no temporary files are left beside it
    local dir = path:match("^(.*)/")
    local p = io.popen("ls " .. dir .. " | grep -c '" .. path:match("[^/]*$") .. ".tmp' || true")
    assert.are.equal("0", p:read("l"))
    p:close()
    os.remove(path)
  end)

  it("reports an unwritable location", function()
    local ok, err = quarry.world.new{}:save("/nonexistent/dir/x.qw")
    assert.is_nil(ok)
    assert.matches("cannot create", err)
  end)
end)
