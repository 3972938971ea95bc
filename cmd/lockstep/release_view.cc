#include "cmd/lockstep/release_view.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "api/v1alpha1/approval.h"
#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/model_package.h"
#include "webhooks/admission/release_actions.h"

namespace lockstep::cli {
namespace {

using nlohmann::json;
namespace lw = lockstep::webhooks;

// Tolerant readers: a field of an unexpected type reads as absent.
const json* child(const json* o, const char* key) {
  if (o == nullptr || !o->is_object()) return nullptr;
  auto it = o->find(key);
  return it == o->end() ? nullptr : &*it;
}
const json* at(const json* o, std::initializer_list<const char*> path) {
  for (const char* k : path) o = child(o, k);
  return o;
}
std::string str(const json* o) {
  return o != nullptr && o->is_string() ? o->get<std::string>() : "";
}
std::string str(const json* o, std::initializer_list<const char*> path) { return str(at(o, path)); }
std::string str(const json& o, std::initializer_list<const char*> path) {
  return str(at(&o, path));
}
const json& arrayAt(const json& o, std::initializer_list<const char*> path) {
  static const json kEmpty = json::array();
  const json* a = at(&o, path);
  return a != nullptr && a->is_array() ? *a : kEmpty;
}

std::string quote(const std::string& s) { return "\"" + s + "\""; }

// A JSON scalar as text: numbers as JSON writes them, strings bare.
std::string scalar(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

const json* stageStatus(const json& release, const std::string& stage) {
  for (const json& s : arrayAt(release, {"status", "stages"})) {
    if (str(s, {"name"}) == stage) return &s;
  }
  return nullptr;
}

// Stage names: the spec's order, then any stage only the status knows.
std::vector<std::string> stageNames(const json& release) {
  std::vector<std::string> names;
  for (const json& s : arrayAt(release, {"spec", "stages"})) {
    if (std::string n = str(s, {"name"}); !n.empty()) names.push_back(n);
  }
  for (const json& s : arrayAt(release, {"status", "stages"})) {
    std::string n = str(s, {"name"});
    if (!n.empty() && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  return names;
}

const json* specStage(const json& release, const std::string& stage) {
  for (const json& s : arrayAt(release, {"spec", "stages"})) {
    if (str(s, {"name"}) == stage) return &s;
  }
  return nullptr;
}

namespace v1 = lockstep::api::v1alpha1;

// The stage's approval policy, in either form ("Manual" or {policy: Manual,
// minApprovers: N, ...}); a malformed one reads as Automatic (the webhook
// refuses it on write).
v1::ApprovalPolicy approvalPolicy(const json& release, const std::string& stage) {
  v1::ApprovalPolicy policy;
  const json* s = specStage(release, stage);
  if (s == nullptr || v1::decodeApprovalPolicy(*s, "stage", policy)) return v1::ApprovalPolicy{};
  return policy;
}

bool isManual(const json& release, const std::string& stage) {
  return approvalPolicy(release, stage).manual;
}

// The key of approval slot `k` of `stage`: approve.lockstep.dev/<stage>[.<k>].
std::string approvalSlot(const std::string& stage, int k) {
  std::string key = lw::approveAnnotation(stage);
  return k == 1 ? key : key + "." + std::to_string(k);
}

std::string annotation(const json& release, const std::string& key) {
  return str(child(at(&release, {"metadata", "annotations"}), key.c_str()));
}

// The first 12 hex digits of a reference's digest ("sha256:ab12…" → "ab12cd34ef56").
std::string shortDigest(const std::string& ref) {
  auto at = ref.find("@sha256:");
  if (at == std::string::npos) return ref;
  return ref.substr(at + 8, 12);
}

std::string readyOf(const json& release) {
  for (const json& c : arrayAt(release, {"status", "conditions"})) {
    if (str(c, {"type"}) == "Ready") return str(c, {"status"});
  }
  return "";
}

bool terminal(const std::string& phase) {
  return phase == "Validated" || phase == "Failed" || phase == "RolledBack" ||
         phase == "Superseded";
}

}  // namespace

std::string renderTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::vector<std::string>> cells = rows;
  std::vector<size_t> width;
  for (auto& row : cells) {
    for (size_t i = 0; i < row.size(); ++i) {
      std::string& c = row[i];
      std::replace(c.begin(), c.end(), '\n', ' ');
      if (c.empty()) c = "-";
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], c.size());
    }
  }
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string formatAge(const std::string& rfc3339, kube::Clock::WallTime now) {
  kube::Clock::WallTime t;
  if (rfc3339.empty() || !kube::parseTime(rfc3339, &t)) return "<unknown>";
  long long s = std::chrono::duration_cast<std::chrono::seconds>(now - t).count();
  constexpr long long kMinute = 60, kHour = 60 * kMinute, kDay = 24 * kHour;
  if (s < 0) s = 0;
  if (s < 2 * kMinute) return std::to_string(s) + "s";
  if (s < 2 * kHour) return std::to_string(s / kMinute) + "m";
  if (s < 2 * kDay) return std::to_string(s / kHour) + "h";
  return std::to_string(s / kDay) + "d";
}

std::string releaseId(const json& release) {
  return str(release, {"metadata", "namespace"}) + "/" + str(release, {"metadata", "name"});
}

std::string stagePhase(const json& release, const std::string& stage) {
  const json* s = stageStatus(release, stage);
  std::string phase = s != nullptr ? str(s, {"phase"}) : "";
  return phase.empty() ? "Pending" : phase;
}

std::string renderReleaseList(const json& list, bool allNamespaces, kube::Clock::WallTime now) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"NAME", "MODEL", "PHASE", "STAGE", "READY", "PACKAGE", "AGE"};
  if (allNamespaces) header.insert(header.begin(), "NAMESPACE");
  rows.push_back(header);
  std::vector<const json*> items;
  for (const json& r : arrayAt(list, {"items"})) items.push_back(&r);
  std::sort(items.begin(), items.end(),
            [](const json* a, const json* b) { return releaseId(*a) < releaseId(*b); });
  for (const json* r : items) {
    std::vector<std::string> row = {str(*r, {"metadata", "name"}),
                                    str(*r, {"spec", "model"}),
                                    str(*r, {"status", "phase"}),
                                    str(*r, {"status", "currentStage"}),
                                    readyOf(*r),
                                    shortDigest(str(*r, {"spec", "package"})),
                                    formatAge(str(*r, {"metadata", "creationTimestamp"}), now)};
    if (allNamespaces) row.insert(row.begin(), str(*r, {"metadata", "namespace"}));
    rows.push_back(std::move(row));
  }
  if (rows.size() == 1) return "No ModelReleases found.\n";
  return renderTable(rows);
}

