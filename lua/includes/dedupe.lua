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
-- (SUCCESSFUL, FAILED, QUARANTINED or CANCELLED), 'leased', 'waiting' (READY, unleased,
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
  if status == 'SUCCESSFUL' or status == 'FAILED' or status == 'QUARANTINED' or status == 'CANCELLED' then
    return 'settled'
  end
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

-- The run that dedupe item `d` (key, mode, ttl, maxWait) of queue `queue`
-- finds its key holding at `now`, or nil when the item is to be stored as a
-- new run. A debounce that holds gives that run `payload` and its new due
-- time, in its record and in `deferredKey` (the queue's deferred set): ttl
-- from now, but never later than maxWait after the first enqueue. `keys`:
-- fresh, done, leases, runPrefix.
local function dedupeHeld(keys, d, queue, deferredKey, now, payload)
  local value = redis.call('GET', d.key)
  if not value then return nil end
  local firstAt, holdMs, releaseOn, runId = dedupeParse(value)
  local state, record = dedupeRunState(keys.fresh, keys.done, keys.leases, keys.runPrefix, runId, queue)
  if d.mode == 'drop' then
    if not dedupeDropHolds(now, firstAt, holdMs, releaseOn, state) then return nil end
    dedupeKeep(d.key, nil, now, firstAt + holdMs)
    return runId
  end
  if state ~= 'waiting' or not redis.call('ZSCORE', deferredKey, runId) then return nil end
  local due = now + d.ttl
  if d.maxWait > 0 and due > firstAt + d.maxWait then due = firstAt + d.maxWait end
  local dueText = string.format('%d', due)
  if record then
    local enqueuedAt, score, leaseTtl, _, runQueue = parseFresh(record)
    redis.call('HSET', keys.fresh, runId,
      enqueuedAt .. '|' .. score .. '|' .. leaseTtl .. '|' .. dueText .. '|' .. runQueue .. '|' .. payload)
  else
    redis.call('HSET', keys.runPrefix .. runId, 'payload', payload, 'runAfter', dueText)
  end
  redis.call('ZADD', deferredKey, dueText, runId)
  dedupeKeep(d.key, nil, now, due)
  return runId
end

-- Dedupe item `d`'s key takes run `id`, stored by this call at `now` and due
-- at `due` (0: ready now).
local function dedupeTake(d, now, id, due)
  local holdMs = d.mode == 'drop' and d.ttl or 0
  local untilAt = now + holdMs
  if due > untilAt then untilAt = due end
  dedupeKeep(d.key, string.format('%d', now) .. '|' .. string.format('%d', holdMs) .. '|'
    .. (d.mode == 'drop' and d.releaseOn or 's') .. '|' .. id, now, untilAt)
end
