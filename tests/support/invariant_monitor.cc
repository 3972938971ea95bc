#include "tests/support/invariant_monitor.h"

#include <set>
#include <sstream>
#include <utility>

#include "api/v1alpha1/resources.h"
#include "operator/kube/client.h"
#include "operator/kube/connect.h"
#include "operator/kube/informer.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string str(const json& o, const char* pointer) {
  json::json_pointer p(pointer);
  return o.is_object() && o.contains(p) && o[p].is_string() ? o[p].get<std::string>() : "";
}

const json& prodStage(const json& release) {
  static const json kNone = json::object();
  json::json_pointer p("/spec/stages");
  if (!release.contains(p) || !release[p].is_array()) return kNone;
  for (const json& s : release[p]) {
    if (s.is_object() && s.contains("serving")) return s;
  }
  return kNone;
}

int replicasOf(const json& release) {
  json::json_pointer p("/serving/replicas");
  const json& stage = prodStage(release);
  return stage.contains(p) && stage[p].is_number_integer() ? stage[p].get<int>() : 1;
}

std::string capacityOf(const json& release) {
  std::string c = str(prodStage(release), "/canary/capacity");
  return c.empty() ? "surge" : c;
}

bool terminating(const json& pod) { return !str(pod, "/metadata/deletionTimestamp").empty(); }

bool ready(const json& pod) {
  json::json_pointer p("/status/conditions");
  if (!pod.contains(p) || !pod[p].is_array()) return false;
  for (const json& c : pod[p]) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

Triple tripleOf(const json& pod) {
  Triple t;
  t.package = str(pod, "/metadata/annotations/lockstep.dev~1package");
  t.closureHash = str(pod, "/metadata/annotations/lockstep.dev~1closure-hash");
  json::json_pointer c("/spec/containers");
  if (pod.contains(c) && pod[c].is_array() && !pod[c].empty()) t.image = str(pod[c][0], "/image");
  return t;
}

std::string describe(const Triple& t) {
  return "(package " + t.package + ", image " + t.image + ", closure hash " + t.closureHash + ")";
}

// A transient state: a violation once it has held for the grace.
bool lasted(MonitorState& state, const std::string& key, Clock::time_point now,
            std::chrono::milliseconds grace, std::set<std::string>& seen) {
  seen.insert(key);
  auto [it, inserted] = state.since.try_emplace(key, now);
  return now - it->second >= grace;
}

}  // namespace

