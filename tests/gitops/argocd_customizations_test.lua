-- Runs the Argo CD resource customizations under gitops/argocd/<group>/<Kind>/ the way
-- Argo CD's own tests run resource_customizations/ (util/lua/health_test.go and
-- custom_actions_test.go), under Lua 5.1 (Argo CD's gopher-lua implements Lua 5.1):
--   health_test.yaml   tests[]: {inputPath, healthStatus: {status, message}}
--                      health.lua runs with the object as the global `obj`; the returned
--                      status and message must equal the expected ones (missing = "").
--   actions/action_test.yaml
--                      discoveryTests[]: {inputPath, result[]: {name, disabled, iconClass,
--                      displayName, params}}: actions/discovery.lua's table, one entry per action.
--                      actionTests[]: {action, inputPath, expectedOutputPath | expectedErrorMessage,
--                      parameters}: actions/<action>/action.lua returns the modified `obj`.
-- Scripts run in the sandbox Argo CD gives actions and argocd-cm customizations: the base
-- library, `table`, an `os` with only time/date (also via require("os")), the globals `obj`
-- and `actionParams`, no `string` library and no string methods, an instruction budget in
-- place of Argo CD's one-second timeout. Errors thrown with error(msg, 0) surface verbatim,
-- as in Argo CD. Two checks are stricter than Argo CD's: discovery must return exactly the
-- expected actions (Argo CD only checks that each discovered one is expected), and an action's
-- output must equal the expected object (Argo CD ignores extra fields in the output).
--
--   lua5.1 tests/gitops/argocd_customizations_test.lua gitops/argocd
local yaml = require("lyaml")

local root = arg[1]
if root == nil then
  io.stderr:write("usage: lua5.1 argocd_customizations_test.lua <customizations dir>\n")
  os.exit(2)
end

local passed, failed = 0, 0
local function pass(name)
  passed = passed + 1
  print("ok   " .. name)
end
local function fail(name, why)
  failed = failed + 1
  print("FAIL " .. name .. ": " .. why)
end

local function readFile(path)
  local f, err = io.open(path, "rb")
  if f == nil then error("cannot read " .. path .. ": " .. tostring(err), 0) end
  local text = f:read("*a")
  f:close()
  return text
end

-- lyaml's null becomes nil (a missing key), as Argo CD's decoding gives Lua nil.
local function plain(v)
  if v == yaml.null then return nil end
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = plain(x) end
  return out
end

local function loadYaml(path)
  local ok, doc = pcall(yaml.load, readFile(path))
  if not ok then error(path .. ": invalid YAML: " .. tostring(doc), 0) end
  if type(doc) ~= "table" then error(path .. ": expected a YAML mapping", 0) end
  return plain(doc)
end

-- The sandbox ----------------------------------------------------------------------------------

local safeOs = {time = os.time, date = os.date}
local function sandbox(obj, params)
  local env = {}
  for _, name in ipairs({"assert", "error", "ipairs", "next", "pairs", "pcall", "print", "rawequal",
                         "rawget", "rawset", "select", "tonumber", "tostring", "type", "unpack",
                         "xpcall", "getmetatable", "setmetatable", "_VERSION"}) do
    env[name] = _G[name]
  end
  local tbl = {}
  for k, f in pairs(table) do tbl[k] = f end
  env.table = tbl
  env.os = safeOs
  env.require = function(name)
    if name == "os" then return safeOs end
    error("module '" .. tostring(name) .. "' not found (Argo CD's sandbox has only os)", 2)
  end
  env._G = env
  env.obj = obj
  env.actionParams = params or {}
  return env
end

local kInstructionBudget = 10000000
local stringMeta = getmetatable("")

-- Runs a script's source with `obj`; returns ok, first result (or the error message).
local function runScript(path, obj, params)
  local chunk, err = loadstring(readFile(path), "=<string>")
  if chunk == nil then return false, "syntax error: " .. tostring(err) end
  setfenv(chunk, sandbox(obj, params))
  debug.setmetatable("", nil)  -- no ("x"):find(...) without the string library
  debug.sethook(function() error("script ran too long", 0) end, "", kInstructionBudget)
  local ok, result = pcall(chunk)
  debug.sethook()
  debug.setmetatable("", stringMeta)
  return ok, result
end

-- Comparison -----------------------------------------------------------------------------------

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) == "table" then return "{...}" end
  return tostring(v)
