-- Limit groups (docs/rate-limits.md; the keys and the argument in
-- docs/storage.md, "Limit groups"). A run of a task declared with
-- `@Task({ limit })` belongs to a group: the task alone, or the task and a
-- key computed from the run's arguments, named `<task>` or `<task>\n<key>`
-- (task names with a limit hold no newline). It is stored as a run hash whose
-- `group` field names the group, never as a fresh record, and waits in the
-- ready ZSET (never the ready list). Its task's limit is the `task-limits`
-- HASH's field of the task: `max|perMs|slackMs|concurrency`, each part empty
-- when unset.
--
-- Per queue and group, three keys derived from the queue's group prefix
-- `q:<queue>:group:`, which every script that uses them declares in KEYS (so
-- they share its hash tag, hence its slot):
--
--   <prefix>held:<group>     ZSET  the group's parked runs, by ready score
--   <prefix>running:<group>  SET   ids of the group's runs leased (a superset:
--                                  pruned against the queue's running set
--                                  and the runs' groups by claims)
--   <prefix>starts:<group>   ZSET  the group's rate log, `<call id>#<run id>`
--                                  → claim time; expires a window after the last

local function groupKey(prefix, kind, group)
  return prefix .. kind .. ':' .. group
end

-- The task whose limit applies to `group`.
local function groupTask(group)
  return string.match(group, '^[^\n]*')
end

-- A stored task limit: { max, window (perMs + slack), slack, concurrency },
-- each nil when unset; false for none.
local function parseTaskLimit(value)
  if not value then return false end
  local max, per, slack, concurrency = string.match(value, '^(%d*)|(%d*)|(%d*)|(%d*)$')
  if not max then return false end
  local limit = { max = tonumber(max), slack = tonumber(slack), concurrency = tonumber(concurrency) }
  if limit.max then limit.window = tonumber(per) + limit.slack end
  return limit
end

-- Withdraws run `id` of `group` from its held set, if it is parked there
-- (cancel, dequeue): one fewer parked run, and the group leaves the queue's
-- `groups` index once it holds nothing. Returns whether it was parked.
local function withdrawParked(prefix, groupsKey, parkedKey, group, id)
  local heldKey = groupKey(prefix, 'held', group)
  if redis.call('ZREM', heldKey, id) == 0 then return false end
  redis.call('DECR', parkedKey)
  if redis.call('EXISTS', heldKey, groupKey(prefix, 'running', group)) == 0 then
    redis.call('ZREM', groupsKey, group)
  end
  return true
end

-- A lease of a run of `group` ended (acknowledged, retried, handed back,
-- reaped unstarted, deferred, cancelled): the group may have room again. While
-- it holds parked runs, its entry in the queue's `groups` index (`groupsKey`)
-- becomes 0, due at once and ahead of the groups held by their concurrency
-- (due at half a claim's time), so the next claim of the queue looks at it
-- first, whatever the number of held groups. No room is granted here: that
-- claim prunes the group's running set before it counts the room
-- (docs/storage.md, "Limit groups", G5). Returns whether the group became due.
local function freeGroup(prefix, groupsKey, group)
  if redis.call('EXISTS', groupKey(prefix, 'held', group)) == 0 then return false end
  redis.call('ZADD', groupsKey, 0, group)
  return true
end
