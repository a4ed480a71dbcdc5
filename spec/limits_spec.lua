-- Limits: the host's script limits (--max-instructions, --max-memory), the
-- sandboxed script mode (--sandbox), and the engine's size limits, which
-- must answer with errors, not hangs or crashes.

local host = require "support.host"
local exe, shell_quote = host.exe, host.shell_quote
local write_file, read_file, lines_of = host.write_file, host.read_file, host.lines_of

local dir

local function run(args)
  local out, err = dir .. "/stdout", dir .. "/stderr"
  local cmd = string.format("timeout 60 %s %s >%s 2>%s", shell_quote(exe), args,
                            shell_quote(out), shell_quote(err))
  local _, _, code = os.execute(cmd)
  return code, read_file(out) or "", read_file(err) or ""
end

-- A script whose log(...) appends a line to <dir>/log (io is opened before
-- any sandbox question: the log goes through print in sandboxed scripts).
local function script(name, body)
  local path = dir .. "/" .. name
  write_file(path, [[
local quarry = require "quarry"
LOG = LOG or arg[1]
function log(...)
  local f = assert(io.open(LOG, "a"))
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = tostring(select(i, ...)) end
  f:write(table.concat(parts, " "), "\n")
  f:close()
end
]] .. body)
  return path
end

local function count(list, value)
  local n = 0
  for _, v in ipairs(list) do if v == value then n = n + 1 end end
  return n
end

local function fresh_dir()
  dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. shell_quote(dir)))
end

local function remove_dir()
  os.execute("rm -rf " .. shell_quote(dir))
end

