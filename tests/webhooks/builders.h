// Builders for admission test objects: pods, ModelReleases, AdmissionReviews.
// Thread-safety: values.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::webhooks::testing {

inline std::string hexOf(char c) { return std::string(64, c); }
inline std::string sha(char c) { return "sha256:" + hexOf(c); }

inline const std::string kEnvImage = "registry.example/runtimes/torch@" + sha('a');
inline const std::string kEnvHash = sha('c');

class PodBuilder {
 public:
  explicit PodBuilder(std::string name = "web-1") {
    pod_ = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"namespace", "ml"}}},
            {"spec", {{"containers", nlohmann::json::array()}}}};
    if (!name.empty()) pod_["metadata"]["name"] = std::move(name);
  }
  // A pod that passes against the default RuntimeEnv "torch".
  static PodBuilder good(std::string name = "web-1") {
    return PodBuilder(std::move(name)).env("torch").hash(kEnvHash).container("app", kEnvImage);
  }
  PodBuilder& generateName(const std::string& g) {
    pod_["metadata"].erase("name");
    pod_["metadata"]["generateName"] = g;
    return *this;
  }
  PodBuilder& env(const std::string& name) {
    pod_["metadata"]["labels"]["lockstep.dev/runtime-env"] = name;
    return *this;
  }
  PodBuilder& noEnv() {
    pod_["metadata"].erase("labels");
    return *this;
  }
  PodBuilder& hash(const std::string& h) {
    pod_["metadata"]["annotations"]["lockstep.dev/closure-hash"] = h;
    return *this;
  }
  PodBuilder& noHash() {
    pod_["metadata"].erase("annotations");
    return *this;
  }
  // Label lockstep.dev/release: the release the pod belongs to.
  PodBuilder& release(const std::string& name) {
    pod_["metadata"]["labels"]["lockstep.dev/release"] = name;
    return *this;
  }
  PodBuilder& annotate(const std::string& key, const std::string& value) {
    pod_["metadata"]["annotations"][key] = value;
    return *this;
  }
  PodBuilder& container(const std::string& name, const std::string& image) {
    return add("containers", name, image);
  }
  PodBuilder& init(const std::string& name, const std::string& image) {
    return add("initContainers", name, image);
  }
  PodBuilder& ephemeral(const std::string& name, const std::string& image) {
    return add("ephemeralContainers", name, image);
  }
  PodBuilder& clearContainers() {
    pod_["spec"]["containers"] = nlohmann::json::array();
    return *this;
  }
  PodBuilder& imageVolume(const std::string& name, const std::string& reference) {
    pod_["spec"]["volumes"].push_back(
        {{"name", name}, {"image", {{"reference", reference}, {"pullPolicy", "IfNotPresent"}}}});
    return *this;
  }
  nlohmann::json json() const { return pod_; }

 private:
  PodBuilder& add(const char* field, const std::string& name, const std::string& image) {
    pod_["spec"][field].push_back({{"name", name}, {"image", image}});
    return *this;
  }
  nlohmann::json pod_;
};

