#include "tests/support/builders.h"

#include "api/v1alpha1/resources.h"

namespace lockstep::testing {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

kube::Object skeleton(const kube::Resource& r, const std::string& ns, const std::string& name) {
  kube::Object o = kube::newObject(r, ns, name);
  o["metadata"]["generation"] = 1;
  return o;
}

}  // namespace

kube::ObjectPtr share(kube::Object o) { return std::make_shared<const kube::Object>(std::move(o)); }

RuntimeEnvBuilder::RuntimeEnvBuilder(const std::string& name, const std::string& ns)
    : o_(skeleton(v1::kRuntimeEnvs, ns, name)) {
  o_["spec"] = json::object();
}
RuntimeEnvBuilder& RuntimeEnvBuilder::image(const std::string& image) {
  o_["spec"]["image"] = image;
  return *this;
}
RuntimeEnvBuilder& RuntimeEnvBuilder::inlineLock(const std::string& text) {
  o_["spec"]["lock"] = {{"inline", text}};
  return *this;
}
RuntimeEnvBuilder& RuntimeEnvBuilder::configMapLock(const std::string& cm, const std::string& key) {
  o_["spec"]["lock"] = {{"configMapRef", {{"name", cm}, {"key", key}}}};
  return *this;
}
RuntimeEnvBuilder& RuntimeEnvBuilder::allowUnhashed() {
  o_["spec"]["allowUnhashed"] = true;
  return *this;
}
RuntimeEnvBuilder& RuntimeEnvBuilder::generation(int64_t g) {
  o_["metadata"]["generation"] = g;
  return *this;
}
RuntimeEnvBuilder& RuntimeEnvBuilder::uid(const std::string& uid) {
  o_["metadata"]["uid"] = uid;
  return *this;
}
RuntimeEnvBuilder& RuntimeEnvBuilder::status(const json& status) {
  o_["status"] = status;
  return *this;
}

ModelReleaseBuilder::ModelReleaseBuilder(const std::string& name, const std::string& ns)
    : o_(skeleton(v1::kModelReleases, ns, name)) {
  o_["spec"] = {{"model", name}, {"stages", json::array()}};
}
ModelReleaseBuilder& ModelReleaseBuilder::runtimeEnv(const std::string& name) {
  o_["spec"]["runtimeEnvRef"] = {{"name", name}};
  return *this;
}
ModelReleaseBuilder& ModelReleaseBuilder::closureHash(const std::string& hash) {
  o_["spec"]["closureHash"] = hash;
  return *this;
}
ModelReleaseBuilder& ModelReleaseBuilder::validatedClosureHash(const std::string& hash) {
  o_["status"]["validatedClosureHash"] = hash;
  return *this;
}
ModelReleaseBuilder& ModelReleaseBuilder::generation(int64_t g) {
  o_["metadata"]["generation"] = g;
  return *this;
}
ModelReleaseBuilder& ModelReleaseBuilder::uid(const std::string& uid) {
  o_["metadata"]["uid"] = uid;
  return *this;
}
ModelReleaseBuilder& ModelReleaseBuilder::model(const std::string& model) {
  o_["spec"]["model"] = model;
  return *this;
}
ModelReleaseBuilder& ModelReleaseBuilder::package(const std::string& package) {
  o_["spec"]["package"] = package;
  return *this;
}
ModelReleaseBuilder& ModelReleaseBuilder::withGate(const json& stage) {
  o_["spec"]["stages"].push_back(stage);
  return *this;
}
ModelReleaseBuilder& ModelReleaseBuilder::withProdStage(const ProdStageBuilder& stage) {
  return withProdStage(stage.build());
}
ModelReleaseBuilder& ModelReleaseBuilder::withProdStage(const json& stage) {
  o_["spec"]["stages"].push_back(stage);
  return *this;
}
ModelReleaseBuilder& ModelReleaseBuilder::spec(const std::string& key, const json& value) {
  o_["spec"][key] = value;
  return *this;
}

