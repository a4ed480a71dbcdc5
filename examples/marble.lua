-- Marble: roll a wooden ball through a cave course. Break through the glass
-- panes, float across the underground pool, pass the checkpoints and reach
-- the goal as fast as you can.
--
--   build/quarry examples/marble.lua                       (a window; Escape quits)
--   build/quarry --headless --frames 1500 examples/marble.lua
--
-- Keys: arrows or WASD roll the ball (forward is where the camera looks),
-- R back to the last checkpoint, F12 screenshot (marble-N.png).
--
-- Until you press a key the game plays itself: an autopilot steers along the
-- course. That is what a headless run shows, and what spec/games_spec.lua
-- checks. The autopilot gives the same kind of input as the keys (a
-- direction to push in), so the game logic it tests is the one you play.
--
-- Things worth copying: the course is carved out of a solid block along a
-- list of points; the ball is steered with forces and torques, applied at
-- every physics step (we step the world by hand for that); glass is a
-- built-in brittle material, so panes break on their own when hit hard;
-- wood floats on water; the camera follows the ball and is kept out of the
-- rock with a raycast.

local quarry = require "quarry"
local g = quarry.graphics
local V = quarry.vec3

local FLOOR = 8              -- height of the course floor (metres; one voxel = 1 m)
local STEP = 1 / 60          -- physics step (s): forces act for one step, so we step by hand
local PUSH = 10              -- acceleration (m/s^2) the keys give the ball, as a force
local SPIN = 6               -- and as a torque, so it rolls rather than slides
local MAX_SPEED = 6          -- m/s; no push beyond this
local RADIUS = 0.5           -- the ball
local UP = V(0, 1, 0)
local SHARD_LIFE = 3         -- seconds broken glass stays

-- The course: the tunnel is carved along these floor points, in order, and
-- the autopilot steers from one to the next. Checkpoints and the goal sit on
-- the path; the glass panes stand across it.
local PATH = {V(6, FLOOR, 8), V(44, FLOOR, 8), V(44, FLOOR, 30), V(104, FLOOR, 30)}
local CHECKPOINTS = {V(28, FLOOR, 8), V(44, FLOOR, 24), V(86, FLOOR, 30)}
local GOAL = V(101, FLOOR, 30)
local PANES = {{at = V(36, FLOOR, 8), size = {0.1, 3, 5.8}}, {at = V(44, FLOOR, 17), size = {5.8, 3, 0.1}}}
local POOL = {x0 = 58, x1 = 78, depth = 3} -- on the last leg: water from x0 up to a ramp that ends at x1
local HALF_WIDTH, HEIGHT = 3, 4 -- the tunnel's flat part (metres)

-- Carves the tunnel: a flat-floored box along each leg of PATH, and balls of
-- random sizes along the roof so that it looks like a cave. No ball reaches
-- below the floor, so the floor stays flat.
local function carve_course(T)
  math.randomseed(7) -- the same cave every run
  for i = 1, #PATH - 1 do
    local a, b = PATH[i], PATH[i + 1]
    local lo = V(math.min(a.x, b.x) - HALF_WIDTH, FLOOR, math.min(a.z, b.z) - HALF_WIDTH)
    local hi = V(math.max(a.x, b.x) + HALF_WIDTH, FLOOR + HEIGHT, math.max(a.z, b.z) + HALF_WIDTH)
    T:fill_region(lo, hi, "air")
    local steps = math.floor((b - a):length())
    for s = 0, steps, 2 do
      local r = 2 + math.random() * 1.5 -- at most HEIGHT - 0.5
      T:carve_ball(a:lerp(b, s / steps) + V(0, HEIGHT - 0.5, 0), r)
    end
  end
end

-- The pool on the last leg: a pit filled with water to the floor's level,
-- whose far end is a ramp up to the floor (a rotated block of rock).
local function make_pool(T)
  local z = PATH[4].z
  local bottom = FLOOR - POOL.depth
  T:fill_region({POOL.x0, bottom, z - HALF_WIDTH}, {POOL.x1, FLOOR, z + HALF_WIDTH}, "water")
  -- The ramp: a block of rock tilted up the leg, its top face running from
  -- the bottom at ramp_start to the floor at x1, and on under the floor
  -- (carve_course trims what sticks out above it).
  local ramp_start = POOL.x1 - 10
  local tilt = quarry.quat.from_axis_angle({0, 0, 1}, math.atan(POOL.depth, POOL.x1 - ramp_start))
  local slope_mid = V((ramp_start + POOL.x1) / 2, bottom + POOL.depth / 2, z)
  -- 1 m further up the slope, and half the block's 4 m under its top face: q * v turns v by q.
  T:fill_block(slope_mid + tilt * V(1, -2, 0), {14, 4, 2 * HALF_WIDTH + 2}, "rock", tilt)