std::vector<std::string> checkInvariants(const ModelWorld& world, const MonitorOptions& options,
                                         MonitorState& state, Clock::time_point now) {
  std::vector<std::string> out;
  std::set<std::string> seen;  // transient keys holding now
  std::vector<const json*> releases;
  for (const auto& [name, r] : world.releases) {
    if (str(r, "/spec/model") == world.model) releases.push_back(&r);
  }
  auto release = [&](const std::string& name) -> const json* {
    auto it = world.releases.find(name);
    return it == world.releases.end() ? nullptr : &it->second;
  };

  // ready
  int readyCount = 0;
  std::map<std::string, int> byTrack;
  for (const auto& [name, pod] : world.pods) {
    if (terminating(pod) || !ready(pod)) continue;
    ++readyCount;
    byTrack[str(pod, "/metadata/labels/lockstep.dev~1track") + "/" +
            str(pod, "/metadata/labels/lockstep.dev~1release")]++;
  }
  int n = 0;
  std::string mode = options.capacity.empty() ? "surge" : options.capacity;
  if (options.replicas) {
    n = *options.replicas;
  } else if (const json* promoted = release(str(world.modelObject, "/status/prod/release"))) {
    n = replicasOf(*promoted);
    if (world.modelObject.contains("/spec/replicas"_json_pointer))
      n = world.modelObject["/spec/replicas"_json_pointer].get<int>();
    const json* slot = release(str(world.modelObject, "/status/canary/release"));
    mode = capacityOf(slot != nullptr ? *slot : *promoted);
    if (std::string m = str(world.modelObject, "/spec/capacity"); !m.empty()) mode = m;
    // A manual rollback on a cluster with no spare GPU trades one stable pod
    // at a time (drain), which the stable Deployment's rolling update says.
    const json& history = world.modelObject.value("/status/history"_json_pointer, json::array());
    auto stable = world.deployments.find(world.model + "-stable");
    if (slot == nullptr && !history.empty() && history.back().value("action", "") == "Rollback" &&
        stable != world.deployments.end() &&
        stable->second.value("/spec/strategy/rollingUpdate/maxSurge"_json_pointer, json(1)) == 0)
      mode = "drain";
  }
  if (n != state.replicas) {
    state.armed = false;
    state.replicas = n;
  }
  if (n > 0 && !state.armed && readyCount >= n) state.armed = true;
  int floor = mode == "drain" ? n - 1 : n;
  if (state.armed && readyCount < floor) {
    std::string tracks;
    for (const auto& [k, v] : byTrack) tracks += " " + k + "=" + std::to_string(v);
    out.push_back("ready: " + std::to_string(readyCount) + " Ready serving pod(s) < " +
                  std::to_string(floor) + " (N=" + std::to_string(n) + ", " + mode +
                  "); Ready by track/release:" + (tracks.empty() ? " none" : tracks));
  }

  // triple
  std::set<Triple> valid(options.validated.begin(), options.validated.end());
  for (const json* r : releases) {
    bool evidence = false;
    json::json_pointer stages("/status/stages");
    if (r->contains(stages) && (*r)[stages].is_array()) {
      for (const json& s : (*r)[stages]) {
        Triple t{str(s, "/evidence/package"), str(s, "/evidence/image"),
                 str(s, "/evidence/closureHash")};
        if (t.package.empty() || t.closureHash.empty()) continue;
        valid.insert(t);
        evidence = true;
      }
    }
    if (!evidence && !world.runtimeImage.empty()) {
      std::string hash = str(*r, "/status/validatedClosureHash");
      if (hash.empty()) hash = str(*r, "/spec/closureHash");
      valid.insert({str(*r, "/spec/package"), world.runtimeImage, hash});
    }
  }
  // What the Model records as prod and as the canary in flight is validated
  // content too: its release object may be gone (deleted after promotion, or
  // re-created), prod keeps serving it (issue 28).
  for (const char* slot : {"/status/prod", "/status/canary"}) {
    const json::json_pointer at(slot);
    if (!world.modelObject.is_object() || !world.modelObject.contains(at)) continue;
    const json& rec = world.modelObject[at];
    Triple t{str(rec, "/package"), str(rec, "/runtime/image"), str(rec, "/runtime/closureHash")};
    if (!t.package.empty() && !t.closureHash.empty()) valid.insert(t);
  }
  for (const auto& [name, pod] : world.pods) {
    Triple t = tripleOf(pod);
    if (valid.count(t) != 0) continue;
    if (lasted(state, "triple/" + name, now, options.grace, seen)) {
      out.push_back("triple: pod " + name + " runs " + describe(t) +
                    ", which no release validated and the Model does not record");
    }
  }

  // served: every Ready serving pod runs content (package, closure hash) that
  // the Model names as prod or as the canary in flight; while the stable
  // Deployment is rolling (a promotion's handover is over, a manual rollback
  // or a heal is replacing pods), the prod before too.
  if (world.modelObject.is_object() && !str(world.modelObject, "/status/prod/package").empty()) {
    using Content = std::pair<std::string, std::string>;
    auto contentOf = [](const json& rec) -> Content {
      return {str(rec, "/package"), str(rec, "/runtime/closureHash")};
    };
    std::set<Content> named = {contentOf(world.modelObject["/status/prod"_json_pointer])};
    std::string allowed = "the Model's prod (" + str(world.modelObject, "/status/prod/release");
    if (world.modelObject.contains("/status/canary/package"_json_pointer)) {
      named.insert(contentOf(world.modelObject["/status/canary"_json_pointer]));
      allowed += ") or canary (" + str(world.modelObject, "/status/canary/release");
    }
    allowed += ")";
    // A release that took the canary slot first drains the canary it displaced
    // (docs/rollouts.md "A superseding release starts from zero pods"): while the
    // canary Deployment still carries the displaced release's template, that
    // release's content serves.
    auto canaryDeployment = world.deployments.find(world.model + "-canary");
    if (canaryDeployment != world.deployments.end()) {
      const std::string displaced =
          str(canaryDeployment->second, "/spec/template/metadata/labels/lockstep.dev~1release");
      auto r = world.releases.find(displaced);
      if (!displaced.empty() && displaced != str(world.modelObject, "/status/canary/release") &&
          r != world.releases.end()) {
        std::string hash = str(r->second, "/status/runtime/closureHash");
        if (hash.empty()) hash = str(r->second, "/spec/closureHash");
        named.insert({str(r->second, "/spec/package"), hash});
        allowed += " or the canary it displaced (" + displaced + ", draining)";
      }
    }
    auto stable = world.deployments.find(world.model + "-stable");
    const bool rolling =
        stable != world.deployments.end() &&
        (stable->second.value("/status/observedGeneration"_json_pointer, int64_t{0}) <
             stable->second.value("/metadata/generation"_json_pointer, int64_t{0}) ||
         stable->second.value("/status/updatedReplicas"_json_pointer, 0) <
             stable->second.value("/spec/replicas"_json_pointer, 1) ||
         stable->second.value("/status/replicas"_json_pointer, 0) >
             stable->second.value("/spec/replicas"_json_pointer, 1));
    if (rolling) {
      // The prod before: the second newest entry that set prod.
      int seenProd = 0;
      const json history = world.modelObject.value("/status/history"_json_pointer, json::array());
      for (auto it = history.rbegin(); it != history.rend(); ++it) {
        const std::string action = it->value("action", "");
        if (action != "Promoted" && action != "Rollback" && action != "Adopted" &&
            action != "Recognized")
          continue;
        if (++seenProd == 2) {
          named.insert(contentOf(*it));
          allowed += " or the prod before it (" + it->value("release", "") + ", stable rolling)";
          break;
        }
      }
    }
    for (const auto& [name, pod] : world.pods) {
      if (terminating(pod) || !ready(pod)) continue;
      const Triple t = tripleOf(pod);
      if (named.count({t.package, t.closureHash}) != 0) continue;
      if (lasted(state, "served/" + name, now, options.grace, seen)) {
        out.push_back(
            "served: Ready pod " + name + " (" + str(pod, "/metadata/labels/lockstep.dev~1track") +
            "/" + str(pod, "/metadata/labels/lockstep.dev~1release") + ") runs package " +
            t.package + " with closure hash " + t.closureHash + ", not the content of " + allowed);
      }
    }
  }

  // promoted, canary
  std::vector<std::string> promoted, canary;
  for (const json* r : releases) {
    std::string phase = str(*r, "/status/phase");
    if (phase == "Promoted") promoted.push_back(str(*r, "/metadata/name"));
    if (phase == "Canary") canary.push_back(str(*r, "/metadata/name"));
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (promoted.size() > 1 &&
      lasted(state, "promoted/" + join(promoted), now, options.grace, seen)) {
    out.push_back("promoted: " + std::to_string(promoted.size()) + " releases of model " +
                  world.model + " are Promoted: " + join(promoted));
  }
  if (canary.size() > 1 && lasted(state, "canary/" + join(canary), now, options.grace, seen)) {
    out.push_back("canary: " + std::to_string(canary.size()) + " releases of model " + world.model +
                  " hold the canary slot: " + join(canary));
  }

  // steps
  for (const json* r : releases) {
    json::json_pointer p("/status/canary/passedSteps");
    if (!r->contains(p) || !(*r)[p].is_array()) continue;
    int want = 0;
    for (const json& rec : (*r)[p]) {
      int step = rec.value("step", -1);
      if (step != want) {
        out.push_back("steps: release " + str(*r, "/metadata/name") + " passedSteps " +
                      (*r)[p].dump() + " skips step " + std::to_string(want));
        break;
      }
      ++want;
    }
  }

  for (auto it = state.since.begin(); it != state.since.end();) {
    it = seen.count(it->first) != 0 ? std::next(it) : state.since.erase(it);
  }
  return out;
}

namespace {

// One line per event for the trail.
std::string summary(const std::string& kind, const json& o, bool deleted) {
  std::ostringstream s;
  s << kind << " " << str(o, "/metadata/name");
  if (deleted) {
    s << " deleted";
    return s.str();
  }
  if (kind == "pod") {
    s << " " << str(o, "/metadata/labels/lockstep.dev~1track") << "/"
      << str(o, "/metadata/labels/lockstep.dev~1release") << " phase=" << str(o, "/status/phase")
      << " ready=" << (ready(o) ? "true" : "false") << (terminating(o) ? " terminating" : "");
  } else if (kind == "deployment") {
    json::json_pointer spec("/spec/replicas"), rdy("/status/readyReplicas");
    s << " release=" << str(o, "/spec/template/metadata/labels/lockstep.dev~1release")
      << " replicas=" << (o.contains(spec) ? o[spec].dump() : "?")
      << " ready=" << (o.contains(rdy) ? o[rdy].dump() : "0");
  } else if (kind == "model") {
    json::json_pointer revision("/status/revision");
    s << " prod=" << str(o, "/status/prod/release")
      << " canary=" << str(o, "/status/canary/release")
      << " revision=" << (o.contains(revision) ? o[revision].dump() : "-");
  } else {
    json::json_pointer step("/status/canary/step");
    s << " phase=" << str(o, "/status/phase")
      << " step=" << (o.contains(step) ? o[step].dump() : "-")
      << " canary=" << str(o, "/status/canary/phase");
  }
  return s.str();
}

}  // namespace

std::unique_ptr<InvariantMonitor> InvariantMonitor::start(const std::string& kubeconfig,
                                                          const MonitorOptions& options,
                                                          std::string& error) {
  std::unique_ptr<InvariantMonitor> m(new InvariantMonitor(options));
  m->world_.model = options.model;
  m->world_.runtimeImage = options.runtimeImage;
  kube::ConnectOptions co;
  co.kubeconfigPath = kubeconfig;
  auto client = kube::connect(co);
  if (!client.isOk()) {
    error = "invariant monitor: " + client.status().toString();
    return nullptr;
  }
  m->client_ = *client;
  struct Watch {
    std::string kind;
    kube::Resource resource;
    std::string labels, fields;
  };
  std::vector<Watch> watches = {
      {"pod", kube::resources::kPods, "lockstep.dev/model=" + options.model, ""},
      {"deployment", kube::resources::kDeployments, "lockstep.dev/model=" + options.model, ""},
      {"model", api::v1alpha1::kModels, "", "metadata.name=" + options.model},
  };
  if (!options.replicas) watches.push_back({"release", api::v1alpha1::kModelReleases, "", ""});
  InvariantMonitor* self = m.get();
  for (const Watch& w : watches) {
    kube::InformerOptions io;
    io.resource = w.resource;
    io.ns = options.ns;
    io.labelSelector = w.labels;
    io.fieldSelector = w.fields;
    auto informer = std::make_unique<kube::Informer>(*client, io);
    std::string kind = w.kind;
    informer->addEventHandler(
        {[self, kind](const kube::Object& o, bool) { self->onEvent(kind, o, false); },
         [self, kind](const kube::Object&, const kube::Object& o) {
           self->onEvent(kind, o, false);
         },
         [self, kind](const kube::Object& o) { self->onEvent(kind, o, true); }});
    informer->start();
    std::lock_guard<std::mutex> lock(m->mu_);  // the handlers read informers_
    m->informers_.push_back(std::move(informer));
    m->informerKinds_.push_back(kind);
  }
  for (auto& i : m->informers_) {
    if (!i->waitForSync(std::chrono::seconds(30))) {
      error = "invariant monitor: a watch did not sync within 30s";
      return nullptr;
    }
  }
  m->ticker_ = std::thread([self] {
    while (true) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      std::lock_guard<std::mutex> lock(self->mu_);
      if (self->stopping_) return;
      self->check(Clock::now());
    }
  });
  return m;
}

