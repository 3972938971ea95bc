#include "tests/support/release_world.h"

#include <iostream>

#include <gtest/gtest.h>

namespace lockstep::testing {
namespace {

using nlohmann::json;

struct Shared {
  OperatorProcess* op = nullptr;
  std::vector<std::string> args;
  std::unique_ptr<RegistryWorld> registry;
};

Shared& shared() {
  static Shared s;
  return s;
}

}  // namespace

const std::string kTestImage =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000002";
const std::string kTestLock = "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n";
const std::string kTestOtherLock = "numpy==2.0.0 --hash=sha256:" + std::string(64, 'b') + "\n";

std::string testPackage(char c) {
  return "registry.example/models/gpt2@sha256:" + std::string(64, c);
}

std::string ReleaseWorld::startOperator(const std::vector<std::string>& args,
                                        const std::function<void()>& prepare) {
  OperatorProcess::installClusterPieces(sharedWebhookPort());
  if (prepare) prepare();
  Shared& s = shared();
  s.args = args;
  s.op = new OperatorProcess();
  return s.op->start(args);
}

void ReleaseWorld::stopOperator() {
  Shared& s = shared();
  delete s.op;
  s.op = nullptr;
  OperatorProcess::uninstallWebhooks();
  s.registry.reset();
}

OperatorProcess& ReleaseWorld::op() { return *shared().op; }

std::string ReleaseWorld::ensureOperator() {
  Shared& s = shared();
  if (s.op == nullptr) return "ReleaseWorld::startOperator was not called";
  return s.op->alive() ? "" : s.op->start(s.args);
}

RegistryWorld* ReleaseWorld::registry(std::string& error) {
  Shared& s = shared();
  if (!s.registry) s.registry = RegistryWorld::start(error);
  return s.registry.get();
}

std::string ReleaseWorld::setUp(const Options& options) {
  options_ = options;
  if (std::string e = ensureOperator(); !e.empty()) return "operator: " + e;
  ns_ = uniqueName(options.nsPrefix);
  if (kubectl({"create", "namespace", ns_}).exitCode != 0) return "cannot create namespace " + ns_;
  if (options.enforce &&
      kubectl({"label", "namespace", ns_, "lockstep.dev/enforce=enforce"}).exitCode != 0)
    return "cannot label namespace " + ns_;
  if (options.prometheus) {
    std::string error;
    PrometheusWorld::Options po;
    po.kubeconfig = kubeconfigPath();
    po.ns = ns_;
    po.scrapeInterval = options.scrapeInterval;
    prom_ = PrometheusWorld::start(po, error);
    if (!prom_) return error;
    provider_ = addProvider(prom_->url(), {{"timeout", "5s"}});
    if (provider_.empty()) return "cannot create the AnalysisProvider of " + prom_->url();
  }
  hash_ = applyReadyRuntimeEnv(ns_, "torch", kTestImage, kTestLock);
  if (hash_.empty()) return "RuntimeEnv torch never became Ready";
  if (options.monitor) return startMonitor();
  return "";
}

std::string ReleaseWorld::startMonitor(MonitorOptions options) {
  options.ns = ns_;
  options.model = options_.model;
  if (options.runtimeImage.empty()) options.runtimeImage = kTestImage;
  std::string error;
  monitor_ = InvariantMonitor::start(kubeconfigPath(), options, error);
  return monitor_ ? "" : error;
}

void ReleaseWorld::tearDown(bool failed) {
  if (monitor_) {
    if (std::string known = monitor_->knownFindings(); !known.empty())
      std::cerr << "the invariant monitor saw known findings (not failing this test):\n"
                << known << std::endl;
    EXPECT_EQ(monitor_->report(), "") << "the invariant monitor of model " << options_.model
                                      << " in " << ns_ << " saw violations";
    failed = failed || !monitor_->violations().empty();
    monitor_.reset();  // before the namespace goes: its pods vanish
  }
  if (failed && shared().op != nullptr)
    std::cerr << "operator log tail:\n" << shared().op->log() << std::endl;
  for (const std::string& p : providers_)
    kubectl({"delete", "analysisprovider", p, "--ignore-not-found", "--wait=false"});
  providers_.clear();
  if (!ns_.empty()) {
    auto r = kubectl({"delete", "namespace", ns_, "--ignore-not-found", "--timeout=120s"});
    EXPECT_EQ(r.exitCode, 0) << "namespace did not finish deleting: " << r.err;
  }
  prom_.reset();
}

ModelReleaseBuilder ReleaseWorld::release(const std::string& name,
                                          const std::string& package) const {
  return modelRelease(name, ns_)
      .model(options_.model)
      .package(package)
      .runtimeEnv("torch")
      .closureHash(hash_);
}

CommandResult ReleaseWorld::create(const ModelReleaseBuilder& release) const {
  json mr = release.build();
  mr["metadata"].erase("generation");
  return kubectl({"create", "-f", "-"}, mr.dump());
}

CommandResult ReleaseWorld::createRelease(const std::string& name, const std::string& package,
                                          const json& stages) const {
  ModelReleaseBuilder b = release(name, package);
  for (const json& s : stages) b.withGate(s);
  return create(b);
}

json ReleaseWorld::get(const std::string& kind, const std::string& name) const {
  return kubectlJson({"get", kind, name, "-n", ns_});
}

json ReleaseWorld::waitPhase(const std::string& name, const std::string& phase,
                             std::chrono::seconds timeout) const {
  json last;
  bool ok = eventually(
      [&] {
        last = get("mr", name);
        return !last.is_discarded() && last.contains("status") && last["status"].is_object() &&
               statusField(last) == phase;
      },
      timeout);
  EXPECT_TRUE(ok) << name << ": phase " << phase << " not reached: "
                  << (last.is_object() ? last.value("status", json()).dump(2) : last.dump());
  return last;
}

std::map<std::string, int> ReleaseWorld::readyPods() const {
  std::map<std::string, int> out;
  json pods = kubectlJson({"get", "pods", "-n", ns_, "-l", "lockstep.dev/model=" + options_.model});
  if (pods.is_discarded()) return out;
  for (const json& p : pods["items"]) {
    if (p["metadata"].contains("deletionTimestamp")) continue;
    bool ready = false;
    for (const json& c : p["status"].value("conditions", json::array()))
      ready = ready || (c["type"] == "Ready" && c["status"] == "True");
    if (!ready) continue;
    const json& l = p["metadata"]["labels"];
    out[l.value("lockstep.dev/track", "") + "/" + l.value("lockstep.dev/release", "")]++;
  }
  return out;
}

std::string ReleaseWorld::stableRelease() const {
  return get("deployment", options_.model + "-stable")
      .value("/spec/template/metadata/labels/lockstep.dev~1release"_json_pointer, std::string());
}

namespace {

std::string ratio(const std::string& selector, const std::string& window) {
  return "(sum(rate(lockstep_test_requests_total{" + selector + ",code=\"500\"}[" + window +
         "])) or vector(0)) / sum(rate(lockstep_test_requests_total{" + selector + "}[" + window +
         "]))";
}

}  // namespace

std::string ReleaseWorld::trackErrorRatio(const std::string& track,
                                          const std::string& window) const {
  return ratio("namespace=\"" + ns_ + "\",track=\"" + track + "\"", window);
}

std::string ReleaseWorld::releaseErrorRatio(const std::string& release,
                                            const std::string& window) const {
  return ratio("namespace=\"" + ns_ + "\",release=\"" + release + "\"", window);
}

std::string ReleaseWorld::addProvider(const std::string& address, const json& extra) const {
  const std::string name =
      ns_ + (providers_.empty() ? "" : "-" + std::to_string(providers_.size()));
  // Open to this world's namespace only, with free-form queries (the tests'
  // own PromQL); the tenancy tests override both through `extra`.
  json spec = {{"address", address},
               {"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", ns_}}}}},
               {"allowFreeFormQueries", true}};
  if (address.rfind("http://", 0) == 0) spec["allowInsecureHttp"] = true;
  if (extra.is_object()) spec.update(extra);
  json provider = {{"apiVersion", "lockstep.dev/v1alpha1"},
                   {"kind", "AnalysisProvider"},
                   {"metadata", {{"name", name}, {"labels", {{"lockstep.dev/test-ns", ns_}}}}},
                   {"spec", spec}};
  CommandResult r = kubectl({"apply", "-f", "-"}, provider.dump());
  EXPECT_EQ(r.exitCode, 0) << "AnalysisProvider " << name << ": " << r.err;
  if (r.exitCode != 0) return "";
  providers_.push_back(name);
  return name;
}

json ReleaseWorld::analysedStep(int weight, int count, const std::string& query,
                                const std::string& address, const std::string& interval,
                                const std::string& initialDelay) const {
  return {{"weight", weight},
          {"analysis",
           {{"prometheus",
             {{"provider", address.empty() ? provider_ : addProvider(address)},
              {"query", query.empty() ? trackErrorRatio("canary") : query},
              {"max", 0.1},
              {"interval", interval},
              {"initialDelay", initialDelay},
              {"count", count}}}}}};
}

}  // namespace lockstep::testing
