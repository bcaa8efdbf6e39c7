-- The Redis server clock in milliseconds. Every deadline and timestamp comes
-- from here, never from a client clock, so hosts with skewed clocks agree.
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
