#include "webhooks/admission/pod_validator.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "api/image_ref.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/runtime_revision.h"
#include "webhooks/admission/json_access.h"

namespace lockstep::webhooks {
namespace {

namespace ja = json_access;
using api::ImageRef;
using api::parseImageRef;
using api::v1alpha1::kReleaseLabel;
using api::v1alpha1::kRuntimeRevisionAnnotation;
using nlohmann::json;

struct ContainerKind {
  std::string_view field;  // spec field
  std::string_view noun;   // in messages
};
constexpr ContainerKind kContainerKinds[] = {
    {"initContainers", "init container"},
    {"containers", "container"},
    {"ephemeralContainers", "ephemeral container"},
};

struct ContainerImage {
  std::string_view noun;
  std::string name;
  std::string image;
};

std::string quotePodValidator(std::string_view s) { return "\"" + std::string(s) + "\""; }

const std::string* label(const json* obj, std::string_view key) {
  return ja::str(ja::child(ja::at(obj, {"metadata", "labels"}), key));
}

const std::string* annotation(const json* obj, std::string_view key) {
  return ja::str(ja::child(ja::at(obj, {"metadata", "annotations"}), key));
}

std::vector<ContainerImage> containersOf(const json* pod, const ContainerKind& kind) {
  std::vector<ContainerImage> out;
  const json* list = ja::at(pod, {"spec", kind.field});
  if (!ja::isArray(list)) return out;
  for (const json& c : *list) {
    out.push_back({kind.noun, ja::strOr(ja::child(&c, "name")), ja::strOr(ja::child(&c, "image"))});
  }
  return out;
}

std::vector<ContainerImage> allContainers(const json* pod) {
  std::vector<ContainerImage> out;
  for (const ContainerKind& k : kContainerKinds) {
    auto part = containersOf(pod, k);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

// What an UPDATE introduces: new containers (by name, per kind) and changed images.
std::vector<ContainerImage> introducedContainers(const json* pod, const json* oldPod) {
  std::vector<ContainerImage> out;
  for (const ContainerKind& k : kContainerKinds) {
    std::set<std::pair<std::string, std::string>> old;  // (name, image)
    for (auto& c : containersOf(oldPod, k)) old.emplace(std::move(c.name), std::move(c.image));
    for (auto& c : containersOf(pod, k)) {
      if (old.count({c.name, c.image}) == 0) out.push_back(std::move(c));
    }
  }
  return out;
}

// Drops the operator's verification init containers (exactly the trusted image).
void dropTrustedInits(std::vector<ContainerImage>& containers, const std::string& trusted) {
  if (trusted.empty()) return;
  containers.erase(std::remove_if(containers.begin(), containers.end(),
                                  [&](const ContainerImage& c) {
                                    return c.noun == kContainerKinds[0].noun && c.image == trusted;
                                  }),
                   containers.end());
}

// `pod "ns/name"`, or `pod "ns/<generateName>…"` for controller-created pods.
std::string podIdentity(const PodReview& r) {
  std::string ns = r.ns.empty() ? ja::strOr(ja::at(r.pod, {"metadata", "namespace"})) : r.ns;
  std::string name = ja::strOr(ja::at(r.pod, {"metadata", "name"}));
  if (!name.empty()) return "pod " + quotePodValidator(ns + "/" + name);
  std::string generateName = ja::strOr(ja::at(r.pod, {"metadata", "generateName"}));
  if (!generateName.empty())
    return "pod " + quotePodValidator(ns + "/" + generateName + "*") + " (generateName)";
  return "pod in namespace " + quotePodValidator(ns);
}

void checkImage(const ContainerImage& c, const RuntimeEnvView& env, const ImageRef& expected,
                std::vector<std::string>& violations) {
  // The messages are built only for a violation: admitted pods are the hot path.
  auto who = [&] { return std::string(c.noun) + " " + quotePodValidator(c.name); };
  auto want = [&] {
    return "expected " + quotePodValidator(expected.repository() + "@" + expected.digest);
  };
  if (c.image.empty()) {
    violations.push_back(who() + " has no image; " + want());
    return;
  }
  StatusOr<ImageRef> found = parseImageRef(c.image);
  if (!found.isOk()) {
    violations.push_back(who() + " image " + quotePodValidator(c.image) + " is invalid (" +
                         found.status().message() + "); " + want());
  } else if (!found->pinned()) {
    violations.push_back(who() + " image " + quotePodValidator(c.image) +
                         " is not pinned by digest; " + want());
  } else if (found->domain != expected.domain || found->path != expected.path) {
    violations.push_back(who() + " image " + quotePodValidator(c.image) +
                         " is not the image of RuntimeEnv " + quotePodValidator(env.name) + "; " +
                         want());
  } else if (found->digest != expected.digest) {
    violations.push_back(who() + " image " + quotePodValidator(c.image) + " has digest " +
                         quotePodValidator(found->digest) + "; " + want());
  }
}

// Checks the pod against the RuntimeEnv's current revision: the env itself
// (exists, Ready), the annotation (when asked) and the images. Empty: admitted.
void checkAgainstCurrent(const PodReview& r, const std::string& envName, bool checkAnnotation,
                         const std::vector<ContainerImage>& containers,
                         std::vector<std::string>& violations) {
  auto envId = [&] { return quotePodValidator(r.ns + "/" + envName); };
  const RuntimeEnvView& env = *r.runtimeEnv;
  if (!env.ready || env.closureHash.empty()) {
    violations.push_back("RuntimeEnv " + envId() + " is not Ready");
    return;
  }
  if (checkAnnotation) {
    const std::string* hash = annotation(r.pod, kClosureHashAnnotation);
    if (hash == nullptr || hash->empty()) {
      violations.push_back("annotation " + std::string(kClosureHashAnnotation) +
                           " is missing; expected " + quotePodValidator(env.closureHash) +
                           " (RuntimeEnv " + envId() + " status.closureHash)");
    } else if (*hash != env.closureHash) {
      violations.push_back("annotation " + std::string(kClosureHashAnnotation) + " is " +
                           quotePodValidator(*hash) + "; expected " +
                           quotePodValidator(env.closureHash) + " (RuntimeEnv " + envId() +
                           " status.closureHash)");
    }
  }
  StatusOr<ImageRef> expected = parseImageRef(env.image);
  if (!expected.isOk() || !expected->pinned()) {
    violations.push_back("RuntimeEnv " + envId() + " spec.image " + quotePodValidator(env.image) +
                         " is not pinned by digest; no container image can match it");
    return;
  }
  for (const ContainerImage& c : containers) checkImage(c, env, *expected, violations);
}

// True when the pod's closure-hash annotation and every checked image are the pair of `rev`.
bool runsRevision(const PodReview& r, const std::vector<ContainerImage>& containers,
                  const RevisionView& rev) {
  const std::string* hash = annotation(r.pod, kClosureHashAnnotation);
  if (hash == nullptr || *hash != rev.closureHash) return false;
  StatusOr<ImageRef> expected = parseImageRef(rev.image);
  if (!expected.isOk() || !expected->pinned()) return false;
  return std::all_of(containers.begin(), containers.end(),
                     [&](const ContainerImage& c) { return api::sameImage(c.image, rev.image); });
}

std::string describeRevision(const RevisionView& rev) {
  return "revision " + std::to_string(rev.number) + " (image " + quotePodValidator(rev.image) +
         ", closure " + quotePodValidator(rev.closureHash) + ")";
}

std::string joinQuoted(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + quotePodValidator(n);
  return out;
}

// Why the pod is on no admissible revision: what it claims, and the current and
// pinned revisions it could have matched (docs/contracts.md, "Admission by revision").
std::string revisionSummary(const PodReview& r, const std::string& envName,
                            const std::vector<ContainerImage>& containers,
                            const std::string* release, const RevisionView* ownRevision) {
  const RuntimeEnvView& env = *r.runtimeEnv;
  std::string claims = "the pod claims closure ";
  const std::string* hash = annotation(r.pod, kClosureHashAnnotation);
  claims += hash == nullptr ? std::string("(none)") : quotePodValidator(*hash);
  std::vector<std::string> images;
  for (const ContainerImage& c : containers) {
    if (std::find(images.begin(), images.end(), c.image) == images.end()) images.push_back(c.image);
  }
  if (!images.empty()) claims += " on image(s) " + joinQuoted(images);
  claims += release == nullptr || release->empty()
                ? " and names no release (label " + std::string(kReleaseLabel) + ")"
                : " for release " + quotePodValidator(*release);

  std::string out = claims + "; RuntimeEnv " + quotePodValidator(r.ns + "/" + envName);
  if (ownRevision != nullptr) {
    out += " has it as " + describeRevision(*ownRevision) + ", pinned only by release(s) " +
           joinQuoted(ownRevision->pinnedBy);
  } else {
    std::string current;
    std::string pinned;
    std::string retained;
    for (const RevisionView& rev : env.revisions) {
      retained += (retained.empty() ? "" : ", ") + std::to_string(rev.number);
      if (rev.number == env.currentRevision) current = describeRevision(rev);
      if (!rev.pinnedBy.empty()) {
        pinned += (pinned.empty() ? "" : "; ") + describeRevision(rev) + " for release(s) " +
                  joinQuoted(rev.pinnedBy);
      }
    }
    out += " current: " + (current.empty() ? std::string("none") : current) +
           (env.ready ? "" : " (not Ready)") +
           "; pinned: " + (pinned.empty() ? std::string("none") : pinned);
    // The revision the pod says it was built from (never trusted to admit): named when gone.
    const std::string* claimed = annotation(r.pod, kRuntimeRevisionAnnotation);
    if (claimed != nullptr && !claimed->empty()) {
      bool recorded = false;
      for (const RevisionView& rev : env.revisions) {
        if (std::to_string(rev.number) == *claimed) recorded = true;
      }
      out += recorded
                 ? "; annotation " + std::string(kRuntimeRevisionAnnotation) + " names revision " +
                       *claimed + ", whose image and closure the pod does not match"
                 : "; revision " + *claimed + " (annotation " +
                       std::string(kRuntimeRevisionAnnotation) +
                       ") was pruned from the RuntimeEnv (retained: " + retained + ")";
    }
  }
  return out;
}

// The pod against the RuntimeEnv: its current revision, or a pinned revision
// held by the release the pod names.
void checkAgainstEnv(const PodReview& r, const std::string& envName, bool checkAnnotation,
                     const std::vector<ContainerImage>& containers,
                     std::vector<std::string>& violations) {
  if (!r.runtimeEnv) {
    violations.push_back("RuntimeEnv " + quotePodValidator(r.ns + "/" + envName) + " (label " +
                         std::string(kRuntimeEnvLabel) + ") does not exist");
    return;
  }
  std::vector<std::string> current;
  checkAgainstCurrent(r, envName, checkAnnotation, containers, current);
  if (current.empty()) return;
  const RuntimeEnvView& env = *r.runtimeEnv;
  const std::string* release = label(r.pod, kReleaseLabel);
  const RevisionView* own = nullptr;  // a pinned revision the pod runs, not held for its release
  for (const RevisionView& rev : env.revisions) {
    if (rev.pinnedBy.empty() || !runsRevision(r, containers, rev)) continue;
    if (release != nullptr &&
        std::find(rev.pinnedBy.begin(), rev.pinnedBy.end(), *release) != rev.pinnedBy.end()) {
      return;  // a pinned revision, and the pod's release pins exactly it
    }
    own = &rev;
  }
  violations.insert(violations.end(), std::make_move_iterator(current.begin()),
                    std::make_move_iterator(current.end()));
  if (env.currentRevision > 0 || !env.revisions.empty()) {
    violations.push_back(revisionSummary(r, envName, containers, release, own));
  }
}

// Image volumes (`volumes[].image.reference`) mount OCI artifacts such as the
// checkpoint package: in a pod under policy each one must be pinned by digest.
void checkImageVolumes(const json* pod, std::vector<std::string>& violations) {
  const json* volumes = ja::at(pod, {"spec", "volumes"});
  if (!ja::isArray(volumes)) return;
  for (const json& v : *volumes) {
    const json* image = ja::child(&v, "image");
    if (image == nullptr) continue;
    std::string who = "image volume " + quotePodValidator(ja::strOr(ja::child(&v, "name")));
    std::string ref = ja::strOr(ja::child(image, "reference"));
    if (ref.empty()) {
      violations.push_back(who + " has no reference; it must be pinned by digest");
      continue;
    }
    StatusOr<ImageRef> parsed = parseImageRef(ref);
    if (!parsed.isOk()) {
      violations.push_back(who + " reference " + quotePodValidator(ref) + " is invalid (" +
                           parsed.status().message() + ")");
    } else if (!parsed->pinned()) {
      violations.push_back(who + " reference " + quotePodValidator(ref) +
                           " is not pinned by digest; expected <repository>@sha256:<digest>");
    }
  }
}

Verdict notChecked() { return Verdict{}; }

// The answer for a checked pod with violations, by namespace mode (unset: the pod opted in
// with its label, so enforce).
Verdict decide(const PodReview& r, Verdict v) {
  std::string id = podIdentity(r);
  std::string joined;
  for (const std::string& s : v.violations) joined += (joined.empty() ? "" : "; ") + s;
  std::string prefix = "lockstep: " + id + ": ";
  NamespaceMode mode = r.mode == NamespaceMode::kUnset ? NamespaceMode::kEnforce : r.mode;
  switch (mode) {
    case NamespaceMode::kWarn:
      v.decision = Decision::kWarned;
      for (const std::string& s : v.violations) v.warnings.push_back(prefix + s);
      break;
    case NamespaceMode::kAudit:
      v.decision = Decision::kAudited;
      v.message = prefix + joined;
      break;
    default:
      v.decision = Decision::kDenied;
      v.code = 403;
      v.reason = "Forbidden";
      v.message = prefix + joined;
      break;
  }
  return v;
}

}  // namespace

const json& podFieldMask() {
  static const json mask = [] {
    const json container = {{"name", true}, {"image", true}};
    json spec = json::object();
    for (const ContainerKind& k : kContainerKinds) spec[std::string(k.field)] = container;
    spec["volumes"] = {{"name", true}, {"image", {{"reference", true}}}};
    return json{{"metadata",
                 {{"name", true},
                  {"generateName", true},
                  {"namespace", true},
                  {"labels", true},
                  {"annotations", true},
                  // The serving label's owner chain (serving_pod_rule.h).
                  {"ownerReferences", true}}},
                {"spec", std::move(spec)}};
  }();
  return mask;
}

Status checkTrustedInitImage(const std::string& image) {
  StatusOr<ImageRef> ref = parseImageRef(image);
  if (!ref.isOk()) {
    return Status(Code::kInvalidArgument, "CLI image " + quotePodValidator(image) +
                                              " is invalid: " + ref.status().message());
  }
  if (!ref->pinned()) {
    return Status(Code::kInvalidArgument,
                  "CLI image " + quotePodValidator(image) +
                      " is not pinned by digest: admission trusts the verification init "
                      "containers only on <repository>@sha256:<digest> (a tag can be moved)");
  }
  return Status::ok();
}

std::optional<std::string> podRuntimeEnvName(const json& pod) {
  const std::string* name = label(&pod, kRuntimeEnvLabel);
  if (name == nullptr) return std::nullopt;
  return *name;
}

Verdict validatePod(const PodReview& r) {
  if (r.operation != Operation::kCreate && r.operation != Operation::kUpdate) return notChecked();
  if (r.mode == NamespaceMode::kOff) return notChecked();
  if (r.pod == nullptr || !r.pod->is_object()) {
    // Fail closed: an object that is missing or not a JSON object can show neither that the
    // pod is outside the policy nor that its images match its RuntimeEnv. The API server
    // never sends one; such a request is broken or forged.
    Verdict v;
    v.checked = true;
    v.violations.push_back("request.object is not a Pod object (JSON " +
                           std::string(r.pod == nullptr ? "none" : r.pod->type_name()) +
                           "), so the pod's runtime cannot be checked");
    return decide(r, std::move(v));
  }

  const std::string* envName = label(r.pod, kRuntimeEnvLabel);
  bool namespaceEnforces = r.mode == NamespaceMode::kEnforce || r.mode == NamespaceMode::kWarn ||
                           r.mode == NamespaceMode::kAudit;
  bool droppedLabel = false;
  if (r.operation == Operation::kUpdate) {
    const std::string* oldEnvName = label(r.oldPod, kRuntimeEnvLabel);
    droppedLabel =
        oldEnvName != nullptr && !oldEnvName->empty() && (envName == nullptr || envName->empty());
  }
  if (envName == nullptr && !namespaceEnforces && !droppedLabel) return notChecked();

  bool fullCheck = r.operation == Operation::kCreate;
  std::vector<ContainerImage> containers;
  bool checkAnnotation = true;
  // A running pod that declared a RuntimeEnv cannot shed the declaration: once
  // the label is gone, nothing would check its next image swap.
  std::string droppedEnv;
  if (r.operation == Operation::kUpdate) {
    const std::string* oldEnvName = label(r.oldPod, kRuntimeEnvLabel);
    if (oldEnvName != nullptr && !oldEnvName->empty() && (envName == nullptr || envName->empty()))
      droppedEnv = *oldEnvName;
    bool labelChanged = (envName == nullptr) != (oldEnvName == nullptr) ||
                        (envName != nullptr && *envName != *oldEnvName);
    fullCheck = labelChanged || r.oldPod == nullptr;
    if (!fullCheck) {
      containers = introducedContainers(r.pod, r.oldPod);
      const std::string* hash = annotation(r.pod, kClosureHashAnnotation);
      const std::string* oldHash = annotation(r.oldPod, kClosureHashAnnotation);
      checkAnnotation =
          (hash == nullptr) != (oldHash == nullptr) || (hash != nullptr && *hash != *oldHash);
      if (containers.empty() && !checkAnnotation) return notChecked();
    }
  }
  if (fullCheck) containers = allContainers(r.pod);
  dropTrustedInits(containers, r.trustedInitImage);

  Verdict v;
  v.checked = true;
  if (!droppedEnv.empty()) {
    v.violations.push_back("label " + std::string(kRuntimeEnvLabel) +
                           " cannot be removed from a running pod (it was " +
                           quotePodValidator(droppedEnv) +
                           "); delete the pod and create it again instead");
  } else if (envName == nullptr || envName->empty()) {
    v.violations.push_back("namespace " + quotePodValidator(r.ns) + " requires label " +
                           std::string(kRuntimeEnvLabel) + " naming the pod's RuntimeEnv (mode " +
                           std::string(namespaceModeName(r.mode)) + ")");
  } else {
    checkAgainstEnv(r, *envName, checkAnnotation, containers, v.violations);
  }
  if (fullCheck && droppedEnv.empty()) checkImageVolumes(r.pod, v.violations);
  if (v.violations.empty()) return v;
  return decide(r, std::move(v));
}

}  // namespace lockstep::webhooks
