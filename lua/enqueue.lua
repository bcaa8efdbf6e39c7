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

-- Ready score = -priority * 2^44 + seq: higher priority pops first, FIFO
-- within a priority, and the value stays exact in a double (|score| < 2^53).
-- The default priority 0 scores its sequence number alone: a short integer
-- that ZADD parses and the record holds for a few bytes, where a 16-digit
-- band base sent glibc's strtod down its slow multi-precision path.
local PRIORITY_SPAN = 17592186044416
local OPTION_FIELDS = 6
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
-- A replay of a call holding ids the caller chose answers what its first
-- copy did (which items were new): those ids exist now, and would read as
-- taken. So does a call holding dedupe items: its first copy may have moved
-- a key on (a later item of the call then finds another run). A call of
-- generated ids needs no record (see below).
if callId ~= '' then
  local first = recalledReply(callRecordKey, callId)
  if first then
    -- Numbers, but the value after a negative one is a run id (a ULID).
    local replayed, idNext = {}, false
    for value in string.gmatch(first, '[^,]+') do
      if idNext then
        replayed[#replayed + 1], idNext = value, false
      else
        local n = tonumber(value)
        replayed[#replayed + 1], idNext = n, n < 0
      end
    end
    return replayed
  end
end
local optionCount = tonumber(ARGV[3 + queueCount])
local optionBase = 4 + queueCount
local itemBase = optionBase + OPTION_FIELDS * optionCount

-- Whether a run with caller-chosen id `id` is stored: fresh, done or with a run hash.
local function stored(id)
  return rcall('HEXISTS', freshKey, id) == 1 or rcall('HEXISTS', doneKey, id) == 1
    or rcall('EXISTS', runPrefix .. id) == 1
end

-- The items: ids, option set indexes and payloads, from both forms.
local findIn, cut = string.find, string.sub
local itemIds, itemSets, itemPayloads = {}, {}, {}
-- Items of limit groups: position → group (none on the common path).
local itemGroups = {}
-- Dedupe items: position → { key, mode, ttl, maxWait, releaseOn }, in order.
local itemDedupe, dedupeItems = {}, {}
local itemCount = 0
local a, argc = itemBase, #ARGV
while a <= argc do
  if ARGV[a] == '+' then
    -- Ids of one length need no separator: one search per run, for the
    -- newline that ends its payload.
    local set, idLength, joined = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), ARGV[a + 3]
    a = a + 4
    local at, size = 1, #joined
    repeat
      local idEnd = at + idLength - 1
      local payloadEnd = findIn(joined, '\n', idEnd + 1, true)
      payloadEnd = payloadEnd and payloadEnd - 1 or size
      itemCount = itemCount + 1
      itemIds[itemCount] = cut(joined, at, idEnd)
      itemSets[itemCount] = set
      itemPayloads[itemCount] = cut(joined, idEnd + 1, payloadEnd)
      at = payloadEnd + 2
    until at > size
  elseif ARGV[a] == 'd' then
    itemCount = itemCount + 1
    itemIds[itemCount], itemSets[itemCount], itemPayloads[itemCount] = ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 3]
    itemDedupe[itemCount] = {
      key = dedupeKey(tonumber(ARGV[a + 4])),
      mode = ARGV[a + 5],
      ttl = tonumber(ARGV[a + 6]),
      maxWait = tonumber(ARGV[a + 7]),
      releaseOn = ARGV[a + 8],
    }
    if ARGV[a + 9] ~= '' then itemGroups[itemCount] = ARGV[a + 9] end
    dedupeItems[#dedupeItems + 1] = itemCount
    a = a + 10
  elseif ARGV[a] == 'g' then
    itemCount = itemCount + 1
    itemIds[itemCount], itemSets[itemCount], itemPayloads[itemCount] = ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 3]
    itemGroups[itemCount] = ARGV[a + 4]
    a = a + 5
  else
    itemCount = itemCount + 1
    itemIds[itemCount], itemSets[itemCount], itemPayloads[itemCount] = ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 3]
    a = a + 4
  end
end

-- Per option set: queue, score base, due time (0 = ready now), lease TTL, check.
local options = {}
for o = 1, optionCount do
  local a = optionBase + (o - 1) * OPTION_FIELDS
  local priority, runAt, delay = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local due = 0
  if runAt > 0 then due = runAt elseif delay > 0 then due = now + delay end
  if due <= now then due = 0 end
  local leaseTtl = tonumber(ARGV[a + 4])
  local q = tonumber(ARGV[a])
  options[o] = {
    q = q,
    scoreBase = -priority * PRIORITY_SPAN,
    due = due,
    dueText = format('%d', due),
    -- The record's fields after its score, the same for every run of the set.
    middle = '|' .. (leaseTtl > 0 and format('%d', leaseTtl) or '') .. '|' .. (due > 0 and format('%d', due) or '')
      .. '|' .. ARGV[2 + q] .. '|',
    leaseTtlText = leaseTtl > 0 and format('%d', leaseTtl) or nil,
    check = ARGV[a + 5] == '1',
  }
end

