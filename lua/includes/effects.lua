-- The effects of an acknowledgement. Beyond applying each outcome to its run
-- and lease (acknowledge.lua's core), an acknowledgement does what follows
-- from the outcomes: each such rule is an effect (includes/effect-*), and
-- every effect has the same small interface, a table of optional functions:
--
--   read(ack)            once, before any outcome is applied: what the effect
--                        needs to know of the batch (the feed: which of its
--                        runs somebody waits on)
--   released(ack, q, k)  per queue (k: its keys by name), once the outcomes
--                        are applied, before the records of the runs that are
--                        not kept are deleted: what it reads of the runs it
--                        released (limit groups: their group)
--   write(ack, q, k)     per queue, once its runs are in their segments: what
--                        it writes for the queue's outcomes (finished
--                        indexes, counts, wake markers)
--   finish(ack)          once, at the end (the broker's wake-up)
--
-- None is called per run. `ack` is the call's context: its time, keys and
-- TTLs, and per queue what the outcomes did (ack.released[q], the finished
-- index entries ack.successful[q], ack.failed[q] and ack.classed[q], the
-- counts ack.succeeded[q], ack.failures[q], ack.retries[q], ack.held[q],
-- ack.stale[q], ack.ready[q], ack.deferred[q]), which the core fills as it
-- applies them. An effect that needs a run's own data per run (the feed
-- publishes a settled run's fields; a run kept for its task's own TTL goes to
-- its class's index) has a function the core calls for such runs only.
--
-- To add an effect: an include of this shape, a place in acknowledge.lua's
-- EFFECTS (docs/development.md, "Adding a gate or an effect").

-- Calls phase `phase` of each effect that has it, with `...`.
local function runEffects(effects, phase, ...)
  for e = 1, #effects do
    local f = effects[e][phase]
    if f then f(...) end
  end
end
