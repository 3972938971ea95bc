#include "api/v1alpha1/model.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "api/v1alpha1/keys.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

// The canonical value of `j`: an integral number as an integer (YAML and JSON
// spell 2 and 2.0 alike for a person; the API server keeps what it was given).
// Objects are std::map-ordered in nlohmann::json, so dump() sorts their keys.
json canonical(const json& j) {
  if (j.is_object()) {
    json out = json::object();
    for (const auto& [k, v] : j.items()) out[k] = canonical(v);
    return out;
  }
  if (j.is_array()) {
    json out = json::array();
    for (const json& v : j) out.push_back(canonical(v));
    return out;
  }
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.0e15)
      return static_cast<int64_t>(d);
  }
  if (j.is_number_unsigned()) return static_cast<int64_t>(j.get<uint64_t>());
  return j;
}

std::string sha256Hex(const std::string& bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md.data(), &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(static_cast<size_t>(len) * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 0xf]);
  }
  return out;
}

// The domain of the digest: another document never hashes to a content digest.
constexpr const char* kContentDomain = "lockstep.dev/release-content/v1\n";

ModelRuntime decodeRuntime(const json& j) {
  ModelRuntime r;
  r.runtimeEnv = decode::string(j, "runtimeEnv");
  r.image = decode::string(j, "image");
  r.closureHash = decode::string(j, "closureHash");
  r.revision = decode::integer(j, "revision", 0);
  return r;
}

json encodeRuntime(const ModelRuntime& r) {
  json out = json::object();
  if (!r.runtimeEnv.empty()) out["runtimeEnv"] = r.runtimeEnv;
  if (!r.image.empty()) out["image"] = r.image;
  if (!r.closureHash.empty()) out["closureHash"] = r.closureHash;
  if (r.revision > 0) out["revision"] = r.revision;
  return out;
}

std::optional<ProdContent> decodeProdContent(const json& status, const char* key) {
  const json* m = decode::member(status, key);
  if (m == nullptr || !m->is_object()) return std::nullopt;
  ProdContent p;
  p.release = decode::string(*m, "release");
  if (p.release.empty()) return std::nullopt;
  p.uid = decode::string(*m, "uid");
  p.contentDigest = decode::string(*m, "contentDigest");
  p.package = decode::string(*m, "package");
  p.runtime = decodeRuntime(decode::object(*m, "runtime"));
  p.since = decode::string(*m, "since");
  if (const json* st = decode::member(*m, "stages"); st != nullptr && st->is_array())
    p.stages = *st;
  p.stagesNotRecorded = decode::string(*m, "stagesNotRecorded");
  return p;
}

}  // namespace

std::string referenceDigest(const std::string& reference) {
  const auto at = reference.rfind('@');
  return at == std::string::npos ? reference : reference.substr(at + 1);
}

std::string contentDigest(const ReleaseContent& c) {
  const json doc = {{"package", referenceDigest(c.package)},
                    {"image", referenceDigest(c.image)},
                    {"closureHash", c.closureHash},
                    {"stages", canonical(c.stages.is_array() ? c.stages : json::array())}};
  return "sha256:" + sha256Hex(std::string(kContentDomain) + doc.dump());
}

std::string canonicalDigest(std::string_view domain, const json& j) {
  return "sha256:" + sha256Hex(std::string(domain) + canonical(j).dump());
}

ReleaseContent releaseContent(const json& release, const RuntimePin& pin) {
  const json& spec = decode::object(release, "spec");
  ReleaseContent c;
  c.package = decode::string(spec, "package");
  c.image = pin.image;
  c.closureHash = pin.closureHash.empty() ? decode::string(spec, "closureHash") : pin.closureHash;
  c.stages = decode::array(spec, "stages");
  return c;
}

std::vector<ChangeWindowSpec> decodeChangeWindows(const json& spec) {
  std::vector<ChangeWindowSpec> out;
  for (const json& w : decode::array(spec, "changeWindows")) {
    ChangeWindowSpec c;
    // A field that is there but not a string reads as "", so that it is refused by name
    // rather than defaulted.
    auto read = [&w](const char* key, std::string& field) {
      if (const json* v = decode::member(w, key); v != nullptr) {
        field = v->is_string() ? v->get<std::string>() : std::string();
      }
    };
    read("name", c.name);
    read("kind", c.kind);
    read("rrule", c.rrule);
    read("duration", c.duration);
    read("timeZone", c.timeZone);
    read("inFlight", c.inFlight);
    read("rollbacks", c.rollbacks);
    out.push_back(std::move(c));
  }
  return out;
}

