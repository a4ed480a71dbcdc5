-- OPEN (found by scripts/soak.lua, 2026-11-26): Body:apply_force and
-- Body:apply_torque accept finite values whose effect overflows (|F| of
-- 1e160 N on a 1 m rock box; 1e9 N still works); after the next step the
-- body has lost its linear (force) or angular (torque) velocity: 0 instead
-- of the 2000 m/s (rad/s) clamp, and in the soak the guard in
-- engine/physics/bodies.c logs "a body's state became non-finite; it was
-- put back at rest". apply_impulse refuses such values ("the resulting
-- velocity is too large"). Expected: an error naming the argument, or the
-- clamp.
--   lua5.4 spec/regress/open/huge_force_reset.lua   (prints "ok" once fixed)
package.cpath = (os.getenv("QUARRY_BUILD") or "build") .. "/?.so;" .. package.cpath
local quarry = require "quarry"
local bad = 0
for _, case in ipairs{{"apply_force", 1e300}, {"apply_force", 1e160}, {"apply_torque", 1e300}} do
  local w = quarry.world.new{gravity = {0, 0, 0}}
  local b = w:spawn{shape = "box", size = 1, position = {0, 3, 0}, velocity = {1, 0, 0}, angular_velocity = {0, 1, 0}}
  local accepted = pcall(b[case[1]], b, {case[2], 0, 0})
  if accepted then
    w:step(1 / 60)
    local v, av = b.velocity, b.angular_velocity
    local lost = case[1] == "apply_force" and v.x <= 1 or av:length() < 1
    print(string.format("%s(%g): velocity %s, angular %s%s", case[1], case[2], tostring(v), tostring(av),
                        lost and "  <- state lost" or ""))
    if lost then bad = bad + 1 end
  end
end
print(bad == 0 and "ok" or "state lost " .. bad .. " times")
