--[[
  wake: sets the wake marker of each given queue that has runs a claim may lease.

  A claim of a queue at its concurrency cap removes the queue's marker, so
  that idle consumers stay blocked instead of waking to claim nothing; so
  does one that leaves only parked runs of limit groups. A consumer that
  acknowledged runs of a capped or grouped queue (the claim told it which of
  its queues are) calls this after the acknowledgement: a lease ended, so a
  run may be leased again, and one blocked consumer wakes to claim it. Runs
  wait when the queue's ready structures hold some, or when a group of its
  `groups` index is due (a group held by its cap is due at every claim: see
  includes/claim-groups). It only sets markers: a wake-up too many costs one
  claim that takes nothing and removes the marker again, never a loop.

  KEYS      per queue: wake, ready, readyList, groups (lua/keys.mjs)

  Returns   the number of markers set.

  Complexity: O(Q log G) for G groups of a queue.
]]
--- @include "includes/now"
--- @keys

local now = nowMs()
local set = 0
for q = 1, queueCount do
  local k = queueKeys(q)
  if redis.call('EXISTS', k.ready, k.readyList) > 0 or redis.call('ZCOUNT', k.groups, '-inf', now) > 0 then
    redis.call('ZADD', k.wake, 0, 'w')
    set = set + 1
  end
end
return set
