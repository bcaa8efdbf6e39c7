--[[
  requeue: send a FAILED, QUARANTINED or CANCELLED run back to READY, after a fix.

  What a requeue does to the run is includes/requeue-run's rule, which
  requeue-all.lua applies to a whole segment in chunks.

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
--- @include "includes/requeue-run"

local first = recalledReply(KEYS[9], ARGV[2])
if first then return { 1, first } end

local queueKeys = {
  ready = KEYS[2], failed = KEYS[3], quarantined = KEYS[4], cancelled = KEYS[12] or false,
  classes = KEYS[11], leases = KEYS[7], fresh = KEYS[8], done = KEYS[10],
}
local requeued, status = requeueRun(queueKeys, KEYS[1], ARGV[1], ARGV[3])
if not requeued then return { 0, status } end
redis.call('ZADD', KEYS[5], 0, 'w')
redis.call('HINCRBY', KEYS[6], 'requeued', 1)
recordReply(KEYS[9], ARGV[2], status)
return { 1, status }
