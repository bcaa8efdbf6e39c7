-- Hands leased run `id` that never started back to READY, at its place in its
-- queue: the lease is dropped, so its attempt never counts (the run hash
-- records only settled attempts). The caller checked that the lease holds (or,
-- the reaper, that it expired unstarted) and wakes the queue.
local function handBack(leasesKey, runningKey, readyKey, freshKey, runPrefix, id)
  redis.call('ZREM', runningKey, id)
  redis.call('HDEL', leasesKey, id)
  redis.call('ZADD', readyKey, storedScore(freshKey, runPrefix .. id, id), id)
end
