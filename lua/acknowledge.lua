--[[
  acknowledge: apply the outcomes of finished attempts, fenced by lease token.

  An outcome applies only while its lease holds: the run is RUNNING under the
  same token and the lease deadline has not passed. The late result of an
  attempt whose lease expired (reaped or not yet) is discarded and counted as
  a stale acknowledgement, never applied. The reaper acknowledges under the
  token and short deadline of its own claim.

  KEYS[1]   runPrefix     (prefix of run HASH keys: acknowledgements carry
                          ids, and run keys are derived from this declared
                          prefix, which shares their hash tag, hence slot;
                          batches of hundreds would otherwise send every key)
  KEYS[2]   brokerWake    ZSET    marker that wakes a broker (new deferred runs)
  KEYS[3..] per queue q, 9 keys each: running ZSET, ready ZSET, deferred ZSET,
            wake ZSET, successful ZSET, failed ZSET, quarantined ZSET, stats HASH,
            metrics prefix (per-minute buckets of outcomes)

  ARGV[1]   Q             number of distinct queues
  ARGV[2]   resultTtl     ms a finished run is kept (0 = delete at once)
  ARGV[3..] per item, an outcome code, then its values:
            S  queue index, id, token, return value JSON ('' = none)
            F  queue index, id, token, error JSON (appended to errors)
            R  queue index, id, token, error JSON, delay ms (READY after it)
            Q  queue index, id, token, error JSON or '', quarantine JSON
               (kept, no TTL, until requeued: the run cannot be executed as stored)
            The code is upper case for a worker's outcome, which ends a series
            of lease expiries (it resets the run's `recoveries` count), and
            lower case (f, r, q) for the reaper settling an expired lease.

  Returns   { now, applied_1, ..., applied_n } with 1 = applied, 0 = stale

  Complexity: O(n log N) for n items.
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"
--- @include "includes/zadd-batch"
--- @include "includes/metrics"

local rcall = redis.call
local now = nowMs()
local queueCount = tonumber(ARGV[1])
local resultTtl = tonumber(ARGV[2])
local runPrefix = KEYS[1]
local reply = { now }

-- Per queue: ids to release from running, history additions, READY and
-- deferred additions, and counters.
local released, successful, failed, quarantined, ready, deferred = {}, {}, {}, {}, {}, {}
local succeeded, failures, retries, held, stale = {}, {}, {}, {}, {}
for q = 1, queueCount do
  released[q], successful[q], failed[q], quarantined[q], ready[q], deferred[q] = {}, {}, {}, {}, {}, {}
  succeeded[q], failures[q], retries[q], held[q], stale[q] = 0, 0, 0, 0, 0
end
local anyDeferred = false
local history = resultTtl > 0

local a, i = 3, 1
while a <= #ARGV do
  local code = ARGV[a]
  local q, id, token, value = tonumber(ARGV[a + 1]), ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local extra
  if code == 'S' or code == 'F' or code == 'f' then
    a = a + 5
  else
    extra = ARGV[a + 5]
    a = a + 6
  end
  local runKey = runPrefix .. id
  local holds, recoveries = holdsLease(runKey, token, now)

  if not holds then
    reply[i + 1] = 0
    stale[q] = stale[q] + 1
  else
    reply[i + 1] = 1
    local r = released[q]
    r[#r + 1] = id
    if recoveries and (code == 'S' or code == 'F' or code == 'R' or code == 'Q') then
      rcall('HDEL', runKey, 'recoveries', 'startedToken')
    end
    if code == 'S' then
      if history then
        if value ~= '' then
          rcall('HSET', runKey, 'status', 'SUCCESSFUL', 'finishedAt', now, 'result', value)
        else
          rcall('HSET', runKey, 'status', 'SUCCESSFUL', 'finishedAt', now)
        end
        rcall('PEXPIRE', runKey, resultTtl)
        local h = successful[q]
        h[#h + 1] = now
        h[#h + 1] = id
      else
        rcall('DEL', runKey)
      end
      succeeded[q] = succeeded[q] + 1
    elseif code == 'F' or code == 'f' then
      if history then
        local errors = appendFragment(rcall('HGET', runKey, 'errors'), value)
        rcall('HSET', runKey, 'status', 'FAILED', 'finishedAt', now, 'errors', errors)
        rcall('PEXPIRE', runKey, resultTtl)
        local h = failed[q]
        h[#h + 1] = now
        h[#h + 1] = id
      else
        rcall('DEL', runKey)
      end
      failures[q] = failures[q] + 1
    elseif code == 'Q' or code == 'q' then
      local f = rcall('HMGET', runKey, 'errors')
      local errors = f[1] or ''
      if value ~= '' then errors = appendFragment(f[1], value) end
      rcall('HSET', runKey, 'status', 'QUARANTINED', 'quarantinedAt', now, 'quarantine', extra, 'errors', errors)
      rcall('PERSIST', runKey)
      local h = quarantined[q]
      h[#h + 1] = now
      h[#h + 1] = id
      held[q] = held[q] + 1
    else
      local f = rcall('HMGET', runKey, 'errors', 'score')
      rcall('HSET', runKey, 'status', 'READY', 'errors', appendFragment(f[1], value))
      local delay = tonumber(extra)
      if delay > 0 then
        local due = now + delay
        rcall('HSET', runKey, 'runAfter', due)
        local d = deferred[q]
        d[#d + 1] = due
        d[#d + 1] = id
        anyDeferred = true
      else
        rcall('HDEL', runKey, 'runAfter')
        local rd = ready[q]
        rd[#rd + 1] = f[2]
        rd[#rd + 1] = id
      end
      retries[q] = retries[q] + 1
    end
  end
  i = i + 1
end

local cutoff = '(' .. (now - resultTtl)
for q = 1, queueCount do
  local k = 3 + 9 * (q - 1)
  local ids = released[q]
  for first = 1, #ids, 1000 do
    rcall('ZREM', KEYS[k], unpack(ids, first, math.min(first + 999, #ids)))
  end
  if #ready[q] > 0 then
    zaddBatch(KEYS[k + 1], ready[q])
    rcall('ZADD', KEYS[k + 3], 0, 'w')
  end
  if #deferred[q] > 0 then zaddBatch(KEYS[k + 2], deferred[q]) end
  if #successful[q] > 0 then
    zaddBatch(KEYS[k + 4], successful[q])
    rcall('ZREMRANGEBYSCORE', KEYS[k + 4], '-inf', cutoff)
  end
  if #failed[q] > 0 then
    zaddBatch(KEYS[k + 5], failed[q])
    rcall('ZREMRANGEBYSCORE', KEYS[k + 5], '-inf', cutoff)
  end
  -- Quarantined runs are never trimmed: they wait for an operator.
  if #quarantined[q] > 0 then zaddBatch(KEYS[k + 6], quarantined[q]) end
  local statsKey = KEYS[k + 7]
  if succeeded[q] > 0 then rcall('HINCRBY', statsKey, 'succeeded', succeeded[q]) end
  if failures[q] > 0 then rcall('HINCRBY', statsKey, 'failed', failures[q]) end
  if retries[q] > 0 then rcall('HINCRBY', statsKey, 'retried', retries[q]) end
  if held[q] > 0 then rcall('HINCRBY', statsKey, 'quarantined', held[q]) end
  if stale[q] > 0 then rcall('HINCRBY', statsKey, 'staleAcks', stale[q]) end
  local metrics = KEYS[k + 8]
  countMinute(metrics, now, 'succeeded', succeeded[q])
  countMinute(metrics, now, 'failed', failures[q])
  countMinute(metrics, now, 'retried', retries[q])
  countMinute(metrics, now, 'quarantined', held[q])
end
if anyDeferred then rcall('ZADD', KEYS[2], 0, 'w') end

return reply