namespace {

// status.package in one line: "ModelPack: safetensors transformer, 100m parameters,
// float32; 3 layers, 1250000 bytes" ("" when the operator has not read the package).
std::string describePackage(const json& release) {
  const json* status = release.contains("status") ? &release["status"] : nullptr;
  if (status == nullptr || !status->is_object() || !status->contains("package")) return "";
  auto info = v1::decodePackageInfo((*status)["package"]);
  if (!info) return "";
  std::string out = info->kind;
  if (info->model) {
    const v1::ModelPackConfig& m = *info->model;
    std::vector<std::string> parts;
    std::string what = m.format;
    if (!m.architecture.empty()) what += (what.empty() ? "" : " ") + m.architecture;
    if (!what.empty()) parts.push_back(what);
    if (!m.paramSize.empty()) parts.push_back(m.paramSize + " parameters");
    if (!m.precision.empty()) parts.push_back(m.precision);
    if (!m.quantization.empty()) parts.push_back(m.quantization);
    std::string joined;
    for (const auto& p : parts) joined += (joined.empty() ? "" : ", ") + p;
    if (!joined.empty()) out += ": " + joined;
  }
  out += (info->model ? "; " : ": ") + std::to_string(info->layers) +
         (info->kind == v1::kPackageKindImageIndex ? " manifests" : " layers") + ", " +
         std::to_string(info->size) + " bytes";
  return out;
}

}  // namespace

