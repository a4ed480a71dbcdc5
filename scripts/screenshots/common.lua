-- Shared by the screenshot scripts (`make screenshots`): where the
-- repository is, running an example as if the host had been given it, and
-- fixed steps so that every run makes the same picture.
local quarry = require "quarry"

local M = {}

-- The repository root, from this script's path (arg[0]).
M.root = ((arg and arg[0] or ""):match("^(.-)/?scripts/screenshots/[^/]*$") or "")
if M.root == "" then M.root = "." end

-- Runs examples/<name>.lua: its callbacks land on the module table.
function M.example(name)
  dofile(M.root .. "/examples/" .. name .. ".lua")
end

-- update(dt) gets exactly 1/60 s per frame however long llvmpipe took to
-- draw the last one, so the simulation in the picture does not depend on
-- the machine.
function M.fixed_step()
  local update = quarry.update
  quarry.update = function()
    if update then update(1 / 60) end
  end
end

-- Calls fn(frame) before the update of every frame (1, 2, ...).
function M.each_frame(fn)
  local update, frame = quarry.update, 0
  quarry.update = function(dt)
    frame = frame + 1
    fn(frame)
    if update then update(dt) end
  end
end

return M
