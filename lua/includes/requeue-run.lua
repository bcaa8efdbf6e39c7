-- Requeue: the one rule that sends a FAILED, QUARANTINED or CANCELLED run
-- back to READY after a fix, for one run (requeue.lua) or every run of a
-- segment (requeue-all.lua). The run keeps its id, its attempt count and its
-- error history; its result, quarantine record, recovery count and TTL are
-- cleared, and it takes back its original place in its queue (ready score
-- from enqueue). A requeued run has no TTL (a run finished by an older
-- layout had one). The caller wakes the queue's consumers and counts the
-- requeues (once per call).

-- Takes run `id` out of the failed index that holds it: `index` when given
-- (where the caller found it), else the default one or its TTL class's.
local function unindexFailed(k, id, index)
  if index and redis.call('ZREM', index, id) == 1 then return end
  if redis.call('ZREM', k.failed, id) == 1 then return end
  for _, member in ipairs(redis.call('SMEMBERS', k.classes)) do
    local key, outcome = classKey(member, k.failed, k.failed)
    if outcome == 'failed' and redis.call('ZREM', key, id) == 1 then return end
  end
end

-- Requeues run `id` (run hash `runKey`) of `queue` when it is FAILED,
-- QUARANTINED or CANCELLED. `k` names the queue's keys: ready, failed,
-- quarantined, cancelled (false in a call of an older client), classes (its
-- result-classes SET), leases, fresh, done. `index`: the finished index the
-- caller found the run in, or nil. Returns true and the status the run had,
-- or false and its current status ('' when the queue has no such run), with
-- nothing changed.
local function requeueRun(k, runKey, id, queue, index)
  local f = redis.call('HMGET', runKey, 'status', 'score', 'queue')
  local status, owner = f[1] or (f[2] and 'READY'), f[3]
  -- A fresh run (no attempt settled) has no run hash: it is READY.
  local record = redis.call('HGET', k.fresh, id)
  if record then status, owner = 'READY', select(5, parseFresh(record)) end
  -- A run that succeeded from its fresh record has neither: it is SUCCESSFUL.
  if not owner then
    local done = redis.call('HGET', k.done, id)
    if done then status, owner = 'SUCCESSFUL', doneQueue(done) end
  end
  if owner ~= queue then return false, '' end
  -- A leased run is RUNNING whatever its hash says (claims do not write it).
  if redis.call('HEXISTS', k.leases, id) == 1 then status = 'RUNNING' end
  if status ~= 'FAILED' and status ~= 'QUARANTINED' and status ~= 'CANCELLED' then
    return false, status or ''
  end

  redis.call('HDEL', runKey, 'result', 'finishedAt', 'quarantine', 'quarantinedAt', 'recoveries',
    'startedToken', 'runAfter')
  redis.call('HSET', runKey, 'status', 'READY')
  redis.call('PERSIST', runKey)
  -- A failed run is in one failed index: the default one, or its TTL class's.
  if status == 'FAILED' then unindexFailed(k, id, index) else redis.call('ZREM', k.failed, id) end
  redis.call('ZREM', k.quarantined, id)
  if k.cancelled then redis.call('ZREM', k.cancelled, id) end
  redis.call('ZADD', k.ready, f[2], id)
  return true, status
end
