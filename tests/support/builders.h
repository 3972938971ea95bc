// Builders for the objects tests feed to planners, caches and fakes, and
// cluster tests create:
//   runtimeEnv("torch").image(kImage).inlineLock(lock).generation(2).build()
//   modelRelease("v7").runtimeEnv("torch").closureHash(h).share()
//   modelRelease("v2", ns).model("gpt2").package(p).withGate(gateStage("eval"))
//       .withProdStage(prodStage({canaryStep(50), canaryStep(100)}).replicas(2))
// Defaults: namespace "ml", generation 1, apiVersion/kind set.
// Thread-safety: values.
#pragma once

#include <map>
#include <string>

#include "operator/kube/object.h"

namespace lockstep::testing {

// A cached object as the informer holds it.
kube::ObjectPtr share(kube::Object o);

class RuntimeEnvBuilder {
 public:
  explicit RuntimeEnvBuilder(const std::string& name, const std::string& ns = "ml");
  RuntimeEnvBuilder& image(const std::string& image);
  RuntimeEnvBuilder& inlineLock(const std::string& text);
  RuntimeEnvBuilder& configMapLock(const std::string& configMap, const std::string& key);
  RuntimeEnvBuilder& allowUnhashed();
  RuntimeEnvBuilder& generation(int64_t g);
  RuntimeEnvBuilder& uid(const std::string& uid);
  RuntimeEnvBuilder& status(const nlohmann::json& status);
  kube::Object build() const { return o_; }
  kube::ObjectPtr share() const { return testing::share(o_); }

 private:
  kube::Object o_;
};
inline RuntimeEnvBuilder runtimeEnv(const std::string& name, const std::string& ns = "ml") {
  return RuntimeEnvBuilder(name, ns);
}

// The prod stage of a release (docs/rollouts.md): a serving template with one
// container "server", `replicas` pods on port 8080, canary steps.
class ProdStageBuilder {
 public:
  explicit ProdStageBuilder(nlohmann::json steps);
  ProdStageBuilder& replicas(int n);
  ProdStageBuilder& capacity(const std::string& mode);  // surge or drain
  ProdStageBuilder& progressDeadline(const std::string& d);
  ProdStageBuilder& gpus(int n);  // nvidia.com/gpu requests and limits of the server
  ProdStageBuilder& nodeSelector(const std::map<std::string, std::string>& labels);
  // An annotation of the serving pods (the test world's lockstep.dev/test-*).
  ProdStageBuilder& podAnnotation(const std::string& key, const std::string& value);
  // Pods Ready at once and gone at once when deleted: the test world without
  // warm-up and termination (lockstep.dev/test-warmup and test-termination "0s").
  ProdStageBuilder& noWarmup();
  nlohmann::json build() const { return stage_; }

 private:
  nlohmann::json stage_;
};
inline ProdStageBuilder prodStage(nlohmann::json steps) {
  return ProdStageBuilder(std::move(steps));
}
// A canary step at `weight` percent, with an optional pause ("10s", "Indefinite").
nlohmann::json canaryStep(int weight, const std::string& pause = "");
// A gate stage whose KWOK pod ends after `duration` with termination message `message`.
nlohmann::json gateStage(const std::string& name, const std::string& message = "",
                         const std::string& duration = "1s",
                         nlohmann::json metrics = nlohmann::json::array(),
                         const std::string& timeout = "5m");

class ModelReleaseBuilder {
 public:
  explicit ModelReleaseBuilder(const std::string& name, const std::string& ns = "ml");
  ModelReleaseBuilder& runtimeEnv(const std::string& name);
  ModelReleaseBuilder& closureHash(const std::string& hash);
  ModelReleaseBuilder& validatedClosureHash(const std::string& hash);
  ModelReleaseBuilder& generation(int64_t g);
  ModelReleaseBuilder& uid(const std::string& uid);
  ModelReleaseBuilder& model(const std::string& model);
  ModelReleaseBuilder& package(const std::string& package);
  // Appends a gate stage (a Job template running `name`).
  ModelReleaseBuilder& withStage(const std::string& name);
  // Appends a stage as given (gateStage(...), or any stage JSON).
  ModelReleaseBuilder& withGate(const nlohmann::json& stage);
  ModelReleaseBuilder& withProdStage(const ProdStageBuilder& stage);
  ModelReleaseBuilder& withProdStage(const nlohmann::json& stage);
  ModelReleaseBuilder& spec(const std::string& key, const nlohmann::json& value);
  ModelReleaseBuilder& condition(const std::string& type, const std::string& status,
                                 const std::string& reason, const std::string& message);
  kube::Object build() const { return o_; }
  kube::ObjectPtr share() const { return testing::share(o_); }

 private:
  kube::Object o_;
};
inline ModelReleaseBuilder modelRelease(const std::string& name, const std::string& ns = "ml") {
  return ModelReleaseBuilder(name, ns);
}

// A node reporting an NVIDIA driver through GPU feature discovery labels.
kube::Object gpuNode(const std::string& name, const std::string& major, const std::string& minor,
                     const std::string& rev);
kube::Object cpuNode(const std::string& name);
kube::Object configMap(const std::string& name, const std::map<std::string, std::string>& data,
                       const std::string& ns = "ml");

}  // namespace lockstep::testing
