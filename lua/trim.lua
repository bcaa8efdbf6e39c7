--[[
  trim: remove finished runs whose result TTL has passed, with their index
  entries (see includes/trim), in queues whose own acknowledgements have
  stopped doing it: a quiet queue's finished runs still go on time.

  Run by brokers; several may run it at once (each removal is atomic).

  KEYS[1]   runPrefix     (prefix of run HASH keys; ids come from the
                          indexes, so run keys are derived from this declared
                          prefix and share its hash tag, hence its slot)
  KEYS[2..] per queue q, 2 keys each: successful LIST, failed ZSET
  KEYS[2+2Q] done         HASH    run id → record of a run that succeeded from its fresh record

  ARGV[1]   Q             number of queues
  ARGV[2]   resultTtl     ms a finished run is kept
  ARGV[3]   limit         most runs to remove per index in this call

  Returns   { now, removed, nextExpiry }
            nextExpiry: when the next finished run's TTL passes (ms), or -1
            when no run is finished

  Complexity: O(Q log N + n log N) for n removed runs.
]]
--- @include "includes/now"
--- @include "includes/chunks"
--- @include "includes/earliest"
--- @include "includes/trim"

local now = nowMs()
local queueCount = tonumber(ARGV[1])
local resultTtl = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local removed, oldest = 0, -1

local doneKey = KEYS[2 + 2 * queueCount]
for q = 1, queueCount do
  local successfulKey, failedKey = KEYS[2 * q], KEYS[2 * q + 1]
  removed = removed + trimSuccessful(successfulKey, KEYS[1], doneKey, now - resultTtl, limit)
  oldest = earliestSuccessful(successfulKey, KEYS[1], doneKey, oldest)
  removed = removed + trimFinished(failedKey, KEYS[1], now - resultTtl, limit)
  oldest = earliest(failedKey, oldest)
end

return { now, removed, oldest < 0 and -1 or oldest + resultTtl }
