-- Table-driven tests of the Argo CD health scripts under gitops/argocd, run by
-- Lua 5.1 as Argo CD runs them (gopher-lua is 5.1): each script is a chunk that
-- reads the global `obj` and returns {status, message}.
--   lua5.1 tests/gitops/argocd_health_test.lua gitops/argocd
local dir = arg[1] or "gitops/argocd"
local passed, failed = 0, 0

local function run(script, obj)
  local chunk, err = loadfile(dir .. "/" .. script)
  if chunk == nil then error(err) end
  -- Only the globals Argo CD gives a health script.
  setfenv(chunk, {obj = obj, ipairs = ipairs, pairs = pairs, tostring = tostring,
                  string = string, table = table})
  return chunk()
end

local function cond(t, s, reason, message)
  return {type = t, status = s, reason = reason, message = message}
end

local function check(name, script, obj, wantStatus, wantInMessage)
  local ok, hs = pcall(run, script, obj)
  if not ok then
    failed = failed + 1
    print("FAIL " .. name .. ": script error: " .. tostring(hs))
    return
  end
  local good = hs.status == wantStatus and
      (wantInMessage == nil or (hs.message ~= nil and string.find(hs.message, wantInMessage, 1, true)))
  if good then
    passed = passed + 1
    print("ok   " .. name)
  else
    failed = failed + 1
    print("FAIL " .. name .. ": got " .. tostring(hs.status) .. " / " .. tostring(hs.message) ..
          ", want " .. wantStatus .. " / " .. tostring(wantInMessage))
  end
end

local function rte(generation, status)
  return {metadata = {name = "torch", generation = generation}, status = status}
end

-- RuntimeEnv
local R = "runtimeenv-health.lua"
check("rte without status is progressing", R, rte(1, nil), "Progressing", "generation 1")
check("rte status for an older generation is progressing", R,
      rte(3, {observedGeneration = 2, conditions = {cond("Ready", "True", "Resolved", "old")}}),
      "Progressing", "generation 3")
check("rte resolved is healthy", R,
      rte(2, {observedGeneration = 2, conditions = {cond("Ready", "True", "Resolved", "closure sha256:ab"),
                                                   cond("Stalled", "False", "Resolved", ""),
                                                   cond("Degraded", "False", "CompatibleNodesFound", "2")}}),
      "Healthy", "closure sha256:ab")
check("rte lock error is degraded", R,
      rte(1, {observedGeneration = 1, conditions = {cond("Ready", "False", "LockParseError", "uv.lock:3: bad"),
                                                   cond("Stalled", "True", "LockParseError", "uv.lock:3: bad")}}),
      "Degraded", "LockParseError: uv.lock:3")
check("rte without compatible nodes is degraded", R,
      rte(1, {observedGeneration = 1, conditions = {cond("Ready", "True", "Resolved", "x"),
                                                   cond("Degraded", "True", "NoCompatibleNodes", "driver >= 570.26")}}),
      "Degraded", "NoCompatibleNodes")
check("rte observed but no Ready yet is progressing", R,
      rte(1, {observedGeneration = 1, conditions = {}}), "Progressing", "resolve")

-- ModelRelease
local M = "modelrelease-health.lua"
local function mr(phase, extra)
  local status = {observedGeneration = 1, phase = phase, conditions = {}}
  for k, v in pairs(extra or {}) do status[k] = v end
  return {metadata = {name = "gpt2-v7", generation = 1}, status = status}
end
check("mr without status is progressing", M, {metadata = {generation = 1}}, "Progressing", nil)
check("mr promoted is healthy", M, mr("Promoted"), "Healthy", "Promoted")
check("mr validated (gates passed, no prod stage) is healthy", M, mr("Validated"), "Healthy", "Validated")
check("mr superseded is healthy even when stale", M,
      mr("Superseded", {conditions = {cond("Stale", "True", "ClosureHashChanged", "moved")}}), "Healthy", nil)
check("mr rolled back is degraded", M,
      mr("RolledBack", {conditions = {cond("Ready", "False", "RolledBack", "error rate 0.03 > 0.01")}}),
      "Degraded", "error rate")
check("mr failed is degraded", M, mr("Failed"), "Degraded", "Failed")
check("mr stale is degraded", M,
      mr("Canary", {conditions = {cond("Stale", "True", "ClosureHashChanged", "now resolves to sha256:cd")}}),
      "Degraded", "sha256:cd")
check("mr waiting for approval is suspended", M,
      mr("Testing", {stages = {{name = "eval", phase = "Succeeded"}, {name = "ci", phase = "WaitingForApproval"}}}),
      "Suspended", "ci")
check("mr canary is progressing", M, mr("Canary", {currentStage = "prod"}), "Progressing", "stage prod")

print(passed .. " passed, " .. failed .. " failed")
if failed > 0 then os.exit(1) end
