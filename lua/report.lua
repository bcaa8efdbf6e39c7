--[[
  report: store the progress and log lines that running attempts reported
  (`context.progress(value)`, `context.log(line)`), under their leases.

  A worker coalesces what its attempts report and sends it in one call: per
  run, the last progress value and the lines logged since its last call. Each
  item is fenced by its lease, like an outcome: written only while the lease
  holds (see includes/lease), refused otherwise, so nothing of an attempt that
  lost its lease lands on a run another attempt may hold.

  A run still in its fresh record is first moved to its run hash for good
  (includes/fresh: materialize), as the reaper does; every other script
  already handles a run with a run hash, and keeps or deletes its fields as a
  whole (see docs/storage.md, "Progress and logs").

  KEYS      leases, fresh, runPrefix, waiting, finished (entries for the runs'
            waiters), callRecord; per queue: running (lua/keys.mjs)

  ARGV[1]     queueCount  Q
  ARGV[2]     maxLines    how many log lines a run keeps (the last ones)
  ARGV[3]     callId      this call's id (a resent copy is recognised by it)
  ARGV[4..]   items of six: id, queue index (1..Q), token, progress (the JSON
              text, '' for none: JSON text is never empty), line count n,
              the n lines joined by '\n' (lines hold no newline)

  Run hash fields written: `progress` (the last value's JSON), `logs` (the last
  maxLines lines joined by '\n'), `logLines` (how many lines `logs` holds).

  A registered run (somebody waits on it) gets an entry in `finished`:
  `id <id> reported 1 [progress <json>] [logs <lines>]`; it stays registered.

  Returns   { 0, i... }: the (1-based) items refused because their lease no
            longer holds. A resent copy of a call that ran (ioredis resends
            after a lost reply) finds its record, answers the same and writes
            nothing: no line is appended twice.

  Complexity: O(n) per item for n new lines, plus the lines dropped from the
  head of `logs` (at most maxLines per item).
]]
--- @include "includes/now"
--- @include "includes/append"
--- @include "includes/lease"
--- @include "includes/fresh"
--- @include "includes/finished"
--- @include "includes/call-record"
--- @keys

local callId = ARGV[3]
local first = recalledNumbers(callRecordKey, callId)
if first then return first end
local maxLines = tonumber(ARGV[2])
local now = nowMs()
local watched = redis.call('EXISTS', waitingKey) == 1
local findIn, cut = string.find, string.sub

-- `text` without its first `drop` lines.
local function dropHead(text, drop)
  local at = 0
  for _ = 1, drop do at = findIn(text, '\n', at + 1, true) end
  return cut(text, at + 1)
end

local reply = { 0 }
local item = 0
for a = 4, #ARGV, 6 do
  item = item + 1
  local id, q, token = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2]
  local progress, count, lines = ARGV[a + 3], tonumber(ARGV[a + 4]), ARGV[a + 5]
  local lease = redis.call('HGET', leasesKey, id)
  if not leaseHolds(lease, token, redis.call('ZSCORE', queueKeys(q).running, id), now) then
    reply[#reply + 1] = item
  else
    local runKey = runPrefix .. id
    materialize(freshKey, runKey, id)
    local fields = {}
    if progress ~= '' then
      fields[1], fields[2] = 'progress', progress
    end
    if count > 0 then
      -- A client sends at most maxLines lines per run and call.
      if count > maxLines then
        lines = dropHead(lines, count - maxLines)
        count = maxLines
      end
      local stored = redis.call('HMGET', runKey, 'logs', 'logLines')
      local total, text = count, lines
      if stored[1] then
        total = tonumber(stored[2] or '0') + count
        text = stored[1] .. '\n' .. lines
      end
      if total > maxLines then
        text = dropHead(text, total - maxLines)
        total = maxLines
      end
      local n = #fields
      fields[n + 1], fields[n + 2], fields[n + 3], fields[n + 4] = 'logs', text, 'logLines', total
    end
    if #fields > 0 then redis.call('HSET', runKey, unpack(fields)) end
    if watched then
      local expiry = redis.call('ZSCORE', waitingKey, id)
      if expiry and tonumber(expiry) >= now then
        local entry = { 'id', id, 'reported', '1' }
        if progress ~= '' then
          entry[5], entry[6] = 'progress', progress
        end
        if count > 0 then
          local n = #entry
          entry[n + 1], entry[n + 2] = 'logs', lines
        end
        redis.call('XADD', finishedKey, 'MINID', '~', string.format('%d', now - FINISHED_KEPT_MS), '*',
          unpack(entry))
        redis.call('PEXPIRE', finishedKey, 2 * FINISHED_KEPT_MS)
      end
    end
  end
end
recordReply(callRecordKey, callId, table.concat(reply, ','))
return reply
