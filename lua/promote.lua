--[[
  promote: make deferred runs whose due time has come READY.

  Run by brokers; several may run it at once without harm, because each due
  run is moved by exactly one atomic call. Also restores the wake marker of a
  queue that has ready runs, so a lost wake-up delays work by one pass at most.

  KEYS      runPrefix, fresh; per queue: deferred, ready, wake, readyList
            (read only: its runs count as ready), paused (read only: see
            pause.lua) (lua/keys.mjs)

  A paused queue's due runs are promoted all the same (they wait READY, in
  ready order, and run first at resume), but its wake marker is left alone:
  no idle consumer is woken for runs it may not claim (resume.lua sets it).

  ARGV[1]   Q             number of queues
  ARGV[2]   limit         most runs to promote per queue in this call

  Returns   { now, promoted, nextDue, ghosts }
            nextDue: earliest due time still deferred (ms), or -1 when none
            ghosts: ids found deferred without a run hash (removed, reported)

  Complexity: O(Q log N + n log N) for n promoted runs.
]]
--- @include "includes/now"
--- @include "includes/earliest"
--- @include "includes/chunks"
--- @include "includes/fresh"
--- @keys

local now = nowMs()
local queueCount = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local promoted, nextDue, ghosts = 0, -1, {}

for q = 1, queueCount do
  local k = queueKeys(q)
  local paused = redis.call('EXISTS', k.paused) == 1
  local due = redis.call('ZRANGE', k.deferred, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
  if #due > 0 then
    local adds = {}
    for _, id in ipairs(due) do
      local score = storedScore(freshKey, runPrefix .. id, id)
      if score then
        table.insert(adds, score)
        table.insert(adds, id)
      else
        table.insert(ghosts, id)
      end
    end
    inChunks('ZREM', k.deferred, due)
    if #adds > 0 then
      inChunks('ZADD', k.ready, adds)
      if not paused then redis.call('ZADD', k.wake, 0, 'w') end
      promoted = promoted + #adds / 2
    end
  end
  -- Repair a lost wake-up (a worker popped the marker, then died before it
  -- claimed): ready runs always leave a marker for the next idle worker.
  if #due == 0 and not paused and redis.call('EXISTS', k.ready, k.readyList) > 0 then
    redis.call('ZADD', k.wake, 0, 'w')
  end
  nextDue = earliest(k.deferred, nextDue)
end

return { now, promoted, nextDue, ghosts }
