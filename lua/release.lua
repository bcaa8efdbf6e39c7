--[[
  release: hand leased runs that never started back to READY, at once.

  Used when a worker stops with prefetched runs it will not execute. The
  lease is dropped, so the attempt never counts (the run hash records only
  settled attempts), the run keeps its place in its queue, and a waiting
  worker is woken. Fenced by the lease token: a run
  reaped or re-claimed meanwhile is left alone; so is one whose start was
  recorded (a started attempt is charged: its holder acknowledges it).

  KEYS      leases, runPrefix, fresh, callRecord; per queue: running, ready,
            wake, keyPrefix (its `groups` index and `group:` prefix are derived
            from it; see includes/limit-groups) (lua/keys.mjs)

  ARGV[1]   callId        unique to this call; the same for its copies
  ARGV[2]   Q             number of distinct queues
  ARGV[3..] per item i, 3 values: id, queue index, lease token

  Returns   { now, released_1, ..., released_n } with 1 = released, 0 = stale or started.
            A replay of a call that ran answers as its first copy did (the
            leases it released are gone, and would read as stale).

  A released run of a limit group makes its group due at once when the group
  holds parked runs (includes/limit-groups, freeGroup): one HGET per run.

  Complexity: O(n log N) for n items.
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"
--- @include "includes/fresh"
--- @include "includes/hand-back"
--- @include "includes/call-record"
--- @include "includes/limit-groups"
--- @keys

local first = recalledNumbers(callRecordKey, ARGV[1])
if first then return first end

local FIELDS = 3
local now = nowMs()
local queueCount = tonumber(ARGV[2])
local itemCount = (#ARGV - 2) / FIELDS
local reply = { now }
local woken = {}

for i = 1, itemCount do
  local a = 3 + (i - 1) * FIELDS
  local id, q, token = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2]
  local k = queueKeys(q)
  local lease = redis.call('HGET', leasesKey, id)
  if leaseHolds(lease, token, redis.call('ZSCORE', k.running, id), now) and startUnrecorded(lease) then
    handBack(leasesKey, k.running, k.ready, freshKey, runPrefix, id)
    local group = redis.call('HGET', runPrefix .. id, 'group')
    if group then freeGroup(k.keyPrefix .. 'group:', k.keyPrefix .. 'groups', group) end
    woken[q] = true
    reply[i + 1] = 1
  else
    reply[i + 1] = 0
  end
end

for q in pairs(woken) do
  redis.call('ZADD', queueKeys(q).wake, 0, 'w')
end

recordReply(callRecordKey, ARGV[1], table.concat(reply, ','))
return reply
