-- Health of a lockstep.dev ModelRelease, from status.phase (docs/modelrelease.md, docs/rollouts.md):
--   Healthy      Validated (every gate passed, no prod stage), Promoted, Superseded
--   Degraded     Failed, RolledBack, a canary rolling back, or Stale=True (the RuntimeEnv's
--                closure hash moved on) unless the release was already superseded
--   Suspended    a stage waiting for manual approval, or a canary step paused until promoted
--   Progressing  Pending, Evaluating, Testing, Canary, and status not yet written for this generation
-- Uses only the base library: it also runs where Argo CD opens no standard library (argocd-cm
-- customizations without useOpenLibs).
local hs = {}

local function condition(conds, t)
  if conds == nil then return nil end
  for _, c in ipairs(conds) do
    if c.type == t then return c end
  end
  return nil
end

local function withDetail(text, detail)
  if detail == nil or detail == "" then return text end
  return text .. ": " .. detail
end

-- The canary step (0-based status.canary.step) of the serving stage in the spec, or nil.
local function canaryStepSpec(spec, step)
  if spec == nil or spec.stages == nil or step == nil then return nil end
  for _, s in ipairs(spec.stages) do
    if s.serving ~= nil then
      if s.canary == nil or s.canary.steps == nil then return nil end
      return s.canary.steps[step + 1]
    end
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
local ready = condition(status.conditions, "Ready")
local readyMessage = nil
if ready ~= nil then readyMessage = ready.message end

local stale = condition(status.conditions, "Stale")
if stale ~= nil and stale.status == "True" and phase ~= "Superseded" then
  hs.status = "Degraded"
  hs.message = withDetail("Stale", stale.message)
  return hs
end

if phase == "Promoted" or phase == "Superseded" or phase == "Validated" then
  hs.status = "Healthy"
  hs.message = phase
  return hs
end

if phase == "Failed" or phase == "RolledBack" then
  hs.status = "Degraded"
  hs.message = withDetail(phase, readyMessage)
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

local where = phase
if status.currentStage ~= nil then where = phase .. " (stage " .. status.currentStage .. ")" end

if phase == "Canary" and status.canary ~= nil then
  local canary = status.canary
  if canary.phase == "RollingBack" or canary.phase == "RolledBack" then
    hs.status = "Degraded"
    hs.message = withDetail(withDetail("Rolling back", canary.reason), canary.message)
    return hs
  end
  local stepSpec = canaryStepSpec(obj.spec, canary.step)
  if canary.reason == "CanaryPaused" and stepSpec ~= nil and stepSpec.pause == "Indefinite" then
    hs.status = "Suspended"
    hs.message = withDetail(where .. " is paused until promoted", canary.message)
    return hs
  end
  hs.status = "Progressing"
  hs.message = withDetail(where, canary.message)
  return hs
end

hs.status = "Progressing"
hs.message = withDetail(where, readyMessage)
return hs
