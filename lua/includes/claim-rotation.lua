-- The fairness rule of a claim (docs/storage.md, "Fairness"; the executable
-- specification's rotateClaim in libs/threadmill/src/backend/claim-rotation.ts
-- is the same rule): the active queues (`active[q]`, 1-based) are served in
-- rotation from `offset` (0-based, below queueCount), in passes, until `want`
-- runs are leased or none is active. Each pass gives every active queue it
-- reaches a share of what is left: an equal share, but at least `minShare`
-- (or what is left, when less), so a claim serves about want / minShare
-- queues at most and pays each queue's fixed cost for a worthwhile batch;
-- the caller starts its next claim where this one stopped, so the queues it
-- did not reach come first then.
--
-- `serve(q, take)` takes up to `take` runs of queue q and returns how many it
-- leased and whether the queue may give more in this claim. Returns where the
-- rotation stopped: `offset` plus the steps to the queue after the last one
-- that leased a run (at least queueCount when it went past the last queue),
-- or `offset` when none did.
local function rotateClaim(queueCount, offset, want, minShare, active, serve)
  local activeCount = 0
  for q = 1, queueCount do
    if active[q] then activeCount = activeCount + 1 end
  end
  local claimed, stop, pass = 0, offset, 0
  while claimed < want and activeCount > 0 do
    local left = want - claimed
    local share = math.max(math.ceil(left / activeCount), math.min(minShare, left))
    for step = 0, queueCount - 1 do
      local q = (offset + step) % queueCount + 1
      if active[q] and claimed < want then
        local leased, stillActive = serve(q, math.min(share, want - claimed))
        claimed = claimed + leased
        if leased > 0 then stop = offset + pass * queueCount + step + 1 end
        if not stillActive then
          active[q] = false
          activeCount = activeCount - 1
        end
      end
    end
    pass = pass + 1
  end
  return stop
end
