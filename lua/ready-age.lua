--[[
  ready-age: when the longest-waiting ready run of a queue became ready.

  Ready runs are ordered by priority band, then FIFO, so the longest-waiting
  one is the head of one of the bands present: this visits each band's head
  (at most 201 of them). A run became ready at its enqueue, or at its
  runAfter if it was deferred.

  KEYS[1]   ready ZSET
  KEYS[2]   runPrefix     (prefix of run HASH keys, as in claim)
  KEYS[3]   fresh         HASH    run id → record of a run no attempt settled
  KEYS[4]   ready LIST    (see includes/ready-list): its first live place
                          is the longest-waiting of its runs
  KEYS[5]   withdrawn     HASH    tombstones of the ready LIST

  Returns   { now, since } with since = -1 when no run is ready.

  Complexity: O(B log N + T) for B priority bands present and T tombstones.
]]
--- @include "includes/now"
--- @include "includes/fresh"
--- @include "includes/ready-list"

local SPAN = 17592186044416 -- 2^44, as in enqueue
local now = nowMs()
local since = -1
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
while head[1] do
  local record = redis.call('HGET', KEYS[3], head[1])
  local f
  if record then
    local enqueuedAt, _, _, runAfter = parseFresh(record)
    f = { enqueuedAt, runAfter }
  else
    f = redis.call('HMGET', KEYS[2] .. head[1], 'enqueuedAt', 'runAfter')
  end
  local ready = math.max(tonumber(f[1]) or now, tonumber(f[2]) or 0)
  if since < 0 or ready < since then since = ready end
  local nextBand = (math.floor(tonumber(head[2]) / SPAN) + 1) * SPAN
  head = redis.call('ZRANGE', KEYS[1], nextBand, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
end
-- The list's first live place: dead places come first, at most one per tombstone.
local tombstones = withdrawnTotal(KEYS[5])
local places = redis.call('LRANGE', KEYS[4], 0, tombstones)
local dead = tombstones > 0 and deadPlaces(KEYS[5], places) or {}
for j = 1, #places do
  if not dead[j] then
    local record = redis.call('HGET', KEYS[3], places[j])
    if record then
      local enqueuedAt = tonumber((parseFresh(record)))
      if since < 0 or enqueuedAt < since then since = enqueuedAt end
    end
    break
  end
end
return { now, since }
