--[[
  trim: remove finished runs whose result TTL has passed, with their index
  entries (see includes/trim), in queues whose own acknowledgements have
  stopped doing it: a quiet queue's finished runs still go on time.

  Run by brokers; several may run it at once (each removal is atomic).

  KEYS      runPrefix (ids come from the indexes); per queue: successful,
            failed (the indexes of the default TTLs), resultClasses (the queue's
            other TTL classes, whose indexes are derived from the first two: see
            includes/result-classes); then done; then per queue: cancelled
            (kept for failedTtl; absent in a call of an older client)
            (lua/keys.mjs)

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

--- @keys

-- Trims finished index `key` of `outcome` for `ttl`, up to `limit` runs, and
-- counts its oldest run's expiry in `nextExpiry`; returns how many runs it
-- removed and when its oldest left finished (-1 when it is empty).
local function trimOne(outcome, key, ttl)
  local count = trimIndex(outcome, key, runPrefix, doneKey, now - ttl, limit)
  local oldest
  if outcome == 'successful' then
    oldest = earliestSuccessful(key, runPrefix, doneKey, -1)
  else
    oldest = earliest(key, -1)
  end
  sooner(oldest, ttl)
  return count, oldest
end

-- Each queue's default indexes, then every TTL class of its `result-classes`
-- SET, each for its own TTL; a class whose index is then empty leaves the SET
-- (the next acknowledgement that appends to it adds it again).
for q = 1, queueCount do
  local k = queueKeys(q)
  local successfulKey, failedKey, classesKey = k.successful, k.failed, k.resultClasses
  removed = removed + trimOne('successful', successfulKey, successfulTtl) + trimOne('failed', failedKey, failedTtl)
  for _, member in ipairs(redis.call('SMEMBERS', classesKey)) do
    local key, outcome, ttl = classKey(member, successfulKey, failedKey)
    local count, oldest = trimOne(outcome, key, ttl)
    removed = removed + count
    if oldest < 0 then redis.call('SREM', classesKey, member) end
  end
  local cancelledKey = k.cancelled
  if cancelledKey then removed = removed + trimOne('failed', cancelledKey, failedTtl) end
end

return { now, removed, nextExpiry }
