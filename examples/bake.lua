-- Baked terrain lighting: sun shadows and ambient occlusion computed per
-- vertex with rays (grid-sort raycasts along the sun direction), on hills
-- with an arch, a pillar and a rock ledge.
--
--   build/quarry examples/bake.lua                       (a window; Escape quits)
--   build/quarry --headless --frames 5 examples/bake.lua
--
-- Controls: B baking on/off, R remove or restore the arch's roof (the ground
-- below is relit), left click dig at the cursor, right click add rock,
-- 1 / 2 / 3 camera views, F12 screenshot (bake-N.png).
--
-- The sun comes from -x, +y, -z, so shadows fall towards +x and +z. Baking
-- runs when chunks are meshed, on the mesher threads: the whole world once
-- when it is switched on, then the chunks an edit reaches. stats() shows
-- what the last bake cost.

local quarry = require "quarry"
local g = quarry.graphics

local SKY = {0.53, 0.72, 0.92}
local VIEWS = {
  {position = {62, 40, 62}, target = {30, 14, 28}, fov = math.rad(55)},  -- down-sun: the shadows
  {position = {32, 36, -10}, target = {32, 15, 30}, fov = math.rad(60)}, -- from the sun's side
  {position = {10, 30, 60}, target = {34, 15, 26}, fov = math.rad(60)},  -- under the arch
}
local ROOF = {center = {33, 23.5, 32}, size = {20, 3, 12}}

-- Ground height under (x, z): the first terrain hit of a ray from above.
local function ground(x, z)
  local hit = world:raycast({x, 80, z}, {0, -1, 0}, 100, {bodies = false})
  return hit and hit.position.y or 0
end

function quarry.load()
  world = quarry.world.new{}
  local T = world.terrain
  T:generate{kind = "hills", size = {64, 32, 64}, seed = 1}
  -- An arch: two legs and a roof.
  T:fill_block({25, 17, 32}, {3, 14, 10}, "rock")
  T:fill_block({41, 17, 32}, {3, 14, 10}, "rock")
  T:fill_block(ROOF.center, ROOF.size, "brick")
  -- A pillar, and a ledge of rock sticking out of a low wall.
  local y = ground(16, 20)
  T:fill_cylinder({16, y + 6, 20}, 1.8, 16, "concrete")
  y = ground(48, 14)
  T:fill_block({48, y + 3, 12}, {10, 8, 2}, "rock")
  T:fill_block({48, y + 6, 15}, {10, 1.5, 6}, "rock")

  g.set_clear_color(SKY)
  view, bake, roof = 1, true, true
  shots, status = 0, ""
  g.set_camera(VIEWS[view])
  print("bake: hills 64x32x64 with an arch, a pillar and a ledge; B toggles baking")
end

function quarry.draw()
  local ok, err = g.draw_world(world, {bake = bake})
  if not ok then status = err end
  local s = g.stats()
  if s.baked > 0 then
    last = string.format("last bake: %d chunks, %d vertices, %.1f ms (%.2f ms a chunk)",
                         s.baked, s.baked_vertices, s.bake_ms, s.bake_ms / s.baked)
  end
  g.text(string.format("%d fps | bake %s | %d chunks  %d triangles%s", quarry.timer.fps(),
                       bake and "on" or "off", s.chunks, s.triangles, status ~= "" and " | " .. status or ""),
         10, 10)
  if last then g.text(last, 10, 32, {scale = 1.5}) end
  g.text("B bake on/off, R roof, left click dig, right click add, 1-3 view, F12 screenshot, Esc quit",
         10, 52, {color = {0.9, 0.95, 1, 0.85}, scale = 1.5})
end

function quarry.mousepressed(x, y, button)
  if button ~= 1 and button ~= 2 then return end
  local origin, dir = g.screen_ray(x, y)
  local hit = world:raycast(origin, dir, 200)
  if not hit then return end
  if button == 1 then
    world.terrain:carve_ball(hit.position, 3)
    status = "dug"
  else
    world.terrain:fill_ball(hit.position + hit.normal * 1.5, 3, "rock")
    status = "added rock"
  end
end

function quarry.keypressed(k)
  if k == "b" then
    bake = not bake
    status = bake and "baking the world" or "baking off"
  elseif k == "r" then
    roof = not roof
    world.terrain:fill_block(ROOF.center, ROOF.size, roof and "brick" or "air")
    status = roof and "roof restored" or "roof removed"
  elseif VIEWS[tonumber(k) or 0] then
    view = tonumber(k)
    g.set_camera(VIEWS[view])
  elseif k == "f12" then
    shots = shots + 1
    local name = string.format("bake-%d.png", shots)
    local ok, err = g.screenshot(name)
    status = ok and ("saved " .. name) or err
  end
end
