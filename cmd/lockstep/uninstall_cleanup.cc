#include "cmd/lockstep/uninstall_cleanup.h"

#include <sys/stat.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <ostream>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/runtime_revision.h"
#include "cmd/lockstep/verbs.h"
#include "operator/kube/connect.h"

namespace lockstep::cli {

namespace {

using nlohmann::json;
namespace v1 = api::v1alpha1;

std::vector<std::string> splitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string objectName(const json& object) {
  const std::string ns = object.value("/metadata/namespace"_json_pointer, std::string());
  const std::string name = object.value("/metadata/name"_json_pointer, std::string());
  return ns.empty() ? name : ns + "/" + name;
}

// Frees one object: re-read on Conflict, done when it is gone or carries none of
// Lockstep's finalizers. `freed` (out): the finalizers this call removed.
Status freeObject(kube::Client& client, const kube::Resource& r, json object,
                  std::vector<std::string>* freed) {
  const std::string ns = object.value("/metadata/namespace"_json_pointer, std::string());
  const std::string name = object.value("/metadata/name"_json_pointer, std::string());
  bool first = true;
  return kube::retryOnConflict([&]() -> Status {
    if (!first) {
      auto fresh = client.get(r, ns, name);
      if (!fresh.isOk())
        return fresh.status().code() == Code::kNotFound ? Status::ok() : fresh.status();
      object = std::move(*fresh);
    }
    first = false;
    auto kept = finalizersKept(object);
    if (!kept) return Status::ok();
    auto patched = client.mergePatch(r, ns, name, finalizersPatch(object, *kept));
    if (!patched.isOk()) {
      return patched.status().code() == Code::kNotFound ? Status::ok() : patched.status();
    }
    freed->clear();
    for (const json& f : object["metadata"]["finalizers"])
      if (f.is_string() && isLockstepFinalizer(f.get_ref<const std::string&>()))
        freed->push_back(f.get<std::string>());
    return Status::ok();
  });
}

}  // namespace

bool isLockstepFinalizer(std::string_view finalizer) {
  return finalizer == v1::kRuntimeEnvInUseFinalizer || finalizer == v1::kReleaseCleanupFinalizer;
}

std::optional<std::vector<std::string>> finalizersKept(const json& object) {
  const json* list = nullptr;
  if (object.contains("metadata") && object["metadata"].is_object() &&
      object["metadata"].contains("finalizers"))
    list = &object["metadata"]["finalizers"];
  if (list == nullptr || !list->is_array()) return std::nullopt;
  std::vector<std::string> kept;
  bool any = false;
  for (const json& f : *list) {
    if (!f.is_string()) continue;
    const auto& s = f.get_ref<const std::string&>();
    if (isLockstepFinalizer(s)) {
      any = true;
    } else {
      kept.push_back(s);
    }
  }
  if (!any) return std::nullopt;
  return kept;
}

json finalizersPatch(const json& object, const std::vector<std::string>& kept) {
  return {{"metadata",
           {{"finalizers", kept},
            {"resourceVersion",
             object.value("/metadata/resourceVersion"_json_pointer, std::string())}}}};
}

std::vector<std::string> podsStillThere(const std::vector<json>& pods) {
  std::vector<std::string> out;
  for (const json& p : pods) {
    const std::string phase = p.value("/status/phase"_json_pointer, std::string());
    if (phase == "Succeeded" || phase == "Failed") continue;
    const bool deleting = p.contains("metadata") && p["metadata"].contains("deletionTimestamp") &&
                          !p["metadata"]["deletionTimestamp"].is_null();
    out.push_back(objectName(p) + (deleting ? " (terminating)" : ""));
  }
  return out;
}

StatusOr<UninstallCleanupCommand> parseUninstallCleanupArgs(const std::vector<std::string>& args) {
  UninstallCleanupCommand cmd;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help" || a == "help") {
      cmd.help = true;
      return cmd;
    }
    if (auto v = takeFlagValue(args, i, {"--operator-namespace"})) {
      if (!v->isOk()) return v->status();
      if ((*v)->empty()) return invalidArgument("--operator-namespace needs a value");
      cmd.operatorNamespace = **v;
    } else if (auto sel = takeFlagValue(args, i, {"--operator-selector"})) {
      if (!sel->isOk()) return sel->status();
      if ((*sel)->empty()) return invalidArgument("--operator-selector needs a value");
      cmd.operatorSelector = **sel;
    } else if (auto nss = takeFlagValue(args, i, {"--namespaces"})) {
      if (!nss->isOk()) return nss->status();
      cmd.namespaces = splitCommas(**nss);
    } else if (auto t = takeFlagValue(args, i, {"--wait-timeout"})) {
      if (!t->isOk()) return t->status();
      auto d = parseCliDuration(**t);
      if (!d.isOk()) return invalidArgument("--wait-timeout: " + d.status().message());
      cmd.waitTimeout = *d;
    } else if (auto k = takeFlagValue(args, i, {"--kubeconfig"})) {
      if (!k->isOk()) return k->status();
      cmd.kube.kubeconfig = **k;
    } else if (auto c = takeFlagValue(args, i, {"--context"})) {
      if (!c->isOk()) return c->status();
      cmd.kube.context = **c;
    } else if (a.rfind('-', 0) == 0) {
      return invalidArgument("unknown flag " + a);
    } else {
      return invalidArgument("unexpected argument " + a);
    }
  }
  if (cmd.operatorNamespace.empty())
    return invalidArgument("--operator-namespace is required (the namespace the chart was in)");
  if (cmd.operatorSelector.empty())
    return invalidArgument(
        "--operator-selector is required (the label selector of the operator's pods)");
  return cmd;
}

