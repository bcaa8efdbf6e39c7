--[[
  start: record that a suspect is about to start: announce its attempt.

  A suspect (a run whose previous lease expired) calls this and waits for
  the answer before it runs, alone in its process, so that if it kills its
  worker again that expiry is counted against it (its `recoveries`), and
  not against the runs that merely waited beside it. The announcement
  charges no attempt: a kill may land after it reaches Redis and before the
  handler's first line. Its start is recorded like any other's, with a start
  mark once it has run for a while (acknowledge.lua); an expiry before that
  counts a recovery only, and at `maxRecoveries` the run is quarantined
  (reap.lua).

  KEYS      leases, running (of the run's queue) (lua/keys.mjs)

  ARGV[1]   id
  ARGV[2]   lease token

  Returns   1 when announced; 0 when the lease no longer holds (do not start).

  Complexity: O(1).
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"
--- @keys

local lease = redis.call('HGET', leasesKey, ARGV[1])
if not leaseHolds(lease, ARGV[2], redis.call('ZSCORE', runningKey, ARGV[1]), nowMs()) then return 0 end
if select(5, parseLease(lease)) == '0' then redis.call('HSET', leasesKey, ARGV[1], flaggedLease(lease, '3')) end
return 1
