-- Record and replay in the host program (--record, --replay, --input): a
-- small game driven by scripted input events is recorded, then replayed;
-- the replay must print the same world:hash(), frame count, event count and
-- sum of dts (as a hex float, so bit for bit). Controls show that each part
-- of the recording matters: without the input the hash differs, with the
-- recorded dts changed the number of fixed steps follows the new dts, and a
-- clock answer edited in the file is what the replayed script reads.
local host = require "support.host"
local exe, shell_quote, OFFSCREEN = host.exe, host.shell_quote, host.OFFSCREEN
local write_file, read_file = host.write_file, host.read_file

local dir

-- The runs start in the test's directory, so paths are made absolute.
local root
do
  local pipe = assert(io.popen("pwd"))
  root = pipe:read("l")
  pipe:close()
end
local abs_exe = exe:sub(1, 1) == "/" and exe or root .. "/" .. exe

local function run(args, env)
  local out, err = dir .. "/stdout", dir .. "/stderr"
  local cmd = string.format("cd %s && %s timeout 120 %s %s >%s 2>%s", shell_quote(dir), env or "",
                            shell_quote(abs_exe), args, shell_quote(out), shell_quote(err))
  local _, _, code = os.execute(cmd)
  return code, read_file(out) or "", read_file(err) or ""
end

-- The game: keys spawn balls and carve, a held key digs every frame, mouse
-- clicks drop boxes where the mouse is; positions also take math.random,
-- os.clock, os.time() and quarry.timer.now, which a replay must give back.
local GAME = [[
local quarry = require "quarry"
local world, dts, events = nil, 0, 0
function quarry.load()
  world = quarry.world.new{}
  world.terrain:fill_region({0, 0, 0}, {32, 4, 32}, "rock")
end
function quarry.update(dt)
  dts = dts + dt
  if quarry.keyboard.is_down("space") then world.terrain:carve_ball({16, 4, 16}, 1 + world:frame() % 3) end
  world:step(dt)
end
function quarry.keypressed(k)
  events = events + 1
  if k == "b" then
    local c = os.clock()
    print("clock " .. c)
    world:spawn{shape = "sphere", radius = 0.5, position = {4 + math.random() * 24, 8 + c % 1, 16}}
  elseif k == "c" then
    world.terrain:carve_ball({8 + os.time() % 7, 4, 8 + quarry.timer.now() % 5}, 2)
  end
end
function quarry.mousepressed(x, y, button)
  events = events + 1
  local mx, my = quarry.mouse.position()
  local w, h = quarry.graphics.size()
  world:spawn{shape = "box", size = 1, position = {32 * mx / w, 10, 32 * my / h}}
end
function quarry.quit()
  print(string.format("frames %d events %d dt %a hash %s", world:frame(), events, dts, world:hash()))
end
]]

local INPUT = [[
# frame event
3 key down b
3 key up b
10 mouse move 300 200 5 0
12 mouse down 640 360 1
13 mouse up 640 360 1
20 key down c
20 key up c
25 key down b
30 key down space
40 key up space
]]

local function result(out)
  return out:match("frames %d+ events %d+ dt %S+ hash %x+")
end

