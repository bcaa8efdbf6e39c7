--[[
  rate: set or remove a queue's rate limit, for every worker of every pool.

  The limit is a key of its own, read by every claim of the queue together
  with the pause flag and the concurrency cap (claim.lua: one MGET per queue),
  which leases at most `max` of the queue's runs in any window of
  `perMs + slackMs` and tells the worker to start each within `slackMs` of
  its claim. The rate log (the runs leased, by claim time) is kept: a new
  limit counts the runs already leased in its window. Setting or removing it
  wakes an idle consumer when runs are ready (the marker was removed while
  the queue was held back). A queue no application registered may be
  limited (and is registered, so the overview shows it).

  Idempotent: a resent copy sets the same value again.

  KEYS      rate, wake, ready, readyList (its places count as ready runs, as in
            claim.lua), queues (lua/keys.mjs)

  ARGV[1]   queue
  ARGV[2]   limit         `max|perMs|slackMs` (positive integers, slack 0 or
                          more), or '' to remove the limit

  Returns   { now, previous }: the limit before this call, or '' when there was none.

  Complexity: O(1).
]]
--- @include "includes/now"
--- @keys

local now = nowMs()
local previous = redis.call('GET', rateKey) or ''
if ARGV[2] == '' then
  redis.call('DEL', rateKey)
else
  redis.call('SET', rateKey, ARGV[2])
end
redis.call('SADD', queuesKey, ARGV[1])
if redis.call('EXISTS', readyKey, readyListKey) > 0 then redis.call('ZADD', wakeKey, 0, 'w') end
return { now, previous }
