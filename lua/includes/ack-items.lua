--- @include "includes/fresh"
--- @include "includes/chunks"

-- The items of an acknowledgement call (acknowledge.lua's ARGV from 5 on: the
-- codes S F R Q f r q, `+` groups of successes, B start marks, K TTLs),
-- read into one table of arrays by position (1..n), each item's fields in
-- the order the script applies them:
--
--   codes, queues, ids, tokens, values, extras   the item's code (a `+`
--            group gives an S item per id), queue index, run id, lease token,
--            value (result, error, or '') and its extra (a retry's delay, a
--            quarantine's reason)
--   ownTtlOf position → the TTL (ms) its task keeps it for, for a success or
--            failure kept another TTL than its outcome's default (a K item);
--            none on the common path, where every run keeps the defaults
--   idsByQueue, slotsByQueue   per queue, its items' ids and positions
--   n, anyOwn (some item has an own TTL), anyKept (one of them above 0)
local function readAckItems(queueCount, successfulTtl, failedTtl)
  local codes, queues, ids, tokens, values, extras, ownTtlOf = {}, {}, {}, {}, {}, {}, {}
  local idsByQueue, slotsByQueue = {}, {}
  for q = 1, queueCount do idsByQueue[q], slotsByQueue[q] = {}, {} end
  local a, n = 5, 0
  local argc = #ARGV
  local keep, anyOwn, anyKept = nil, false, false
  while a <= argc do
    local code = ARGV[a]
    local q = tonumber(ARGV[a + 1])
    local qi, qs = idsByQueue[q], slotsByQueue[q]
    if code == 'K' then
      -- The TTL of the outcomes that follow, nil for '' (the defaults).
      keep = tonumber(ARGV[a + 1])
      a = a + 2
    elseif code == '+' then
      local token, joined = ARGV[a + 2], ARGV[a + 3]
      a = a + 4
      local qn = #qi
      local at = 1
      local first = n + 1
      repeat
        local stop = findIn(joined, '\n', at, true)
        local id = cut(joined, at, (stop or 0) - 1)
        n, qn = n + 1, qn + 1
        codes[n], queues[n], ids[n], tokens[n], values[n] = 'S', q, id, token, ''
        qi[qn], qs[qn] = id, n
        if stop then at = stop + 1 end
      until not stop
      -- A group's runs share their TTL: one test per group on the common path.
      if keep and keep ~= successfulTtl then
        for j = first, n do ownTtlOf[j] = keep end
        anyOwn, anyKept = true, anyKept or keep > 0
      end
    else
      n = n + 1
      codes[n], queues[n], ids[n], tokens[n], values[n] = code, q, ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
      if code == 'B' then
        a = a + 4
      elseif code == 'S' or code == 'F' or code == 'f' then
        a = a + 5
      else
        extras[n] = ARGV[a + 5]
        a = a + 6
      end
      qi[#qi + 1] = ids[n]
      qs[#qs + 1] = n
      if keep and ((code == 'S' and keep ~= successfulTtl) or ((code == 'F' or code == 'f') and keep ~= failedTtl)) then
        ownTtlOf[n] = keep
        anyOwn, anyKept = true, anyKept or keep > 0
      end
    end
  end
  return { codes = codes, queues = queues, ids = ids, tokens = tokens, values = values, extras = extras,
    ownTtlOf = ownTtlOf, idsByQueue = idsByQueue, slotsByQueue = slotsByQueue, n = n, anyOwn = anyOwn,
    anyKept = anyKept }
end

-- The fence's reading: the lease values the items name (`leasesHash`, a
-- chunk per call) and their deadlines, by position; `keysOfQueue(q)` gives
-- queue q's keys by name.
local function readAckLeases(items, queueCount, keysOfQueue, leasesHash, now)
  local leaseOf, deadlineOf = inChunks('HMGET', leasesHash, items.ids), {}
  for q = 1, queueCount do
    local qs = items.slotsByQueue[q]
    local runningKey = keysOfQueue(q).running
    if #qs > 0 and redis.call('ZCOUNT', runningKey, '-inf', '(' .. now) == 0 then
      -- No lease of the queue is past its deadline, so none of the batch is:
      -- one count instead of a score per run, each of which Redis would print
      -- (as a double, through printf) for Lua to parse back. A lease value and
      -- its running entry are written and removed together, so a held lease
      -- is in the set.
      for j = 1, #qs do deadlineOf[qs[j]] = now end
    elseif #qs > 0 then
      local got = inChunks('ZMSCORE', runningKey, items.idsByQueue[q])
      for j = 1, #qs do deadlineOf[qs[j]] = got[j] end
    end
  end
  return leaseOf, deadlineOf
end
