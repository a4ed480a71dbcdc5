-- Miner: dig ore out of a quarry face. Ore is a material of our own, in
-- veins through the ground and the cliff; every voxel of it you dig out
-- counts. Rock ledges hang from the cliff on seams of ore: dig a seam out and
-- the ledge comes loose and falls. A falling rock that hits you costs a life.
--
--   build/quarry examples/miner.lua                        (a window; Escape quits)
--   build/quarry --headless --frames 900 examples/miner.lua
--
-- Keys: left click dig at the cursor, W / S walk, A / D step sideways,
-- Q / E turn, F12 screenshot (miner-N.png).
--
-- Until you press a key or click, the game plays itself: an autopilot walks
-- to the nearest veins, digs them, then digs out a ledge's seam while
-- standing under it (and pays for it). That is what a headless run shows and
-- what spec/games_spec.lua checks. It digs through the same function as a
-- mouse click, so the game logic it tests is the one you play.
--
-- Things worth copying: quarry.material.define for a game material;
-- Terrain:read before and after an edit to see what the edit removed;
-- world.new{auto_detach = true} and world:on("detach") for terrain that
-- falls once nothing holds it up; a static body as the player, moved by
-- setting its position, with on_contact telling when something hits it.

local quarry = require "quarry"
local g = quarry.graphics
local V = quarry.vec3

-- Our material: heavy, orange, not brittle (a hot reload defines it again:
-- the same name keeps its id and takes the new values).
quarry.material.define{name = "ore", density = 3500, friction = 0.7, restitution = 0.1,
                       color = {0.9, 0.55, 0.15}, strength = 1e9}

