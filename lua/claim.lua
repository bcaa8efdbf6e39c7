--[[
  claim: lease up to `want` ready runs across a worker's queues, fairly.

  The call's id is the lease token of every run it leases: ids are unique to
  a call (a random sender and a counter; see includes/lease), so a token is
  never granted twice, whatever Redis forgot. Each run gets a deadline from
  the server clock; its stored payload is returned untouched. The lease is
  written to the running set and the leases hash, one call each for the
  whole batch; the run is only read (see includes/lease and includes/fresh).
  A leased run is not started: its holder records that (start.lua, or a
  start mark in acknowledge.lua), and until then an expiry of the lease
  hands the run back to READY without charging an attempt (reap.lua).

  An idle consumer sends this call right behind a blocked BZPOPMIN on its
  queues' wake markers, on the same connection: Redis runs it the moment
  the wait ends, woken or timed out, so the run reaches the consumer in the
  wake-up's own reply, and only a consumer reading its connection ever gets
  a lease (a dead consumer's connection is closed with its unread calls).

  KEYS      runPrefix (ids come from the ready sets), brokerWake (the first
            lease of an idle queue gives the reaper something to watch), leases,
            fresh (read for the whole pop in one call; other runs are read from
            their run hash), callRecord, taskLimits (see includes/limit-groups);
            per queue: keyPrefix (one key passed per queue, not 14, as a claim
            of many queues pays per key): the queue's keys are derived from it
            by name (QUEUE_KEYS below) (lua/keys.mjs)

  ARGV[1]   Q             number of queues
  ARGV[2]   want          most runs to claim
  ARGV[3]   leaseTtl      default lease length in ms
  ARGV[4]   worker        the claiming worker's id, JSON-encoded ("host:pid:slot")
  ARGV[5]   offset        where the rotation starts (modulo Q): the previous
                          claim's `next`, so no queue is always served first
  ARGV[6]   callId        unique to this call (not to its resent copies); the
                          lease token of its runs
  ARGV[7]   minShare      the fewest runs a pass gives a queue it serves
                          (see includes/claim-rotation)

  Returns   { now, runs, ghosts, capped, limited, next }
            runs: the claimed runs, grouped by queue. A queue index (an
                  integer) starts each group. First attempts from the fresh
                  hash come as one string per group, `id\nrecord\n...`
                  (each whole fresh record: the client reads the enqueue
                  time, the lease override, deadline = now + override, else
                  now + leaseTtl, and the payload from it, so the reply
                  carries nothing it could derive; records never hold a
                  newline, JSON escapes it). One string instead of two
                  values per run: the worker, not Redis, is what a drain
                  waits for, and each reply value costs it more than the
                  join costs Redis. A first attempt whose id or record
                  holds a newline comes as a table { id, record } instead. Other
                  runs come as a table { id, head, payload }, head being
                  { queue index, deadline, enqueuedAt, history, slack };
                  slack, only for a run of a rate-limited limit group, is
                  how long after the claim's time it may start; history
                  is 0 for a first attempt (one attempt, by this worker, no
                  errors, no recoveries), else a table { attempts (this one
                  included), worker ids fragment (this worker included),
                  errors fragment, startedAt, recoveries (lease expiries in
                  a row: above 0 the run is a suspect, run alone) }.
            ghosts: ids found in a ready set or list without a run hash
                  (removed and reported so the caller can log them)
            capped: the indexes of the call's queues that have a
                  concurrency cap or runs of limit groups (so that the
                  consumer wakes the queue's idle consumers when it ends a
                  lease of one: wake.lua)
            limited: per rate-limited or grouped queue of the call, 3 values:
                  its index, its start slack (ms: a run of it must start
                  within this long of the claim's time, or go back unstarted;
                  -1 for a queue without a rate limit), and when the next of
                  its runs may be leased (epoch ms) if this claim left ready
                  runs held back by the limit or parked runs only, else 0
            next: where the rotation stopped, the next claim's offset (see
                  includes/claim-rotation)

  A replay (the same call again: ioredis resends a command whose reply a
  dropped connection lost) finds its call record, hands the runs the first
  copy leased back to READY (their attempt never started, so it never
  counts), then claims as usual: the consumer gets them instead of leaving
  them to expire. Each call has a record slot of its own, so two claims in
  flight when a connection drops are both recognised.

  A queue's pause flag and concurrency cap are read together, one MGET per
  queue and call (the call that read the pause flag alone before). A capped
  queue leases at most `cap - ZCARD(running)` runs: its running set, every
  lease of the queue whether started, only held, or expired and not yet
  reaped, is what counts as running, so the cap is never exceeded; a queue
  at its cap takes no part in the rotation (its runs wait READY, uncharged,
  at their place), and its wake marker is removed like a paused queue's.

  A rate-limited queue (`max` runs per `perMs`) keeps a sliding log of the
  runs it leased (a ZSET, bounded by `max` entries): a claim first drops the
  entries older than `perMs + slackMs`, then leases at most `max` minus the
  entries left. So at most `max` runs are leased in any window of
  `perMs + slackMs`, and as each starts within `slackMs` of its claim (or is
  handed back unstarted by its worker), at most `max` start in any window of
  `perMs`. Entries are added at claim only: a run its worker hands back
  keeps its entry (the limit errs on the side of fewer starts, never more),
  except the runs a replay hands back (their first copy's reply was lost,
  so no worker ever held them): their entries are removed with them, and
  the replay logs what it leases again.

  A grouped queue (its `grouped` flag exists: it held runs of limit groups)
  first un-parks what its due groups may lease, then leases a run of a group
  only while the group has allowance and no parked run of the group comes
  before it, and parks the others (includes/claim-groups): held-back runs
  leave the ready structures, so they never hold back other groups or
  unlimited runs of the queue. A parked run stays READY and uncharged.

  A paused queue (its flag exists) gives
  nothing, and its wake marker is removed rather than kept, so that idle
  consumers stay blocked until resume.lua sets it again instead of waking to
  claim nothing. Its leased runs are not touched: they run and are
  acknowledged as usual.

  A queue with no ready set, no ready list, no pause flag, no cap, no rate
  limit and no limit groups costs one EXISTS and the removal of its wake
  marker, nothing more (docs/storage.md, "Queues without ready runs").

  Complexity: O(Q + n) for n claimed runs from ready lists alone, else
            O(Q + n log N); a replay adds O(Q log N + m) for m runs leased
            since the first copy ran; a grouped queue adds O(G (c + log N))
            for the G groups met (at most 20 looked at first, c the leases of
            a capped one) and O(log N) per run parked or un-parked (at most
            1,000 each per claim).
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/chunks"
--- @include "includes/metrics"
--- @include "includes/fresh"
--- @include "includes/ready-list"
--- @include "includes/take-ready"
--- @include "includes/lease"
--- @include "includes/hand-back"
--- @include "includes/call-record"
--- @include "includes/limit-groups"
--- @include "includes/claim-groups"
--- @include "includes/claim-rotation"
--- @include "includes/queue-presence"
--- @keys

local rcall = redis.call
local now = nowMs()
local nowText = string.format('%d', now)
local queueCount = tonumber(ARGV[1])
local want = tonumber(ARGV[2])
local defaultTtl = tonumber(ARGV[3])
local worker = ARGV[4]
local offset = tonumber(ARGV[5]) % queueCount
local token = ARGV[6]
local minShare = tonumber(ARGV[7])
-- A queue's keys by name (`k.running`), each derived from its declared prefix
-- when first used: a queue with ready runs and no rule uses 6 of these 14,
-- and a claim makes them for every such queue it takes from.
local QUEUE_KEYS = { ready = 'ready', running = 'running', wake = 'wake', metrics = 'metrics:',
  readyList = 'ready-list', withdrawn = 'withdrawn', paused = 'paused', cap = 'cap', rate = 'rate',
  starts = 'starts', grouped = 'grouped', groups = 'groups', groupPrefix = 'group:', parked = 'parked' }
local derivedKey = {
  __index = function(k, name)
    local key = k.keyPrefix .. QUEUE_KEYS[name]
    rawset(k, name, key)
    return key
  end,
}
local function keysOf(q)
  return setmetatable(queueKeys(q), derivedKey)
end
-- Lease values are `token|claimedAt|attempt|recoveries|started|worker`: a
-- first attempt's is the same for the whole claim, built once (formatting
-- numbers per run was a large share of the claim's cost: docs/optimisations.md,
-- step 15).
local firstLease = token .. '|' .. nowText .. '|1|0|0|' .. worker
-- Most runs take the default lease: convert its deadline to a string once.
local defaultDeadline = now + defaultTtl
local defaultDeadlineText = string.format('%d', defaultDeadline)

-- A replayed call: Redis ran its first copy, whose reply the consumer never
-- got, so the runs that copy leased would wait out their lease. Their leases
-- carry this call's id as token and deadlines from the first copy's time on;
-- they are handed back to READY, and this copy claims them again, first in
-- ready order. The first copy's `started` counts stay: a replay is rare.
local firstNow = recalledReply(callRecordKey, token)
-- Per queue: runs the first copy leased and this copy handed back.
local handedBack = {}
if firstNow then
  for q = 1, queueCount do
    local k = keysOf(q)
    local leased = rcall('ZRANGE', k.running, firstNow, '+inf', 'BYSCORE', 'WITHSCORES')
    for j = 1, #leased, 2 do
      local id = leased[j]
      if leaseHolds(rcall('HGET', leasesKey, id), token, leased[j + 1], now) then
        handBack(leasesKey, k.running, k.ready, freshKey, runPrefix, id)
        handedBack[q] = (handedBack[q] or 0) + 1
        -- A run of a limit group leaves its group's lease and log entry too;
        -- the group has room again, so this copy looks at it first.
        local group = rcall('HGET', runPrefix .. id, 'group')
        if group then
          rcall('SREM', groupKey(k.groupPrefix, 'running', group), id)
          rcall('ZREM', groupKey(k.groupPrefix, 'starts', group), token .. '#' .. id)
          rcall('ZADD', k.groups, 0, group)
        end
      end
    end
  end
end
recordReply(callRecordKey, token, nowText)

-- Appends the fresh runs gathered in joined[1..count] to the reply as one
-- string, so that the reply keeps the claim's order around other runs;
-- returns the reply's new length.
local function flushJoined(reply, n, joined, count)
  if count == 0 then return n end
  reply[n + 1] = table.concat(joined, '\n', 1, count)
  return n + 1
end

local runs, ghosts, leases, values = {}, {}, {}, {}
-- Enqueue times by their text: the runs of a batch share few of them, and
-- converting one costs more than the rest of its run's claim.
local enqueuedAtOf = {}
-- Per queue: runs started by this claim and their summed wait since enqueue (ms).
local started, waited = {}, {}
local n = 0
local claimed = 0
local active, paused = {}, {}
-- Per capped or rate-limited queue: how many more runs it may lease (cap -
-- its running set, max - its rate log, whichever is less).
local room = {}
-- Per rate-limited queue: its start slack and window, for the reply.
local slackOf, windowOf, hasCap = {}, {}, {}
-- Per grouped queue: its group keys and what this claim did to its groups
-- (includes/claim-groups).
local groupsOf = {}
local groupCtx = { now = now, nowText = nowText, token = token, taskLimitsKey = taskLimitsKey }
local function groupedQueue(q)
  local k = keysOf(q)
  local gq = { groupsKey = k.groups, prefix = k.groupPrefix, parkedKey = k.parked, parked = 0, states = {},
    touched = {}, queueRunningKey = k.running, runPrefix = runPrefix }
  groupsOf[q] = gq
  return gq
end
local idle, unruled = {}, {}
for q = 1, queueCount do
  local present = presentKeys(queueKeys(q).keyPrefix)
  if present == 0 then
    idle[q] = true
  elseif present <= 2 then
    -- Ready runs and no rule: active, and nothing more to read.
    unruled[q] = true
    active[q] = true
  else
    local k = keysOf(q)
    -- A paused queue takes no part in the rotation: its runs wait READY.
    local flags = rcall('MGET', k.paused, k.cap, k.rate, k.grouped)
    paused[q] = flags[1] ~= false
    -- Before the room is taken: what the due groups may lease goes back to READY.
    if flags[4] and not paused[q] then examineGroups(groupedQueue(q), k.ready, groupCtx) end
    if flags[2] and not paused[q] then
      hasCap[q] = true
      room[q] = math.max(0, tonumber(flags[2]) - rcall('ZCARD', k.running))
    end
    if flags[3] and not paused[q] then
      local max, per, slack = string.match(flags[3], '^(%d+)|(%d+)|(%d+)$')
      max, per, slack = tonumber(max), tonumber(per), tonumber(slack)
      slackOf[q], windowOf[q] = slack, per + slack
      -- A replay: the runs the first copy leased went back unstarted, so
      -- their entries (`<call id>#<n>`, see below) leave the log too.
      if handedBack[q] then
        local entries = {}
        for j = 1, handedBack[q] do entries[j] = token .. '#' .. j end
        inChunks('ZREM', k.starts, entries)
      end
      -- An entry at `now - window` or before no longer counts: the window is (now - window, now].
      rcall('ZREMRANGEBYSCORE', k.starts, '-inf', now - windowOf[q])
      local left = math.max(0, max - rcall('ZCARD', k.starts))
      room[q] = math.min(room[q] or left, left)
    end
    active[q] = not paused[q] and room[q] ~= 0
  end
end

-- Takes up to `take` runs of queue q for includes/claim-rotation: leases what
-- it may, parks what its limit groups hold back; returns how many it leased
-- and whether the queue may give more.
local function serveQueue(q, take)
  local k = keysOf(q)
  if room[q] then take = math.min(take, room[q]) end
  local claimedBefore = claimed
  local ids, exhausted = takeReady(k.ready, k.readyList, k.withdrawn, freshKey, take)
  local lease = leases[q]
  if not lease then
    lease = {}
    leases[q] = lease
  end
  local records = inChunks('HMGET', freshKey, ids)
  local l, v = #lease, #values
  -- The group's queue index, once: not one per run.
  if #ids > 0 then
    runs[n + 1] = q
    n = n + 1
  end
  -- This group's fresh runs, joined into one reply string below.
  local joined, j2 = {}, 0
  local startedHere, waitedHere = 0, 0
  for j = 1, #ids do
    local id = ids[j]
    local record = records[j]
    if record then
      -- A first attempt, from its fresh record: only the head is parsed
      -- here, and the reply carries the record whole (the client reads
      -- it), sparing a copy of the payload per run.
      local enqueuedText, leaseTtl = freshHead(record)
      local enqueuedAt = enqueuedAtOf[enqueuedText]
      if not enqueuedAt then
        enqueuedAt = tonumber(enqueuedText)
        enqueuedAtOf[enqueuedText] = enqueuedAt
      end
      local deadlineText = defaultDeadlineText
      if leaseTtl then deadlineText = string.format('%d', now + leaseTtl) end
      claimed = claimed + 1
      values[v + 1], values[v + 2] = id, firstLease
      lease[l + 1], lease[l + 2] = deadlineText, id
      v, l = v + 2, l + 2
      startedHere = startedHere + 1
      waitedHere = waitedHere + (now - enqueuedAt)
      -- Neither may hold the separator: an id a caller chose might, and a
      -- payload never does (JSON escapes it) unless written by hand.
      if findIn(id, '\n', 1, true) or findIn(record, '\n', 1, true) then
        n = flushJoined(runs, n, joined, j2)
        j2 = 0
        runs[n + 1] = { id, record }
        n = n + 1
      else
        joined[j2 + 1], joined[j2 + 2] = id, record
        j2 = j2 + 2
      end
    else
      -- A first attempt needs these five, a run of a limit group its group
      -- and score; a later attempt reads its history below.
      local runKey = runPrefix .. id
      local f = rcall('HMGET', runKey, 'payload', 'attempts', 'enqueuedAt', 'leaseTtl', 'recoveries', 'group',
        'score')
      local group, slack, parked = f[6], nil, false
      if group and f[1] then
        -- The flag is set by the enqueue of a grouped run; should it be
        -- missing, the claim sets it rather than pass the group by.
        local gq = groupsOf[q]
        if not gq then
          gq = groupedQueue(q)
          rcall('SET', k.grouped, '1')
        end
        local st = groupState(gq, group, groupCtx)
        if groupAdmits(st, tonumber(f[7])) then
          slack = leaseInGroup(st, id)
        else
          parkRun(gq, st, id, f[7])
          parked = true
        end
      end
      if not f[1] then
        ghosts[#ghosts + 1] = id
      elseif parked then
        -- Parked: READY still, uncharged, in its group's held set.
      else
        claimed = claimed + 1
        local deadline, deadlineText = defaultDeadline, defaultDeadlineText
        if f[4] then
          deadline = now + tonumber(f[4])
          deadlineText = string.format('%d', deadline)
        end
        -- The run hash counts settled attempts; this one is the next.
        local attempts = (tonumber(f[2]) or 0) + 1
        local history = 0
        values[v + 1] = id
        if attempts == 1 and not f[5] then
          values[v + 2] = firstLease
        else
          local recoveries = tonumber(f[5]) or 0
          local h = rcall('HMGET', runKey, 'workers', 'errors', 'startedAt')
          values[v + 2] = token .. '|' .. nowText .. '|' .. attempts .. '|' .. recoveries .. '|0|' .. worker
          history = { attempts, appendFragment(h[1], worker), h[2] or '', h[3] or now, recoveries }
        end
        lease[l + 1], lease[l + 2] = deadlineText, id
        v, l = v + 2, l + 2
        startedHere = startedHere + 1
        waitedHere = waitedHere + (now - (tonumber(f[3]) or now))
        n = flushJoined(runs, n, joined, j2)
        j2 = 0
        runs[n + 1] = { id, { q, deadline, f[3], history, slack }, f[1] }
        n = n + 1
      end
    end
  end
  n = flushJoined(runs, n, joined, j2)
  -- Ghosts took no room: only leased runs count against the cap.
  if room[q] then room[q] = room[q] - (claimed - claimedBefore) end
  if startedHere > 0 then
    started[q] = (started[q] or 0) + startedHere
    waited[q] = (waited[q] or 0) + waitedHere
  end
  -- A claim that parked its budget's worth leaves the rest for the next.
  return claimed - claimedBefore, not (exhausted or room[q] == 0 or (groupsOf[q] and groupBudget.park <= 0))
end
local rotationStop = rotateClaim(queueCount, offset, want, minShare, active, serveQueue)

inChunks('HSET', leasesKey, values)

-- Per grouped queue: whether its groups hold parked runs a claim may lease at once.
local groupsPending = {}
for q, gq in pairs(groupsOf) do groupsPending[q] = settleGroups(gq, groupCtx, defaultDeadline) end

local wakeBroker = false
for q = 1, queueCount do
  if idle[q] then
    -- No runs, so no marker: a claim that finds a queue empty leaves none.
    rcall('ZREM', queueKeys(q).keyPrefix .. 'wake', 'w')
  elseif unruled[q] and not leases[q] then
    -- Not reached by the rotation: its ready runs wait, so its marker stays
    -- (or is back, if the wait in front of this claim popped it).
    rcall('ZADD', queueKeys(q).keyPrefix .. 'wake', 0, 'w')
  else
    local k = keysOf(q)
    if started[q] then
      countMinute(k.metrics, now, 'started', started[q])
      countMinute(k.metrics, now, 'waitMs', waited[q])
    end
    local lease = leases[q]
    if lease and #lease > 0 then
      -- An idle broker sleeps until the earliest lease deadline it knows of;
      -- with no lease at all it sleeps until woken here.
      if rcall('EXISTS', k.running) == 0 then wakeBroker = true end
      inChunks('ZADD', k.running, lease)
    end
    -- Keep the wake marker truthful: present exactly when runs are waiting, so
    -- the next idle worker wakes for what this claim left behind (or for
    -- tombstones alone, which its claim then consumes). A paused queue's runs
    -- are not waiting for a worker: no marker, so idle workers stay blocked;
    -- nor are a queue's at its cap (a consumer that ends one of its leases
    -- sets the marker again: see the cap section of docs/storage.md).
    -- Parked runs a claim may lease at once (a group's budget ran out) wait
    -- too; runs parked for want of allowance do not (see wake.lua).
    if not paused[q] and room[q] ~= 0 and (groupsPending[q] or rcall('EXISTS', k.ready, k.readyList) > 0) then
      rcall('ZADD', k.wake, 0, 'w')
    else
      rcall('ZREM', k.wake, 'w')
    end
  end
end

if wakeBroker then rcall('ZADD', brokerWakeKey, 0, 'w') end

local capped, limited = {}, {}
for q = 1, queueCount do
  if hasCap[q] or groupsOf[q] then capped[#capped + 1] = q end
  if slackOf[q] or groupsOf[q] then
    local k = keysOf(q)
    local taken = started[q] or 0
    if slackOf[q] and taken > 0 then
      -- One entry per run leased, unique to this call (its id) and run.
      local entries = {}
      for j = 1, taken do
        entries[2 * j - 1], entries[2 * j] = now, token .. '#' .. j
      end
      inChunks('ZADD', k.starts, entries)
      rcall('PEXPIRE', k.starts, windowOf[q])
    end
    -- Held back with runs left: when the oldest entry leaves the window.
    local freeAt = 0
    if slackOf[q] and room[q] == 0 and rcall('EXISTS', k.ready, k.readyList) > 0 then
      local oldest = rcall('ZRANGE', k.starts, 0, 0, 'WITHSCORES')
      if oldest[2] then freeAt = tonumber(oldest[2]) + windowOf[q] end
    end
    -- Nothing ready but parked runs: when the first group is due again.
    if groupsOf[q] and freeAt == 0 and not paused[q] and not groupsPending[q]
      and rcall('EXISTS', k.ready, k.readyList) == 0 then
      freeAt = nextGroupDue(groupsOf[q], now)
    end
    limited[#limited + 1] = q
    limited[#limited + 1] = slackOf[q] or -1
    limited[#limited + 1] = freeAt
  end
end

return { now, runs, ghosts, capped, limited, rotationStop }
