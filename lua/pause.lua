--[[
  pause: stop a queue's runs from being claimed until resume.lua.

  The flag is a key of its own, read by every claim (claim.lua skips a
  paused queue) and by promote.lua; nothing else changes: enqueues are
  accepted, leased runs run and are acknowledged as usual, due deferred runs
  are promoted and wait READY. The wake marker is removed so that idle
  consumers stay blocked instead of waking to a claim that takes nothing.
  Pausing a queue no application registered is allowed (to pause it before
  the workers that serve it are deployed), and registers it, so that the
  overview shows it paused and it cannot be forgotten.

  Idempotent (SET NX): a resent copy, or pausing a paused queue, keeps the
  first pause time and changes nothing.

  KEYS      paused, wake, queues (lua/keys.mjs)

  ARGV[1]   queue

  Returns   { now, since, changed }: since is when the queue was paused
            (this call's time unless it was paused already, then changed = 0).

  Complexity: O(1).
]]
--- @include "includes/now"
--- @keys

local now = nowMs()
local changed = 0
if redis.call('SET', pausedKey, string.format('%d', now), 'NX') then
  changed = 1
  redis.call('ZREM', wakeKey, 'w')
end
redis.call('SADD', queuesKey, ARGV[1])
return { now, tonumber(redis.call('GET', pausedKey)), changed }
