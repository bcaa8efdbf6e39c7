-- The claim's side of limit groups (includes/limit-groups; the argument in
-- docs/storage.md, "Limit groups"). Needs includes/limit-groups and
-- includes/chunks.
--
-- A claim of a queue whose `grouped` flag is set first looks at the groups
-- its `groups` index says are due (a bounded number, oldest first), and
-- un-parks, for each, at most its allowance of parked runs back into the
-- ready ZSET at their scores. Then, as it takes runs off the ready
-- structures, it leases a run of a group only while the group has allowance
-- (cap: its running set, pruned against the queue's, is smaller than the
-- concurrency; rate: its log holds fewer than `max` entries within
-- `perMs + slackMs`) and no parked run of the group comes before it; any
-- other it parks. At the end it writes the group's leases (running set, rate
-- log) and when the index should show the group again.

-- Groups one claim looks at per queue, and runs it parks and un-parks in all,
-- at most: a backlog of one group is parked over several claims, each a few
-- milliseconds of Redis, instead of one that blocks it.
local GROUPS_PER_CLAIM = 20
local groupBudget = { park = 1000, unpark = 1000 }

-- Task limits by task, read once per claim.
local taskLimitCache = {}
local function taskLimitOf(taskLimitsKey, task)
  local limit = taskLimitCache[task]
  if limit == nil then
    limit = parseTaskLimit(redis.call('HGET', taskLimitsKey, task))
    taskLimitCache[task] = limit
  end
  return limit
end

