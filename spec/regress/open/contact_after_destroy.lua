-- OPEN (found by scripts/soak.lua, 2026-11-26): a world saved after a body
-- in contact was destroyed does not load: "is corrupt: bad contact record".
-- The contact cache (q_bodies constraints) still holds the pair with the
-- destroyed body; bodies_io.c writes it and read_constraint refuses it
-- (c.b / c.a not alive). Shatter destroys its body the same way.
--   lua5.4 spec/regress/open/contact_after_destroy.lua   -> prints "loaded" once fixed
package.cpath = (os.getenv("QUARRY_BUILD") or "build") .. "/?.so;" .. package.cpath
local quarry = require "quarry"
local w = quarry.world.new{}
w.terrain:fill_block({0, -1, 0}, {20, 2, 20}, "rock")
local a = w:spawn{shape = "box", size = 1, position = {0, 0.5, 0}}
local b = w:spawn{shape = "box", size = 1, position = {0, 1.5, 0}}
for _ = 1, 10 do w:step(1 / 60) end
b:destroy()
local path = os.tmpname()
assert(w:save(path))
local l, err = quarry.world.load(path)
print(l and "loaded" or ("load failed: " .. err))