std::string renderReleaseStatus(const json& release) {
  std::ostringstream os;
  std::vector<std::vector<std::string>> summary = {
      {"Name:", str(release, {"metadata", "name"})},
      {"Namespace:", str(release, {"metadata", "namespace"})},
      {"Model:", str(release, {"spec", "model"})},
      {"Package:", str(release, {"spec", "package"})},
      {"RuntimeEnv:", str(release, {"spec", "runtimeEnvRef", "name"})},
      {"Closure hash:", str(release, {"spec", "closureHash"})},
      {"Phase:", str(release, {"status", "phase"})},
      {"Current stage:", str(release, {"status", "currentStage"})},
  };
  for (auto [label, path] :
       {std::pair{"Validated on:", "validatedClosureHash"},
        std::pair{"Package mount:", "packageMount"}, std::pair{"Promoted:", "promotedPackage"},
        std::pair{"Previous:", "previousRelease"}}) {
    if (std::string v = str(release, {"status", path}); !v.empty()) summary.push_back({label, v});
  }
  if (std::string kind = describePackage(release); !kind.empty())
    summary.insert(summary.begin() + 4, {"Package kind:", kind});
  if (std::string by = annotation(release, std::string(lw::kAbortAnnotation)); !by.empty())
    summary.push_back({"Abort requested by:", by});
  // Summary values are never "-"-padded: the header row of renderTable is data here.
  for (const auto& row : summary) {
    std::string label = row[0];
    label.resize(std::max<size_t>(label.size() + 1, 20), ' ');
    os << label << (row[1].empty() ? "-" : row[1]) << "\n";
  }

  std::vector<std::vector<std::string>> stages = {
      {"STAGE", "PHASE", "ATTEMPT", "JOB", "STARTED", "FINISHED", "APPROVAL", "MESSAGE"}};
  std::vector<std::vector<std::string>> metrics = {{"STAGE", "METRIC", "VALUE"}};
  std::vector<std::vector<std::string>> evidence = {
      {"STAGE", "PACKAGE", "CLOSURE HASH", "IMAGE", "JOB UID"}};
  for (const std::string& name : stageNames(release)) {
    const json* st = stageStatus(release, name);
    const json empty = json::object();
    const json& s = st != nullptr ? *st : empty;
    std::string approval;
    if (std::string by = str(s, {"approvedBy"}); !by.empty()) {
      approval = "approved by " + by;
    } else if (v1::ApprovalPolicy policy = approvalPolicy(release, name); policy.manual) {
      std::string users;
      for (const v1::StageApproval& a : v1::stageApprovals(release, name))
        if (!a.user.empty()) users += (users.empty() ? "" : ", ") + a.user;
      approval = policy.minApprovers > 1
                     ? "Manual (" + std::to_string(policy.minApprovers) + " approvers)"
                     : "Manual";
      if (!users.empty()) approval += " (approved by " + users + ", pending)";
    }
    const json* attempt = child(&s, "attempt");
    stages.push_back({name, stagePhase(release, name),
                      attempt != nullptr && attempt->is_number() ? attempt->dump() : "",
                      str(s, {"jobName"}), str(s, {"startedAt"}), str(s, {"finishedAt"}), approval,
                      str(s, {"message"})});
    if (const json* m = child(&s, "metrics"); m != nullptr && m->is_object()) {
      for (const auto& [metric, value] : m->items())
        metrics.push_back({name, metric, scalar(value)});
    }
    if (const json* e = child(&s, "evidence"); e != nullptr && e->is_object()) {
      evidence.push_back({name, str(e, {"package"}), str(e, {"closureHash"}), str(e, {"image"}),
                          str(e, {"jobUID"})});
    }
  }
  os << "\nStages:\n" << renderTable(stages);
  if (metrics.size() > 1) os << "\nMetrics:\n" << renderTable(metrics);
  if (evidence.size() > 1) os << "\nEvidence:\n" << renderTable(evidence);
  std::vector<std::vector<std::string>> conditions = {
      {"TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"}};
  for (const json& c : arrayAt(release, {"status", "conditions"})) {
    conditions.push_back({str(c, {"type"}), str(c, {"status"}), str(c, {"reason"}),
                          str(c, {"lastTransitionTime"}), str(c, {"message"})});
  }
  if (conditions.size() > 1) os << "\nConditions:\n" << renderTable(conditions);
  return os.str();
}

StatusOr<ActionPlan> planApproval(const json& release, const std::string& requestedStage,
                                  const std::string& user) {
  const std::string id = quote(releaseId(release));
  std::vector<std::string> names = stageNames(release);
  std::string stage = requestedStage;
  if (!stage.empty()) {
    if (specStage(release, stage) == nullptr) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      return invalidArgument("release " + id + " has no stage " + quote(stage) +
                             " (stages: " + (known.empty() ? "none" : known) + ")");
    }
    if (std::string phase = stagePhase(release, stage); phase != "WaitingForApproval") {
      std::string hint;
      if (!isManual(release, stage)) hint = "; it does not require approval";
      if (std::string by = str(stageStatus(release, stage), {"approvedBy"}); !by.empty())
        hint = "; it was approved by " + by;
      return invalidArgument("stage " + quote(stage) + " of release " + id +
                             " is not waiting for approval (phase: " + phase + hint + ")");
    }
  } else {
    std::vector<std::string> waiting;
    std::string phases;
    for (const auto& n : names) {
      std::string phase = stagePhase(release, n);
      if (phase == "WaitingForApproval") waiting.push_back(n);
      phases += (phases.empty() ? "" : ", ") + n + " " + phase;
    }
    if (waiting.empty()) {
      std::string phase = str(release, {"status", "phase"});
      return invalidArgument("no stage of release " + id + " is waiting for approval (phase: " +
                             (phase.empty() ? "unknown" : phase) +
                             "; stages: " + (phases.empty() ? "none" : phases) + ")");
    }
    if (waiting.size() > 1) {
      std::string list;
      for (const auto& w : waiting) list += (list.empty() ? "" : ", ") + w;
      return invalidArgument("several stages of release " + id + " wait for approval (" + list +
                             "): name one");
    }
    stage = waiting[0];
  }
  ActionPlan plan;
  plan.stage = stage;
  const v1::ApprovalPolicy policy = approvalPolicy(release, stage);
  const std::vector<v1::StageApproval> approvals = v1::stageApprovals(release, stage);
  for (const v1::StageApproval& a : approvals) {
    if (a.user == user) {  // approved already (in any slot): nothing to write
      plan.annotation = a.annotation;
      plan.alreadyBy = user;
      return plan;
    }
  }
  // Separation of duties, said before the write the webhook would refuse.
  if (!policy.allowSelfApproval && v1::releaseCreator(release) == user) {
    return invalidArgument("stage " + quote(stage) + " of release " + id + " was created by " +
                           quote(user) +
                           ", who cannot approve it (approval.allowSelfApproval is false): "
                           "another user must approve");
  }
  // The first free slot: approve.lockstep.dev/<stage>, then <stage>.2, <stage>.3, ...
  std::set<std::string> taken;
  for (const v1::StageApproval& a : approvals) taken.insert(a.annotation);
  if (policy.minApprovers <= 1 && taken.count(approvalSlot(stage, 1)) > 0) {
    return invalidArgument("stage " + quote(stage) + " of release " + id +
                           " was already approved by " +
                           quote(annotation(release, approvalSlot(stage, 1))) +
                           "; the controller has not acted on it yet");
  }
  for (int k = 1; k <= v1::kMaxApprovers; ++k) {
    if (taken.count(approvalSlot(stage, k)) == 0) {
      plan.annotation = approvalSlot(stage, k);
      return plan;
    }
  }
  return invalidArgument("stage " + quote(stage) + " of release " + id + " has all " +
                         std::to_string(v1::kMaxApprovers) + " approval slots taken");
}

