--[[
  reap: claim runs whose lease expired, for the broker to settle.

  Each expired run gets a fresh token (so the old holder's late ack or renewal
  is rejected) and a short claim deadline. Its `recoveries` count (lease
  expiries in a row) grows on a first expiry, and afterwards only if the run
  had started (see start.lua): a suspect that only waited beside a run that
  killed its worker is not blamed for that death. The broker then asks the run's retry
  policy and acknowledges it under this token; if the broker dies first, the
  claim expires and another broker reaps the run again. Several brokers may run
  this at once: an expired run is claimed by exactly one call.

  KEYS[1]   seq           STRING  counter that mints lease tokens
  KEYS[2]   runPrefix     (prefix of run HASH keys; ids come from the running
                          sets, so run keys are derived from this declared
                          prefix and share its hash tag, hence its slot)
  KEYS[3]   leases        HASH    run id → lease value
  KEYS[4]   fresh         HASH    run id → record of a run no attempt settled
                          (a reaped run moves to its run hash: its recovery
                          count is kept there)
  KEYS[5..] per queue q: running ZSET

  ARGV[1]   Q             number of queues
  ARGV[2]   limit         most runs to claim per queue in this call
  ARGV[3]   claimTtl      ms the broker has to settle a claimed run

  Returns   { now, runs, ghosts, nextDeadline }
            nextDeadline: earliest lease deadline still running (ms), or -1
            runs: 10 values per claimed run: id, queue index, token, payload,
                  attempts (the expired one included), worker ids fragment
                  (its worker included), errors fragment, enqueuedAt,
                  startedAt, recoveries (lease expiries in a row, this one
                  included)
            ghosts: ids found running without a run hash or lease (removed,
                  reported)

  Complexity: O(Q log N + n log N) for n reaped runs.
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"
--- @include "includes/earliest"
--- @include "includes/fresh"

local now = nowMs()
local queueCount = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local claimTtl = tonumber(ARGV[3])
local runs, ghosts = {}, {}
local nextDeadline = -1

for q = 1, queueCount do
  local key = KEYS[4 + q]
  local expired = redis.call('ZRANGE', key, '-inf', '(' .. now, 'BYSCORE', 'LIMIT', 0, limit)
  for _, id in ipairs(expired) do
    local runKey = KEYS[2] .. id
    materialize(KEYS[4], runKey, id)
    local f = redis.call('HMGET', runKey,
      'payload', 'workers', 'errors', 'enqueuedAt', 'startedAt', 'recoveries', 'startedToken', 'attempts')
    local lease = redis.call('HGET', KEYS[3], id)
    if f[1] and not lease then
      -- Running without a lease value (a lease taken by an older version):
      -- settle it as an expired attempt by an unknown worker, never drop it.
      lease = '0|' .. now .. '|' .. ((tonumber(f[8]) or 0) + 1) .. '|0|"unknown"'
    end
    if not f[1] then
      redis.call('ZREM', key, id)
      redis.call('HDEL', KEYS[3], id)
      table.insert(ghosts, id)
    else
      local oldToken, claimedAt, attempt, _, worker = parseLease(lease)
      local recoveries = tonumber(f[6]) or 0
      if recoveries == 0 or f[7] == oldToken then
        recoveries = redis.call('HINCRBY', runKey, 'recoveries', 1)
      end
      -- The broker's claim keeps the attempt's record (when, which, by whom)
      -- under a new token: its acknowledgement settles that attempt.
      local token = redis.call('INCR', KEYS[1])
      redis.call('HSET', KEYS[3], id, token .. '|' .. claimedAt .. '|' .. attempt .. '|' .. recoveries .. '|' .. worker)
      redis.call('ZADD', key, now + claimTtl, id)
      local n = #runs
      runs[n + 1] = id
      runs[n + 2] = q
      runs[n + 3] = token
      runs[n + 4] = f[1]
      runs[n + 5] = attempt
      runs[n + 6] = attempt == 1 and worker or appendFragment(f[2], worker)
      runs[n + 7] = f[3] or ''
      runs[n + 8] = f[4]
      runs[n + 9] = f[5] or claimedAt
      runs[n + 10] = recoveries
    end
  end
  nextDeadline = earliest(key, nextDeadline)
end

return { now, runs, ghosts, nextDeadline }
