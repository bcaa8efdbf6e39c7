--- @include "includes/fresh"

-- A run that succeeded in the attempt that took it from its fresh record (no
-- attempt had settled before: the common case) is kept as one field of the
-- backend's `done` hash, not as a run hash of its own:
--
--   finishedAt|+claimedFor|attempt|workerLength|resultLength|<worker><result><fresh record>
--
-- claimedFor is finishedAt - claimedAt, in ms: a few digits where the claim
-- time took thirteen; worker is the body of its JSON string, the quotes
-- around it left out, as every JSON string has them (layout 4: a layout-3
-- record holds claimedAt itself, with no '+', and its worker quoted; it reads
-- the same).
-- The fresh record moves in whole (its parts are never parsed on the way),
-- and the outcome goes in front of it as one value: a field of a hash that
-- exists already, where a run hash was a new key of sixteen fields. worker
-- (JSON) and result (JSON, or '' for none) are cut by their lengths, as either
-- may hold '|'. Any other settled run (a failure, a quarantine, a success
-- after an earlier attempt settled or a lease expired) keeps its run hash,
-- and so do runs stored before layout 3: readers look in the fresh hash, the
-- done hash and the run hash, and a run is in exactly one of them.
local function doneRecord(finishedAt, claimedAt, attempt, worker, result, fresh)
  local body = cut(worker, 2, -2)
  return finishedAt .. '|+' .. string.format('%d', tonumber(finishedAt) - tonumber(claimedAt)) .. '|' .. attempt .. '|'
    .. #body .. '|' .. #result .. '|' .. body .. result .. fresh
end

-- The head of the done record of a success with no return value, finished
-- at `finishedAt` under lease value `lease` (needs includes/lease, included
-- by the script before this file), made once per
-- distinct value and kept in `heads`: a claim's runs share their lease but
-- for its started flag, and such successes are the common case.
local function doneHead(heads, finishedAt, lease)
  local head = heads[lease]
  if not head then
    local _, _, _, _, _, worker, claimedAt, attempt = parseLease(lease)
    head = doneRecord(finishedAt, claimedAt, attempt, worker, '', '')
    heads[lease] = head
  end
  return head
end

-- The parts of a done record: finishedAt, claimedAt, attempt (text), worker,
-- result ('' for none) and the fresh record.
local function parseDone(record)
  local finishedAt, relative, claimedAt, attempt, workerLength, resultLength, at =
    string.match(record, '^(%d+)|(%+?)(%d+)|(%d+)|(%d+)|(%d+)|()')
  local resultAt = at + tonumber(workerLength)
  local freshAt = resultAt + tonumber(resultLength)
  local worker = cut(record, at, resultAt - 1)
  if relative == '+' then
    claimedAt = string.format('%d', tonumber(finishedAt) - tonumber(claimedAt))
    worker = '"' .. worker .. '"'
  end
  return finishedAt, claimedAt, attempt, worker, cut(record, resultAt, freshAt - 1), cut(record, freshAt)
end

-- The queue of a done record's run.
local function doneQueue(record)
  return select(5, parseFresh(select(6, parseDone(record))))
end

-- The run hash fields (HGETALL pairs) a done record stands for: what a run
-- hash settled by the same attempt would hold.
local function doneFields(record)
  local finishedAt, claimedAt, attempt, worker, result, fresh = parseDone(record)
  local fields = { 'status', 'SUCCESSFUL', 'finishedAt', finishedAt, 'attempts', attempt, 'lastAttemptedAt', claimedAt,
    'workers', worker }
  if attempt == '1' then fields[#fields + 1], fields[#fields + 2] = 'startedAt', claimedAt end
  if result ~= '' then fields[#fields + 1], fields[#fields + 2] = 'result', result end
  return freshFields(fields, fresh, true)
end

-- Where run `id` stands, as `load` reads it in the client: its fields
-- (HGETALL pairs) once it is settled (SUCCESSFUL, FAILED, QUARANTINED or CANCELLED: what
-- an outcome leaves for good; a done record is settled), true while it is
-- pending (a fresh record is never settled; a run hash with another status,
-- or none, is READY, deferred or leased), false when no run has the id.
local function settledRun(freshKey, doneKey, runKey, id)
  if redis.call('HEXISTS', freshKey, id) == 1 then return true end
  local done = redis.call('HGET', doneKey, id)
  if done then return doneFields(done) end
  local status = redis.call('HGET', runKey, 'status')
  if status == 'SUCCESSFUL' or status == 'FAILED' or status == 'QUARANTINED' or status == 'CANCELLED' then
    return redis.call('HGETALL', runKey)
  end
  return status ~= false or redis.call('EXISTS', runKey) == 1
end
