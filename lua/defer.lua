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

  KEYS[1]      leases       HASH    run id → lease value
  KEYS[2]      runPrefix    (prefix of run HASH keys, which share its slot)
  KEYS[3]      fresh        HASH    run id → record of a run no attempt settled
  KEYS[4]      callRecord   STRING  this call's record slot (see includes/call-record)
  KEYS[5]      brokerWake   ZSET    marker that wakes a broker (a new deferred run)
  KEYS[6..]    per queue q, 3 keys each: running ZSET, deferred ZSET, the
               queue's key prefix `q:<queue>:` (its wake marker, `groups`
               index and `group:` prefix are derived from it: same hash tag,
               hence slot; see includes/limit-groups)

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

local first = recalledNumbers(KEYS[4], ARGV[1])
if first then return first end

local FIELDS = 4
local now = nowMs()
local itemCount = (#ARGV - 2) / FIELDS
local reply = { now }
local any = false

for i = 1, itemCount do
  local a = 3 + (i - 1) * FIELDS
  local id, q, token, delay = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], tonumber(ARGV[a + 3])
  local k = 6 + 3 * (q - 1)
  if leaseHolds(redis.call('HGET', KEYS[1], id), token, redis.call('ZSCORE', KEYS[k], id), now) then
    local runKey = KEYS[2] .. id
    local due = string.format('%d', now + delay)
    materialize(KEYS[3], runKey, id)
    redis.call('HSET', runKey, 'runAfter', due)
    redis.call('HDEL', runKey, 'recoveries')
    redis.call('ZREM', KEYS[k], id)
    redis.call('HDEL', KEYS[1], id)
    redis.call('ZADD', KEYS[k + 1], due, id)
    local group = redis.call('HGET', runKey, 'group')
    if group and freeGroup(KEYS[k + 2] .. 'group:', KEYS[k + 2] .. 'groups', group) then
      redis.call('ZADD', KEYS[k + 2] .. 'wake', 0, 'w')
    end
    any = true
    reply[i + 1] = 1
  else
    reply[i + 1] = 0
  end
end

if any then redis.call('ZADD', KEYS[5], 0, 'w') end
recordReply(KEYS[4], ARGV[1], table.concat(reply, ','))

return reply
