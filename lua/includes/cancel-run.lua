--- @include "includes/lease"
--- @include "includes/fresh"
--- @include "includes/ready-list"
--- @include "includes/limit-groups"

-- Takes run `id` out of wherever it waits or runs, for a cancel (cancel.lua,
-- flow-cancel.lua): a leased run loses its lease whole (R3: its holder's
-- writes are stale from now on, and a start that was recorded counts as a
-- settled attempt); a pending run leaves its ready set, deferred set, ready
-- list (a tombstone) or its limit group's held set; a WAITING flow node its
-- queue's `waiting` set. `k`: the run's keys by name (runKey, leases,
-- fresh, and its queue's ready, deferred, running, withdrawn, groupPrefix,
-- groups, parked, wake, flowWaiting); `record`: its fresh record or false;
-- `status`: READY, RUNNING or WAITING; `lease`: its lease value or false.
-- Returns the run hash fields of the cancel (HSET pairs), its fresh record's
-- moved in.
local function takeForCancel(k, id, record, status, lease, nowText)
  local fresh = record and true or false
  local fields = { 'status', 'CANCELLED', 'finishedAt', nowText }
  if lease then
    redis.call('HDEL', k.leases, id)
    redis.call('ZREM', k.running, id)
    local _, _, _, _, started, worker, claimedAtText, attemptText = parseLease(lease)
    if started == '1' or started == '2' then
      -- Its start was recorded: the attempt counts as made (and settled here).
      -- (An announced start, 3, is not one: see start.lua.)
      local storedWorkers = not fresh and redis.call('HGET', k.run, 'workers') or false
      settledAttemptFields(fields, claimedAtText, attemptText, worker, storedWorkers)
    end
    -- Its group's place is free: a run of a limit group always has a run hash.
    local group = not fresh and redis.call('HGET', k.run, 'group')
    if group and freeGroup(k.groupPrefix, k.groups, group) then redis.call('ZADD', k.wake, 0, 'w') end
  elseif status == 'WAITING' then
    redis.call('ZREM', k.flowWaiting, id)
    redis.call('HDEL', k.run, 'pending')
  else
    local inSets = redis.call('ZREM', k.ready, id) + redis.call('ZREM', k.deferred, id)
    -- Only a fresh run enqueued ready now at priority 0 waits in the list.
    if inSets == 0 and fresh then withdraw(k.withdrawn, id) end
    -- A run of a limit group may be parked in its group's held set instead.
    if inSets == 0 and not fresh then
      local group = redis.call('HGET', k.run, 'group')
      if group then withdrawParked(k.groupPrefix, k.groups, k.parked, group, id) end
    end
  end
  if fresh then
    freshFields(fields, record, true)
    redis.call('HDEL', k.fresh, id)
  end
  return fields
end
