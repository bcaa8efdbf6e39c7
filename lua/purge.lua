--[[
  purge: one bounded chunk of the removal of a queue's runs, with their
  records. The client calls it until it answers done, passing each answer's
  position to the next call.

  What a purge removes is what its queue held when its first call ran:
  every run stored before it (ready score's sequence part at most the `seq`
  counter that call read; see includes/purge-runs) that the purge finds not
  leased since. Runs enqueued after it began stay; so does a run leased by a
  claim after it began (its lease's claimedAt is not before the first call's
  clock; a lease the first call itself met is removed, as in an atomic purge).
  Leased runs of the start are removed; their workers' acknowledgements are
  then discarded as stale. Counters, metrics and rate logs stay. Every chunk
  is an ordinary atomic removal of some runs, so every invariant of
  docs/storage.md holds between chunks, and a purge that stops half way
  (its process died) leaves a consistent queue with some runs left.

  The phases, in this order (why: docs/storage.md, "Purging in chunks"):
  running, deferred, the ready list (from its head), the ready set, each
  limit group's held set, successful (from its head), failed, quarantined,
  cancelled, each TTL class's index, the WAITING flow nodes. A set is walked with ZSCAN, which
  returns every member present from the phase's start to its end; a list is
  cut from its head up to its first run stored since the start.

  KEYS      runPrefix, the queue's segments (ready, deferred, running,
            successful, failed, quarantined), wake (not written: a claim that
            finds nothing clears it), leases, fresh, readyList, withdrawn,
            callRecord, waiting, finished, done, resultClasses, cancelled, groups,
            groupPrefix, parked, grouped (not written: claims of a queue that had
            groups look for them), seq (read by the first call), flowWaiting,
            flowed, flowPrefix, queuePrefix, brokerWake (lua/keys.mjs)

  ARGV[1]   callId        unique to this call; the same for its copies
  ARGV[2]   queue         the queue's name
  ARGV[3]   budget        most segment entries this call looks at (ZSCAN's
                          COUNT is a hint: a small set is read whole)
  ARGV[4]   failedTtl     ms a failed run is kept (a flow node's dependents
                          the purge fails: includes/flow-settle)
  ARGV[5]   flowTtl       ms a flow is kept once it ends
  ARGV[6]   boundary      '' in the first call, then the answer's
  ARGV[7]   startMs       '' in the first call, then the answer's
  ARGV[8..10] phase, cursor, name: where the previous answer stopped ('1', '0', '')

  Flow nodes (docs/flows.md): a node removed counts as CANCELLED for its
  flow, whose record and edges see it so before its run goes: its
  dependents (of this queue or another) are settled by their edges'
  policies, so none waits on it forever. The queue's WAITING nodes are a
  phase of their own, the last. Only a queue that got flow nodes (its
  `flowed` flag) reads anything for them: one HMGET per run hash removed.

  Returns   { removed, boundary, startMs, phase, cursor, name, done (0/1) }.
            A replay of a call that ran answers as its first copy did.

  Complexity: O(budget) entries, each O(1) (a ZREM O(log N)); a per-name
  phase reads its names (limit groups, TTL classes) once per call.
]]
--- @include "includes/fresh"
--- @include "includes/done"
--- @include "includes/call-record"
--- @include "includes/now"
--- @include "includes/finished"
--- @include "includes/result-classes"
--- @include "includes/limit-groups"
--- @include "includes/ready-list"
--- @include "includes/lease"
--- @include "includes/purge-runs"
--- @include "includes/next-name"
--- @include "includes/flow-settle"
--- @keys

