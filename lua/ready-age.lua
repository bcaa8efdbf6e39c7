--[[
  ready-age: when the longest-waiting ready run of a queue became ready.

  Ready runs are ordered by priority band, then FIFO, so the longest-waiting
  one is the head of one of the bands present: this visits each band's head
  (at most 201 of them). A run became ready at its enqueue, or at its
  runAfter if it was deferred.

  KEYS      ready, runPrefix, fresh, readyList (its first live place is the
            longest-waiting of its runs), withdrawn (lua/keys.mjs)

  Returns   { now, since } with since = -1 when no run is ready.

  Complexity: O(B log N + T) for B priority bands present and T tombstones.
]]
--- @include "includes/now"
--- @include "includes/fresh"
--- @include "includes/ready-list"
--- @keys

local SPAN = 17592186044416 -- 2^44, as in enqueue
local now = nowMs()
local since = -1
local head = redis.call('ZRANGE', readyKey, 0, 0, 'WITHSCORES')
while head[1] do
  local record = redis.call('HGET', freshKey, head[1])
  local f
  if record then
    local enqueuedAt, _, _, runAfter = parseFresh(record)
    f = { enqueuedAt, runAfter }
  else
    f = redis.call('HMGET', runPrefix .. head[1], 'enqueuedAt', 'runAfter')
  end
  local ready = math.max(tonumber(f[1]) or now, tonumber(f[2]) or 0)
  if since < 0 or ready < since then since = ready end
  local nextBand = (math.floor(tonumber(head[2]) / SPAN) + 1) * SPAN
  head = redis.call('ZRANGE', readyKey, nextBand, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
end
-- The list's first live place: dead places come first, at most one per tombstone.
local tombstones = withdrawnTotal(withdrawnKey)
local places = redis.call('LRANGE', readyListKey, 0, tombstones)
local dead = tombstones > 0 and deadPlaces(withdrawnKey, places) or {}
for j = 1, #places do
  if not dead[j] then
    local record = redis.call('HGET', freshKey, places[j])
    if record then
      local enqueuedAt = tonumber((parseFresh(record)))
      if since < 0 or enqueuedAt < since then since = enqueuedAt end
    end
    break
  end
end
return { now, since }
