-- Argo CD health check for lockstep.dev/Model (docs/rollouts.md "The Model's conditions").
-- Healthy: prod serves what the Model records (Ready), or nothing is promoted
--   yet and nothing is in flight (NoProd: a Model waiting for its first release).
-- Degraded: prod is recorded, not Ready, and nothing in flight explains it.
-- Progressing: the Model controller has not caught up with the spec, a canary
--   holds the slot, or stable is rolling out.
local hs = {}
local function condition(conds, t)
  if conds == nil then return nil end
  for _, c in ipairs(conds) do
    if c.type == t then return c end
  end
  return nil
end
local function said(c)
  return (c.reason or "") .. ": " .. (c.message or "")
end

if obj.status == nil or obj.status.observedGeneration == nil
    or obj.status.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the Model controller to observe generation " ..
      tostring(obj.metadata.generation)
  return hs
end

local conds = obj.status.conditions
local ready = condition(conds, "Ready")
local progressing = condition(conds, "Progressing")
local degraded = condition(conds, "Degraded")

if degraded ~= nil and degraded.status == "True" then
  hs.status = "Degraded"
  hs.message = said(degraded)
  return hs
end
if progressing ~= nil and progressing.status == "True" then
  hs.status = "Progressing"
  hs.message = said(progressing)
  return hs
end
if ready ~= nil and (ready.status == "True" or ready.reason == "NoProd") then
  hs.status = "Healthy"
  hs.message = said(ready)
  return hs
end
hs.status = "Progressing"
if ready ~= nil then
  hs.message = said(ready)
else
  hs.message = "Waiting for the Model controller's conditions"
end
return hs
