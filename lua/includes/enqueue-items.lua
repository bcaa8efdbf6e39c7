--- @include "includes/fresh"

-- The arguments of an enqueue call (enqueue.lua's header: its option sets and
-- items), read into arrays by item position.

-- Ready score = -priority * 2^44 + seq: higher priority pops first, FIFO
-- within a priority, and the value stays exact in a double (|score| < 2^53).
-- The default priority 0 scores its sequence number alone: a short integer
-- that ZADD parses and the record holds for a few bytes, where a 16-digit
-- band base sent glibc's strtod down its slow multi-precision path.
local PRIORITY_SPAN = 17592186044416
local OPTION_FIELDS = 6

-- Per option set (from ARGV[optionBase]): queue, score base, due time (0 =
-- ready now), lease TTL, check. Numbers become text with '%d' (see the note
-- on numbers in enqueue.lua).
local function readEnqueueOptions(optionBase, optionCount, now)
  local format = string.format
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
  return options
end

-- The items (from ARGV[itemBase]), in both forms: ids, option set indexes
-- and payloads; items of limit groups, position → group (none on the common
-- path); dedupe items, position → { key, mode, ttl, maxWait, releaseOn }, and
-- their positions in order (`dedupeKeyAt(p)`: the call's p-th dedupe key);
-- and how many.
local function readEnqueueItems(itemBase, dedupeKeyAt)
  local findIn, cut = string.find, string.sub
  local itemIds, itemSets, itemPayloads = {}, {}, {}
  local itemGroups, itemDedupe, dedupeItems = {}, {}, {}
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
        key = dedupeKeyAt(tonumber(ARGV[a + 4])),
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
  return itemIds, itemSets, itemPayloads, itemGroups, itemDedupe, dedupeItems, itemCount
end
