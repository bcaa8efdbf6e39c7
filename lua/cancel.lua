--[[
  cancel: finish a pending or running run CANCELLED, from any process.

  A pending run (READY, or deferred: a first wait or a retry's backoff) leaves
  its segment. A running run (leased: held or started) loses its lease: its
  value in `leases` and its member of `running` go in this script, as a
  reaper's recovery would take them, so every later write of its holder (an
  outcome, a start mark, a release, a renewal) is stale and discarded (R4).
  Either way the run settles into its run hash as CANCELLED with its finish
  time, and into the queue's `cancelled` index, kept for `cancelledTtl` like a
  failure and trimmed with it. An attempt whose start was recorded is counted
  as settled (attempts, its worker); a held, unstarted one is not charged.

  A holder's next renewal finds its lease gone and the run CANCELLED, and is
  answered 'cancelled' (renew.lua): its attempt's signal aborts with
  CancelledError, or a prefetched run of it is not started.

  KEYS      run, ready, deferred, running, cancelled, stats, leases, fresh,
            withdrawn, callRecord, waiting, finished, done, metrics, groupPrefix
            (the held set of a run's limit group is derived from it), groups,
            parked, wake, runPrefix, flowPrefix, queuePrefix, brokerWake,
            flowWaiting (lua/keys.mjs)

  ARGV[1]   id
  ARGV[2]   callId        unique to this call; the same for its copies
  ARGV[3]   queue         the run's queue: a run of another queue is not touched
  ARGV[4]   cancelledTtl  ms a cancelled run is kept (0 = not kept: deleted
                          once published to its waiters)
  ARGV[5]   flowTtl       ms a flow is kept once it ends (includes/flow-settle)

  A flow node may be cancelled WAITING too (its dependencies not settled):
  it leaves its queue's `waiting` set. A cancelled flow node's outcome
  goes along its edges (includes/flow-settle): its dependents are settled
  by their edges' policies.

  Returns   { 1, the status it had ('READY', 'RUNNING' or 'WAITING') } when this call
            cancelled it; { 0, 'CANCELLED' } when it already was (nothing
            changed: cancelling is idempotent); otherwise { 0, its status }
            ('' when the queue has no such run) and nothing changed. A replay
            of a call that cancelled the run answers as its first copy did
            and changes nothing, whatever the run did since.

  A cancelled run somebody waits on is published with its fields, so its
  waiter ends; one EXISTS when nobody waits.

  A running run of a limit group makes its group due at once when the group
  holds parked runs (includes/limit-groups, freeGroup), and wakes the queue.

  Complexity: O(log N).
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/fresh"
--- @include "includes/done"
--- @include "includes/call-record"
--- @include "includes/cancel-run"
--- @include "includes/finished"
--- @include "includes/metrics"
--- @include "includes/flow-settle"
--- @keys

local first = recalledReply(callRecordKey, ARGV[2])
if first then return { 1, first } end

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
    local done = redis.call('HGET', doneKey, id)
    if done then status, queue = 'SUCCESSFUL', doneQueue(done) end
  end
end
if queue ~= ARGV[3] then return { 0, '' } end
local lease = redis.call('HGET', leasesKey, id)
-- A leased run is RUNNING whatever its record says (claims do not write it).
if lease then status = 'RUNNING' end
if status ~= 'READY' and status ~= 'RUNNING' and status ~= 'WAITING' then return { 0, status } end

local now = nowMs()
local nowText = string.format('%d', now)
local k = { run = runKey, leases = leasesKey, fresh = freshKey, ready = readyKey, deferred = deferredKey,
  running = runningKey, withdrawn = withdrawnKey, groupPrefix = groupPrefix, groups = groupsKey, parked = parkedKey,
  wake = wakeKey, flowWaiting = flowWaitingKey }
local fields = takeForCancel(k, id, record, status, lease, nowText)
redis.call('HSET', runKey, unpack(fields))
redis.call('HINCRBY', statsKey, 'cancelled', 1)
countMinute(metricsKey, now, 'cancelled', 1)
if redis.call('EXISTS', waitingKey) == 1 and redis.call('ZSCORE', waitingKey, id) then
  publishFinished(waitingKey, finishedKey, now, id, redis.call('HGETALL', runKey))
end
-- A flow node's dependents are settled by its edges (a plain run: one HMGET).
if not fresh then
  local fx = flowContext(now, runPrefix, flowPrefix, queuePrefix, waitingKey, finishedKey, tonumber(ARGV[4]),
    tonumber(ARGV[5]))
  settleFlowNodes(fx, { { id, 'C', '' } })
  endFlowSettle(fx, brokerWakeKey)
end
if tonumber(ARGV[4]) > 0 then
  redis.call('ZADD', cancelledKey, nowText, id)
else
  redis.call('DEL', runKey)
end
recordReply(callRecordKey, ARGV[2], status)
return { 1, status }
