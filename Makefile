# Quarry top-level Makefile.
#
#   make            build/libquarry.a, build/quarry.so (Lua module), build/quarry (host)
#   make run        open the sandbox (headless for a few frames when there is no display)
#   make test       every spec (busted) and the C unit tests
#   make sanitize   the same specs with everything built under ASan + UBSan
#   make bench      benchmarks, side by side with peers where a peer exists
#   make fuzz       libFuzzer targets (fuzz/), FUZZ_SECONDS each (default 300)
#   make soak       random edits, queries, saves and loads for SOAK_SECONDS (600)
#   make clean
#
# Every target first runs `deps`, which installs missing Debian packages (and
# costs one dpkg query when everything is there).

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
# pkg-config's answers are read when a recipe first needs them, not when this
# file is parsed: on a fresh machine `deps` installs liblua5.4-dev and
# libsdl2-dev only after parsing, and flags read before that would be empty.
# Each variable replaces itself with its value on first use (read once).
LUA_CFLAGS = $(eval LUA_CFLAGS := $(shell pkg-config --cflags lua5.4 2>/dev/null))$(LUA_CFLAGS)
SDL_CFLAGS = $(eval SDL_CFLAGS := $(shell pkg-config --cflags sdl2 2>/dev/null))$(SDL_CFLAGS)
CFLAGS  = -std=c11 $(OPT) -g -fPIC $(WARN) -D_GNU_SOURCE -Iengine -Ibindings $(LUA_CFLAGS) $(EXTRA_CFLAGS)
LDFLAGS := $(EXTRA_LDFLAGS)
LIBS    := -lassimp -lzstd -lpthread -lm

DEB_PACKAGES := build-essential pkg-config lua5.4 liblua5.4-dev libsdl2-dev libcglm-dev \
                python3-glad lua-busted libassimp-dev libstb-dev libzstd-dev \
                libgl1-mesa-dri qhull-bin assimp-testmodels clang libclang-rt-dev voro++ voro++-dev
BENCH_PACKAGES := g++ libopenvdb-dev libboost-dev libbullet-dev libembree-dev libbullet-extras-dev libqhull-dev libmeshoptimizer-dev voro++-dev

