-- A lease lives in two places: the run's deadline in its queue's running set
-- (the reaper's index) and its value in the backend's leases hash, written
-- and removed a whole batch per call:
--
--   token|claimedAt|attempt|recoveries|started|worker
--
-- token: the id of the call that granted the lease (a claim, or the reaper's
-- claim of an expired run), unique across every call ever made, so a token is
-- never granted twice even when Redis forgets writes (restart from an older
-- AOF or snapshot, failover); it fences every write for this attempt.
-- claimedAt: when the lease began (ms); attempt: this attempt's number;
-- recoveries: lease expiries in a row before it; started: 0 while the run is
-- only held, 1 once the holder recorded that the attempt started (an expiry
-- then charges the attempt), 2 for the reaper's claim of a started attempt
-- whose expiry was counted, 3 once a suspect announced that it is about to
-- start (an expiry then counts a recovery, not an attempt: see reap.lua);
-- worker: the holder's id, JSON-encoded. The run
-- hash is not written at claim: it records attempts once they settle (see
-- settledAttemptFields), and readers overlay the lease on it.

-- Whether `value` (the leases hash entry, or false) is the lease of `token`
-- and `deadline` (the running set score, or false) has not passed. A lease is
-- valid until its deadline and no longer, even when the reaper has not
-- claimed it yet: after the deadline only the reaper may settle the run.
local leasePrefixes = {}
local function leaseHolds(value, token, deadline, now)
  if not value or not deadline or tonumber(deadline) < now then return false end
  -- A batch checks many leases of few tokens: build each `token|` once, and
  -- match it in place rather than cutting a copy of the value's head.
  local prefix = leasePrefixes[token]
  if not prefix then
    prefix = token .. '|'
    leasePrefixes[token] = prefix
  end
  return string.find(value, prefix, 1, true) == 1
end

-- The parts of a lease value: token, claimedAt, attempt, recoveries (numbers
-- but the token), started ('0' to '3'), worker (JSON string), then
-- claimedAt and attempt as text, for writing back (a number handed to `redis.call` is
-- printed with '%.17g' through glibc's exact floating-point path: see the
-- note in enqueue.lua).
local function parseLease(value)
  local token, claimedAt, attempt, recoveries, started, worker =
    string.match(value, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([0-3])|(.*)$')
  if not token then
    -- A lease written by layout 1 (no started flag; see upgrade.lua), which a
    -- worker of that version may still write: read as held.
    token, claimedAt, attempt, recoveries, worker = string.match(value, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
    started = '0'
  end
  return token, tonumber(claimedAt), tonumber(attempt), tonumber(recoveries), started, worker, claimedAt, attempt
end

-- Whether the attempt of lease `value` never had its start recorded ('0'
-- held, '3' announced): only then may its run go back uncharged by a
-- hand-back (`mayHandBack` in libs/threadmill/src/rules/lease-rules.ts).
local function startUnrecorded(value)
  local flag = select(5, parseLease(value))
  return flag == '0' or flag == '3'
end

-- The lease value `value` with its started flag set to `flag` ('1' started,
-- '3' announced).
local function flaggedLease(value, flag)
  local token, _, _, recoveries, _, worker, claimedAt, attempt = parseLease(value)
  return token .. '|' .. claimedAt .. '|' .. attempt .. '|' .. recoveries .. '|' .. flag .. '|' .. worker
end

-- Appends to `args` (HSET field, value pairs) what a settled attempt records
-- in the run hash: its number, its worker, when it was made (and when the run
-- first started, for a first attempt), the first two as the lease's text.
-- `storedWorkers` is the run's `workers` field (previous attempts); it is
-- only read for a later attempt.
local function settledAttemptFields(args, claimedAt, attempt, worker, storedWorkers)
  local n = #args
  args[n + 1] = 'attempts'
  args[n + 2] = attempt
  args[n + 3] = 'lastAttemptedAt'
  args[n + 4] = claimedAt
  args[n + 5] = 'workers'
  if attempt == '1' then
    args[n + 6] = worker
    args[n + 7] = 'startedAt'
    args[n + 8] = claimedAt
  else
    args[n + 6] = appendFragment(storedWorkers, worker)
  end
  return args
end