InvariantMonitor::InvariantMonitor(MonitorOptions options) : options_(std::move(options)) {}

InvariantMonitor::~InvariantMonitor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  if (ticker_.joinable()) ticker_.join();
  for (auto& i : informers_) i->stop();
}

void InvariantMonitor::onEvent(const std::string& kind, const json& obj, bool deleted) {
  std::lock_guard<std::mutex> lock(mu_);
  ++events_;
  std::string name = str(obj, "/metadata/name");
  std::map<std::string, json>* objects = kind == "pod"          ? &world_.pods
                                         : kind == "deployment" ? &world_.deployments
                                         : kind == "release"    ? &world_.releases
                                                                : nullptr;
  std::string before;
  if (objects != nullptr) {
    auto it = objects->find(name);
    if (it != objects->end()) before = summary(kind, it->second, false);
    if (deleted) {
      objects->erase(name);
    } else {
      (*objects)[name] = obj;
    }
  } else {
    before = world_.modelObject.is_null() ? "" : summary(kind, world_.modelObject, false);
    world_.modelObject = deleted ? json() : obj;
  }
  std::string line = summary(kind, obj, deleted);
  if (line != before) {
    double t = std::chrono::duration<double>(Clock::now() - t0_).count();
    std::ostringstream s;
    s.precision(1);
    s << std::fixed << "+" << t << "s " << line;
    trail_.push_back(s.str());
    while (trail_.size() > options_.trailLength) trail_.pop_front();
  }
  loadWorldFromCaches();
  check(Clock::now());
}

