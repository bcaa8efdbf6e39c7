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
  flight when a connection drops are both recognised (includes/claim-replay).

  What a claim may lease of a queue is what its gates leave (includes/gates,
  the body's steps 1 and 3): its pause flag (includes/gate-pause), cap
  (gate-cap), rate limit (gate-rate) and limit groups (gate-groups), each an
  include that holds its rule and the argument for it.

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
--- @include "includes/chunks"
--- @include "includes/metrics"
--- @include "includes/call-record"
--- @include "includes/claim-replay"
--- @include "includes/gates"
--- @include "includes/gate-pause"
--- @include "includes/gate-cap"
--- @include "includes/gate-rate"
--- @include "includes/gate-groups"
--- @include "includes/claim-lease"
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
local function keysOf(q) return setmetatable(queueKeys(q), derivedKey) end
-- The gates, in the order they are asked (includes/gates).
local GATES = { pauseGate, capGate, rateGate, groupsGate }

-- The claim's context, shared with its gates and its take (includes/gates).
-- Lease values are `token|claimedAt|attempt|recoveries|started|worker`: a
-- first attempt's is the same for the whole claim, built once (formatting
-- numbers per run was a large share of the claim's cost: docs/optimisations.md,
-- step 15). Most runs take the default lease: its deadline is converted to a
-- string once.
local c = { now = now, nowText = nowText, token = token, worker = worker, taskLimitsKey = taskLimitsKey,
  leasesKey = leasesKey, freshKey = freshKey, runPrefix = runPrefix, firstLease = token .. '|' .. nowText .. '|1|0|0|'
  .. worker, defaultDeadline = now + defaultTtl, defaultDeadlineText = string.format('%d', now + defaultTtl),
  -- The reply's runs (n of them) and ghosts; the leases to write: hash pairs,
  -- and per queue its running set pairs.
  runs = {}, n = 0, ghosts = {}, values = {}, leases = {},
  -- Enqueue times by their text: the runs of a batch share few of them, and
  -- converting one costs more than the rest of its run's claim.
  enqueuedAtOf = {},
  -- Per queue: runs a replay handed back; whether it asked the gates (or met
  -- runs of groups); the least room they left, less what was leased (nil: no
  -- bound); runs started by this claim and their summed wait since enqueue
  -- (ms); then the gates' own (a cap, the rate's slack and window, the
  -- limit groups' state and whether they hold runs to lease at once).
  handedBack = {}, gated = {}, room = {}, started = {}, waited = {},
  hasCap = {}, slackOf = {}, windowOf = {}, groupsOf = {}, pending = {} }

-- A replay hands back the runs its first copy leased (includes/claim-replay).
local firstNow = recalledReply(callRecordKey, token)
if firstNow then handBackFirstCopy(c, queueCount, keysOf, firstNow) end
recordReply(callRecordKey, token, nowText)

-- 1. The room each queue's gates leave. A queue with no ready runs and no rule
-- is idle; one with ready runs and no rule asks no gate.
local active, idle, unruled = {}, {}, {}
for q = 1, queueCount do
  local present = presentKeys(queueKeys(q).keyPrefix)
  if present == 0 then
    idle[q] = true
  elseif present <= 2 then
    unruled[q], active[q] = true, true
  else
    c.gated[q] = true
    c.room[q] = askGates(GATES, c, q, keysOf(q))
    active[q] = c.room[q] ~= 0
  end
end

-- 2. The take: queues in rotation order, each within its room (includes/claim-lease).
local function serve(q, take) return leaseReady(c, q, keysOf(q), take) end
local rotationStop = rotateClaim(queueCount, offset, want, minShare, active, serve)
inChunks('HSET', leasesKey, c.values)

-- 3. Each gate records what was leased.
for q = 1, queueCount do
  if c.gated[q] then recordGates(GATES, c, q, keysOf(q)) end
end

local wakeBroker = false
for q = 1, queueCount do
  if idle[q] then
    -- No runs, so no marker: a claim that finds a queue empty leaves none.
    rcall('ZREM', queueKeys(q).keyPrefix .. 'wake', 'w')
  elseif unruled[q] and not c.leases[q] then
    -- Not reached by the rotation: its ready runs wait, so its marker stays
    -- (or is back, if the wait in front of this claim popped it).
    rcall('ZADD', queueKeys(q).keyPrefix .. 'wake', 0, 'w')
  else
    local k = keysOf(q)
    if c.started[q] then
      countMinute(k.metrics, now, 'started', c.started[q])
      countMinute(k.metrics, now, 'waitMs', c.waited[q])
    end
    local lease = c.leases[q]
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
    -- sets the marker again: see the cap section of docs/storage.md): a gate
    -- left them no room. Parked runs a claim may lease at once (a group's
    -- budget ran out) wait too; runs parked for want of allowance do not (see
    -- wake.lua).
    if c.room[q] ~= 0 and (c.pending[q] or rcall('EXISTS', k.ready, k.readyList) > 0) then
      rcall('ZADD', k.wake, 0, 'w')
    else
      rcall('ZREM', k.wake, 'w')
    end
  end
end

if wakeBroker then rcall('ZADD', brokerWakeKey, 0, 'w') end

-- 4. The reply: the gates' part of it per queue, then the runs.
local capped, limited = {}, {}
for q = 1, queueCount do
  if c.gated[q] then
    local out = replyOfGates(GATES, c, q, keysOf(q))
    if out.capped then capped[#capped + 1] = q end
    if out.limited then
      limited[#limited + 1] = q
      limited[#limited + 1] = out.slack
      limited[#limited + 1] = out.freeAt
    end
  end
end

return { now, c.runs, c.ghosts, capped, limited, rotationStop }