describe("host script limits", function()
  before_each(fresh_dir)
  after_each(remove_dir)

  it("stops an endless loop in update each frame and keeps the loop running", function()
    local path = script("loop.lua", [[
function quarry.update(dt) log("update"); while true do end end
function quarry.draw() log("draw") end
function quarry.quit() log("quit") end
]])
    local code, _, err = run("--headless --frames 5 --max-instructions 1000000 " ..
                             shell_quote(path) .. " " .. shell_quote(dir .. "/log"))
    assert.are.equal(0, code, err)
    assert.matches("error in quarry%.update: instruction limit exceeded: more than 1000000 Lua " ..
                   "instructions in one call %(%-%-max%-instructions%)", err)
    assert.matches("loop%.lua:10: in function 'quarry%.update'", err)
    assert.matches("the error above repeated 4 more times", err)
    local log = lines_of(dir .. "/log")
    assert.are.equal(5, count(log, "update"))
    assert.are.equal(5, count(log, "draw"))
    assert.are.equal("quit", log[#log])
  end)

  it("stops a loop that catches the error with pcall", function()
    local path = script("pcall.lua", [[
function quarry.update(dt)
  local caught = 0
  while true do
    pcall(function() while true do end end)
    caught = caught + 1
  end
end
function quarry.quit() log("quit") end
]])
    local code, _, err = run("--headless --frames 3 --max-instructions 200000 " ..
                             shell_quote(path) .. " " .. shell_quote(dir .. "/log"))
    assert.are.equal(0, code, err)
    assert.matches("instruction limit exceeded", err)
    assert.are.same({"quit"}, lines_of(dir .. "/log"))
  end)

  it("charges coroutines too, even when the script catches the error", function()
    local path = script("co.lua", [[
local n = 0
local co = coroutine.wrap(function()
  while true do
    if n == 2 then while true do end end
    local s = 0
    for i = 1, 30000 do s = s + i end
    coroutine.yield(s)
  end
end)
function quarry.update(dt)
  n = n + 1
  log("update", n, pcall(co))
end
function quarry.quit() log("quit", n) end
]])
    local code, _, err = run("--headless --frames 3 --max-instructions 200000 " ..
                             shell_quote(path) .. " " .. shell_quote(dir .. "/log"))
    assert.are.equal(0, code, err)
    local log = lines_of(dir .. "/log")
    -- frame 1 runs within budget; in frame 2 the coroutine's endless loop
    -- is stopped, and update itself right after its pcall; frame 3 runs
    -- normally again (the coroutine is dead by then)
    assert.are.same({"update 1 true 450015000", "update 3 false cannot resume dead coroutine",
                     "quit 3"}, log)
    assert.matches("error in quarry%.update: .*instruction limit exceeded", err)
  end)

  it("stops runaway allocation with a memory error and the next frames run", function()
    local path = script("mem.lua", [[
local n = 0
function quarry.update(dt)
  n = n + 1
  if n == 2 then
    local t = {}
    for i = 1, 1e9 do t[i] = ("x"):rep(64) .. i end
  end
  log("update", n)
end
function quarry.quit() log("quit", n) end
]])
    local code, _, err = run("--headless --frames 4 --max-instructions 0 --max-memory 32M " ..
                             shell_quote(path) .. " " .. shell_quote(dir .. "/log"))
    assert.are.equal(0, code, err)
    assert.matches("error in quarry%.update: memory limit exceeded: the Lua heap may not grow " ..
                   "past 33554432 bytes %(%-%-max%-memory%)", err)
    assert.are.same({"update 1", "update 3", "update 4", "quit 4"}, lines_of(dir .. "/log"))
  end)

  it("stops a hot-reloaded script whose main chunk loops forever; the old code runs on", function()
    local path = script("live.lua", [[
frames = 0
function quarry.update(dt)
  frames = frames + 1
  log("v1", frames)
  if frames == 2 then
    local f = assert(io.open(arg[0], "w"))
    f:write("local quarry = require 'quarry'\nfunction quarry.update() log('v2') end\nwhile true do end\n")
    f:close()
  end
end
]])
    local code, out, err = run("--headless --frames 4 --max-instructions 1000000 " ..
                               shell_quote(path) .. " " .. shell_quote(dir .. "/log"))
    assert.are.equal(0, code, err)
    assert.matches("reload of .* failed, the old code keeps running: .*instruction limit exceeded", err)
    assert.is_falsy(out:find("reloaded", 1, true), out)
    assert.are.same({"v1 1", "v1 2", "v1 3", "v1 4"}, lines_of(dir .. "/log"))
  end)

  it("limits the main chunk too (fatal there, exit 1)", function()
    local path = script("main.lua", "while true do end\n")
    local code, _, err = run("--headless --frames 2 --max-instructions 100000 " .. shell_quote(path))
    assert.are.equal(1, code)
    assert.matches("instruction limit exceeded", err)
  end)

  it("leaves ordinary scripts alone under the default limits", function()
    local path = script("ok.lua", [[
function quarry.update(dt)
  local s = 0
  for i = 1, 200000 do s = s + i end
  local t = {}
  for i = 1, 10000 do t[i] = {i} end
  log("sum", s, #t)
end
]])
    local code, _, err = run("--headless --frames 2 " .. shell_quote(path) .. " " ..
                             shell_quote(dir .. "/log"))
    assert.are.equal(0, code, err)
    assert.are.equal("", err)
    assert.are.same({"sum 20000100000 10000", "sum 20000100000 10000"}, lines_of(dir .. "/log"))
  end)

  it("checks the option values and documents them in --help", function()
    local path = script("x.lua", "")
    for _, bad in ipairs{"--max-instructions -1", "--max-instructions x", "--max-memory 10",
                         "--max-memory 5Q", "--max-memory -1M", "--max-instructions"} do
      local code, _, err = run(bad .. " --headless " .. shell_quote(path))
      assert.are.equal(2, code, bad)
      assert.matches("%-%-max%-", err, bad)
    end
    for _, good in ipairs{"--max-instructions 0", "--max-memory 0", "--max-memory=2G",
                          "--max-memory 1048576", "--max-instructions=5000000 --sandbox"} do
      local code, _, err = run(good .. " --headless --frames 1 " .. shell_quote(path))
      assert.are.equal(0, code, good .. ": " .. err)
    end
    local _, out = run("--help")
    for _, opt in ipairs{"--max-instructions N", "--max-memory SIZE", "--sandbox"} do
      assert.is_truthy(out:find(opt, 1, true), "usage lacks " .. opt)
    end
  end)
end)

describe("host --sandbox", function()
  before_each(fresh_dir)
  after_each(remove_dir)

  -- Runs `body` sandboxed; each check(name, f) prints "name ok|blocked message".
  local function sandboxed(body)
    local path = dir .. "/sb.lua"
    write_file(path, [[
local quarry = require "quarry"
local function check(name, f)
  local ok, e = pcall(f)
  print(name .. " " .. (ok and "ok" or "blocked " .. tostring(e):gsub("\n", " ")))
end
]] .. body)
    local code, out, err = run("--headless --frames 1 --sandbox " .. shell_quote(path))
    assert.are.equal(0, code, err)
    local result = {}
    for line in out:gmatch("[^\n]+") do
      local name, verdict, rest = line:match("^(%S+) (%S+)%s*(.*)$")
      if name then result[name] = {verdict, rest} end
    end
    return result, err
  end

  local function blocked(r, name, pattern)
    assert.is_truthy(r[name], name .. " did not run")
    assert.are.equal("blocked", r[name][1], name .. " was allowed")
    if pattern then assert.matches(pattern, r[name][2], nil, nil, name) end
  end

  local function allowed(r, name)
    assert.is_truthy(r[name], name .. " did not run")
    assert.are.equal("ok", r[name][1], name .. ": " .. r[name][2])
  end

  it("removes io, debug and os but os.clock and os.time, also through require", function()
    local r = sandboxed([[
check("io", function() assert(io == nil) ; return io.open end)
check("debug", function() return debug.sethook end)
check("os_execute", function() return os.execute("true") end)
check("os_exit", function() return os.exit(3) end)
check("os_getenv", function() return os.getenv("HOME") end)
check("os_remove", function() return os.remove("x") end)
check("os_clock", function() assert(type(os.clock()) == "number") end)
check("os_time", function() assert(type(os.time()) == "number") end)
check("require_io", function() return require("io").open("/etc/passwd") end)
check("require_debug", function() return require("debug").getinfo(1) end)
check("require_os", function() return require("os").execute("true") end)
]])
    for _, name in ipairs{"io", "debug", "os_execute", "os_exit", "os_getenv", "os_remove",
                          "require_io", "require_debug", "require_os"} do
      blocked(r, name)
    end
    allowed(r, "os_clock")
    allowed(r, "os_time")
  end)

  it("has no package.loadlib and loads no C modules", function()
    local r = sandboxed([[
check("loadlib", function() return package.loadlib("/lib/x86_64-linux-gnu/libc.so.6", "puts") end)
check("c_module", function() package.cpath = "/usr/lib/x86_64-linux-gnu/lua/5.4/?.so"; return require("lpeg") end)
check("c_module_dot", function() return require("socket.core") end)
check("cpath_empty", function() assert(package.cpath == "") end)
]])
    blocked(r, "loadlib", "attempt to call a nil value")
    blocked(r, "c_module", "module 'lpeg' not found")
    blocked(r, "c_module_dot", "module 'socket.core' not found")
  end)

  it("refuses binary chunks in load, loadfile, dofile and require", function()
    write_file(dir .. "/bin.luac", string.dump(function() return 1 end))
    write_file(dir .. "/binmod.lua", string.dump(function() return 1 end))
    write_file(dir .. "/textmod.lua", "return 'text module'")
    local r = sandboxed([[
local bin = string.dump(function() return 1 end)
check("load_binary", function() assert(load(bin)) end)
check("load_binary_mode_b", function() assert(load(bin, "x", "b")) end)
check("load_binary_reader", function() local done; assert(load(function() if not done then done = true; return bin end end)) end)
local here = arg[0]:match("^(.*)/")
check("loadfile_binary", function() assert(loadfile(here .. "/bin.luac", "b")) end)
check("dofile_binary", function() dofile(here .. "/bin.luac") end)
check("require_binary", function() require("binmod") end)
check("load_text", function() assert(load("return ...", "c", "t")(5) == 5) end)
check("load_text_env", function() assert(load("return x", "c", nil, {x = 7})() == 7) end)
check("require_text", function() assert(require("textmod") == "text module") end)
]])
    for _, name in ipairs{"load_binary", "load_binary_mode_b", "load_binary_reader",
                          "loadfile_binary", "dofile_binary", "require_binary"} do
      blocked(r, name, "binary chunk")
    end
    for _, name in ipairs{"load_text", "load_text_env", "require_text"} do allowed(r, name) end
  end)

  it("confines dofile, loadfile and quarry's file functions to the script's directory", function()
    write_file(dir .. "/inside.lua", "return 42")
    assert(os.execute("mkdir -p " .. shell_quote(dir .. "/sub")))
    write_file(dir .. "/sub/deeper.lua", "return 43")
    assert(os.execute("ln -s /etc/passwd " .. shell_quote(dir .. "/link")))
    assert(os.execute("ln -s /tmp/quarry-sandbox-escape-target " .. shell_quote(dir .. "/dangling")))
    local r = sandboxed([[
local here = arg[0]:match("^(.*)/")
check("dofile_inside", function() assert(dofile(here .. "/inside.lua") == 42) end)
check("loadfile_sub", function() assert(loadfile(here .. "/sub/deeper.lua")() == 43) end)
check("dofile_outside", function() dofile("/etc/passwd") end)
check("loadfile_dotdot", function() assert(loadfile(here .. "/sub/../../x.lua")) end)
check("loadfile_symlink", function() assert(loadfile(here .. "/link")) end)
check("loadfile_stdin", function() loadfile() end)
check("dofile_stdin", function() dofile() end)
local w = quarry.world.new{}
check("world_save_inside", function() assert(w:save(here .. "/w.qw")) end)
check("world_load_inside", function() assert(quarry.world.load(here .. "/w.qw")) end)
check("world_save_outside", function() w:save("/tmp/quarry-sandbox-escape.qw") end)
check("world_save_dangling", function() w:save(here .. "/dangling") end)
check("world_load_outside", function() quarry.world.load("/etc/passwd") end)
check("mesh_load_outside", function() quarry.mesh.load("/usr/share/doc/x.obj") end)
check("screenshot_outside", function() quarry.graphics.screenshot("/tmp/x.png") end)
]])
    allowed(r, "dofile_inside")
    allowed(r, "loadfile_sub")
    allowed(r, "world_save_inside")
    allowed(r, "world_load_inside")
    for _, name in ipairs{"dofile_outside", "loadfile_dotdot", "loadfile_symlink",
                          "world_save_outside", "world_save_dangling", "world_load_outside",
                          "mesh_load_outside", "screenshot_outside"} do
      blocked(r, name, "outside the script's directory %(%-%-sandbox%)")
    end
    blocked(r, "loadfile_stdin", "standard input")
    blocked(r, "dofile_stdin", "standard input")
    assert.is_falsy(read_file("/tmp/quarry-sandbox-escape.qw"))
    assert.is_falsy(read_file("/tmp/quarry-sandbox-escape-target"))
  end)

  it("leaves the rest of the standard library and quarry working", function()
    local r = sandboxed([[
check("std", function()
  assert(string.format("%d", 3) == "3" and math.floor(2.5) == 2 and table.concat({1, 2}) == "12")
  assert(coroutine.wrap(function() coroutine.yield(1) end)() == 1)
  assert(utf8.char(72) == "H" and select("#", 1, 2) == 2)
end)
check("quarry", function()
  local w = quarry.world.new{}
  w.terrain:fill_ball({0, 0, 0}, 3, "rock")
  assert(w:raycast({0, 10, 0}, {0, -1, 0}, 20))
end)
]])
    allowed(r, "std")
    allowed(r, "quarry")
  end)
end)

describe("engine limits", function()
  package.cpath = (os.getenv("QUARRY_BUILD") or "build") .. "/?.so;" .. package.cpath
  local quarry = require "quarry"

  local function fails(pattern, f, ...)
    local ok, err = pcall(f, ...)
    assert.is_false(ok, "accepted")
    assert.matches(pattern, err)
  end

  it("refuses a huge edit, generate, read or mesh box with an error", function()
    local w = quarry.world.new{}
    local T = w.terrain
    local t0 = os.clock()
    fails("bad argument", T.fill_ball, T, {0, 0, 0}, 1e6, "rock")
    fails("bad argument", T.fill_block, T, {0, 0, 0}, {1e5, 1e5, 1e5}, "rock")
    fails("bad argument", T.fill_cylinder, T, {0, 0, 0}, 1e5, 1e5, "rock")
    fails("bad argument", T.smooth_ball, T, {0, 0, 0}, 1e4, 0.5)
    fails("4096", T.generate, T, {kind = "flat", size = {100000, 100000, 100000}})
    fails("more than 67108864 voxels", T.read, T, {0, 0, 0}, {10000, 10000, 10000})
    fails("mesh it in parts", T.mesh, T, {0, 0, 0}, {10000, 10000, 10000})
    fails("16777216", T.fill_region, T, {-2 ^ 30, 0, 0}, {10, 10, 10}, "rock")
    fails("16777216", T.fill_ball, T, {2 ^ 40, 0, 0}, 2, "rock")
    -- none of that should have taken real time: limits are checked before work
    assert.is_true(os.clock() - t0 < 5)
    assert.are.same({}, {T:bounds()})
  end)

  it("bounds a step, a grid-sort resolution, names and world settings", function()
    local w = quarry.world.new{}
    assert.are.equal(240, w:step(1e9)) -- Q_MAX_STEPS_PER_CALL: the backlog is dropped
    w.terrain:fill_ball({0, 0, 0}, 4, "rock")
    local m = w.terrain:mesh({-6, -6, -6}, {6, 6, 6})
    fails("1%.%.2048", quarry.gridsort.new, m, {resolution = 100000})
    fails("longer than 31", quarry.material.define, {name = ("x"):rep(40), density = 1})
    fails("1%.%.64", quarry.world.new, {substeps = 1000})
    fails("> 0", quarry.world.new, {voxel_size = -1})
  end)
end)
