--[[
  defer: put leased runs back for later without charging their attempt
  (`context.retryAfter(ms)`: the task was told to come back later, say by an
  HTTP 429, and that is not a failure).

  Each run whose lease holds leaves its running set and lease and becomes a
  deferred run due `delay` ms from now, keeping its id, score, record and
  `attempts` (the count of settled attempts: this one is not settled, so the
  next claim's attempt has the same number again) and its error history; its
  series of lease expiries ends (`recoveries` is removed, as a worker's
  outcome ends it). No retry is counted and no retry policy is asked: the run
  is pending, as if the attempt had not been. A run still in its fresh record
  moves to its run hash (the record's runAfter cannot be rewritten in place),
  which records the due time. Fenced by the lease token: a run reaped or
  re-claimed meanwhile is left alone.

  KEYS      leases, runPrefix, fresh, callRecord, brokerWake (woken for a new
            deferred run); per queue: running, deferred, keyPrefix (its wake
            marker, `groups` index and `group:` prefix are derived from it; see
            includes/limit-groups) (lua/keys.mjs)

  ARGV[1]   callId        unique to this call; the same for its copies
  ARGV[2]   Q             number of distinct queues
  ARGV[3..] per item i, 4 values: id, queue index, lease token, delay ms

  Returns   { now, deferred_1, ..., deferred_n } with 1 = deferred, 0 = stale.
            A replay of a call that ran answers as its first copy did.

  A deferred run of a limit group makes its group due at once when the group
  holds parked runs (includes/limit-groups, freeGroup), and wakes the queue:
  one HGET per run.

  Complexity: O(n log N) for n items.
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"
--- @include "includes/fresh"
--- @include "includes/call-record"
--- @include "includes/limit-groups"
--- @keys

local first = recalledNumbers(callRecordKey, ARGV[1])
if first then return first end

local FIELDS = 4
local now = nowMs()
local itemCount = (#ARGV - 2) / FIELDS
local reply = { now }
local any = false

for i = 1, itemCount do
  local a = 3 + (i - 1) * FIELDS
  local id, q, token, delay = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], tonumber(ARGV[a + 3])
  local k = queueKeys(q)
  if leaseHolds(redis.call('HGET', leasesKey, id), token, redis.call('ZSCORE', k.running, id), now) then
    local runKey = runPrefix .. id
    local due = string.format('%d', now + delay)
    materialize(freshKey, runKey, id)
    redis.call('HSET', runKey, 'runAfter', due)
    redis.call('HDEL', runKey, 'recoveries')
    redis.call('ZREM', k.running, id)
    redis.call('HDEL', leasesKey, id)
    redis.call('ZADD', k.deferred, due, id)
    local group = redis.call('HGET', runKey, 'group')
    if group and freeGroup(k.keyPrefix .. 'group:', k.keyPrefix .. 'groups', group) then
      redis.call('ZADD', k.keyPrefix .. 'wake', 0, 'w')
    end
    any = true
    reply[i + 1] = 1
  else
    reply[i + 1] = 0
  end
end

if any then redis.call('ZADD', brokerWakeKey, 0, 'w') end
recordReply(callRecordKey, ARGV[1], table.concat(reply, ','))

return reply