-- Removes from group `group`'s running set the runs whose lease ended: no
-- longer in the queue's running set (`queueRunningKey`: acknowledged, handed
-- back, reaped, cancelled, purged; a lease that expired and was not reaped
-- yet still counts), or leased again as another run of that id (moved to
-- this queue's other group, or away and back: its run hash names another
-- group). Returns how many remain.
local function pruneRunning(gq, group, runningKey)
  local members = redis.call('SMEMBERS', runningKey)
  if #members == 0 then return 0 end
  local deadlines = inChunks('ZMSCORE', gq.queueRunningKey, members)
  local ended = {}
  for j = 1, #members do
    if not deadlines[j] or redis.call('HGET', gq.runPrefix .. members[j], 'group') ~= group then
      ended[#ended + 1] = members[j]
    end
  end
  inChunks('SREM', runningKey, ended)
  return #members - #ended
end

-- How many more of the group's runs this claim may lease.
local function groupAllowance(st)
  return math.min(st.capLeft, st.rateLeft)
end

-- The claim's view of `group` of a grouped queue `gq` (its keys and what
-- this claim did there), read once per claim and group: its limit, what it
-- may lease (math.huge when unlimited), and the score of its first parked
-- run (nil: none). `ctx`: now, taskLimitsKey.
local function groupState(gq, group, ctx)
  local st = gq.states[group]
  if st then return st end
  local limit = taskLimitOf(ctx.taskLimitsKey, groupTask(group))
  st = { group = group, limit = limit, capLeft = math.huge, rateLeft = math.huge, leased = {} }
  if limit and limit.concurrency then
    local running = pruneRunning(gq, group, groupKey(gq.prefix, 'running', group))
    st.capLeft = math.max(0, limit.concurrency - running)
  end
  if limit and limit.max then
    local startsKey = groupKey(gq.prefix, 'starts', group)
    -- The window is (now - window, now], as for a queue's rate log.
    redis.call('ZREMRANGEBYSCORE', startsKey, '-inf', ctx.now - limit.window)
    st.rateLeft = math.max(0, limit.max - redis.call('ZCARD', startsKey))
  end
  local head = redis.call('ZRANGE', groupKey(gq.prefix, 'held', group), 0, 0, 'WITHSCORES')
  st.heldMin = head[2] and tonumber(head[2]) or nil
  gq.states[group] = st
  gq.touched[#gq.touched + 1] = group
  return st
end

-- Un-parks the group's first parked runs, at most its allowance and the
-- claim's budget, back into `readyKey` at their scores; returns how many.
local function unparkGroup(gq, st, readyKey)
  local n = math.min(groupAllowance(st), groupBudget.unpark)
  if n <= 0 or not st.heldMin then return 0 end
  local heldKey = groupKey(gq.prefix, 'held', st.group)
  local items = redis.call('ZRANGE', heldKey, 0, n - 1, 'WITHSCORES')
  local adds = {}
  for j = 1, #items, 2 do
    adds[j], adds[j + 1] = items[j + 1], items[j]
  end
  local m = #items / 2
  inChunks('ZADD', readyKey, adds)
  redis.call('ZREMRANGEBYRANK', heldKey, 0, m - 1)
  gq.parked = gq.parked - m
  groupBudget.unpark = groupBudget.unpark - m
  local head = redis.call('ZRANGE', heldKey, 0, 0, 'WITHSCORES')
  st.heldMin = head[2] and tonumber(head[2]) or nil
  return m
end

-- Looks at the due groups of `gq` (at most GROUPS_PER_CLAIM, those due
-- longest first) and un-parks what each may lease.
local function examineGroups(gq, readyKey, ctx)
  local due = redis.call('ZRANGE', gq.groupsKey, '-inf', ctx.now, 'BYSCORE', 'LIMIT', 0, GROUPS_PER_CLAIM)
  for j = 1, #due do
    unparkGroup(gq, groupState(gq, due[j], ctx), readyKey)
  end
end

-- Whether a run of group state `st` with ready score `score` may be leased:
-- the group has allowance, and none of its parked runs comes before it.
local function groupAdmits(st, score)
  return groupAllowance(st) > 0 and (not st.heldMin or st.heldMin > score)
end

-- Parks a run (its ready score as stored, `scoreText`) in its group's held set.
local function parkRun(gq, st, id, scoreText)
  redis.call('ZADD', groupKey(gq.prefix, 'held', st.group), scoreText, id)
  gq.parked = gq.parked + 1
  groupBudget.park = groupBudget.park - 1
  local score = tonumber(scoreText)
  if not st.heldMin or score < st.heldMin then st.heldMin = score end
end

-- Counts a leased run against its group; returns its start slack when the
-- group is rate-limited (the run must start within it), else nil.
local function leaseInGroup(st, id)
  st.capLeft = st.capLeft - 1
  st.rateLeft = st.rateLeft - 1
  st.leased[#st.leased + 1] = id
  return st.limit and st.limit.max and st.limit.slack or nil
end

-- Writes what the claim did to the groups of `gq`: each leased run joins its
-- group's running set (every grouped lease, so that a cap set later counts
-- it) and, under a rate limit, its log (`<call id>#<run id>`, unique to the
-- run and call, so a replay can remove it); each group met gets its next
-- look in the index: 0 (at once) while it holds parked runs it may lease,
-- half its claim time while held by its cap (any later claim looks again,
-- those looked at longest ago first: no time, only an order), when its
-- oldest log entry leaves the window while held by its rate, `recheckAt`
-- while it has leases only (a claim then prunes it), else it leaves the
-- index; the parked counter moves by what was parked and un-parked. Returns
-- whether the group holds runs a claim may lease at once.
local function settleGroups(gq, ctx, recheckAt)
  local pending = false
  for _, group in ipairs(gq.touched) do
    local st = gq.states[group]
    local runningKey = groupKey(gq.prefix, 'running', group)
    local startsKey = groupKey(gq.prefix, 'starts', group)
    if #st.leased > 0 then
      inChunks('SADD', runningKey, st.leased)
      if st.limit and st.limit.max then
        local entries = {}
        for j = 1, #st.leased do
          entries[2 * j - 1], entries[2 * j] = ctx.nowText, ctx.token .. '#' .. st.leased[j]
        end
        inChunks('ZADD', startsKey, entries)
        redis.call('PEXPIRE', startsKey, st.limit.window)
      end
    end
    local score
    if st.heldMin then
      if groupAllowance(st) > 0 then
        score = 0
        pending = true
      elseif st.capLeft <= 0 then
        -- Half the claim's time: due at every claim, even after the Redis
        -- clock stepped back, and those looked at longest ago first.
        score = math.floor(ctx.now / 2)
      else
        local oldest = redis.call('ZRANGE', startsKey, 0, 0, 'WITHSCORES')
        score = oldest[2] and tonumber(oldest[2]) + st.limit.window or ctx.now
      end
    elseif redis.call('EXISTS', runningKey) == 1 then
      score = recheckAt
    end
    if score then
      redis.call('ZADD', gq.groupsKey, string.format('%d', score), group)
    else
      redis.call('ZREM', gq.groupsKey, group)
    end
  end
  if gq.parked ~= 0 then redis.call('INCRBY', gq.parkedKey, gq.parked) end
  -- Groups the index shows due at once (made so by a limit change) are looked at next.
  if #redis.call('ZRANGE', gq.groupsKey, '-inf', 0, 'BYSCORE', 'LIMIT', 0, 1) > 0 then pending = true end
  return pending
end

-- When the first group of `gq` not due now is due (epoch ms), or 0 for none.
local function nextGroupDue(gq, now)
  local first = redis.call('ZRANGE', gq.groupsKey, '(' .. now, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
  return first[2] and tonumber(first[2]) or 0
end
