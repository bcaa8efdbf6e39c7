-- Deduplication keys (docs/deduplication.md; the argument in docs/storage.md).
-- A key `q:<queue>:dedupe:<key>` is a STRING naming the run it holds:
--
--   firstAt|holdMs|releaseOn|runId
--
-- firstAt: when that run was enqueued (Redis clock, ms); holdMs: how long
-- after firstAt the key holds whatever the run's state ('drop' mode's ttlMs,
-- 0 for 'debounce'); releaseOn: 's' (held while the run waits for its first
-- start) or 'f' (held until the run settles); runId last (a generated ULID).
--
-- A key is never released by a write: whether it holds is read from its run's
-- state at each enqueue that names it, so no script that moves a run (claim,
-- acknowledge, reap, purge, trim, dequeue) touches keys or pays for them,
-- and a run that is gone, or past its release point however it got there,
-- never holds its key. The key's TTL only bounds memory (see DEDUPE_KEEP_MS).
-- Needs includes/done (parseFresh, doneQueue).

-- How long a key outlives the latest of its hold window, its run's due time
-- and the last enqueue that named it. Only a run still waiting or running a
-- whole day after all three of those could lose its key to this TTL.
local DEDUPE_KEEP_MS = 86400000

local function dedupeParse(value)
  local firstAt, holdMs, releaseOn, runId = string.match(value, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
  return tonumber(firstAt), tonumber(holdMs), releaseOn, runId
end

-- Where run `id` stands, for a key of queue `queue`: 'missing' (no run of
-- that queue has the id: a key holds only a run of its own queue), 'settled'
-- (SUCCESSFUL, FAILED or QUARANTINED), 'leased', 'waiting' (READY, unleased,
-- no attempt settled: it never started, or was handed back uncharged), or
-- 'active' (anything else: a retry waiting out its backoff). Also returns the
-- fresh record of a waiting fresh run.
local function dedupeRunState(freshKey, doneKey, leasesKey, runPrefix, id, queue)
  local record = redis.call('HGET', freshKey, id)
  if record then
    if select(5, parseFresh(record)) ~= queue then return 'missing' end
    if redis.call('HEXISTS', leasesKey, id) == 1 then return 'leased' end
    return 'waiting', record
  end
  local done = redis.call('HGET', doneKey, id)
  if done then return doneQueue(done) == queue and 'settled' or 'missing' end
  local f = redis.call('HMGET', runPrefix .. id, 'queue', 'status', 'attempts')
  if f[1] ~= queue then return 'missing' end
  local status = f[2]
  if status == 'SUCCESSFUL' or status == 'FAILED' or status == 'QUARANTINED' then return 'settled' end
  if redis.call('HEXISTS', leasesKey, id) == 1 then return 'leased' end
  if (not status or status == 'READY') and (not f[3] or f[3] == '0') then return 'waiting' end
  return 'active'
end

-- Whether a 'drop' enqueue at `now` finds the key held by its run in `state`.
local function dedupeDropHolds(now, firstAt, holdMs, releaseOn, state)
  if state == 'missing' then return false end
  -- No window without a hold (a clock stepped back must not open one).
  if holdMs > 0 and now < firstAt + holdMs then return true end
  if state == 'waiting' then return true end
  return releaseOn == 'f' and state ~= 'settled'
end

-- Keeps key `key` for DEDUPE_KEEP_MS past `untilAt` (epoch ms) from `now`:
-- writes `value` with that TTL, or (no value) extends the key's TTL to it,
-- never shortening it (a drop key of a run deferred far ahead keeps its
-- run's due time).
local function dedupeKeep(key, value, now, untilAt)
  local ms = DEDUPE_KEEP_MS + (untilAt > now and untilAt - now or 0)
  if value then
    redis.call('SET', key, value, 'PX', string.format('%d', ms))
  elseif redis.call('PTTL', key) < ms then
    redis.call('PEXPIRE', key, string.format('%d', ms))
  end
end
