-- ZADD many (score, member) pairs with few calls. `unpack` has a stack limit
-- of a few thousand values, so large batches go in chunks.
local function zaddBatch(key, scoreMembers, flag)
  local chunk = 1000
  for first = 1, #scoreMembers, chunk do
    local last = math.min(first + chunk - 1, #scoreMembers)
    if flag then
      redis.call('ZADD', key, flag, unpack(scoreMembers, first, last))
    else
      redis.call('ZADD', key, unpack(scoreMembers, first, last))
    end
  end
end
