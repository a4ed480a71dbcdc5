-- Quarry sandbox: fly over a generated world of hills, caves and lakes, dig
-- or build with the mouse, and drop boxes and balls on it.
--
--   build/quarry examples/sandbox.lua            (a window; Escape quits)
--   build/quarry --headless --frames 120 examples/sandbox.lua
--
-- Controls (also shown on screen):
--   W A S D       fly forward, left, back, right (where the camera looks)
--   Space / C     up / down;  hold left Shift to go four times faster
--   Tab           capture the mouse: moving it looks around, clicks act at
--                 the crosshair. Without capture, drag with the middle button
--                 (or hold Q / E / R / F) to look, clicks act under the cursor
--   Left click    dig a ball of the brush size      Right click  add material
--   Wheel         brush size (1..16 voxels)          1..9         material
--   B / N         drop a box / a ball of the material at the cursor (it
--                 appears a little above the surface there); X removes them
--   F1 wireframe  F2 chunk boxes  F3 contact points  F12 screenshot
--                 (sandbox-N.png)  Esc quit
--
-- Edit and save this file while it runs: the host reloads it in place. State
-- lives in globals created in quarry.load, which a reload does not call
-- again, so the world and the camera survive; the callbacks below are
-- replaced.

local quarry = require "quarry"
local g = quarry.graphics

local SKY = {0.53, 0.72, 0.92}
local MATERIALS = {"rock", "dirt", "grass", "sand", "snow", "ice", "glass", "wood", "brick"}
local SIZE = {192, 64, 192}
local SPEED = 20          -- m/s; Shift x4
local LOOK = 0.004        -- radians per mouse unit
local KEY_LOOK = 1.5      -- radians per second with Q/E/R/F
local REACH = 200         -- metres a click reaches
local HELP = {
  "WASD fly, Space/C up/down, Shift fast | Tab capture mouse to look (or drag with middle button, Q/E/R/F)",
  "Left click dig, right click add, wheel brush size, 1-9 material | B drop box, N drop ball, X remove bodies",
  "F1 wireframe, F2 chunks, F3 contacts, F12 screenshot, Esc quit",
}
local DROP_HEIGHT = 2     -- metres above the surface under the cursor

function quarry.load(args)
  world = quarry.world.new{}
  world.terrain:generate{kind = "caves", size = SIZE, seed = 1, water_level = 41}
  g.set_clear_color(SKY)

  -- Start outside one corner, looking across the world at its centre.
  camera = {position = quarry.vec3(-6, 62, -6), yaw = math.rad(45), pitch = math.rad(-12)}
  brush, material = 3, 1
  looking = false          -- middle button held
  shots, frames, drops = 0, 0, 0
  status = ""              -- last action, shown in the HUD

  local s = world:stats()
  print(string.format("sandbox: caves %dx%dx%d, %d chunks, %.1f MiB, hash %s",
                      SIZE[1], SIZE[2], SIZE[3], s.chunks, s.memory / (1024 * 1024), world:hash()))
end

local function forward()
  local cp = math.cos(camera.pitch)
  return quarry.vec3(cp * math.cos(camera.yaw), math.sin(camera.pitch), cp * math.sin(camera.yaw))
end

local function look(dyaw, dpitch)
  camera.yaw = camera.yaw + dyaw
  camera.pitch = math.max(-1.55, math.min(1.55, camera.pitch + dpitch))
end

-- Window point that clicks act at: the crosshair when the mouse is captured.
local function aim_point(x, y)
  if quarry.mouse.is_captured() then
    local w, h = g.size()
    return w / 2, h / 2
  end
  return x, y
end

-- The terrain point under window point (x, y): world:raycast against the
-- same triangles that are drawn. Returns the hit position and a point just in
-- front of it (where building adds material), or nil within REACH.
local function pick(x, y)
  local origin, dir = g.screen_ray(x, y)
  local hit = world:raycast(origin, dir, REACH)
  if not hit then return nil end
  return hit.position, hit.position + hit.normal * (brush * 0.5), hit
end

local function key(name) return quarry.keyboard.is_down(name) end

-- Drops a box or a ball of the current material a little above the terrain
-- under the cursor (or the crosshair), turned a bit differently each time so
-- that boxes tumble. Brittle materials (glass, ice, brick) may shatter.
local function drop(shape)
  local hit, _, h = pick(aim_point(quarry.mouse.position()))
  if not hit then
    status = "nothing within " .. REACH .. " m"
    return
  end
  drops = drops + 1
  local a = drops * 0.7
  local def = {shape = shape, material = MATERIALS[material],
               position = hit + h.normal * 1.0 + quarry.vec3(0, DROP_HEIGHT, 0),
               rotation = {math.cos(a / 2), 0.3 * math.sin(a / 2), math.sin(a / 2), 0}}
  if shape == "box" then def.size = {1.5, 1, 1} else def.radius = 0.6 end
  local ok, err = pcall(world.spawn, world, def)
  status = ok and ("dropped a " .. MATERIALS[material] .. " " .. shape) or tostring(err)
