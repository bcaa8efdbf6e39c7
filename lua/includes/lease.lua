-- Whether the caller still holds the lease of a run: the run is RUNNING under
-- `token` and its deadline has not passed. A lease is valid until its
-- deadline and no longer, even when the reaper has not claimed it yet: after
-- the deadline only the reaper may settle the run.
local function holdsLease(runKey, runningKey, id, token, now)
  local f = redis.call('HMGET', runKey, 'token', 'status')
  if f[1] ~= token or f[2] ~= 'RUNNING' then return false end
  local deadline = redis.call('ZSCORE', runningKey, id)
  return deadline ~= false and tonumber(deadline) >= now
end
