--- @include "includes/chunks"
--- @include "includes/metrics"

-- Where the new nodes of a flow call go, per queue (flow-store.lua,
-- flow-extend.lua): ready ones into the ready set by score (and the queue's
-- wake marker), deferred ones by due time, WAITING ones into `waiting`; the
-- queue is flagged `flowed` (settling its runs looks for flows) and, with
-- runs of limit groups, `grouped` and registered; its counts. `adds`: per
-- queue index, ready, deferred and waiting (score or time, id pairs),
-- enqueued (a count), grouped (a flag). Returns whether any is deferred.
local function placeFlowNodes(adds, queueCount, queuePrefix, queuesKey, now)
  local anyDeferred = false
  for q = 1, queueCount do
    local prefix = queuePrefix .. ARGV[3 + q] .. ':'
    redis.call('SET', prefix .. 'flowed', '1')
    if adds.grouped[q] then
      redis.call('SET', prefix .. 'grouped', '1')
      redis.call('SADD', queuesKey, ARGV[3 + q])
    end
    if #adds.ready[q] > 0 then
      inChunks('ZADD', prefix .. 'ready', adds.ready[q])
      redis.call('ZADD', prefix .. 'wake', '0', 'w')
    end
    if #adds.deferred[q] > 0 then
      inChunks('ZADD', prefix .. 'deferred', adds.deferred[q])
      anyDeferred = true
    end
    inChunks('ZADD', prefix .. 'waiting', adds.waiting[q])
    if adds.enqueued[q] > 0 then
      redis.call('HINCRBY', prefix .. 'stats', 'enqueued', string.format('%d', adds.enqueued[q]))
      countMinute(prefix .. 'metrics:', now, 'enqueued', adds.enqueued[q])
    end
  end
  return anyDeferred
end