StatusOr<ActionPlan> planAbort(const json& release) {
  std::string phase = str(release, {"status", "phase"});
  if (terminal(phase) || phase == "Promoted") {
    return invalidArgument("release " + quote(releaseId(release)) +
                           " already ended (phase: " + phase + "); there is nothing to abort");
  }
  ActionPlan plan;
  plan.annotation = std::string(lw::kAbortAnnotation);
  plan.alreadyBy = annotation(release, plan.annotation);
  return plan;
}

StatusOr<ActionPlan> planPromote(const json& release, bool full, const std::string& user) {
  std::string phase = str(release, {"status", "phase"});
  std::string id = quote(releaseId(release));
  if (phase != "Canary") {
    return invalidArgument("release " + id + " is not in its canary (phase: " +
                           (phase.empty() ? std::string("none yet") : phase) +
                           "); only a release in phase Canary can be promoted");
  }
  ActionPlan plan;
  if (full) {
    plan.annotation = std::string(lw::kPromoteFullAnnotation);
  } else {
    // The step the canary is at: its annotation names it, so an unreadable
    // status.canary is refused rather than read as step 0.
    const v1::CanaryStatusRead canary = v1::readReleaseCanary(release);
    if (!canary.error.empty())
      return invalidArgument("release " + id + ": status.canary cannot be read (" + canary.error +
                             "); the canary's step is unknown");
    const int64_t index = canary.get() != nullptr ? canary.get()->step.value_or(0) : 0;
    plan.stage = std::to_string(index);
    plan.annotation = std::string(lw::kPromoteAnnotationPrefix) + plan.stage;
  }
  if (std::string by = annotation(release, plan.annotation); !by.empty()) {
    if (by != user) {
      return invalidArgument("release " + id + " was already promoted (" + plan.annotation +
                             ") by " + quote(by) + "; the controller has not acted on it yet");
    }
    plan.alreadyBy = by;
  }
  return plan;
}

WaitState waitState(const json& release, const std::string& phase) {
  std::string now = str(release, {"status", "phase"});
  if (now == phase) return WaitState::kReached;
  if (terminal(now)) return WaitState::kEndedElsewhere;
  return WaitState::kWaiting;
}

std::string releaseSummary(const json& release) {
  std::string phase = str(release, {"status", "phase"});
  std::string out = "phase " + (phase.empty() ? std::string("unknown (no status yet)") : phase);
  std::string stage = str(release, {"status", "currentStage"});
  if (!stage.empty()) {
    out += ", stage " + stage + " " + stagePhase(release, stage);
    if (std::string m = str(stageStatus(release, stage), {"message"}); !m.empty()) out += ": " + m;
  }
  // The reason of a Stalled condition says why a release ended.
  for (const json& c : arrayAt(release, {"status", "conditions"})) {
    if (str(c, {"type"}) == "Stalled" && str(c, {"status"}) == "True") {
      out += " (" + str(c, {"reason"}) + ": " + str(c, {"message"}) + ")";
    }
  }
  return out;
}

}  // namespace lockstep::cli
