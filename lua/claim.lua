--[[
  claim: lease up to `want` ready runs across a worker's queues, fairly.

  Each claimed run gets a fresh lease token and a deadline from the server
  clock; its stored payload is returned untouched. The lease is written to the
  running set and the leases hash, one call each for the whole batch; the
  run is only read (see includes/lease and includes/fresh).

  KEYS[1]   seq           STRING  counter that also mints lease tokens
  KEYS[2]   runPrefix     (prefix of run HASH keys; ids come from the ready
                          sets, so run keys are derived from this declared
                          prefix and share its hash tag, hence its slot)
  KEYS[3]   brokerWake    ZSET    marker that wakes a broker: the first lease
                          of an idle queue gives the reaper something to watch
  KEYS[4]   leases        HASH    run id → lease value
  KEYS[5]   fresh         HASH    run id → record of a run no attempt settled
                          (read for the whole pop in one call; other runs
                          are read from their run hash)
  KEYS[6..] per queue q, 4 keys each: ready ZSET, running ZSET, wake ZSET,
            metrics prefix (per-minute buckets: runs started, summed wait)

  ARGV[1]   Q             number of queues
  ARGV[2]   want          most runs to claim
  ARGV[3]   leaseTtl      default lease length in ms
  ARGV[4]   worker        the claiming worker's id, JSON-encoded ("host:pid:slot")
  ARGV[5]   offset        0-based queue to start the rotation at (the caller
                          rotates it so no queue is always served first)

  Returns   { now, runs, ghosts }
            runs: 7 values per claimed run: id, queue index, token, deadline,
                  payload, enqueuedAt, history. History is 0 for a first
                  attempt (nothing else to say: one attempt, no errors, no
                  recoveries), -1 for a first attempt whose payload value is
                  its whole fresh record (the payload follows its fifth '|'),
                  else a table { attempts (this one included),
                  worker ids fragment (this worker included), errors
                  fragment, startedAt, recoveries (lease expiries in a row:
                  above 0 the run is a suspect, run alone) }.
            ghosts: ids found in a ready set without a run hash (removed from
                  the set and reported so the caller can log them)

  Complexity: O(Q + n log N) for n claimed runs.
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/chunks"
--- @include "includes/metrics"
--- @include "includes/fresh"

local rcall = redis.call
local now = nowMs()
local queueCount = tonumber(ARGV[1])
local want = tonumber(ARGV[2])
local defaultTtl = tonumber(ARGV[3])
local worker = ARGV[4]
local offset = tonumber(ARGV[5]) % queueCount
local runPrefix = KEYS[2]
local leasesKey = KEYS[4]
local freshKey = KEYS[5]
-- Lease values are `token|claimedAt|attempt|recoveries|worker`; a first
-- attempt's tail is the same for the whole claim.
local firstTail = '|' .. now .. '|1|0|' .. worker
-- Most runs take the default lease: convert its deadline to a string once.
local defaultDeadline = now + defaultTtl
local defaultDeadlineText = tostring(defaultDeadline)

local tokenBase = rcall('INCRBY', KEYS[1], want) - want
local runs, ghosts, leases, values = {}, {}, {}, {}
-- Per queue: runs started by this claim and their summed wait since enqueue (ms).
local started, waited = {}, {}
local n = 0
local claimed = 0
local active = {}
for q = 1, queueCount do active[q] = true end
local activeCount = queueCount

-- Round-robin in shares: each pass gives every queue that still has runs an
-- equal share of what is left, so one backlogged queue cannot starve another.
while claimed < want and activeCount > 0 do
  local share = math.ceil((want - claimed) / activeCount)
  for step = 0, queueCount - 1 do
    local q = (offset + step) % queueCount + 1
    if active[q] and claimed < want then
      local k = 6 + 4 * (q - 1)
      local take = math.min(share, want - claimed)
      local popped = rcall('ZPOPMIN', KEYS[k], take)
      if #popped / 2 < take then
        active[q] = false
        activeCount = activeCount - 1
      end
      local lease = leases[q]
      if not lease then
        lease = {}
        leases[q] = lease
      end
      local ids = {}
      for p = 1, #popped, 2 do ids[#ids + 1] = popped[p] end
      local records = inChunks('HMGET', freshKey, ids)
      for j = 1, #ids do
        local id = ids[j]
        local runKey
        local f
        if records[j] then
          -- Only the head is parsed here; the client takes the payload from
          -- the record itself (history -1 says so), sparing a copy per run.
          local enqueuedAt, leaseTtl = freshHead(records[j])
          f = { records[j], false, enqueuedAt, leaseTtl ~= '' and leaseTtl, false }
        else
          -- A first attempt needs these five; a later one reads its history below.
          runKey = runPrefix .. id
          f = rcall('HMGET', runKey, 'payload', 'attempts', 'enqueuedAt', 'leaseTtl', 'recoveries')
        end
        if not f[1] then
          ghosts[#ghosts + 1] = id
        else
          claimed = claimed + 1
          local token = tokenBase + claimed
          local deadline, deadlineText = defaultDeadline, defaultDeadlineText
          if f[4] then
            deadline = now + tonumber(f[4])
            deadlineText = deadline
          end
          -- The run hash counts settled attempts; this one is the next.
          local attempts = (tonumber(f[2]) or 0) + 1
          local history = records[j] and -1 or 0
          local v = #values
          values[v + 1] = id
          if attempts == 1 and not f[5] then
            values[v + 2] = token .. firstTail
          else
            local recoveries = tonumber(f[5]) or 0
            local h = rcall('HMGET', runKey, 'workers', 'errors', 'startedAt')
            values[v + 2] = token .. '|' .. now .. '|' .. attempts .. '|' .. recoveries .. '|' .. worker
            history = { attempts, appendFragment(h[1], worker), h[2] or '', h[3] or now, recoveries }
          end
          lease[#lease + 1] = deadlineText
          lease[#lease + 1] = id
          started[q] = (started[q] or 0) + 1
          waited[q] = (waited[q] or 0) + (now - (tonumber(f[3]) or now))
          runs[n + 1] = id
          runs[n + 2] = q
          runs[n + 3] = token
          runs[n + 4] = deadline
          runs[n + 5] = f[1]
          runs[n + 6] = f[3]
          runs[n + 7] = history
          n = n + 7
        end
      end
    end
  end
end

inChunks('HSET', leasesKey, values)

local wakeBroker = false
for q = 1, queueCount do
  local k = 6 + 4 * (q - 1)
  if started[q] then
    countMinute(KEYS[k + 3], now, 'started', started[q])
    countMinute(KEYS[k + 3], now, 'waitMs', waited[q])
  end
  local lease = leases[q]
  if lease and #lease > 0 then
    -- An idle broker sleeps until the earliest lease deadline it knows of;
    -- with no lease at all it sleeps until woken here.
    if rcall('EXISTS', KEYS[k + 1]) == 0 then wakeBroker = true end
    inChunks('ZADD', KEYS[k + 1], lease)
  end
  -- Keep the wake marker truthful: present exactly when runs are waiting, so
  -- the next idle worker wakes for what this claim left behind.
  if rcall('ZCARD', KEYS[k]) > 0 then
    rcall('ZADD', KEYS[k + 2], 0, 'w')
  else
    rcall('ZREM', KEYS[k + 2], 'w')
  end
end

if wakeBroker then rcall('ZADD', KEYS[3], 0, 'w') end

return { now, runs, ghosts }
