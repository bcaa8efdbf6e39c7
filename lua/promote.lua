--[[
  promote: make deferred runs whose due time has come READY.

  Run by brokers; several may run it at once without harm, because each due
  run is moved by exactly one atomic call. Also restores the wake marker of a
  queue that has ready runs, so a lost wake-up delays work by one pass at most.

  KEYS[1]   runPrefix     (prefix of run HASH keys; ids come from the deferred
                          sets, so run keys are derived from this declared
                          prefix and share its hash tag, hence its slot)
  KEYS[2]   fresh         HASH    run id → record of a run no attempt settled
  KEYS[3..] per queue q, 5 keys each: deferred ZSET, ready ZSET, wake ZSET,
            ready LIST (read only: its runs count as ready), paused STRING
            (read only: see pause.lua)

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

local now = nowMs()
local queueCount = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local promoted, nextDue, ghosts = 0, -1, {}

for q = 1, queueCount do
  local k = 3 + 5 * (q - 1)
  local paused = redis.call('EXISTS', KEYS[k + 4]) == 1
  local due = redis.call('ZRANGE', KEYS[k], '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
  if #due > 0 then
    local adds = {}
    for _, id in ipairs(due) do
      local score = storedScore(KEYS[2], KEYS[1] .. id, id)
      if score then
        table.insert(adds, score)
        table.insert(adds, id)
      else
        table.insert(ghosts, id)
      end
    end
    inChunks('ZREM', KEYS[k], due)
    if #adds > 0 then
      inChunks('ZADD', KEYS[k + 1], adds)
      if not paused then redis.call('ZADD', KEYS[k + 2], 0, 'w') end
      promoted = promoted + #adds / 2
    end
  end
  -- Repair a lost wake-up (a worker popped the marker, then died before it
  -- claimed): ready runs always leave a marker for the next idle worker.
  if #due == 0 and not paused and redis.call('EXISTS', KEYS[k + 1], KEYS[k + 3]) > 0 then
    redis.call('ZADD', KEYS[k + 2], 0, 'w')
  end
  nextDue = earliest(KEYS[k], nextDue)
end

return { now, promoted, nextDue, ghosts }
