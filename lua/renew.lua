--[[
  renew: a worker process's periodic call. Extends every lease it still holds
  and refreshes its own worker record (its heartbeat) in one round trip.

  A lease is extended only while it holds (the leases hash holds the same
  token, its deadline has not passed); a lease that expired or was reaped meanwhile is
  reported lost so the worker aborts the attempt (its eventual
  acknowledgement is discarded anyway).
  The worker record expires unless refreshed, so a dead process disappears
  from the worker list by itself.

  KEYS[1]       workers       ZSET    live worker ids by record expiry
  KEYS[2]       worker        HASH    this process's record
  KEYS[3]       leases        HASH    run id → lease value
  KEYS[4..3+Q]  per queue q: running ZSET

  ARGV[1]   Q             number of distinct queues
  ARGV[2]   workerId
  ARGV[3]   recordTtl     ms the worker record lives without a refresh
  ARGV[4]   F             number of record fields
  ARGV[5 .. 4+2F]         record field, value pairs
  ARGV[5+2F ..]           per item i, 4 values: id, queue index, lease token, lease TTL (ms)

  Returns   { now, kept_1, ..., kept_n } with 1 = extended, 0 = lease lost

  Complexity: O(n log N) for n items.
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"

local FIELDS = 4
local now = nowMs()
local queueCount = tonumber(ARGV[1])
local recordTtl = tonumber(ARGV[3])
local fieldCount = tonumber(ARGV[4])
local itemBase = 5 + 2 * fieldCount
local itemCount = (#ARGV - itemBase + 1) / FIELDS
local reply = { now }

redis.call('HSET', KEYS[2], 'seenAt', now, unpack(ARGV, 5, 4 + 2 * fieldCount))
redis.call('PEXPIRE', KEYS[2], recordTtl)
redis.call('ZADD', KEYS[1], now + recordTtl, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)

for i = 1, itemCount do
  local a = itemBase + (i - 1) * FIELDS
  local id, q, token, ttl = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], tonumber(ARGV[a + 3])
  local runningKey = KEYS[3 + q]
  if leaseHolds(redis.call('HGET', KEYS[3], id), token, redis.call('ZSCORE', runningKey, id), now) then
    redis.call('ZADD', runningKey, 'XX', now + ttl, id)
    reply[i + 1] = 1
  else
    reply[i + 1] = 0
  end
end

return reply
