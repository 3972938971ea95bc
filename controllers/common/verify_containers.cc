#include "controllers/common/verify_containers.h"

#include <utility>
#include <vector>

#include "controllers/common/object_names.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;

json cliContainer(const VerifyContainers& in, const char* name, std::vector<std::string> command,
                  int64_t gpus) {
  json c = {
      {"name", name},
      {"image", in.cliImage},
      {"command", std::move(command)},
      {"terminationMessagePolicy", "FallbackToLogsOnError"},
      {"securityContext",
       {{"runAsNonRoot", true},
        {"runAsUser", 65532},
        {"allowPrivilegeEscalation", false},
        {"readOnlyRootFilesystem", true},
        {"capabilities", {{"drop", json::array({"ALL"})}}}}},
      {"volumeMounts",
       json::array({{{"name", kClosureVolume}, {"mountPath", kClosureDir}, {"readOnly", true}},
                    {{"name", kRuntimeVolume}, {"mountPath", kRuntimeDir}, {"readOnly", true}}})}};
  if (gpus > 0) c["resources"] = {{"limits", {{"nvidia.com/gpu", gpus}}}};
  return c;
}

std::string prefixIn(const VerifyContainers& in) {
  return std::string(kRuntimeDir) + (in.prefix == "/" ? "" : in.prefix);
}

std::string closureFile(const char* key) { return std::string(kClosureDir) + "/" + key; }

const json& member(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string stringOf(const json& j, const char* key) {
  const json& v = member(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

int64_t exitCodeOf(const json& terminated) {
  const json& v = member(terminated, "exitCode");
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

std::optional<std::string> describeFailure(const std::string& container, const json& terminated,
                                           size_t maxMessage) {
  if (!terminated.is_object() || exitCodeOf(terminated) == 0) return std::nullopt;
  std::string message = stringOf(terminated, "message");
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  if (message.size() > maxMessage) message = message.substr(0, maxMessage) + "…";
  std::string out = container + " exited " + std::to_string(exitCodeOf(terminated));
  return message.empty() ? out + " (" + stringOf(terminated, "reason") + ")" : out + ": " + message;
}

}  // namespace

std::optional<std::string> containerFailure(const json& pod, bool verificationOnly,
                                            size_t maxMessage) {
  const json& status = member(pod, "status");
  for (const char* field : {"initContainerStatuses", "containerStatuses"}) {
    if (verificationOnly && std::string(field) == "containerStatuses") break;
    const json& list = member(status, field);
    if (!list.is_array()) continue;
    for (const json& cs : list) {
      const std::string name = stringOf(cs, "name");
      if (verificationOnly && name != kVerifyEnvContainer && name != kVerifyHostContainer) continue;
      for (const char* state : {"state", "lastState"}) {
        if (auto why = describeFailure(name, member(member(cs, state), "terminated"), maxMessage))
          return why;
      }
    }
  }
  return std::nullopt;
}

std::string closureConfigMapName(const std::string& runtimeEnv, int64_t revision) {
  return dnsLabelName("lockstep-closure-" + runtimeEnv + "-" + std::to_string(revision));
}

json verifyEnvContainer(const VerifyContainers& in) {
  return cliContainer(in, kVerifyEnvContainer,
                      {"lockstep", "verify-env", "--lock", closureFile("lock"), "--runtime-json",
                       closureFile("runtime.json"), "--prefix", prefixIn(in)},
                      0);
}

json verifyHostContainer(const VerifyContainers& in) {
  std::vector<std::string> command = {"lockstep",       "verify-host",
                                      "--runtime-json", closureFile("runtime.json"),
                                      "--prefix",       prefixIn(in)};
  if (in.checkGpuCount && in.gpus > 0) {
    command.emplace_back("--gpus");
    command.push_back(std::to_string(in.gpus));
  }
  return cliContainer(in, kVerifyHostContainer, std::move(command), in.gpus);
}

json verifyVolumes(const VerifyContainers& in) {
  return json::array(
      {{{"name", kClosureVolume}, {"configMap", {{"name", in.closureConfigMap}}}},
       {{"name", kRuntimeVolume},
        {"image", {{"reference", in.runtimeImage}, {"pullPolicy", "IfNotPresent"}}}}});
}

}  // namespace lockstep::controllers