describe("record and replay", function()
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. shell_quote(dir)))
    write_file(dir .. "/game.lua", GAME)
    write_file(dir .. "/input.txt", INPUT)
  end)

  after_each(function()
    os.execute("rm -rf " .. shell_quote(dir))
  end)

  it("lists --record, --replay and --input in --help", function()
    local code, out = run("--help")
    assert.are.equal(0, code)
    for _, opt in ipairs{"--record FILE", "--replay FILE", "--input FILE"} do
      assert.matches(opt, out, 1, true)
    end
  end)

  it("replays a headless run driven by --input to the same hash", function()
    local code, out, err = run("--headless --frames 60 --input input.txt --record rec.txt game.lua")
    assert.are.equal(0, code, err)
    local recorded = assert(result(out), out)
    assert.matches("events 5 ", recorded, 1, true)
    -- the held key was seen by keyboard.is_down for the 10 frames it was down
    local _, held = read_file(dir .. "/rec.txt"):gsub("%? key 32 = 1\n", "")
    assert.are.equal(10, held)

    code, out, err = run("--headless --replay rec.txt game.lua")
    assert.are.equal(0, code, err)
    assert.are.equal(recorded, result(out))
    assert.are.equal("", err)

    -- control: the input changes the world
    code, out = run("--headless --frames 60 game.lua")
    assert.are.equal(0, code)
    assert.are_not.equal(recorded:match("hash (%x+)"), result(out):match("hash (%x+)"))
  end)

  it("replays examples/arch.lua with a dig at the cursor to the same hash", function()
    -- the mouse over the ground in front of the arch, then D digs there
    write_file(dir .. "/dig.txt", "40 mouse move 640 600 0 0\n45 key down d\n45 key up d\n")
    local arch = root .. "/examples/arch.lua"
    local code, out, err = run("--headless --frames 120 --input dig.txt --record rec.txt " .. shell_quote(arch))
    assert.are.equal(0, code, err)
    local recorded = assert(out:match("arch: 120 frames.-hash %x+"), out)
    code, out, err = run("--headless --replay rec.txt " .. shell_quote(arch))
    assert.are.equal(0, code, err)
    assert.are.equal(recorded, out:match("arch: 120 frames.-hash %x+"))
    -- control: the dig changed the world
    code, out = run("--headless --frames 120 " .. shell_quote(arch))
    assert.are.equal(0, code)
    assert.are_not.equal(recorded, out:match("arch: 120 frames.-hash %x+"))
  end)

  it("replays a run in a window, with its measured dts, headless to the same hash", function()
    local code, out, err = run("--frames 60 --input input.txt --record rec.txt game.lua", OFFSCREEN)
    assert.are.equal(0, code, err)
    local recorded = assert(result(out), out .. err)
    -- dts were measured: their sum is not 60 / 60 as it is headless
    local headless_sum = result(select(2, run("--headless --frames 60 game.lua"))):match("dt (%S+)")
    assert.are_not.equal(headless_sum, recorded:match("dt (%S+)"))

    code, out, err = run("--headless --replay rec.txt game.lua")
    assert.are.equal(0, code, err)
    assert.are.equal(recorded, result(out))
  end)

  it("takes the dts and the clocks from the file", function()
    assert.are.equal(0, (run("--headless --frames 60 --input input.txt --record rec.txt game.lua")))
    local text = read_file(dir .. "/rec.txt")
    -- every frame at 1/30 s: two fixed steps of 1/60 each
    local slow, n = text:gsub("update (%d+) [^\n]+", "update %1 0.033333333333333333")
    assert.are.equal(60, n)
    write_file(dir .. "/slow.txt", slow)
    local code, out, err = run("--headless --replay slow.txt game.lua")
    assert.are.equal(0, code, err)
    assert.matches("frames 120 ", result(out), 1, true)

    -- the first clock answer, edited, is what the script reads
    local edited, m = text:gsub("%? clock = [^\n]+", "? clock = 0.25", 1)
    assert.are.equal(1, m)
    write_file(dir .. "/clock.txt", edited)
    code, out, err = run("--headless --replay clock.txt game.lua")
    assert.are.equal(0, code, err)
    assert.matches("clock 0.25\n", out, 1, true)
  end)

  it("stops at --frames before the recording's end without a complaint", function()
    assert.are.equal(0, (run("--headless --frames 60 --input input.txt --record rec.txt game.lua")))
    local code, out, err = run("--headless --frames 30 --replay rec.txt game.lua")
    assert.are.equal(0, code, err)
    assert.matches("frames 30 ", result(out), 1, true)
    assert.are.equal("", err)
  end)

  it("replays a recording cut short up to where it ends, and says so", function()
    assert.are.equal(0, (run("--headless --frames 60 --input input.txt --record rec.txt game.lua")))
    local text = read_file(dir .. "/rec.txt")
    -- cut in the middle of the line of frame 20's update, as a killed run leaves it
    local at = assert(text:find("update 20 ", 1, true))
    write_file(dir .. "/cut.txt", text:sub(1, at + 12))
    local code, out, err = run("--headless --replay cut.txt game.lua")
    assert.are.equal(0, code, err)
    assert.matches("frames 20 ", result(out), 1, true)
    assert.matches("cut.txt ends after frame 20 without an 'end' line", err, 1, true)
  end)

  it("ends where a recorded quit ended the run", function()
    write_file(dir .. "/quit.txt", "7 key down escape\n")
    local code, out, err = run("--headless --input quit.txt --record rec.txt game.lua")
    assert.are.equal(0, code, err)
    local recorded = result(out)
    assert.matches("frames 7 events 1 ", recorded, 1, true)
    code, out, err = run("--headless --replay rec.txt game.lua")
    assert.are.equal(0, code, err)
    assert.are.equal(recorded, result(out))
  end)

  it("reports a run that leaves the recording and exits 1", function()
    assert.are.equal(0, (run("--headless --frames 60 --input input.txt --record rec.txt game.lua")))
    -- a script that asks the keyboard about another key
    write_file(dir .. "/changed.lua", (GAME:gsub('is_down%("space"%)', 'is_down("a")')))
    local code, _, err = run("--headless --replay rec.txt changed.lua")
    assert.are.equal(1, code)
    assert.matches("rec.txt:%d+: the run left the recording: the script asked for 'key %d+'", err)
    local _, reports = err:gsub("left the recording", "")
    assert.are.equal(1, reports)
  end)

  it("refuses bad recordings, bad input files and bad combinations with a message", function()
    local code, _, err = run("--headless --replay missing.txt game.lua")
    assert.are.equal(1, code)
    assert.matches("cannot read missing.txt", err, 1, true)
    write_file(dir .. "/junk.txt", "hello\n")
    code, _, err = run("--headless --replay junk.txt game.lua")
    assert.are.equal(1, code)
    assert.matches("not a quarry recording", err, 1, true)
    write_file(dir .. "/v9.txt", "quarry-record 9\nseed 0\nscript x\n")
    code, _, err = run("--headless --replay v9.txt game.lua")
    assert.are.equal(1, code)
    assert.matches("version 9", err, 1, true)
    write_file(dir .. "/badline.txt", "quarry-record 1\nseed 0\nscript x\nupdate 0 -1\nend 1\n")
    code, _, err = run("--headless --replay badline.txt game.lua")
    assert.are.equal(1, code)
    assert.matches("badline.txt:4: 'update N DT'", err, 1, true)

    code, _, err = run("--headless --record rec.txt --replay rec.txt game.lua")
    assert.are.equal(2, code)
    assert.matches("cannot be used together", err, 1, true)
    code, _, err = run("--headless --input input.txt --replay rec.txt game.lua")
    assert.are.equal(2, code)
    code, _, err = run("--headless --record game.lua")
    assert.are.equal(2, code)
    code, _, err = run("--headless --record no/such/dir/rec.txt game.lua")
    assert.are.equal(1, code)
    assert.matches("cannot write no/such/dir/rec.txt", err, 1, true)

    for _, case in ipairs{
      {"3 jump\n", "in.txt:1: unknown event 'jump'"},
      {"# c\n5 key down a\n3 key up a\n", "in.txt:3: frame 3 comes after frame 5"},
      {"2 mouse down 1 2\n", "in.txt:1: 'mouse down' needs X Y BUTTON"},
      {"2 wheel 1 nan\n", "in.txt:1: 'wheel' needs DX DY"},
      {"2 key down nosuchkey\n", "unknown key 'nosuchkey' at frame 2"},
      {"key down a\n", "in.txt:1: a line is FRAME EVENT"},
    } do
      write_file(dir .. "/in.txt", case[1])
      code, _, err = run("--headless --frames 5 --input in.txt game.lua")
      assert.are.equal(1, code, case[1])
      assert.matches(case[2], err, 1, true)
    end
  end)
end)
