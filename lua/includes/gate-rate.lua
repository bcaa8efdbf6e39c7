-- The queue rate gate (includes/gates; docs/storage.md, "Rate limits and
-- concurrency caps"). Needs includes/chunks.
--
-- A rate-limited queue (`max` runs per `perMs`, its `rate` key holding
-- `max|perMs|slackMs`) keeps a sliding log of the runs it leased (a ZSET,
-- bounded by `max` entries): a claim first drops the entries older than
-- `perMs + slackMs`, then leases at most `max` minus the entries left. So at
-- most `max` runs are leased in any window of `perMs + slackMs`, and as each
-- starts within `slackMs` of its claim (or is handed back unstarted by its
-- worker), at most `max` start in any window of `perMs`. Entries are added at
-- claim only: a run its worker hands back keeps its entry (the limit errs on
-- the side of fewer starts, never more), except the runs a replay hands back
-- (their first copy's reply was lost, so no worker ever held them): their
-- entries are removed with them, and the replay logs what it leases again.
local rateGate = {
  flag = 'rate',
  room = function(c, q, k, rate)
    if not rate then return nil end
    local max, per, slack = string.match(rate, '^(%d+)|(%d+)|(%d+)$')
    max, per, slack = tonumber(max), tonumber(per), tonumber(slack)
    c.slackOf[q], c.windowOf[q] = slack, per + slack
    -- A replay: the runs the first copy leased went back unstarted, so
    -- their entries (`<call id>#<n>`, see record) leave the log too.
    local handedBack = c.handedBack[q]
    if handedBack then
      local entries = {}
      for j = 1, handedBack do entries[j] = c.token .. '#' .. j end
      inChunks('ZREM', k.starts, entries)
    end
    -- An entry at `now - window` or before no longer counts: the window is (now - window, now].
    redis.call('ZREMRANGEBYSCORE', k.starts, '-inf', c.now - c.windowOf[q])
    return math.max(0, max - redis.call('ZCARD', k.starts))
  end,
  record = function(c, q, k)
    local taken = c.started[q] or 0
    if c.slackOf[q] and taken > 0 then
      -- One entry per run leased, unique to this call (its id) and run.
      local entries = {}
      for j = 1, taken do
        entries[2 * j - 1], entries[2 * j] = c.now, c.token .. '#' .. j
      end
      inChunks('ZADD', k.starts, entries)
      redis.call('PEXPIRE', k.starts, c.windowOf[q])
    end
  end,
  reply = function(c, q, k, out)
    if not c.slackOf[q] then return end
    out.limited, out.slack = true, c.slackOf[q]
    -- Held back with runs left: when the oldest entry leaves the window.
    if out.freeAt == 0 and c.room[q] == 0 and redis.call('EXISTS', k.ready, k.readyList) > 0 then
      local oldest = redis.call('ZRANGE', k.starts, 0, 0, 'WITHSCORES')
      if oldest[2] then out.freeAt = tonumber(oldest[2]) + c.windowOf[q] end
    end
  end,
}
