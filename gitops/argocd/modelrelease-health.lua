-- Argo CD health check for lockstep.dev/ModelRelease.
-- Install under resource.customizations.health.lockstep.dev_ModelRelease (docs/argocd.md).
-- Maps status.phase: Promoted, Validated (every gate passed, no prod stage) and
-- Superseded are Healthy; Failed and RolledBack
-- are Degraded; a stage waiting for manual approval is Suspended; the rest are
-- Progressing. A release whose runtime closure moved on (Stale=True) is Degraded
-- unless it has been superseded.
local hs = {}
local function condition(conds, t)
  if conds == nil then return nil end
  for _, c in ipairs(conds) do
    if c.type == t then return c end
  end
  return nil
end

local status = obj.status
if status == nil or status.observedGeneration == nil
    or status.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the ModelRelease controller to observe generation " ..
      tostring(obj.metadata.generation)
  return hs
end

local phase = status.phase or "Pending"
local stale = condition(status.conditions, "Stale")
if stale ~= nil and stale.status == "True" and phase ~= "Superseded" then
  hs.status = "Degraded"
  hs.message = "Stale: " .. (stale.message or "")
  return hs
end

if phase == "Promoted" or phase == "Superseded" or phase == "Validated" then
  hs.status = "Healthy"
  hs.message = phase
  return hs
end
if phase == "Failed" or phase == "RolledBack" then
  local ready = condition(status.conditions, "Ready")
  hs.status = "Degraded"
  hs.message = phase .. ((ready ~= nil and ready.message ~= nil) and (": " .. ready.message) or "")
  return hs
end
if status.stages ~= nil then
  for _, s in ipairs(status.stages) do
    if s.phase == "WaitingForApproval" then
      hs.status = "Suspended"
      hs.message = "Stage " .. (s.name or "?") .. " is waiting for approval"
      return hs
    end
  end
end
hs.status = "Progressing"
hs.message = phase .. ((status.currentStage ~= nil) and (" (stage " .. status.currentStage .. ")") or "")
return hs
