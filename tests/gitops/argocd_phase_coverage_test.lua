-- Every value of a CRD's status.phase enum has at least one health_test.yaml case, so a phase
-- added to the CRD cannot go without a tested Argo CD health status.
--   lua5.1 tests/gitops/argocd_phase_coverage_test.lua crds/lockstep.dev_modelreleases.yaml \
--       gitops/argocd/lockstep.dev/ModelRelease
local yaml = require("lyaml")
local crdPath, dir = arg[1], arg[2]
if crdPath == nil or dir == nil then
  io.stderr:write("usage: lua5.1 argocd_phase_coverage_test.lua <crd.yaml> <customization dir>\n")
  os.exit(2)
end

local function load(path)
  local f = assert(io.open(path, "rb"))
  local doc = yaml.load(f:read("*a"))
  f:close()
  return doc
end

local covered = {}
for _, t in ipairs(load(dir .. "/health_test.yaml").tests) do
  local obj = load(dir .. "/" .. t.inputPath)
  if type(obj.status) == "table" and obj.status.phase ~= nil then covered[obj.status.phase] = true end
end

local missing, phases = {}, 0
for _, v in ipairs(load(crdPath).spec.versions) do
  local phase = v.schema.openAPIV3Schema.properties.status.properties.phase
  for _, p in ipairs(phase.enum) do
    phases = phases + 1
    if not covered[p] then missing[#missing + 1] = p end
  end
end
if phases == 0 then
  print("FAIL " .. crdPath .. ": no status.phase enum found")
  os.exit(1)
end
if #missing > 0 then
  print("FAIL " .. dir .. "/health_test.yaml has no case for phase " .. table.concat(missing, ", "))
  os.exit(1)
end
print("ok   every one of " .. phases .. " phases of " .. crdPath .. " has a health test")
