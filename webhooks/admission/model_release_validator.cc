#include "webhooks/admission/model_release_validator.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "api/image_ref.h"
#include "api/v1alpha1/analysis_provider.h"
#include "api/v1alpha1/analysis_template.h"
#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/model_release.h"
#include "webhooks/admission/analysis_advice.h"
#include "webhooks/admission/approval_policy.h"
#include "webhooks/admission/json_access.h"
#include "webhooks/admission/release_actions.h"
#include "webhooks/admission/release_immutability.h"

namespace lockstep::webhooks {
namespace {

namespace ja = json_access;
using api::ImageRef;
using api::isSha256Digest;
using api::parseImageRef;
using nlohmann::json;

std::string quoteModelReleaseValidator(std::string_view s) { return "\"" + std::string(s) + "\""; }

bool isDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

std::string describe(const json* v) {
  if (v == nullptr || v->is_null()) return "<unset>";
  if (v->is_string()) return quoteModelReleaseValidator(v->get_ref<const std::string&>());
  return "<" + std::string(v->type_name()) + ">";
}

void checkPackage(const json* spec, std::vector<std::string>& out) {
  const json* pkg = ja::child(spec, "package");
  const std::string* s = ja::str(pkg);
  if (s == nullptr || s->empty()) {
    out.emplace_back("spec.package: required: an OCI reference by digest (repo@sha256:<64 hex>)");
    return;
  }
  StatusOr<ImageRef> ref = parseImageRef(*s);
  if (!ref.isOk()) {
    out.push_back("spec.package: " + quoteModelReleaseValidator(*s) +
                  " is not a valid OCI reference: " + ref.status().message());
  } else if (!ref->pinned() || !ref->tag.empty()) {
    out.push_back("spec.package: " + quoteModelReleaseValidator(*s) +
                  " must be a reference by digest only (repo@sha256:<64 hex>), without a tag");
  }
}

void checkClosureHash(const json* spec, std::vector<std::string>& out) {
  const std::string* s = ja::str(ja::child(spec, "closureHash"));
  if (s == nullptr || s->empty()) {
    out.emplace_back(
        "spec.closureHash: required: sha256:<64 lowercase hex> from the package's runtime.json");
  } else if (!isSha256Digest(*s)) {
    out.push_back("spec.closureHash: " + quoteModelReleaseValidator(*s) +
                  " is not sha256:<64 lowercase hex>");
  }
}

// spec.model names the Service and (with -stable/-canary) the Deployments of
// prod: a DNS-1035 label short enough for both.
void checkModel(const json* spec, std::vector<std::string>& out) {
  const std::string* m = ja::str(ja::child(spec, "model"));
  if (m == nullptr || m->empty()) {
    out.emplace_back("spec.model: required");
  } else if (!isDnsLabel(*m) || (m->front() >= '0' && m->front() <= '9') || m->size() > 56) {
    out.push_back("spec.model: " + quoteModelReleaseValidator(*m) +
                  " must be a DNS-1035 label of at most 56 characters (lowercase alphanumerics "
                  "and '-', starting with a letter): it names the model's Service");
  }
}

void checkImmutable(const json* spec, const json* oldSpec, std::vector<std::string>& out) {
  struct Field {
    std::string_view path;
    std::initializer_list<std::string_view> keys;
  };
  const Field fields[] = {{"spec.package", {"package"}},
                          {"spec.runtimeEnvRef.name", {"runtimeEnvRef", "name"}},
                          {"spec.closureHash", {"closureHash"}}};
  for (const Field& f : fields) {
    const json* now = ja::at(spec, f.keys);
    const json* before = ja::at(oldSpec, f.keys);
    std::string a = describe(now), b = describe(before);
    if (a != b) {
      out.push_back(std::string(f.path) + ": field is immutable (was " + b + ", now " + a +
                    "); create a new ModelRelease instead");
    }
  }
}

void checkCanary(const json* stage, const std::string& path, std::vector<std::string>& out) {
  const json* steps = ja::at(stage, {"canary", "steps"});
  if (steps == nullptr) return;
  if (!steps->is_array()) {
    out.push_back(path + ".canary.steps: must be a list");
    return;
  }
  long long previous = 0;
  for (std::size_t i = 0; i < steps->size(); ++i) {
    std::string p = path + ".canary.steps[" + std::to_string(i) + "].weight";
    const json* w = ja::child(&(*steps)[i], "weight");
    if (w == nullptr || !w->is_number_integer()) {
      out.push_back(p + ": required integer in 1..100");
      continue;
    }
    long long weight = w->get<long long>();
    if (weight < 1 || weight > 100) {
      out.push_back(p + ": " + std::to_string(weight) + " is not in 1..100");
    } else if (weight <= previous) {
      out.push_back(p + ": " + std::to_string(weight) +
                    " must be greater than the previous step's " + std::to_string(previous));
    }
    if (weight > previous) previous = weight;
  }
}

// spec.stages[].evidence (docs/fleet.md "Evidence stages"): the stages whose
// decisions it needs, the TrustPolicy, pinned spec digests of listed stages only.
void checkEvidenceStage(const json& stage, const std::string& path, std::vector<std::string>& out) {
  const std::string p = path + ".evidence";
  const json* e = ja::child(&stage, "evidence");
  if (!e->is_object()) {
    out.push_back(p + ": must be an object {stages, trustPolicy}");
    return;
  }
  const json* list = ja::child(e, "stages");
  std::set<std::string> names;
  if (list == nullptr || !list->is_array() || list->empty()) {
    out.push_back(p + ".stages: at least one stage name is required (e.g. [eval, ci])");
  } else {
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::string* n = ja::str(&(*list)[i]);
      if (n == nullptr || !isDnsLabel(*n)) {
        out.push_back(p + ".stages[" + std::to_string(i) + "]: must be a stage name");
      } else if (!names.insert(*n).second) {
        out.push_back(p + ".stages[" + std::to_string(i) + "]: " + quoteModelReleaseValidator(*n) +
                      " is listed twice");
      }
    }
  }
  const std::string* policy = ja::str(ja::child(e, "trustPolicy"));
  if (policy == nullptr || policy->empty())
    out.push_back(p + ".trustPolicy: required: the TrustPolicy whose keys are trusted");
  if (const json* digests = ja::child(e, "specDigests"); digests != nullptr) {
    if (!digests->is_object()) {
      out.push_back(p + ".specDigests: must be a map of stage name to sha256:<64 hex>");
    } else {
      for (const auto& [k, v] : digests->items()) {
        if (!names.empty() && names.count(k) == 0)
          out.push_back(p + ".specDigests." + k + ": " + quoteModelReleaseValidator(k) +
                        " is not in .stages");
        if (!v.is_string() || !api::isSha256Digest(v.get<std::string>()))
          out.push_back(p + ".specDigests." + k + ": must be sha256:<64 lowercase hex>");
      }
    }
  }
  if (const json* a = ja::child(&stage, "approval");
      a != nullptr && !(a->is_string() && a->get<std::string>() == "Automatic"))
    out.push_back(path +
                  ".approval: an evidence stage takes no approval (its decisions were "
                  "made where its gates ran); approve the serving stage instead");
}

void checkStages(const json* spec, std::vector<std::string>& out) {
  const json* stages = ja::child(spec, "stages");
  if (stages == nullptr || !stages->is_array() || stages->empty()) {
    out.emplace_back("spec.stages: at least one stage is required");
    return;
  }
  std::map<std::string, std::size_t> seen;
  std::optional<std::size_t> servingAt;
  const std::size_t n = stages->size();
  for (std::size_t i = 0; i < n; ++i) {
    const json& stage = (*stages)[i];
    std::string path = "spec.stages[" + std::to_string(i) + "]";
    if (!stage.is_object()) {
      out.push_back(path + ": must be an object");
      continue;
    }
    const std::string* name = ja::str(ja::child(&stage, "name"));
    if (name == nullptr || name->empty()) {
      out.push_back(path + ".name: required");
    } else if (!isDnsLabel(*name)) {
      out.push_back(path + ".name: " + quoteModelReleaseValidator(*name) +
                    " must be a DNS label (lowercase alphanumerics and '-', at most 63)");
    } else if (auto [it, inserted] = seen.emplace(*name, i); !inserted) {
      out.push_back(path + ".name: duplicate stage name " + quoteModelReleaseValidator(*name) +
                    " (first at spec.stages[" + std::to_string(it->second) + "].name)");
    }
    bool gate = ja::child(&stage, "gate") != nullptr;
    bool serving = ja::child(&stage, "serving") != nullptr;
    bool evidence = ja::child(&stage, "evidence") != nullptr;
    if (int(gate) + int(serving) + int(evidence) != 1) {
      out.push_back(path +
                    ": must have exactly one of gate (eval/ci stages), evidence (stages that "
                    "passed elsewhere) or serving (prod stage)");
      continue;
    }
    if (evidence) checkEvidenceStage(stage, path, out);
    if (const json* fleet = ja::child(&stage, "fleet"); fleet != nullptr) {
      const std::string* policy = ja::str(ja::child(fleet, "trustPolicy"));
      if (!serving) {
        out.push_back(path +
                      ".fleet: only the serving stage waits for a fleet's wave permit (its "
                      "canary starts once a permit names this cluster)");
      } else if (!fleet->is_object() || policy == nullptr || policy->empty()) {
        out.push_back(path +
                      ".fleet.trustPolicy: required: the TrustPolicy whose keys are trusted "
                      "for stage fleet (the hub's)");
      }
    }
    std::string nm = name != nullptr ? *name : "";
    if (serving && (nm == "eval" || nm == "ci")) {
      out.push_back(path + ".name: " + quoteModelReleaseValidator(nm) +
                    " is reserved for a gate stage, but the stage has serving");
    }
    if (gate && nm == "prod") {
      out.push_back(path +
                    ".name: \"prod\" is reserved for the serving stage, but the stage has gate");
    }
    if (serving) {
      if (servingAt) {
        out.push_back(path + ": only one serving stage is allowed (another at spec.stages[" +
                      std::to_string(*servingAt) + "])");
      } else {
        servingAt = i;
        if (i != n - 1) {
          out.push_back(path + ": the serving stage " + quoteModelReleaseValidator(nm) +
                        " must be the last stage (gates come before prod)");
        }
      }
      checkCanary(&stage, path, out);
    }
  }
}

// The Service port belongs to the model: a release may not serve on another
// port than the model's prod while another release runs it.
void checkServingPort(const json* spec, const ModelReleaseReview& r,
                      std::vector<std::string>& out) {
  if (!r.prod || r.prod->release.empty() || r.prod->port <= 0) return;
  std::string self = r.name.empty() ? ja::strOr(ja::at(r.release, {"metadata", "name"})) : r.name;
  if (r.prod->release == self) return;
  const json* stages = ja::child(spec, "stages");
  if (!ja::isArray(stages)) return;
  const std::string model = ja::strOr(ja::child(spec, "model"));
  for (std::size_t i = 0; i < stages->size(); ++i) {
    const json* serving = ja::child(&(*stages)[i], "serving");
    if (serving == nullptr || !serving->is_object()) continue;
    const json* port = ja::child(serving, "port");
    const long long want =
        port != nullptr && port->is_number_integer() ? port->get<long long>() : 8080;
    if (want == r.prod->port) continue;
    const std::string have = std::to_string(r.prod->port);
    out.push_back("spec.stages[" + std::to_string(i) + "].serving.port: " + std::to_string(want) +
                  " differs from port " + have + " on which model " +
                  quoteModelReleaseValidator(model) + " serves in prod (Service " +
                  quoteModelReleaseValidator(r.ns + "/" + model) + ", release " +
                  quoteModelReleaseValidator(r.prod->release) +
                  " runs prod): the Service port belongs to the model; keep port " + have +
                  ", or retire the model first (lockstep model delete " + model +
                  ") to serve it on another port");
  }
}

// An analysis naming a provider that does not exist (yet): a warning; the
// release measures errors until it does.
void adviseProviders(const json* spec, const ModelReleaseReview& r,
                     std::vector<std::string>& warnings) {
  if (r.providers == nullptr) return;
  const json* stages = ja::child(spec, "stages");
  if (!ja::isArray(stages)) return;
  auto advise = [&](const json* analysis, const std::string& path) {
    const std::string* name = ja::str(ja::at(analysis, {"prometheus", "provider"}));
    if (name == nullptr || name->empty() || r.providers->exists(*name)) return;
    warnings.push_back("lockstep: " + path + ".prometheus.provider: AnalysisProvider " +
                       quoteModelReleaseValidator(*name) +
                       " does not exist (yet); until it does, every measurement of it is an "
                       "error (kubectl get analysisproviders lists them)");
  };
  for (std::size_t i = 0; i < stages->size(); ++i) {
    const std::string path = "spec.stages[" + std::to_string(i) + "].canary";
    const json* canary = ja::child(&(*stages)[i], "canary");
    advise(ja::child(canary, "analysis"), path + ".analysis");
    const json* steps = ja::child(canary, "steps");
    if (!ja::isArray(steps)) continue;
    for (std::size_t j = 0; j < steps->size(); ++j)
      advise(ja::child(&(*steps)[j], "analysis"),
             path + ".steps[" + std::to_string(j) + "].analysis");
  }
}

// Tenancy of the analyses: the provider serves this namespace, runs free-form
// queries only if it says so; a template's arguments are its declared ones.
void checkAnalysisTenancy(const json* spec, const ModelReleaseReview& r,
                          std::vector<std::string>& violations,
                          std::vector<std::string>& warnings) {
  namespace v1 = api::v1alpha1;
  if (r.providers == nullptr) return;
  const json* stages = ja::child(spec, "stages");
  if (!ja::isArray(stages)) return;
  auto check = [&](const json* analysis, const std::string& path) {
    const json* p = ja::child(analysis, "prometheus");
    if (p == nullptr || !p->is_object()) return;
    const std::string where = path + ".prometheus";
    const std::string* provider = ja::str(ja::child(p, "provider"));
    const std::string* query = ja::str(ja::child(p, "query"));
    const std::string* templ = ja::str(ja::child(p, "template"));
    if (provider != nullptr && !provider->empty()) {
      if (auto ps = r.providers->providerSpec(*provider)) {
        auto decoded = v1::decodeAnalysisProviderSpec(*ps);
        if (decoded.isOk()) {
          if (r.namespaceLabels && !v1::providerServes(*decoded, *r.namespaceLabels))
            violations.push_back(where +
                                 ".provider: " + v1::providerRefusal(*provider, *decoded, r.ns));
          if (query != nullptr && !query->empty() && !decoded->allowFreeFormQueries)
            violations.push_back(where + ".query: AnalysisProvider " +
                                 quoteModelReleaseValidator(*provider) +
                                 " does not run free-form queries (its "
                                 "spec.allowFreeFormQueries is not true); name an "
                                 "AnalysisTemplate in " +
                                 where + ".template (kubectl get analysistemplates)");
        }
      }
    }
    if (templ == nullptr || templ->empty()) return;
    auto ts = r.providers->templateSpec(*templ);
    if (!ts) {
      warnings.push_back("lockstep: " + where + ".template: AnalysisTemplate " +
                         quoteModelReleaseValidator(*templ) +
                         " does not exist (yet); until it does, every measurement of it is an "
                         "error (kubectl get analysistemplates lists them)");
      return;
    }
    auto t = v1::decodeAnalysisTemplateSpec(*ts);
    if (!t.isOk()) {
      warnings.push_back("lockstep: " + where + ".template: AnalysisTemplate " +
                         quoteModelReleaseValidator(*templ) +
                         " is not usable: " + t.status().message());
      return;
    }
    std::map<std::string, std::string> given;
    if (const json* args = ja::child(p, "args"); args != nullptr && args->is_object()) {
      for (const auto& [k, v] : args->items()) {
        if (!v.is_string()) {
          violations.push_back(where + ".args." + k + ": must be a string");
          return;
        }
        given[k] = v.get<std::string>();
      }
    }
    auto checked = v1::checkTemplateArgs(*t, given, where);
    if (!checked.isOk()) violations.push_back(checked.status().message());
  };
  for (std::size_t i = 0; i < stages->size(); ++i) {
    const std::string path = "spec.stages[" + std::to_string(i) + "].canary";
    const json* canary = ja::child(&(*stages)[i], "canary");
    check(ja::child(canary, "analysis"), path + ".analysis");
    const json* steps = ja::child(canary, "steps");
    if (!ja::isArray(steps)) continue;
    for (std::size_t j = 0; j < steps->size(); ++j)
      check(ja::child(&(*steps)[j], "analysis"),
            path + ".steps[" + std::to_string(j) + "].analysis");
  }
}

// --- Pod templates: a container that names an image must name the RuntimeEnv's.

struct ContainerList {
  std::string_view field;  // in the pod spec
  std::string_view noun;   // in messages
};
constexpr ContainerList kTemplateContainers[] = {{"initContainers", "init container"},
                                                 {"containers", "container"}};

void checkTemplateImage(const std::string& path, const std::string& who, const std::string& image,
                        const ModelReleaseReview& r, const std::string& envId,
                        std::vector<std::string>& out, std::vector<std::string>& warnings) {
  const std::string unset = "leave image unset (the controller sets the RuntimeEnv's image)";
  StatusOr<ImageRef> found = parseImageRef(image);
  if (!found.isOk()) {
    out.push_back(path + ": " + who + " image " + quoteModelReleaseValidator(image) +
                  " is invalid (" + found.status().message() + "); " + unset);
    return;
  }
  if (!r.runtimeEnv) {
    if (!found->pinned()) {
      out.push_back(path + ": " + who + " image " + quoteModelReleaseValidator(image) +
                    " is not pinned by digest, so it can never be the RuntimeEnv's image; " +
                    unset);
    } else {
      warnings.push_back("lockstep: " + path + ": " + who + " image " +
                         quoteModelReleaseValidator(image) + " is not checked: RuntimeEnv " +
                         envId + " does not exist yet");
    }
    return;
  }
  StatusOr<ImageRef> expected = parseImageRef(r.runtimeEnv->image);
  if (!expected.isOk() || !expected->pinned()) {
    out.push_back(path + ": " + who + " image " + quoteModelReleaseValidator(image) +
                  " cannot match RuntimeEnv " + envId + " spec.image " +
                  quoteModelReleaseValidator(r.runtimeEnv->image) +
                  ", which is not pinned by digest; " + unset);
    return;
  }
  std::string want = "; expected " +
                     quoteModelReleaseValidator(expected->repository() + "@" + expected->digest) +
                     " (RuntimeEnv " + envId + " spec.image) or no image";
  if (!found->pinned()) {
    out.push_back(path + ": " + who + " image " + quoteModelReleaseValidator(image) +
                  " is not pinned by digest" + want);
  } else if (found->repository() != expected->repository()) {
    out.push_back(path + ": " + who + " image " + quoteModelReleaseValidator(image) +
                  " is not the image of RuntimeEnv " + envId + want);
  } else if (found->digest != expected->digest) {
    out.push_back(path + ": " + who + " image " + quoteModelReleaseValidator(image) +
                  " has digest " + quoteModelReleaseValidator(found->digest) + want);
  }
}

void checkTemplateImages(const json* spec, const ModelReleaseReview& r,
                         std::vector<std::string>& out, std::vector<std::string>& warnings) {
  const json* stages = ja::child(spec, "stages");
  if (!ja::isArray(stages)) return;
  std::string envName = ja::strOr(ja::at(spec, {"runtimeEnvRef", "name"}));
  std::string envId = quoteModelReleaseValidator(r.ns + "/" + envName);
  for (std::size_t i = 0; i < stages->size(); ++i) {
    const json* stage = &(*stages)[i];
    std::string stageName = ja::strOr(ja::child(stage, "name"));
    for (std::string_view kind : {"gate", "serving"}) {
      const json* podSpec = ja::at(stage, {kind, "template", "spec"});
      for (const ContainerList& list : kTemplateContainers) {
        const json* containers = ja::child(podSpec, list.field);
        if (!ja::isArray(containers)) continue;
        for (std::size_t j = 0; j < containers->size(); ++j) {
          const json* c = &(*containers)[j];
          const json* image = ja::child(c, "image");
          if (image == nullptr || image->is_null()) continue;
          std::string path = "spec.stages[" + std::to_string(i) + "]." + std::string(kind) +
                             ".template.spec." + std::string(list.field) + "[" + std::to_string(j) +
                             "]";
          std::string who = "stage " + quoteModelReleaseValidator(stageName) + " " +
                            std::string(list.noun) + " " +
                            quoteModelReleaseValidator(ja::strOr(ja::child(c, "name")));
          if (!image->is_string()) {
            out.push_back(path + ".image: " + who + ": must be a string");
          } else if (!image->get_ref<const std::string&>().empty()) {
            checkTemplateImage(path, who, image->get<std::string>(), r, envId, out, warnings);
          }
        }
      }
    }
  }
}

// --- Approvals and abort.

std::string releaseId(const ModelReleaseReview& r) {
  std::string name = r.name;
  if (name.empty()) name = ja::strOr(ja::at(r.release, {"metadata", "name"}));
  if (name.empty()) name = ja::strOr(ja::at(r.release, {"metadata", "generateName"})) + "*";
  return quoteModelReleaseValidator(r.ns + "/" + name);
}

std::vector<std::string> stageNames(const json* release) {
  std::vector<std::string> names;
  if (release == nullptr) return names;
  for (const api::v1alpha1::Stage& s : api::v1alpha1::decodeModelRelease(*release).spec.stages) {
    if (!s.name.empty()) names.push_back(s.name);
  }
  return names;
}

std::string annotationPath(const ReleaseAction& a) {
  return "metadata.annotations[" + quoteModelReleaseValidator(a.annotation) + "]";
}

// Actions only for the present (issue 29): a promote only for the current
// canary step while it is paused (promote-full: while in canary), a rollback
// only against the model's current prod revision, an approval only for a
// stage that waits for it. The release's status in an UPDATE is the stored
// one (the API server keeps it before admission); a CREATE has none, so only
// an abort may come with it. nullopt: the action is for now.
std::optional<std::string> notForNow(const ModelReleaseReview& r, const ReleaseAction& a) {
  namespace decode = api::v1alpha1::decode;
  if (a.kind == ReleaseActionKind::kAbort) return std::nullopt;
  const json& status = decode::object(*r.release, "status");
  const std::string phase = decode::string(status, "phase");
  if (a.kind == ReleaseActionKind::kPromote) {
    if (phase != api::v1alpha1::kPhaseCanary)
      return "the release is not in canary (phase " +
             quoteModelReleaseValidator(phase.empty() ? "unset" : phase) +
             "); a promote is for the step paused now";
    if (a.annotation == kPromoteFullAnnotation) return std::nullopt;
    // The step paused now, as status.canary records it: an unreadable one is
    // no step (never step 0).
    const api::v1alpha1::CanaryStatusRead read = api::v1alpha1::readReleaseCanary(*r.release);
    if (!read.error.empty())
      return "status.canary cannot be read (" + read.error +
             "): the step paused now is unknown; a promote waits until the status is repaired";
    const api::v1alpha1::CanaryStatus& canary = read.orEmpty();
    const int64_t at = canary.step.value_or(0);
    const std::string reason = canary.reason.value_or("");
    if (a.stage != std::to_string(at))
      return "the canary is at step " + std::to_string(at) + ", not step " + a.stage +
             "; a promote is for the step paused now (a promote written early would end a "
             "later pause the moment it is reached)";
    if (reason != api::v1alpha1::kReasonCanaryPaused &&
        reason != api::v1alpha1::kReasonAnalysisRunning)
      return "step " + a.stage + " is not paused (" +
             (reason.empty() ? std::string("not at its weight yet")
                             : "canary " + quoteModelReleaseValidator(reason)) +
             "); promote it once it pauses";
    return std::nullopt;
  }
  if (a.kind == ReleaseActionKind::kRollback) {
    if (!r.prod)
      return "model " +
             quoteModelReleaseValidator(
                 decode::string(decode::object(*r.release, "spec"), "model")) +
             " has no prod to roll back";
    const std::string current = std::to_string(r.prod->revision);
    if (a.stage != current)
      return "the model's prod is at revision " + current + ", not " + a.stage +
             " (a rollback is asked against prod as it is now; run `lockstep model rollback` "
             "again)";
    return std::nullopt;
  }
  // An approval: the stage must wait for it.
  for (const json& st : decode::array(status, "stages")) {
    if (decode::string(st, "name") != a.stage) continue;
    const std::string sp = decode::string(st, "phase");
    if (sp == api::v1alpha1::kStageWaitingForApproval) return std::nullopt;
    return "stage " + quoteModelReleaseValidator(a.stage) + " is " +
           quoteModelReleaseValidator(sp.empty() ? "Pending" : sp) +
           ", not WaitingForApproval; approve it once it waits (an approval given before "
           "the stage's gates ran approves what nobody has seen)";
  }
  return "stage " + quoteModelReleaseValidator(a.stage) +
         " has not been reached yet; approve it once it waits";
}

// The checks that need no authorizer. Problems go to `invalid` (the write is
// wrong) or `forbidden` (the user may not do this); true when there are none.
bool precheckAction(const ModelReleaseReview& r, const ReleaseAction& a,
                    const std::vector<std::string>& stages, std::vector<std::string>& invalid,
                    std::vector<std::string>& forbidden) {
  bool ok = true;
  if (a.kind == ReleaseActionKind::kApprove &&
      std::find(stages.begin(), stages.end(), a.stage) == stages.end()) {
    std::string known;
    for (const std::string& s : stages)
      known += (known.empty() ? "" : ", ") + quoteModelReleaseValidator(s);
    invalid.push_back(
        annotationPath(a) + ": " + quoteModelReleaseValidator(a.stage) +
        " is not a stage of this release (stages: " + (known.empty() ? "none" : known) + ")");
    ok = false;
  }
  if (a.kind == ReleaseActionKind::kPromote && a.annotation != kPromoteFullAnnotation) {
    bool digits =
        !a.stage.empty() && a.stage.size() <= 3 &&
        std::all_of(a.stage.begin(), a.stage.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) {
      invalid.push_back(annotationPath(a) + ": " + quoteModelReleaseValidator(a.stage) +
                        " is not a canary step index (promote.lockstep.dev/<0-based step>)");
      ok = false;
    }
  }
  if (a.kind == ReleaseActionKind::kRollback &&
      (a.stage.empty() || a.stage.size() > 18 ||
       !std::all_of(a.stage.begin(), a.stage.end(), [](char c) { return c >= '0' && c <= '9'; }))) {
    invalid.push_back(annotationPath(a) + ": " + quoteModelReleaseValidator(a.stage) +
                      " is not a prod revision of the model (rollback.lockstep.dev/<revision>, "
                      "as `lockstep model rollback` writes it)");
    ok = false;
  }
  if (ok) {
    if (auto why = notForNow(r, a)) {
      invalid.push_back(annotationPath(a) + ": " + *why);
      ok = false;
    }
  }
  if (r.user.username.empty()) {
    forbidden.push_back(annotationPath(a) +
                        ": the request has no authenticated user name to record");
    ok = false;
  } else if (a.kind == ReleaseActionKind::kApprove && !r.approvalRules.serviceAccountsApprove &&
             api::v1alpha1::isServiceAccountUser(r.user.username)) {
    forbidden.push_back(annotationPath(a) + ": " + quoteModelReleaseValidator(r.user.username) +
                        " is a ServiceAccount: approvers are people (anyone who may create a "
                        "ServiceAccount could approve as many times as they like); approve as "
                        "yourself, or the platform sets the chart value "
                        "approvals.allowServiceAccounts");
    ok = false;
  } else if (a.value != r.user.username) {
    std::string recorded = a.kind == ReleaseActionKind::kAbort     ? "who aborted"
                           : a.kind == ReleaseActionKind::kPromote ? "who promoted"
                           : a.kind == ReleaseActionKind::kRollback
                               ? "who rolled the model back"
                               : "the approver of stage " + quoteModelReleaseValidator(a.stage);
    forbidden.push_back(annotationPath(a) + ": value " + quoteModelReleaseValidator(a.value) +
                        " must be your own user name " +
                        quoteModelReleaseValidator(r.user.username) + " (it records " + recorded +
                        ")");
    ok = false;
  }
  return ok;
}

void checkActionAccess(const ModelReleaseReview& r, const ReleaseAction& a,
                       std::vector<std::string>& forbidden) {
  const std::string verb(a.verb());
  const std::string user = quoteModelReleaseValidator(r.user.username);
  const std::string need = "RBAC verb " + quoteModelReleaseValidator(verb) + " on resource " +
                           quoteModelReleaseValidator(kModelReleasesResource) + " in API group " +
                           quoteModelReleaseValidator(kLockstepGroup) +
                           " is required (the ClusterRole " + std::string(kApproverClusterRole) +
                           " grants it)";
  auto it = r.access.find(verb);
  if (it == r.access.end()) {
    forbidden.push_back(annotationPath(a) + ": permission to " + verb + " was not checked; " +
                        need);
  } else if (!it->second.isOk()) {
    forbidden.push_back(annotationPath(a) + ": cannot check whether user " + user + " may " + verb +
                        " ModelRelease " + releaseId(r) + " (SubjectAccessReview failed: " +
                        it->second.status().message() + "); refused, try again");
  } else if (!it->second->allowed) {
    std::string said;
    if (!it->second->reason.empty()) said += "; authorizer: " + it->second->reason;
    if (!it->second->evaluationError.empty())
      said += "; evaluation error: " + it->second->evaluationError;
    forbidden.push_back(annotationPath(a) + ": user " + user + " may not " + verb +
                        " ModelRelease " + releaseId(r) + ": " + need + said);
  }
}

bool reviewed(const ModelReleaseReview& r) {
  return r.release != nullptr && r.release->is_object() &&
         (r.operation == Operation::kCreate || r.operation == Operation::kUpdate) &&
         r.subResource.empty();
}

// The Secret spec.registryTags names when the tags are on ("" otherwise).
std::string registrySecretOf(const json* release) {
  const json* tags = ja::at(release, {"spec", "registryTags"});
  if (tags == nullptr || !tags->is_object()) return "";
  const json* enabled = ja::child(tags, "enabled");
  if (enabled != nullptr && enabled->is_boolean() && !enabled->get<bool>()) return "";
  return ja::strOr(ja::at(tags, {"secretRef", "name"}));
}

void checkSecretAccess(const ModelReleaseReview& r, std::vector<std::string>& forbidden) {
  const std::optional<AccessRequest> q = secretAccessRequestFor(r);
  if (!q) return;
  const std::string path = "spec.registryTags.secretRef.name";
  const std::string secret = quoteModelReleaseValidator(r.ns + "/" + q->name);
  const std::string user = quoteModelReleaseValidator(r.user.username);
  const std::string need =
      "RBAC verb \"get\" on resource \"secrets\" (core API group) for Secret " + secret +
      " is required to name it: the operator would push this release's registry tags with "
      "credentials its author cannot read";
  if (!r.secretAccess) {
    forbidden.push_back(path + ": permission to get Secret " + secret + " was not checked; " +
                        need);
  } else if (!r.secretAccess->isOk()) {
    forbidden.push_back(path + ": cannot check whether user " + user + " may get Secret " + secret +
                        " (SubjectAccessReview failed: " + r.secretAccess->status().message() +
                        "); refused, try again");
  } else if (!(*r.secretAccess)->allowed) {
    std::string said;
    if (!(*r.secretAccess)->reason.empty()) said = "; authorizer: " + (*r.secretAccess)->reason;
    forbidden.push_back(path + ": user " + user + " may not get Secret " + secret + ": " + need +
                        said);
  }
}

}  // namespace

