--- @include "includes/successful-index"

-- Finished runs (successful, failed) have no TTL of their own: each is kept
-- until `resultTtl` ms after it finished and then removed together with its
-- entry in its queue's finished index, by the queue's acknowledgements and by
-- brokers' passes (trim.lua). A finished index so names exactly the finished
-- runs of its queue: counts are its size, and an id in it always belongs to
-- it (a run key that expired on its own would leave an entry naming an id
-- that another queue may reuse). The failed index is a ZSET by finish
-- time; the successful one a LIST (includes/successful-index).

-- Removes the runs named by `ids` (an index's expired entries): a successful
-- run is a done record, or a run hash when an earlier attempt had settled
-- (includes/done), so `doneKey` is given for those and false for failed
-- runs; run keys are built and deleted only when some were not done records.
local function removeFinished(ids, runPrefix, doneKey)
  if doneKey and select(2, inChunks('HDEL', doneKey, ids)) == #ids then return end
  local runKeys = {}
  for j = 1, #ids do runKeys[j] = runPrefix .. ids[j] end
  inChunks('DEL', false, runKeys)
end

-- Removes up to `limit` runs of failed index `indexKey` that finished
-- before `cutoff` (ms), runs and entries; returns how many.
local function trimFinished(indexKey, runPrefix, cutoff, limit)
  local expired = redis.call('ZRANGE', indexKey, '-inf', '(' .. string.format('%d', cutoff), 'BYSCORE', 'LIMIT', 0,
    limit)
  if #expired == 0 then return 0 end
  removeFinished(expired, runPrefix, false)
  inChunks('ZREM', indexKey, expired)
  return #expired
end

-- The same for successful index `listKey`, whose head holds its oldest
-- entries; `doneKey` is the done hash.
local function trimSuccessful(listKey, runPrefix, doneKey, cutoff, limit)
  -- Most calls find the oldest entry unexpired: one LINDEX and one HGET, no
  -- page read.
  local first = redis.call('LINDEX', listKey, 0)
  if not first then return 0 end
  if successfulFinishedAt(runPrefix, first, redis.call('HGET', doneKey, first)) >= cutoff then return 0 end
  local head = redis.call('LRANGE', listKey, 0, limit - 1)
  local dones = inChunks('HMGET', doneKey, head)
  local expired = {}
  for j = 1, #head do
    if successfulFinishedAt(runPrefix, head[j], dones[j]) >= cutoff then break end
    expired[j] = head[j]
  end
  if #expired == 0 then return 0 end
  removeFinished(expired, runPrefix, doneKey)
  redis.call('LTRIM', listKey, #expired, -1)
  return #expired
end

-- The lower of `current` (-1 for none) and the finish time of the oldest
-- entry of successful index `listKey`.
local function earliestSuccessful(listKey, runPrefix, doneKey, current)
  local first = redis.call('LINDEX', listKey, 0)
  if not first then return current end
  local at = successfulFinishedAt(runPrefix, first, redis.call('HGET', doneKey, first))
  if current < 0 or at < current then return at end
  return current
end

-- Trims finished index `key` of `outcome` ('successful': a list,
-- trimSuccessful; 'failed': a sorted set, trimFinished) the same way.
local function trimIndex(outcome, key, runPrefix, doneKey, cutoff, limit)
  if outcome == 'successful' then return trimSuccessful(key, runPrefix, doneKey, cutoff, limit) end
  return trimFinished(key, runPrefix, cutoff, limit)
end
