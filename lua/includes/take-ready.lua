-- A claim's taking of a queue's ready runs, in ready order, off the heads of
-- its ready ZSET and ready LIST (needs includes/ready-list and
-- includes/chunks), consuming the dead places (tombstones) it meets within a
-- budget per claim.

-- Dead places one claim consumes at most: a long row of them (a batch
-- dequeued at the head of a queue) is cleared over several claims, each a
-- few milliseconds of Redis, instead of one that blocks it.
local burialBudget = 10000

-- One pass of takeReady over the heads of the ready ZSET and LIST: up to
-- `take` ids in ready order, and whether the queue ran out. A pass stops
-- early, without running out, when dead places filled the part of the list
-- it read: the runs behind them are read by the next pass, never passed
-- over for a run of the set that comes after them.
local function takeReadyPass(readyKey, listKey, withdrawnKey, freshKey, take)
  local listed = redis.call('LLEN', listKey)
  if listed == 0 then
    -- By rank rather than ZPOPMIN, whose reply carries every score: Redis
    -- prints each one, a 17-digit double, which cost more than the pop.
    local ids = redis.call('ZRANGE', readyKey, 0, take - 1)
    if #ids > 0 then redis.call('ZREMRANGEBYRANK', readyKey, 0, #ids - 1) end
    return ids, #ids < take
  end
  local tombstones = withdrawnTotal(withdrawnKey) > 0
  if redis.call('EXISTS', readyKey) == 0 then
    local popped = redis.call('LPOP', listKey, take)
    if not tombstones then return popped, #popped < take end
    local dead = deadPlaces(withdrawnKey, popped)
    burialBudget = burialBudget - buryPlaces(withdrawnKey, popped, dead, #popped)
    local ids = {}
    for j = 1, #popped do
      if not dead[j] then ids[#ids + 1] = popped[j] end
    end
    return ids, #popped < take
  end
  -- Both hold runs: merge the heads of the two by score. A dead place is
  -- skipped; a ghost (no record) sorts first and is reported below.
  local set = redis.call('ZRANGE', readyKey, 0, take - 1, 'WITHSCORES')
  local list = redis.call('LRANGE', listKey, 0, take - 1)
  local dead = tombstones and deadPlaces(withdrawnKey, list) or {}
  local listRecords = inChunks('HMGET', freshKey, list)
  local listScores = {}
  for j = 1, #list do
    listScores[j] = listedScore(listRecords[j])
  end
  -- A window that came back full may have more behind it.
  local ids, setTaken, listTaken = mergeReady(set, list, listScores, dead, take, #set / 2 == take, #list == take)
  if setTaken > 0 then redis.call('ZREMRANGEBYRANK', readyKey, 0, setTaken - 1) end
  if listTaken > 0 then
    redis.call('LTRIM', listKey, listTaken, -1)
    if tombstones then burialBudget = burialBudget - buryPlaces(withdrawnKey, list, dead, listTaken) end
  end
  local setCount, listCount = #set / 2, #list
  return ids, setTaken == setCount and listTaken == listCount and setCount < take and listCount < take
end

-- Takes up to `take` ready runs of a queue off its ready ZSET and ready LIST,
-- in score order (see includes/ready-list), and returns their ids and whether
-- the queue ran out (or this claim's burial budget did). Tombstones met in the
-- list are consumed and not returned.
local function takeReady(readyKey, listKey, withdrawnKey, freshKey, take)
  local ids = {}
  while true do
    local got, ranOut = takeReadyPass(readyKey, listKey, withdrawnKey, freshKey, take - #ids)
    for j = 1, #got do ids[#ids + 1] = got[j] end
    if ranOut or burialBudget <= 0 then return ids, true end
    if #ids >= take then return ids, false end
  end
end
