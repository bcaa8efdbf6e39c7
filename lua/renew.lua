--[[
  renew: a worker process's periodic call. Extends every lease it still holds
  and refreshes its own worker record (its heartbeat) in one round trip.

  A lease is extended only while it holds (the leases hash holds the same
  token, its deadline has not passed); a lease that expired or was reaped meanwhile is
  reported lost so the worker aborts the attempt (its eventual
  acknowledgement is discarded anyway).
  The worker record expires unless refreshed, so a dead process disappears
  from the worker list by itself.

  A lease extended in a paused queue is answered 2, so that its worker hands
  back the runs it holds there and has not started (prefetched before the
  pause): one EXISTS per queue of the call.

  A lease that no longer holds because its run was cancelled (cancel.lua
  revoked it and finished the run CANCELLED) is answered 3, so that its
  worker aborts the attempt with CancelledError rather than LeaseLostError:
  one HGET of the run's status per lease not held (none on the common path).

  KEYS      workers, worker (this process's record), leases; per queue:
            running, paused; then runPrefix (a run's status tells a cancelled
            run's lease from a lost one; absent in a call of an older client,
            whose lost leases are all answered 0) (lua/keys.mjs)

  ARGV[1]   Q             number of distinct queues
  ARGV[2]   workerId
  ARGV[3]   recordTtl     ms the worker record lives without a refresh
  ARGV[4]   F             number of record fields
  ARGV[5 .. 4+2F]         record field, value pairs
  ARGV[5+2F ..]           per item i, 4 values: id, queue index, lease token, lease TTL (ms)

  Returns   { now, kept_1, ..., kept_n } with 1 = extended, 2 = extended in a
            paused queue, 0 = lease lost, 3 = lease revoked by a cancel

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
--- @keys
-- Per queue: what a held lease of it is answered (see above).
local heldAs = {}
for q = 1, queueCount do heldAs[q] = redis.call('EXISTS', queueKeys(q).paused) == 1 and 2 or 1 end

redis.call('HSET', workerKey, 'seenAt', now, unpack(ARGV, 5, 4 + 2 * fieldCount))
redis.call('PEXPIRE', workerKey, recordTtl)
redis.call('ZADD', workersKey, now + recordTtl, ARGV[2])
redis.call('ZREMRANGEBYSCORE', workersKey, '-inf', '(' .. now)

for i = 1, itemCount do
  local a = itemBase + (i - 1) * FIELDS
  local id, q, token, ttl = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], tonumber(ARGV[a + 3])
  local runningKey = queueKeys(q).running
  if leaseHolds(redis.call('HGET', leasesKey, id), token, redis.call('ZSCORE', runningKey, id), now) then
    redis.call('ZADD', runningKey, 'XX', now + ttl, id)
    reply[i + 1] = heldAs[q]
  elseif runPrefix and redis.call('HGET', runPrefix .. id, 'status') == 'CANCELLED' then
    reply[i + 1] = 3
  else
    reply[i + 1] = 0
  end
end

return reply