std::optional<AccessRequest> secretAccessRequestFor(const ModelReleaseReview& r) {
  if (!reviewed(r)) return std::nullopt;
  const std::string secret = registrySecretOf(r.release);
  if (secret.empty()) return std::nullopt;
  // An UPDATE that keeps the Secret (and the tags on) was checked when it was named.
  if (r.operation == Operation::kUpdate && r.oldRelease != nullptr &&
      registrySecretOf(r.oldRelease) == secret)
    return std::nullopt;
  AccessRequest q;
  q.user = r.user;
  q.verb = "get";
  q.group = "";
  q.resource = "secrets";
  q.ns = r.ns;
  q.name = secret;
  return q;
}

std::set<std::string> verbsToAuthorize(const ModelReleaseReview& r) {
  std::set<std::string> verbs;
  if (!reviewed(r)) return verbs;
  std::vector<std::string> stages = stageNames(r.release), scratch;
  for (const ReleaseAction& a : changedReleaseActions(r.release, r.oldRelease)) {
    if (precheckAction(r, a, stages, scratch, scratch)) verbs.emplace(a.verb());
  }
  return verbs;
}

AccessRequest accessRequestFor(const ModelReleaseReview& r, std::string_view verb) {
  AccessRequest q;
  q.user = r.user;
  q.verb = std::string(verb);
  q.group = std::string(kLockstepGroup);
  q.resource = std::string(kModelReleasesResource);
  q.ns = r.ns;
  q.name = r.name.empty() ? ja::strOr(ja::at(r.release, {"metadata", "name"})) : r.name;
  return q;
}

