-- Rigid bodies on terrain: a pyramid of boxes, balls rolling down a hill into
-- a pond, wood planks floating and rock sinking; contacts are counted through
-- on_contact and world:on("contact").
--
--   build/quarry examples/bodies.lua                      (a window; Escape quits)
--   build/quarry --headless --frames 120 examples/bodies.lua
--
-- Keys: B drop a box at the cursor, N drop a ball, Space throw a ball from the
-- camera, X destroy the body under the cursor, F12 screenshot (bodies-N.png).
-- Bodies are drawn as wireframes of b:mesh(): asleep in grey. The bottom line
-- is the frame profile (scripts/hud.lua: world:stats() ms_* fields).

local quarry = require "quarry"
local hud = require "hud"
local g = quarry.graphics
local V = quarry.vec3

local COLOURS = {rock = {0.75, 0.72, 0.68}, wood = {0.85, 0.6, 0.3}, metal = {0.7, 0.8, 0.95}}

local function ground(x, z)
  local hit = world:raycast({x, 100, z}, {0, -1, 0}, 200, {bodies = false})
  return hit and hit.position.y or 0
end

function quarry.load()
  world = quarry.world.new{}
  world.terrain:generate{kind = "hills", size = {64, 32, 64}, seed = 2, water_level = 12}
  world.terrain:fill_block({20, 14, 20}, {14, 2, 14}, "rock") -- a flat stone floor
  contacts, landings, frames, shots = 0, 0, 0, 0

  -- A 28-box pyramid on the floor.
  local y = ground(20, 20)
  for row = 0, 6 do
    for i = 0, 6 - row do
      world:spawn{shape = "box", size = 1, position = {20 + (i - (6 - row) / 2) * 1.02, y + 0.5 + row, 20}}
    end
  end
  -- Balls and capsules up the hill, planks and a rock over the water.
  for i = 0, 5 do
    world:spawn{shape = "sphere", radius = 0.5, material = "metal", position = {40 + i * 2, 28, 44}}
    world:spawn{shape = "capsule", radius = 0.3, height = 1.4, material = "wood", position = {41 + i * 2, 29, 46},
                rotation = quarry.quat.from_axis_angle({1, 0, 0}, 1.2)}
  end
  for i = 0, 2 do
    world:spawn{shape = "box", size = {2, 0.5, 1}, material = "wood", position = {6 + i * 3, 16, 50}}
  end
  local stone = world:spawn{shape = "box", size = 1, material = "rock", position = {16, 16, 52}, name = "stone"}
  stone.on_contact = function(self, other)
    if other == "terrain" then landings = landings + 1 end
  end
  world:on("contact", function() contacts = contacts + 1 end)

  g.set_clear_color({0.55, 0.72, 0.9})
  g.set_camera{position = {-4, 30, -6}, target = {28, 12, 30}, fov = math.rad(60)}
  print(string.format("bodies: %d bodies on hills 64x32x64 with a pond", #world:bodies()))
end

function quarry.update(dt)
  frames = frames + 1
  world:step(dt)
end

local function drop(shape, x, y)
  local origin, dir = g.screen_ray(x, y)
  local hit = world:raycast(origin, dir, 300)
  if not hit then return end
  local at = hit.position + hit.normal * 3
  if shape == "box" then
    world:spawn{shape = "box", size = 1, position = at, rotation = quarry.quat.from_euler(0.3, 0.5, 0.1)}
  else
    world:spawn{shape = "sphere", radius = 0.5, position = at, material = "metal"}
  end
end

function quarry.keypressed(k)
  local mx, my = quarry.mouse.position()
  if k == "b" then
    drop("box", mx, my)
  elseif k == "n" then
    drop("ball", mx, my)
  elseif k == "space" then
    local origin, dir = g.screen_ray(mx, my)
    world:spawn{shape = "sphere", radius = 0.4, material = "metal", position = origin + dir * 2, velocity = dir * 40}
  elseif k == "x" then
    local origin, dir = g.screen_ray(mx, my)
    local hit = world:raycast(origin, dir, 300, {terrain = false})
    if hit then hit.body:destroy() end
  elseif k == "f12" then
    shots = shots + 1
    local name = string.format("bodies-%d.png", shots)
    local ok, err = g.screenshot(name)
    print(ok and ("saved " .. name) or err)
  end
end

function quarry.draw()
  g.draw_world(world, {water = true})
  for _, b in ipairs(world:bodies()) do
    local c = b.sleeping and {0.45, 0.45, 0.45} or COLOURS[b.material] or {1, 1, 1}
    local m = b:mesh()
    local v, idx = m:vertices(), m:indices()
    for k = 1, #idx, 3 do
      g.line(v[idx[k]], v[idx[k + 1]], c)
      g.line(v[idx[k + 1]], v[idx[k + 2]], c)
      g.line(v[idx[k + 2]], v[idx[k]], c)
    end
  end
  local s = world:stats()
  g.text(string.format("%d bodies, %d awake | %d pairs, %d contacts | %.2f ms solver | %d contact events",
                       s.bodies, s.awake, s.pairs, s.contacts, s.ms_solver, contacts), 10, 10)
  g.text("B box, N ball at the cursor | Space throw | X destroy | F12 screenshot | Esc quit", 10, 34,
         {color = {0.9, 0.95, 1, 0.85}, scale = 1.5})
  hud.draw(world) -- the frame profile (scripts/hud.lua), bottom left
end

function quarry.quit()
  local s = world:stats()
  print(string.format("bodies: %d frames, %d bodies (%d awake), %d contact events, stone landed %d times, hash %s",
                      frames, s.bodies, s.awake, contacts, landings, world:hash()))
  print("bodies: " .. hud.line(world))
end
