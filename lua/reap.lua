--[[
  reap: settle the runs whose lease expired.

  A lease whose attempt never started (its holder only held the run:
  prefetched, or leased by a claim whose reply was lost, or the holder died
  before recording the start) hands its run back to READY at once, at its
  place in its queue, its attempts unchanged: a run that never started is
  never charged an attempt. A run whose attempt started is claimed for the
  broker instead, under this call's id as a fresh token (so the old holder's
  late acknowledgement or renewal is rejected) and a short claim deadline:
  the broker asks the run's retry policy and acknowledges it under that
  token; if the broker dies first, its claim expires and another broker
  reaps the run again (a claim's started flag is 2: the expiry was counted).

  `recoveries` counts lease expiries in a row, for poison protection. It
  grows on every expiry of a started attempt, and on the first expiry of a
  run that had not started: a run that kills its worker before the start mark
  lands would otherwise never be blamed. The run is then a suspect; it runs
  alone, and announces its start before it starts (start.lua), so from then
  on only its own deaths count. An expiry of an announced attempt whose
  start was not recorded counts a recovery and charges nothing: the run goes
  back to READY like a held one, until its recoveries reach `maxRecoveries`;
  then it is claimed for the broker like a started one, which quarantines it
  (it took down its worker that many times in a row, each time as it
  started). Several brokers may run this at once: an expired run is settled
  by exactly one call.

  KEYS      runPrefix (ids come from the running sets), leases, fresh (a counted
            recovery moves the run to its run hash); per queue: running, ready,
            wake, keyPrefix (its `groups` index and `group:` prefix are derived
            from it; see includes/limit-groups) (lua/keys.mjs)

  ARGV[1]   Q             number of queues
  ARGV[2]   limit         most runs to settle per queue in this call
  ARGV[3]   claimTtl      ms the broker has to settle a claimed run
  ARGV[4]   callId        unique to this call: the token of its claims
  ARGV[5]   maxRecoveries recoveries at which an announced attempt's expiry
                          goes to the broker (to be quarantined)

  Returns   { now, runs, ghosts, nextDeadline, returned }
            runs: 10 values per run claimed for the broker: id, queue index,
                  token, payload, attempts (the expired one included),
                  worker ids fragment (its worker included), errors
                  fragment, enqueuedAt, startedAt, recoveries (lease
                  expiries in a row, this one included)
            ghosts: ids found running without a run record (removed,
                  reported)
            nextDeadline: earliest lease deadline still running (ms), or -1
            returned: runs handed back to READY without being charged

  A run of a limit group handed back ends its lease: its group becomes due
  at once when it holds parked runs (includes/limit-groups, freeGroup). A run
  claimed for the broker keeps a lease: its group's place is freed by the
  broker's acknowledgement.

  Complexity: O(Q log N + n log N) for n settled runs.
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"
--- @include "includes/earliest"
--- @include "includes/fresh"
--- @include "includes/hand-back"
--- @include "includes/limit-groups"
--- @keys

local rcall = redis.call
local now = nowMs()
local queueCount = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local claimDeadline = string.format('%d', now + tonumber(ARGV[3]))
local token = ARGV[4]
local maxRecoveries = tonumber(ARGV[5])
local runs, ghosts = {}, {}
local returned = 0
local nextDeadline = -1

for q = 1, queueCount do
  local k = queueKeys(q)
  local runningKey = k.running
  local woken = false
  local expired = rcall('ZRANGE', runningKey, '-inf', '(' .. now, 'BYSCORE', 'LIMIT', 0, limit)
  for _, id in ipairs(expired) do
    local runKey = runPrefix .. id
    local record = rcall('HGET', freshKey, id)
    local f = rcall('HMGET', runKey, 'payload', 'recoveries', 'group')
    local lease = rcall('HGET', leasesKey, id)
    if not record and not f[1] then
      rcall('ZREM', runningKey, id)
      rcall('HDEL', leasesKey, id)
      ghosts[#ghosts + 1] = id
    else
      local recoveries = tonumber(f[2]) or 0
      local started, claimedAt, attempt, worker
      if lease then
        local flag
        _, _, _, _, flag, worker, claimedAt, attempt = parseLease(lease)
        if flag == '1' or flag == '3' then
          -- The expiry of a started or announced attempt: counted once, here.
          materialize(freshKey, runKey, id)
          recoveries = rcall('HINCRBY', runKey, 'recoveries', 1)
        end
        started = flag == '1' or flag == '2' or (flag == '3' and recoveries >= maxRecoveries)
      else
        -- Running without a lease value (a lease taken before leases had
        -- one): settle it as a started attempt by an unknown worker.
        local attempts = tonumber(rcall('HGET', runKey, 'attempts')) or 0
        started, claimedAt, attempt, worker = true, string.format('%d', now), tostring(attempts + 1), '"unknown"'
        materialize(freshKey, runKey, id)
        recoveries = rcall('HINCRBY', runKey, 'recoveries', 1)
      end
      if not started then
        -- (An announced attempt's recovery was counted above.)
        if recoveries == 0 then
          materialize(freshKey, runKey, id)
          rcall('HSET', runKey, 'recoveries', '1')
        end
        handBack(leasesKey, runningKey, k.ready, freshKey, runPrefix, id)
        if f[3] then freeGroup(k.keyPrefix .. 'group:', k.keyPrefix .. 'groups', f[3]) end
        returned = returned + 1
        woken = true
      else
        -- The broker's claim keeps the attempt's record (when, which, by
        -- whom) under a new token: its acknowledgement settles that attempt.
        rcall('HSET', leasesKey, id,
          token .. '|' .. claimedAt .. '|' .. attempt .. '|' .. recoveries .. '|2|' .. worker)
        rcall('ZADD', runningKey, claimDeadline, id)
        local h = rcall('HMGET', runKey, 'payload', 'workers', 'errors', 'enqueuedAt', 'startedAt')
        local n = #runs
        runs[n + 1] = id
        runs[n + 2] = q
        runs[n + 3] = token
        runs[n + 4] = h[1]
        runs[n + 5] = tonumber(attempt)
        runs[n + 6] = attempt == '1' and worker or appendFragment(h[2], worker)
        runs[n + 7] = h[3] or ''
        runs[n + 8] = h[4]
        runs[n + 9] = h[5] or claimedAt
        runs[n + 10] = recoveries
      end
    end
  end
  if woken then rcall('ZADD', k.wake, 0, 'w') end
  nextDeadline = earliest(runningKey, nextDeadline)
end

return { now, runs, ghosts, nextDeadline, returned }
