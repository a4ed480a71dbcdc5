-- Quarry sandbox: fly over a generated world of hills, caves and lakes,
-- sculpt it with brushes, undo and redo, drop and shatter bodies, save and
-- load the world, and look at it through the renderer's debug views.
--
--   build/quarry examples/sandbox.lua            (a window; Escape quits)
--   build/quarry --headless --frames 120 examples/sandbox.lua
--
-- Controls (H or F1 shows them on screen):
--   W A S D       fly forward, left, back, right (where the camera looks)
--   Space / C     up / down;  hold left Shift to go four times faster
--   Tab           capture the mouse: moving it looks around, clicks act at
--                 the crosshair. Without capture, drag with the middle button
--                 (or hold Q / E / R / F) to look, clicks act under the cursor
--   Left click    use the brush in the current mode
--   Right click   the other of add / carve; in paint mode or with the paint
--                 brush it picks the material under the cursor; with the
--                 smooth brush it smooths at full strength
--   G             next brush: ball, block, cylinder, smooth, paint
--   M             next mode: add, carve, paint (for ball, block, cylinder)
--   Wheel, [ ]    brush size (1..16 voxels)
--   1..9, 0       material;  , / .  previous / next material
--   Ctrl+Z        undo the last terrain edit; Ctrl+Y (or Ctrl+Shift+Z) redo
--   B / N         drop a box / a ball of the material at the cursor (it
--                 appears a little above the surface there); X removes them
--   K             shatter the body under the cursor
--   F5 / F9       save the world to sandbox.world / load it back
--   F2 wireframe  F3 contact points  F4 chunk boxes  F6 LOD levels
--   F7 world stats (physics, broadphase, kD trees, journal)
--   F8 broadphase probe: the cells near the cursor the bit broadphase
--      reports as touching terrain
--   F10 broadphase bits  F11 kD trees (terrain physics within 24 voxels)
--   F12 screenshot (sandbox-N.png)   Esc quit
--
-- The world detaches what is cut loose: a lump whose last support is dug
-- away falls as a body (world.new{auto_detach = true}). Undo gives back the
-- voxels of an edit; a lump that fell stays a body.
--
-- Edit and save this file while it runs: the host reloads it in place. State
-- lives in globals created in quarry.load, which a reload does not call
-- again, so the world and the camera survive; the callbacks below are
-- replaced.

local quarry = require "quarry"
local g = quarry.graphics

local SKY = {0.53, 0.72, 0.92}
local MATERIALS = {"rock", "dirt", "grass", "sand", "snow", "ice", "glass", "wood", "brick", "metal", "concrete"}
local BRUSHES = {"ball", "block", "cylinder", "smooth", "paint"}
local MODES = {"add", "carve", "paint"}
local SIZE = {192, 64, 192}
local SPEED = 20          -- m/s; Shift x4
local LOOK = 0.004        -- radians per mouse unit
local KEY_LOOK = 1.5      -- radians per second with Q/E/R/F
local REACH = 200         -- metres a click reaches
local DROP_HEIGHT = 2     -- metres above the surface under the cursor
local MAX_BRUSH = 16
-- Where F5 saves and F9 loads; a driver script may set sandbox_save_path first.
local function save_path() return rawget(_G, "sandbox_save_path") or "sandbox.world" end

local HELP = {
  "Move   W A S D fly, Space / C up / down, hold Shift: faster",
  "Look   Tab captures the mouse; or drag with the middle button, or Q E R F",
  "Edit   left click: brush in the current mode; right click: add <-> carve, pick a material",
  "       (paint mode or paint brush), smooth harder (smooth brush)",
  "       G brush (ball, block, cylinder, smooth, paint)   M mode (add, carve, paint)",
  "       wheel or [ ] brush size   1-9, 0 material   , / . previous / next material",
  "       Ctrl+Z undo   Ctrl+Y or Ctrl+Shift+Z redo",
  "Bodies B drop a box, N drop a ball, K shatter the body under the cursor, X remove all",
  "World  F5 save to sandbox.world, F9 load it",
  "Views  F2 wireframe, F3 contacts, F4 chunk boxes, F6 LOD levels, F7 world stats,",
  "       F8 broadphase probe (cells near the cursor the bit broadphase reports)",
  "       F10 broadphase bits, F11 kD trees (terrain physics within 24 voxels, in view)",
  "       H or F1 this help, F12 screenshot, Esc quit",
}

