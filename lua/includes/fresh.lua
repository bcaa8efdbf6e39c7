-- A run that no attempt has settled yet (enqueued, waiting, or in its first
-- lease) is one field of the backend's `fresh` hash instead of a hash of its
-- own, so storing, claiming and deleting a batch of them is one call each:
--
--   enqueuedAt|score|leaseTtl|runAfter|queue|payload
--
-- (leaseTtl and runAfter empty when unset; queue names never hold '|', the
-- payload, last, may). Once an attempt settles with something to keep, or the
-- reaper counts a recovery, the run moves to its run hash for good.
local function parseFresh(record)
  return string.match(record, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
end

-- Only what a claim needs of a record: the text of its enqueue time and its
-- lease override in ms (nil when unset), without copying the payload out (the
-- client cuts it from the record). Plain finds through local aliases: a claim
-- reads hundreds of records, and a pattern's captures cost a string each.
local findIn, cut, byteAt = string.find, string.sub, string.byte
local function freshHead(record)
  local first = findIn(record, '|', 1, true)
  local second = findIn(record, '|', first + 1, true)
  local enqueuedAt = cut(record, 1, first - 1)
  if byteAt(record, second + 1) == 124 then return enqueuedAt, nil end -- '|': no override
  return enqueuedAt, tonumber(cut(record, second + 1, findIn(record, '|', second + 1, true) - 1))
end

-- Appends the run hash fields of a fresh record, given as parseFresh's parts,
-- to `args` (HSET pairs); `runAfter` only when `keepRunAfter` (a retry sets
-- its own).
local function freshPartsFields(args, keepRunAfter, enqueuedAt, score, leaseTtl, runAfter, queue, payload)
  local n = #args
  args[n + 1], args[n + 2] = 'payload', payload
  args[n + 3], args[n + 4] = 'queue', queue
  args[n + 5], args[n + 6] = 'score', score
  args[n + 7], args[n + 8] = 'enqueuedAt', enqueuedAt
  n = n + 8
  if leaseTtl ~= '' then
    args[n + 1], args[n + 2] = 'leaseTtl', leaseTtl
    n = n + 2
  end
  if keepRunAfter and runAfter ~= '' then args[n + 1], args[n + 2] = 'runAfter', runAfter end
  return args
end

-- The same from the record itself.
local function freshFields(args, record, keepRunAfter)
  return freshPartsFields(args, keepRunAfter, parseFresh(record))
end

-- A run's ready score, from its fresh record or else its run hash (false when
-- neither holds the run).
local function storedScore(freshKey, runKey, id)
  local record = redis.call('HGET', freshKey, id)
  if record then return select(2, parseFresh(record)) end
  return redis.call('HGET', runKey, 'score')
end

-- Moves run `id` from the fresh hash into its run hash, if it is there.
local function materialize(freshKey, runKey, id)
  local record = redis.call('HGET', freshKey, id)
  if not record then return end
  redis.call('HSET', runKey, unpack(freshFields({}, record, true)))
  redis.call('HDEL', freshKey, id)
end
