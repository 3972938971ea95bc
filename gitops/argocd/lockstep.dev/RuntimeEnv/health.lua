-- Argo CD health check for lockstep.dev/RuntimeEnv.
-- Healthy: the controller observed this generation and the closure resolved.
-- Degraded: the lock cannot be resolved (Stalled) or no GPU node can run it.
-- Progressing: the controller has not caught up with the spec yet.
local hs = {}
local function condition(conds, t)
  if conds == nil then return nil end
  for _, c in ipairs(conds) do
    if c.type == t then return c end
  end
  return nil
end

if obj.status == nil or obj.status.observedGeneration == nil
    or obj.status.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the RuntimeEnv controller to observe generation " ..
      tostring(obj.metadata.generation)
  return hs
end

local conds = obj.status.conditions
local ready = condition(conds, "Ready")
local stalled = condition(conds, "Stalled")
local degraded = condition(conds, "Degraded")

if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = (stalled.reason or "") .. ": " .. (stalled.message or "")
  return hs
end
if ready ~= nil and ready.status == "True" then
  if degraded ~= nil and degraded.status == "True" then
    hs.status = "Degraded"
    hs.message = (degraded.reason or "") .. ": " .. (degraded.message or "")
    return hs
  end
  hs.status = "Healthy"
  hs.message = ready.message or "Resolved"
  return hs
end
hs.status = "Progressing"
if ready ~= nil then
  hs.message = (ready.reason or "") .. ": " .. (ready.message or "")
else
  hs.message = "Waiting for the closure to resolve"
end
return hs
