--[[
  release: hand leased runs that never started back to READY, at once.

  Used when a worker stops with prefetched runs it will not execute. The
  attempt is undone (attempt count and worker id), the run keeps its place in
  its queue, and a waiting worker is woken. Fenced by the lease token: a run
  reaped or re-claimed meanwhile is left alone.

  KEYS[1..]    per queue q, 3 keys each: running ZSET, ready ZSET, wake ZSET
  KEYS[3Q+1..] per item i: its run HASH

  ARGV[1]   Q             number of distinct queues
  ARGV[2..] per item i, 3 values: id, queue index, lease token

  Returns   { now, released_1, ..., released_n } with 1 = released, 0 = stale

  Complexity: O(n log N) for n items.
]]
--- @include "includes/now"
--- @include "includes/lease"

local FIELDS = 3
local now = nowMs()
local queueCount = tonumber(ARGV[1])
local itemCount = (#ARGV - 1) / FIELDS
local reply = { now }
local woken = {}

for i = 1, itemCount do
  local a = 2 + (i - 1) * FIELDS
  local id, q, token = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2]
  local runKey = KEYS[3 * queueCount + i]
  local k = 1 + 3 * (q - 1)
  if holdsLease(runKey, token, now) then
    redis.call('ZREM', KEYS[k], id)
    local f = redis.call('HMGET', runKey, 'attempts', 'workers', 'score')
    local attempts = tonumber(f[1]) - 1
    -- Worker ids never contain a comma, so the last one is after the last comma.
    local workers = string.match(f[2], '^(.*),[^,]*$') or ''
    redis.call('HSET', runKey, 'status', 'READY', 'attempts', attempts, 'workers', workers)
    redis.call('HDEL', runKey, 'token', 'deadline')
    if attempts == 0 then redis.call('HDEL', runKey, 'startedAt', 'lastAttemptedAt') end
    redis.call('ZADD', KEYS[k + 1], f[3], id)
    woken[q] = true
    reply[i + 1] = 1
  else
    reply[i + 1] = 0
  end
end

for q in pairs(woken) do
  redis.call('ZADD', KEYS[1 + 3 * (q - 1) + 2], 0, 'w')
end

return reply