-- Globals that a reload keeps; new ones get their defaults here.
local function defaults()
  brush = brush or 3                 -- size in voxels
  material = material or 1
  brush_kind = brush_kind or 1
  mode = mode or 2                   -- carve: left click digs
  looking = looking or false         -- middle button held
  shots, frames, drops = shots or 0, frames or 0, drops or 0
  status = status or ""              -- last action, shown in the HUD
  show_help = show_help or false
  show_stats = show_stats or false
  probe = probe or false             -- F8: the broadphase probe around the cursor
  lod_view = lod_view or false
  held = held or {}                  -- modifier keys seen down (keypressed / keyreleased)
end

local function new_world()
  local w = quarry.world.new{auto_detach = true}
  w.terrain:generate{kind = "caves", size = SIZE, seed = 1, water_level = 41}
  -- The cave generator leaves a few one-voxel specks floating; remove them
  -- so that auto_detach does not turn them into pebbles at the start.
  w.terrain:remove_islands()
  w.terrain:journal{steps = 200}
  return w
end

function quarry.load(args)
  world = new_world()
  g.set_clear_color(SKY)
  -- Start outside one corner, looking across the world at its centre.
  camera = {position = quarry.vec3(-6, 62, -6), yaw = math.rad(45), pitch = math.rad(-12)}
  defaults()
  local s = world:stats()
  print(string.format("sandbox: caves %dx%dx%d, %d chunks, %.1f MiB, hash %s",
                      SIZE[1], SIZE[2], SIZE[3], s.chunks, s.memory / (1024 * 1024), world:hash()))
end
if rawget(_G, "world") then defaults() end -- a reload of a running sandbox

local function forward()
  local cp = math.cos(camera.pitch)
  return quarry.vec3(cp * math.cos(camera.yaw), math.sin(camera.pitch), cp * math.sin(camera.yaw))
end

local function look(dyaw, dpitch)
  camera.yaw = camera.yaw + dyaw
  camera.pitch = math.max(-1.55, math.min(1.55, camera.pitch + dpitch))
end

local function key(name) return quarry.keyboard.is_down(name) end
local function ctrl() return held["left ctrl"] or held["right ctrl"] or key("left ctrl") or key("right ctrl") end
local function shift() return held["left shift"] or held["right shift"] or key("left shift") or key("right shift") end

-- Window point that clicks act at: the crosshair when the mouse is captured.
local function aim_point(x, y)
  if quarry.mouse.is_captured() then
    local w, h = g.size()
    return w / 2, h / 2
  end
  return x, y
end

-- What is under window point (x, y): world:raycast against the same
-- triangles that are drawn (terrain only unless bodies is true). Returns the
-- hit, or nil (with a status message) within REACH.
local function pick(x, y, bodies)
  local origin, dir = g.screen_ray(aim_point(x, y))
  local hit = world:raycast(origin, dir, REACH, {bodies = bodies or false})
  if not hit then status = "nothing within " .. REACH .. " m" end
  return hit
end

-- Paints material m into the voxels of a block (edge 2r) or an upright
-- cylinder (radius r, height 2r) centred at c whose centres lie inside the
-- shape and that are not air or water: paint_ball's rule (a voxel at least
-- half covered keeps its shape and takes the material) for other shapes,
-- through read and write, so it is one step of the undo journal.
local function paint_shape(c, r, m, cylinder)
  local lo = {math.floor(c.x - r), math.floor(c.y - r), math.floor(c.z - r)}
  local hi = {math.ceil(c.x + r), math.ceil(c.y + r), math.ceil(c.z + r)}
  local d = world.terrain:read(lo, hi)
  local nx, ny = d.size[1], d.size[2]
  local i = 0
  for z = 0, d.size[3] - 1 do
    for y = 0, ny - 1 do
      for x = 0, nx - 1 do
        i = i + 1
        local px, py, pz = lo[1] + x + 0.5 - c.x, lo[2] + y + 0.5 - c.y, lo[3] + z + 0.5 - c.z
        local inside = math.abs(py) <= r and
                       (cylinder and px * px + pz * pz <= r * r or (math.abs(px) <= r and math.abs(pz) <= r))
        local old = d.materials[i]
        if inside and old ~= "air" and old ~= "water" then d.materials[i] = m end
      end
    end
  end
  world.terrain:write(lo, d)
