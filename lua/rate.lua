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

  KEYS[1]   rate          STRING  the queue's limit: `max|perMs|slackMs`
  KEYS[2]   wake          ZSET    the queue's wake marker
  KEYS[3]   ready         ZSET    of the queue
  KEYS[4]   ready LIST    of the queue (its places count as ready runs, as in claim.lua)
  KEYS[5]   queues        SET     queue names, for inspectors

  ARGV[1]   queue
  ARGV[2]   limit         `max|perMs|slackMs` (positive integers, slack 0 or
                          more), or '' to remove the limit

  Returns   { now, previous }: the limit before this call, or '' when there was none.

  Complexity: O(1).
]]
--- @include "includes/now"

local now = nowMs()
local previous = redis.call('GET', KEYS[1]) or ''
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
redis.call('SADD', KEYS[5], ARGV[1])
if redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then redis.call('ZADD', KEYS[2], 0, 'w') end
return { now, previous }
