--[[
  start: record that a suspect run (one whose previous lease expired) is
  starting, so that if its worker dies again the reaper blames this run and
  not the runs that merely waited beside it. Runs that never expired skip this
  call: their start costs nothing.

  KEYS[1]   run HASH
  KEYS[2]   leases        HASH    run id → lease value
  KEYS[3]   running ZSET  of the run's queue
  KEYS[4]   fresh         HASH    run id → record of a run no attempt settled
                          (a suspect was reaped, so it has left it; moved
                          here anyway, so the mark has a run hash to go to)

  ARGV[1]   id
  ARGV[2]   lease token

  Returns   1 when recorded; 0 when the lease no longer holds (do not start).

  Complexity: O(1).
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"
--- @include "includes/fresh"

local lease = redis.call('HGET', KEYS[2], ARGV[1])
if not leaseHolds(lease, ARGV[2], redis.call('ZSCORE', KEYS[3], ARGV[1]), nowMs()) then return 0 end
materialize(KEYS[4], KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], 'startedToken', ARGV[2])
return 1
