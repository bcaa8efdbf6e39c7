--[[
  enqueue: store new task runs, each READY now or deferred until its due time.

  Atomic for the whole batch: either every run of the call is stored or, if
  the script fails, none is (validation happens in Node before the call).

  A new run is a record in the fresh hash (see includes/fresh): its enqueue
  time, ready score, lease override, due time, queue and payload, written for
  the whole batch in one call; status READY and 0 attempts are implied until
  an attempt settles. A run of a limit group (see includes/limit-groups) is a
  run hash instead, with the same fields and its `group`, and waits in the
  ready ZSET, never the ready list; its queue's `grouped` flag is set.

  KEYS      seq, brokerWake (woken to re-plan promotion), runPrefix (run keys
            are derived from it and the ids: a bulk call would otherwise send a
            key per run), fresh, callRecord; per queue, in ARGV order: ready,
            deferred, wake, stats, metrics, readyList (priority-0 runs ready
            now), grouped (set when the queue gets runs of limit groups); then
            done (an id that exists there is taken), queues (a queue that gets
            runs of limit groups is registered: task-limit.lua wakes its
            groups); then, only in a call that holds dedupe items (the `d` form
            below), leases (read: is a key's run leased) and the call's dedupe
            keys, each once (lua/keys.mjs)

  ARGV[1]   callId        '' or, for a call holding ids the caller chose or
                          dedupe items, unique to this call (the same for its
                          copies)
  ARGV[2]   Q             number of distinct queues
  ARGV[3 .. 2+Q]          queue names
  ARGV[3+Q] P             number of distinct option sets in the call
  then P option sets, 6 values each: queue index (1-based), priority
            (-100..100), run at (epoch ms, 0 = none), delay (ms, 0 = none),
            lease TTL override (ms, 0 = backend default), check (1 = the
            caller chose the ids: store each only if it is new; 0 = fresh ids
            Threadmill generated, which cannot exist yet)
  then the items, in order, in groups of either form:
            +  option set index (1-based), id length L (bytes), then one
               value: the group's runs, each its id and its payload (JSON)
               back to back, joined by newlines: `idpayload\nidpayload...`.
               For consecutive runs of one option set whose ids have one
               length and whose payloads hold no newline (one value for
               the group instead of three per run: each value costs the
               client and Redis its own encoding; the fixed id length
               spares Redis a search per run)
            =  id, option set index, payload: one item
            g  id, option set index, payload, group: one run of a limit
               group (`<task>` or `<task>\n<key>`), stored as a run hash
            d  id, option set index, payload, then its deduplication: the
               place of its key among the call's dedupe keys (1 for the
               first), mode ('drop' or 'debounce'), ttlMs,
               maxWaitMs (0 = no cap), releaseOn ('s' start, 'f' finish),
               then its limit group ('' for none). A debounce item's option
               set defers it by ttlMs; a debounce into a waiting run keeps
               that run's group. Its id is generated (never the caller's)
            (runs of a bulk call mostly share one option set: 3 values per
            run instead of 8)

  Returns   { now, skipped_1, ... }: the positions (1-based) of the items
            not stored because a run with that id already existed
            (idempotent enqueue: nothing is written for that item); every
            other item was stored. A bulk call of new ids so gets two values
            back, not one per run. A replay of a call that ran already (see
            below) skips every item whose run exists, fresh ids included.
            A dedupe item that was not stored because its key holds a run
            adds two values: its position negated, and that run's id (a
            debounce item's payload and due time went to that run).

  Complexity: O(n) for n items ready now at priority 0, else O(n log N);
  plus O(log N) per dedupe item (a GET, at most four reads of its key's run,
  a SET or PEXPIRE, and for a debounce a rewrite of that run).
]]
--- @include "includes/now"
--- @include "includes/chunks"
--- @include "includes/metrics"
--- @include "includes/call-record"
--- @include "includes/done"
--- @include "includes/dedupe"
--- @include "includes/enqueue-items"
--- @include "includes/enqueue-replay"
--- @include "includes/enqueue-dedupe"
--- @include "includes/enqueue-grouped"
--- @include "includes/enqueue-place"

local rcall = redis.call
-- Numbers become text here with '%d', never by concatenation or as a
-- `redis.call` argument: Lua writes a concatenated number with '%.14g' and
-- Redis a number argument with '%.17g', and glibc prints either through its
-- exact floating-point path, which is slow (a deferred run's due time, passed
-- to ZADD as a number, was a large share of a bulk call's instructions per
-- run: docs/optimisations.md, step 45).
local format = string.format

local now = nowMs()
local callId = ARGV[1]
local queueCount = tonumber(ARGV[2])
--- @keys
-- A replay answers what its first copy did (includes/enqueue-replay).
local recalled = recalledEnqueue(callRecordKey, callId)
if recalled then return recalled end
local optionCount = tonumber(ARGV[3 + queueCount])
local optionBase = 4 + queueCount
local itemBase = optionBase + OPTION_FIELDS * optionCount

-- Whether a run with caller-chosen id `id` is stored: fresh, done or with a run hash.
local function stored(id)
  return rcall('HEXISTS', freshKey, id) == 1 or rcall('HEXISTS', doneKey, id) == 1
    or rcall('EXISTS', runPrefix .. id) == 1
end

-- The items and option sets (includes/enqueue-items).
local itemIds, itemSets, itemPayloads, itemGroups, itemDedupe, dedupeItems, itemCount =
  readEnqueueItems(itemBase, dedupeKey)
