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

  What follows from the outcomes is done by the call's effects
  (includes/effects): the finished feed for waiters (includes/effect-feed),
  the release of limit groups (effect-groups), the finished indexes by TTL
  class (effect-index), wake-ups (effect-wake) and counts (effect-counts),
  each an include that holds its rule and its cost.

  Cost: the leases are checked with one HMGET, and one ZCOUNT per queue (a
  ZMSCORE instead when some lease of the queue is past its deadline), and
  released with one HDEL and one ZREM; runs that finish without history are
  deleted with one HDEL of their fresh records, and one DEL of run hashes
  only when some of them had one instead. Runs whose outcome is kept write a
  done record, all of them in one HSET, or else their run hash (settling the
  attempt: see includes/lease and includes/ack-settle).

  Complexity: O(n log N) for n items.
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"
--- @include "includes/fresh"
--- @include "includes/done"
--- @include "includes/call-record"
--- @include "includes/ack-items"
--- @include "includes/effects"
--- @include "includes/effect-feed"
--- @include "includes/effect-groups"
--- @include "includes/effect-index"
--- @include "includes/effect-wake"
--- @include "includes/effect-counts"
--- @include "includes/effect-flow"
--- @include "includes/ack-settle"
--- @include "includes/ack-release"

local rcall = redis.call
local now = nowMs()
-- Times go to Redis as text written once with '%d', not as numbers, which
-- `redis.call` prints with '%.17g' through glibc's exact floating-point path
-- (see the note on numbers in enqueue.lua): a kept result wrote four of them
-- per run.
local nowText = string.format('%d', now)
local queueCount = tonumber(ARGV[1])
local successfulTtl, failedTtl = tonumber(ARGV[2]), tonumber(ARGV[3])
--- @keys
local reply = { now }
local callId = ARGV[4]
-- The effects (includes/effects), each phase called here by name, in the
-- order they act: read (feed), released (groups), write (wake, index,
-- counts), finish (wake). Called directly rather than through a loop over
-- a list: the lookups of a list cost a 10-queue acknowledgement 0.7% more
-- Redis instructions (docs/optimisations.md, step 62).

local items = readAckItems(queueCount, successfulTtl, failedTtl)
local codes, queues, ids, tokens, values, extras = items.codes, items.queues, items.ids, items.tokens, items.values,
  items.extras
local n, anyOwn, ownTtlOf = items.n, items.anyOwn, items.ownTtlOf
-- Some finished run may be deleted at once (a TTL of 0): checked per run only then.
local mayDrop = successfulTtl == 0 or failedTtl == 0 or anyOwn
local keepSuccessful, keepFailed = successfulTtl > 0, failedTtl > 0

-- The leases the items name and their deadlines (includes/ack-items).
local leaseOf, deadlineOf = readAckLeases(items, queueCount, queueKeys, leasesKey, now)

-- The call's context (includes/effects). Per queue: ids to release from
-- running, finished index entries, READY, deferred and quarantined additions,
-- and counters; whether a run released may be of a limit group (it had no
-- fresh record, or its record was not read: a grouped run never has one).
local ack = { now = now, nowText = nowText, ids = ids, runPrefix = runPrefix, doneKey = doneKey,
  waitingKey = waitingKey, finishedKey = finishedKey, brokerWakeKey = brokerWakeKey, successfulTtl = successfulTtl,
  failedTtl = failedTtl, keepSuccessful = keepSuccessful, keepFailed = keepFailed, anyOwn = anyOwn,
  ownTtlOf = ownTtlOf, anyDeferred = false, released = {}, successful = {}, failed = {}, quarantined = {},
  ready = {}, deferred = {}, classed = {}, succeeded = {}, failures = {}, retries = {}, held = {}, stale = {},
  mayBeGrouped = {}, freshIds = {}, published = {} }
local released, successful, succeeded, failures, stale = ack.released, ack.successful, ack.succeeded, ack.failures,
  ack.stale
for q = 1, queueCount do
  released[q], successful[q], ack.failed[q], ack.quarantined[q], ack.ready[q], ack.deferred[q] = {}, {}, {}, {}, {}, {}
  succeeded[q], failures[q], ack.retries[q], ack.held[q], stale[q] = 0, 0, 0, 0, 0
end
feedEffect.read(ack)
local waitedOf, mayBeGrouped, freshIds = ack.waitedOf, ack.mayBeGrouped, ack.freshIds
local releasedIds, finished, settledIds = {}, {}, {}
-- Done records to write: id, record pairs.
local dones = {}
local doneHeads = {}
-- Start marks to write: lease id, value pairs.
local marks = {}

-- Outcomes that are kept settle into the run hash, taking a fresh run's
-- record along: read the records of the batch at once when results are kept.
local freshOf
if keepSuccessful or keepFailed or items.anyKept then freshOf = inChunks('HMGET', freshKey, ids) end

for i = 1, n do
  local code, q, id, value = codes[i], queues[i], ids[i], values[i]
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
    settledIds[id] = i
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
          if keepOwn(ack, q, 'successful', ownTtlOf[i], id) then
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
        settleRunHash(ack, i, code, q, id, value, extras[i], lease, record, waited, dropped)
      end
    end
  end
end

for q = 1, queueCount do groupsEffect.released(ack, q, queueKeys(q)) end
ack.items, ack.appliedAt = items, settledIds
flowEffect.released(ack, queueCount, queueKeys, flowPrefix, queuePrefix)

-- The leases end, and what is not kept goes (includes/ack-release).
releaseAndRemove(ack, leasesKey, freshKey, releasedIds, marks, finished, dones)

for q = 1, queueCount do
  local k = queueKeys(q)
  inChunks('ZREM', k.running, released[q])
  inChunks('ZADD', k.ready, ack.ready[q])
  inChunks('ZADD', k.deferred, ack.deferred[q])
  -- Quarantined runs are never trimmed: they wait for an operator.
  inChunks('ZADD', k.quarantined, ack.quarantined[q])
  wakeEffect.write(ack, q, k)
  indexEffect.write(ack, q, k)
  countsEffect.write(ack, q, k)
end
wakeEffect.finish(ack)
recordReply(callRecordKey, callId, table.concat(reply, ','))

return reply
