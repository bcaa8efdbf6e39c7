-- Finished runs (successful, failed) have no TTL of their own: each is kept
-- until `resultTtl` ms after it finished and then removed together with its
-- entry in its queue's finished index, by the queue's acknowledgements and by
-- brokers' passes (trim.lua). A finished index so names exactly the finished
-- runs of its queue: counts are its size, and an id in it always belongs to
-- it (a run key that expired on its own would leave an entry naming an id
-- that another queue may reuse).

-- Removes up to `limit` runs of finished index `indexKey` that finished
-- before `cutoff` (ms), runs and entries; returns how many. `doneKey` is the
-- done hash for a successful index (false for a failed one): a successful
-- run is a done record, or a run hash when an earlier attempt had settled
-- (includes/done), and run keys are built and deleted only when some of the
-- expired runs were not done records.
local function trimFinished(indexKey, runPrefix, doneKey, cutoff, limit)
  local expired = redis.call('ZRANGE', indexKey, '-inf', '(' .. string.format('%d', cutoff), 'BYSCORE', 'LIMIT', 0,
    limit)
  if #expired == 0 then return 0 end
  if doneKey and select(2, inChunks('HDEL', doneKey, expired)) == #expired then
    inChunks('ZREM', indexKey, expired)
    return #expired
  end
  local runKeys = {}
  for j = 1, #expired do runKeys[j] = runPrefix .. expired[j] end
  inChunks('DEL', false, runKeys)
  inChunks('ZREM', indexKey, expired)
  return #expired
end
