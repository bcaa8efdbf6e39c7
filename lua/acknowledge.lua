--[[
  acknowledge: apply the outcomes of finished attempts, fenced by lease token.

  An outcome applies only while its lease holds: the leases hash holds the
  same token for the run and its deadline in the running set has not passed. The late result of an
  attempt whose lease expired (reaped or not yet) is discarded and counted as
  a stale acknowledgement, never applied. The reaper acknowledges under the
  token and short deadline of its own claim.

  KEYS      runPrefix (acknowledgements carry ids: batches of hundreds would
            otherwise send every run key), brokerWake (woken for new deferred
            runs), leases, fresh (a settled outcome that is kept moves the run
            to its run hash: includes/fresh); per queue: running, ready,
            deferred, wake, successful, failed, quarantined, stats, metrics,
            resultClasses (the class indexes are derived from successful and
            failed: includes/result-classes); then callRecord, waiting, finished
            (where a registered run is published when it settles), done; then
            per queue: keyPrefix (its `grouped` flag, `groups` index and
            `group:` prefix are derived from it; see includes/limit-groups)
            (lua/keys.mjs)

  ARGV[1]   Q             number of distinct queues
  ARGV[2]   successfulTtl ms a successful run is kept (0 = delete at once), by default
  ARGV[3]   failedTtl     ms a failed run is kept (0 = delete at once), by default
  ARGV[4]   callId        unique to this call; the same for its copies
  ARGV[5..] per item, an outcome code, then its values:
            S  queue index, id, token, return value JSON ('' = none)
            F  queue index, id, token, error JSON (appended to errors)
            R  queue index, id, token, error JSON, delay ms (READY after it)
            Q  queue index, id, token, error JSON or '', quarantine JSON
               (kept, no TTL, until requeued: the run cannot be executed as stored)
            +  queue index, token, ids joined by newlines: worker successes
               with no return value under one lease token (the common case:
               a claim's runs share their token; one value for the group
               instead of five per run; an id holding a newline comes as
               an S item instead)
            B  queue index, id, token: a start mark, not an outcome: the
               holder started the attempt, so an expiry of this lease now
               charges it (see reap.lua). Marks come after every outcome of
               a call. Applied while the lease holds; reported stale, but
               not counted, when it does not.
            K  ttl: not an outcome: the successes and failures of the items
               that follow (up to the next K) are kept `ttl` ms (their
               task's own result TTL), '' for the defaults above. Runs kept
               for another TTL than their outcome's default go to the index
               of their TTL class (includes/result-classes).
            The code is upper case for a worker's outcome, which ends a series
            of lease expiries (it resets the run's `recoveries` count), and
            lower case (f, r, q) for the reaper settling an expired lease.

  A run that succeeds in the attempt that took it from its fresh record is
  kept as a done record (includes/done): its fresh record moves into the done
  hash whole, behind the outcome, with no run hash written. Any other kept
  outcome settles into the run's hash.

  A finished run is kept for its TTL (done record or run hash, and index
  entry) and then removed with its index entry, by the acknowledgements of
  its queue and by brokers (trim.lua): never one without the other, so the
  finished indexes name exactly the finished runs of their queue. An index
  holds the runs of one TTL: a call trims each index it appended to.

  A run somebody waits on (registered in `waiting`) is published to
  `finished` with its fields when an outcome settles it (S, F, f, Q, q; not a
  retry), in this call, and its registration ends. With a TTL of 0 such a
  run is settled into its run hash all the same, so that its fields exist to
  publish, and then deleted like the others (no index entry).

  Returns   { now, stale_1, ... }: the 1-based positions of the items that were
            stale (discarded); every other item was applied

  A replay (the same call again: ioredis resends a command whose reply a
  dropped connection lost, and the acknowledger sends a failed batch again)
  finds the leases its first copy released gone, and would report every
  outcome stale, count it in `staleAcks` and warn. A replay's first item is
  always stale (the first copy released every lease it settled, and a lease
  is never granted again under its token), so when the first item is stale,
  and only then, the call looks for its record (includes/call-record): a
  replay answers what its first copy answered and writes nothing.

  Cost: the leases are checked with one HMGET, and one ZCOUNT per queue (a
  ZMSCORE instead when some lease of the queue is past its deadline), and
  released with one HDEL and one ZREM; runs that finish without history are
  deleted with one HDEL of their fresh records, and one DEL of run hashes
  only when some of them had one instead. Runs whose outcome is kept write a
  done record, all of them in one HSET, or else their run hash (settling the
  attempt: see includes/lease). Waiting costs a
  call one EXISTS when nobody waits; otherwise one ZREMRANGEBYSCORE and one
  ZMSCORE for the batch, and per registered run that settles, its fields read
  back and one entry. Runs kept for a TTL of their task's own cost one SADD
  per call, queue and TTL class, beside their index's append and trim.

  A lease of a run of a limit group that ends (any applied outcome) makes
  the group due at once when it holds parked runs (includes/limit-groups,
  freeGroup), and sets the queue's wake marker: a queue's `grouped` flag is
  read once per call, for a queue with a run released that had no fresh
  record (a grouped run never has one; none is read for a batch of first
  attempts that succeeded), and only a grouped queue's released runs have
  their group read, one HGET each, and one EXISTS per distinct group.

  Complexity: O(n log N) for n items.
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"
--- @include "includes/chunks"
--- @include "includes/metrics"
--- @include "includes/fresh"
--- @include "includes/done"
--- @include "includes/call-record"
--- @include "includes/trim"
--- @include "includes/result-classes"
--- @include "includes/finished"
--- @include "includes/limit-groups"

local rcall = redis.call
local format = string.format
local now = nowMs()
-- Times go to Redis as text written once with '%d', not as numbers, which
-- `redis.call` prints with '%.17g' through glibc's exact floating-point path
-- (see the note on numbers in enqueue.lua): a kept result wrote four of them
-- per run.
local nowText = format('%d', now)
local queueCount = tonumber(ARGV[1])
local successfulTtl, failedTtl = tonumber(ARGV[2]), tonumber(ARGV[3])
-- Expired finished runs one call removes per index at most: a backlog of
-- them (a queue quiet for a while) goes over several calls and broker passes.
local TRIM_PER_CALL = 200
--- @keys
local reply = { now }
local callId = ARGV[4]

-- First pass: the items, and their ids per queue; for a success or failure
-- whose task keeps it another TTL than its outcome's default (a K item), that
-- TTL (`ownTtlOf`: none on the common path, where every run keeps the defaults).
local codes, queues, ids, tokens, values, extras, ownTtlOf = {}, {}, {}, {}, {}, {}, {}
local idsByQueue, slotsByQueue = {}, {}
for q = 1, queueCount do idsByQueue[q], slotsByQueue[q] = {}, {} end
local a, n = 5, 0
local argc = #ARGV
local keep, anyOwn, anyKept = nil, false, false
while a <= argc do
  local code = ARGV[a]
  local q = tonumber(ARGV[a + 1])
  local qi, qs = idsByQueue[q], slotsByQueue[q]
  if code == 'K' then
    -- The TTL of the outcomes that follow, nil for '' (the defaults).
    keep = tonumber(ARGV[a + 1])
    a = a + 2
  elseif code == '+' then
    local token, joined = ARGV[a + 2], ARGV[a + 3]
    a = a + 4
    local qn = #qi
    local at = 1
    local first = n + 1
    repeat
      local stop = findIn(joined, '\n', at, true)
      local id = cut(joined, at, (stop or 0) - 1)
      n, qn = n + 1, qn + 1
      codes[n], queues[n], ids[n], tokens[n], values[n] = 'S', q, id, token, ''
      qi[qn], qs[qn] = id, n
      if stop then at = stop + 1 end
    until not stop
    -- A group's runs share their TTL: one test per group on the common path.
    if keep and keep ~= successfulTtl then
      for j = first, n do ownTtlOf[j] = keep end
      anyOwn, anyKept = true, anyKept or keep > 0
    end
  else
    n = n + 1
    codes[n], queues[n], ids[n], tokens[n], values[n] = code, q, ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
    if code == 'B' then
      a = a + 4
    elseif code == 'S' or code == 'F' or code == 'f' then
      a = a + 5
    else
      extras[n] = ARGV[a + 5]
      a = a + 6
    end
    qi[#qi + 1] = ids[n]
    qs[#qs + 1] = n
    if keep and ((code == 'S' and keep ~= successfulTtl) or ((code == 'F' or code == 'f') and keep ~= failedTtl)) then
      ownTtlOf[n] = keep
      anyOwn, anyKept = true, anyKept or keep > 0
    end
  end
end
-- Some finished run may be deleted at once (a TTL of 0): checked per run only then.
local mayDrop = successfulTtl == 0 or failedTtl == 0 or anyOwn
local keepSuccessful, keepFailed = successfulTtl > 0, failedTtl > 0

-- The leases and their deadlines, a chunk per call.
local leaseOf, deadlineOf = inChunks('HMGET', leasesKey, ids), {}
for q = 1, queueCount do
  local qs = slotsByQueue[q]
  local runningKey = queueKeys(q).running
  if #qs > 0 and rcall('ZCOUNT', runningKey, '-inf', '(' .. now) == 0 then
    -- No lease of the queue is past its deadline, so none of the batch is:
    -- one count instead of a score per run, each of which Redis would print
    -- (as a double, through printf) for Lua to parse back. A lease value and
    -- its running entry are written and removed together, so a held lease
    -- is in the set.
    for j = 1, #qs do deadlineOf[qs[j]] = now end
  elseif #qs > 0 then
    local got = inChunks('ZMSCORE', runningKey, idsByQueue[q])
    for j = 1, #qs do deadlineOf[qs[j]] = got[j] end
  end
end

-- Which runs of the batch somebody waits on (false for the others): nobody,
-- at the cost of one EXISTS, unless some registration is live. Expired ones
-- go first, so the key disappears once nobody waits.
local waitedOf
if rcall('EXISTS', waitingKey) == 1 then
  rcall('ZREMRANGEBYSCORE', waitingKey, '-inf', '(' .. nowText)
  waitedOf = inChunks('ZMSCORE', waitingKey, ids)
end

-- Per queue: ids to release from running, history additions, READY and
-- deferred additions, and counters.
local released, successful, failed, quarantined, ready, deferred = {}, {}, {}, {}, {}, {}
local succeeded, failures, retries, held, stale = {}, {}, {}, {}, {}
for q = 1, queueCount do
  released[q], successful[q], failed[q], quarantined[q], ready[q], deferred[q] = {}, {}, {}, {}, {}, {}
  succeeded[q], failures[q], retries[q], held[q], stale[q] = 0, 0, 0, 0, 0
end
local releasedIds, finished, freshIds, settledIds = {}, {}, {}, {}
-- Done records to write: id, record pairs.
local dones = {}
local doneHeads = {}
-- Run hashes of waited runs settled only to be published (TTL 0).
local published = {}
-- Start marks to write: lease id, value pairs.
local marks = {}
local anyDeferred = false
-- Per queue: whether a run released may be of a limit group (it had no fresh
-- record, or its record was not read): a grouped run never has one.
local mayBeGrouped = {}
-- Entries of the indexes of TTL classes other than the defaults, per queue:
-- class members in the order first met, and member → entries.
local classed = {}

-- Appends the values of an index entry (the id of a success, or finish
-- time and id of a failure) to the index of the TTL class of `ttl`
-- ms, its task's, of outcome `outcome` (successful, failed) of queue `q`;
-- returns false, appending nothing, for a TTL of 0 (not kept).
local function keepOwn(q, outcome, ttl, ...)
  if ttl == 0 then return false end
  local byClass = classed[q]
  if not byClass then
    byClass = { members = {} }
    classed[q] = byClass
  end
  local member = outcome .. ':' .. format('%d', ttl)
  local entries = byClass[member]
  if not entries then
    entries = {}
    byClass[member] = entries
    byClass.members[#byClass.members + 1] = member
  end
  for _, value in ipairs({ ... }) do entries[#entries + 1] = value end
  return true
end

-- Outcomes that are kept settle into the run hash, taking a fresh run's
-- record along: read the records of the batch at once when results are kept.
local freshOf
if keepSuccessful or keepFailed or anyKept then freshOf = inChunks('HMGET', freshKey, ids) end

for i = 1, n do
  local code, q, id, value, extra = codes[i], queues[i], ids[i], values[i], extras[i]
  local lease = leaseOf[i]
  if code == 'B' then
    -- A start mark changes no run: a stale one is only reported.
    if not settledIds[id] and leaseHolds(lease, tokens[i], deadlineOf[i], now) then
      local flag = select(5, parseLease(lease))
      if flag == '0' or flag == '3' then
        marks[#marks + 1] = id
        marks[#marks + 1] = flaggedLease(lease, '1')
      end
    else
      reply[#reply + 1] = i
    end
  -- The leases were read before any was applied: a second outcome for one
  -- run in the same batch must not pass on the same reading.
  elseif settledIds[id] or not leaseHolds(lease, tokens[i], deadlineOf[i], now) then
    -- Nothing is written yet: a replay returns before it changes anything.
    if i == 1 then
      local first = recalledNumbers(callRecordKey, callId)
      if first then return first end
    end
    reply[#reply + 1] = i
    stale[q] = stale[q] + 1
  else
    settledIds[id] = true
    local r = released[q]
    r[#r + 1] = id
    releasedIds[#releasedIds + 1] = id
    -- A retry does not settle the run: its waiter waits on.
    local waited = waitedOf and waitedOf[i] and code ~= 'R' and code ~= 'r'
    -- A success or failure is kept for its outcome's default TTL, in its
    -- queue's index, unless its task keeps it for its own (then in the index
    -- of that TTL's class: see keepOwn); one of 0 is deleted at once.
    local dropped = mayDrop and ((code == 'S' and (anyOwn and ownTtlOf[i] or successfulTtl) == 0)
      or ((code == 'F' or code == 'f') and (anyOwn and ownTtlOf[i] or failedTtl) == 0))
    if dropped and not waited then
      -- Nothing is kept of a finished run: no need to read or settle it.
      finished[#finished + 1] = id
      mayBeGrouped[q] = true
      if code == 'S' then succeeded[q] = succeeded[q] + 1 else failures[q] = failures[q] + 1 end
    else
      local record
      if freshOf then record = freshOf[i] else record = rcall('HGET', freshKey, id) end
      if not record then mayBeGrouped[q] = true end
      if code == 'S' and record then
        -- Succeeded from its fresh record: a done record, its fresh record
        -- moved in unparsed (includes/done). Its lease follows no expiry (the
        -- reaper's recovery moves a run to its run hash): nothing to reset.
        local done
        if value == '' then
          done = doneHead(doneHeads, nowText, lease) .. record
        else
          local _, _, _, _, _, worker, claimedAtText, attemptText = parseLease(lease)
          done = doneRecord(nowText, claimedAtText, attemptText, worker, value, record)
        end
        if anyOwn and ownTtlOf[i] then
          if keepOwn(q, 'successful', ownTtlOf[i], id) then
            dones[#dones + 1] = id
            dones[#dones + 1] = done
          end
        elseif keepSuccessful then
          local h = successful[q]
          h[#h + 1] = id
          dones[#dones + 1] = id
          dones[#dones + 1] = done
        end
        succeeded[q] = succeeded[q] + 1
        freshIds[#freshIds + 1] = id
        if waited then publishFinished(waitingKey, finishedKey, now, id, doneFields(done)) end
      else
        local runKey = runPrefix .. id
        local _, _, attempt, recoveries, _, worker, claimedAtText, attemptText = parseLease(lease)
        -- A worker's outcome ends a series of lease expiries; the reaper's does not.
        if recoveries > 0 and (code == 'S' or code == 'F' or code == 'R' or code == 'Q') then
          rcall('HDEL', runKey, 'recoveries', 'startedToken')
        end
        local f
        -- The record's parts, parsed once: its score here, the run hash's fields below.
        local enqueuedAt, score, leaseTtl, runAfter, recordQueue, payload
        if record then
          -- Never settled: no errors or workers yet; its score is in the record.
          enqueuedAt, score, leaseTtl, runAfter, recordQueue, payload = parseFresh(record)
          f = { false, score, false }
        elseif code == 'S' and attempt == 1 then
          -- A successful first attempt needs nothing of the stored run.
          f = {}
        else
          f = rcall('HMGET', runKey, 'errors', 'score', 'workers')
        end
        local fields
        if code == 'S' then
          fields = { 'status', 'SUCCESSFUL', 'finishedAt', nowText }
          if value ~= '' then
            fields[5] = 'result'
            fields[6] = value
          end
          if anyOwn and ownTtlOf[i] then
            keepOwn(q, 'successful', ownTtlOf[i], id)
          elseif keepSuccessful then
            local h = successful[q]
            h[#h + 1] = id
          end
          succeeded[q] = succeeded[q] + 1
        elseif code == 'F' or code == 'f' then
          fields = { 'status', 'FAILED', 'finishedAt', nowText, 'errors', appendFragment(f[1], value) }
          if anyOwn and ownTtlOf[i] then
            keepOwn(q, 'failed', ownTtlOf[i], nowText, id)
          elseif keepFailed then
            local h = failed[q]
            h[#h + 1] = nowText
            h[#h + 1] = id
          end
          failures[q] = failures[q] + 1
        elseif code == 'Q' or code == 'q' then
          local errors = f[1] or ''
          if value ~= '' then errors = appendFragment(f[1], value) end
          fields = { 'status', 'QUARANTINED', 'quarantinedAt', nowText, 'quarantine', extra, 'errors', errors }
          local h = quarantined[q]
          h[#h + 1] = nowText
          h[#h + 1] = id
          held[q] = held[q] + 1
        else
          fields = { 'status', 'READY', 'errors', appendFragment(f[1], value) }
          local delay = tonumber(extra)
          if delay > 0 then
            local due = format('%d', now + delay)
            fields[5] = 'runAfter'
            fields[6] = due
            local d = deferred[q]
            d[#d + 1] = due
            d[#d + 1] = id
            anyDeferred = true
          else
            if not record then rcall('HDEL', runKey, 'runAfter') end
            local rd = ready[q]
            rd[#rd + 1] = f[2]
            rd[#rd + 1] = id
          end
          retries[q] = retries[q] + 1
        end
        settledAttemptFields(fields, claimedAtText, attemptText, worker, f[3])
        if record then
          -- The run moves to its run hash (a retry sets its own runAfter).
          local keepRunAfter = code ~= 'R' and code ~= 'r'
          freshPartsFields(fields, keepRunAfter, enqueuedAt, score, leaseTtl, runAfter, recordQueue, payload)
          freshIds[#freshIds + 1] = id
        end
        -- No TTL: a finished run goes with its index entry (includes/trim).
        rcall('HSET', runKey, unpack(fields))
        if waited then
          publishFinished(waitingKey, finishedKey, now, id, rcall('HGETALL', runKey))
          -- With a TTL of 0 a finished run is not kept (a quarantined one is).
          if dropped then published[#published + 1] = runKey end
        end
      end
    end
  end
end

-- Leases of runs of limit groups ended: a group holding parked runs becomes
-- due at once. Only a queue whose `grouped` flag is set holds such leases (a
-- claim sets it before it leases a run of a group, and a purge drops it only
-- with no lease left), and only runs without a fresh record may be grouped:
-- a batch of first attempts that succeeded reads nothing more, others one
-- EXISTS a call. Read before the run hashes of finished runs are deleted below.
for q = 1, queueCount do
  local r = released[q]
  local keyPrefix = queueKeys(q).keyPrefix
  if mayBeGrouped[q] and rcall('EXISTS', keyPrefix .. 'grouped') == 1 then
    local groupPrefix, groupsKey = keyPrefix .. 'group:', keyPrefix .. 'groups'
    local met, freed = {}, false
    for j = 1, #r do
      local group = rcall('HGET', runPrefix .. r[j], 'group')
      if group and not met[group] then
        met[group] = true
        freed = freeGroup(groupPrefix, groupsKey, group) or freed
      end
    end
    if freed then rcall('ZADD', queueKeys(q).wake, 0, 'w') end
  end
end

inChunks('HDEL', leasesKey, releasedIds)
inChunks('HSET', leasesKey, marks)
-- A finished run is deleted whole: its fresh record or its run hash, for a
-- run has one or the other, never both (see includes/fresh). When each of
-- them still had its fresh record, the rule for a first attempt, there is no
-- run hash to delete, and no run key is built.
local _, freshFinished = inChunks('HDEL', freshKey, finished)
if freshFinished < #finished then
  local runKeys = {}
  for j = 1, #finished do runKeys[j] = runPrefix .. finished[j] end
  inChunks('DEL', false, runKeys)
end
inChunks('HDEL', freshKey, freshIds)
inChunks('HSET', doneKey, dones)
inChunks('DEL', false, published)

-- Appends `entries` to finished index `key` of `outcome` (a list of ids for
-- successes, score and id pairs for failures) and trims it for `ttl`.
local function keepIn(outcome, key, entries, ttl)
  inChunks(outcome == 'successful' and 'RPUSH' or 'ZADD', key, entries)
  trimIndex(outcome, key, runPrefix, doneKey, now - ttl, TRIM_PER_CALL)
end

for q = 1, queueCount do
  local k = queueKeys(q)
  inChunks('ZREM', k.running, released[q])
  if #ready[q] > 0 then
    inChunks('ZADD', k.ready, ready[q])
    rcall('ZADD', k.wake, 0, 'w')
  end
  inChunks('ZADD', k.deferred, deferred[q])
  if #successful[q] > 0 then keepIn('successful', k.successful, successful[q], successfulTtl) end
  if #failed[q] > 0 then keepIn('failed', k.failed, failed[q], failedTtl) end
  local byClass = classed[q]
  if byClass then
    -- The class joins the queue's classes in the call that appends to its index.
    rcall('SADD', k.resultClasses, unpack(byClass.members))
    for _, member in ipairs(byClass.members) do
      local key, outcome, ttl = classKey(member, k.successful, k.failed)
      keepIn(outcome, key, byClass[member], ttl)
    end
  end
  -- Quarantined runs are never trimmed: they wait for an operator.
  inChunks('ZADD', k.quarantined, quarantined[q])
  local statsKey = k.stats
  if succeeded[q] > 0 then rcall('HINCRBY', statsKey, 'succeeded', succeeded[q]) end
  if failures[q] > 0 then rcall('HINCRBY', statsKey, 'failed', failures[q]) end
  if retries[q] > 0 then rcall('HINCRBY', statsKey, 'retried', retries[q]) end
  if held[q] > 0 then rcall('HINCRBY', statsKey, 'quarantined', held[q]) end
  if stale[q] > 0 then rcall('HINCRBY', statsKey, 'staleAcks', stale[q]) end
  local metrics = k.metrics
  countMinute(metrics, now, 'succeeded', succeeded[q])
  countMinute(metrics, now, 'failed', failures[q])
  countMinute(metrics, now, 'retried', retries[q])
  countMinute(metrics, now, 'quarantined', held[q])
end
if anyDeferred then rcall('ZADD', brokerWakeKey, 0, 'w') end
recordReply(callRecordKey, callId, table.concat(reply, ','))

return reply