void InvariantMonitor::loadWorldFromCaches() {
  for (size_t i = 0; i < informers_.size(); ++i) {
    const std::string& kind = informerKinds_[i];
    std::map<std::string, json>* objects = kind == "pod"          ? &world_.pods
                                           : kind == "deployment" ? &world_.deployments
                                           : kind == "release"    ? &world_.releases
                                                                  : nullptr;
    std::vector<kube::ObjectPtr> cached = informers_[i]->cache().list();
    if (objects == nullptr) {
      world_.modelObject = cached.empty() ? json() : json(*cached.front());
      continue;
    }
    objects->clear();
    for (const kube::ObjectPtr& o : cached) (*objects)[str(*o, "/metadata/name")] = *o;
  }
}

void InvariantMonitor::check(Clock::time_point now) {
  std::vector<std::string> found = checkInvariants(world_, options_, state_, now);
  // A pod that no release validated may be the monitor's view lagging: after a
  // kube-apiserver restart each watch reconnects after its own backoff (up to
  // 30 s), so the pods' watch can deliver a new release's pod before the
  // releases' watch delivers the release. The server decides: the releases are
  // listed afresh before a triple violation is recorded, and while the list
  // fails (the API server is down) the check is repeated on the next tick.
  auto newTriple = [&] {
    if (options_.replicas || active_.count("triple") != 0) return false;
    for (const std::string& v : found) {
      if (v.rfind("triple:", 0) == 0) return true;
    }
    return false;
  };
  if (newTriple()) {
    if (!refreshReleases()) {
      std::erase_if(found, [](const std::string& v) { return v.rfind("triple:", 0) == 0; });
    } else {
      found = checkInvariants(world_, options_, state_, now);
    }
  }
  // The same for a pod serving what the Model does not name: the Model's watch
  // (one object, by field selector) can lag a relist after an API server
  // restart by tens of seconds (the chaos run saw 80 s while a newer release
  // had claimed the canary slot); the Model is read afresh first.
  auto newServed = [&] {
    if (active_.count("served") != 0) return false;
    for (const std::string& v : found) {
      if (v.rfind("served:", 0) == 0) return true;
    }
    return false;
  };
  if (newServed()) {
    if (!refreshModel() || !refreshPods()) {
      std::erase_if(found, [](const std::string& v) { return v.rfind("served:", 0) == 0; });
    } else {
      found = checkInvariants(world_, options_, state_, now);
    }
  }
  std::map<std::string, bool> active;
  for (const std::string& v : found) {
    std::string key = v.substr(0, v.find(':'));  // one record per invariant until it holds again
    if (active.count(key) != 0) continue;
    active[key] = true;
    if (active_.count(key) == 0) {
      std::string trail;
      for (const std::string& e : trail_) trail += "  " + e + "\n";
      auto known = tolerated_.find(key);
      if (known != tolerated_.end()) {
        known_.push_back({v + " [known: " + known->second + "]", trail});
      } else {
        violations_.push_back({v, trail});
      }
    }
  }
  active_ = std::move(active);
}

