-- Runs `command` over many values with few calls: `command key v1 v2 ...`,
-- or `command v1 v2 ...` when `key` is false (DEL takes keys only). `unpack`
-- stops near 8,000 values (a claim may take 10,000 runs), so large batches go
-- in chunks of 1,000, an even number: pairs (score member, field value) stay
-- together. Returns, in order, the replies of a command that answers one
-- value per argument (HMGET, ZMSCORE), and the sum of the replies of one
-- that answers a count (HDEL, DEL). An empty batch makes no call.
local CHUNK = 1000
local function inChunks(command, key, values)
  local replies, total = {}, 0
  for first = 1, #values, CHUNK do
    local last = math.min(first + CHUNK - 1, #values)
    local got
    if key then
      got = redis.call(command, key, unpack(values, first, last))
    else
      got = redis.call(command, unpack(values, first, last))
    end
    if type(got) == 'table' then
      for j = 1, #got do replies[first + j - 1] = got[j] end
    elseif type(got) == 'number' then
      total = total + got
    end
  end
  return replies, total
end
