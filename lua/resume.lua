--[[
  resume: let a paused queue's runs be claimed again.

  Removes the pause flag and, when runs are ready, sets the queue's wake
  marker: an idle consumer blocked on it wakes and claims at once, and its
  claim leaves the marker for the next one while runs remain (claim.lua),
  so the consumers of the queue wake one after the other, as for an enqueue.

  Idempotent: a resent copy, or resuming a queue that is not paused, changes
  nothing but a marker that was due anyway.

  KEYS[1]   paused        STRING  the queue's pause flag
  KEYS[2]   wake          ZSET    the queue's wake marker
  KEYS[3]   ready         ZSET    of the queue
  KEYS[4]   ready LIST    of the queue (its places count as ready runs, as in claim.lua)

  Returns   { now, changed }: changed = 0 when the queue was not paused.

  Complexity: O(1).
]]
--- @include "includes/now"

local now = nowMs()
local changed = redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then redis.call('ZADD', KEYS[2], 0, 'w') end
return { now, changed }
