-- The gates of a claim. A gate is one rule that bounds what a claim may lease
-- of a queue (pause, queue cap, queue rate, limit groups: includes/gate-*),
-- and every gate has the same small interface, a table of:
--
--   flag                      the name of the queue key that says the rule is
--                             set for a queue (`paused`, `cap`, `rate`,
--                             `grouped`; a QUEUE_KEYS name of claim.lua). The
--                             claim reads every gate's flag in one MGET per
--                             queue, and only for a queue that has some rule:
--                             a queue with none asks no gate (includes/
--                             queue-presence counts these keys).
--   room(c, q, k, value)      how many runs of queue q (k: its keys by name)
--                             this claim leaves room for: a count (0 = none),
--                             or nil for no bound. `value` is the flag's value
--                             (false when unset). A gate reads what it counts
--                             by, and writes what must come before the take
--                             (expired log entries leave, due groups
--                             un-park). A second result true ends the asking:
--                             no later gate is asked about q (a paused queue's
--                             other rules are not read).
--   record(c, q, k)           optional: once the runs are leased (c.started[q]
--                             of queue q), what the gate keeps of them (rate
--                             log entries, group running sets and index).
--   reply(c, q, k, out)       optional: the gate's part of the reply for q:
--                             out.capped (a lease's end frees room, so the
--                             consumer wakes the queue's idle consumers:
--                             wake.lua), out.limited (the queue is listed in
--                             `limited`), out.slack (ms a run must start
--                             within, -1 for none) and out.freeAt (when a run
--                             held back may be leased, epoch ms; the first
--                             gate that sets it wins, 0 for none).
--
-- Each is called once per queue and claim, never per run. `c` is the claim's
-- context (its time, token, keys, and per-queue tables); a gate keeps its own
-- per-queue state in it under names of its own (c.hasCap, c.slackOf, ...).
-- The claim asks the gates in order, takes ready runs within the least room
-- they leave (c.room[q], decreased by what it leases), lets each record, and
-- asks each for its part of the reply. The limit-group gate answers the same
-- question one level down as well, per group (groupAllowance: how many runs
-- of a group this claim may lease), for each run of a group the take meets
-- (includes/gate-groups).
--
-- To add a gate: an include of this shape, its flag key in includes/
-- queue-presence and in claim.lua's QUEUE_KEYS, and a place in claim.lua's
-- GATES (docs/development.md, "Adding a gate or an effect").

-- Asks `gates` in order about queue q (keys `k`), with their flags read in
-- one MGET; returns the least room they leave (nil: no bound).
local function askGates(gates, c, q, k)
  local names = {}
  for g = 1, #gates do names[g] = k[gates[g].flag] end
  local flags = redis.call('MGET', unpack(names))
  local room
  for g = 1, #gates do
    local left, stop = gates[g].room(c, q, k, flags[g])
    if left and (not room or left < room) then room = left end
    if stop then break end
  end
  return room
end

-- Lets each gate record what this claim leased of queue q.
local function recordGates(gates, c, q, k)
  for g = 1, #gates do
    if gates[g].record then gates[g].record(c, q, k) end
  end
end

-- The gates' part of the reply for queue q: { capped, limited, slack, freeAt }.
local function replyOfGates(gates, c, q, k)
  local out = { capped = false, limited = false, slack = -1, freeAt = 0 }
  for g = 1, #gates do
    if gates[g].reply then gates[g].reply(c, q, k, out) end
  end
  return out
end
