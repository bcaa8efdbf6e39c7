-- The queue cap gate (includes/gates; docs/storage.md, "Rate limits and
-- concurrency caps"). A queue's pause flag and concurrency cap are read
-- together, one MGET per queue and call (the call that read the pause flag
-- alone before). A capped queue leases at most `cap - ZCARD(running)` runs:
-- its running set, every lease of the queue whether started, only held, or
-- expired and not yet reaped, is what counts as running, so the cap is never
-- exceeded; a queue at its cap takes no part in the rotation (its runs wait
-- READY, uncharged, at their place), and its wake marker is removed like a
-- paused queue's. The running set is written by the leases themselves, so
-- the gate records nothing; its queue is reported `capped`.
local capGate = {
  flag = 'cap',
  room = function(c, q, k, cap)
    if not cap then return nil end
    c.hasCap[q] = true
    return math.max(0, tonumber(cap) - redis.call('ZCARD', k.running))
  end,
  reply = function(c, q, _, out)
    if c.hasCap[q] then out.capped = true end
  end,
}
