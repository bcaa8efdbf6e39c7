--- @include "includes/metrics"

-- Counts (includes/effects): a queue's lifetime counters (`stats`) and its
-- current minute's metrics, by outcome, one write per queue and count, never
-- per run. Stale acknowledgements are counted in `stats` only.
local countsEffect = {
  write = function(ack, q, k)
    local statsKey = k.stats
    local succeeded, failures, retries, held = ack.succeeded[q], ack.failures[q], ack.retries[q], ack.held[q]
    if succeeded > 0 then redis.call('HINCRBY', statsKey, 'succeeded', succeeded) end
    if failures > 0 then redis.call('HINCRBY', statsKey, 'failed', failures) end
    if retries > 0 then redis.call('HINCRBY', statsKey, 'retried', retries) end
    if held > 0 then redis.call('HINCRBY', statsKey, 'quarantined', held) end
    if ack.stale[q] > 0 then redis.call('HINCRBY', statsKey, 'staleAcks', ack.stale[q]) end
    local metrics = k.metrics
    countMinute(metrics, ack.now, 'succeeded', succeeded)
    countMinute(metrics, ack.now, 'failed', failures)
    countMinute(metrics, ack.now, 'retried', retries)
    countMinute(metrics, ack.now, 'quarantined', held)
  end,
}
