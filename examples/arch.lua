-- Detached terrain: a sandstone arch stands on two pillars. Half a second in,
-- the pillars are dug through; the arch loses its connection to the ground,
-- turns into a rigid body (auto_detach) and falls; sandstone is brittle, so
-- the landing shatters it.
--
--   build/quarry examples/arch.lua                      (a window; Escape quits)
--   build/quarry --headless --frames 240 examples/arch.lua
--
-- Keys: D dig a ball at the cursor (anything cut loose falls), R rebuild the
-- arch, F12 screenshot (arch-N.png).

local quarry = require "quarry"
local g = quarry.graphics

-- Brittle: a landing whose contact impulse passes `strength` (N s) breaks it.
quarry.material.define{name = "sandstone", density = 2200, friction = 0.7, restitution = 0.05,
                       color = {0.85, 0.7, 0.45}, strength = 1e6, brittle = true}

local function build_arch(T)
  T:fill_region({12, 8, 20}, {16, 22, 26}, "sandstone")  -- left pillar
  T:fill_region({32, 8, 20}, {36, 22, 26}, "sandstone")  -- right pillar
  T:fill_region({12, 22, 20}, {36, 26, 26}, "sandstone") -- the span
end

local function dig_pillars(T)
  T:carve_ball({14, 11, 23}, 3.2)
  T:carve_ball({34, 11, 23}, 3.2)
end

function quarry.load()
  world = quarry.world.new{auto_detach = true}
  local T = world.terrain
  T:fill_region({0, 0, 0}, {48, 8, 48}, "rock")
  build_arch(T)
  frames, detached, shattered, fragments, shots = 0, 0, 0, 0, 0
  world:on("detach", function(bodies)
    detached = detached + #bodies
    for _, b in ipairs(bodies) do
      print(string.format("arch: frame %d, %.0f kg of %s came loose", world:frame(), b.mass, b.material))
    end
  end)
  world:on("shatter", function(body, pieces)
    shattered = shattered + 1
    fragments = fragments + #pieces
    print(string.format("arch: frame %d, it broke into %d pieces", world:frame(), #pieces))
  end)
  g.set_clear_color({0.6, 0.75, 0.92})
  g.set_camera{position = {24, 24, -20}, target = {24, 14, 23}, fov = math.rad(60)}
end

function quarry.update(dt)
  frames = frames + 1
  if frames == 30 then dig_pillars(world.terrain) end
  world:step(dt)
end

function quarry.keypressed(k)
  if k == "d" then
    local origin, dir = g.screen_ray(quarry.mouse.position())
    local hit = world:raycast(origin, dir, 300, {bodies = false})
    if hit then world.terrain:carve_ball(hit.position, 2.5) end
  elseif k == "r" then
    for _, b in ipairs(world:bodies()) do b:destroy() end
    build_arch(world.terrain)
  elseif k == "f12" then
    shots = shots + 1
    local name = string.format("arch-%d.png", shots)
    local ok, err = g.screenshot(name)
    print(ok and ("saved " .. name) or err)
  end
end

function quarry.draw()
  g.draw_world(world)
  local s = world:stats()
  g.text(string.format("%d bodies, %d awake | %d detached, %d shattered", s.bodies, s.awake, detached, shattered),
         10, 10)
  g.text("D dig at the cursor | R rebuild | F12 screenshot | Esc quit", 10, 34,
         {color = {0.9, 0.95, 1, 0.85}, scale = 1.5})
end

function quarry.quit()
  print(string.format("arch: %d frames, %d detached, %d shattered into %d pieces, %d bodies, hash %s", frames,
                      detached, shattered, fragments, #world:bodies(), world:hash()))
end
