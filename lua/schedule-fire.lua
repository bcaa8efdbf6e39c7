--[[
  schedule-fire: fire one due slot of a schedule, or only move its next slot
  on, if the schedule is still where the caller read it.

  Any number of processes run schedules; each reads a due schedule, computes
  with the cron library what to do (which slot to fire, the slot after it)
  and calls this script. The call applies only while the schedule's
  definition (`digest`) and stored next slot (`next`) are those the caller
  read (a compare-and-set): of several processes that read the same slot,
  exactly one fires it, and the others find it moved on and write nothing.
  So a slot is fired once, whoever gets there first, with no leader.

  KEYS      schedule, schedules, seq, runPrefix (the previous run's hash is
            derived from it), fresh, done, ready, readyList, wake, stats, metrics
            (of the run's queue: a scheduled run is ready at once, as an
            enqueue without a delay stores it), codeSchedules (a code schedule
            that fires is added, so that one declared before the index existed
            is found by the declarations from then on) (lua/keys.mjs)

  ARGV[1]   schedule id   (its member of `schedules`)
  ARGV[2]   digest        the definition the caller planned with
  ARGV[3]   next          the stored next slot the caller read ('' = to plan)
  ARGV[4]   slot          the slot to fire (epoch ms), '' to fire none
  ARGV[5]   runId         the run's id (the schedule's id and the slot: one id per slot)
  ARGV[6]   following     the new next slot (epoch ms), or 'end' when there is none
  ARGV[7]   skipped       slots passed over by this call (catch-up), added to `skipped`
  ARGV[8]   overlap       '1': do not fire while the previous run is pending or running
  ARGV[9]   limit         most runs the schedule fires, 0 = no limit
  ARGV[10]  queue         the run's queue (whose keys the call passes)
  ARGV[11]  priority      -100..100
  ARGV[12]  leaseTtl      lease override in ms, '' = the backend default
  ARGV[13]  payload       the run's encoded payload (JSON, computed at upsert)
  ARGV[14]  firedBy       the caller's worker id, kept as `lastBy` (for operators and tests)

  Returns   { outcome, now }: outcome 'fired' (a run was enqueued), 'moved'
            (the schedule is gone, was redefined or another call moved it:
            nothing written), 'advanced' (no slot to fire: next moved on),
            'overlap' (the previous run is still pending or running: the slot
            is skipped), 'limit' (the schedule fired `limit` runs: it ends),
            'exists' (a run has the slot's id already: the slot is passed).

  Complexity: O(1), O(log N) for a ZADD.
]]
--- @include "includes/now"
--- @include "includes/metrics"
--- @keys

local PRIORITY_SPAN = 17592186044416
local rcall, format = redis.call, string.format
local id, digest, expected = ARGV[1], ARGV[2], ARGV[3]
local slot, runId, following = ARGV[4], ARGV[5], ARGV[6]
local now = nowMs()

local state = rcall('HMGET', scheduleKey, 'digest', 'next', 'runs', 'lastRun', 'source')
if state[1] ~= digest or (state[2] or '') ~= expected then return { 'moved', now } end
if state[5] == 'code' then rcall('SADD', codeSchedulesKey, id) end

local function advance(outcome, extra)
  local fields = { 'next', following }
  if tonumber(ARGV[7]) > 0 or outcome == 'overlap' then
    rcall('HINCRBY', scheduleKey, 'skipped', (outcome == 'overlap' and 1 or 0) + tonumber(ARGV[7]))
  end
  if extra then for i = 1, #extra do fields[#fields + 1] = extra[i] end end
  rcall('HSET', scheduleKey, unpack(fields))
  rcall('ZADD', schedulesKey, following == 'end' and '+inf' or following, id)
  return { outcome, now }
end

if slot == '' then return advance('advanced') end

local runs = tonumber(state[3] or '0')
local limit = tonumber(ARGV[9])
if limit > 0 and runs >= limit then
  following = 'end'
  return advance('limit')
end

-- Whether run `previous` is still pending or running: a fresh record, or a
-- run hash whose status is not final (a retry waits READY in its run hash;
-- a run handed back by the reaper has a run hash and no status yet: READY).
-- A cancelled run is final: it runs no more.
local function unfinished(previous)
  if rcall('HEXISTS', freshKey, previous) == 1 then return true end
  local runKey = runPrefix .. previous
  if rcall('EXISTS', runKey) == 0 then return false end
  local status = rcall('HGET', runKey, 'status')
  return status ~= 'SUCCESSFUL' and status ~= 'FAILED' and status ~= 'QUARANTINED' and status ~= 'CANCELLED'
end

if ARGV[8] == '1' and state[4] and unfinished(state[4]) then return advance('overlap') end

-- One id per slot: a run that has it (the schedule was removed and declared
-- again with the same id) is that slot's run already.
if rcall('HEXISTS', freshKey, runId) == 1 or rcall('HEXISTS', doneKey, runId) == 1
  or rcall('EXISTS', runPrefix .. runId) == 1 then
  return advance('exists')
end

-- The run, stored as enqueue stores a run ready now (see enqueue.lua).
local priority = tonumber(ARGV[11])
local seq = rcall('INCR', seqKey)
local score = format('%d', -priority * PRIORITY_SPAN + seq)
local nowText = format('%d', now)
rcall('HSET', freshKey, runId, nowText .. '|' .. score .. '|' .. ARGV[12] .. '||' .. ARGV[10] .. '|' .. ARGV[13])
if priority == 0 then
  rcall('RPUSH', readyListKey, runId)
else
  rcall('ZADD', readyKey, score, runId)
end
rcall('ZADD', wakeKey, '0', 'w')
rcall('HINCRBY', statsKey, 'enqueued', 1)
countMinute(metricsKey, now, 'enqueued', 1)

if limit > 0 and runs + 1 >= limit then following = 'end' end
return advance('fired', {
  'runs', format('%d', runs + 1), 'lastSlot', slot, 'lastRun', runId, 'lastAt', nowText, 'lastBy', ARGV[14],
})
