#include "api/v1alpha1/model_rollout.h"

#include <algorithm>
#include <set>

#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/model_release.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

Status badModelRollout(const std::string& field, const std::string& why) {
  return invalidArgument("spec." + field + ": " + why);
}

std::string indexedModelRollout(const std::string& field, size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

// A value as an error message quotes it: strings in quotes, anything else as JSON.
std::string shownModelRollout(const json& v) {
  return v.is_string() ? "\"" + v.get<std::string>() + "\"" : v.dump();
}

StatusOr<std::string> requiredStringModelRollout(const json& parent, const std::string& key,
                                                 const std::string& field) {
  const json* v = decode::member(parent, key);
  if (v == nullptr) return badModelRollout(field, "is required");
  if (!v->is_string() || v->get<std::string>().empty())
    return badModelRollout(field, "must be a non-empty string");
  return v->get<std::string>();
}

StatusOr<std::map<std::string, std::string>> stringMap(const json& m, const std::string& field) {
  if (!m.is_object()) return badModelRollout(field, "must be a map of strings");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : m.items()) {
    if (!v.is_string()) return badModelRollout(field + "." + k, "must be a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

StatusOr<ClusterSelector> decodeSelector(const json& s, const std::string& field) {
  return decodeLabelSelector(s, "spec." + field);
}

// An IntOrString: a JSON integer, or a string of digits with or without a trailing '%'.
StatusOr<IntOrPercent> intOrPercent(const json& v, const std::string& field, int64_t minCount) {
  IntOrPercent out;
  if (v.is_number_integer()) {
    out.value = v.get<int64_t>();
  } else if (v.is_string()) {
    std::string text = v.get<std::string>();
    out.percent = !text.empty() && text.back() == '%';
    if (out.percent) text.pop_back();
    const bool digits =
        !text.empty() && text.size() <= 9 &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits)
      return badModelRollout(field,
                             shownModelRollout(v) + " is not an integer or a percentage (\"20%\")");
    out.value = std::stoll(text);
  } else {
    return badModelRollout(field,
                           shownModelRollout(v) + " is not an integer or a percentage (\"20%\")");
  }
  if (out.percent && out.value > 100)
    return badModelRollout(field, shownModelRollout(v) + " is more than 100%");
  if (out.value < minCount)
    return badModelRollout(field, shownModelRollout(v) + " is less than " +
                                      std::to_string(minCount) + (out.percent ? "%" : ""));
  return out;
}

// A duration field ("10m", "1h30m"); "0" reads as 0 s, as Go's time.ParseDuration.
StatusOr<int64_t> duration(const json& v, const std::string& field) {
  if (!v.is_string())
    return badModelRollout(field, shownModelRollout(v) + " is not a duration (\"10m\", \"1h30m\")");
  const std::string text = v.get<std::string>();
  if (text == "0") return 0;
  auto secs = parseStageDuration(text);
  if (!secs)
    return badModelRollout(field, shownModelRollout(v) + " is not a duration (\"10m\", \"1h30m\")");
  return *secs;
}

Status decodeStrategy(const json& s, RolloutStrategy* out) {
  if (!s.is_object()) return badModelRollout("strategy", "must be an object");
  if (const json* v = decode::member(s, "maxConcurrency"); v != nullptr) {
    auto c = intOrPercent(*v, "strategy.maxConcurrency", 1);
    if (!c.isOk()) return c.status();
    out->maxConcurrency = *c;
  }
  if (const json* v = decode::member(s, "maxFailures"); v != nullptr) {
    auto f = intOrPercent(*v, "strategy.maxFailures", 0);
    if (!f.isOk()) return f.status();
    out->maxFailures = *f;
  }
  if (const json* v = decode::member(s, "minSuccessTime"); v != nullptr) {
    auto d = duration(*v, "strategy.minSuccessTime");
    if (!d.isOk()) return d.status();
    out->minSuccessTimeSeconds = *d;
  }
  // OCM's default progressDeadline is the word "None": no deadline.
  if (const json* v = decode::member(s, "progressDeadline"); v != nullptr && *v != "None") {
    auto d = duration(*v, "strategy.progressDeadline");
    if (!d.isOk()) return d.status();
    if (*d <= 0)
      return badModelRollout("strategy.progressDeadline",
                             "must be longer than 0s (omit it, or write None, for no deadline)");
    out->progressDeadlineSeconds = *d;
  }
  return Status::ok();
}

Status decodeWaves(const json& spec, ModelRolloutSpec* out) {
  const json* waves = decode::member(spec, "waves");
  if (waves == nullptr || !waves->is_array() || waves->empty())
    return badModelRollout("waves",
                           "must list at least one wave {name, clusters, clusterSelector}");
  // Where each named cluster was first listed: "spec.waves[0] (first)".
  std::map<std::string, std::pair<size_t, std::string>> namedIn;
  for (size_t i = 0; i < waves->size(); ++i) {
    const std::string field = indexedModelRollout("waves", i);
    const json& w = (*waves)[i];
    if (!w.is_object())
      return badModelRollout(field, "must be an object {name, clusters, clusterSelector}");
    RolloutWave wave;
    auto name = requiredStringModelRollout(w, "name", field + ".name");
    if (!name.isOk()) return name.status();
    wave.name = *name;
    for (size_t j = 0; j < out->waves.size(); ++j)
      if (out->waves[j].name == wave.name)
        return badModelRollout(
            field + ".name",
            "\"" + wave.name + "\" is already the name of spec." + indexedModelRollout("waves", j));
    if (const json* clusters = decode::member(w, "clusters"); clusters != nullptr) {
      if (!clusters->is_array())
        return badModelRollout(field + ".clusters", "must be a list of cluster names");
      for (size_t j = 0; j < clusters->size(); ++j) {
        const std::string f = indexedModelRollout(field + ".clusters", j);
        const json& c = (*clusters)[j];
        if (!c.is_string() || c.get<std::string>().empty())
          return badModelRollout(f, "must be a non-empty cluster name");
        const std::string n = c.get<std::string>();
        if (auto seen = namedIn.find(n); seen != namedIn.end()) {
          if (seen->second.first == i)
            return badModelRollout(f, "\"" + n + "\" is listed twice in this wave");
          return badModelRollout(f, "\"" + n + "\" is already in spec." +
                                        indexedModelRollout("waves", seen->second.first) + " (" +
                                        seen->second.second + "): a cluster belongs to one wave");
        }
        namedIn[n] = {i, wave.name};
        wave.clusters.push_back(n);
      }
    }
    if (const json* sel = decode::member(w, "clusterSelector"); sel != nullptr) {
      auto s = decodeSelector(*sel, field + ".clusterSelector");
      if (!s.isOk()) return s.status();
      wave.clusterSelector = std::move(*s);
    }
    if (wave.clusters.empty() && !wave.clusterSelector)
      return badModelRollout(field, "names no clusters and has no clusterSelector");
    out->waves.push_back(std::move(wave));
  }
  return Status::ok();
}

Status decodeInventory(const json& spec, ModelRolloutSpec* out) {
  const json* inv = decode::member(spec, "inventory");
  if (inv == nullptr) return Status::ok();
  if (!inv->is_array()) return badModelRollout("inventory", "must be a list of {name, labels}");
  std::set<std::string> names;
  for (size_t i = 0; i < inv->size(); ++i) {
    const std::string field = indexedModelRollout("inventory", i);
    const json& e = (*inv)[i];
    if (!e.is_object()) return badModelRollout(field, "must be an object {name, labels}");
    InventoryCluster c;
    auto name = requiredStringModelRollout(e, "name", field + ".name");
    if (!name.isOk()) return name.status();
    c.name = *name;
    if (!names.insert(c.name).second)
      return badModelRollout(field + ".name", "\"" + c.name + "\" is listed twice");
    if (const json* labels = decode::member(e, "labels"); labels != nullptr) {
      auto m = stringMap(*labels, field + ".labels");
      if (!m.isOk()) return m.status();
      c.labels = std::move(*m);
    }
    out->inventory.push_back(std::move(c));
  }
  return Status::ok();
}

}  // namespace

StatusOr<ModelRolloutSpec> decodeModelRolloutSpec(const json& spec) {
  if (!spec.is_object()) return invalidArgument("spec: must be an object");
  ModelRolloutSpec out;
  auto package = requiredStringModelRollout(spec, "package", "package");
  if (!package.isOk()) return package.status();
  out.package = *package;
  auto ref = parseImageRef(out.package);
  if (!ref.isOk()) return badModelRollout("package", ref.status().message());
  if (!ref->pinned())
    return badModelRollout("package",
                           "\"" + out.package + "\" is not pinned by digest (@sha256:<64 hex>)");
  out.packageRef = *ref;
  auto model = requiredStringModelRollout(spec, "model", "model");
  if (!model.isOk()) return model.status();
  out.model = *model;
  LOCKSTEP_RETURN_IF_ERROR(decodeWaves(spec, &out));
  LOCKSTEP_RETURN_IF_ERROR(decodeInventory(spec, &out));
  if (const json* s = decode::member(spec, "strategy"); s != nullptr)
    LOCKSTEP_RETURN_IF_ERROR(decodeStrategy(*s, &out.strategy));
  if (const json* sc = decode::member(spec, "signingConfig"); sc != nullptr) {
    if (!sc->is_string()) return badModelRollout("signingConfig", "must be a string");
    out.signingConfig = sc->get<std::string>();
  }
  auto trust = requiredStringModelRollout(spec, "trustPolicy", "trustPolicy");
  if (!trust.isOk()) return trust.status();
  out.trustPolicy = *trust;
  return out;
}

std::vector<InventoryCluster> clusterProfileInventory(const std::vector<nlohmann::json>& profiles) {
  std::map<std::string, InventoryCluster> byName;
  for (const nlohmann::json& p : profiles) {
    const nlohmann::json& meta = decode::object(p, "metadata");
    const std::string name = decode::string(meta, "name");
    if (name.empty() || byName.count(name)) continue;
    InventoryCluster c;
    c.name = name;
    for (const auto& [k, v] : decode::object(meta, "labels").items())
      if (v.is_string()) c.labels[k] = v.get<std::string>();
    byName[name] = std::move(c);
  }
  std::vector<InventoryCluster> out;
  out.reserve(byName.size());
  for (auto& [name, c] : byName) out.push_back(std::move(c));
  return out;
}

std::vector<InventoryCluster> rolloutInventory(const ModelRolloutSpec& spec,
                                               const std::vector<InventoryCluster>& profiles) {
  return profiles.empty() ? spec.inventory : profiles;
}

std::vector<ResolvedWave> resolveWaves(const ModelRolloutSpec& spec,
                                       const std::vector<InventoryCluster>& inventory) {
  std::vector<const InventoryCluster*> byName;
  byName.reserve(inventory.size());
  for (const InventoryCluster& c : inventory) byName.push_back(&c);
  std::stable_sort(
      byName.begin(), byName.end(),
      [](const InventoryCluster* a, const InventoryCluster* b) { return a->name < b->name; });
  std::set<std::string> claimed;
  std::vector<ResolvedWave> out;
  for (const RolloutWave& w : spec.waves) {
    ResolvedWave r{w.name, {}};
    for (const std::string& n : w.clusters)
      if (claimed.insert(n).second) r.clusters.push_back(n);
    if (w.clusterSelector) {
      for (const InventoryCluster* c : byName)
        if (selectorMatches(*w.clusterSelector, c->labels) && claimed.insert(c->name).second)
          r.clusters.push_back(c->name);
    }
    out.push_back(std::move(r));
  }
  return out;
}

int64_t maxConcurrencyFor(const RolloutStrategy& strategy, int64_t waveSize) {
  int64_t n = waveSize;
  if (strategy.maxConcurrency) {
    const IntOrPercent& c = *strategy.maxConcurrency;
    n = c.percent ? (c.value * waveSize + 99) / 100 : c.value;
  }
  return std::max<int64_t>(n, 1);
}

int64_t maxFailuresFor(const RolloutStrategy& strategy, int64_t totalClusters) {
  const IntOrPercent& f = strategy.maxFailures;
  return f.percent ? f.value * totalClusters / 100 : f.value;
}

}  // namespace lockstep::api::v1alpha1
