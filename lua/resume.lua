--[[
  resume: let a paused queue's runs be claimed again.

  Removes the pause flag and, when runs are ready, sets the queue's wake
  marker: an idle consumer blocked on it wakes and claims at once, and its
  claim leaves the marker for the next one while runs remain (claim.lua),
  so the consumers of the queue wake one after the other, as for an enqueue.

  Idempotent: a resent copy, or resuming a queue that is not paused, changes
  nothing but a marker that was due anyway.

  KEYS      paused, wake, ready, readyList (its places count as ready runs, as
            in claim.lua) (lua/keys.mjs)

  Returns   { now, changed }: changed = 0 when the queue was not paused.

  Complexity: O(1).
]]
--- @include "includes/now"
--- @keys

local now = nowMs()
local changed = redis.call('DEL', pausedKey)
if redis.call('EXISTS', readyKey, readyListKey) > 0 then redis.call('ZADD', wakeKey, 0, 'w') end
return { now, changed }
