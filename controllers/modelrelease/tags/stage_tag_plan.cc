#include "controllers/modelrelease/tags/stage_tag_plan.h"

#include <algorithm>

#include "api/image_ref.h"
#include "api/v1alpha1/model_release.h"
#include "controllers/modelrelease/timestamps.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;
using v1::kPhasePromoted;
using v1::kPhaseRolledBack;
using v1::kStageSucceeded;

constexpr int64_t kFirstBackoffSeconds = 10;
constexpr int64_t kMaxBackoffSeconds = 300;

std::string str(const json& o, const char* key) { return v1::decode::string(o, key); }

const json* entryOfStageTagPlan(const json& entries, const std::string& tag) {
  if (!entries.is_array()) return nullptr;
  for (const json& e : entries)
    if (str(e, "tag") == tag) return &e;
  return nullptr;
}

std::string digestOf(const std::string& package) {
  auto ref = api::parseImageRef(package);
  return ref.isOk() ? ref->digest : std::string();
}

}  // namespace

int64_t stageTagBackoffSeconds(int attempts) {
  int64_t s = kFirstBackoffSeconds;
  for (int i = 1; i < attempts && s < kMaxBackoffSeconds; ++i) s *= 2;
  return std::min(s, kMaxBackoffSeconds);
}

StageTagsPlan planStageTags(const StageTagsObserved& o) {
  StageTagsPlan plan;
  const v1::ModelRelease release = v1::decodeModelRelease(o.release);
  const std::string& package = release.spec.package;
  const std::string& self = release.meta.name;
  const json stagesStatus = o.status.value("stages", json::array());
  const std::string phase = str(o.status, "phase");
  for (const v1::Stage& st : release.spec.stages) {
    const std::string& name = st.name;
    if (name.empty()) continue;
    if (st.serving) {
      if (phase == kPhasePromoted) {
        plan.wanted.push_back({name, package, "release " + self + " promoted"});
      } else if (phase == kPhaseRolledBack && !o.promotedPackage.empty() &&
                 o.promotedRelease != self) {
        // Prod runs the last known-good release again: its package holds the tag.
        plan.wanted.push_back(
            {name, o.promotedPackage, "rolled back to release " + o.promotedRelease});
      }
      continue;
    }
    for (const json& s : stagesStatus) {
      if (str(s, "name") == name && str(s, "phase") == kStageSucceeded)
        plan.wanted.push_back({name, package, "stage " + name + " passed"});
    }
  }
  const json entries = o.status.value("registryTags", json::array());
  for (const StageTagTarget& t : plan.wanted) {
    const json* e = entryOfStageTagPlan(entries, t.tag);
    const std::string digest = digestOf(t.package);
    if (e == nullptr || str(*e, "digest") != digest) {
      plan.due.push_back(t);
      continue;
    }
    if (str(*e, "phase") == kTagPhaseTagged) continue;
    auto last = parseRfc3339(str(*e, "lastAttemptAt"));
    int attempts = e->value("attempts", 1);
    int64_t next = (last ? *last : 0) + stageTagBackoffSeconds(attempts);
    if (o.nowUnix >= next) {
      plan.due.push_back(t);
    } else if (plan.retryAfterSeconds == 0 || next - o.nowUnix < plan.retryAfterSeconds) {
      plan.retryAfterSeconds = next - o.nowUnix;
    }
  }
  return plan;
}

StageTagsStatus foldStageTagResults(const json& status, const std::vector<StageTagTarget>& wanted,
                                    const std::vector<StageTagResult>& results, int64_t generation,
                                    const std::string& now) {
  StageTagsStatus out;
  out.entries = status.value("registryTags", json::array());
  if (!out.entries.is_array()) out.entries = json::array();
  for (const StageTagResult& r : results) {
    const json* prev = entryOfStageTagPlan(out.entries, r.target.tag);
    // A pass planned from a cache that had not seen our last write finds the
    // tag already in place: the recorded entry (and where the tag was before
    // Lockstep moved it) stays as it is.
    if (r.error.empty() && !r.moved && prev != nullptr && str(*prev, "digest") == r.digest &&
        str(*prev, "phase") == kTagPhaseTagged)
      continue;
    int attempts = 1;
    if (prev != nullptr && str(*prev, "digest") == r.digest &&
        str(*prev, "phase") == kTagPhaseFailed)
      attempts = prev->value("attempts", 0) + 1;
    json e = {{"tag", r.target.tag},
              {"reference", r.reference},
              {"digest", r.digest},
              {"phase", r.error.empty() ? kTagPhaseTagged : kTagPhaseFailed},
              {"attempts", attempts},
              {"lastAttemptAt", now},
              {"message", r.error.empty() ? r.target.why : r.error}};
    if (r.moved && !r.previousDigest.empty()) e["previousDigest"] = r.previousDigest;
    bool replaced = false;
    for (json& x : out.entries) {
      if (str(x, "tag") == r.target.tag) {
        x = e;
        replaced = true;
      }
    }
    if (!replaced) out.entries.push_back(e);
  }
  std::vector<std::string> tagged;
  std::vector<std::string> failed;
  for (const StageTagTarget& t : wanted) {
    const json* e = entryOfStageTagPlan(out.entries, t.tag);
    if (e != nullptr && str(*e, "digest") == digestOf(t.package) &&
        str(*e, "phase") == kTagPhaseTagged) {
      tagged.push_back(t.tag);
    } else {
      failed.push_back(e != nullptr && str(*e, "digest") == digestOf(t.package)
                           ? t.tag + ": " + str(*e, "message")
                           : t.tag + ": not tagged yet");
    }
  }
  kube::Condition c;
  c.type = kConditionRegistryTagged;
  auto join = [](const std::vector<std::string>& v, const char* sep) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
  };
  if (failed.empty()) {
    c.status = "True";
    c.reason = wanted.empty() ? "NothingToTag" : "Tagged";
    c.message = wanted.empty() ? "no stage has passed yet"
                               : "the registry tags " + join(tagged, ", ") + " are in place";
  } else {
    c.status = "False";
    c.reason = "TagFailed";
    c.message = "retrying with back-off (the release is not held back): " + join(failed, "; ");
  }
  json conditions = status.value("conditions", json::array());
  if (!conditions.is_array()) conditions = json::array();
  kube::setCondition(conditions, c, generation, now);
  out.condition = *kube::findCondition(conditions, kConditionRegistryTagged);
  return out;
}

}  // namespace lockstep::controllers
