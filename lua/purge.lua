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

  Returns   the number of runs removed.

  Complexity: O(N) for N runs in the queue.
]]
local removed = 0
for s = 2, 7 do
  local ids = redis.call('ZRANGE', KEYS[s], 0, -1)
  for first = 1, #ids, 500 do
    local keys = {}
    for i = first, math.min(first + 499, #ids) do keys[#keys + 1] = KEYS[1] .. ids[i] end
    redis.call('UNLINK', unpack(keys))
    redis.call('HDEL', KEYS[10], unpack(ids, first, math.min(first + 499, #ids)))
    if s == 4 then redis.call('HDEL', KEYS[9], unpack(ids, first, math.min(first + 499, #ids))) end
  end
  removed = removed + #ids
  redis.call('DEL', KEYS[s])
end
redis.call('DEL', KEYS[8])
return removed
