-- Specs for the host program (build/quarry): command line, callbacks, errors,
-- hot reload, screenshots and the host-only modules. Each test runs the
-- executable as a subprocess on small scripts written to a fresh temp dir.

local host = require "support.host"
local build, exe, shell_quote, OFFSCREEN = host.build, host.exe, host.shell_quote, host.OFFSCREEN
local write_file, read_file, lines_of = host.write_file, host.read_file, host.lines_of

local function count(list, value)
  local n = 0
  for _, v in ipairs(list) do if v == value then n = n + 1 end end
  return n
end

local dir   -- fresh per test

-- Runs the host; returns exit code, stdout, stderr. `env` is a prefix such as
-- "SDL_VIDEODRIVER=offscreen". A 60 s timeout keeps a broken loop from
-- hanging the suite.
local function run(args, env)
  local out, err = dir .. "/stdout", dir .. "/stderr"
  local cmd = string.format("%s timeout 60 %s %s >%s 2>%s", env or "", shell_quote(exe), args,
                            shell_quote(out), shell_quote(err))
  local _, _, code = os.execute(cmd)
  return code, read_file(out) or "", read_file(err) or ""
end

-- Writes a script whose first lines define log(...), appending one line to
-- the file named by the script's first argument.
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

local function run_script(path, options, env)
  local log = dir .. "/log"
  local code, out, err = run((options or "--headless") .. " " .. shell_quote(path) .. " " ..
                             shell_quote(log), env)
  return code, out, err, lines_of(log)
end