local options = readEnqueueOptions(optionBase, optionCount, now)
-- A call that ran already checks every item like a caller's id.
if replayedCall(itemIds, itemSets, itemDedupe, dedupeItems, itemCount, options, stored) then
  for o = 1, optionCount do options[o].check = true end
end

local nowText = format('%d', now)
-- The call's context, shared with its includes. Per queue: ready ZSET adds
-- (score, id pairs), ready LIST adds (ids, whose score is their position),
-- deferred ZSET adds (due, id pairs), runs enqueued, and whether it got runs
-- of limit groups; ids a caller chose stored by this call.
local e = { now = now, nowText = nowText, runPrefix = runPrefix, itemIds = itemIds, itemSets = itemSets,
  itemPayloads = itemPayloads, itemGroups = itemGroups, itemDedupe = itemDedupe, dedupeItems = dedupeItems,
  options = options, stored = stored, readyAdds = {}, listAdds = {}, deferredAdds = {}, enqueued = {},
  grouped = {}, added = {}, anyDeferred = false }

-- Dedupe items first, in order (includes/enqueue-dedupe).
local answered = {}
local reply = { now }
if #dedupeItems > 0 then
  e.runKeys = { fresh = freshKey, done = doneKey, leases = leasesKey, runPrefix = runPrefix }
  e.deferredKeyOf = function(q) return queueKeys(q).deferred end
  answered = decideDedupe(e, reply)
end

local seq = rcall('INCRBY', seqKey, format('%d', itemCount)) - itemCount
local readyAdds, listAdds, deferredAdds, enqueued, added = e.readyAdds, e.listAdds, e.deferredAdds, e.enqueued,
  e.added
local records = {}
local recordCount = 0
local anyDeferred = false
local head = nowText .. '|'

-- Scores are printed once each, as integers, for both the record and the
-- ready set ('%d': concatenation keeps only 14 significant digits, '%.0f'
-- takes glibc's slow exact path, and a number handed to ZADD is printed
-- again). A priority-0 score is written into its record as the text of its
-- hundreds (printed once per hundred runs) and its last two digits, two
-- one-character strings joined in the same concatenation as the rest of the
-- record: a printf per run was a large share of a bulk call's script time
-- (docs/optimisations.md, step 34). Other priorities and scores below 100
-- print in full. (Before, calls of 100 runs or more built a table of the
-- hundred two-digit strings and smaller calls printed each score; against
-- that, these digits cost calls of 1,000 runs a little and save more in
-- smaller calls, an `atomic: false` chunk and those that concurrent single
-- enqueues coalesce into: step 44.)
local DIGITS = { '0', '1', '2', '3', '4', '5', '6', '7', '8', '9' }
local hundreds, hundredsText = -1, ''

-- A plain call pays one test per item, of a local.
local anyAnswered = next(answered) ~= nil
for i = 1, itemCount do
  local id = itemIds[i]
  local o = options[itemSets[i]]
  -- A caller-chosen id may exist already, fresh or with a run hash, or come
  -- twice in one call (concurrent enqueues coalesce): the first one wins.
  if anyAnswered and answered[i] then
    -- Deduplicated: answered above.
  elseif o.check and (added[id] or stored(id)) then
    reply[#reply + 1] = i
  elseif itemGroups[i] then
    -- A run of a limit group: a run hash (includes/enqueue-grouped).
    storeGroupedRun(e, i, id, o, seq)
  else
    local q = o.q
    local position, score = seq + i
    records[recordCount + 1] = id
    if o.scoreBase == 0 and position >= 100 then
      local last = position % 100
      local above = (position - last) / 100
      if above ~= hundreds then hundreds, hundredsText = above, format('%d', above) end
      local units = last % 10
      -- Printed into the record only: a priority-0 run needs no score of its
      -- own in a set (the ready list and the deferred set do not take it).
      records[recordCount + 2] = head .. hundredsText .. DIGITS[(last - units) / 10 + 1] .. DIGITS[units + 1]
        .. o.middle .. itemPayloads[i]
    else
      score = format('%d', o.scoreBase + position)
      records[recordCount + 2] = head .. score .. o.middle .. itemPayloads[i]
    end
    recordCount = recordCount + 2
    -- Only ids a caller chose can repeat within a call.
    if o.check then added[id] = true end
    if o.due > 0 then
      local d = deferredAdds[q]
      if not d then
        d = {}
        deferredAdds[q] = d
      end
      d[#d + 1] = o.dueText
      d[#d + 1] = id
      anyDeferred = true
    elseif o.scoreBase == 0 then
      local l = listAdds[q]
      if not l then
        l = { score = position }
        listAdds[q] = l
      end
      l[#l + 1] = id
    else
      local r = readyAdds[q]
      if not r then
        r = {}
        readyAdds[q] = r
      end
      r[#r + 1] = score
      r[#r + 1] = id
    end
    enqueued[q] = (enqueued[q] or 0) + 1
  end
end

inChunks('HSET', freshKey, records)

-- Each queue's runs into their places (includes/enqueue-place).
for q = 1, queueCount do placeRuns(e, q, queueKeys(q), queuesKey) end
if anyDeferred or e.anyDeferred then
  rcall('ZADD', brokerWakeKey, '0', 'w')
end

if callId ~= '' then recordReply(callRecordKey, callId, table.concat(reply, ',')) end
return reply
