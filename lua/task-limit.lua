--[[
  task-limit: set or remove a task's limit, for every worker of every pool.

  The limit is a field of the backend's `task-limits` HASH (see
  includes/limit-groups), read by every claim that meets a run of the task's
  limit groups: its rate (`max` runs per `perMs + slackMs`, each started
  within `slackMs` of its claim) and its concurrency (runs leased at once),
  per group (the task, or the task and a key). The groups' rate logs and
  running sets are kept: a new limit counts the runs already leased.

  A change (not the same value again: every application that registers the
  task writes it at boot) may give held groups room at once, so every group of every
  registered queue becomes due (its score 0: the next claims look at them,
  a bounded number per claim, oldest first), and each queue with ready runs
  or groups gets its wake marker. A queue's keys are derived from the
  declared queue prefix and the names in `queues` (as upgrade.lua derives
  them), so they share its hash tag, hence slot: `<prefix><queue>:wake`,
  `:ready`, `:ready-list`, `:groups`.

  Idempotent: a resent copy sets the same value again.

  KEYS      taskLimits, queues, queuePrefix (the keys of each registered queue
            are derived from it) (lua/keys.mjs)

  ARGV[1]   task
  ARGV[2]   limit         `max|perMs|slackMs|concurrency` (each part empty
                          when unset), or '' to remove the limit

  Returns   { now, previous }: the limit before this call, or '' when there was none.

  Complexity: O(Q + G log G) for Q queues and G groups of them.
]]
--- @include "includes/now"
--- @keys

local now = nowMs()
local previous = redis.call('HGET', taskLimitsKey, ARGV[1]) or ''
if previous == ARGV[2] then return { now, previous } end
if ARGV[2] == '' then
  redis.call('HDEL', taskLimitsKey, ARGV[1])
else
  redis.call('HSET', taskLimitsKey, ARGV[1], ARGV[2])
end
for _, queue in ipairs(redis.call('SMEMBERS', queuesKey)) do
  local base = queuePrefix .. queue .. ':'
  local groups = base .. 'groups'
  local held = redis.call('EXISTS', groups) == 1
  -- Every score becomes 0: due at once.
  if held then redis.call('ZUNIONSTORE', groups, 1, groups, 'WEIGHTS', 0) end
  if held or redis.call('EXISTS', base .. 'ready', base .. 'ready-list') > 0 then
    redis.call('ZADD', base .. 'wake', 0, 'w')
  end
end
return { now, previous }
