-- Every example survives a hot reload and keeps its world (issue 11): each
-- one runs headless from a copy that, at frame 20, rewrites its own file
-- (the host then reloads it without calling quarry.load again); at the end
-- the global `world` must be the same World object, it must have gone on
-- stepping past the reload, and the run must end cleanly.
local host = require "support.host"

local EXAMPLES = {"arch", "bake", "bodies", "decompose", "marble", "miner", "sandbox", "shatter"}

-- Appended to the copy: counts frames across reloads in globals, touches
-- the file once, and reports at quit.
local PROBE = [[

-- probe (spec/examples_reload_spec.lua)
do
  local update, quit = quarry.update, quarry.quit
  function quarry.update(dt)
    probe_frames = (probe_frames or 0) + 1
    if probe_frames == 20 and not probe_touched then
      probe_touched = true
      probe_world = world
      probe_frame = world and world.frame and world:frame()
      local f = assert(io.open(PROBE_PATH, "rb"))
      local src = f:read("a")
      f:close()
      f = assert(io.open(PROBE_PATH, "w"))
      f:write(src, "\n-- touched\n")
      f:close()
    end
    if update then return update(dt) end
  end
  function quarry.quit()
    if quit then quit() end
    print(("probe: reloads %s, same world %s, frame %s -> %s"):format(tostring(probe_reloads),
      tostring(world ~= nil and rawequal(world, probe_world)), tostring(probe_frame),
      tostring(world and world:frame())))
  end
  probe_reloads = probe_touched and (probe_reloads or 0) + 1 or 0
end
]]

describe("hot reload of every example", function()
  host.need_exe()
  for _, name in ipairs(EXAMPLES) do
    it(name .. ".lua keeps its world across a reload", function()
      local dir = os.tmpname()
      os.remove(dir)
      os.execute("mkdir -p " .. dir)
      local path = dir .. "/" .. name .. ".lua"
      local src = assert(host.read_file("examples/" .. name .. ".lua"))
      host.write_file(path, ("PROBE_PATH = %q\n"):format(path) .. src .. PROBE)
      local cmd = ("cd %s && timeout 300 %s --headless --frames 90 %s 2>&1"):format(
        host.shell_quote(os.getenv("PWD") or "."), host.shell_quote(host.exe), host.shell_quote(path))
      local pipe = assert(io.popen(cmd))
      local out = pipe:read("a")
      local ok = pipe:close()
      os.execute("rm -rf " .. dir)
      assert.is_true(ok, out)
      assert.matches("reloaded", out)
      local reloads, same, before, after = out:match("probe: reloads (%d+), same world (%a+), frame (%S+) %-> (%S+)")
      assert.is_truthy(reloads, out)
      assert.is_true(tonumber(reloads) >= 1, out)
      if before ~= "nil" then
        assert.are.equal("true", same, out)
        assert.is_true(tonumber(after) >= tonumber(before), out) -- not reset (bake.lua never steps)
      end
    end)
  end
end)
