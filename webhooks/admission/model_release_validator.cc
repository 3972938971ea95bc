#include "webhooks/admission/model_release_validator.h"

#include <map>
#include <string_view>
#include <vector>

#include "api/image_ref.h"
#include "webhooks/admission/json_access.h"

namespace lockstep::webhooks {
namespace {

namespace ja = json_access;
using api::ImageRef;
using api::isSha256Digest;
using api::parseImageRef;
using nlohmann::json;

std::string quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

bool isDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

std::string describe(const json* v) {
  if (v == nullptr || v->is_null()) return "<unset>";
  if (v->is_string()) return quote(v->get_ref<const std::string&>());
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
    out.push_back("spec.package: " + quote(*s) +
                  " is not a valid OCI reference: " + ref.status().message());
  } else if (!ref->pinned() || !ref->tag.empty()) {
    out.push_back("spec.package: " + quote(*s) +
                  " must be a reference by digest only (repo@sha256:<64 hex>), without a tag");
  }
}

void checkClosureHash(const json* spec, std::vector<std::string>& out) {
  const std::string* s = ja::str(ja::child(spec, "closureHash"));
  if (s == nullptr || s->empty()) {
    out.emplace_back(
        "spec.closureHash: required: sha256:<64 lowercase hex> from the package's runtime.json");
  } else if (!isSha256Digest(*s)) {
    out.push_back("spec.closureHash: " + quote(*s) + " is not sha256:<64 lowercase hex>");
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
      out.push_back(path + ".name: " + quote(*name) +
                    " must be a DNS label (lowercase alphanumerics and '-', at most 63)");
    } else if (auto [it, inserted] = seen.emplace(*name, i); !inserted) {
      out.push_back(path + ".name: duplicate stage name " + quote(*name) +
                    " (first at spec.stages[" + std::to_string(it->second) + "].name)");
    }
    bool gate = ja::child(&stage, "gate") != nullptr;
    bool serving = ja::child(&stage, "serving") != nullptr;
    if (gate == serving) {
      out.push_back(path +
                    ": must have exactly one of gate (eval/ci stages) or serving (prod stage)");
      continue;
    }
    std::string nm = name != nullptr ? *name : "";
    if (serving && (nm == "eval" || nm == "ci")) {
      out.push_back(path + ".name: " + quote(nm) +
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
          out.push_back(path + ": the serving stage " + quote(nm) +
                        " must be the last stage (gates come before prod)");
        }
      }
      checkCanary(&stage, path, out);
    }
  }
}

}  // namespace

std::optional<std::string> modelReleaseRuntimeEnvName(const json& release) {
  const std::string* s = ja::str(ja::at(&release, {"spec", "runtimeEnvRef", "name"}));
  if (s == nullptr || s->empty()) return std::nullopt;
  return *s;
}

Verdict validateModelRelease(const ModelReleaseReview& r) {
  if (r.release == nullptr || !r.release->is_object()) return Verdict{};
  if (r.operation != Operation::kCreate && r.operation != Operation::kUpdate) return Verdict{};
  if (!r.subResource.empty()) return Verdict{};  // status is the operator's, not the user's

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
    if (update && r.oldRelease != nullptr) checkImmutable(spec, oldSpec, v.violations);
    const json* stages = ja::child(spec, "stages");
    const json* oldStages = ja::child(oldSpec, "stages");
    bool stagesChanged = !update || r.oldRelease == nullptr || stages == nullptr ||
                         oldStages == nullptr || *stages != *oldStages;
    if (stagesChanged) checkStages(spec, v.violations);

    const std::string* hash = ja::str(ja::child(spec, "closureHash"));
    if (envName != nullptr && !envName->empty()) {
      std::string envId = quote(r.ns + "/" + *envName);
      if (!r.runtimeEnv) {
        v.warnings.push_back("lockstep: spec.runtimeEnvRef.name: RuntimeEnv " + envId +
                             " does not exist yet; the release waits for it");
      } else if (!r.runtimeEnv->ready || r.runtimeEnv->closureHash.empty()) {
        v.warnings.push_back("lockstep: spec.runtimeEnvRef.name: RuntimeEnv " + envId +
                             " is not Ready yet; spec.closureHash is checked when it is");
      } else if (hash != nullptr && isSha256Digest(*hash) && *hash != r.runtimeEnv->closureHash) {
        std::string m = "spec.closureHash: " + quote(*hash) + " differs from RuntimeEnv " + envId +
                        " status.closureHash " + quote(r.runtimeEnv->closureHash) +
                        "; the package was built for another runtime closure";
        if (update) {
          v.warnings.push_back("lockstep: " + m + " (release is stale)");
        } else {
          v.violations.push_back(m);
        }
      }
    }
  }
  if (!v.violations.empty()) {
    std::string name = ja::strOr(ja::at(r.release, {"metadata", "name"}));
    if (name.empty()) name = ja::strOr(ja::at(r.release, {"metadata", "generateName"})) + "*";
    std::string joined;
    for (const std::string& s : v.violations) joined += (joined.empty() ? "" : "; ") + s;
    v.decision = Decision::kDenied;
    v.code = 422;
    v.reason = "Invalid";
    v.message = "lockstep: ModelRelease " + quote(r.ns + "/" + name) + " is invalid: " + joined;
  } else if (!v.warnings.empty()) {
    v.decision = Decision::kWarned;
  }
  return v;
}

}  // namespace lockstep::webhooks
