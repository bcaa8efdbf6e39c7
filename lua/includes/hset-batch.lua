-- HSET many (field, value) pairs with few calls. `unpack` has a stack limit
-- of a few thousand values, so large batches go in chunks.
local function hsetBatch(key, fieldValues)
  local chunk = 1000
  for first = 1, #fieldValues, chunk do
    redis.call('HSET', key, unpack(fieldValues, first, math.min(first + chunk - 1, #fieldValues)))
  end
end
