--[[
  renew: extend the leases a worker still holds, in one call per process.

  A lease is extended only while its run is RUNNING under the same token; a
  lease that was reaped or re-claimed meanwhile is reported lost so the
  worker aborts the attempt (its eventual acknowledgement is discarded anyway).

  KEYS[1..Q]    per queue q: running ZSET
  KEYS[Q+1 ..]  per item i: its run HASH

  ARGV[1]   Q             number of distinct queues
  ARGV[2..] per item i, 4 values: id, queue index, lease token, lease TTL (ms)

  Returns   { now, kept_1, ..., kept_n } with 1 = extended, 0 = lease lost

  Complexity: O(n log N) for n items.
]]
--- @include "includes/now"

local FIELDS = 4
local now = nowMs()
local queueCount = tonumber(ARGV[1])
local itemCount = (#ARGV - 1) / FIELDS
local reply = { now }

for i = 1, itemCount do
  local a = 2 + (i - 1) * FIELDS
  local id, q, token, ttl = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], tonumber(ARGV[a + 3])
  local f = redis.call('HMGET', KEYS[queueCount + i], 'token', 'status')
  if f[1] == token and f[2] == 'RUNNING' and redis.call('ZSCORE', KEYS[q], id) then
    redis.call('ZADD', KEYS[q], 'XX', now + ttl, id)
    reply[i + 1] = 1
  else
    reply[i + 1] = 0
  end
end

return reply
