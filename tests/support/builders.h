// Builders for the objects tests feed to planners, caches and fakes:
//   runtimeEnv("torch").image(kImage).inlineLock(lock).generation(2).build()
//   modelRelease("v7").runtimeEnv("torch").closureHash(h).share()
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

class ModelReleaseBuilder {
 public:
  explicit ModelReleaseBuilder(const std::string& name, const std::string& ns = "ml");
  ModelReleaseBuilder& runtimeEnv(const std::string& name);
  ModelReleaseBuilder& closureHash(const std::string& hash);
  ModelReleaseBuilder& validatedClosureHash(const std::string& hash);
  ModelReleaseBuilder& generation(int64_t g);
  ModelReleaseBuilder& uid(const std::string& uid);
  // Appends a gate stage (a Job template running `name`).
  ModelReleaseBuilder& withStage(const std::string& name);
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
