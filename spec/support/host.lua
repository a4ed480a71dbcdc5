-- Helpers for specs that run the host program (build/quarry) as a
-- subprocess: where it is, how to quote, how to run it in an offscreen
-- window, and small file utilities.
local M = {}

M.build = os.getenv("QUARRY_BUILD") or "build"
M.exe = M.build .. "/quarry"

function M.shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- Environment for runs in a window without a display (SDL's offscreen
-- driver on Mesa's llvmpipe).
M.OFFSCREEN = "SDL_VIDEODRIVER=offscreen"
if os.getenv("QUARRY_SANITIZE") == "1" then
  -- Mesa's driver leaks a few strings at exit and is unloaded (SDL_Quit)
  -- before LeakSanitizer runs, so its frames cannot be named in a
  -- suppression. Headless runs keep leak checking of the host.
  M.OFFSCREEN = M.OFFSCREEN .. " ASAN_OPTIONS=" ..
                M.shell_quote((os.getenv("ASAN_OPTIONS") or "") .. ":detect_leaks=0")
end

function M.write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

function M.read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

-- The host program must be built (`make` builds it with the module): a spec
-- that needs it fails with this message when it is missing, never skips.
function M.need_exe()
  local f = io.open(M.exe, "rb")
  if not f then error("no host program at " .. M.exe .. " (run make first)", 2) end
  f:close()
end

-- Runs a script in the host headless for a number of frames: its output and
-- whether it exited cleanly.
function M.run_headless(script, frames)
  M.need_exe()
  local pipe = assert(io.popen(("%s --headless --frames %d %s 2>&1"):format(M.shell_quote(M.exe), frames,
                                                                          M.shell_quote(script))))
  local out = pipe:read("a")
  return out, pipe:close()
end

function M.lines_of(path)
  local out = {}
  for line in (M.read_file(path) or ""):gmatch("[^\n]+") do out[#out + 1] = line end
  return out
end

return M
