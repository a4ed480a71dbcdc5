-- docs/api.md and scripts/quarry.d.lua against the module as it is built.
--
-- The independent answer is the loaded module itself: its table is walked
-- (functions, callable tables, values) and so are the registry's "quarry.*"
-- metatables, whose methods live in `methods` (classes with their own
-- __index) or in the __index table (ql_new_class, bindings/common.c). The
-- host-only modules (quarry.graphics, keyboard, mouse, timer) are listed by
-- running build/quarry headless on a script that writes them out. Body
-- properties are resolved by the Body's __index in C, so their list is read
-- from bindings/body.c's PROPS array and each documented one is read on a
-- live body. Both directions are checked: nothing documented that does not
-- exist, nothing exported that is not documented. The Lua examples of
-- docs/api.md that need no window are run too.
local quarry = require "quarry"
local host = require "support.host"

local HOST_MODULES = {graphics = true, keyboard = true, mouse = true, timer = true}
local NOT_API = {["quarry._test"] = true} -- hooks for specs

local function read(path)
  local text = host.read_file(path)
  assert(text, "cannot read " .. path)
  return text
end

local function sorted_keys(set)
  local out = {}
  for k in pairs(set) do out[#out + 1] = k end
  table.sort(out)
  return out
end

-- Names in `a` missing from `b`, as a sorted list.
local function missing(a, b)
  local out = {}
  for k in pairs(a) do
    if not b[k] then out[#out + 1] = k end
  end
  table.sort(out)
  return out
end

local function is_host(name)
  local m = name:match("^quarry%.([%w_]+)")
  return m and HOST_MODULES[m] or false
end

-- quarry.* name -> "function" | "table" | "value" of the loaded module
-- (a callable table counts as a function and as a table).
local function module_exports(mod)
  local out = {}
  local function walk(t, prefix, seen)
    if seen[t] then return end
    seen[t] = true
    for k, v in pairs(t) do
      local name = prefix .. tostring(k)
      if type(k) == "string" and not NOT_API[name] then
        if type(v) == "function" then
          out[name] = "function"
        elseif type(v) == "table" then
          local mt = getmetatable(v)
          out[name] = (mt and mt.__call) and "function" or "table"
          walk(v, name .. ".", seen)
        else
          out[name] = "value"
        end
      end
    end
  end
  walk(mod, "quarry.", {})
  return out
end

-- "Class:method" for every method of every registered class, and the set
-- of class names.
local function class_methods()
  local methods, classes = {}, {}
  for cname, mt in pairs(debug.getregistry()) do
    if type(cname) == "string" and cname:match("^quarry%.%u") and type(mt) == "table" then
      local t = type(mt.methods) == "table" and mt.methods or (type(mt.__index) == "table" and mt.__index)
      if t then
        local short = cname:gsub("^quarry%.", "")
        classes[short] = true
        for k, v in pairs(t) do
          if type(v) == "function" then methods[short .. ":" .. k] = true end
        end
      end
    end
  end
  return methods, classes
end

-- The Body property names the C __index knows (bindings/body.c PROPS).
local function body_props()
  local src = read("bindings/body.c")
  local list = src:match("PROPS%[%]%s*=%s*(%b{})")
  assert(list, "PROPS not found in bindings/body.c")
  local out = {}
  for name in list:gmatch('"([%w_]+)"') do out[name] = true end
  assert(out.position and out.mass, "PROPS parsed wrongly")
  return out
end

-- docs/api.md: names of the ### `...` headings, split by kind.
local function doc_entries()
  local e = {module = {}, host = {}, methods = {}, props = {}, all = {}, dup = {}}
  for line in read("docs/api.md"):gmatch("[^\n]+") do
    local code = line:match("^###%s+`([^`]+)`")
    if code then
      local name = assert(code:match("^[%w_.:]+"), "heading without a name: " .. line)
      if e.all[name] then e.dup[#e.dup + 1] = name end
      e.all[name] = true
      if name:match("^quarry%.") then
        if is_host(name) then e.host[name] = true else e.module[name] = true end
      elseif name:match("^%u[%w_]*:[%w_]+$") then
        e.methods[name] = true
      elseif name:match("^%u[%w_]*%.[%w_]+$") then
        e.props[name] = true
      else
        error("heading names neither a quarry.* entry, a Class:method nor a Class.field: " .. line)
      end
    end
  end
  return e
end

-- scripts/quarry.d.lua: function declarations, assignments to quarry.*
-- (a callable one carries ---@overload) and ---@field lines per ---@class.
local function dlua_entries()
  local text = read("scripts/quarry.d.lua")
  local e = {module = {}, host = {}, methods = {}, fields = {}, assigned = {}}
  local class, block = nil, {}
  for line in text:gmatch("[^\n]*") do
    local ann = line:match("^%-%-%-(.*)")
    if ann then
      block[#block + 1] = ann
      local c = ann:match("^@class%s+([%w_.]+)")
      if c then
        class = c
        e.fields[c] = e.fields[c] or {}
      end
      local f = ann:match("^@field%s+([%w_]+)")
      if f and class then e.fields[class][f] = true end
    elseif line:match("%S") then
      local owner, sep, fname = line:match("^function%s+([%w_.]+)([.:])([%w_]+)%s*%(")
      if owner then
        if owner == "quarry" or owner:match("^quarry%.") then
          local name = owner .. "." .. fname
          if is_host(name) then e.host[name] = true else e.module[name] = true end
        else
          assert(sep == ":", "class functions are declared as methods: " .. line)
          e.methods[owner .. ":" .. fname] = true
        end
      end
      local target = line:match("^(quarry%.[%w_.]+)%s*=")
      if target then
        local callable = false
        for _, a in ipairs(block) do callable = callable or a:match("^@overload") ~= nil end
        e.assigned[target] = callable and "function" or "other"
        if callable and not is_host(target) then e.module[target] = true end
      end
      class, block = nil, {}
    end
  end
  return e, text
end

-- The host-only functions, listed by the host program itself.
local function host_exports()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. host.shell_quote(dir)))
  host.write_file(dir .. "/list.lua", [[
local quarry = require "quarry"
local out = assert(io.open(arg[1], "w"))
for name, t in pairs(quarry) do
  if type(t) == "table" and (name == "graphics" or name == "keyboard" or name == "mouse" or name == "timer") then
    for k, v in pairs(t) do
      if type(v) == "function" then out:write("quarry.", name, ".", k, "\n") end
    end
  end
end
for _, f in ipairs{"stats", "debug", "get_camera"} do
  for k in pairs(quarry.graphics[f]()) do out:write("field quarry.graphics.", f, " ", k, "\n") end
end
out:close()
]])
  local cmd = ("timeout 60 %s --headless --frames 1 %s %s >/dev/null 2>%s"):format(
    host.shell_quote(host.exe), host.shell_quote(dir .. "/list.lua"), host.shell_quote(dir .. "/out"),
    host.shell_quote(dir .. "/err"))
  local ok = os.execute(cmd)
  local err = host.read_file(dir .. "/err") or ""
  local out = {}
  local fields = {}
  for _, l in ipairs(host.lines_of(dir .. "/out")) do
    local fn, key = l:match("^field (%S+) (%S+)$")
    if fn then
      fields[fn] = fields[fn] or {}
      fields[fn][key] = true
    else
      out[l] = true
    end
  end
  os.execute("rm -rf " .. host.shell_quote(dir))
  assert(ok, "the host failed to list its modules: " .. err)
  return out, fields
end

local function host_set(all)
  local out = {}
  for name, kind in pairs(all) do
    if kind ~= "table" and not is_host(name) then out[name] = true end
  end
  return out
end

-- One object of each class, every optional Body property set.
local function instances()
  local w = quarry.world.new{threads = 0}
  w.terrain:fill_region({0, 0, 0}, {8, 2, 8}, "rock")
  local b = w:spawn{shape = "box", size = 1, position = {4, 4, 4}, name = "probe"}
  b.on_contact = function() end
  local m = quarry.mesh.new{vertices = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1},
                            indices = {1, 3, 2, 1, 2, 4, 1, 4, 3, 2, 3, 4}}
  return {World = w, Terrain = w.terrain, Body = b, Mesh = m, Vec3 = quarry.vec3(1, 2, 3),
          Quat = quarry.quat(1, 0, 0, 0), GridSort = quarry.gridsort.new(m)}
end

-- The code spans (`...`) of the text under the heading of `name`, up to
-- the next heading: the names a section mentions.
local function section_words(name)
  local body, inside = {}, false
  for line in read("docs/api.md"):gmatch("[^\n]*") do
    if line:match("^#") then
      local code = line:match("^#+%s+`([^`]+)`")
      inside = code ~= nil and code:match("^[%w_.:]+") == name
    end
    if inside then body[#body + 1] = line end
  end
  local words = {}
  for span in table.concat(body, "\n"):gmatch("`([^`]+)`") do
    for w in span:gmatch("[%a_][%w_]*") do words[w] = true end
  end
  assert(#body > 0, "no section for " .. name)
  return words
end

describe("docs/api.md", function()
  local docs = doc_entries()
  local exports = module_exports(quarry)
  local methods, classes = class_methods()

  it("has each heading once", function()
    assert.are.same({}, docs.dup)
    assert.is_true(#sorted_keys(docs.all) > 100, "too few entries parsed")
  end)

  it("documents only functions and values the module has", function()
    local have = {}
    for name, kind in pairs(exports) do
      if kind ~= "table" then have[name] = true end
    end
    assert.are.same({}, missing(docs.module, have))
  end)

  it("documents every function and value of the module", function()
    assert.are.same({}, missing(host_set(exports), docs.module))
  end)

  it("documents only methods the classes have, and every one of them", function()
    assert.are.same({}, missing(docs.methods, methods))
    assert.are.same({}, missing(methods, docs.methods))
    for name in pairs(docs.props) do
      assert.is_true(classes[name:match("^(%u[%w_]*)")] ~= nil, "no class for " .. name)
    end
  end)

  it("documents properties that read back on live objects, and every Body property", function()
    local objs = instances()
    for name in pairs(docs.props) do
      local class, field = name:match("^(%u[%w_]*)%.([%w_]+)$")
      local obj = assert(objs[class], "no instance of " .. class)
      assert.is_true(obj[field] ~= nil, name .. " reads nil")
    end
    local props = {}
    for p in pairs(body_props()) do props["Body." .. p] = true end
    assert.are.same({}, missing(props, docs.props))
    objs.World:destroy()
  end)

  it("documents the host-only modules as the host exports them", function()
    local hosted, fields = host_exports()
    assert.is_true(hosted["quarry.graphics.screenshot"] ~= nil, "host listing incomplete")
    assert.are.same({}, missing(docs.host, hosted))
    assert.are.same({}, missing(hosted, docs.host))
    for fn, keys in pairs(fields) do
      assert.are.same({}, missing(keys, section_words(fn)), fn)
    end
    assert.is_true(fields["quarry.graphics.stats"] ~= nil, "no fields listed")
  end)

  it("names every field of the tables that functions return", function()
    local w = quarry.world.new{threads = 0}
    w.terrain:fill_ball({8, 8, 8}, 4, "rock")
    w:set_viewer({0, 8, 0})
    local _, lod_info = w:lod_mesh{wait = true}
    local _, island_info = w.terrain:islands()
    local tables = {
      ["World:stats"] = w:stats(),
      ["World:settings"] = w:settings(),
      ["World:lod_mesh"] = lod_info,
      ["Terrain:islands"] = island_info,
      ["Terrain:journal"] = w.terrain:journal(),
      ["quarry.material.get"] = quarry.material.get("rock"),
    }
    for name, t in pairs(tables) do
      local words = section_words(name)
      local undocumented = {}
      for k in pairs(t) do
        if not words[k] then undocumented[#undocumented + 1] = k end
      end
      table.sort(undocumented)
      assert.are.same({}, undocumented, name)
    end
    w:destroy()
  end)

  it("has Lua examples that run (those that need no window)", function()
    local text = read("docs/api.md")
    local w = quarry.world.new{threads = 0}
    w.terrain:generate{kind = "flat", size = {64, 16, 64}}
    local env = setmetatable({quarry = quarry, world = w, print = function() end}, {__index = _G})
    local ran = 0
    for code in text:gmatch("```lua\n(.-)```") do
      if not code:find("graphics", 1, true) and not code:find("function quarry%.") then
        local chunk = assert(load(code, "docs/api.md example", "t", env))
        local ok, err = pcall(chunk)
        assert(ok, tostring(err) .. "\n" .. code)
        ran = ran + 1
      end
    end
    assert.is_true(ran >= 10, "only " .. ran .. " examples ran")
    w:destroy()
  end)
end)

describe("scripts/quarry.d.lua", function()
  local d, text = dlua_entries()
  local exports = module_exports(quarry)
  local methods = class_methods()
  local docs = doc_entries()

  it("is LuaLS meta code that Lua can parse", function()
    assert.is_truthy(text:match("^%-%-%-@meta"))
    assert(load(text, "quarry.d.lua", "t", {}))
  end)

  it("declares only what the module has, and all of it", function()
    local have = {}
    for name, kind in pairs(exports) do
      if kind == "function" then have[name] = true end
    end
    assert.are.same({}, missing(d.module, have))
    assert.are.same({}, missing(have, d.module))
    for name in pairs(d.assigned) do
      assert.is_true(exports[name] ~= nil or is_host(name), name .. " is not in the module")
    end
    for name, kind in pairs(exports) do
      if kind == "value" then assert.is_true(d.assigned[name] ~= nil, name .. " is not declared") end
    end
  end)

  it("declares every method of every class and no other", function()
    assert.are.same({}, missing(d.methods, methods))
    assert.are.same({}, missing(methods, d.methods))
  end)

  it("declares the same properties as docs/api.md", function()
    local fields = {}
    local objs = instances()
    for class in pairs(objs) do
      for f in pairs(d.fields[class] or {}) do fields[class .. "." .. f] = true end
    end
    objs.World:destroy()
    assert.are.same({}, missing(fields, docs.props))
    assert.are.same({}, missing(docs.props, fields))
  end)

  it("declares the host-only functions the host exports", function()
    local hosted = host_exports()
    assert.are.same({}, missing(d.host, hosted))
    assert.are.same({}, missing(hosted, d.host))
  end)
end)

describe(".luarc.json", function()
  it("points the language server at the definitions", function()
    local text = read(".luarc.json")
    assert.is_truthy(text:find('"scripts/quarry.d.lua"', 1, true))
    assert.is_truthy(text:find('"Lua 5.4"', 1, true))
  end)
end)
