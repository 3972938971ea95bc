#include "cmd/lockstep/runtime_commands.h"

#include <chrono>
#include <map>
#include <vector>

#include "api/v1alpha1/resources.h"
#include "cmd/lockstep/runtime_view.h"
#include "cmd/lockstep/verbs.h"
#include "drift/pod_drift.h"
#include "webhooks/admission/types.h"
#include "webhooks/informer_lookups.h"

namespace lockstep::cli {

namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

webhooks::NamespaceMode modeOf(const json& namespaceObject) {
  const json* labels =
      namespaceObject.contains("metadata") && namespaceObject["metadata"].contains("labels")
          ? &namespaceObject["metadata"]["labels"]
          : nullptr;
  if (labels == nullptr || !labels->is_object()) return webhooks::parseNamespaceMode(std::nullopt);
  auto it = labels->find(std::string(v1::kEnforceLabel));
  if (it == labels->end() || !it->is_string()) return webhooks::parseNamespaceMode(std::nullopt);
  return webhooks::parseNamespaceMode(std::string_view(it->get_ref<const std::string&>()));
}

// What the operator's drift scan (controllers/drift) reports, from one list of each
// kind: namespaces, unfinished pods, RuntimeEnvs.
int runDrift(const RuntimeCommand& cmd, const std::string& ns, ReleaseIo& io) {
  auto fail = [&](const Status& s) {
    io.err << io.program << ": runtime drift: " << s.message() << "\n";
    return kExitFailure;
  };
  const std::string scope = cmd.kube.allNamespaces ? "" : ns;
  std::map<std::string, webhooks::NamespaceMode> modes;
  if (scope.empty()) {
    auto all = io.client.list(v1::kNamespaces, "");
    if (!all.isOk()) return fail(all.status());
    for (const json& n : all->items) modes[n["metadata"].value("name", "")] = modeOf(n);
  } else {
    auto one = io.client.get(v1::kNamespaces, "", scope);
    if (!one.isOk()) return fail(one.status());
    modes[scope] = modeOf(*one);
  }
  kube::ListOptions unfinished;
  unfinished.fieldSelector = "status.phase!=Succeeded,status.phase!=Failed";
  auto pods = io.client.list(v1::kPods, scope, unfinished);
  if (!pods.isOk()) return fail(pods.status());
  auto envs = io.client.list(v1::kRuntimeEnvs, scope);
  if (!envs.isOk()) return fail(envs.status());
  std::map<std::pair<std::string, std::string>, webhooks::RuntimeEnvView> envByName;
  for (const json& e : envs->items) {
    webhooks::RuntimeEnvView v = webhooks::runtimeEnvView(e);
    envByName[{v.ns, v.name}] = std::move(v);
  }
  std::map<std::string, std::vector<const json*>> podsByNamespace;
  for (const json& p : pods->items)
    podsByNamespace[p["metadata"].value("namespace", "")].push_back(&p);

  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(io.clock.wallNow().time_since_epoch())
          .count();
  json reports = json::array();
  size_t found = 0;
  std::string table;
  for (const auto& [name, mode] : modes) {
    const std::string namespaceName = name;
    drift::RuntimeEnvFinder find =
        [&envByName,
         namespaceName](std::string_view env) -> std::optional<webhooks::RuntimeEnvView> {
      auto it = envByName.find({namespaceName, std::string(env)});
      if (it == envByName.end()) return std::nullopt;
      return it->second;
    };
    drift::NamespaceScan scan =
        drift::scanNamespace(name, mode, podsByNamespace[name], find, /*trustedInitImage=*/"");
    found += scan.findings.size();
    if (cmd.json) {
      if (scan.checked > 0) reports.push_back(drift::policyReport(scan, {}, now));
      continue;
    }
    for (const drift::DriftFinding& f : scan.findings) {
      table += name + "\t" + f.pod + "\t" + (f.runtimeEnv.empty() ? "-" : f.runtimeEnv) + "\t" +
               std::string(drift::driftKindName(f.kind)) + "\t" + f.message + "\n";
    }
  }
  if (cmd.json) {
    io.out << reports.dump(2) << "\n";
  } else if (found == 0) {
    io.out << "no drift: every pod under policy runs a pair its RuntimeEnv records\n";
  } else {
    io.out << "NAMESPACE\tPOD\tRUNTIMEENV\tRULE\tMESSAGE\n" << table;
  }
  return found == 0 ? kExitOk : kExitFailure;
}

}  // namespace

int runRuntimeCommand(const RuntimeCommand& cmd, const std::string& ns, ReleaseIo& io) {
  if (cmd.action == RuntimeCommand::Action::kHelp) {
    runtimeUsage(io.out, io.program);
    return kExitOk;
  }
  if (cmd.action == RuntimeCommand::Action::kDrift) return runDrift(cmd, ns, io);
  auto rte = io.client.get(api::v1alpha1::kRuntimeEnvs, ns, cmd.name);
  if (!rte.isOk()) {
    std::string why = rte.status().code() == Code::kNotFound
                          ? "no RuntimeEnv \"" + cmd.name + "\" in namespace \"" + ns + "\""
                          : rte.status().message();
    io.err << io.program << ": runtime "
           << (cmd.action == RuntimeCommand::Action::kHistory ? "history" : "advisories") << ": "
           << why << "\n";
    return kExitFailure;
  }
  if (cmd.action == RuntimeCommand::Action::kAdvisories) {
    if (cmd.json) {
      io.out << rte->value("/status/advisories"_json_pointer, nlohmann::json::object()).dump(2)
             << "\n";
    } else {
      io.out << renderRuntimeAdvisories(*rte);
    }
    return runtimeAdvisoriesClean(*rte) ? kExitOk : kExitFailure;
  }
  if (cmd.json) {
    nlohmann::json doc = {
        {"runtimeEnv", cmd.name},
        {"namespace", ns},
        {"currentRevision", rte->value("/status/currentRevision"_json_pointer, 0)},
        {"revisions", rte->value("/status/revisions"_json_pointer, nlohmann::json::array())}};
    io.out << doc.dump(2) << "\n";
  } else {
    io.out << renderRuntimeHistory(*rte, io.clock.wallNow());
  }
  return kExitOk;
}

}  // namespace lockstep::cli
