-- The ready list. A run enqueued ready now at the default priority (0), the
-- bulk of most queues, waits in its queue's ready LIST instead of the ready
-- ZSET: its ready score is its sequence number, so enqueue order is score
-- order and an RPUSH keeps the list sorted, for a fraction of a ZADD's cost
-- and memory per run (no skiplist node, no dict entry, no score to parse).
-- Every other ready run (another priority, a deferred run come due, a retry,
-- release or requeue, which keep their original score) waits in the ready
-- ZSET, and claims merge the two by score: the order is the one a single set
-- would give.
--
-- A run dequeued from the list leaves its id there (removing it would scan
-- the list): its tombstone is a count in the queue's `withdrawn` HASH (field
-- id; field '' holds the total, ids are never empty), consumed by the claim
-- that meets the id. An id comes back only after its run was dequeued, so its
-- tombstones are always its earliest places in the list and its live place,
-- if any, its last.

-- Tombstones of the list, in all.
local function withdrawnTotal(withdrawnKey)
  return tonumber(redis.call('HGET', withdrawnKey, '')) or 0
end

-- Marks the place of run `id` in the list as dead.
local function withdraw(withdrawnKey, id)
  redis.call('HINCRBY', withdrawnKey, id, 1)
  redis.call('HINCRBY', withdrawnKey, '', 1)
end

-- Which places of `ids` (list entries, in list order) are dead: a table
-- place → true, using each id's tombstones in order. Reads only.
local function deadPlaces(withdrawnKey, ids)
  local dead, left = {}, {}
  for j = 1, #ids do
    local id = ids[j]
    local n = left[id]
    if n == nil then
      n = tonumber(redis.call('HGET', withdrawnKey, id)) or 0
    end
    if n > 0 then
      dead[j] = true
      n = n - 1
    end
    left[id] = n
  end
  return dead
end

-- Consumes the tombstones of the dead places 1..last of `ids` (they have
-- left the list); returns how many there were.
local function buryPlaces(withdrawnKey, ids, dead, last)
  local buried = 0
  for j = 1, last do
    if dead[j] then
      if redis.call('HINCRBY', withdrawnKey, ids[j], -1) <= 0 then redis.call('HDEL', withdrawnKey, ids[j]) end
      buried = buried + 1
    end
  end
  if buried > 0 and redis.call('HINCRBY', withdrawnKey, '', -buried) <= 0 then
    redis.call('HDEL', withdrawnKey, '')
  end
  return buried
end

-- The score a list place sorts by: its fresh record's (the record's second
-- field), or first of all when it has no record (a dead place, or a ghost).
local function listedScore(record)
  if not record then return -math.huge end
  local first = string.find(record, '|', 1, true)
  return tonumber(string.sub(record, first + 1, string.find(record, '|', first + 1, true) - 1))
end

-- Merges the heads of the ready set (`set`: id, score pairs, as ZRANGE ...
-- WITHSCORES replies) and of the ready list (`list`: ids in order, `scores`
-- their scores, `dead` a place -> true map of places to skip) by score, until
-- `want` runs are taken or both run out. `setMore` and `listMore` say that a
-- window may have more runs behind it (it came back as long as asked): the
-- merge stops when such a window is used up, since the next run in ready
-- order may be behind it, rather than take one of the other window that
-- comes later. Returns the ids taken, in ready order, and how far it went
-- into each: set members, list places (dead places skipped included).
local function mergeReady(set, list, scores, dead, want, setMore, listMore)
  local ids = {}
  local s, l = 1, 1
  local setCount, listCount = #set / 2, #list
  while #ids < want do
    while l <= listCount and dead[l] do l = l + 1 end
    local setHas, listHas = s <= setCount, l <= listCount
    if (not setHas and (setMore or not listHas)) or (not listHas and listMore) then break end
    if listHas and (not setHas or scores[l] < tonumber(set[2 * s])) then
      ids[#ids + 1] = list[l]
      l = l + 1
    else
      ids[#ids + 1] = set[2 * s - 1]
      s = s + 1
    end
  end
  return ids, s - 1, l - 1
end
