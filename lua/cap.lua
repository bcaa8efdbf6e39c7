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

  KEYS[1]   cap           STRING  the queue's cap (a positive integer)
  KEYS[2]   wake          ZSET    the queue's wake marker
  KEYS[3]   ready         ZSET    of the queue
  KEYS[4]   ready LIST    of the queue (its places count as ready runs, as in claim.lua)
  KEYS[5]   queues        SET     queue names, for inspectors

  ARGV[1]   queue
  ARGV[2]   cap           a positive integer, or '' to remove the cap

  Returns   { now, previous }: the cap before this call, or -1 when there was none.

  Complexity: O(1).
]]
--- @include "includes/now"

local now = nowMs()
local previous = tonumber(redis.call('GET', KEYS[1])) or -1
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
redis.call('SADD', KEYS[5], ARGV[1])
if redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then redis.call('ZADD', KEYS[2], 0, 'w') end
return { now, previous }