end

function quarry.update(dt)
  world:step(dt)
  frames = frames + 1

  local f = forward()
  local right = quarry.vec3(-math.sin(camera.yaw), 0, math.cos(camera.yaw))
  local up = quarry.vec3(0, 1, 0)
  local move = quarry.vec3(0, 0, 0)
  if key("w") then move = move + f end
  if key("s") then move = move - f end
  if key("d") then move = move + right end
  if key("a") then move = move - right end
  if key("space") then move = move + up end
  if key("c") then move = move - up end
  if move:length() > 0 then
    local speed = SPEED * (key("left shift") and 4 or 1)
    camera.position = camera.position + move:normalized() * (speed * dt)
  end
  local turn = KEY_LOOK * dt
  if key("q") then look(-turn, 0) end
  if key("e") then look(turn, 0) end
  if key("r") then look(0, turn) end
  if key("f") then look(0, -turn) end

  g.set_camera{position = camera.position, target = camera.position + forward(), fov = math.rad(65)}
end

local function cross(p, r, color)
  g.line(p - quarry.vec3(r, 0, 0), p + quarry.vec3(r, 0, 0), color)
  g.line(p - quarry.vec3(0, r, 0), p + quarry.vec3(0, r, 0), color)
  g.line(p - quarry.vec3(0, 0, r), p + quarry.vec3(0, 0, r), color)
end

function quarry.draw()
  local ok, err = g.draw_world(world)
  if not ok then status = err end

  local mx, my = quarry.mouse.position()
  local hit = pick(aim_point(mx, my))
  if hit then cross(hit, brush, {1, 0.9, 0.2}) end
  if quarry.mouse.is_captured() then
    local w, h = g.size()
    g.text("+", w / 2 - 5, h / 2 - 9)
  end

  local s = g.stats()
  local fps = quarry.timer.fps()
  local ws = world:stats()
  g.text(string.format("%d fps  %.1f ms | %d chunks  %d triangles  %d draw calls | %d bodies (%d awake) | " ..
                       "brush %d  material %d %s",
                       fps, fps > 0 and 1000 / fps or 0, s.chunks, s.triangles, s.draw_calls, ws.bodies, ws.awake,
                       brush, material, MATERIALS[material]),
         10, 10, {scale = 1.5})
  for i, line in ipairs(HELP) do
    g.text(line, 10, 10 + 22 * i, {color = {0.9, 0.95, 1, 0.85}, scale = 1.5})
  end
  if status ~= "" then
    g.text(status, 10, 10 + 22 * (#HELP + 1), {color = {1, 0.9, 0.4}, scale = 1.5})
  end
end

function quarry.mousepressed(x, y, button)
  if button == 3 then looking = true return end
  if button ~= 1 and button ~= 2 then return end
  local hit, free = pick(aim_point(x, y))
  if not hit then
    status = "nothing within " .. REACH .. " m"
  elseif button == 1 then
    world.terrain:carve_ball(hit, brush)
    status = "dug"
  else
    world.terrain:fill_ball(free, brush, MATERIALS[material])
    status = "added " .. MATERIALS[material]
  end
end

function quarry.mousereleased(x, y, button)
  if button == 3 then looking = false end
end

function quarry.mousemoved(x, y, dx, dy)
  if looking or quarry.mouse.is_captured() then look(dx * LOOK, -dy * LOOK) end
end

function quarry.wheelmoved(dx, dy)
  if dy > 0 then brush = math.min(16, brush + 1) elseif dy < 0 then brush = math.max(1, brush - 1) end
end

function quarry.keypressed(k)
  local n = tonumber(k)
  if n and MATERIALS[n] then
    material = n
  elseif k == "tab" then
    quarry.mouse.set_captured(not quarry.mouse.is_captured())
  elseif k == "b" or k == "n" then
    drop(k == "b" and "box" or "sphere")
  elseif k == "x" then
    local bodies = world:bodies()
    for _, b in ipairs(bodies) do b:destroy() end
    status = "removed " .. #bodies .. " bodies"
  elseif k == "f1" or k == "f2" or k == "f3" then
    local d = g.debug()
    if k == "f1" then g.debug{wireframe = not d.wireframe}
    elseif k == "f2" then g.debug{chunks = not d.chunks}
    else g.debug{contacts = not d.contacts} end
  elseif k == "f12" then
    shots = shots + 1
    local name = string.format("sandbox-%d.png", shots)
    local ok, err = g.screenshot(name)
    status = ok and ("saved " .. name) or err
  end
end

function quarry.quit()
  print(string.format("sandbox: %d frames, %.2f s simulated, hash %s",
                      frames, world:time(), world:hash()))
end