end

-- Differences between two decoded YAML/Lua values, as "path: got X, want Y" lines.
local function diff(got, want, path, out)
  if type(got) == "table" and type(want) == "table" then
    local keys = {}
    for k in pairs(want) do keys[k] = true end
    for k in pairs(got) do keys[k] = true end
    local sorted = {}
    for k in pairs(keys) do sorted[#sorted + 1] = k end
    table.sort(sorted, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(sorted) do
      local sub = type(k) == "number" and (path .. "[" .. (k - 1) .. "]") or (path .. "." .. k)
      diff(got[k], want[k], sub, out)
    end
  elseif got ~= want then
    out[#out + 1] = path .. ": got " .. show(got) .. ", want " .. show(want)
  end
  return out
end

local kHealthCodes = {Unknown = true, Progressing = true, Suspended = true, Healthy = true,
                      Degraded = true, Missing = true}

-- What Argo CD makes of health.lua's return value (ExecuteHealthLua).
local function healthStatus(ok, result)
  if not ok then return nil, "script error: " .. tostring(result) end
  if result == nil then return {status = "", message = ""} end
  if type(result) ~= "table" then
    return nil, "expect table output from Lua script, not " .. type(result)
  end
  for _, field in ipairs({"status", "message"}) do
    if result[field] ~= nil and type(result[field]) ~= "string" then
      return nil, field .. " is a " .. type(result[field]) .. ", not a string"
    end
  end
  local hs = {status = result.status or "", message = result.message or ""}
  if not kHealthCodes[hs.status] then
    return {status = "Unknown", message = "Lua returned an invalid health status"}
  end
  return hs
end

-- One discovered action as Argo CD's ResourceAction (defaults: not disabled, empty strings).
local function resourceAction(name, v)
  local a = {name = name, disabled = false, iconClass = "", displayName = "", params = {}}
  if type(v) ~= "table" then return a end
  if type(v.disabled) == "boolean" then a.disabled = v.disabled end
  if v.iconClass ~= nil then a.iconClass = v.iconClass end
  if v.displayName ~= nil then a.displayName = v.displayName end
  for i, p in ipairs(v.params or {}) do a.params[i] = {name = p.name} end
  return a
end

-- Tests ----------------------------------------------------------------------------------------

local function dirname(path) return (path:gsub("/[^/]*$", "")) end

local function findFiles(name)
  local list = {}
  local p = io.popen("find '" .. root .. "' -name '" .. name .. "' | LC_ALL=C sort")
  for line in p:lines() do list[#list + 1] = line end
  p:close()
  return list
end

local function label(dir, rest)
  local rel = dir:sub(#root + 2)
  return rel .. "/" .. rest
end

local function runHealthTests(healthLua)
  local dir = dirname(healthLua)
  local spec = loadYaml(dir .. "/health_test.yaml")
  if type(spec.tests) ~= "table" or #spec.tests == 0 then
    fail(label(dir, "health_test.yaml"), "no tests")
    return
  end
  for _, t in ipairs(spec.tests) do
    local name = label(dir, t.inputPath or "?")
    local want = t.healthStatus or {}
    want = {status = want.status or "", message = want.message or ""}
    local got, err = healthStatus(runScript(healthLua, loadYaml(dir .. "/" .. t.inputPath)))
    if got == nil then
      fail(name, err)
    elseif got.status ~= want.status or got.message ~= want.message then
      fail(name, "got " .. got.status .. " " .. show(got.message) .. ", want " .. want.status .. " " ..
           show(want.message))
    else
      pass(name)
    end
  end
end

local function runDiscoveryTest(dir, t)
  local name = label(dir, "discovery " .. tostring(t.inputPath))
  local ok, result = runScript(dir .. "/discovery.lua", loadYaml(dir .. "/" .. t.inputPath))
  if not ok then return fail(name, "script error: " .. tostring(result)) end
  if type(result) ~= "table" then
    return fail(name, "expect table output from Lua script, not " .. type(result))
  end
  local expected = {}
  for _, e in ipairs(t.result or {}) do expected[e.name] = resourceAction(e.name, e) end
  local problems = {}
  for actionName, v in pairs(result) do
    local want = expected[actionName]
    if want == nil then
      problems[#problems + 1] = "action " .. actionName .. " is discovered but not expected"
    else
      diff(resourceAction(actionName, v), want, actionName, problems)
    end
  end
  for actionName in pairs(expected) do
    if result[actionName] == nil then
      problems[#problems + 1] = "action " .. actionName .. " is expected but not discovered"
    end
  end
  if #problems > 0 then return fail(name, table.concat(problems, "; ")) end
  pass(name)
end

local function runActionTest(dir, t)
  local name = label(dir, tostring(t.action) .. " " .. tostring(t.inputPath))
  local script = dir .. "/" .. t.action .. "/action.lua"
  if io.open(script) == nil then return fail(name, "no " .. script) end
  local source = loadYaml(dir .. "/" .. t.inputPath)
  local params = {}
  for k, v in pairs(t.parameters or {}) do params[k] = tostring(v) end
  local ok, result = runScript(script, loadYaml(dir .. "/" .. t.inputPath), params)
  if t.expectedErrorMessage ~= nil then
    if ok then return fail(name, "succeeded, want error " .. show(t.expectedErrorMessage)) end
    if result ~= t.expectedErrorMessage then
      return fail(name, "error " .. show(result) .. ", want " .. show(t.expectedErrorMessage))
    end
    return pass(name)
  end
  if not ok then return fail(name, "script error: " .. tostring(result)) end
  if type(result) ~= "table" then
    return fail(name, "expect table output from Lua script, not " .. type(result))
  end
  if result[1] ~= nil then
    return fail(name, "a list of impacted resources (new-style action output) is not supported here")
  end
  -- A patch action may only change the source object itself.
  local m, sm = result.metadata or {}, source.metadata or {}
  if result.apiVersion ~= source.apiVersion or result.kind ~= source.kind or m.name ~= sm.name
      or m.namespace ~= sm.namespace then
    return fail(name, "the action returned another object than its source")
  end
  local problems = diff(result, loadYaml(dir .. "/" .. t.expectedOutputPath), "", {})
  if #problems > 0 then return fail(name, table.concat(problems, "; ")) end
  pass(name)
end

local function runActionTests(actionTest)
  local dir = dirname(actionTest)
  local spec = loadYaml(actionTest)
  local n = 0
  for _, t in ipairs(spec.discoveryTests or {}) do runDiscoveryTest(dir, t); n = n + 1 end
  for _, t in ipairs(spec.actionTests or {}) do runActionTest(dir, t); n = n + 1 end
  if n == 0 then fail(label(dir, "action_test.yaml"), "no tests") end
end

local healthScripts = findFiles("health.lua")
local actionTests = findFiles("action_test.yaml")
if #healthScripts == 0 then
  fail(root, "no health.lua found under it (wrong directory?)")
end
for _, h in ipairs(healthScripts) do
  local ok, err = pcall(runHealthTests, h)
  if not ok then fail(label(dirname(h), "health_test.yaml"), tostring(err)) end
end
for _, a in ipairs(actionTests) do
  local ok, err = pcall(runActionTests, a)
  if not ok then fail(label(dirname(a), "action_test.yaml"), tostring(err)) end
end
-- Argo CD runs every action directory's action_test.yaml; an actions/ without one is untested.
for _, d in ipairs(findFiles("discovery.lua")) do
  local has = false
  for _, a in ipairs(actionTests) do if dirname(a) == dirname(d) then has = true end end
  if not has then fail(label(dirname(d), "action_test.yaml"), "missing") end
end

print(passed .. " passed, " .. failed .. " failed")
if failed > 0 or passed == 0 then os.exit(1) end
