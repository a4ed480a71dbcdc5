-- Fuzzing in the test suite:
--  * the Lua API fuzzer (fuzz/api.lua) on a few fixed seeds, in a child
--    process so that a crash is reported as a failure, not a lost run; under
--    `make sanitize` the child runs the ASan/UBSan module; it fails too on
--    a NaN or infinity in a body of its world or a body count that differs
--    from world:stats().bodies;
--  * every regression input under spec/regress/ loaded through the Lua API;
--  * a short fixed libFuzzer run of both loaders (fuzz/run.sh --ci), in
--    `make test` only: the fuzzers carry their own sanitizers.

local host = require "support.host"
local shell_quote, read_file = host.shell_quote, host.read_file

local build = os.getenv("QUARRY_BUILD") or "build"
local sanitize = os.getenv("QUARRY_SANITIZE") == "1"

local function sh(cmd)
  local out = os.tmpname()
  local _, _, code = os.execute(cmd .. " >" .. out .. " 2>&1")
  local text = read_file(out) or ""
  os.remove(out)
  return code, text
end

local function list(dir)
  local p = io.popen("ls -A " .. shell_quote(dir) .. " 2>/dev/null")
  local names = {}
  for name in p:lines() do names[#names + 1] = name end
  p:close()
  return names
end

describe("Lua API fuzzer", function()
  local written = 0
  for _, seed in ipairs{1, 2, 3} do
    it("calls every function and method with random arguments, seed " .. seed, function()
      local calls = sanitize and 1500 or 3000
      local before = {}
      for _, name in ipairs(list(".")) do before[name] = true end
      local code, out = sh(string.format("QUARRY_BUILD=%s timeout 300 lua5.4 fuzz/api.lua --seed %d --calls %d",
                                         shell_quote(build), seed, calls))
      assert.are.equal(0, code, out)
      local n, functions, files = out:match("api fuzz: seed %d+, (%d+) calls %(.-%) over (%d+) functions" ..
                                            ".-, (%d+) files written in the sandbox")
      assert.is_truthy(n, out)
      assert.are.equal(calls, tonumber(n))
      assert.is_true(tonumber(functions) >= 80, out)
      -- rigid bodies get their share: spawns with fuzzed definitions, fuzzed
      -- property sets, methods, shatter and detach options, handlers that
      -- raise or destroy, on live, destroyed, shattered and foreign bodies
      local body_calls, bodies = out:match("(%d+) body calls, up to (%d+) bodies")
      assert.is_truthy(body_calls, out)
      assert.is_true(tonumber(body_calls) >= calls // 5, out)
      assert.is_true(tonumber(bodies) >= 5, out)
      written = written + tonumber(files)
      -- World:save and Mesh:save get fuzzed paths ("-1", "-inf", "0"): they
      -- land in the fuzzer's sandbox, never in the directory it runs from.
      local new = {}
      for _, name in ipairs(list(".")) do
        if not before[name] then new[#new + 1] = name end
      end
      assert.are.same({}, new)
      -- and the runs did write files (else the check above proves nothing)
      if seed == 3 then assert.is_true(written > 0, out) end
    end)
  end
end)

describe("regression inputs", function()
  package.cpath = build .. "/?.so;" .. package.cpath
  local quarry = require "quarry"

  it("world files load or are refused with a message", function()
    for _, name in ipairs(list("spec/regress/world_load")) do
      local w, err = quarry.world.load("spec/regress/world_load/" .. name)
      if w then w:destroy() else assert.is_string(err, name) end
    end
  end)

  it("mesh files load or are refused with a message, in bounded time", function()
    local exts = {"obj", "off", "stl", "ply", "gltf", "glb"}
    local names = list("spec/regress/mesh_import")
    assert.is_true(#names >= 2)
    for _, name in ipairs(names) do
      local data = read_file("spec/regress/mesh_import/" .. name)
      local path = os.tmpname() .. "." .. exts[data:byte(1) % 6 + 1]
      host.write_file(path, data:sub(2))
      -- a child process: the inputs once hung or aborted the importer
      local loader = os.tmpname()
      host.write_file(loader, "package.cpath = arg[1] .. '/?.so;' .. package.cpath " ..
                      "local m, e = require('quarry').mesh.load(arg[2]) " ..
                      "print(m and 'loaded' or ('refused: ' .. tostring(e)))")
      local code, out = sh(string.format("timeout 60 lua5.4 %s %s %s", shell_quote(loader),
                                         shell_quote(build), shell_quote(path)))
      os.remove(path)
      os.remove(loader)
      assert.are.equal(0, code, name .. ": " .. out)
      assert.matches("^[lr]e[af][ou]", out, nil, nil, name)
    end
  end)
end)

if not sanitize then
  describe("libFuzzer loaders (short fixed run)", function()
    it("world loader and mesh importer: regressions replayed, 12 s each, no crash", function()
      local code, out = sh("QUARRY_BUILD=" .. shell_quote(build) .. " sh fuzz/run.sh --ci 12")
      assert.are.equal(0, code, out)
      assert.matches("ok 1 %- world_load: %d+ executions", out)
      assert.matches("ok 2 %- mesh_import: %d+ executions", out)
      print("# " .. out:gsub("\n", "\n# "))
    end)
  end)
end
