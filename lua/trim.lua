--[[
  trim: remove finished runs whose result TTL has passed, with their index
  entries (see includes/trim), in queues whose own acknowledgements have
  stopped doing it: a quiet queue's finished runs still go on time.

  Run by brokers; several may run it at once (each removal is atomic).

  KEYS[1]   runPrefix     (prefix of run HASH keys; ids come from the
                          indexes, so run keys are derived from this declared
                          prefix and share its hash tag, hence its slot)
  KEYS[2..] per queue q, 3 keys each: successful LIST, failed ZSET (the
            indexes of the default TTLs), result-classes SET (the queue's
            other TTL classes, whose indexes are derived from the first two:
            see includes/result-classes)
  KEYS[2+3Q] done         HASH    run id → record of a run that succeeded from its fresh record

  ARGV[1]   Q             number of queues
  ARGV[2]   successfulTtl ms a successful run of the default class is kept
  ARGV[3]   failedTtl     ms a failed run of the default class is kept
  ARGV[4]   limit         most runs to remove per index in this call

  Returns   { now, removed, nextExpiry }
            nextExpiry: when the next finished run's TTL passes (ms), or -1
            when no run is finished

  Complexity: O(Q log N + C log N + n log N) for C TTL classes in use and
  n removed runs.
]]
--- @include "includes/now"
--- @include "includes/chunks"
--- @include "includes/earliest"
--- @include "includes/trim"
--- @include "includes/result-classes"

local now = nowMs()
local queueCount = tonumber(ARGV[1])
local successfulTtl, failedTtl = tonumber(ARGV[2]), tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local removed, nextExpiry = 0, -1

-- The sooner of `nextExpiry` and `at + ttl` (`at` -1 for none).
local function sooner(at, ttl)
  if at >= 0 and (nextExpiry < 0 or at + ttl < nextExpiry) then nextExpiry = at + ttl end
end

local doneKey = KEYS[2 + 3 * queueCount]

-- Trims every TTL class of a queue (its `result-classes` SET `classesKey`)
-- as its default indexes are trimmed, up to `limit` runs each; a class whose
-- index is then empty leaves the SET (the next acknowledgement that appends
-- to it adds it again). Returns how many runs it removed.
local function trimClasses(classesKey, successfulKey, failedKey)
  local count = 0
  for _, member in ipairs(redis.call('SMEMBERS', classesKey)) do
    local key, outcome, ttl = classKey(member, successfulKey, failedKey)
    local oldest
    if outcome == 'successful' then
      count = count + trimSuccessful(key, KEYS[1], doneKey, now - ttl, limit)
      oldest = earliestSuccessful(key, KEYS[1], doneKey, -1)
    else
      count = count + trimFinished(key, KEYS[1], now - ttl, limit)
      oldest = earliest(key, -1)
    end
    if oldest < 0 then
      redis.call('SREM', classesKey, member)
    else
      sooner(oldest, ttl)
    end
  end
  return count
end

for q = 1, queueCount do
  local successfulKey, failedKey, classesKey = KEYS[3 * q - 1], KEYS[3 * q], KEYS[3 * q + 1]
  removed = removed + trimSuccessful(successfulKey, KEYS[1], doneKey, now - successfulTtl, limit)
  sooner(earliestSuccessful(successfulKey, KEYS[1], doneKey, -1), successfulTtl)
  removed = removed + trimFinished(failedKey, KEYS[1], now - failedTtl, limit)
  sooner(earliest(failedKey, -1), failedTtl)
  removed = removed + trimClasses(classesKey, successfulKey, failedKey)
end

return { now, removed, nextExpiry }