class ReleaseBuilder {
 public:
  explicit ReleaseBuilder(std::string name = "gpt2-v7") {
    mr_ = {{"apiVersion", "lockstep.dev/v1alpha1"},
           {"kind", "ModelRelease"},
           {"metadata", {{"name", std::move(name)}, {"namespace", "ml"}}},
           {"spec",
            {{"model", "gpt2"},
             {"package", "registry.example/models/gpt2@" + sha('b')},
             {"runtimeEnvRef", {{"name", "torch"}}},
             {"closureHash", kEnvHash},
             {"stages", nlohmann::json::array()}}}};
  }
  // eval → ci → prod, valid against the default RuntimeEnv.
  static ReleaseBuilder good() { return ReleaseBuilder().gate("eval").gate("ci").serving("prod"); }
  ReleaseBuilder& set(const std::string& field, nlohmann::json v) {
    mr_["spec"][field] = std::move(v);
    return *this;
  }
  ReleaseBuilder& erase(const std::string& field) {
    mr_["spec"].erase(field);
    return *this;
  }
  ReleaseBuilder& gate(const std::string& name) {
    mr_["spec"]["stages"].push_back(
        {{"name", name},
         {"gate", {{"template", {{"spec", {{"containers", {{{"name", "eval"}}}}}}}}}}});
    return *this;
  }
  ReleaseBuilder& serving(const std::string& name, nlohmann::json steps = nullptr) {
    nlohmann::json stage = {{"name", name}, {"serving", {{"replicas", 2}, {"port", 8080}}}};
    if (!steps.is_null()) stage["canary"]["steps"] = std::move(steps);
    mr_["spec"]["stages"].push_back(std::move(stage));
    return *this;
  }
  // A gate stage whose template has `containers` [{name, image?}] ("" = no image).
  ReleaseBuilder& gateWith(const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& containers,
                           const std::vector<std::pair<std::string, std::string>>& inits = {}) {
    nlohmann::json spec = nlohmann::json::object();
    for (auto [field, list] :
         {std::pair{"containers", &containers}, std::pair{"initContainers", &inits}}) {
      for (const auto& [cname, image] : *list) {
        nlohmann::json c = {{"name", cname}};
        if (!image.empty()) c["image"] = image;
        spec[field].push_back(std::move(c));
      }
    }
    mr_["spec"]["stages"].push_back({{"name", name}, {"gate", {{"template", {{"spec", spec}}}}}});
    return *this;
  }
  // A serving stage whose template has one container with `image`.
  ReleaseBuilder& servingWith(const std::string& name, const std::string& image) {
    nlohmann::json stage = {{"name", name}, {"serving", {{"replicas", 2}, {"port", 8080}}}};
    stage["serving"]["template"]["spec"]["containers"] =
        nlohmann::json::array({{{"name", "server"}, {"image", image}}});
    mr_["spec"]["stages"].push_back(std::move(stage));
    return *this;
  }
  ReleaseBuilder& manual(const std::string& stage) {
    for (auto& s : mr_["spec"]["stages"]) {
      if (s["name"] == stage) s["approval"] = "Manual";
    }
    return *this;
  }
  ReleaseBuilder& annotate(const std::string& key, const std::string& value) {
    mr_["metadata"]["annotations"][key] = value;
    return *this;
  }
  // The approval of `stage` (or "<stage>.<k>") by `user`, with the groups the
  // mutating webhook records next to it (a JSON array; "[]": a user in no group).
  ReleaseBuilder& approvedBy(const std::string& stage, const std::string& user,
                             const std::string& groups = "[]") {
    annotate("approver-groups.lockstep.dev/" + stage, groups);
    return annotate("approve.lockstep.dev/" + stage, user);
  }
  ReleaseBuilder& abortedBy(const std::string& user) {
    return annotate("lockstep.dev/abort", user);
  }
  // Status as the controller writes it when `stage` waits for approval: the
  // stages before it Succeeded, phase Testing (an approval is for a waiting stage).
  ReleaseBuilder& waitingForApproval(const std::string& stage) {
    mr_ = withStageWaiting(std::move(mr_), stage);
    return *this;
  }
  // Status of a release in canary at `step` (0-based), paused there.
  ReleaseBuilder& pausedAt(int step) {
    mr_["status"] = {{"phase", "Canary"}, {"canary", {{"step", step}, {"reason", "CanaryPaused"}}}};
    return *this;
  }
  // `release` with the status of waitingForApproval(stage), its other status fields kept.
  static nlohmann::json withStageWaiting(nlohmann::json release, const std::string& stage) {
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& s : release["spec"]["stages"]) {
      const bool here = s.value("name", "") == stage;
      stages.push_back(
          {{"name", s.value("name", "")}, {"phase", here ? "WaitingForApproval" : "Succeeded"}});
      if (here) break;
    }
    release["status"]["phase"] = "Testing";
    release["status"]["stages"] = std::move(stages);
    return release;
  }
  ReleaseBuilder& rawStage(nlohmann::json stage) {
    mr_["spec"]["stages"].push_back(std::move(stage));
    return *this;
  }
  nlohmann::json json() const { return mr_; }

 private:
  nlohmann::json mr_;
};

// An AdmissionReview request body around an object.
inline std::string review(const std::string& op, const nlohmann::json& object,
                          const nlohmann::json& oldObject = nullptr, bool dryRun = false,
                          const std::string& uid = "uid-1", const std::string& subResource = "",
                          const nlohmann::json& userInfo = {{"username", "alice"}}) {
  nlohmann::json req = {{"uid", uid},
                        {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                        {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                        {"namespace", "ml"},
                        {"operation", op},
                        {"userInfo", userInfo},
                        {"dryRun", dryRun},
                        {"object", object},
                        {"oldObject", oldObject}};
  if (object.is_object() && object.contains("metadata") && object["metadata"].contains("name")) {
    req["name"] = object["metadata"]["name"];
  }
  if (!subResource.empty()) req["subResource"] = subResource;
  return nlohmann::json{
      {"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", req}}
      .dump();
}

}  // namespace lockstep::webhooks::testing