-- A replayed call must not store its runs twice. ioredis resends a command
-- whose reply a dropped connection lost (autoResendUnfulfilledCommands, on by
-- default, and on in the application's own connections), and Redis may have
-- run the first copy (whose record, if it had one, was not found: it expired,
-- or more than the record slots' worth of its sender's calls went out before
-- the resend). No fresh id exists before the call that carries it, so
-- when the call's first fresh id exists, this call ran already: every item is
-- then checked like a caller's id, and each one that exists is skipped. Two
-- lookups per call, none per run. (A run of that call that finished and whose
-- result expired before the replay arrived is no longer there to detect.)
-- A dedupe item's own id may not be stored even when the call ran (its key
-- held a run), so the first other item is the sign, and each dedupe item's
-- own id too (a call of only dedupe items has no other sign).
local replayed = false
for i = 1, itemCount do
  if not itemDedupe[i] and not options[itemSets[i]].check then
    replayed = stored(itemIds[i])
    break
  end
end
for n = 1, #dedupeItems do
  if replayed then break end
  replayed = stored(itemIds[dedupeItems[n]])
end
if replayed then
  for o = 1, optionCount do options[o].check = true end
end

-- Dedupe items, in order: each either finds its key held and is answered with
-- the key's run (a debounce item rewriting that run's payload and due time),
-- or is stored below as a new run that takes the key. Keys written here are
-- read by later items of this call; a run this call stores is not in Redis
-- yet, so a later item with its key meets it in `taken` instead.
local answered = {}
local reply = { now }
if #dedupeItems > 0 then
  local runKeys = { fresh = freshKey, done = doneKey, leases = leasesKey, runPrefix = runPrefix }
  local taken = {}
  for n = 1, #dedupeItems do
    local i = dedupeItems[n]
    local d, o, id = itemDedupe[i], options[itemSets[i]], itemIds[i]
    -- A replay reports an item its first copy stored as existing (below).
    if not (o.check and stored(id)) then
      local into
      local j = taken[d.key]
      if j then
        -- The key's run is this call's item j, waiting: a drop keeps it, a
        -- debounce gives it its payload if it is deferred (due now + ttl: the
        -- same clock), else starts its own.
        if d.mode == 'drop' then
          into = itemIds[j]
        elseif options[itemSets[j]].due > 0 then
          itemPayloads[j] = itemPayloads[i]
          into = itemIds[j]
        end
      else
        into = dedupeHeld(runKeys, d, ARGV[2 + o.q], queueKeys(o.q).deferred, now, itemPayloads[i])
      end
      if into then
        answered[i] = true
        reply[#reply + 1] = -i
        reply[#reply + 1] = into
      else
        taken[d.key] = i
        dedupeTake(d, now, id, o.due)
      end
    end
  end
end

local seq = rcall('INCRBY', seqKey, format('%d', itemCount)) - itemCount
-- Per queue: ready ZSET adds (score, id pairs), ready LIST adds (ids, whose
-- score is their position) and deferred ZSET adds (due, id pairs).
local readyAdds, listAdds, deferredAdds, enqueued, records, added = {}, {}, {}, {}, {}, {}
-- Queues that got runs of limit groups.
local grouped = {}
local recordCount = 0
local anyDeferred = false
local nowText = format('%d', now)
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
    -- A run of a limit group: a run hash (its group beside the fields a
    -- fresh record holds), in the ready ZSET, which a claim reads its group
    -- from (includes/claim-groups).
    local q = o.q
    local score = format('%d', o.scoreBase + seq + i)
    local fields = { 'payload', itemPayloads[i], 'queue', ARGV[2 + q], 'score', score, 'enqueuedAt', nowText,
      'group', itemGroups[i] }
    if o.leaseTtlText then
      fields[#fields + 1] = 'leaseTtl'
      fields[#fields + 1] = o.leaseTtlText
    end
    if o.check then added[id] = true end
    if o.due > 0 then
      fields[#fields + 1] = 'runAfter'
      fields[#fields + 1] = o.dueText
      local d = deferredAdds[q] or {}
      deferredAdds[q] = d
      d[#d + 1] = o.dueText
      d[#d + 1] = id
      anyDeferred = true
    else
      local r = readyAdds[q] or {}
      readyAdds[q] = r
      r[#r + 1] = score
      r[#r + 1] = id
    end
    rcall('HSET', runPrefix .. id, unpack(fields))
    grouped[q] = true
    enqueued[q] = (enqueued[q] or 0) + 1
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

for q = 1, queueCount do
  local k = queueKeys(q)
  if grouped[q] then
    rcall('SET', k.grouped, '1')
    rcall('SADD', queuesKey, ARGV[2 + q])
  end
  local adds, list = readyAdds[q], listAdds[q]
  if adds then inChunks('ZADD', k.ready, adds) end
  if list then inChunks('RPUSH', k.readyList, list) end
  -- Wakes one idle consumer of the queue: its claim goes out behind its
  -- blocked wait and runs in Redis the moment the marker is popped.
  if adds or list then rcall('ZADD', k.wake, '0', 'w') end
  if deferredAdds[q] then
    inChunks('ZADD', k.deferred, deferredAdds[q])
  end
  if enqueued[q] then
    rcall('HINCRBY', k.stats, 'enqueued', format('%d', enqueued[q]))
    countMinute(k.metrics, now, 'enqueued', enqueued[q])
  end
end
if anyDeferred then
  rcall('ZADD', brokerWakeKey, '0', 'w')
end

if callId ~= '' then recordReply(callRecordKey, callId, table.concat(reply, ',')) end
return reply