bool InvariantMonitor::refreshModel() {
  auto got = client_->get(api::v1alpha1::kModels, options_.ns, options_.model);
  if (!got.isOk()) return false;
  if (str(*got, "/metadata/resourceVersion") !=
      str(world_.modelObject, "/metadata/resourceVersion")) {
    double t = std::chrono::duration<double>(Clock::now() - t0_).count();
    std::ostringstream s;
    s.precision(1);
    s << std::fixed << "+" << t
      << "s monitor: the Model's watch was behind; read afresh: " << summary("model", *got, false);
    trail_.push_back(s.str());
    while (trail_.size() > options_.trailLength) trail_.pop_front();
    world_.modelObject = *got;
  }
  return true;
}

bool InvariantMonitor::refreshPods() {
  kube::ListOptions lo;
  lo.labelSelector = "lockstep.dev/model=" + options_.model;
  auto listed = client_->list(kube::resources::kPods, options_.ns, lo);
  if (!listed.isOk()) return false;
  std::map<std::string, json> pods;
  for (const kube::Object& p : listed->items) pods[str(p, "/metadata/name")] = p;
  if (pods.size() != world_.pods.size()) {
    double t = std::chrono::duration<double>(Clock::now() - t0_).count();
    std::ostringstream s;
    s.precision(1);
    s << std::fixed << "+" << t << "s monitor: the pods' watch was behind; " << pods.size()
      << " pod(s) listed afresh (the watch had " << world_.pods.size() << ")";
    trail_.push_back(s.str());
    while (trail_.size() > options_.trailLength) trail_.pop_front();
  }
  world_.pods = std::move(pods);
  return true;
}

