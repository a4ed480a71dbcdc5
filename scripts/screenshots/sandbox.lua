-- docs/img/sandbox.png: examples/sandbox.lua with a crater dug into the
-- hills and a few boxes and balls dropped around it, as a player would with
-- the mouse and B / N (here through the API, so the picture does not depend
-- on the sandbox's key bindings).
local quarry = require "quarry"
local shots = require "screenshots.common"
shots.example("sandbox")

local g = quarry.graphics
local SHAPES = {
  {shape = "box", size = {1.5, 1, 1}, material = "wood"},
  {shape = "sphere", radius = 0.6, material = "metal"},
  {shape = "box", size = {1.5, 1, 1}, material = "brick"},
  {shape = "sphere", radius = 0.6, material = "ice"},
}

-- The terrain point under window point (x, y) for the current camera.
local function ground(x, y)
  local origin, dir = g.screen_ray(x, y)
  local hit = world:raycast(origin, dir, 300, {bodies = false})
  return hit and hit.position
end

shots.each_frame(function(frame)
  if frame == 1 and type(camera) == "table" and camera.position then
    -- closer than the sandbox's start, looking down a little more
    camera.position = quarry.vec3(40, 52, 40)
    camera.pitch = math.rad(-24)
  elseif frame == 2 then -- the sandbox set the camera in frame 1's update
    local w, h = g.size()
    local centre = ground(w * 0.5, h * 0.62)
    if centre then world.terrain:carve_ball(centre, 7) end
    for i = 0, 11 do
      local p = ground(w * (0.3 + 0.04 * i), h * (0.55 + 0.03 * (i % 3)))
      if p then
        local def = {}
        for k, v in pairs(SHAPES[i % #SHAPES + 1]) do def[k] = v end
        def.position = p + quarry.vec3(0, 3 + i % 4, 0)
        def.rotation = quarry.quat.from_euler(0.3 * i, 0.7 * i, 0.1 * i)
        world:spawn(def)
      end
    end
  end
end)
shots.fixed_step()
