-- Wake-ups (includes/effects). A queue that got ready runs back (a retry
-- without delay) gets its wake marker, so an idle consumer claims them; a
-- call that deferred runs (a retry with a delay) wakes the broker, which
-- re-plans its sleep for the new due times.
local wakeEffect = {
  write = function(ack, q, k)
    if #ack.ready[q] > 0 then redis.call('ZADD', k.wake, 0, 'w') end
  end,
  finish = function(ack)
    if ack.anyDeferred then redis.call('ZADD', ack.brokerWakeKey, 0, 'w') end
  end,
}
