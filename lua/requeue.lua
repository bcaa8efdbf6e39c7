--[[
  requeue: send a FAILED, QUARANTINED or CANCELLED run back to READY, after a fix.

  What a requeue does to the run is includes/requeue-run's rule, which
  requeue-all.lua applies to a whole segment in chunks.

  KEYS      run, ready, failed, quarantined, wake, stats, leases, fresh,
            callRecord, done, resultClasses (a failed run kept for its task's own
            TTL is in the failed index of its class, derived from `failed`),
            cancelled (lua/keys.mjs)

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
--- @keys

local first = recalledReply(callRecordKey, ARGV[2])
if first then return { 1, first } end

local queueKeys = {
  ready = readyKey, failed = failedKey, quarantined = quarantinedKey, cancelled = cancelledKey or false,
  classes = resultClassesKey, leases = leasesKey, fresh = freshKey, done = doneKey,
}
local requeued, status = requeueRun(queueKeys, runKey, ARGV[1], ARGV[3])
if not requeued then return { 0, status } end
redis.call('ZADD', wakeKey, 0, 'w')
redis.call('HINCRBY', statsKey, 'requeued', 1)
recordReply(callRecordKey, ARGV[2], status)
return { 1, status }