describe("quarry host", function()
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. shell_quote(dir)))
  end)

  after_each(function()
    os.execute("rm -rf " .. shell_quote(dir))
  end)

  it("exists (run make build/quarry first)", function()
    assert.is_truthy(read_file(exe), exe .. " is missing")
  end)

  describe("command line", function()
    it("--help prints the usage and exits 0", function()
      local code, out = run("--help")
      assert.are.equal(0, code)
      assert.matches("Usage: quarry %[options%] script%.lua", out)
      for _, opt in ipairs{"--headless", "--frames N", "--screenshot FILE", "--help"} do
        assert.is_truthy(out:find(opt, 1, true), "usage lacks " .. opt)
      end
    end)

    it("rejects an unknown option with exit 2", function()
      local code, _, err = run("--fly " .. shell_quote(dir .. "/x.lua"))
      assert.are.equal(2, code)
      assert.matches("unknown option '%-%-fly'", err)
      assert.matches("%-%-headless", err)
    end)

    it("rejects a missing script with exit 2", function()
      local code, _, err = run("--headless --frames 3")
      assert.are.equal(2, code)
      assert.matches("no script given", err)
    end)

    it("rejects a bad frame count with exit 2", function()
      local path = script("ok.lua", "")
      for _, n in ipairs{"abc", "0", "-3", "5x", "''", "99999999999999999999999"} do
        local code, _, err = run("--headless --frames " .. n .. " " .. shell_quote(path))
        assert.are.equal(2, code, "--frames " .. n)
        assert.matches("%-%-frames", err)
      end
      local code = run("--headless --frames")
      assert.are.equal(2, code)
      -- after the script name, options belong to the script
      code = run("--headless --frames 1 " .. shell_quote(path) .. " --frames")
      assert.are.equal(0, code)
    end)

    it("rejects --screenshot together with --headless", function()
      local code, _, err = run("--headless --screenshot x.png " .. shell_quote(script("s.lua", "")))
      assert.are.equal(2, code)
      assert.matches("%-%-screenshot needs a window", err)
    end)
  end)

  describe("callbacks", function()
    it("runs load once, then update and draw once per frame with dt = 1/60 headless", function()
      local path = script("main.lua", [[
function quarry.load(args) log("load", args[0] ~= nil, args[1] == LOG, args[2]) end
function quarry.update(dt) log("update", dt == 1/60) end
function quarry.draw() log("draw") end
function quarry.quit() log("quit") end
]])
      local code, out, err = run("--headless --frames 5 " .. shell_quote(path) .. " " ..
                                 shell_quote(dir .. "/log") .. " extra")
      assert.are.equal(0, code, err)
      local log = lines_of(dir .. "/log")
      assert.are.equal("load true true extra", log[1])
      assert.are.equal(5, count(log, "update true"))
      assert.are.equal(5, count(log, "draw"))
      assert.are.equal(1, count(log, "quit"))
      assert.are.equal("quit", log[#log])
      assert.are.equal(12, #log)
      assert.are.equal("", out)
    end)

    it("passes the script arguments to the main chunk and sets arg", function()
      local path = script("args.lua", [[
log("chunk", select("#", ...), select(2, ...), arg[0] ~= nil, arg[2])
]])
      local code, _, err, log = run_script(path, "--headless --frames 1")
      assert.are.equal(0, code, err)
      assert.are.same({"chunk 1 nil true nil"}, log)
    end)

    it("returns the same module table from require", function()
      local path = script("same.lua", [[
local again = require "quarry"
log(again == quarry, type(quarry.graphics), type(quarry.keyboard), type(quarry.mouse),
    type(quarry.timer))
]])
      local code, _, err, log = run_script(path, "--headless --frames 1")
      assert.are.equal(0, code, err)
      assert.are.same({"true table table table table"}, log)
    end)

    it("finds modules next to the script and in <repo>/scripts", function()
      write_file(dir .. "/helper.lua", "return {answer = 42}\n")
      local path = script("uses.lua", [[
log("helper", require("helper").answer)
log("path", package.path)
]])
      local code, _, err, log = run_script(path, "--headless --frames 1")
      assert.are.equal(0, code, err)
      assert.are.equal("helper 42", log[1])
      local p = io.popen("pwd -P")
      local root = p:read("l")
      p:close()
      assert.is_truthy(log[2]:find(root .. "/scripts/?.lua", 1, true), log[2])
    end)

    -- The script signals itself at frame 3, as closing the window (or
    -- Ctrl-C) would; /proc/self is the host process since Lua runs inside it.
    local function self_terminating()
      return script("term.lua", [[
local frame = 0
function quarry.update()
  frame = frame + 1
  log("update", frame)
  if frame == 3 then
    local f = assert(io.open("/proc/self/stat"))
    local pid = f:read("n")
    f:close()
    os.execute("kill -TERM " .. pid)
  end
end
function quarry.quit() log("quit", frame) end
]])
    end

    it("calls quit() and exits 0 on SIGTERM headless", function()
      local code, _, err, log = run_script(self_terminating(), "--headless")
      assert.are.equal(0, code, err)
      assert.are.equal("quit 3", log[#log])
    end)

    it("calls quit() and exits 0 when the window is asked to close", function()
      local code, _, err, log = run_script(self_terminating(), "--frames 100", OFFSCREEN)
      if code ~= 0 and err:find("offscreen not available", 1, true) then
        error("SDL has no offscreen video driver here (the project needs it for GL tests): " .. err)
      end
      assert.are.equal(0, code, err)
      assert.matches("^quit %d+$", log[#log])
      assert.is_true(#log < 10, "the loop went on after the close request")
    end)

    it("reports a runtime error in update with file:line and keeps running", function()
      local path = script("boom.lua", [[
local frame = 0
function quarry.update(dt)
  frame = frame + 1
  log("update", frame)
  if frame == 2 then error("kaboom") end
end
]])
      local code, _, err, log = run_script(path, "--headless --frames 5")
      assert.are.equal(0, code)
      assert.is_truthy(err:find(path .. ":14: kaboom", 1, true), err)
      assert.matches("stack traceback", err)
      assert.are.same({"update 1", "update 2", "update 3", "update 4", "update 5"}, log)
    end)

    it("prints an error that repeats every frame only once", function()
      local path = script("again.lua", [[
function quarry.update(dt) error("every frame") end
]])
      local code, _, err = run_script(path, "--headless --frames 5")
      assert.are.equal(0, code)
      local _, n = err:gsub("every frame", "")
      assert.are.equal(1, n, err)
      assert.matches("repeated 4 more times", err)
    end)

    it("reports an error in load and still runs the frames", function()
      local path = script("badload.lua", [[
function quarry.load() error("no load today") end
function quarry.update() log("update") end
]])
      local code, _, err, log = run_script(path, "--headless --frames 3")
      assert.are.equal(0, code)
      assert.is_truthy(err:find(path .. ":10: no load today", 1, true), err)
      assert.are.equal(3, count(log, "update"))
    end)

    it("exits 1 with file:line when the script has a syntax error", function()
      local path = dir .. "/syntax.lua"
      write_file(path, "local quarry = require 'quarry'\n\nfunction quarry.update(dt)\n  x = = 1\nend\n")
      local code, _, err = run("--headless --frames 3 " .. shell_quote(path))
      assert.are.equal(1, code)
      assert.is_truthy(err:find(path .. ":4:", 1, true), err)
    end)

    it("exits 1 with file:line when the main chunk fails", function()
      local path = dir .. "/fails.lua"
      write_file(path, "local quarry = require 'quarry'\nerror('cannot start')\n")
      local code, _, err = run("--headless --frames 3 " .. shell_quote(path))
      assert.are.equal(1, code)
      assert.is_truthy(err:find(path .. ":2: cannot start", 1, true), err)
    end)

    it("exits 1 when the script file does not exist", function()
      local code, _, err = run("--headless " .. shell_quote(dir .. "/nowhere.lua"))
      assert.are.equal(1, code)
      assert.matches("nowhere%.lua", err)
    end)
  end)

  describe("hot reload", function()
    -- v1 sets a global in load and, at frame 3, replaces its own file with `v2`.
    local function self_rewriting(v2)
      return script("live.lua", string.format([[
function quarry.load() kept = "from-load"; frames = 0; log("load") end
function quarry.update(dt)
  frames = frames + 1
  log("v1", frames, kept)
  if frames == 3 then
    local f = assert(io.open(arg[0], "w"))
    f:write(%q)
    f:close()
  end
end
]], v2))
    end

    it("reloads a changed script in place, keeping globals and not calling load again", function()
      local path = self_rewriting([[
local quarry = require "quarry"
function quarry.load() log("load again") end
function quarry.update(dt)
  frames = frames + 1
  log("v2", frames, kept)
end
]])
      local code, out, err, log = run_script(path, "--headless --frames 6")
      assert.are.equal(0, code, err)
      assert.is_truthy(out:find("reloaded " .. path, 1, true), out)
      assert.are.same({"load", "v1 1 from-load", "v1 2 from-load", "v1 3 from-load",
                       "v2 4 from-load", "v2 5 from-load", "v2 6 from-load"}, log)
    end)

    it("keeps the old code running when the new version has a syntax error", function()
      local path = self_rewriting("local quarry = require 'quarry'\nfunction quarry.update(dt)\n  log('v2'\nend\n")
      local code, out, err, log = run_script(path, "--headless --frames 6")
      assert.are.equal(0, code, err)
      assert.is_falsy(out:find("reloaded", 1, true), out)
      assert.is_truthy(err:find(path .. ":4:", 1, true), err)
      assert.matches("old code keeps running", err)
      assert.are.same({"load", "v1 1 from-load", "v1 2 from-load", "v1 3 from-load",
                       "v1 4 from-load", "v1 5 from-load", "v1 6 from-load"}, log)
    end)

    it("restores the old callbacks when the new version fails while running", function()
      local path = self_rewriting([[
local quarry = require "quarry"
function quarry.update(dt) log("half-installed") end
error("broken at load time")
]])
      local code, out, err, log = run_script(path, "--headless --frames 5")
      assert.are.equal(0, code, err)
      assert.is_falsy(out:find("reloaded", 1, true), out)
      assert.is_truthy(err:find(path .. ":3: broken at load time", 1, true), err)
      assert.are.equal(0, count(log, "half-installed"))
      assert.are.equal("v1 5 from-load", log[#log])
    end)
  end)

  describe("host modules", function()
    it("check their arguments and work headless", function()
      local path = script("mods.lua", [[
local g = quarry.graphics
local function err(f, ...) local ok, e = pcall(f, ...) return ok and "no error" or e end
log(err(g.debug, {wireframe = true, sparkles = true}))
log(err(g.debug, {lod = 1}))
local d = g.debug{chunks = true}
log("debug", d.chunks, d.wireframe, d.lod)
log(err(g.set_camera, {position = {1, 2, 3}, look = {0, 0, 0}}))
log(err(g.set_camera, {fov = 4}))
g.set_camera{position = {1, 2, 3}, target = {x = 0, y = 1, z = 0}, fov = 1}
local c = g.get_camera()
log("camera", c.position.x, c.position.y, c.position.z, c.target.y, c.fov)
log(err(g.set_clear_color, 1, 2, 0))
g.set_clear_color{0.25, 0.5, 1}
log("clear", g.get_clear_color())
log("shot", g.screenshot(LOG .. ".png"))
log(err(quarry.keyboard.is_down, "notakey"))
log("keys", quarry.keyboard.is_down("a"), quarry.keyboard.is_down("Space"), quarry.keyboard.is_down("left shift"))
log("mouse", quarry.mouse.position())
function quarry.update() fps = quarry.timer.fps() end
function quarry.quit() log("fps", fps) end
]])
      local code, _, err, log = run_script(path, "--headless --frames 3")
      assert.are.equal(0, code, err)
      assert.matches("unknown option 'sparkles' %(valid: wireframe, chunks, broadphase, contacts, kdtree, lod%)", log[1])
      assert.matches("lod must be a boolean, got number", log[2])
      assert.are.equal("debug true false false", log[3])
      assert.matches("unknown option 'look' %(valid: position, target, fov%)", log[4])
      assert.matches("fov must be in %(0, pi%)", log[5])
      assert.are.equal("camera 1.0 2.0 3.0 1.0 1.0", log[6])
      assert.matches("must be in %[0, 1%], got 2", log[7])
      assert.are.equal("clear 0.25 0.5 1.0 1.0", log[8])
      assert.matches("^shot nil no window", log[9])
      assert.matches("unknown key 'notakey'", log[10])
      assert.are.equal("keys false false false", log[11])
      assert.are.equal("mouse 0.0 0.0", log[12])
      assert.are.equal("fps 60", log[13])
    end)

    it("never initialise SDL video with --headless", function()
      local path = script("plain.lua", "function quarry.update() log('update') end\n")
      local code, _, err, log = run_script(path, "--headless --frames 2", "SDL_VIDEODRIVER=no-such-driver")
      assert.are.equal(0, code, err)
      assert.are.equal(2, count(log, "update"))
    end)

    it("explain a window that cannot be opened and exit 1", function()
      local path = script("plain.lua", "")
      local code, _, err = run_script(path, "--frames 2", "SDL_VIDEODRIVER=no-such-driver")
      assert.are.equal(1, code)
      assert.matches("no%-such%-driver", err)
      assert.matches("%-%-headless", err)
    end)
  end)

  describe("screenshots (SDL offscreen driver, Mesa llvmpipe)", function()
    local env = OFFSCREEN

    -- Runs in an offscreen window; fails with a clear message when SDL says
    -- the offscreen driver itself is not there.
    local function run_offscreen(path, options)
      local code, out, err, log = run_script(path, options, env)
      if code ~= 0 and err:find("offscreen not available", 1, true) then
        error("SDL has no offscreen video driver here (the project needs it for GL tests): " .. err)
        return nil
      end
      assert.are.equal(0, code, err)
      return out, err, log
    end

    local function read_ppm(path)
      local data = assert(read_file(path), "no image at " .. path)
      local w, h, start = data:match("^P6\n(%d+) (%d+)\n255\n()")
      assert.is_truthy(w, "not a binary PPM")
      w, h = tonumber(w), tonumber(h)
      assert.are.equal(w * h * 3, #data - start + 1)
      return {
        width = w, height = h,
        pixel = function(x, y)
          local i = start + (y * w + x) * 3
          return data:byte(i, i + 2)
        end,
      }
    end

    local function assert_colour(img, x, y, r, g, b)
      local pr, pg, pb = img.pixel(x, y)
      local msg = string.format("pixel (%d, %d) is %d %d %d, want %d %d %d", x, y, pr, pg, pb, r, g, b)
      assert.is_true(math.abs(pr - r) <= 1 and math.abs(pg - g) <= 1 and math.abs(pb - b) <= 1, msg)
    end

    it("--screenshot writes the last frame with the clear colour (PPM)", function()
      local path = script("sky.lua", [[
function quarry.load() quarry.graphics.set_clear_color(0.2, 0.4, 0.6) end
]])
      local shot = dir .. "/sky.ppm"
      if not run_offscreen(path, "--frames 3 --screenshot " .. shell_quote(shot)) then return end
      local img = read_ppm(shot)
      assert.is_true(img.width > 0 and img.height > 0)
      for _, p in ipairs{{0, 0}, {img.width - 1, img.height - 1}, {img.width // 2, img.height // 3}} do
        assert_colour(img, p[1], p[2], 51, 102, 153)
      end
    end)

    it("--screenshot writes a PNG for other names", function()
      local path = script("png.lua", "function quarry.draw() quarry.graphics.set_clear_color(0, 1, 0) end\n")
      local shot = dir .. "/frame.png"
      if not run_offscreen(path, "--frames 2 --screenshot " .. shell_quote(shot)) then return end
      local data = assert(read_file(shot), "no PNG written")
      assert.are.equal("\137PNG\r\n\26\n", data:sub(1, 8))
      assert.are.equal("IHDR", data:sub(13, 16))
      local w, h = string.unpack(">I4>I4", data, 17)
      assert.is_true(w > 0 and h > 0)
    end)

    it("graphics.clear and graphics.screenshot act on the frame they are called in", function()
      local path = script("mid.lua", [[
local n = 0
function quarry.update() n = n + 1 end
function quarry.draw()
  if n == 2 then
    quarry.graphics.clear(1, 0, 0)
    log("shot", quarry.graphics.screenshot(LOG .. ".ppm"))
  else
    quarry.graphics.clear{0, 0, 1}
  end
end
]])
      local last = dir .. "/last.ppm"
      local _, _, log = run_offscreen(path, "--frames 4 --screenshot " .. shell_quote(last))
      if not log then return end
      assert.are.same({"shot true"}, log)
      assert_colour(read_ppm(dir .. "/log.ppm"), 3, 3, 255, 0, 0)
      assert_colour(read_ppm(last), 3, 3, 0, 0, 255)
    end)
  end)
end)