end

local function spawn_panes()
  panes = {} -- set of pane bodies: a Body is the same object each time the engine hands it out
  for _, p in ipairs(PANES) do
    local pane = world:spawn{shape = "box", size = p.size, material = "glass", position = p.at + V(0, p.size[2] / 2, 0)}
    panes[pane] = p.at
  end
end

local function reset_ball(at)
  ball.position = at + V(0, RADIUS + 0.05, 0)
  ball.velocity = {0, 0, 0}
  ball.angular_velocity = {0, 0, 0}
end

function quarry.load()
  world = quarry.world.new{seed = 3}
  local T = world.terrain
  T:fill_region({0, 0, 0}, {112, 20, 40}, "rock")
  make_pool(T)
  carve_course(T) -- after the pool: carving also clears the ramp's top above the floor
  spawn_panes()
  ball = world:spawn{shape = "sphere", radius = RADIUS, material = "wood", name = "ball"}
  reset_ball(PATH[1])

  frames, accumulator, shots = 0, 0, 0
  next_checkpoint, respawn_at = 1, PATH[1]
  waypoint = 2              -- the autopilot's next PATH point
  autopilot = true          -- until a key is pressed
  finished_at = nil         -- race time at the goal
  panes_broken, floated, afloat_time = 0, false, 0
  heading = V(1, 0, 0)      -- where the camera looks (horizontal, unit length)

  -- A pane that breaks fires "shatter" (the body is gone by then, but it is
  -- still the key we stored); so do its shards when they land hard. Shards
  -- are swept away SHARD_LIFE seconds later: hundreds of them would slow the
  -- physics down for nothing.
  shards = {}               -- {body =, born = time it appeared}, oldest first
  world:on("shatter", function(body, fragments)
    local at = panes[body]
    if at then
      panes[body] = nil
      panes_broken = panes_broken + 1
      print(string.format("marble: %.1f s, a glass pane broke into %d pieces at (%.0f, %.0f, %.0f)", world:time(),
                          #fragments, at.x, at.y, at.z))
    end
    for _, f in ipairs(fragments) do shards[#shards + 1] = {body = f, born = world:time()} end
  end)

  g.set_clear_color({0.08, 0.08, 0.1})
  print(string.format("marble: course of %d legs, %d checkpoints, %d glass panes, a pool; ball %.0f kg of %s",
                      #PATH - 1, #CHECKPOINTS, #PANES, ball.mass, ball.material))
end

-- Flat (y = 0) unit vector, or nil for a zero one.
local function flat(v)
  local f = V(v.x, 0, v.z)
  local l = f:length()
  return l > 1e-6 and f / l or nil
end

-- What the player asks for: a direction to push in (world space, length
-- <= 1) from the keys, relative to the camera's heading.
local function keys_input()
  local down = quarry.keyboard.is_down
  local fwd = ((down("up") or down("w")) and 1 or 0) - ((down("down") or down("s")) and 1 or 0)
  local side = ((down("right") or down("d")) and 1 or 0) - ((down("left") or down("a")) and 1 or 0)
  local right = heading:cross(UP)
  local dir = heading * fwd + right * side
  return dir:length() > 0 and dir:normalized() or dir
end

-- The autopilot's input: head for the next waypoint, slowing for corners.
-- It asks for a velocity and pushes towards the difference (a P controller).
local function autopilot_input()
  local target = PATH[waypoint]
  local to = V(target.x - ball.position.x, 0, target.z - ball.position.z)
  if to:length() < 1.5 and waypoint < #PATH then
    waypoint = waypoint + 1
    return autopilot_input()
  end
  local speed = math.min(MAX_SPEED, 0.8 * to:length() + 1)
  local want = (flat(to) or V(0, 0, 0)) * speed
  local diff = want - V(ball.velocity.x, 0, ball.velocity.z)
  return diff:length() > 1 and diff:normalized() or diff
end

-- Pushes the ball for one physics step: a force at its centre, plus a torque
-- about the horizontal axis across the push, which is what makes a ball roll
-- (up x dir: rolling towards +x spins about -z). Faster than MAX_SPEED in the
-- push's direction, no push.
local function push(dir)
  local v = ball.velocity
  if dir:length() == 0 or V(v.x, 0, v.z):dot(dir) > MAX_SPEED then return end
  local m = ball.mass
  ball:apply_force(dir * (m * PUSH))
  ball:apply_torque(UP:cross(dir) * (m * SPIN * RADIUS))
end

-- Game rules, checked every frame: checkpoints in order, the goal, falling off.
local function rules(dt)
  local p = ball.position
  local cp = CHECKPOINTS[next_checkpoint]
  if cp and (p - cp):length() < 2.5 then
    print(string.format("marble: %.1f s, checkpoint %d", world:time(), next_checkpoint))
    respawn_at, next_checkpoint = cp, next_checkpoint + 1
  end
  -- Afloat: in water and clear of the bottom (a ray that ignores water) for
  -- a whole second; a ball that sinks is clear of it only on the way down.
  local _, _, wet = world:overlap_sphere(p, RADIUS, {bodies = false})
  local bottom = wet and world:raycast(p, {0, -1, 0}, 10, {bodies = false, water = false})
  afloat_time = bottom and p.y - RADIUS - bottom.position.y > 0.5 and afloat_time + dt or 0
  if not floated and afloat_time > 1 then
    floated = true
    print(string.format("marble: %.1f s, afloat in the pool", world:time()))
  end
  if not finished_at and next_checkpoint > #CHECKPOINTS and (p - GOAL):length() < 2.5 then
    finished_at = world:time()
    print(string.format("marble: goal! the course took %.1f s", finished_at))
  end
  if p.y < FLOOR - POOL.depth - 4 then reset_ball(respawn_at) end -- fell through somewhere
end

-- Camera: behind and above the ball, turning slowly towards where it rolls;
-- a raycast from the ball back to the camera keeps the camera in the tunnel.
local function follow(dt)
  local v = flat(ball.velocity)
  if v and V(ball.velocity.x, 0, ball.velocity.z):length() > 1 then
    heading = flat(heading:lerp(v, math.min(1, 2 * dt))) or heading
  end
  local target = ball.position + UP * 0.5
  local back = (UP * 2.2 - heading * 6)
  local hit = world:raycast(target, back:normalized(), back:length(), {bodies = false})
  local eye = hit and target + back:normalized() * math.max(0.5, hit.distance - 0.4) or target + back
  g.set_camera{position = eye, target = target + heading * 3, fov = math.rad(70)}
end

function quarry.update(dt)
  frames = frames + 1
  accumulator = accumulator + dt
  while accumulator >= STEP do
    accumulator = accumulator - STEP
    if not finished_at then push(autopilot and autopilot_input() or keys_input()) end
    world:step(STEP)
  end
  -- Sweep old shards (a shard that broke again is already gone: valid() says).
  while shards[1] and world:time() - shards[1].born > SHARD_LIFE do
    local shard = table.remove(shards, 1).body
    if shard:valid() then shard:destroy() end
  end
  rules(dt)
  follow(dt)
end

function quarry.keypressed(k)
  autopilot = false
  if k == "r" then
    reset_ball(respawn_at)
  elseif k == "f12" then
    shots = shots + 1
    local name = string.format("marble-%d.png", shots)
    local ok, err = g.screenshot(name)
    print(ok and ("saved " .. name) or err)
  end
end

function quarry.draw()
  g.draw_world(world, {water = true})
  -- Rings on the floor: checkpoints still to pass (yellow) and the goal (green).
  local function ring(c, colour)
    for i = 0, 23 do
      local a0, a1 = i / 24 * 2 * math.pi, (i + 1) / 24 * 2 * math.pi
      g.line(c + V(2 * math.cos(a0), 0.05, 2 * math.sin(a0)), c + V(2 * math.cos(a1), 0.05, 2 * math.sin(a1)), colour)
    end
  end
  for i = next_checkpoint, #CHECKPOINTS do ring(CHECKPOINTS[i], {1, 0.85, 0.2}) end
  ring(GOAL, {0.3, 1, 0.4})
  local t = finished_at or world:time()
  g.text(string.format("%.1f s | checkpoint %d/%d | %d panes broken%s", t, next_checkpoint - 1, #CHECKPOINTS,
                       panes_broken, finished_at and " | GOAL!" or ""), 10, 10)
  g.text((autopilot and "AUTOPILOT: press a key to take over | " or "") ..
         "Arrows/WASD roll | R last checkpoint | F12 screenshot | Esc quit", 10, 34,
         {color = {0.9, 0.95, 1, 0.85}, scale = 1.5})
end

function quarry.quit()
  print(string.format("marble: %d frames, %.1f s, checkpoints %d/%d, %d panes broken, %s, %s, hash %s", frames,
                      finished_at or world:time(), next_checkpoint - 1, #CHECKPOINTS, panes_broken,
                      floated and "floated" or "never floated", finished_at and "finished" or "not finished",
                      world:hash()))
end
