import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../redis-client.js';
import { LUA_SOURCES, type LuaScriptName } from './lua-sources.generated.js';

const COMMAND_PREFIX = 'threadmill_';

type ScriptCaller = (numKeys: number, keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown>;

/**
 * Registers every Lua script of `lua/` on a connection. ioredis then runs
 * them with EVALSHA and falls back to EVAL once after a NOSCRIPT (a restarted
 * or failed-over Redis), in plain calls and in pipelines alike.
 */
export function defineScripts(client: RedisClient): void {
  for (const [name, lua] of Object.entries(LUA_SOURCES)) {
    const command = scriptCommand(name as LuaScriptName);
    if (!(command in client)) client.defineCommand(command, { lua });
  }
}

/** The connection command that runs script `name`. */
export function scriptCommand(name: LuaScriptName): string {
  return COMMAND_PREFIX + name;
}

/** Runs script `name` with `keys` and `args` on a connection or in a pipeline. */
export function runScript(
  target: RedisClient | ChainableCommander,
  name: LuaScriptName,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  const call = (target as unknown as Record<string, ScriptCaller>)[scriptCommand(name)]!;
  // As arrays, which ioredis flattens into the command: spread into the call,
  // a large batch's arguments would overflow the stack.
  return call.call(target, keys.length, keys, args);
}
