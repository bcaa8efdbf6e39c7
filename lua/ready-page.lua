--[[
  ready-page: a page of a queue's ready run ids, in the order claims take them.

  Ready runs wait in the ready ZSET and the ready LIST (see
  includes/ready-list); this merges the heads of the two by score, as a claim
  does, skipping the list's dead places.

  KEYS[1]   ready ZSET
  KEYS[2]   ready LIST
  KEYS[3]   withdrawn     HASH    tombstones of the ready LIST
  KEYS[4]   fresh         HASH    run id → record of a run no attempt settled
                          (a listed run's score is its record's)

  ARGV[1]   offset        0-based place of the page's first run
  ARGV[2]   limit         most runs in the page

  Returns   the page's run ids.

  Complexity: O((offset + limit) log N + T) for T tombstones.
]]
--- @include "includes/chunks"
--- @include "includes/fresh"
--- @include "includes/ready-list"

local offset, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local window = offset + limit
local tombstones = withdrawnTotal(KEYS[3])
local set = redis.call('ZRANGE', KEYS[1], 0, window - 1, 'WITHSCORES')
local list = redis.call('LRANGE', KEYS[2], 0, window + tombstones - 1)
local dead = tombstones > 0 and deadPlaces(KEYS[3], list) or {}
local records = inChunks('HMGET', KEYS[4], list)

local page, served = {}, 0
local s, l = 1, 1
local setCount, listCount = #set / 2, #list
while served < window and (s <= setCount or l <= listCount) do
  local id
  if l <= listCount and dead[l] then
    l = l + 1
  else
    -- A listed run without a record (a ghost, left for a claim to report)
    -- sorts by its place: first among what is left.
    local listScore = l <= listCount and (records[l] and tonumber((select(2, parseFresh(records[l])))) or -math.huge)
    if listScore and (s > setCount or listScore < tonumber(set[2 * s])) then
      id = list[l]
      l = l + 1
    else
      id = set[2 * s - 1]
      s = s + 1
    end
    served = served + 1
    if served > offset then page[#page + 1] = id end
  end
end
return page