end

-- Uses the brush at the terrain under (x, y); alt is the right button.
local function apply_brush(x, y, alt)
  local hit = pick(x, y)
  if not hit then return end
  local T, r, m = world.terrain, brush, MATERIALS[material]
  local kind = BRUSHES[brush_kind]
  local act = MODES[mode]
  if kind == "smooth" then act = "smooth" elseif kind == "paint" then act = "paint" end
  if alt then
    if act == "add" then act = "carve" elseif act == "carve" then act = "add" end
    if act == "paint" then
      for i, name in ipairs(MATERIALS) do
        if name == hit.material then material = i end
      end
      status = "picked " .. tostring(hit.material)
      return
    end
  end
  -- Adding centres the shape half its size out of the surface, so it grows
  -- the surface instead of filling the hole a carve left.
  local at = act == "add" and hit.position + hit.normal * (r * 0.5) or hit.position
  local fill = act == "carve" and "air" or m
  local ok, err = pcall(function()
    if act == "smooth" then
      T:smooth_ball(at, r, alt and 1 or 0.5)
    elseif kind == "ball" or kind == "paint" then
      if act == "paint" then T:paint_ball(at, r, m) else T:fill_ball(at, r, fill) end
    elseif act == "paint" then
      paint_shape(at, r, m, kind == "cylinder")
    elseif kind == "block" then
      T:fill_block(at, 2 * r, fill)
    else
      T:fill_cylinder(at, r, 2 * r, fill)
    end
  end)
  if not ok then
    status = tostring(err)
  elseif act == "smooth" or act == "carve" then
    status = string.format("%s %s r=%d", act == "smooth" and "smoothed" or "carved", kind, r)
  else
    status = string.format("%s %s %s r=%d", act == "add" and "added" or "painted", m, kind, r)
  end
end

-- Drops a box or a ball of the current material a little above the terrain
-- under the cursor (or the crosshair), turned a bit differently each time so
-- that boxes tumble. Brittle materials (glass, ice, brick) may shatter.
local function drop(shape)
  local x, y = quarry.mouse.position()
  local hit = pick(x, y, true) -- on top of a body there, if any
  if not hit then return end
  drops = drops + 1
  local a = drops * 0.7
  local def = {shape = shape, material = MATERIALS[material],
               position = hit.position + hit.normal * 1.0 + quarry.vec3(0, DROP_HEIGHT, 0),
               rotation = {math.cos(a / 2), 0.3 * math.sin(a / 2), math.sin(a / 2), 0}}
  if shape == "box" then def.size = {1.5, 1, 1} else def.radius = 0.6 end
  local ok, err = pcall(world.spawn, world, def)
  status = ok and ("dropped a " .. MATERIALS[material] .. " " .. shape) or tostring(err)
end

