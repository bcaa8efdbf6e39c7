-- Waiting for a result without polling (see watch.lua): a waiter registers
-- the runs it waits on in the `waiting` ZSET (run id → registration expiry),
-- and the script that settles or removes a registered run appends one entry
-- to the `finished` STREAM in the same call, read by one blocked XREAD per
-- waiting process:
--
--   id <run id> <the run's fields after its outcome>   a settled run
--   id <run id> removed <dequeued | purged>            a run that is gone
--
-- An entry carries the run's fields, not just its id, so a waiter builds the
-- result even when nothing of the run is kept (resultTtl 0). Entries are kept
-- a minute (a reader away longer registers its runs again and reads those
-- that settled meanwhile from their records), and the stream itself expires
-- when nothing was published for two, so a keyspace nobody waits on keeps
-- neither key.
local FINISHED_KEPT_MS = 60000

-- Appends the entry of run `id`, `fields` (pairs) after its id, and ends
-- its registration.
local function publishFinished(waitingKey, finishedKey, now, id, fields)
  redis.call('XADD', finishedKey, 'MINID', '~', string.format('%d', now - FINISHED_KEPT_MS), '*', 'id', id,
    unpack(fields))
  redis.call('PEXPIRE', finishedKey, 2 * FINISHED_KEPT_MS)
  redis.call('ZREM', waitingKey, id)
end
