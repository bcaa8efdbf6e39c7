-- Adds `n` to `field` of the current minute's metrics bucket of a queue.
-- Buckets (`<prefix><epoch minute>`, a HASH) feed rates and the last hour's
-- charts; they are written once per script call and queue, never per run,
-- and expire after two hours.
local METRICS_TTL_MS = 7200000
local function countMinute(prefix, now, field, n)
  if n == 0 then return end
  local key = prefix .. math.floor(now / 60000)
  redis.call('HINCRBY', key, field, n)
  redis.call('PEXPIRE', key, METRICS_TTL_MS)
end
