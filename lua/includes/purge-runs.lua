-- What one chunk of a purge does to the runs it meets (see purge.lua). A
-- purge removes the runs of its queue stored before it began: their ready
-- score's sequence part (score mod 2^44, R6) is at most the `seq` counter
-- read by its first call. Runs enqueued later score above it and stay.
local SEQ_SPAN = 17592186044416 -- 2^44: scores are -priority * 2^44 + seq

-- The queue and score of a fresh record, without copying its payload out.
local function freshQueueScore(record)
  local score, queue = string.match(record, '^[^|]*|([^|]*)|[^|]*|[^|]*|([^|]*)|')
  return queue, score
end

-- How `ids` stand, as one batch of reads: for each, 'old' (a run of `queue`
-- stored before the boundary), 'new' (stored since) or 'ghost' (no record of
-- this queue: an entry the segment may drop), and where its record is
-- ('fresh', 'done' or 'hash').
local function classifyRuns(freshKey, doneKey, runPrefix, queue, boundary, ids)
  local records = redis.call('HMGET', freshKey, unpack(ids))
  local dones = redis.call('HMGET', doneKey, unpack(ids))
  local kinds, places = {}, {}
  for j = 1, #ids do
    local owner, score, place
    if records[j] then
      owner, score = freshQueueScore(records[j])
      place = 'fresh'
    elseif dones[j] then
      owner, score = freshQueueScore(select(6, parseDone(dones[j])))
      place = 'done'
    else
      local fields = redis.call('HMGET', runPrefix .. ids[j], 'queue', 'score')
      owner, score = fields[1], fields[2]
      place = 'hash'
    end
    places[j] = place
    if owner ~= queue or not score then
      kinds[j] = 'ghost'
    elseif tonumber(score) % SEQ_SPAN <= boundary then
      kinds[j] = 'old'
    else
      kinds[j] = 'new'
    end
  end
  return kinds, places
end

-- Deletes the records of runs `ids` (where `places` says each is) and their
-- leases; returns how many. Their segment entries are the caller's to remove.
local function deleteRuns(freshKey, doneKey, leasesKey, runPrefix, ids, places)
  local fresh, done, hashes = {}, {}, {}
  for j = 1, #ids do
    if places[j] == 'fresh' then
      fresh[#fresh + 1] = ids[j]
    elseif places[j] == 'done' then
      done[#done + 1] = ids[j]
    else
      hashes[#hashes + 1] = runPrefix .. ids[j]
    end
  end
  if #fresh > 0 then redis.call('HDEL', freshKey, unpack(fresh)) end
  if #done > 0 then redis.call('HDEL', doneKey, unpack(done)) end
  if #hashes > 0 then redis.call('UNLINK', unpack(hashes)) end
  -- A run of this queue has a lease only while in its running set (R3).
  if #ids > 0 then redis.call('HDEL', leasesKey, unpack(ids)) end
  return #ids
end