ENGINE_SRC := $(wildcard engine/core/*.c engine/voxel/*.c engine/world/*.c engine/mesh/*.c \
                          engine/physics/*.c engine/geom/*.c)
HOST_SRC   := $(wildcard engine/app/*.c engine/render/*.c)
HOST_BIND  := bindings/graphics.c
MODULE_SRC := $(filter-out $(HOST_BIND),$(wildcard bindings/*.c))

ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/obj/%.o)
MODULE_OBJ := $(MODULE_SRC:%.c=$(BUILD)/obj/%.o)
HOST_OBJ   := $(HOST_SRC:%.c=$(BUILD)/obj/%.o) $(HOST_BIND:%.c=$(BUILD)/obj/%.o) \
              $(BUILD)/obj/glad/gl.o
CTEST_SRC  := $(wildcard spec/c/*.c)
CTEST_BIN  := $(CTEST_SRC:spec/c/%.c=$(BUILD)/ctest/%)

GLAD_C := $(BUILD)/glad/src/gl.c
GLAD_H := $(BUILD)/glad/include/glad/gl.h

.PHONY: all deps bench-deps run test ctest spec sanitize bench clean fuzz soak
all: $(BUILD)/libquarry.a $(BUILD)/quarry.so $(BUILD)/quarry

deps:
	@missing=""; for p in $(DEB_PACKAGES) $(EXTRA_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "deps: need root to install$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi

$(BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(OBJ_OPT) -MMD -MP -c $< -o $@

# The rigid-body step's loops (narrowphase, solver) at -O3: 3% off a
# 1000-box step, same results (no fast-math; C11 mode keeps fp-contract off).
STEP_OBJ := $(addprefix $(BUILD)/obj/engine/physics/,bodies.o contacts.o solver.o solver_wide.o \
                collide.o collide_terrain.o gjk.o shape.o)
$(STEP_OBJ): OBJ_OPT := -O3

$(BUILD)/libquarry.a: $(ENGINE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/quarry.so: $(MODULE_OBJ) $(BUILD)/libquarry.a
	$(CC) -shared $(LDFLAGS) -o $@ $(MODULE_OBJ) $(BUILD)/libquarry.a $(LIBS)

# The host embeds Lua and links the module's objects statically.
$(BUILD)/quarry: $(HOST_OBJ) $(MODULE_OBJ) $(BUILD)/libquarry.a
	$(CC) $(LDFLAGS) -o $@ $(HOST_OBJ) $(MODULE_OBJ) $(BUILD)/libquarry.a \
	  $(shell pkg-config --libs lua5.4 sdl2) -ldl $(LIBS)

# glad: the GL 4.5 core loader, generated offline from python3-glad's bundled spec.
$(GLAD_C) $(GLAD_H) &: | deps
	@rm -rf $(BUILD)/glad
	glad --reproducible --quiet --api gl:core=4.5 --out-path $(BUILD)/glad c
$(BUILD)/obj/glad/gl.o: $(GLAD_C)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) -fPIC -I$(BUILD)/glad/include -c $< -o $@
$(HOST_OBJ): CFLAGS += -I$(BUILD)/glad/include $(SDL_CFLAGS)
$(filter-out $(BUILD)/obj/glad/gl.o,$(HOST_OBJ)): $(GLAD_H)

$(BUILD)/ctest/%: spec/c/%.c $(BUILD)/libquarry.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libquarry.a $(LIBS)

# ---------------------------------------------------------------------------
# Running and testing

run: all
	@if [ -z "$$DISPLAY$$WAYLAND_DISPLAY" ] && [ -z "$$SDL_VIDEODRIVER" ]; then \
	  echo "make run: no display found (DISPLAY and WAYLAND_DISPLAY are unset);"; \
	  echo "          running the sandbox headless for 120 frames instead."; \
	  $(BUILD)/quarry --headless --frames 120 examples/sandbox.lua; \
	else \
	  $(BUILD)/quarry examples/sandbox.lua; \
	fi

# scripts/run-tests.sh prints one `N passed, N failed` line and fails on any failure.
test: all $(CTEST_BIN)
	@QUARRY_BUILD=$(BUILD) sh scripts/run-tests.sh

# float-cast-overflow (a double cast to an integer type it does not fit) is
# not part of GCC's "undefined" group; clang's fuzzers found one such cast.
SAN_FLAGS := -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer \
             -fno-sanitize-recover=undefined,float-cast-overflow
sanitize: | deps
	@$(MAKE) --no-print-directory BUILD=build/sanitize OPT=-O1 \
	  EXTRA_CFLAGS="$(SAN_FLAGS)" EXTRA_LDFLAGS="$(SAN_FLAGS)" all ctest-bins
	@QUARRY_BUILD=build/sanitize QUARRY_SANITIZE=1 sh scripts/run-tests.sh

ctest-bins: $(CTEST_BIN)

FUZZ_SECONDS ?= 300
fuzz: all
	@QUARRY_BUILD=$(BUILD) sh fuzz/run.sh $(FUZZ_SECONDS)

SOAK_SECONDS ?= 600
soak: all
	@QUARRY_BUILD=$(BUILD) lua5.4 scripts/soak.lua --seconds $(SOAK_SECONDS)

# README pictures (docs/img/*.png) made by the host in an offscreen window
# (SDL's offscreen driver, Mesa's llvmpipe) from scripts/screenshots/NAME.lua:
# NAME:FRAMES:BITS runs FRAMES frames, then png.py keeps BITS bits per
# channel so that each PNG stays under ~300 KB.
SHOTS := sandbox:100:5 fracture:58:6 lod:3:5
.PHONY: screenshots
screenshots: $(BUILD)/quarry
	@mkdir -p $(BUILD)/shots docs/img
	@for s in $(SHOTS); do \
	  name=$${s%%:*}; rest=$${s#*:}; frames=$${rest%%:*}; bits=$${rest#*:}; \
	  echo "screenshots: docs/img/$$name.png ($$frames frames)"; \
	  SDL_VIDEODRIVER=offscreen $(BUILD)/quarry --frames $$frames --screenshot $(BUILD)/shots/$$name.ppm \
	    scripts/screenshots/$$name.lua >$(BUILD)/shots/$$name.log 2>&1 || { cat $(BUILD)/shots/$$name.log; exit 1; }; \
	  python3 scripts/screenshots/png.py $(BUILD)/shots/$$name.ppm docs/img/$$name.png 1 $$bits || exit 1; \
	done
	@ls -l docs/img/*.png

bench: all
	@$(MAKE) --no-print-directory deps EXTRA_PACKAGES="$(BENCH_PACKAGES)"
	@$(MAKE) --no-print-directory -C bench BUILD=$(abspath $(BUILD))

clean:
	rm -rf build bench/out

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
