--- @include "includes/limit-groups"
--- @include "includes/claim-groups"

-- The limit-group gate (includes/gates; the rule in includes/claim-groups,
-- the argument in docs/storage.md, "Limit groups"). A grouped queue (its
-- `grouped` flag exists: it held runs of limit groups) first un-parks what its
-- due groups may lease, then leases a run of a group only while the group has
-- allowance and no parked run of the group comes before it, and parks the
-- others: held-back runs leave the ready structures, so they never hold back
-- other groups or unlimited runs of the queue. A parked run stays READY and
-- uncharged. At the queue level the gate sets no bound (its room is nil): its
-- bound is per group, asked for each run of a group the take meets
-- (admitToGroup). It records each group's leases and next look, and reports
-- its queue both `capped` (a lease's end may free a group) and `limited`.

-- The claim's state of grouped queue q: its group keys and what this claim
-- did to its groups (includes/claim-groups). A queue met with runs of groups
-- takes part in the gates' record and reply whatever its flags said.
local function groupedQueue(c, q, k)
  local gq = { groupsKey = k.groups, prefix = k.groupPrefix, parkedKey = k.parked, parked = 0, states = {},
    touched = {}, queueRunningKey = k.running, runPrefix = c.runPrefix }
  c.groupsOf[q] = gq
  c.gated[q] = true
  return gq
end

local groupsGate = {
  flag = 'grouped',
  room = function(c, q, k, grouped)
    -- Before the room is taken: what the due groups may lease goes back to READY.
    if grouped then examineGroups(groupedQueue(c, q, k), k.ready, c) end
    return nil
  end,
  -- Per grouped queue: whether its groups hold parked runs a claim may lease
  -- at once (c.pending[q]: the queue keeps its wake marker for them).
  record = function(c, q)
    local gq = c.groupsOf[q]
    if gq then c.pending[q] = settleGroups(gq, c, c.defaultDeadline) end
  end,
  reply = function(c, q, k, out)
    local gq = c.groupsOf[q]
    if not gq then return end
    out.capped, out.limited = true, true
    -- Nothing ready but parked runs: when the first group is due again.
    if out.freeAt == 0 and not c.pending[q] and redis.call('EXISTS', k.ready, k.readyList) == 0 then
      out.freeAt = nextGroupDue(gq, c.now)
    end
  end,
}

-- The gate's question per group, for run `id` of `group` (ready score as
-- stored, `scoreText`) that the take met in queue q: leases it within its
-- group's allowance, or parks it. Returns its start slack (nil unless its
-- group is rate-limited) and whether it was parked. Called per run of a group
-- only (a run hash; a fresh run never has one).
local function admitToGroup(c, q, k, id, group, scoreText)
  -- The flag is set by the enqueue of a grouped run; should it be
  -- missing, the claim sets it rather than pass the group by.
  local gq = c.groupsOf[q]
  if not gq then
    gq = groupedQueue(c, q, k)
    redis.call('SET', k.grouped, '1')
  end
  local st = groupState(gq, group, c)
  if groupAdmits(st, tonumber(scoreText)) then return leaseInGroup(st, id), false end
  parkRun(gq, st, id, scoreText)
  return nil, true
end

-- Whether the take of queue q stops for the groups: a claim that parked its
-- budget's worth leaves the rest for the next.
local function groupsHalted(c, q)
  return c.groupsOf[q] ~= nil and groupBudget.park <= 0
end
