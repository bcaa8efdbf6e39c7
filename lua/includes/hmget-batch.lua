-- HMGET many fields with few calls, values in field order (false when absent).
-- `unpack` has a stack limit of a few thousand values, so large batches (a
-- claim may take up to 10,000 runs) go in chunks.
local function hmgetBatch(key, fields)
  local chunk = 1000
  local values = {}
  for first = 1, #fields, chunk do
    local got = redis.call('HMGET', key, unpack(fields, first, math.min(first + chunk - 1, #fields)))
    for j = 1, #got do values[first + j - 1] = got[j] end
  end
  return values
end
