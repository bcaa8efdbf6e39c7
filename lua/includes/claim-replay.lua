--- @include "includes/append"
--- @include "includes/fresh"
--- @include "includes/lease"
--- @include "includes/hand-back"
--- @include "includes/limit-groups"

-- A replayed claim (the same call again: ioredis resends a command whose
-- reply a dropped connection lost) finds its call record (includes/call-record):
-- Redis ran its first copy, whose reply the consumer never got, so the runs
-- that copy leased would wait out their lease. Their leases carry this call's
-- id as token and deadlines from the first copy's time on; they are handed
-- back to READY (their attempt never started, so it never counts), and this
-- copy claims them again, first in ready order: the consumer gets them
-- instead of leaving them to expire. The first copy's `started` counts stay:
-- a replay is rare. Each call has a record slot of its own, so two claims in
-- flight when a connection drops are both recognised.

-- Hands back the runs the first copy (at `firstNow`) leased in each of the
-- call's queues, and counts them per queue in c.handedBack (the rate gate
-- takes their log entries out too: includes/gate-rate). `keysOf(q)`: queue q's
-- keys by name.
local function handBackFirstCopy(c, queueCount, keysOf, firstNow)
  for q = 1, queueCount do
    local k = keysOf(q)
    local leased = redis.call('ZRANGE', k.running, firstNow, '+inf', 'BYSCORE', 'WITHSCORES')
    for j = 1, #leased, 2 do
      local id = leased[j]
      if leaseHolds(redis.call('HGET', c.leasesKey, id), c.token, leased[j + 1], c.now) then
        handBack(c.leasesKey, k.running, k.ready, c.freshKey, c.runPrefix, id)
        c.handedBack[q] = (c.handedBack[q] or 0) + 1
        -- A run of a limit group leaves its group's lease and log entry too;
        -- the group has room again, so this copy looks at it first.
        local group = redis.call('HGET', c.runPrefix .. id, 'group')
        if group then
          redis.call('SREM', groupKey(k.groupPrefix, 'running', group), id)
          redis.call('ZREM', groupKey(k.groupPrefix, 'starts', group), c.token .. '#' .. id)
          redis.call('ZADD', k.groups, 0, group)
        end
      end
    end
  end
end
