-- Frame profile HUD: where a frame's time went, from world:stats() ms_*
-- fields (engine/world/world.h, "frame profile"), smoothed over about half a
-- second so the figures can be read.
--
--   local hud = require "hud"          -- the host puts scripts/ on package.path
--   function quarry.draw()
--     g.draw_world(world)
--     hud.draw(world)                  -- one line at the bottom left
--   end
--
-- hud.draw(world [, x, y [, opts]]) draws the line with quarry.graphics.text
-- (opts as for text; default scale 1.5, light grey); hud.line(world) returns
-- it (for print or another layout); hud.profile(world) the smoothed table of
-- ms_* values. Draw-time fields (ms_mesh) belong to the frame drawn before
-- the last world:step, so call these in draw, after world:step ran in update.

local M = {}

-- Shown in this order: label, stats field. ms_engine is the sum of the
-- engine calls the script made (world:step and the edits, rays, shatters,
-- detaches and draw_world around it); the body stages of world:step are
-- in brackets after it. ms_lua is the rest of the script callbacks' time.
M.FIELDS = {
  {"engine", "ms_engine"}, {"step", "ms_step"}, {"bp", "ms_broadphase"}, {"np", "ms_narrowphase"},
  {"solve", "ms_solver"}, {"frac", "ms_fracture"}, {"detach", "ms_detach"}, {"edit", "ms_edit"},
  {"rays", "ms_raycast"}, {"mesh", "ms_mesh"}, {"lua", "ms_lua"},
}

local SMOOTH = 0.1 -- weight of the newest frame (about 10 frames' memory)
local state = setmetatable({}, {__mode = "k"}) -- world -> {frame =, ms_* =}

function M.profile(world)
  local s = world:stats()
  local p = state[world]
  if not p then
    p = {}
    for _, f in ipairs(M.FIELDS) do p[f[2]] = s[f[2]] end
    state[world] = p
  elseif p.frame ~= world:frame() then
    for _, f in ipairs(M.FIELDS) do
      local k = f[2]
      p[k] = p[k] + SMOOTH * (s[k] - p[k])
    end
  end
  p.frame = world:frame()
  return p
end

function M.line(world)
  local p = M.profile(world)
  local function ms(i) return string.format("%s %.2f", M.FIELDS[i][1], p[M.FIELDS[i][2]]) end
  local fps = ""
  local quarry = package.loaded.quarry
  if quarry and quarry.timer then fps = string.format("%d fps | ", quarry.timer.fps()) end
  return string.format("%sms/frame: %s: %s (%s %s %s) %s %s %s %s %s | %s", fps, ms(1), ms(2), ms(3), ms(4),
                       ms(5), ms(6), ms(7), ms(8), ms(9), ms(10), ms(11))
end

function M.draw(world, x, y, opts)
  local g = require("quarry").graphics
  if not g then return end
  local _, height = g.size()
  g.text(M.line(world), x or 10, y or height - 24, opts or {scale = 1.5, color = {0.92, 0.92, 0.92, 0.9}})
end

return M
