-- Crash-safe saves: a child process edits and saves a world in a loop and is
-- killed with SIGKILL at random moments, again and again. After every kill
-- the file must load and be one of the versions the child can have written
-- (known by their hashes, computed here independently), never older than the
-- version seen after the previous kill. Each new child continues from the
-- file the last one left, so every loaded file is also used. The temporary
-- files of cut saves ("world.qw.tmp-PID") do not pile up: each save removes
-- those of the same target whose process is gone, and only those.

local host = require "support.host"
local shell_quote, write_file = host.shell_quote, host.write_file

local build = os.getenv("QUARRY_BUILD") or "build"
local sanitize = os.getenv("QUARRY_SANITIZE") == "1"
package.cpath = build .. "/?.so;" .. package.cpath
local quarry = require "quarry"

local VERSIONS = 100000 -- edits the child can make; far more than it will

-- Version k: the base terrain plus the balls of edits 1..k (shared by the
-- parent and the child, so both agree on every version's content).
local EDITS = [[
local function base(quarry)
  local w = quarry.world.new{seed = 5, threads = 0}
  w.terrain:generate{kind = "hills", size = {96, 40, 96}, seed = 11}
  return w
end
local function edit(w, k)
  local x, z = (k * 37) % 90 - 45, (k * 53) % 90 - 45
  local mats = {"rock", "sand", "brick", "air"}
  w.terrain:fill_ball({x, 12 + k % 7, z}, 2 + k % 3, mats[k % 4 + 1])
end
]]

local CHILD = EDITS .. [[
package.cpath = arg[1] .. "/?.so;" .. package.cpath
local quarry = require "quarry"
local path = arg[2]
local w, k = nil, 0
local f = io.open(path, "rb")
if f then
  f:close()
  w = assert(quarry.world.load(path))
  k = assert(tonumber(arg[3]))
else
  w = base(quarry)
  assert(w:save(path))
end
io.write("started\n")
io.flush()
while true do
  k = k + 1
  edit(w, k)
  assert(w:save(path))
end
]]

local function sh(cmd)
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  return out
end

-- Running, and not a zombie waiting for whoever adopted it to reap it.
local function alive(pid)
  local stat = host.read_file("/proc/" .. pid .. "/stat")
  return stat ~= nil and stat:match("^%d+ %b() (%a)") ~= "Z"
end

local function ls(dir)
  local names = {}
  for name in sh("ls -A " .. shell_quote(dir)):gmatch("[^\n]+") do names[name] = true end
  return names
end

describe("saves under SIGKILL", function()
  it("always leave a file that loads and holds a version the child wrote", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. shell_quote(dir)))
    local child = dir .. "/child.lua"
    write_file(child, CHILD)
    local path = dir .. "/world.qw"

    -- Temporary files planted beside the target: of a process that has
    -- ended (removed by the next save), of a live one (kept: it may be
    -- writing), of another target, and a name that is no saver's.
    local dead = assert(tonumber(sh("sh -c 'echo $$'"):match("%d+")))
    local live = assert(tonumber(sh("sleep 600 >/dev/null 2>&1 & echo $!"):match("%d+")))
    assert.is_nil(host.read_file("/proc/" .. dead .. "/stat"), "the pid was reused already")
    local planted = {
      ["world.qw.tmp-" .. dead] = false, ["world.qw.tmp-" .. live] = true,
      ["other.qw.tmp-" .. dead] = true, ["world.qw.tmp-0" .. dead] = true,
      ["world.qw.tmp-" .. dead .. "x"] = true,
    }
    for name in pairs(planted) do write_file(dir .. "/" .. name, "torn") end
    local function stale() -- cut saves' files, planted ones apart
      local n = 0
      for name in pairs(ls(dir)) do
        if name:match("^world%.qw%.tmp%-%d+$") and planted[name] == nil then n = n + 1 end
      end
      return n
    end

    -- The hashes of versions 0.. as far as needed, computed on demand.
    local base, edit = load(EDITS .. " return base, edit")()
    local ref = base(quarry)
    local hashes = {[ref:hash()] = 0}
    local made = 0
    local function version_of(hash, at_least)
      while hashes[hash] == nil and made < at_least + 2000 and made < VERSIONS do
        made = made + 1
        edit(ref, made)
        hashes[ref:hash()] = made
      end
      return hashes[hash]
    end

    math.randomseed(20261124)
    local kills = sanitize and 25 or 50
    local last = 0
    local seen = {}
    local t0 = os.time()
    local cut, most = 0, 0 -- rounds that left a temporary file; most seen at once
    for round = 1, kills do
      local log = dir .. "/child.log"
      local pid = sh(string.format("lua5.4 %s %s %s %d >%s 2>&1 & echo $!", shell_quote(child),
                                   shell_quote(build), shell_quote(path), last, shell_quote(log)))
      pid = assert(tonumber(pid:match("%d+")), "no pid")
      -- Wait until it has started (loaded the file or written the first one)
      -- so that the kill lands while it edits and saves.
      for _ = 1, 2000 do
        local text = host.read_file(log) or ""
        if text:find("started") or not alive(pid) then break end
        os.execute("sleep 0.005")
      end
      assert.is_true(alive(pid), "the child died on its own: " .. (host.read_file(log) or ""))
      os.execute(string.format("sleep %.3f", 0.005 + math.random() * (sanitize and 0.2 or 0.1)))
      os.execute("kill -KILL " .. pid)
      while alive(pid) do os.execute("sleep 0.001") end

      local w, err = quarry.world.load(path)
      assert.is_truthy(w, "round " .. round .. ": the file does not load: " .. tostring(err))
      local v = version_of(w:hash(), last)
      assert.is_truthy(v, "round " .. round .. ": the file holds no version the child wrote")
      assert.is_true(v >= last, "round " .. round .. ": went back from version " .. last .. " to " .. v)
      seen[#seen + 1] = v - last
      last = v
      w:destroy()
      local n = stale()
      if n > 0 then cut = cut + 1 end
      most = math.max(most, n)
    end
    -- The kills landed at different points, and the child made progress.
    assert.is_true(last > kills, "only " .. last .. " versions saved in " .. kills .. " rounds")
    local distinct = {}
    for _, d in ipairs(seen) do distinct[d] = true end
    local n = 0
    for _ in pairs(distinct) do n = n + 1 end
    assert.is_true(n >= 3)
    -- Temporary files: a kill leaves at most the killed save's file (and one
    -- more only when a child is killed before its first save begins, which
    -- the waits above make rare); the next save removes them.
    local names = ls(dir)
    local left = stale()
    print(string.format("# crashsave: %d kills, last version %d, %d s, %d kills cut a save, " ..
                        "at most %d temporary files at once, %d at the end",
                        kills, last, os.time() - t0, cut, most, left))
    assert.is_true(cut > 0, "no kill landed during a save: the cleanup went untested")
    assert.is_true(most <= 2, most .. " temporary files at once: they pile up")
    for name, keep in pairs(planted) do
      assert.are.equal(keep, names[name] == true, name)
    end
    -- A save by this (live) process removes what the killed children left.
    local w = assert(quarry.world.load(path))
    assert.is_true(w:save(path))
    w:destroy()
    assert.are.equal(0, stale())
    names = ls(dir)
    for name, keep in pairs(planted) do
      assert.are.equal(keep, names[name] == true, name)
    end
    os.execute("kill " .. live)
    os.execute("rm -rf " .. shell_quote(dir))
  end)
end)
