--- @include "includes/call-record"

-- Replays of an enqueue call (enqueue.lua; includes/call-record).

-- A replay of a call holding ids the caller chose answers what its first
-- copy did (which items were new): those ids exist now, and would read as
-- taken. So does a call holding dedupe items: its first copy may have moved
-- a key on (a later item of the call then finds another run). A call of
-- generated ids needs no record (see replayedCall). Returns the first copy's
-- reply, or nil.
local function recalledEnqueue(recordKey, callId)
  if callId == '' then return nil end
  local first = recalledReply(recordKey, callId)
  if not first then return nil end
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
-- own id too (a call of only dedupe items has no other sign). Returns
-- whether the call ran already; `stored(id)`: whether a run has the id.
local function replayedCall(itemIds, itemSets, itemDedupe, dedupeItems, itemCount, options, stored)
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
  return replayed
end
