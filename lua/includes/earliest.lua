-- The lower of `current` (-1 for none) and the lowest score in sorted set
-- `key`: the earliest due time or deadline across several sets.
local function earliest(key, current)
  local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if not head[2] then return current end
  local at = tonumber(head[2])
  if current < 0 or at < current then return at end
  return current
end
