--[[
  acknowledge: apply the outcomes of finished attempts, fenced by lease token.

  An outcome applies only while its lease holds: the run is RUNNING under the
  same token and the lease deadline has not passed. The late result of an
  attempt whose lease expired (reaped or not yet) is discarded and counted as
  a stale acknowledgement, never applied. The reaper acknowledges under the
  token and short deadline of its own claim.

  KEYS[1]   brokerWake    ZSET    marker that wakes a broker (new deferred runs)
  KEYS[2..] per queue q, 8 keys each: running ZSET, ready ZSET, deferred ZSET,
            wake ZSET, successful ZSET, failed ZSET, quarantined ZSET, stats HASH
  KEYS[2+8Q ..] per item i: its run HASH

  ARGV[1]   Q             number of distinct queues
  ARGV[2]   resultTtl     ms a finished run is kept (0 = delete at once)
  ARGV[3..] per item i, 8 values:
            id, queue index, lease token, outcome, value, delay (ms),
            quarantine (JSON, for Q), source (w = a worker's attempt,
            r = the reaper settling an expired lease)
            outcome S = successful (value: return value JSON, '' = none)
                    F = failed     (value: error JSON, appended to errors)
                    R = retry      (value: error JSON; READY again after delay)
                    Q = quarantine (value: error JSON or ''; kept, no TTL,
                        until requeued: the run cannot be executed as stored)
            A worker's outcome ends a series of lease expiries: it resets the
            run's `recoveries` count.

  Returns   { now, applied_1, ..., applied_n } with 1 = applied, 0 = stale

  Complexity: O(n log N) for n items.
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"
--- @include "includes/zadd-batch"

local FIELDS = 8
local now = nowMs()
local queueCount = tonumber(ARGV[1])
local resultTtl = tonumber(ARGV[2])
local itemCount = (#ARGV - 2) / FIELDS
local runKeyBase = 1 + 8 * queueCount

local released, finished, readyAdds, deferredAdds, counts = {}, {}, {}, {}, {}
local anyDeferred = false
local reply = { now }

local function bucket(tbl, q, name)
  tbl[q] = tbl[q] or {}
  if name then
    tbl[q][name] = tbl[q][name] or {}
    return tbl[q][name]
  end
  return tbl[q]
end

local function count(q, field)
  local c = bucket(counts, q)
  c[field] = (c[field] or 0) + 1
end

local function finish(runKey, q, id, status, fields)
  redis.call('HSET', runKey, 'status', status, 'finishedAt', now, unpack(fields))
  if resultTtl > 0 then
    redis.call('PEXPIRE', runKey, resultTtl)
    local history = bucket(finished, q, status)
    table.insert(history, now)
    table.insert(history, id)
  else
    redis.call('DEL', runKey)
  end
end

for i = 1, itemCount do
  local a = 3 + (i - 1) * FIELDS
  local id, q, token, outcome = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], ARGV[a + 3]
  local value, delay = ARGV[a + 4], tonumber(ARGV[a + 5])
  local quarantine, source = ARGV[a + 6], ARGV[a + 7]
  local runKey = KEYS[runKeyBase + i]
  local k = 2 + 8 * (q - 1)

  if not holdsLease(runKey, KEYS[k], id, token, now) then
    reply[i + 1] = 0
    count(q, 'staleAcks')
  else
    local f = redis.call('HMGET', runKey, 'errors', 'score')
    reply[i + 1] = 1
    table.insert(bucket(released, q), id)
    if source == 'w' then redis.call('HDEL', runKey, 'recoveries', 'startedToken') end
    if outcome == 'S' then
      if value ~= '' then
        finish(runKey, q, id, 'SUCCESSFUL', { 'result', value })
      else
        finish(runKey, q, id, 'SUCCESSFUL', {})
      end
      count(q, 'succeeded')
    elseif outcome == 'F' then
      finish(runKey, q, id, 'FAILED', { 'errors', appendFragment(f[1], value) })
      count(q, 'failed')
    elseif outcome == 'Q' then
      local errors = f[1]
      if value ~= '' then errors = appendFragment(f[1], value) end
      redis.call('HSET', runKey, 'status', 'QUARANTINED', 'quarantinedAt', now, 'quarantine', quarantine,
        'errors', errors or '')
      redis.call('PERSIST', runKey)
      local held = bucket(finished, q, 'QUARANTINED')
      table.insert(held, now)
      table.insert(held, id)
      count(q, 'quarantined')
    else
      redis.call('HSET', runKey, 'status', 'READY', 'errors', appendFragment(f[1], value))
      if delay > 0 then
        local due = now + delay
        redis.call('HSET', runKey, 'runAfter', due)
        local d = bucket(deferredAdds, q)
        table.insert(d, due)
        table.insert(d, id)
        anyDeferred = true
      else
        redis.call('HDEL', runKey, 'runAfter')
        local r = bucket(readyAdds, q)
        table.insert(r, f[2])
        table.insert(r, id)
      end
      count(q, 'retried')
    end
  end
end

for q = 1, queueCount do
  local k = 2 + 8 * (q - 1)
  if released[q] then
    local ids = released[q]
    for first = 1, #ids, 1000 do
      redis.call('ZREM', KEYS[k], unpack(ids, first, math.min(first + 999, #ids)))
    end
  end
  if readyAdds[q] then
    zaddBatch(KEYS[k + 1], readyAdds[q])
    redis.call('ZADD', KEYS[k + 3], 0, 'w')
  end
  if deferredAdds[q] then zaddBatch(KEYS[k + 2], deferredAdds[q]) end
  if finished[q] then
    if finished[q]['SUCCESSFUL'] then
      zaddBatch(KEYS[k + 4], finished[q]['SUCCESSFUL'])
      redis.call('ZREMRANGEBYSCORE', KEYS[k + 4], '-inf', '(' .. (now - resultTtl))
    end
    if finished[q]['FAILED'] then
      zaddBatch(KEYS[k + 5], finished[q]['FAILED'])
      redis.call('ZREMRANGEBYSCORE', KEYS[k + 5], '-inf', '(' .. (now - resultTtl))
    end
    -- Quarantined runs are never trimmed: they wait for an operator.
    if finished[q]['QUARANTINED'] then zaddBatch(KEYS[k + 6], finished[q]['QUARANTINED']) end
  end
  if counts[q] then
    for field, n in pairs(counts[q]) do
      redis.call('HINCRBY', KEYS[k + 7], field, n)
    end
  end
end
if anyDeferred then redis.call('ZADD', KEYS[1], 0, 'w') end

return reply
