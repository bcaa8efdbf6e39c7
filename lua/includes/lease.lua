-- Whether the caller still holds the lease of a run: the run is RUNNING under
-- `token` and its deadline has not passed. A lease is valid until its
-- deadline and no longer, even when the reaper has not claimed it yet: after
-- the deadline only the reaper may settle the run. The deadline is kept in
-- the run hash as well as in the running set (every writer updates both), so
-- this is one call. Returns whether it holds, and the run's recoveries count.
local function holdsLease(runKey, token, now)
  local f = redis.call('HMGET', runKey, 'token', 'status', 'deadline', 'recoveries')
  if f[1] ~= token or f[2] ~= 'RUNNING' or not f[3] or tonumber(f[3]) < now then return false, f[4] end
  return true, f[4]
end