-- Shatters the body under the cursor at the point the ray meets it.
local function shatter()
  local origin, dir = g.screen_ray(aim_point(quarry.mouse.position()))
  local hit = world:raycast(origin, dir, REACH, {bodies = true})
  if not (hit and hit.body) then
    status = "no body under the cursor"
    return
  end
  local name = hit.body.material
  local ok, pieces = pcall(hit.body.shatter, hit.body, {at = hit.position})
  status = ok and string.format("shattered a %s body into %d pieces", name, #pieces) or tostring(pieces)
end

local function undo_redo(redo)
  local T = world.terrain
  local ok, done = pcall(redo and T.redo or T.undo, T)
  if not ok then
    status = tostring(done)
  else
    local info = T:journal()
    status = string.format("%s (%d to undo, %d to redo)", done and (redo and "redone" or "undone")
                           or (redo and "nothing to redo" or "nothing to undo"), info.undo, info.redo)
  end
end

local function save_world()
  local ok, err = world:save(save_path())
  status = ok and ("saved " .. save_path()) or ("save failed: " .. tostring(err))
end

local function load_world()
  local w, err = quarry.world.load(save_path())
  if not w then
    status = "load failed: " .. tostring(err)
    return
  end
  world:destroy()
  world = w
  world.terrain:journal{steps = 200}
  local s = world:stats()
  status = string.format("loaded %s: %d chunks, %d bodies", save_path(), s.chunks, s.bodies)
end

function quarry.update(dt)
  world:step(dt)
  frames = frames + 1
  -- Modifiers seen through keypressed count until the next frame only (a
  -- release the window missed cannot stick); held keys are read with is_down.
  held = {}

  local f = forward()
  local right = quarry.vec3(-math.sin(camera.yaw), 0, math.cos(camera.yaw))
  local up = quarry.vec3(0, 1, 0)
  local move = quarry.vec3(0, 0, 0)
  if not ctrl() then -- Ctrl+S, Ctrl+D... are not moves
    if key("w") then move = move + f end
    if key("s") then move = move - f end
    if key("d") then move = move + right end
    if key("a") then move = move - right end
    if key("space") then move = move + up end
    if key("c") then move = move - up end
  end
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
  if lod_view then world:set_viewer(camera.position) end
end

local function cross(p, r, color)
  g.line(p - quarry.vec3(r, 0, 0), p + quarry.vec3(r, 0, 0), color)
  g.line(p - quarry.vec3(0, r, 0), p + quarry.vec3(0, r, 0), color)
  g.line(p - quarry.vec3(0, 0, r), p + quarry.vec3(0, 0, r), color)
end

local function text(s, row, color)
  g.text(s, 10, 10 + 22 * row, {color = color, scale = 1.5})
end

-- The broadphase probe (F8): the voxel cells within PROBE of the terrain
-- point under the cursor that the bit broadphase reports as touching terrain
-- (world:overlap_box with exact = false, which grows the cell by a voxel):
-- a band a few voxels thick round the surface, the conservative answer the
-- physics narrows down with the cached meshes and kD trees. Returns the
-- cells as a list of centres, drawn as small crosses.
local PROBE = 4
local function probe_cells(p)
  local cells = {}
  local bx, by, bz = math.floor(p.x), math.floor(p.y), math.floor(p.z)
  local half = {0.45, 0.45, 0.45}
  for z = bz - PROBE, bz + PROBE do
    for y = by - PROBE, by + PROBE do
      for x = bx - PROBE, bx + PROBE do
        local c = quarry.vec3(x + 0.5, y + 0.5, z + 0.5)
        local _, touches = world:overlap_box(c, half, {exact = false, bodies = false})
        if touches then cells[#cells + 1] = c end
      end
    end
  end
  return cells
end

-- "ms_x 0.12" for every timing world:stats() reports, sorted by name.
local function timings(ws)
  local names = {}
  for k, v in pairs(ws) do
    if type(k) == "string" and k:match("^ms_") and type(v) == "number" then names[#names + 1] = k end
  end
  table.sort(names)
  local parts = {}
  for _, k in ipairs(names) do parts[#parts + 1] = string.format("%s %.2f", k:sub(4), ws[k]) end
  return table.concat(parts, "  ")
end

function quarry.draw()
  local ok, err = g.draw_world(world)
  if not ok then status = err end

  local mx, my = quarry.mouse.position()
  local origin, dir = g.screen_ray(aim_point(mx, my))
  local hit = world:raycast(origin, dir, REACH, {bodies = false})
  if hit then cross(hit.position, brush, {1, 0.9, 0.2}) end
  if probe and hit then
    probed = probe_cells(hit.position)
    for _, c in ipairs(probed) do cross(c, 0.15, {0.2, 0.4, 1}) end
  end
  if quarry.mouse.is_captured() then
    local w, h = g.size()
    g.text("+", w / 2 - 5, h / 2 - 9)
  end

  local s = g.stats()
  local fps = quarry.timer.fps()
  local ws = world:stats()
  local kind = BRUSHES[brush_kind]
  local action = (kind == "smooth" or kind == "paint") and kind or MODES[mode]
  text(string.format("%d fps  %.1f ms | %d chunks  %d triangles  %d draw calls | %d bodies (%d awake) | " ..
                     "%s %s %d  %s",
                     fps, fps > 0 and 1000 / fps or 0, s.chunks, s.triangles, s.draw_calls, ws.bodies, ws.awake,
                     kind, action, brush, MATERIALS[material]), 0)
  local row = 1
  if show_stats then
    local j = world.terrain:journal()
    text(string.format("world %.1f MiB, %d voxel chunks (%d dense) | broadphase %d chunks %.0f KiB | " ..
                       "kD trees %d nodes in %d cached chunks, %d triangles",
                       ws.memory / 1048576, ws.chunks, ws.dense_chunks, ws.broadphase_chunks,
                       ws.broadphase_bytes / 1024, ws.kd_nodes, ws.cached_chunks, ws.triangles), row)
    text(string.format("step: %d pairs, %d manifolds, %d contacts | journal: %d undo, %d redo, %.0f KiB",
                       ws.pairs, ws.manifolds, ws.contacts, j.undo, j.redo, j.bytes / 1024), row + 1)
    text("ms: " .. timings(ws), row + 2)
    row = row + 3
  end
  if show_help then
    for _, line in ipairs(HELP) do
      text(line, row, {0.9, 0.95, 1, 0.9})
      row = row + 1
    end
  else
    text("H or F1: keys", row, {0.9, 0.95, 1, 0.7})
    row = row + 1
  end
  if status ~= "" then text(status, row, {1, 0.9, 0.4}) end
end

function quarry.mousepressed(x, y, button)
  if button == 3 then looking = true return end
  if button == 1 or button == 2 then apply_brush(x, y, button == 2) end
end

function quarry.mousereleased(x, y, button)
  if button == 3 then looking = false end
end

function quarry.mousemoved(x, y, dx, dy)
  if looking or quarry.mouse.is_captured() then look(dx * LOOK, -dy * LOOK) end
end

local function resize(d) brush = math.max(1, math.min(MAX_BRUSH, brush + d)) end

function quarry.wheelmoved(dx, dy)
  if dy > 0 then resize(1) elseif dy < 0 then resize(-1) end
end

local function toggle(flag, label)
  local d = g.debug()
  g.debug{[flag] = not d[flag]}
  status = label .. (d[flag] and " off" or " on")
end

function quarry.keyreleased(k)
  held[k] = nil
end

function quarry.keypressed(k)
  held[k] = true
  local n = tonumber(k)
  if ctrl() and (k == "z" or k == "y") then
    undo_redo(k == "y" or shift())
  elseif n and MATERIALS[n == 0 and 10 or n] then
    material = n == 0 and 10 or n
  elseif k == "," or k == "." then
    material = (material - 1 + (k == "." and 1 or -1)) % #MATERIALS + 1
  elseif k == "[" or k == "]" then
    resize(k == "]" and 1 or -1)
  elseif k == "g" then
    brush_kind = brush_kind % #BRUSHES + 1
    status = "brush " .. BRUSHES[brush_kind]
  elseif k == "m" then
    mode = mode % #MODES + 1
    status = "mode " .. MODES[mode]
  elseif k == "tab" then
    quarry.mouse.set_captured(not quarry.mouse.is_captured())
  elseif k == "b" or k == "n" then
    drop(k == "b" and "box" or "sphere")
  elseif k == "k" then
    shatter()
  elseif k == "x" then
    local bodies = world:bodies()
    for _, b in ipairs(bodies) do b:destroy() end
    status = "removed " .. #bodies .. " bodies"
  elseif k == "h" or k == "f1" then
    show_help = not show_help
  elseif k == "f2" then
    toggle("wireframe", "wireframe")
  elseif k == "f3" then
    toggle("contacts", "contact points")
  elseif k == "f4" then
    toggle("chunks", "chunk boxes")
  elseif k == "f6" then
    -- The LOD mesh is drawn once the world has a viewer, and stays in use
    -- after this (levels no longer coloured); the viewer follows the camera.
    lod_view = true
    world:set_viewer(camera.position)
    toggle("lod", "LOD levels")
  elseif k == "f7" then
    show_stats = not show_stats
  elseif k == "f8" then
    probe = not probe
    status = "broadphase probe " .. (probe and "on" or "off")
  elseif k == "f10" then
    toggle("broadphase", "broadphase bits")
  elseif k == "f11" then
    toggle("kdtree", "kD trees")
  elseif k == "f5" then
    save_world()
  elseif k == "f9" then
    load_world()
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