local GROUND = 16           -- height of the generated flat ground (half the world's height)
local DIG_RADIUS = 1.6      -- metres carved per dig
local REACH = 8             -- how far the miner can dig (metres from the eye)
local DIG_TIME = 0.25       -- seconds between digs
local WALK = 4              -- m/s
local TURN = 2              -- rad/s
local LIVES = 3
local SAFE_TIME = 2         -- seconds without harm after a hit
local ORE_GOAL = 200        -- voxels of ore to win
local UP = V(0, 1, 0)
local EYE = V(0, 0.7, 0)    -- eye above the capsule's centre

-- Ledges on the cliff face: rock blocks held to the cliff only by a seam of
-- ore (voxel boxes: min inclusive, max exclusive).
local CLIFF = {min = {0, GROUND, 46}, max = {64, GROUND + 14, 64}}
local LEDGES = {}
for i, x in ipairs{8, 28, 48} do
  LEDGES[i] = {rock = {{x, GROUND + 6, 40}, {x + 6, GROUND + 9, 45}},
               seam = {{x, GROUND + 6, 45}, {x + 6, GROUND + 9, 47}}}
end

local function build(T)
  T:generate{kind = "flat", size = {64, 2 * GROUND, 64}, seed = 5}
  T:fill_region(CLIFF.min, CLIFF.max, "rock")
  for _, l in ipairs(LEDGES) do
    T:fill_region(l.rock[1], l.rock[2], "rock")
    T:fill_region(l.seam[1], l.seam[2], "ore")
  end
  -- Veins: balls of ore, some breaking the surface, in the ground and the cliff.
  math.randomseed(11) -- the same quarry every run
  veins = {}
  for i = 1, 24 do
    local c
    if i % 2 == 0 then
      c = V(4 + math.random() * 56, GROUND - 2.5 + math.random() * 2, 4 + math.random() * 36)
    else
      c = V(4 + math.random() * 56, GROUND + 1 + math.random() * 11, 46 + math.random() * 1.5)
    end
    local r = 1.2 + math.random() * 1.2
    T:fill_ball(c, r, "ore")
    veins[i] = c
  end
end

-- Voxels of ore (occupancy summed) in a voxel box, from Terrain:read.
local function ore_in(min, max)
  local data = world.terrain:read(min, max)
  local n = 0
  for i, m in ipairs(data.materials) do
    if m == "ore" then n = n + data.occupancy[i] end
  end
  return n
end

-- One dig along a ray: carve a ball where it meets the terrain (within
-- REACH) and count the ore that went. The same for the mouse and the
-- autopilot. Returns the ore dug out, or nil when the ray met nothing.
local function dig(origin, dir)
  local hit = world:raycast(origin, dir, REACH, {bodies = false})
  if not hit then return nil end
  local c, r = hit.position, DIG_RADIUS
  local min = {math.floor(c.x - r) - 1, math.floor(c.y - r) - 1, math.floor(c.z - r) - 1}
  local max = {math.ceil(c.x + r) + 1, math.ceil(c.y + r) + 1, math.ceil(c.z + r) + 1}
  local before = ore_in(min, max)
  world.terrain:carve_ball(c, r)
  local got = before - ore_in(min, max)
  ore = ore + got
  digs = digs + 1
  if ore >= ORE_GOAL and not won then
    won = true
    print(string.format("miner: %.1f s, %.0f ore: you win!", world:time(), ore))
  end
  return got
end

local function eye() return miner.position + EYE end

-- The autopilot's plan, a list of tasks: walk to and dig the three veins
-- nearest the start, then stand under the middle ledge and dig its seam out.
local function plan()
  local start = miner.position
  local near = {}
  for i, c in ipairs(veins) do near[i] = c end
  table.sort(near, function(a, b) return (a - start):length() < (b - start):length() end)
  local tasks = {}
  for i = 1, 3 do
    local c = near[i]
    local back = V(start.x - c.x, 0, start.z - c.z):normalized()
    tasks[#tasks + 1] = {walk = c + back * 2.5}
    tasks[#tasks + 1] = {dig = c, times = 4}
  end
  local seam = LEDGES[2].seam
  local mid = (seam[1][1] + seam[2][1]) / 2
  tasks[#tasks + 1] = {walk = V(mid, GROUND, 43)}
  for _, dx in ipairs{-2.5, 0, 2.5, -2.5, 0, 2.5, -1.2, 1.2} do
    tasks[#tasks + 1] = {dig = V(mid + dx, (seam[1][2] + seam[2][2]) / 2, 46), times = 1}
  end
  tasks[#tasks + 1] = {wait = 2} -- and looks up, too long
  tasks[#tasks + 1] = {walk = V(mid, GROUND, 30)}
  return tasks
end

function quarry.load()
  world = quarry.world.new{auto_detach = true, seed = 2}
  build(world.terrain)
  miner = world:spawn{shape = "capsule", radius = 0.4, height = 1.8, static = true, name = "miner",
                      position = {31, GROUND + 0.9, 34}}
  facing = V(0, 0, 1)       -- towards the cliff
  ore, digs, lives, detached = 0, 0, LIVES, 0
  frames, shots, cooldown, safe_until = 0, 0, 0, 0
  won, autopilot, tasks = false, true, plan()

  -- Terrain cut loose becomes rigid bodies that fall.
  world:on("detach", function(bodies)
    for _, b in ipairs(bodies) do
      detached = detached + 1
      print(string.format("miner: %.1f s, %.0f t of %s came loose", world:time(), b.mass / 1000, b.material))
    end
  end)
  -- Something hit the miner: a rock coming down costs a life (other is a
  -- Body or "terrain"; speed is how fast they met, m/s).
  miner.on_contact = function(self, other, contact)
    if other ~= "terrain" and contact.speed > 2 and world:time() >= safe_until and lives > 0 then
      lives = lives - 1
      safe_until = world:time() + SAFE_TIME
      print(string.format("miner: %.1f s, hit by a falling rock at %.1f m/s! %d lives left", world:time(),
                          contact.speed, lives))
      if lives == 0 then print("miner: game over") end
    end
  end

  g.set_clear_color({0.55, 0.7, 0.85})
  print(string.format("miner: a quarry with %d ore veins and %d ledges; dig %d ore to win", #veins, #LEDGES,
                      ORE_GOAL))
end

-- Moves the miner by (forward, side) metres, relative to where it faces, and
-- stands it on the ground below (it drops into holes dug under it). A wall
-- or a fallen rock in the way stops it: a static body goes wherever it is
-- put, so the game checks.
local function walk(forward, side)
  local right = facing:cross(UP)
  local to = miner.position + facing * forward + right * side
  if world.terrain:is_solid(to + V(0, 0.3, 0)) then return false end
  for _, b in ipairs(world:overlap_sphere(to, 0.45)) do
    if b ~= miner then return false end
  end
  local ground = world:raycast(to + V(0, 2, 0), {0, -1, 0}, 20, {bodies = false})
  if ground then miner.position = ground.position + V(0, 0.9, 0) end
  return true
end

-- One frame of the autopilot's plan, as inputs: a walk, a dig or a wait.
local function autopilot_step(dt)
  local task = tasks[1]
  if not task then return end
  if task.wait then
    task.wait = task.wait - dt
    if task.wait <= 0 then table.remove(tasks, 1) end
  elseif task.walk then
    local to = V(task.walk.x - miner.position.x, 0, task.walk.z - miner.position.z)
    if to:length() < 0.3 then
      table.remove(tasks, 1)
      return
    end
    facing = to:normalized()
    walk(math.min(WALK * dt, to:length()), 0)
  elseif cooldown <= 0 then
    local from = eye()
    facing = V(task.dig.x - from.x, 0, task.dig.z - from.z):normalized()
    dig(from, (task.dig - from):normalized())
    cooldown = DIG_TIME
    task.times = task.times - 1
    if task.times == 0 then table.remove(tasks, 1) end
  end
end

function quarry.update(dt)
  frames = frames + 1
  cooldown = cooldown - dt
  if lives > 0 then
    if autopilot then
      autopilot_step(dt)
    else
      local down = quarry.keyboard.is_down
      local turn = (down("e") and 1 or 0) - (down("q") and 1 or 0)
      local a = math.atan(facing.z, facing.x) + turn * TURN * dt
      facing = V(math.cos(a), 0, math.sin(a))
      local fwd = (down("w") and 1 or 0) - (down("s") and 1 or 0)
      local side = (down("d") and 1 or 0) - (down("a") and 1 or 0)
      if fwd ~= 0 or side ~= 0 then walk(fwd * WALK * dt, side * WALK * dt) end
    end
  end
  walk(0, 0) -- keep standing on the ground
  world:step(dt)
  -- Camera over the miner's shoulder, looking where it faces.
  local e = eye()
  g.set_camera{position = e - facing * 5 + UP * 3, target = e + facing * 4, fov = math.rad(65)}
end

function quarry.mousepressed(x, y, button)
  autopilot = false
  if button == 1 and lives > 0 and cooldown <= 0 then
    local origin, dir = g.screen_ray(x, y)
    -- The camera is behind the miner: dig along the line from the eye to
    -- the point under the cursor, so the reach counts from the miner.
    local hit = world:raycast(origin, dir, 100, {ignore = {miner}})
    if hit then
      dig(eye(), (hit.position - eye()):normalized())
      cooldown = DIG_TIME
    end
  end
end

function quarry.keypressed(k)
  autopilot = false
  if k == "f12" then
    shots = shots + 1
    local name = string.format("miner-%d.png", shots)
    local ok, err = g.screenshot(name)
    print(ok and ("saved " .. name) or err)
  end
end

function quarry.draw()
  g.draw_world(world)
  -- Where a click would dig: a cross at the terrain under the cursor, green
  -- in reach, grey beyond.
  local origin, dir = g.screen_ray(quarry.mouse.position())
  local hit = not autopilot and world:raycast(origin, dir, 100, {ignore = {miner}})
  if hit then
    local c = (hit.position - eye()):length() <= REACH and {0.3, 1, 0.3} or {0.6, 0.6, 0.6}
    for _, d in ipairs{V(0.5, 0, 0), V(0, 0.5, 0), V(0, 0, 0.5)} do g.line(hit.position - d, hit.position + d, c) end
  end
  local state = lives == 0 and " | GAME OVER" or won and " | YOU WIN" or ""
  g.text(string.format("ore %.0f/%d | lives %d | %d rocks came loose%s", ore, ORE_GOAL, lives, detached, state), 10, 10)
  g.text((autopilot and "AUTOPILOT: press a key to take over | " or "") ..
         "Click dig | W/S walk, A/D step, Q/E turn | F12 screenshot | Esc quit", 10, 34,
         {color = {0.9, 0.95, 1, 0.85}, scale = 1.5})
end

function quarry.quit()
  print(string.format("miner: %d frames, %.0f ore in %d digs, %d rocks came loose, %d lives left%s, hash %s", frames,
                      ore, digs, detached, lives, won and ", won" or "", world:hash()))
end