bool InvariantMonitor::refreshReleases() {
  auto listed = client_->list(api::v1alpha1::kModelReleases, options_.ns);
  if (!listed.isOk()) return false;
  std::map<std::string, json> releases;
  for (const kube::Object& r : listed->items) releases[str(r, "/metadata/name")] = r;
  if (releases != world_.releases) {
    double t = std::chrono::duration<double>(Clock::now() - t0_).count();
    std::ostringstream s;
    s.precision(1);
    s << std::fixed << "+" << t << "s monitor: the releases' watch was behind; " << releases.size()
      << " release(s) listed afresh";
    trail_.push_back(s.str());
    while (trail_.size() > options_.trailLength) trail_.pop_front();
    world_.releases = std::move(releases);
  }
  return true;
}

std::vector<InvariantMonitor::Violation> InvariantMonitor::violations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return violations_;
}

std::string InvariantMonitor::report() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const Violation& v : violations_) {
    out += "invariant violated: " + v.invariant + "\nevent trail (oldest first):\n" + v.trail;
  }
  return out;
}

void InvariantMonitor::tolerate(const std::string& invariant, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  tolerated_[invariant] = why;
}

std::string InvariantMonitor::knownFindings() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const Violation& v : known_) {
    out += "known finding: " + v.invariant + "\nevent trail (oldest first):\n" + v.trail;
  }
  return out;
}

void InvariantMonitor::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  violations_.clear();
}

void InvariantMonitor::stopWatching(const std::string& kind) {
  for (size_t i = 0; i < informers_.size(); ++i) {
    if (informerKinds_[i] == kind) informers_[i]->stop();
  }
}

int InvariantMonitor::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

}  // namespace lockstep::testing
