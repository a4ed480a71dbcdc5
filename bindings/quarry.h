/* The Lua module `quarry`: entry point shared by build/quarry.so (loaded by
 * any Lua 5.4 through require) and by the host program, which links the same
 * objects statically and preloads the module. */
#ifndef Q_BINDINGS_QUARRY_H
#define Q_BINDINGS_QUARRY_H

#include <lua.h>

/* Pushes the module table (creating it once per Lua state). */
int luaopen_quarry(lua_State *L);

/* Host-only: adds quarry.graphics, quarry.keyboard, quarry.mouse and
 * quarry.timer to the module table on top of the stack (bindings/graphics.c).
 * `host` is the host's opaque state, kept as a light userdata upvalue. */
void q_lua_open_host_modules(lua_State *L, void *host);

#endif
