--[[
  enqueue: store new task runs, each READY now or deferred until its due time.

  Atomic for the whole batch: either every run of the call is stored or, if
  the script fails, none is (validation happens in Node before the call).

  A new run's hash holds its payload, queue, ready score and enqueue time;
  status READY and 0 attempts are implied by their absence until a claim.

  KEYS[1]   seq           STRING  counter: FIFO order within a priority
  KEYS[2]   brokerWake    ZSET    marker that wakes a broker to re-plan promotion
  KEYS[3..] per queue q, 5 keys each, in ARGV order:
            ready ZSET, deferred ZSET, wake ZSET, stats HASH,
            metrics prefix (per-minute bucket HASHes, see includes/metrics)
  KEYS[3+5Q ..] per item i: its run HASH

  ARGV[1]   Q             number of distinct queues
  ARGV[2 .. 1+Q]          queue names
  ARGV[2+Q ..]            per item i, 8 values:
            id, queue index (1-based), priority (-100..100),
            run at (epoch ms, 0 = none), delay (ms, 0 = none),
            lease TTL override (ms, 0 = backend default), payload (JSON),
            check (1 = the caller chose the id: store it only if it is new;
            0 = a fresh id Threadmill generated, which cannot exist yet)

  Returns   { now, created_1, ..., created_n }: created_i is 1 when the run
            was stored and 0 when a run with that id already existed
            (idempotent enqueue: nothing is written for that item).

  Complexity: O(n log N) for n items.
]]
--- @include "includes/now"
--- @include "includes/zadd-batch"
--- @include "includes/metrics"

-- Ready score = (100 - priority) * 2^44 + seq: higher priority pops first,
-- FIFO within a priority, and the value stays exact in a double (< 2^53).
local PRIORITY_SPAN = 17592186044416
local FIELDS = 8
local rcall = redis.call

local now = nowMs()
local queueCount = tonumber(ARGV[1])
local itemBase = 2 + queueCount
local itemCount = (#ARGV - itemBase + 1) / FIELDS
local runKeyBase = 2 + 5 * queueCount

local seq = rcall('INCRBY', KEYS[1], itemCount) - itemCount
local readyAdds, deferredAdds, enqueued = {}, {}, {}
local anyDeferred = false
local reply = { now }

for i = 1, itemCount do
  local a = itemBase + (i - 1) * FIELDS
  local runKey = KEYS[runKeyBase + i]
  if ARGV[a + 7] == '1' and rcall('EXISTS', runKey) == 1 then
    reply[i + 1] = 0
  else
    local id = ARGV[a]
    local q = tonumber(ARGV[a + 1])
    local priority = tonumber(ARGV[a + 2])
    local runAt = tonumber(ARGV[a + 3])
    local delay = tonumber(ARGV[a + 4])
    local leaseTtl = tonumber(ARGV[a + 5])
    local score = (100 - priority) * PRIORITY_SPAN + seq + i
    local due = 0
    if runAt > 0 then due = runAt elseif delay > 0 then due = now + delay end

    if leaseTtl > 0 then
      rcall('HSET', runKey, 'payload', ARGV[a + 6], 'queue', ARGV[1 + q], 'score', score, 'enqueuedAt', now,
        'leaseTtl', leaseTtl)
    else
      rcall('HSET', runKey, 'payload', ARGV[a + 6], 'queue', ARGV[1 + q], 'score', score, 'enqueuedAt', now)
    end

    if due > now then
      rcall('HSET', runKey, 'runAfter', due)
      deferredAdds[q] = deferredAdds[q] or {}
      table.insert(deferredAdds[q], due)
      table.insert(deferredAdds[q], id)
      anyDeferred = true
    else
      readyAdds[q] = readyAdds[q] or {}
      table.insert(readyAdds[q], score)
      table.insert(readyAdds[q], id)
    end
    enqueued[q] = (enqueued[q] or 0) + 1
    reply[i + 1] = 1
  end
end

for q = 1, queueCount do
  local k = 2 + 5 * (q - 1)
  if readyAdds[q] then
    zaddBatch(KEYS[k + 1], readyAdds[q])
    rcall('ZADD', KEYS[k + 3], 0, 'w')
  end
  if deferredAdds[q] then
    zaddBatch(KEYS[k + 2], deferredAdds[q])
  end
  if enqueued[q] then
    rcall('HINCRBY', KEYS[k + 4], 'enqueued', enqueued[q])
    countMinute(KEYS[k + 5], now, 'enqueued', enqueued[q])
  end
end
if anyDeferred then
  rcall('ZADD', KEYS[2], 0, 'w')
end

return reply
