--[[
  ready-page: a page of a queue's ready run ids, in the order claims take them.

  Ready runs wait in the ready ZSET and the ready LIST (see
  includes/ready-list), each in ready order; claims take from both by score.
  The page's first run is found by bisection, as the k-th of two sorted
  sequences (a list place's score is its record's), so a deep page costs no
  more than the first; the page then merges forward from there, leaving out
  the list's dead places (tombstones). Dead places before the page count as
  places: until claims pass them, a deep page may start up to that many runs
  early.

  KEYS      ready, readyList, withdrawn, fresh (lua/keys.mjs)

  ARGV[1]   offset        0-based place of the page's first run
  ARGV[2]   limit         most runs in the page

  Returns   the page's run ids.

  Complexity: O(log² N + (limit + T) log N) for T tombstones; a list place
            is read by index, O(N / 128) for a quicklist of N places.
]]
--- @include "includes/chunks"
--- @include "includes/ready-list"
--- @keys

local offset, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local setCount = redis.call('ZCARD', readyKey)
local listCount = redis.call('LLEN', readyListKey)
local tombstones = withdrawnTotal(withdrawnKey)

local function listScore(i)
  local id = redis.call('LINDEX', readyListKey, i)
  return listedScore(id and redis.call('HGET', freshKey, id))
end

local function setScore(rank)
  return tonumber(redis.call('ZRANGE', readyKey, rank, rank, 'WITHSCORES')[2])
end

-- How many of the first `offset` runs are list places: the fewest i such
-- that the list's place i comes after the set's rank offset - i - 1.
local lo, hi = math.max(0, offset - setCount), math.min(offset, listCount)
while lo < hi do
  local i = math.floor((lo + hi) / 2)
  local rank = offset - i
  if rank > 0 and listScore(i) < setScore(rank - 1) then
    lo = i + 1
  else
    hi = i
  end
end
local listFrom, setFrom = lo, offset - lo

-- Enough of each to fill the page whatever the merge takes, and the dead
-- places it may skip.
local set = redis.call('ZRANGE', readyKey, setFrom, setFrom + limit - 1, 'WITHSCORES')
local list = redis.call('LRANGE', readyListKey, listFrom, listFrom + limit + tombstones - 1)
local records = inChunks('HMGET', freshKey, list)

-- A listed place is dead when its run has no record, or when its id has
-- tombstones and this place is one of the id's first that many places in
-- the list (an id's dead places always come before its live one, if any).
local scores, dead, deadAt = {}, {}, {}
for j = 1, #list do
  local id, record = list[j], records[j]
  scores[j] = listedScore(record)
  local count = tombstones > 0 and tonumber(redis.call('HGET', withdrawnKey, id)) or 0
  local isDead = not record
  if count > 0 then
    local places = deadAt[id]
    if not places then
      places = {}
      for _, at in ipairs(redis.call('LPOS', readyListKey, id, 'COUNT', count)) do places[at] = true end
      deadAt[id] = places
    end
    isDead = isDead or places[listFrom + j - 1] == true
  end
  dead[j] = isDead
end
return (mergeReady(set, list, scores, dead, limit, #set / 2 == limit, #list == limit + tombstones))
