--[[
  requeue: send a FAILED, QUARANTINED or CANCELLED run back to READY, after a fix.

  The run keeps its id, its attempt count and its error history; its result,
  quarantine record, recovery count and TTL are cleared, and it takes back its
  original place in its queue (ready score from enqueue). A requeued run has
  no TTL (a run finished by an older layout had one).

  KEYS[1]   run HASH
  KEYS[2]   ready ZSET         of the run's queue
  KEYS[3]   failed ZSET
  KEYS[4]   quarantined ZSET
  KEYS[5]   wake ZSET
  KEYS[6]   stats HASH
  KEYS[7]   leases        HASH    run id → lease value
  KEYS[8]   fresh         HASH    run id → record of a run no attempt settled
  KEYS[9]   callRecord    STRING  this call's record slot (see includes/call-record)
  KEYS[10]  done          HASH    run id → record of a run that succeeded from its fresh record
  KEYS[11]  result-classes SET    the queue's TTL classes in use (includes/result-classes):
                          a failed run kept for its task's own TTL is in the
                          failed index of its class, derived from KEYS[3]
  KEYS[12]  cancelled ZSET     of the queue (absent in a call of an older client)

  ARGV[1]   id
  ARGV[2]   callId        unique to this call; the same for its copies
  ARGV[3]   queue         the run's queue: a run of another queue is not touched

  Returns   { 1, the status the run had ('FAILED', 'QUARANTINED' or 'CANCELLED') } when it
            was requeued; otherwise { 0, its current status ('' when there is
            no such run) }, and nothing was changed. A replay of a call that
            requeued the run answers as its first copy did and changes
            nothing, whatever the run did since.

  Complexity: O(log N + C) for C TTL classes in use.
]]
--- @include "includes/fresh"
--- @include "includes/done"
--- @include "includes/call-record"
--- @include "includes/result-classes"

local first = recalledReply(KEYS[9], ARGV[2])
if first then return { 1, first } end

local f = redis.call('HMGET', KEYS[1], 'status', 'score', 'queue')
local status, queue = f[1] or (f[2] and 'READY'), f[3]
-- A fresh run (no attempt settled) has no run hash: it is READY.
local record = redis.call('HGET', KEYS[8], ARGV[1])
if record then status, queue = 'READY', select(5, parseFresh(record)) end
-- A run that succeeded from its fresh record has neither: it is SUCCESSFUL.
if not queue then
  local done = redis.call('HGET', KEYS[10], ARGV[1])
  if done then status, queue = 'SUCCESSFUL', doneQueue(done) end
end
if queue ~= ARGV[3] then return { 0, '' } end
-- A leased run is RUNNING whatever its hash says (claims do not write it).
if redis.call('HEXISTS', KEYS[7], ARGV[1]) == 1 then status = 'RUNNING' end
if status ~= 'FAILED' and status ~= 'QUARANTINED' and status ~= 'CANCELLED' then
  return { 0, status or '' }
end

redis.call('HDEL', KEYS[1], 'result', 'finishedAt', 'quarantine', 'quarantinedAt', 'recoveries',
  'startedToken', 'runAfter')
redis.call('HSET', KEYS[1], 'status', 'READY')
redis.call('PERSIST', KEYS[1])
-- A failed run is in one failed index: the default one, or its TTL class's.
if redis.call('ZREM', KEYS[3], ARGV[1]) == 0 and status == 'FAILED' then
  for _, member in ipairs(redis.call('SMEMBERS', KEYS[11])) do
    local key, outcome = classKey(member, KEYS[3], KEYS[3])
    if outcome == 'failed' and redis.call('ZREM', key, ARGV[1]) == 1 then break end
  end
end
redis.call('ZREM', KEYS[4], ARGV[1])
if KEYS[12] then redis.call('ZREM', KEYS[12], ARGV[1]) end
redis.call('ZADD', KEYS[2], f[2], ARGV[1])
redis.call('ZADD', KEYS[5], 0, 'w')
redis.call('HINCRBY', KEYS[6], 'requeued', 1)
recordReply(KEYS[9], ARGV[2], status)
return { 1, status }
