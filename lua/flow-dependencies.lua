--[[
  flowDependencies: the dependencies of a flow node and what each ended
  with (docs/flows.md; includes/flow-settle), for `context.dependencies()`.

  KEYS      run, flowPrefix (lua/keys.mjs)
  ARGV[1]   id            the run's id

  Returns   {} for a run that is no flow node (or whose flow is gone);
            otherwise { flow id, then per dependency: id, policy, its
            flow entry (`<letter>|<name>|<queue>|<json>`, letter '' while it
            has no outcome) }

  Complexity: O(d) for d dependencies.
]]
--- @include "includes/chunks"
--- @keys

local flowId = redis.call('HGET', runKey, 'flow')
if not flowId then return {} end
local flowKey = flowPrefix .. flowId
local id = ARGV[1]
local edges = redis.call('HGET', flowKey, 'e:' .. id)
local reply = { flowId }
if not edges then return reply end
local fields, policies = {}, {}
for edge in string.gmatch(edges, '[^,]+') do
  local dep, policy = string.match(edge, '^(.*):(%a)$')
  reply[#reply + 1] = dep
  policies[#policies + 1] = policy
  fields[#fields + 1] = 'n:' .. dep
end
local entries = inChunks('HMGET', flowKey, fields)
local out = { flowId }
for i = 1, #fields do
  out[#out + 1] = reply[i + 1]
  out[#out + 1] = policies[i]
  out[#out + 1] = entries[i] or ''
end
return out
