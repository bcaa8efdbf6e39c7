-- Adds `n` to `field` of the current minute's metrics bucket of a queue.
-- Buckets (`<prefix><epoch minute>`, a HASH) feed rates and the last hour's
-- charts; they are written once per script call and queue, never per run,
-- and expire about two hours after their minute. The expiry is set when a
-- field is created (HINCRBY answers `n`): the bucket's first field sets it,
-- and every later write of an existing field spares a command (a bulk call
-- in chunks, and every claim and acknowledgement, would otherwise renew it).
-- (Numbers are written with '%d': see the note on numbers in enqueue.lua.)
local METRICS_TTL_MS = '7200000'
local function countMinute(prefix, now, field, n)
  if n == 0 then return end
  local key = prefix .. string.format('%d', math.floor(now / 60000))
  if redis.call('HINCRBY', key, field, string.format('%d', n)) == n then
    redis.call('PEXPIRE', key, METRICS_TTL_MS)
  end
end