std::optional<std::string> modelReleaseRuntimeEnvName(const json& release) {
  std::string name = api::v1alpha1::decodeModelRelease(release).spec.runtimeEnvName;
  if (name.empty()) return std::nullopt;
  return name;
}

Verdict validateModelRelease(const ModelReleaseReview& r) {
  // The status subresource is the operator's, not the user's.
  if (!reviewed(r)) return Verdict{};

  Verdict v;
  v.checked = true;
  const json* spec = ja::child(r.release, "spec");
  if (spec == nullptr || !spec->is_object()) {
    v.violations.emplace_back("spec: required");
  } else {
    const bool update = r.operation == Operation::kUpdate;
    const json* oldSpec = ja::child(r.oldRelease, "spec");
    checkPackage(spec, v.violations);
    checkClosureHash(spec, v.violations);
    const std::string* envName = ja::str(ja::at(spec, {"runtimeEnvRef", "name"}));
    if (envName == nullptr || envName->empty()) {
      v.violations.emplace_back("spec.runtimeEnvRef.name: required");
    }
    checkModel(spec, v.violations);
    if (update && r.oldRelease != nullptr) {
      checkImmutable(spec, oldSpec, v.violations);
      checkReleasedContent(r.release, r.oldRelease, v.violations);
    }
    const json* stages = ja::child(spec, "stages");
    const json* oldStages = ja::child(oldSpec, "stages");
    bool stagesChanged = !update || r.oldRelease == nullptr || stages == nullptr ||
                         oldStages == nullptr || *stages != *oldStages;
    if (stagesChanged) {
      checkStages(spec, v.violations);
      checkTemplateImages(spec, r, v.violations, v.warnings);
      adviseAnalyses(spec, v.warnings);
      checkAnalysisSources(spec, r.allowPrometheusAddress, v.violations);
      checkServingPort(spec, r, v.violations);
      adviseProviders(spec, r, v.warnings);
      checkAnalysisTenancy(spec, r, v.violations, v.warnings);
    }

    const std::string* hash = ja::str(ja::child(spec, "closureHash"));
    if (envName != nullptr && !envName->empty()) {
      std::string envId = quoteModelReleaseValidator(r.ns + "/" + *envName);
      if (!r.runtimeEnv) {
        v.warnings.push_back("lockstep: spec.runtimeEnvRef.name: RuntimeEnv " + envId +
                             " does not exist yet; the release waits for it");
      } else if (!r.runtimeEnv->ready || r.runtimeEnv->closureHash.empty()) {
        v.warnings.push_back("lockstep: spec.runtimeEnvRef.name: RuntimeEnv " + envId +
                             " is not Ready yet; spec.closureHash is checked when it is");
      } else if (hash != nullptr && isSha256Digest(*hash) && *hash != r.runtimeEnv->closureHash) {
        std::string m = "spec.closureHash: " + quoteModelReleaseValidator(*hash) +
                        " differs from RuntimeEnv " + envId + " status.closureHash " +
                        quoteModelReleaseValidator(r.runtimeEnv->closureHash) +
                        "; the package was built for another runtime closure";
        if (update) {
          v.warnings.push_back("lockstep: " + m + " (release is stale)");
        } else {
          v.violations.push_back(m);
        }
      }
    }
  }
  std::vector<std::string> forbidden;
  std::vector<std::string> stages = stageNames(r.release);
  for (const ReleaseAction& a : changedReleaseActions(r.release, r.oldRelease)) {
    if (precheckAction(r, a, stages, v.violations, forbidden)) checkActionAccess(r, a, forbidden);
  }
  checkApprovalRules(r, v.violations, forbidden, v.warnings);
  checkSecretAccess(r, forbidden);
  const bool invalid = !v.violations.empty();
  v.violations.insert(v.violations.end(), forbidden.begin(), forbidden.end());
  if (!v.violations.empty()) {
    std::string joined;
    for (const std::string& s : v.violations) joined += (joined.empty() ? "" : "; ") + s;
    v.decision = Decision::kDenied;
    if (invalid) {
      v.code = 422;
      v.reason = "Invalid";
      v.message = "lockstep: ModelRelease " + releaseId(r) + " is invalid: " + joined;
    } else {
      v.code = 403;
      v.reason = "Forbidden";
      v.message = "lockstep: ModelRelease " + releaseId(r) + ": " + joined;
    }
  } else if (!v.warnings.empty()) {
    v.decision = Decision::kWarned;
  }
  return v;
}

}  // namespace lockstep::webhooks
