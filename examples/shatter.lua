-- Shattering: a glass tower hit by a heavy metal ball. Glass is brittle:
-- a contact impulse above its strength (200 N s) breaks a brick into Voronoi
-- fragments, denser near the impact; the fragments fly on as bodies.
--
--   build/quarry examples/shatter.lua                      (a window; Escape quits)
--   build/quarry --headless --frames 180 examples/shatter.lua
--
-- Keys: Space throw another ball from the camera, S shatter the body under
-- the cursor (b:shatter at the point hit, on the GPU when G is on),
-- G toggle the GPU path, R rebuild the tower, F12 screenshot (shatter-N.png).

local quarry = require "quarry"
local g = quarry.graphics

local BRICK = {0.6, 0.3, 0.3}

local function build_tower()
  for _, b in ipairs(world:bodies()) do b:destroy() end
  -- 3 x 3 columns of glass bricks, 8 layers, on a concrete slab
  for layer = 0, 7 do
    for i = 0, 2 do
      for j = 0, 2 do
        world:spawn{shape = "box", size = BRICK, material = "glass",
                    position = {20 + i * 0.62, 8.15 + layer * 0.3, 20 + j * 0.31}}
      end
    end
  end
end

local function throw(from, velocity)
  return world:spawn{shape = "sphere", radius = 0.5, material = "metal", position = from, velocity = velocity,
                     name = "ball"}
end

function quarry.load()
  world = quarry.world.new{}
  world.terrain:fill_region({0, 0, 0}, {40, 8, 40}, "concrete")
  build_tower()
  frames, breaks, pieces, shots, use_gpu = 0, 0, 0, 0, false
  world:on("shatter", function(body, fragments)
    breaks = breaks + 1
    pieces = pieces + #fragments
  end)
  g.set_clear_color({0.55, 0.7, 0.9})
  g.set_camera{position = {12, 12, 12}, target = {20.6, 9.5, 20.3}, fov = math.rad(55)}
end

function quarry.update(dt)
  frames = frames + 1
  if frames == 19 then print("before the ball: " .. breaks .. " broke") end
  if frames == 20 then throw({12, 9.2, 20.3}, {18, 1, 0}) end
  world:step(dt)
end

function quarry.keypressed(k)
  local mx, my = quarry.mouse.position()
  local origin, dir = g.screen_ray(mx, my)
  if k == "space" then
    throw(origin + dir * 2, dir * 25)
  elseif k == "s" then
    local hit = world:raycast(origin, dir, 300, {terrain = false})
    if hit then
      local parts, err = hit.body:shatter{at = hit.position, pieces = 12, impulse = 50, gpu = use_gpu}
      print(parts and ("shattered into " .. #parts) or err)
    end
  elseif k == "g" then
    use_gpu = not use_gpu
  elseif k == "r" then
    build_tower()
  elseif k == "f12" then
    shots = shots + 1
    local name = string.format("shatter-%d.png", shots)
    local ok, err = g.screenshot(name)
    print(ok and ("saved " .. name) or err)
  end
end

function quarry.draw()
  g.draw_world(world)
  local s = world:stats()
  g.text(string.format("%d bodies, %d awake | %d bricks broke into %d pieces | GPU cells %s", s.bodies, s.awake,
                       breaks, pieces, use_gpu and "on" or "off"), 10, 10)
  g.text("Space throw | S shatter under the cursor | G GPU | R rebuild | F12 screenshot | Esc quit", 10, 34,
         {color = {0.9, 0.95, 1, 0.85}, scale = 1.5})
end

function quarry.quit()
  print(string.format("shatter: %d frames, %d bricks broke into %d pieces, %d bodies, hash %s", frames, breaks,
                      pieces, #world:bodies(), world:hash()))
end