json encodeChangeWindow(const ChangeWindowSpec& w) {
  json out = {{"kind", w.kind},         {"rrule", w.rrule},       {"duration", w.duration},
              {"timeZone", w.timeZone}, {"inFlight", w.inFlight}, {"rollbacks", w.rollbacks}};
  if (!w.name.empty()) out["name"] = w.name;
  return out;
}

Model decodeModel(const json& object) {
  Model m;
  m.meta = decodeMeta(object);
  const json& metadata = decode::object(object, "metadata");
  m.resourceVersion = decode::string(metadata, "resourceVersion");
  m.deleting = !decode::string(metadata, "deletionTimestamp").empty();
  for (const auto& [k, v] : decode::object(metadata, "annotations").items()) {
    if (v.is_string()) m.annotations[k] = v.get<std::string>();
  }
  const json& spec = decode::object(object, "spec");
  if (const json* p = decode::member(spec, "port"); p != nullptr && p->is_number_integer())
    m.spec.port = p->get<int64_t>();
  if (const json* r = decode::member(spec, "replicas"); r != nullptr && r->is_number_integer())
    m.spec.replicas = r->get<int64_t>();
  m.spec.capacity = decode::string(spec, "capacity");
  const std::string type = decode::string(decode::object(spec, "service"), "type");
  if (!type.empty()) m.spec.serviceType = type;
  m.spec.revisionHistoryLimit =
      decode::integer(spec, "revisionHistoryLimit", kDefaultRevisionHistoryLimit);
  m.spec.rollbackDeadlineSeconds =
      decode::integer(spec, "rollbackDeadlineSeconds", kDefaultRollbackDeadlineSeconds);
  m.spec.changeWindows = decodeChangeWindows(spec);
  const json& status = decode::object(object, "status");
  m.status.observedGeneration = decode::integer(status, "observedGeneration", -1);
  m.status.revision = decode::integer(status, "revision", 0);
  m.status.prod = decodeProdContent(status, "prod");
  m.status.canary = decodeProdContent(status, "canary");
  for (const json& h : decode::array(status, "history")) {
    if (!h.is_object()) continue;
    ModelHistoryEntry e;
    e.action = decode::string(h, "action");
    e.release = decode::string(h, "release");
    e.uid = decode::string(h, "uid");
    e.contentDigest = decode::string(h, "contentDigest");
    e.package = decode::string(h, "package");
    e.runtime = decodeRuntime(decode::object(h, "runtime"));
    e.revision = decode::integer(h, "revision", 0);
    e.at = decode::string(h, "at");
    e.reason = decode::string(h, "reason");
    e.stable = decode::string(h, "stable");
    e.from = decode::string(h, "from");
    e.by = decode::string(h, "by");
    m.status.history.push_back(std::move(e));
  }
  m.status.conditions = decode::array(status, "conditions");
  return m;
}

json encodeProdContent(const ProdContent& p) {
  json out = {{"release", p.release}};
  if (!p.uid.empty()) out["uid"] = p.uid;
  if (!p.contentDigest.empty()) out["contentDigest"] = p.contentDigest;
  if (!p.package.empty()) out["package"] = p.package;
  if (json rt = encodeRuntime(p.runtime); !rt.empty()) out["runtime"] = std::move(rt);
  if (!p.since.empty()) out["since"] = p.since;
  if (p.stages.is_array()) out["stages"] = p.stages;
  if (!p.stagesNotRecorded.empty()) out["stagesNotRecorded"] = p.stagesNotRecorded;
  return out;
}

void recordStages(ProdContent& p, const json& stages) {
  const size_t bytes = stages.dump().size();
  if (bytes > kMaxRecordedStagesBytes) {
    p.stages = nullptr;
    p.stagesNotRecorded = "spec.stages of release " + p.release + " is " + std::to_string(bytes) +
                          " bytes, over the " + std::to_string(kMaxRecordedStagesBytes) +
                          " the Model records: prod's serving objects cannot be rebuilt once "
                          "that release object is deleted";
    return;
  }
  p.stages = stages.is_array() ? stages : json::array();
  p.stagesNotRecorded.clear();
}

std::string previousProdRelease(const Model& model,
                                const std::function<bool(const std::string&)>& exists) {
  const std::string current = model.promoted();
  const std::vector<ModelHistoryEntry>& history = model.status.history;
  auto found = std::find_if(history.rbegin(), history.rend(), [&](const ModelHistoryEntry& e) {
    return (e.action == kModelActionPromoted || e.action == kModelActionRollback) &&
           !e.release.empty() && e.release != current && exists(e.release);
  });
  return found == history.rend() ? std::string() : found->release;
}

