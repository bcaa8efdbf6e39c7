--[[
  start: record that the attempt of a leased run starts, before it starts.

  From then on an expiry of the lease charges the attempt (see reap.lua).
  A suspect (a run whose previous lease expired) calls this and waits for
  the answer before it runs, so that if it kills its worker again it is
  blamed, and not the runs that merely waited beside it. Other runs record
  their start after it, with their holder's next acknowledgement call (a
  start mark, see acknowledge.lua): their start costs no round trip.

  KEYS[1]   leases        HASH    run id → lease value
  KEYS[2]   running ZSET  of the run's queue

  ARGV[1]   id
  ARGV[2]   lease token

  Returns   1 when recorded; 0 when the lease no longer holds (do not start).

  Complexity: O(1).
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"

local lease = redis.call('HGET', KEYS[1], ARGV[1])
if not leaseHolds(lease, ARGV[2], redis.call('ZSCORE', KEYS[2], ARGV[1]), nowMs()) then return 0 end
if select(5, parseLease(lease)) == '0' then redis.call('HSET', KEYS[1], ARGV[1], startedLease(lease)) end
return 1
