--[[
  wake: sets the wake marker of each given queue that has ready runs.

  A claim of a queue at its concurrency cap removes the queue's marker, so
  that idle consumers stay blocked instead of waking to claim nothing. A
  consumer that acknowledged runs of a capped queue (the claim told it which
  of its queues have a cap) calls this after the acknowledgement: a lease
  ended, so a run may be leased again, and one blocked consumer wakes to
  claim it. It only sets markers: a wake-up too many costs one claim that
  takes nothing and removes the marker again, never a loop.

  KEYS[1..] per queue q, 3 keys each: wake ZSET, ready ZSET, ready LIST

  Returns   the number of markers set.

  Complexity: O(Q).
]]

local set = 0
for k = 1, #KEYS, 3 do
  if redis.call('EXISTS', KEYS[k + 1], KEYS[k + 2]) > 0 then
    redis.call('ZADD', KEYS[k], 0, 'w')
    set = set + 1
  end
end
return set
