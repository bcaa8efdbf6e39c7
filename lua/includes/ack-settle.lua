--- @include "includes/append"
--- @include "includes/lease"
--- @include "includes/fresh"
--- @include "includes/effect-feed"
--- @include "includes/effect-index"

-- An applied outcome that settles into the run's hash (acknowledge.lua): any
-- outcome but a success from a fresh record (a done record) and a finished
-- run not kept nor waited on. The run hash records the settled attempt
-- (includes/lease, settledAttemptFields), its status and what the outcome
-- keeps (result, errors, quarantine, a retry's due time); a fresh run moves
-- its record in (includes/fresh). Called per such run: a first attempt that
-- succeeds from its fresh record, the common case, never comes here.
--
-- Item i (code, queue q, id, value, extra) under lease value `lease`;
-- `record` its fresh record or false; `waited`: somebody waits on it;
-- `dropped`: its TTL is 0 (settled only to be published). Adds the run to
-- its queue's segment and counts in `ack`.
local function settleRunHash(ack, i, code, q, id, value, extra, lease, record, waited, dropped)
  local nowText = ack.nowText
  local runKey = ack.runPrefix .. id
  local _, _, attempt, recoveries, _, worker, claimedAtText, attemptText = parseLease(lease)
  -- A worker's outcome ends a series of lease expiries; the reaper's does not.
  if recoveries > 0 and (code == 'S' or code == 'F' or code == 'R' or code == 'Q') then
    redis.call('HDEL', runKey, 'recoveries', 'startedToken')
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
    f = redis.call('HMGET', runKey, 'errors', 'score', 'workers')
  end
  local ownTtl = ack.anyOwn and ack.ownTtlOf[i]
  local fields
  if code == 'S' then
    fields = { 'status', 'SUCCESSFUL', 'finishedAt', nowText }
    if value ~= '' then
      fields[5] = 'result'
      fields[6] = value
    end
    if ownTtl then
      keepOwn(ack, q, 'successful', ownTtl, id)
    elseif ack.keepSuccessful then
      local h = ack.successful[q]
      h[#h + 1] = id
    end
    ack.succeeded[q] = ack.succeeded[q] + 1
  elseif code == 'F' or code == 'f' then
    fields = { 'status', 'FAILED', 'finishedAt', nowText, 'errors', appendFragment(f[1], value) }
    if ownTtl then
      keepOwn(ack, q, 'failed', ownTtl, nowText, id)
    elseif ack.keepFailed then
      local h = ack.failed[q]
      h[#h + 1] = nowText
      h[#h + 1] = id
    end
    ack.failures[q] = ack.failures[q] + 1
  elseif code == 'Q' or code == 'q' then
    local errors = f[1] or ''
    if value ~= '' then errors = appendFragment(f[1], value) end
    fields = { 'status', 'QUARANTINED', 'quarantinedAt', nowText, 'quarantine', extra, 'errors', errors }
    local h = ack.quarantined[q]
    h[#h + 1] = nowText
    h[#h + 1] = id
    ack.held[q] = ack.held[q] + 1
  else
    fields = { 'status', 'READY', 'errors', appendFragment(f[1], value) }
    local delay = tonumber(extra)
    if delay > 0 then
      local due = string.format('%d', ack.now + delay)
      fields[5] = 'runAfter'
      fields[6] = due
      local d = ack.deferred[q]
      d[#d + 1] = due
      d[#d + 1] = id
      ack.anyDeferred = true
    else
      if not record then redis.call('HDEL', runKey, 'runAfter') end
      local rd = ack.ready[q]
      rd[#rd + 1] = f[2]
      rd[#rd + 1] = id
    end
    ack.retries[q] = ack.retries[q] + 1
  end
  settledAttemptFields(fields, claimedAtText, attemptText, worker, f[3])
  if record then
    -- The run moves to its run hash (a retry sets its own runAfter).
    local keepRunAfter = code ~= 'R' and code ~= 'r'
    freshPartsFields(fields, keepRunAfter, enqueuedAt, score, leaseTtl, runAfter, recordQueue, payload)
    ack.freshIds[#ack.freshIds + 1] = id
  end
  -- No TTL: a finished run goes with its index entry (includes/trim).
  redis.call('HSET', runKey, unpack(fields))
  if waited then
    publishFinished(ack.waitingKey, ack.finishedKey, ack.now, id, redis.call('HGETALL', runKey))
    -- With a TTL of 0 a finished run is not kept (a quarantined one is).
    if dropped then ack.published[#ack.published + 1] = runKey end
  end
end
