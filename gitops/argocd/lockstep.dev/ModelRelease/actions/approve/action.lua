-- Approves the stage of a lockstep.dev ModelRelease that is waiting for manual approval:
-- annotation approve.lockstep.dev/<stage>, RBAC verb "approve" (docs/modelrelease.md).
-- The annotation's value must be the name of the user who writes it: the webhook refuses any
-- other value. Argo CD runs actions with its own credentials, not the clicking user's, so this
-- is argocd-server's ServiceAccount in a default install (namespace argocd). Change it when
-- Argo CD runs elsewhere, or impersonates a destination ServiceAccount (docs/argocd.md).
local actor = "system:serviceaccount:argocd:argocd-server"

local stage = nil
if obj.status ~= nil and obj.status.stages ~= nil then
  for _, s in ipairs(obj.status.stages) do
    if s.phase == "WaitingForApproval" then
      stage = s.name
      break
    end
  end
end
if stage == nil then
  local phase = "Pending"
  if obj.status ~= nil and obj.status.phase ~= nil then phase = obj.status.phase end
  error("ModelRelease " .. obj.metadata.name .. " has no stage waiting for approval (phase " .. phase .. ")", 0)
end
if obj.metadata.annotations == nil then obj.metadata.annotations = {} end
obj.metadata.annotations["approve.lockstep.dev/" .. stage] = actor
return obj
