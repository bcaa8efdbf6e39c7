--[[
  purge: remove every run of a queue, in every segment, with its record.

  One atomic call: Redis serves nothing else while it runs, for about a
  microsecond per run removed. Leased runs are removed too; their workers'
  acknowledgements are then discarded as stale. Counters and metrics stay.

  KEYS[1]   runPrefix     (prefix of run HASH keys; ids come from the
                          segments, so run keys are derived from this declared
                          prefix and share its hash tag, hence its slot)
  KEYS[2..7] the queue's segments: ready, deferred, running, successful,
            failed, quarantined (ZSETs)
  KEYS[8]   wake ZSET
  KEYS[9]   leases        HASH    run id → lease value (the running runs' are removed)
  KEYS[10]  fresh         HASH    run id → record of a run no attempt settled
  KEYS[11]  ready LIST    (see includes/ready-list)
  KEYS[12]  withdrawn     HASH    tombstones of the ready LIST
  KEYS[13]  lastCall      STRING  this call's record slot (see includes/call-record)

  ARGV[1]   callId        unique to this call; the same for its copies

  Returns   the number of runs removed. A replay of a call that ran answers
            as its first copy did and removes nothing (runs enqueued since
            stay).

  Complexity: O(N) for N runs in the queue.
]]
--- @include "includes/call-record"

local first = recalledReply(KEYS[13], ARGV[1])
if first then return tonumber(first) end

-- Removes the runs `ids` (their run hashes, fresh records and, for leased
-- runs, leases) in slices that `unpack` can take.
local function removeRuns(ids, leased)
  for first = 1, #ids, 500 do
    local last = math.min(first + 499, #ids)
    local keys = {}
    for i = first, last do keys[#keys + 1] = KEYS[1] .. ids[i] end
    redis.call('UNLINK', unpack(keys))
    redis.call('HDEL', KEYS[10], unpack(ids, first, last))
    if leased then redis.call('HDEL', KEYS[9], unpack(ids, first, last)) end
  end
end

local removed = 0
for s = 2, 7 do
  local ids = redis.call('ZRANGE', KEYS[s], 0, -1)
  removeRuns(ids, s == 4)
  removed = removed + #ids
end
-- The list's dead places name runs removed already (or come back, and
-- removed in their live place): only its live places count.
local listed = redis.call('LRANGE', KEYS[11], 0, -1)
removeRuns(listed, false)
removed = removed + #listed - (tonumber(redis.call('HGET', KEYS[12], '')) or 0)
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[11], KEYS[12])
recordReply(KEYS[13], ARGV[1], removed)
return removed
