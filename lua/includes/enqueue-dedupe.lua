--- @include "includes/done"
--- @include "includes/dedupe"

-- The dedupe decisions of an enqueue call (enqueue.lua; the rule in
-- includes/dedupe). Dedupe items, in order: each either finds its key held
-- and is answered with the key's run (a debounce item rewriting that run's
-- payload and due time), or is stored as a new run that takes the key. Keys
-- written here are read by later items of this call; a run this call stores
-- is not in Redis yet, so a later item with its key meets it in `taken`
-- instead. Appends each answered item's position (negated) and run to
-- `reply`, and returns the answered positions (position → true).
-- `e`: the call's items (itemIds, itemSets, itemPayloads, itemDedupe,
-- dedupeItems), its options, `now`, `stored(id)`, `runKeys` (fresh, done,
-- leases, runPrefix) and `deferredKeyOf(q)`.
local function decideDedupe(e, reply)
  local answered = {}
  local itemIds, itemSets, itemPayloads, options = e.itemIds, e.itemSets, e.itemPayloads, e.options
  local taken = {}
  for n = 1, #e.dedupeItems do
    local i = e.dedupeItems[n]
    local d, o, id = e.itemDedupe[i], options[itemSets[i]], itemIds[i]
    -- A replay reports an item its first copy stored as existing (as the
    -- script's take does).
    if not (o.check and e.stored(id)) then
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
        into = dedupeHeld(e.runKeys, d, ARGV[2 + o.q], e.deferredKeyOf(o.q), e.now, itemPayloads[i])
      end
      if into then
        answered[i] = true
        reply[#reply + 1] = -i
        reply[#reply + 1] = into
      else
        taken[d.key] = i
        dedupeTake(d, e.now, id, o.due)
      end
    end
  end
  return answered
end