void uninstallCleanupUsage(std::ostream& os, const std::string& program) {
  os << "usage: " << program
     << " uninstall-cleanup --operator-namespace NS --operator-selector SELECTOR\n"
        "         [--namespaces A,B] [--wait-timeout 2m] [--kubeconfig FILE] [--context NAME]\n\n"
        "After `helm uninstall` (the chart's post-delete hook runs it): waits until no pod\n"
        "of the operator matches SELECTOR in NS (at most --wait-timeout), then removes\n"
        "Lockstep's finalizers (lockstep.dev/runtimeenv-in-use, lockstep.dev/release-cleanup)\n"
        "from every RuntimeEnv, ModelRelease and Model (in --namespaces, else in all),\n"
        "keeping any other finalizer. Prints what it freed; running it again frees nothing.\n"
        "Exit 0: nothing of Lockstep's is left; 1: the operator stayed or a write failed\n"
        "(named); 2: bad flags.\n";
}

int runUninstallCleanup(const UninstallCleanupCommand& cmd, ReleaseIo& io) {
  const std::string me = io.program + " uninstall-cleanup: ";
  // 1. No operator left to add a finalizer back.
  kube::ListOptions selector;
  selector.labelSelector = cmd.operatorSelector;
  const auto deadline = io.clock.now() + cmd.waitTimeout;
  std::mutex mu;
  std::condition_variable cv;  // never notified: waitUntil sleeps on the clock
  bool announced = false;
  while (true) {
    auto pods = io.client.list(kube::resources::kPods, cmd.operatorNamespace, selector);
    if (!pods.isOk()) {
      io.err << me << "listing the operator's pods (" << cmd.operatorSelector << ") in namespace "
             << cmd.operatorNamespace << ": " << pods.status().message() << "\n";
      return kExitFailure;
    }
    std::vector<std::string> left = podsStillThere(pods->items);
    if (left.empty()) break;
    if (io.clock.now() >= deadline) {
      io.err << me << "the operator's pods are still there after "
             << std::chrono::duration_cast<std::chrono::seconds>(cmd.waitTimeout).count()
             << "s (selector " << cmd.operatorSelector << "): " << joined(left)
             << "; its finalizers are not removed while it may add them back\n";
      return kExitFailure;
    }
    if (!announced) {
      io.out << "waiting for the operator's pods to go: " << joined(left) << "\n";
      announced = true;
    }
    std::unique_lock<std::mutex> lock(mu);
    io.clock.waitUntil(lock, cv, std::min(deadline, io.clock.now() + io.pollInterval));
  }

  // 2. Lockstep's finalizers, kind by kind, namespace by namespace.
  const std::vector<std::string> scopes =
      cmd.namespaces.empty() ? std::vector<std::string>{""} : cmd.namespaces;
  int freedCount = 0, failures = 0;
  for (const kube::Resource* r : {&v1::kRuntimeEnvs, &v1::kModelReleases, &v1::kModels}) {
    for (const std::string& scope : scopes) {
      auto list = io.client.list(*r, scope);
      if (!list.isOk() && list.status().code() == Code::kNotFound) {
        // The CRD is gone (kubectl delete -f crds/): nothing of that kind is left.
        continue;
      }
      if (!list.isOk()) {
        io.err << me << "listing " << r->kind << "s"
               << (scope.empty() ? "" : " in namespace " + scope) << ": " << list.status().message()
               << "\n";
        ++failures;
        continue;
      }
      for (const json& object : list->items) {
        if (!finalizersKept(object)) continue;
        std::vector<std::string> freed;
        Status s = freeObject(io.client, *r, object, &freed);
        if (!s.isOk()) {
          io.err << me << r->kind << " " << objectName(object)
                 << ": removing its Lockstep finalizers: " << s.message() << "\n";
          ++failures;
          continue;
        }
        if (freed.empty()) continue;  // deleted or freed meanwhile
        ++freedCount;
        io.out << "freed " << r->kind << " " << objectName(object) << ": " << joined(freed) << "\n";
      }
    }
  }
  if (failures > 0) {
    io.err << me << failures << " failure(s); " << freedCount
           << " object(s) freed. Running it again retries what is left.\n";
    return kExitFailure;
  }
  io.out << (freedCount == 0 ? std::string("no Lockstep finalizer left on RuntimeEnvs, "
                                           "ModelReleases or Models")
                             : std::to_string(freedCount) + " object(s) freed")
         << "\n";
  return kExitOk;
}

int uninstallCleanupMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                         const std::string& program) {
  auto cmd = parseUninstallCleanupArgs(args);
  if (!cmd.isOk()) {
    err << program << " uninstall-cleanup: " << cmd.status().message() << "\n";
    uninstallCleanupUsage(err, program);
    return kExitUsage;
  }
  if (cmd->help) {
    uninstallCleanupUsage(out, program);
    return kExitOk;
  }
  std::string path = kubeconfigPath(cmd->kube, std::getenv("KUBECONFIG"), std::getenv("HOME"),
                                    [](const std::string& p) {
                                      struct stat st {};
                                      return ::stat(p.c_str(), &st) == 0;
                                    });
  StatusOr<kube::KubeConfig> config =
      path.empty() ? kube::loadInClusterConfig() : kube::loadKubeConfig(path, cmd->kube.context);
  if (!config.isOk()) {
    err << program << " uninstall-cleanup: " << config.status().message() << "\n";
    return kExitFailure;
  }
  kube::RestOptions rest;
  rest.threads = 1;
  rest.userAgent = "lockstep-uninstall-cleanup";
  kube::ClientOptions options;
  options.fieldManager = "lockstep-uninstall-cleanup";
  auto client = kube::connect(*config, rest, options);
  if (!client.isOk()) {
    err << program << " uninstall-cleanup: " << client.status().message() << "\n";
    return kExitFailure;
  }
  ReleaseIo io{**client, kube::SystemClock::instance(), out, err, program};
  const int rc = runUninstallCleanup(*cmd, io);
  out.flush();
  return rc;
}

}  // namespace lockstep::cli
