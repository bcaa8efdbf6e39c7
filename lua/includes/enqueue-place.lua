--- @include "includes/chunks"
--- @include "includes/metrics"

-- Where an enqueue call's new runs wait, per queue (enqueue.lua): runs ready
-- now at priority 0 in the ready LIST (includes/ready-list), other ready runs
-- in the ready ZSET, deferred runs in the deferred ZSET by due time; runs of
-- limit groups (held by their group's rules at claim) set the queue's
-- `grouped` flag and register the queue (`queuesKey`: task-limit.lua wakes
-- its groups). A queue that got ready runs gets its wake marker; the counts
-- go to its stats and metrics.
local function placeRuns(e, q, k, queuesKey)
  if e.grouped[q] then
    redis.call('SET', k.grouped, '1')
    redis.call('SADD', queuesKey, ARGV[2 + q])
  end
  local adds, list = e.readyAdds[q], e.listAdds[q]
  if adds then inChunks('ZADD', k.ready, adds) end
  if list then inChunks('RPUSH', k.readyList, list) end
  -- Wakes one idle consumer of the queue: its claim goes out behind its
  -- blocked wait and runs in Redis the moment the marker is popped.
  if adds or list then redis.call('ZADD', k.wake, '0', 'w') end
  if e.deferredAdds[q] then
    inChunks('ZADD', k.deferred, e.deferredAdds[q])
  end
  local enqueued = e.enqueued[q]
  if enqueued then
    redis.call('HINCRBY', k.stats, 'enqueued', string.format('%d', enqueued))
    countMinute(k.metrics, e.now, 'enqueued', enqueued)
  end
end
