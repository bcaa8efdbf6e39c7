--- @include "includes/append"
--- @include "includes/chunks"
--- @include "includes/fresh"
--- @include "includes/ready-list"
--- @include "includes/take-ready"
--- @include "includes/gate-groups"

-- The take of a claim (claim.lua): a queue's ready runs in ready order, within
-- the room its gates left, each leased under the claim's token, and the
-- reply's entries for them. `c` is the claim's context (includes/gates): its
-- time, token, worker and lease values, the reply's runs and ghosts, the
-- leases to write (c.values: leases hash pairs, c.leases[q]: running set
-- pairs), and per queue its room and what it started.

-- Appends the fresh runs gathered in joined[1..count] to the reply as one
-- string, so that the reply keeps the claim's order around other runs;
-- returns the reply's new length.
local function flushJoined(reply, n, joined, count)
  if count == 0 then return n end
  reply[n + 1] = table.concat(joined, '\n', 1, count)
  return n + 1
end

-- Takes up to `take` runs of queue q (keys `k`) for includes/claim-rotation:
-- leases what it may, parks what its limit groups hold back; returns how many
-- it leased and whether the queue may give more. The loop is per run: it
-- calls no gate, only the limit-group gate for a run of a group.
local function leaseReady(c, q, k, take)
  local room = c.room
  if room[q] then take = math.min(take, room[q]) end
  local now, nowText, token, worker, firstLease = c.now, c.nowText, c.token, c.worker, c.firstLease
  local defaultDeadline, defaultDeadlineText = c.defaultDeadline, c.defaultDeadlineText
  local runs, ghosts, values, enqueuedAtOf, runKeyPrefix = c.runs, c.ghosts, c.values, c.enqueuedAtOf, c.runPrefix
  local n, claimed = c.n, 0
  local ids, exhausted = takeReady(k.ready, k.readyList, k.withdrawn, c.freshKey, take)
  local lease = c.leases[q]
  if not lease then
    lease = {}
    c.leases[q] = lease
  end
  local records = inChunks('HMGET', c.freshKey, ids)
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
      local runKey = runKeyPrefix .. id
      local f = redis.call('HMGET', runKey, 'payload', 'attempts', 'enqueuedAt', 'leaseTtl', 'recoveries', 'group',
        'score')
      local slack, parked = nil, false
      if f[6] and f[1] then slack, parked = admitToGroup(c, q, k, id, f[6], f[7]) end
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
          local h = redis.call('HMGET', runKey, 'workers', 'errors', 'startedAt')
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
  c.n = flushJoined(runs, n, joined, j2)
  -- Ghosts took no room: only leased runs count against the cap.
  if room[q] then room[q] = room[q] - claimed end
  if startedHere > 0 then
    c.started[q] = (c.started[q] or 0) + startedHere
    c.waited[q] = (c.waited[q] or 0) + waitedHere
  end
  return claimed, not (exhausted or room[q] == 0 or groupsHalted(c, q))
end
