-- Call records: how a script recognises a replay of its own call. ioredis
-- resends a command whose reply a dropped connection lost, and Redis may have
-- run the first copy; a script whose second run would answer differently
-- (a claim would lease other runs and leave its first copy's to expire, an
-- acknowledgement finds its leases released, a requeue finds its run READY, a
-- purge finds the runs enqueued since) records its reply under its call id,
-- in one of its sender's record slots (`last-call:<sender>:<slot>`, taken in
-- turn, so that calls in flight together keep theirs), and a replay answers
-- that reply, or for a claim undoes its first copy, and changes nothing more.
-- A record is kept long enough for a client to reconnect after an outage and
-- resend.
local CALL_RECORD_TTL_MS = 600000

-- The reply text `callId`'s first copy recorded in `key`, or nil.
local function recalledReply(key, callId)
  local record = redis.call('GET', key)
  local head = callId .. '|'
  if not record or string.sub(record, 1, #head) ~= head then return nil end
  return string.sub(record, #head + 1)
end

-- The reply `callId`'s first copy recorded in `key` as a comma-separated
-- list of numbers, as that list, or nil.
local function recalledNumbers(key, callId)
  local first = recalledReply(key, callId)
  if not first then return nil end
  local numbers = {}
  for value in string.gmatch(first, '[^,]+') do numbers[#numbers + 1] = tonumber(value) end
  return numbers
end

-- Records reply text `text` of call `callId` in `key`.
local function recordReply(key, callId, text)
  redis.call('SET', key, callId .. '|' .. text, 'PX', CALL_RECORD_TTL_MS)
end
