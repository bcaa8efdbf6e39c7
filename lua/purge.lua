--[[
  purge: remove every run of a queue, in every segment, with its record.

  One atomic call: Redis serves nothing else while it runs, for a few
  microseconds per run removed. Leased runs are removed too; their workers'
  acknowledgements are then discarded as stale. Counters and metrics stay.
  A record is removed only when it belongs to this queue: the ready list's
  dead places name runs dequeued from it, and such an id may have been
  enqueued into another queue since.

  KEYS[1]   runPrefix     (prefix of run HASH keys; ids come from the
                          segments, so run keys are derived from this declared
                          prefix and share its hash tag, hence its slot)
  KEYS[2..7] the queue's segments: ready, deferred, running, successful,
            failed, quarantined (ZSETs, but successful: a LIST)
  KEYS[8]   wake ZSET
  KEYS[9]   leases        HASH    run id → lease value (the running runs' are removed)
  KEYS[10]  fresh         HASH    run id → record of a run no attempt settled
  KEYS[11]  ready LIST    (see includes/ready-list)
  KEYS[12]  withdrawn     HASH    tombstones of the ready LIST
  KEYS[13]  callRecord    STRING  this call's record slot (see includes/call-record)
  KEYS[14]  waiting       ZSET    run id → registration expiry: runs somebody waits on
  KEYS[15]  finished      STREAM  where a registered run is published (includes/finished)
  KEYS[16]  done          HASH    run id → record of a run that succeeded from its fresh record
  KEYS[17]  result-classes SET    the queue's TTL classes in use, whose indexes
                          are derived from the successful and failed keys
                          (includes/result-classes)
  KEYS[18]  cancelled ZSET        cancelled runs (absent in a call of an older client)
  KEYS[19]  groups        ZSET    the queue's limit groups with parked runs or leases
  KEYS[20]  group prefix          the queue's `q:<queue>:group:`: a group's held
                          and running keys are derived from it (same hash tag,
                          hence slot; see includes/limit-groups)
  KEYS[21]  parked        STRING  the queue's parked runs' count
  KEYS[22]  grouped       STRING  the queue's flag: it holds runs of limit groups

  ARGV[1]   callId        unique to this call; the same for its copies
  ARGV[2]   queue         the queue's name

  Parked runs (in their limit group's held set) are removed with the rest,
  and the groups' held and running sets, index, count and flag go; their rate
  logs stay, as the queue's own does, and expire by themselves.

  Removed runs somebody waits on are published as removed ('purged'), so
  their waiters stop waiting; one EXISTS when nobody waits.

  Returns   the number of runs removed. A replay of a call that ran answers
            as its first copy did and removes nothing (runs enqueued since
            stay).

  Complexity: O(N) for N runs in the queue.
]]
--- @include "includes/fresh"
--- @include "includes/done"
--- @include "includes/call-record"
--- @include "includes/now"
--- @include "includes/finished"
--- @include "includes/result-classes"
--- @include "includes/limit-groups"

local first = recalledReply(KEYS[13], ARGV[1])
if first then return tonumber(first) end

local queue = ARGV[2]
local freshKey, leasesKey, doneKey = KEYS[10], KEYS[9], KEYS[16]
local seen = {}
local removed = 0
-- The removed runs' ids, collected only when somebody waits on some run.
local gone = redis.call('EXISTS', KEYS[14]) == 1 and {} or false

-- Removes those of `ids` (a slice `unpack` can take) whose record belongs
-- to this queue: fresh record, done record or run hash, and lease.
local function removeRuns(ids)
  local records = redis.call('HMGET', freshKey, unpack(ids))
  local dones = redis.call('HMGET', doneKey, unpack(ids))
  local freshIds, doneIds, runKeys, leased = {}, {}, {}, {}
  for j = 1, #ids do
    local id = ids[j]
    if not seen[id] then
      seen[id] = true
      local record = records[j]
      if record then
        if select(5, parseFresh(record)) == queue then
          freshIds[#freshIds + 1] = id
          leased[#leased + 1] = id
        end
      elseif dones[j] then
        if doneQueue(dones[j]) == queue then
          doneIds[#doneIds + 1] = id
          leased[#leased + 1] = id
        end
      elseif redis.call('HGET', KEYS[1] .. id, 'queue') == queue then
        runKeys[#runKeys + 1] = KEYS[1] .. id
        leased[#leased + 1] = id
      end
    end
  end
  if gone then
    for j = 1, #leased do gone[#gone + 1] = leased[j] end
  end
  if #freshIds > 0 then redis.call('HDEL', freshKey, unpack(freshIds)) end
  if #doneIds > 0 then redis.call('HDEL', doneKey, unpack(doneIds)) end
  if #runKeys > 0 then redis.call('UNLINK', unpack(runKeys)) end
  -- A run of this queue has a lease only while in its running set.
  if #leased > 0 then redis.call('HDEL', leasesKey, unpack(leased)) end
  removed = removed + #freshIds + #doneIds + #runKeys
end

local function removeAll(ids)
  for from = 1, #ids, 500 do
    removeRuns({ unpack(ids, from, math.min(from + 499, #ids)) })
  end
end

-- The ids of index `key`: a successful index is a list of ids
-- (includes/successful-index), every other a sorted set.
local function indexIds(key, successful)
  if successful then return redis.call('LRANGE', key, 0, -1) end
  return redis.call('ZRANGE', key, 0, -1)
end

for s = 2, 7 do removeAll(indexIds(KEYS[s], s == 5)) end
removeAll(redis.call('LRANGE', KEYS[11], 0, -1))
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[11], KEYS[12])
-- The indexes of the queue's other TTL classes, and the classes.
for _, member in ipairs(redis.call('SMEMBERS', KEYS[17])) do
  local key, outcome = classKey(member, KEYS[5], KEYS[6])
  removeAll(indexIds(key, outcome == 'successful'))
  redis.call('DEL', key)
end
redis.call('DEL', KEYS[17])
if KEYS[18] then
  removeAll(indexIds(KEYS[18], false))
  redis.call('DEL', KEYS[18])
end
if KEYS[19] then
  for _, group in ipairs(redis.call('ZRANGE', KEYS[19], 0, -1)) do
    local heldKey = groupKey(KEYS[20], 'held', group)
    removeAll(redis.call('ZRANGE', heldKey, 0, -1))
    redis.call('DEL', heldKey, groupKey(KEYS[20], 'running', group))
  end
  redis.call('DEL', KEYS[19], KEYS[21], KEYS[22])
end
if gone and #gone > 0 then
  local now = nowMs()
  for from = 1, #gone, 500 do
    local ids = { unpack(gone, from, math.min(from + 499, #gone)) }
    local waited = redis.call('ZMSCORE', KEYS[14], unpack(ids))
    for j = 1, #ids do
      if waited[j] then publishFinished(KEYS[14], KEYS[15], now, ids[j], { 'removed', 'purged' }) end
    end
  end
end
recordReply(KEYS[13], ARGV[1], removed)
return removed
