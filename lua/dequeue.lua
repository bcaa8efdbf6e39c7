--[[
  dequeue: remove a pending run (READY, or deferred) and its record.

  A leased run cannot be dequeued (its worker holds it: let it finish, or
  stop that worker); a finished run is removed by purge or by its TTL.

  KEYS[1]   run HASH
  KEYS[2]   ready ZSET         of the run's queue
  KEYS[3]   deferred ZSET
  KEYS[4]   stats HASH
  KEYS[5]   leases        HASH    run id → lease value
  KEYS[6]   fresh         HASH    run id → record of a run no attempt settled
  KEYS[7]   withdrawn     HASH    tombstones of the queue's ready LIST
  KEYS[8]   lastCall      STRING  this call's record slot (see includes/call-record)

  ARGV[1]   id
  ARGV[2]   callId        unique to this call; the same for its copies

  Returns   { 1, 'READY' } when removed; otherwise { 0, status } with the
            run's status ('' when there is no such run), nothing changed. A
            replay of a call that removed the run answers as its first copy
            did and changes nothing (a run enqueued since with the same id
            stays).

  A run waiting in the ready LIST stays there as a tombstone, skipped by the
  claim that reaches it (see includes/ready-list): removing it would scan
  the list.

  Complexity: O(log N).
]]
--- @include "includes/ready-list"
--- @include "includes/call-record"

if recalledReply(KEYS[8], ARGV[2]) then return { 1, 'READY' } end

local f = redis.call('HMGET', KEYS[1], 'status', 'score')
-- A fresh run (no attempt settled) is READY, unless leased.
local fresh = not f[2] and redis.call('HEXISTS', KEYS[6], ARGV[1]) == 1
if fresh then f = { false, true } end
-- A leased run is RUNNING whatever its hash says (claims do not write it);
-- a run never claimed has no status field: it is READY.
local status = f[1] or (f[2] and 'READY')
if status and redis.call('HEXISTS', KEYS[5], ARGV[1]) == 1 then status = 'RUNNING' end
if status ~= 'READY' then return { 0, status or '' } end
local inSets = redis.call('ZREM', KEYS[2], ARGV[1]) + redis.call('ZREM', KEYS[3], ARGV[1])
-- Only a fresh run enqueued ready now at priority 0 waits in the list.
if inSets == 0 and fresh then withdraw(KEYS[7], ARGV[1]) end
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[6], ARGV[1])
redis.call('HINCRBY', KEYS[4], 'dequeued', 1)
recordReply(KEYS[8], ARGV[2], 'READY')
return { 1, 'READY' }
