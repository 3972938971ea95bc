#include "drift/pod_drift.h"

#include <algorithm>
#include <set>
#include <utility>

#include "api/image_ref.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/runtime_revision.h"
#include "webhooks/admission/json_access.h"
#include "webhooks/admission/pod_validator.h"

namespace lockstep::drift {
namespace {

namespace ja = webhooks::json_access;
using nlohmann::json;
using webhooks::NamespaceMode;
using webhooks::RevisionView;
using webhooks::RuntimeEnvView;

std::string quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

const std::string* label(const json& pod, std::string_view key) {
  return ja::str(ja::child(ja::at(&pod, {"metadata", "labels"}), key));
}

const std::string* annotation(const json& pod, std::string_view key) {
  return ja::str(ja::child(ja::at(&pod, {"metadata", "annotations"}), key));
}

struct Container {
  std::string_view noun;
  std::string name;
  std::string image;
};

// Every container the pod runs, but the operator's verification init containers.
std::vector<Container> containersOf(const json& pod, const std::string& trustedInitImage) {
  static constexpr std::pair<std::string_view, std::string_view> kKinds[] = {
      {"initContainers", "init container"},
      {"containers", "container"},
      {"ephemeralContainers", "ephemeral container"},
  };
  std::vector<Container> out;
  for (const auto& [field, noun] : kKinds) {
    const json* list = ja::at(&pod, {"spec", field});
    if (!ja::isArray(list)) continue;
    for (const json& c : *list) {
      std::string image = ja::strOr(ja::child(&c, "image"));
      if (field == "initContainers" && !trustedInitImage.empty() && image == trustedInitImage)
        continue;
      out.push_back({noun, ja::strOr(ja::child(&c, "name")), std::move(image)});
    }
  }
  return out;
}

// The revisions a RuntimeEnv records; one without a list (written before revisions
// existed) records its current pair.
std::vector<RevisionView> recorded(const RuntimeEnvView& env) {
  if (!env.revisions.empty() || env.closureHash.empty()) return env.revisions;
  return {RevisionView{env.currentRevision, env.image, env.closureHash}};
}

std::string retainedList(const std::vector<RevisionView>& revs) {
  std::string out;
  for (const RevisionView& r : revs) out += (out.empty() ? "" : ", ") + std::to_string(r.number);
  return out.empty() ? "none" : out;
}

DriftFinding finding(const json& pod, const std::string& env, DriftKind kind, std::string message) {
  return DriftFinding{ja::strOr(ja::at(&pod, {"metadata", "name"})),
                      ja::strOr(ja::at(&pod, {"metadata", "uid"})), env, kind, std::move(message)};
}

void checkVolumes(const json& pod, const std::string& env, std::vector<DriftFinding>& out) {
  const json* volumes = ja::at(&pod, {"spec", "volumes"});
  if (!ja::isArray(volumes)) return;
  for (const json& v : *volumes) {
    const json* image = ja::child(&v, "image");
    if (image == nullptr) continue;
    std::string ref = ja::strOr(ja::child(image, "reference"));
    StatusOr<api::ImageRef> parsed = api::parseImageRef(ref);
    if (parsed.isOk() && parsed->pinned()) continue;
    out.push_back(finding(pod, env, DriftKind::kUnpinnedVolume,
                          "image volume " + quote(ja::strOr(ja::child(&v, "name"))) + " mounts " +
                              quote(ref) + ", not pinned by digest"));
  }
}

}  // namespace

std::string_view driftKindName(DriftKind kind) {
  switch (kind) {
    case DriftKind::kNoRuntimeEnv:
      return "no-runtime-env";
    case DriftKind::kUnknownRuntimeEnv:
      return "unknown-runtime-env";
    case DriftKind::kPrunedRevision:
      return "pruned-revision";
    case DriftKind::kUnrecordedPair:
      return "unrecorded-pair";
    case DriftKind::kForeignImage:
      return "foreign-image";
    case DriftKind::kUnpinnedVolume:
      return "unpinned-image-volume";
  }
  return "unknown";
}

std::vector<DriftFinding> podDrift(const json& pod, NamespaceMode mode,
                                   const RuntimeEnvFinder& findEnv,
                                   const std::string& trustedInitImage) {
  std::vector<DriftFinding> out;
  if (mode == NamespaceMode::kOff || !pod.is_object()) return out;
  const std::string* envLabel = label(pod, api::v1alpha1::kRuntimeEnvLabel);
  const bool underPolicy = mode == NamespaceMode::kEnforce || mode == NamespaceMode::kWarn ||
                           mode == NamespaceMode::kAudit;
  if ((envLabel == nullptr || envLabel->empty()) && !underPolicy) return out;
  if (envLabel == nullptr || envLabel->empty()) {
    out.push_back(finding(pod, "", DriftKind::kNoRuntimeEnv,
                          "declares no RuntimeEnv (label " +
                              std::string(api::v1alpha1::kRuntimeEnvLabel) +
                              ") in a namespace under policy (mode " +
                              std::string(webhooks::namespaceModeName(mode)) + ")"));
    checkVolumes(pod, "", out);
    return out;
  }
  const std::string& envName = *envLabel;
  std::optional<RuntimeEnvView> env = findEnv(envName);
  if (!env) {
    out.push_back(finding(pod, envName, DriftKind::kUnknownRuntimeEnv,
                          "RuntimeEnv " + quote(envName) + " (label " +
                              std::string(api::v1alpha1::kRuntimeEnvLabel) + ") does not exist"));
    checkVolumes(pod, envName, out);
    return out;
  }
  const std::vector<RevisionView> revisions = recorded(*env);
  const std::vector<Container> containers = containersOf(pod, trustedInitImage);
  const std::string* hash = annotation(pod, api::v1alpha1::kClosureHashAnnotation);
  std::vector<const RevisionView*> sameHash;
  for (const RevisionView& r : revisions) {
    if (hash != nullptr && !hash->empty() && r.closureHash == *hash) sameHash.push_back(&r);
  }
  const std::string claims =
      "runs closure " + (hash == nullptr || hash->empty() ? std::string("(none)") : quote(*hash));
  if (sameHash.empty()) {
    const std::string* claimed = annotation(pod, api::v1alpha1::kRuntimeRevisionAnnotation);
    bool pruned = false;
    if (claimed != nullptr && !claimed->empty()) {
      pruned = std::none_of(revisions.begin(), revisions.end(), [&](const RevisionView& r) {
        return std::to_string(r.number) == *claimed;
      });
    }
    if (pruned) {
      out.push_back(finding(pod, envName, DriftKind::kPrunedRevision,
                            claims + " of revision " + *claimed + " (annotation " +
                                api::v1alpha1::kRuntimeRevisionAnnotation +
                                "), pruned from RuntimeEnv " + quote(envName) +
                                " (recorded: " + retainedList(revisions) + ")"));
    } else {
      out.push_back(finding(pod, envName, DriftKind::kUnrecordedPair,
                            claims + ", which no revision of RuntimeEnv " + quote(envName) +
                                " records (recorded: " + retainedList(revisions) + ")"));
    }
  } else {
    // An image swap keeps the closure: several revisions may share it. The pod is on
    // a recorded pair when one of them has every container's image.
    const RevisionView* match = nullptr;
    for (const RevisionView* r : sameHash) {
      if (std::all_of(containers.begin(), containers.end(),
                      [&](const Container& c) { return api::sameImage(c.image, r->image); })) {
        match = r;
      }
    }
    if (match == nullptr) {
      const RevisionView& newest = *sameHash.back();
      for (const Container& c : containers) {
        if (api::sameImage(c.image, newest.image)) continue;
        out.push_back(finding(pod, envName, DriftKind::kForeignImage,
                              std::string(c.noun) + " " + quote(c.name) + " runs image " +
                                  quote(c.image) + ", outside RuntimeEnv " + quote(envName) +
                                  " (revision " + std::to_string(newest.number) + " of closure " +
                                  quote(newest.closureHash) + " is image " + quote(newest.image) +
                                  ")"));
      }
    }
  }
  checkVolumes(pod, envName, out);
  return out;
}

NamespaceScan scanNamespace(const std::string& ns, NamespaceMode mode,
                            const std::vector<const json*>& pods, const RuntimeEnvFinder& findEnv,
                            const std::string& trustedInitImage) {
  NamespaceScan scan;
  scan.ns = ns;
  scan.mode = mode;
  if (mode == NamespaceMode::kOff) return scan;
  const bool underPolicy = mode == NamespaceMode::kEnforce || mode == NamespaceMode::kWarn ||
                           mode == NamespaceMode::kAudit;
  // A RuntimeEnv is looked up once per scan, however many pods name it.
  std::map<std::string, std::optional<RuntimeEnvView>, std::less<>> envs;
  RuntimeEnvFinder cached = [&](std::string_view name) {
    auto it = envs.find(name);
    if (it == envs.end()) it = envs.emplace(std::string(name), findEnv(name)).first;
    return it->second;
  };
  for (const json* pod : pods) {
    if (pod == nullptr || !pod->is_object()) continue;
    const std::string phase = ja::strOr(ja::at(pod, {"status", "phase"}));
    if (phase == "Succeeded" || phase == "Failed") continue;
    if (ja::at(pod, {"metadata", "deletionTimestamp"}) != nullptr) continue;
    const std::string* env = label(*pod, api::v1alpha1::kRuntimeEnvLabel);
    if (!underPolicy && (env == nullptr || env->empty())) continue;
    ++scan.checked;
    std::vector<DriftFinding> found = podDrift(*pod, mode, cached, trustedInitImage);
    scan.findings.insert(scan.findings.end(), std::make_move_iterator(found.begin()),
                         std::make_move_iterator(found.end()));
  }
  std::stable_sort(scan.findings.begin(), scan.findings.end(),
                   [](const DriftFinding& a, const DriftFinding& b) {
                     return std::tie(a.pod, a.kind) < std::tie(b.pod, b.kind);
                   });
  return scan;
}

const json& podFieldMask() {
  static const json mask = [] {
    json m = webhooks::podFieldMask();
    m["metadata"]["uid"] = true;
    m["metadata"]["deletionTimestamp"] = true;
    m["status"] = {{"phase", true}};
    return m;
  }();
  return mask;
}

std::string findingKey(const DriftFinding& f) {
  return f.uid + "/" + std::string(driftKindName(f.kind));
}

std::map<std::string, int64_t> sinceOf(const json& report) {
  std::map<std::string, int64_t> out;
  const json* results = ja::child(&report, "results");
  if (!ja::isArray(results)) return out;
  for (const json& r : *results) {
    const std::string* key = ja::str(ja::at(&r, {"properties", "finding"}));
    const json* seconds = ja::at(&r, {"timestamp", "seconds"});
    if (key != nullptr && seconds != nullptr && seconds->is_number_integer())
      out[*key] = seconds->get<int64_t>();
  }
  return out;
}

json policyReport(const NamespaceScan& scan, const std::map<std::string, int64_t>& sinceByFinding,
                  int64_t nowSeconds, size_t maxResults) {
  json results = json::array();
  std::set<std::string> failedPods;
  for (const DriftFinding& f : scan.findings) failedPods.insert(f.uid.empty() ? f.pod : f.uid);
  for (const DriftFinding& f : scan.findings) {
    if (results.size() >= maxResults) break;
    const std::string key = findingKey(f);
    auto since = sinceByFinding.find(key);
    const bool serious = f.kind == DriftKind::kForeignImage ||
                         f.kind == DriftKind::kUnrecordedPair ||
                         f.kind == DriftKind::kPrunedRevision;
    json properties = {{"finding", key}};
    if (!f.runtimeEnv.empty()) properties["runtimeEnv"] = f.runtimeEnv;
    results.push_back(
        {{"policy", kPolicyName},
         {"rule", std::string(driftKindName(f.kind))},
         {"result", "fail"},
         {"message", f.message},
         {"category", "Runtime closure"},
         {"severity", serious ? "high" : "medium"},
         {"source", "lockstep"},
         {"scored", true},
         {"timestamp",
          {{"seconds", since == sinceByFinding.end() ? nowSeconds : since->second}, {"nanos", 0}}},
         {"resources", json::array({{{"apiVersion", "v1"},
                                     {"kind", "Pod"},
                                     {"namespace", scan.ns},
                                     {"name", f.pod},
                                     {"uid", f.uid}}})},
         {"properties", std::move(properties)}});
  }
  const int64_t failed = static_cast<int64_t>(failedPods.size());
  json report = {
      {"apiVersion", "wgpolicyk8s.io/v1alpha2"},
      {"kind", "PolicyReport"},
      {"metadata",
       {{"name", kReportName},
        {"namespace", scan.ns},
        {"labels", {{"app.kubernetes.io/managed-by", "lockstep"}}}}},
      {"summary",
       {{"pass", scan.checked - failed}, {"fail", failed}, {"warn", 0}, {"error", 0}, {"skip", 0}}},
      {"results", std::move(results)}};
  if (scan.findings.size() > maxResults) {
    report["metadata"]["annotations"] = {
        {"lockstep.dev/results-left-out", std::to_string(scan.findings.size() - maxResults)}};
  }
  return report;
}

}  // namespace lockstep::drift