ProdStageBuilder::ProdStageBuilder(json steps) {
  json tmpl = {{"spec", {{"containers", json::array({{{"name", "server"}}})}}}};
  stage_ = {{"name", "prod"},
            {"serving", {{"template", tmpl}, {"replicas", 2}, {"port", 8080}}},
            {"canary", {{"steps", std::move(steps)}, {"progressDeadline", "2m"}}}};
}
ProdStageBuilder& ProdStageBuilder::replicas(int n) {
  stage_["serving"]["replicas"] = n;
  return *this;
}
ProdStageBuilder& ProdStageBuilder::capacity(const std::string& mode) {
  stage_["canary"]["capacity"] = mode;
  return *this;
}
ProdStageBuilder& ProdStageBuilder::progressDeadline(const std::string& d) {
  stage_["canary"]["progressDeadline"] = d;
  return *this;
}
ProdStageBuilder& ProdStageBuilder::gpus(int n) {
  stage_["serving"]["template"]["spec"]["containers"][0]["resources"] = {
      {"requests", {{"nvidia.com/gpu", std::to_string(n)}}},
      {"limits", {{"nvidia.com/gpu", std::to_string(n)}}}};
  return *this;
}
ProdStageBuilder& ProdStageBuilder::nodeSelector(const std::map<std::string, std::string>& labels) {
  stage_["serving"]["template"]["spec"]["nodeSelector"] = labels;
  return *this;
}
ProdStageBuilder& ProdStageBuilder::podAnnotation(const std::string& key,
                                                  const std::string& value) {
  stage_["serving"]["template"]["metadata"]["annotations"][key] = value;
  return *this;
}
ProdStageBuilder& ProdStageBuilder::noWarmup() {
  return podAnnotation("lockstep.dev/test-warmup", "0s")
      .podAnnotation("lockstep.dev/test-termination", "0s");
}

json canaryStep(int weight, const std::string& pause) {
  json s = {{"weight", weight}};
  if (!pause.empty()) s["pause"] = pause;
  return s;
}

json gateStage(const std::string& name, const std::string& message, const std::string& duration,
               json metrics, const std::string& timeout) {
  json tmpl = {
      {"metadata",
       {{"annotations",
         {{"lockstep.dev/test-termination-message", message},
          {"lockstep.dev/test-duration", duration}}}}},
      {"spec",
       {{"containers", json::array({{{"name", name}, {"command", {"python", "gate.py"}}}})}}}};
  json gate = {{"template", tmpl}, {"timeout", timeout}};
  if (!metrics.empty()) gate["metrics"] = std::move(metrics);
  return {{"name", name}, {"gate", gate}};
}

ModelReleaseBuilder& ModelReleaseBuilder::withStage(const std::string& name) {
  o_["spec"]["stages"].push_back(
      {{"name", name},
       {"gate",
        {{"template", {{"spec", {{"containers", {{{"name", name}, {"command", {name}}}}}}}}},
         {"timeout", "30m"}}}});
  return *this;
}
ModelReleaseBuilder& ModelReleaseBuilder::condition(const std::string& type,
                                                    const std::string& status,
                                                    const std::string& reason,
                                                    const std::string& message) {
  o_["status"]["conditions"].push_back(
      {{"type", type}, {"status", status}, {"reason", reason}, {"message", message}});
  return *this;
}

kube::Object gpuNode(const std::string& name, const std::string& major, const std::string& minor,
                     const std::string& rev) {
  kube::Object o = kube::newObject(v1::kNodes, "", name);
  o["metadata"]["labels"] = {{"nvidia.com/cuda.driver.major", major},
                             {"nvidia.com/cuda.driver.minor", minor},
                             {"nvidia.com/cuda.driver.rev", rev}};
  return o;
}

kube::Object cpuNode(const std::string& name) {
  kube::Object o = kube::newObject(v1::kNodes, "", name);
  o["metadata"]["labels"] = {{"kubernetes.io/os", "linux"}};
  return o;
}

kube::Object configMap(const std::string& name, const std::map<std::string, std::string>& data,
                       const std::string& ns) {
  kube::Object o = kube::newObject(v1::kConfigMaps, ns, name);
  o["data"] = data;
  return o;
}

}  // namespace lockstep::testing