std::optional<ModelRollbackAsk> modelRollbackAsk(const Model& model, const std::string& revision) {
  if (revision.empty()) return std::nullopt;
  auto by = model.annotations.find(kRollbackAnnotationPrefix + revision);
  if (by == model.annotations.end() || by->second.empty()) return std::nullopt;
  ModelRollbackAsk ask{by->second, ""};
  if (auto to = model.annotations.find(kRollbackToAnnotationPrefix + revision);
      to != model.annotations.end())
    ask.to = to->second;
  return ask;
}

bool recordShowsProdRan(const Model& model, const std::string& name, const std::string& uid,
                        const std::string& contentDigest) {
  auto same = [&](const std::string& n, const std::string& u, const std::string& digest) {
    if (n != name) return false;
    if (u.empty()) return true;  // adopted from an anchor: the name is all it knows
    return u == uid || (!digest.empty() && digest == contentDigest);
  };
  if (model.status.prod &&
      same(model.status.prod->release, model.status.prod->uid, model.status.prod->contentDigest))
    return true;
  for (const ModelHistoryEntry& h : model.status.history) {
    if (h.action != kModelActionPromoted && h.action != kModelActionRollback &&
        h.action != kModelActionRecognized && h.action != kModelActionAdopted)
      continue;
    if (same(h.release, h.uid, h.contentDigest)) return true;
  }
  return false;
}

bool stagesMatchContent(const ProdContent& p, const json& stages) {
  if (p.contentDigest.empty() || !stages.is_array()) return false;
  ReleaseContent c;
  c.package = p.package;
  c.image = p.runtime.image;
  c.closureHash = p.runtime.closureHash;
  c.stages = stages;
  return contentDigest(c) == p.contentDigest;
}

json encodeHistoryEntry(const ModelHistoryEntry& h) {
  json out = {{"action", h.action}, {"release", h.release}};
  auto put = [&out](const char* key, const std::string& v) {
    if (!v.empty()) out[key] = v;
  };
  put("uid", h.uid);
  put("contentDigest", h.contentDigest);
  put("package", h.package);
  if (json rt = encodeRuntime(h.runtime); !rt.empty()) out["runtime"] = std::move(rt);
  if (h.revision > 0) out["revision"] = h.revision;
  put("at", h.at);
  put("reason", h.reason);
  put("stable", h.stable);
  put("from", h.from);
  put("by", h.by);
  return out;
}

json encodeModelStatus(const ModelStatus& s) {
  json out = json::object();
  if (s.observedGeneration >= 0) out["observedGeneration"] = s.observedGeneration;
  out["revision"] = s.revision;
  if (s.prod) out["prod"] = encodeProdContent(*s.prod);
  if (s.canary) out["canary"] = encodeProdContent(*s.canary);
  json history = json::array();
  for (const ModelHistoryEntry& h : s.history) history.push_back(encodeHistoryEntry(h));
  out["history"] = std::move(history);
  if (s.conditions.is_array() && !s.conditions.empty()) out["conditions"] = s.conditions;
  return out;
}

json modelOwnerReference(const std::string& name, const std::string& uid) {
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "Model"},
          {"name", name},
          {"uid", uid},
          {"controller", true}};
}

std::vector<ModelPin> modelPins(const Model& m) {
  std::vector<ModelPin> out;
  auto add = [&](const std::string& release, const ModelRuntime& rt, ModelPinHold hold) {
    if (release.empty() || rt.image.empty() || rt.closureHash.empty()) return;
    out.push_back(
        {m.meta.name, release, rt.runtimeEnv, {rt.revision, rt.image, rt.closureHash}, hold});
  };
  if (m.status.prod) add(m.status.prod->release, m.status.prod->runtime, ModelPinHold::kProd);
  if (m.status.canary)
    add(m.status.canary->release, m.status.canary->runtime, ModelPinHold::kCanary);
  std::set<std::string> seen;
  if (m.status.prod) seen.insert(m.status.prod->release);
  const auto limit = static_cast<size_t>(std::max<int64_t>(m.spec.revisionHistoryLimit, 0));
  size_t kept = 0;
  for (auto it = m.status.history.rbegin(); it != m.status.history.rend() && kept < limit; ++it) {
    if (it->action == kModelActionRolledBack || !seen.insert(it->release).second) continue;
    if (it->runtime.image.empty() || it->runtime.closureHash.empty()) continue;
    add(it->release, it->runtime, ModelPinHold::kRollbackTarget);
    ++kept;
  }
  return out;
}

void appendHistory(std::vector<ModelHistoryEntry>& history, ModelHistoryEntry entry) {
  history.push_back(std::move(entry));
  while (history.size() > kModelHistoryKept) history.erase(history.begin());
}

}  // namespace lockstep::api::v1alpha1
