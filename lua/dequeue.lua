--[[
  dequeue: remove a pending run (READY, or deferred) of a queue, and its record.

  A leased run cannot be dequeued (its worker holds it: let it finish, or
  stop that worker); a finished run is removed by purge or when its result
  expires. A run of another queue is not touched: the caller read the run
  in this queue, and the id may have been enqueued into another since.

  KEYS      run, ready, deferred, stats, leases, fresh, withdrawn, callRecord,
            waiting, finished, done, groupPrefix (the held set of a run's limit
            group is derived from it), groups, parked, runPrefix, flowPrefix,
            queuePrefix, brokerWake, flowWaiting (lua/keys.mjs)

  ARGV[1]   id
  ARGV[2]   callId        unique to this call; the same for its copies
  ARGV[3]   queue
  ARGV[4]   failedTtl     ms a failed run is kept (a flow node's dependents
                          this fails: includes/flow-settle)
  ARGV[5]   flowTtl       ms a flow is kept once it ends

  A flow node (READY, or WAITING on its dependencies) is removed too, and
  counts as CANCELLED for its flow: its dependents are settled by their
  edges' policies (includes/flow-settle), so none waits on it forever.

  Returns   { 1, the status it had ('READY' or 'WAITING') } when removed; otherwise { 0, status } with the
            run's status ('' when the queue has no such run), nothing
            changed. A replay of a call that removed the run answers as its
            first copy did and changes nothing (a run enqueued since with
            the same id stays).

  A run waiting in the ready LIST stays there as a tombstone, skipped by the
  claim that reaches it (see includes/ready-list): removing it would scan
  the list.

  A removed run somebody waits on is published as removed ('dequeued'), so
  its waiter stops waiting; one EXISTS when nobody waits.

  Complexity: O(log N).
]]
--- @include "includes/fresh"
--- @include "includes/done"
--- @include "includes/ready-list"
--- @include "includes/call-record"
--- @include "includes/limit-groups"
--- @include "includes/now"
--- @include "includes/finished"
--- @include "includes/flow-settle"
--- @keys

local replied = recalledReply(callRecordKey, ARGV[2])
if replied then return { 1, replied } end

local id = ARGV[1]
local status, queue, fresh
local record = redis.call('HGET', freshKey, id)
if record then
  -- A fresh run (no attempt settled) is READY, unless leased.
  status, queue, fresh = 'READY', select(5, parseFresh(record)), true
else
  -- A run never claimed has no status field: it is READY.
  local f = redis.call('HMGET', runKey, 'status', 'queue')
  status, queue = f[1] or (f[2] and 'READY'), f[2]
  if not queue then
    -- Nor a run hash: a run that succeeded from its fresh record, or none.
    local done = redis.call('HGET', doneKey, id)
    if done then status, queue = 'SUCCESSFUL', doneQueue(done) end
  end
end
if queue ~= ARGV[3] then return { 0, '' } end
-- A leased run is RUNNING whatever its record says (claims do not write it).
if redis.call('HEXISTS', leasesKey, id) == 1 then status = 'RUNNING' end
if status == 'WAITING' then
  redis.call('ZREM', flowWaitingKey, id)
elseif status ~= 'READY' then
  return { 0, status }
end
local inSets = redis.call('ZREM', readyKey, id) + redis.call('ZREM', deferredKey, id)
-- Only a fresh run enqueued ready now at priority 0 waits in the list.
if inSets == 0 and fresh then withdraw(withdrawnKey, id) end
-- A run of a limit group may be parked in its group's held set instead.
if inSets == 0 and not fresh then
  local group = redis.call('HGET', runKey, 'group')
  if group then withdrawParked(groupPrefix, groupsKey, parkedKey, group, id) end
end
if not fresh then
  local fx = flowContext(nowMs(), runPrefix, flowPrefix, queuePrefix, waitingKey, finishedKey, tonumber(ARGV[4]),
    tonumber(ARGV[5]))
  settleFlowNodes(fx, { { id, 'C', '' } })
  endFlowSettle(fx, brokerWakeKey)
end
redis.call('DEL', runKey)
redis.call('HDEL', freshKey, id)
redis.call('HINCRBY', statsKey, 'dequeued', 1)
if redis.call('EXISTS', waitingKey) == 1 and redis.call('ZSCORE', waitingKey, id) then
  publishFinished(waitingKey, finishedKey, nowMs(), id, { 'removed', 'dequeued' })
end
recordReply(callRecordKey, ARGV[2], status)
return { 1, status }
