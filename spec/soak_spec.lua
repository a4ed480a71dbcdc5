-- A short soak (scripts/soak.lua) in CI: random edits, raycasts, overlaps,
-- mesh queries, steps, body spawns, impulses, shatters, detaches, destroys
-- from contact handlers and save/loads on twin worlds in lockstep. Fails on
-- a raised error, a NaN, twin worlds or answers that differ, a body that
-- world:bodies() lists but is invalid or was never announced to Lua, a body
-- count other than world:stats().bodies, a loaded world that differs from
-- the saved one, or memory that keeps growing. Engine bugs listed in the
-- soak's KNOWN table are counted, not failed (reproductions in
-- spec/regress/open/). The long run is `make soak` (10 minutes).
local host = require "support.host"

describe("soak", function()
  it("runs random terrain and body actions on twin worlds with equal hashes, no NaN, flat memory", function()
    local build = os.getenv("QUARRY_BUILD") or "build"
    local seconds = os.getenv("QUARRY_SANITIZE") == "1" and 15 or 25
    local out = os.tmpname()
    local _, _, code = os.execute(string.format("QUARRY_BUILD=%s timeout 300 lua5.4 scripts/soak.lua --seconds %d --quiet >%s 2>&1",
                                                host.shell_quote(build), seconds, out))
    local text = host.read_file(out) or ""
    os.remove(out)
    assert.are.equal(0, code, text)
    assert.matches("soak: OK, %d+ ticks", text)
    -- the body actions ran and bodies were there to act on
    local spawns = tonumber(text:match("spawn (%d+)"))
    local shatters = tonumber(text:match("shatter (%d+)"))
    local mean = tonumber(text:match("bodies mean (%d+)"))
    assert.is_true(spawns and spawns > 0 and shatters and shatters > 0, text)
    assert.is_true(mean and mean >= 10, text)
    print("# " .. text:gsub("\n$", ""):gsub("\n", "\n# "))
  end)
end)