local first = recalledReply(callRecordKey, ARGV[1])
if first then
  local parts = {}
  for part in string.gmatch(first, '([^,]*),') do parts[#parts + 1] = part end
  parts[7] = string.match(first, '^[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,(.*)$')
  return { tonumber(parts[1]), parts[2], parts[3], tonumber(parts[4]), parts[5], parts[7], tonumber(parts[6]) }
end

local queue, budget = ARGV[2], tonumber(ARGV[3])
local firstCall = ARGV[6] == ''
local boundary = firstCall and (tonumber(redis.call('GET', seqKey)) or 0) or tonumber(ARGV[6])
local startMs = firstCall and nowMs() or tonumber(ARGV[7])
local phase, cursor, name = tonumber(ARGV[8]), ARGV[9], ARGV[10]
local PHASES = 11
-- Flow nodes removed are settled CANCELLED in their flows (includes/flow-settle).
local fx = redis.call('EXISTS', flowedKey) == 1
  and flowContext(nowMs(), runPrefix, flowPrefix, queuePrefix, waitingKey, finishedKey, tonumber(ARGV[4]),
    tonumber(ARGV[5]))
  or false
local looked, removed = 0, 0
local gone = redis.call('EXISTS', waitingKey) == 1 and {} or false

local function drop(ids, places)
  if fx then
    local work = {}
    for j = 1, #ids do
      if places[j] == 'hash' then work[#work + 1] = { ids[j], 'C', '' } end
    end
    -- A node of this queue its settling readies was stored before the purge
    -- began too: it goes as well (and is settled in turn), wherever the walk is.
    while #work > 0 do
      fx.readied = {}
      settleFlowNodes(fx, work)
      work = {}
      for _, node in ipairs(fx.readied) do
        if node[2] == queue then
          redis.call('ZREM', readyKey, node[1])
          redis.call('ZREM', deferredKey, node[1])
          ids[#ids + 1], places[#places + 1] = node[1], 'hash'
          work[#work + 1] = { node[1], 'C', '' }
        end
      end
    end
    fx.readied = nil
  end
  removed = removed + deleteRuns(freshKey, doneKey, leasesKey, runPrefix, ids, places)
  if gone then
    for j = 1, #ids do gone[#gone + 1] = ids[j] end
  end
end

-- Removes the old runs among `ids` (members of set `key`) and the members
-- no run of this queue holds. `keep(j)` spares the j-th (a lease granted
-- since the start); `unlist(id)` takes one member out (default ZREM).
local function sweepMembers(key, ids, keep, unlist)
  if #ids == 0 then return end
  local kinds, places = classifyRuns(freshKey, doneKey, runPrefix, queue, boundary, ids)
  local oldIds, oldPlaces, out = {}, {}, {}
  for j = 1, #ids do
    if kinds[j] ~= 'new' and not (keep and keep(j)) then
      out[#out + 1] = ids[j]
      if kinds[j] == 'old' then
        oldIds[#oldIds + 1], oldPlaces[#oldPlaces + 1] = ids[j], places[j]
      end
    end
  end
  if unlist then
    for j = 1, #out do unlist(out[j]) end
  elseif #out > 0 then
    redis.call('ZREM', key, unpack(out))
  end
  drop(oldIds, oldPlaces)
end

-- One ZSCAN step of set `key`; returns whether the walk of the set ended.
local function scanStep(key, keepLease, unlist)
  local reply = redis.call('ZSCAN', key, cursor, 'COUNT', math.max(budget - looked, 1))
  local ids = {}
  for j = 1, #reply[2], 2 do ids[#ids + 1] = reply[2][j] end
  looked = looked + math.max(#ids, 1)
  local keep
  if keepLease and not firstCall and #ids > 0 then
    local leases = redis.call('HMGET', leasesKey, unpack(ids))
    keep = function(j)
      local claimedAt = leases[j] and select(2, parseLease(leases[j]))
      return claimedAt ~= nil and claimedAt >= startMs
    end
  end
  sweepMembers(key, ids, keep, unlist)
  cursor = reply[1]
  return cursor == '0'
end

-- Cuts list `key` from its head while its runs are old; returns whether it
-- reached a run stored since, or the list's end. With tombstones (the ready
-- list), dead places are dropped and their tombstones consumed.
local function cutStep(key, withTombstones)
  local want = math.max(budget - looked, 1)
  local ids = redis.call('LRANGE', key, 0, want - 1)
  if #ids == 0 then return true end
  local dead = withTombstones and deadPlaces(withdrawnKey, ids) or {}
  local kinds, places = classifyRuns(freshKey, doneKey, runPrefix, queue, boundary, ids)
  local cut, oldIds, oldPlaces, reachedNew = 0, {}, {}, false
  for j = 1, #ids do
    if not dead[j] and kinds[j] == 'new' then
      reachedNew = true
      break
    end
    cut = j
    if not dead[j] and kinds[j] == 'old' then
      oldIds[#oldIds + 1], oldPlaces[#oldPlaces + 1] = ids[j], places[j]
    end
  end
  if withTombstones then buryPlaces(withdrawnKey, ids, dead, cut) end
  if cut > 0 then redis.call('LTRIM', key, cut, -1) end
  looked = looked + math.max(cut, 1)
  drop(oldIds, oldPlaces)
  return reachedNew or #ids < want
end

-- The held set of limit group `group`: parked runs leave it with their count.
local function unpark(group)
  return function(id) withdrawParked(groupPrefix, groupsKey, parkedKey, group, id) end
end

-- One step of a per-name phase: `names` its names, `step(name)` one chunk of
-- one name's walk (true when that walk ended).
local function namedStep(names, step)
  if cursor == 'next' or name == '' then
    local n = nextName(names, name)
    if not n then return true end
    name, cursor = n, '0'
  end
  if step(name) then cursor = 'next' end
  looked = looked + 1
  return false
end

local segments = { runningKey, deferredKey, false, readyKey, false, successfulKey, failedKey, quarantinedKey,
  cancelledKey, false, flowWaitingKey }
while phase <= PHASES and looked < budget do
  local ended
  if phase == 3 then
    ended = cutStep(readyListKey, true)
  elseif phase == 5 then
    ended = namedStep(redis.call('ZRANGE', groupsKey, 0, -1), function(group)
      return scanStep(groupKey(groupPrefix, 'held', group), false, unpark(group))
    end)
  elseif phase == 6 then
    ended = cutStep(successfulKey, false)
  elseif phase == 10 then
    ended = namedStep(redis.call('SMEMBERS', resultClassesKey), function(member)
      local key, outcome = classKey(member, successfulKey, failedKey)
      if outcome == 'successful' then return cutStep(key, false) end
      return scanStep(key, false)
    end)
  else
    ended = scanStep(segments[phase], phase == 1)
  end
  if ended then
    phase, cursor, name = phase + 1, '0', ''
  end
end

if fx then endFlowSettle(fx, brokerWakeKey) end
if gone and #gone > 0 then
  local now = nowMs()
  local waited = redis.call('ZMSCORE', waitingKey, unpack(gone))
  for j = 1, #gone do
    if waited[j] then publishFinished(waitingKey, finishedKey, now, gone[j], { 'removed', 'purged' }) end
  end
end
local done = phase > PHASES and 1 or 0
-- A queue left with no pending or leased run drops its limit groups' state
-- too, as an atomic purge did; with runs stored or claimed since, it stays
-- (their claims must still look for groups) and claims prune it.
if done == 1 and redis.call('ZCARD', readyKey) + redis.call('LLEN', readyListKey) + redis.call('ZCARD', deferredKey)
    + redis.call('ZCARD', runningKey) + (tonumber(redis.call('GET', parkedKey)) or 0) == 0 then
  for _, group in ipairs(redis.call('ZRANGE', groupsKey, 0, -1)) do
    redis.call('DEL', groupKey(groupPrefix, 'held', group), groupKey(groupPrefix, 'running', group))
  end
  redis.call('DEL', groupsKey, parkedKey, groupedKey)
end
-- As a trim does: a TTL class whose index is empty leaves the set (an
-- acknowledgement appending to it adds it again), so a purged queue keeps
-- no class it no longer uses.
if done == 1 then
  for _, member in ipairs(redis.call('SMEMBERS', resultClassesKey)) do
    if redis.call('EXISTS', (classKey(member, successfulKey, failedKey))) == 0 then
      redis.call('SREM', resultClassesKey, member)
    end
  end
end
local b, s = string.format('%d', boundary), string.format('%d', startMs)
recordReply(callRecordKey, ARGV[1], table.concat({ removed, b, s, phase, cursor, done, name }, ','))
return { removed, b, s, phase, cursor, name, done }
