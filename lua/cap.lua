--[[
  cap: set or remove a queue's concurrency cap, for every worker of every pool.

  The cap is a key of its own, read by every claim of the queue together with
  the pause flag (claim.lua: one MGET per queue); a claim leases at most
  `cap - ZCARD(running)` of the queue's runs. Nothing else reads it. Lowering
  the cap below the runs now leased takes no lease away: those runs finish,
  and no run of the queue is leased until the running set is below the cap.
  Raising or removing it wakes an idle consumer when runs are ready (the
  marker was removed while the queue was at its cap). A queue no application
  registered may be capped (before the workers that serve it are deployed),
  and is registered, so the overview shows it.

  Idempotent: a resent copy sets the same value again.

  KEYS      cap, wake, ready, readyList (its places count as ready runs, as in
            claim.lua), queues (lua/keys.mjs)

  ARGV[1]   queue
  ARGV[2]   cap           a positive integer, or '' to remove the cap

  Returns   { now, previous }: the cap before this call, or -1 when there was none.

  Complexity: O(1).
]]
--- @include "includes/now"
--- @keys

local now = nowMs()
local previous = tonumber(redis.call('GET', capKey)) or -1
if ARGV[2] == '' then
  redis.call('DEL', capKey)
else
  redis.call('SET', capKey, ARGV[2])
end
redis.call('SADD', queuesKey, ARGV[1])
if redis.call('EXISTS', readyKey, readyListKey) > 0 then redis.call('ZADD', wakeKey, 0, 'w') end
return { now, previous }
