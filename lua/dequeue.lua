--[[
  dequeue: remove a pending run (READY, or deferred) of a queue, and its record.

  A leased run cannot be dequeued (its worker holds it: let it finish, or
  stop that worker); a finished run is removed by purge or when its result
  expires. A run of another queue is not touched: the caller read the run
  in this queue, and the id may have been enqueued into another since.

  KEYS[1]   run HASH
  KEYS[2]   ready ZSET         of the queue
  KEYS[3]   deferred ZSET
  KEYS[4]   stats HASH
  KEYS[5]   leases        HASH    run id → lease value
  KEYS[6]   fresh         HASH    run id → record of a run no attempt settled
  KEYS[7]   withdrawn     HASH    tombstones of the queue's ready LIST
  KEYS[8]   callRecord    STRING  this call's record slot (see includes/call-record)
  KEYS[9]   waiting       ZSET    run id → registration expiry: runs somebody waits on
  KEYS[10]  finished      STREAM  where a registered run is published (includes/finished)
  KEYS[11]  done          HASH    run id → record of a run that succeeded from its fresh record
  KEYS[12]  group prefix          the queue's `q:<queue>:group:`: the held set of
                          a run's limit group is derived from it (same hash
                          tag, hence slot; see includes/limit-groups)
  KEYS[13]  groups        ZSET    the queue's groups with parked runs or leases
  KEYS[14]  parked        STRING  the queue's parked runs' count

  ARGV[1]   id
  ARGV[2]   callId        unique to this call; the same for its copies
  ARGV[3]   queue

  Returns   { 1, 'READY' } when removed; otherwise { 0, status } with the
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

if recalledReply(KEYS[8], ARGV[2]) then return { 1, 'READY' } end

local id = ARGV[1]
local status, queue, fresh
local record = redis.call('HGET', KEYS[6], id)
if record then
  -- A fresh run (no attempt settled) is READY, unless leased.
  status, queue, fresh = 'READY', select(5, parseFresh(record)), true
else
  -- A run never claimed has no status field: it is READY.
  local f = redis.call('HMGET', KEYS[1], 'status', 'queue')
  status, queue = f[1] or (f[2] and 'READY'), f[2]
  if not queue then
    -- Nor a run hash: a run that succeeded from its fresh record, or none.
    local done = redis.call('HGET', KEYS[11], id)
    if done then status, queue = 'SUCCESSFUL', doneQueue(done) end
  end
end
if queue ~= ARGV[3] then return { 0, '' } end
-- A leased run is RUNNING whatever its record says (claims do not write it).
if redis.call('HEXISTS', KEYS[5], id) == 1 then status = 'RUNNING' end
if status ~= 'READY' then return { 0, status } end
local inSets = redis.call('ZREM', KEYS[2], id) + redis.call('ZREM', KEYS[3], id)
-- Only a fresh run enqueued ready now at priority 0 waits in the list.
if inSets == 0 and fresh then withdraw(KEYS[7], id) end
-- A run of a limit group may be parked in its group's held set instead.
if inSets == 0 and not fresh then
  local group = redis.call('HGET', KEYS[1], 'group')
  if group then withdrawParked(KEYS[12], KEYS[13], KEYS[14], group, id) end
end
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[6], id)
redis.call('HINCRBY', KEYS[4], 'dequeued', 1)
if redis.call('EXISTS', KEYS[9]) == 1 and redis.call('ZSCORE', KEYS[9], id) then
  publishFinished(KEYS[9], KEYS[10], nowMs(), id, { 'removed', 'dequeued' })
end
recordReply(KEYS[8], ARGV[2], 'READY')
return { 1, 'READY' }
