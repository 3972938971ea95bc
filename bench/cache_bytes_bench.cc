// Heap bytes per cached object, for each kind the operator caches per model
// (docs/benchmarks.md "What each cache holds, per model"), whole as the API
// server returns it, after the transform the informer applied before (strip
// managedFields, or the slimming it had), and after the one it applies now.
//
//   bench_cache_bytes [copies] [repetitions]      (defaults 1000 and 7)
//   bench_cache_bytes --dump                       (each object as its cache holds it)
//
// Objects: the serving Deployment and Service as the operator builds them
// (buildServingDeployment, buildModelService) from the bench's release
// (bench/promotion.py: one container "serve", port 8080, 1 replica, image
// volume), with what the API server adds: its defaults, uid,
// resourceVersion, creationTimestamp, status, and managedFields (one entry
// per writer, fieldsV1 over the fields it wrote); the ReplicaSet and the pod
// as the controllers make them from that template (a pod with its
// service-account volume, tolerations and status as the kubelet writes it);
// the Model and ModelRelease as the recognised path leaves them. Each copy
// is parsed from the object's JSON text (as the reflector decodes it), given
// its own name, transformed and held as the cache holds it (a
// shared_ptr<const Object>); the bytes are the allocator's in-use delta over
// `copies` objects, divided by `copies` (the operator's allocator: jemalloc's
// stats.allocated, or glibc's mallinfo2() with LOCKSTEP_ALLOCATOR=system);
// the median over the repetitions is printed.
#include <malloc.h>
#if LOCKSTEP_BENCH_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/serving_pod.h"
#include "controllers/common/cached_pods.h"
#include "controllers/common/cached_serving_objects.h"
#include "controllers/modelrelease/prod/serving_objects.h"
#include "operator/kube/indexer.h"
#include "operator/kube/object.h"

namespace {

using nlohmann::json;
namespace ctl = lockstep::controllers;
namespace kube = lockstep::kube;

constexpr const char* kNs = "bench";
constexpr const char* kModel = "q00042";
constexpr const char* kWhen = "2026-12-04T22:41:07Z";
const std::string kDigest(64, 'b');

// fieldsV1 of `o`: every member a writer set, as the API server records it.
json fieldsOf(const json& o) {
  if (o.is_object()) {
    json f = json::object();
    for (const auto& [k, v] : o.items()) f["f:" + k] = fieldsOf(v);
    return f;
  }
  if (o.is_array()) {
    json f = json::object();
    f["."] = json::object();
    for (const json& item : o) {
      if (item.is_object() && item.contains("name")) {
        f["k:{\"name\":" + item["name"].dump() + "}"] = fieldsOf(item);
      } else if (item.is_object() && item.contains("type")) {
        f["k:{\"type\":" + item["type"].dump() + "}"] = fieldsOf(item);
      } else {
        f["v:" + item.dump()] = json::object();
      }
    }
    return f;
  }
  return json::object();
}

json managed(const std::string& manager, const std::string& op, const json& fields,
             const std::string& apiVersion, bool status = false) {
  json e = {{"manager", manager}, {"operation", op},          {"apiVersion", apiVersion},
            {"time", kWhen},      {"fieldsType", "FieldsV1"}, {"fieldsV1", fieldsOf(fields)}};
  if (status) e["subresource"] = "status";
  return e;
}

void serverMeta(json& o, const std::string& uidSeed, int generation) {
  json& m = o["metadata"];
  m["uid"] = "6f1c2d3e-4b5a-4c6d-8e7f-" +
             std::string(12 - std::min<size_t>(12, uidSeed.size()), '0') + uidSeed.substr(0, 12);
  m["resourceVersion"] = "18273645";
  m["creationTimestamp"] = kWhen;
  if (generation > 0) m["generation"] = generation;
}

// What the API server defaults in a pod spec, and the kubelet's status.
void podSpecDefaults(json& spec) {
  spec["dnsPolicy"] = "ClusterFirst";
  spec["restartPolicy"] = "Always";
  spec["schedulerName"] = "default-scheduler";
  spec["securityContext"] = json::object();
  spec["terminationGracePeriodSeconds"] = 30;
  for (const char* list : {"containers", "initContainers"}) {
    if (!spec.contains(list)) continue;
    for (json& c : spec[list]) {
      c["imagePullPolicy"] = "IfNotPresent";
      c["terminationMessagePath"] = "/dev/termination-log";
      c["terminationMessagePolicy"] = "File";
      if (!c.contains("resources")) c["resources"] = json::object();
      if (c.contains("ports"))
        for (json& p : c["ports"]) p["protocol"] = "TCP";
    }
  }
}

json condition(const std::string& type, const std::string& status, const std::string& reason = "",
               const std::string& message = "") {
  json c = {{"type", type}, {"status", status}, {"lastTransitionTime", kWhen}};
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  return c;
}

json servingRelease() {
  return {{"spec",
           {{"containers", json::array({{{"name", "serve"},
                                         {"ports", json::array({{{"containerPort", 8080}}})}}})}}}};
}

ctl::ServingObjectsInput input() {
  ctl::ServingObjectsInput in;
  in.model = kModel;
  in.ns = kNs;
  in.modelUid = "6f1c2d3e-4b5a-4c6d-8e7f-00000000m042";
  return in;
}

json deployment() {
  ctl::ServingRelease r{std::string(kModel) + "-v1",
                        "registry.example/models/" + std::string(kModel) + "@sha256:" + kDigest,
                        "sha256:" + std::string(64, 'c'),
                        "torch",
                        "registry.example/runtimes/torch@sha256:" + std::string(64, 'd'),
                        servingRelease(),
                        0,
                        std::nullopt};
  json d = *ctl::buildServingDeployment(input(), ctl::kTrackStable, r, 1);
  const json applied = d;
  serverMeta(d, "d042", 1);
  d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1";
  json& spec = d["spec"];
  spec["progressDeadlineSeconds"] = 600;
  spec["revisionHistoryLimit"] = 10;
  if (!spec.contains("strategy"))
    spec["strategy"] = {{"type", "RollingUpdate"},
                        {"rollingUpdate", {{"maxSurge", "25%"}, {"maxUnavailable", "25%"}}}};
  podSpecDefaults(spec["template"]["spec"]);
  d["status"] = {
      {"observedGeneration", 1},
      {"replicas", 1},
      {"updatedReplicas", 1},
      {"readyReplicas", 1},
      {"availableReplicas", 1},
      {"conditions",
       json::array({condition("Available", "True", "MinimumReplicasAvailable",
                              "Deployment has minimum availability."),
                    condition("Progressing", "True", "NewReplicaSetAvailable",
                              "ReplicaSet \"" + std::string(kModel) +
                                  "-stable-7d9f8c6b5d\" has successfully progressed.")})}};
  d["status"]["conditions"][0]["lastUpdateTime"] = kWhen;
  d["status"]["conditions"][1]["lastUpdateTime"] = kWhen;
  d["metadata"]["managedFields"] =
      json::array({managed("lockstep-operator", "Apply", applied, "apps/v1"),
                   managed("kube-controller-manager", "Update",
                           {{"metadata", {{"annotations", d["metadata"]["annotations"]}}},
                            {"status", d["status"]}},
                           "apps/v1", true)});
  return d;
}

json replicaSet(const json& dep) {
  json rs = {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}};
  json tmpl = dep["spec"]["template"];
  tmpl["metadata"]["labels"]["pod-template-hash"] = "7d9f8c6b5d";
  json labels = tmpl["metadata"]["labels"];
  rs["metadata"] = {
      {"name", std::string(kModel) + "-stable-7d9f8c6b5d"},
      {"namespace", kNs},
      {"labels", labels},
      {"annotations",
       {{"deployment.kubernetes.io/desired-replicas", "1"},
        {"deployment.kubernetes.io/max-replicas", "2"},
        {"deployment.kubernetes.io/revision", "1"},
        {ctl::kTemplateHashAnnotation,
         dep["metadata"]["annotations"].value(ctl::kTemplateHashAnnotation, std::string())}}},
      {"ownerReferences", json::array({{{"apiVersion", "apps/v1"},
                                        {"kind", "Deployment"},
                                        {"name", dep["metadata"]["name"]},
                                        {"uid", dep["metadata"]["uid"]},
                                        {"controller", true},
                                        {"blockOwnerDeletion", true}}})}};
  serverMeta(rs, "r042", 1);
  json selector = dep["spec"]["selector"];
  selector["matchLabels"]["pod-template-hash"] = "7d9f8c6b5d";
  rs["spec"] = {{"replicas", 1}, {"selector", selector}, {"template", tmpl}};
  rs["status"] = {{"replicas", 1},
                  {"fullyLabeledReplicas", 1},
                  {"readyReplicas", 1},
                  {"availableReplicas", 1},
                  {"observedGeneration", 1}};
  rs["metadata"]["managedFields"] = json::array(
      {managed("kube-controller-manager", "Update",
               {{"metadata", rs["metadata"]}, {"spec", rs["spec"]}}, "apps/v1"),
       managed("kube-controller-manager", "Update", {{"status", rs["status"]}}, "apps/v1", true)});
  return rs;
}

json pod(const json& rs) {
  json p = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  const json& tmpl = rs["spec"]["template"];
  p["metadata"] = tmpl["metadata"];
  p["metadata"]["name"] = rs["metadata"]["name"].get<std::string>() + "-x7k2p";
  p["metadata"]["generateName"] = rs["metadata"]["name"].get<std::string>() + "-";
  p["metadata"]["namespace"] = kNs;
  p["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"},
                                                   {"kind", "ReplicaSet"},
                                                   {"name", rs["metadata"]["name"]},
                                                   {"uid", rs["metadata"]["uid"]},
                                                   {"controller", true},
                                                   {"blockOwnerDeletion", true}}});
  serverMeta(p, "p042", 0);
  json spec = tmpl["spec"];
  spec["nodeName"] = "kwok-node-37";
  spec["serviceAccountName"] = "default";
  spec["serviceAccount"] = "default";
  spec["enableServiceLinks"] = true;
  spec["preemptionPolicy"] = "PreemptLowerPriority";
  spec["priority"] = 0;
  spec["tolerations"] = json::array({{{"key", "node.kubernetes.io/not-ready"},
                                      {"operator", "Exists"},
                                      {"effect", "NoExecute"},
                                      {"tolerationSeconds", 300}},
                                     {{"key", "node.kubernetes.io/unreachable"},
                                      {"operator", "Exists"},
                                      {"effect", "NoExecute"},
                                      {"tolerationSeconds", 300}}});
  spec["volumes"].push_back(
      {{"name", "kube-api-access-5qz8w"},
       {"projected",
        {{"defaultMode", 420},
         {"sources",
          json::array(
              {{{"serviceAccountToken", {{"expirationSeconds", 3607}, {"path", "token"}}}},
               {{"configMap",
                 {{"name", "kube-root-ca.crt"},
                  {"items", json::array({{{"key", "ca.crt"}, {"path", "ca.crt"}}})}}}},
               {{"downwardAPI",
                 {{"items", json::array({{{"path", "namespace"},
                                          {"fieldRef",
                                           {{"apiVersion", "v1"},
                                            {"fieldPath", "metadata.namespace"}}}}})}}}}})}}}});
  for (json& c : spec["containers"])
    c["volumeMounts"].push_back({{"name", "kube-api-access-5qz8w"},
                                 {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"},
                                 {"readOnly", true}});
  p["spec"] = spec;
  json statuses = json::array();
  for (const json& c : spec["containers"])
    statuses.push_back({{"name", c["name"]},
                        {"image", c.value("image", "")},
                        {"imageID", ""},
                        {"containerID", ""},
                        {"ready", true},
                        {"started", true},
                        {"restartCount", 0},
                        {"state", {{"running", {{"startedAt", kWhen}}}}}});
  p["status"] = {
      {"phase", "Running"},
      {"hostIP", "10.0.3.37"},
      {"hostIPs", json::array({{{"ip", "10.0.3.37"}}})},
      {"podIP", "10.0.3.37"},
      {"podIPs", json::array({{{"ip", "10.0.3.37"}}})},
      {"qosClass", "BestEffort"},
      {"startTime", kWhen},
      {"conditions",
       json::array({condition("Initialized", "True"), condition("Ready", "True"),
                    condition("ContainersReady", "True"), condition("PodScheduled", "True")})},
      {"containerStatuses", statuses}};
  p["metadata"]["managedFields"] =
      json::array({managed("kube-controller-manager", "Update",
                           {{"metadata", p["metadata"]}, {"spec", tmpl["spec"]}}, "v1"),
                   managed("kwok", "Update", {{"status", p["status"]}}, "v1", true)});
  return p;
}

json service() {
  json s = ctl::buildModelService(input());
  const json applied = s;
  serverMeta(s, "s042", 0);
  s["spec"]["clusterIP"] = "10.0.117.203";
  s["spec"]["clusterIPs"] = json::array({"10.0.117.203"});
  s["spec"]["internalTrafficPolicy"] = "Cluster";
  s["spec"]["ipFamilies"] = json::array({"IPv4"});
  s["spec"]["ipFamilyPolicy"] = "SingleStack";
  s["spec"]["sessionAffinity"] = "None";
  s["status"] = {{"loadBalancer", json::object()}};
  s["metadata"]["managedFields"] =
      json::array({managed("lockstep-operator", "Apply", applied, "v1")});
  return s;
}

json prodRecord() {
  return {{"release", std::string(kModel) + "-v1"},
          {"uid", "6f1c2d3e-4b5a-4c6d-8e7f-00000000r042"},
          {"contentDigest", "sha256:" + std::string(64, 'e')},
          {"package", "registry.example/models/" + std::string(kModel) + "@sha256:" + kDigest},
          {"runtime",
           {{"runtimeEnv", "torch"},
            {"image", "registry.example/runtimes/torch@sha256:" + std::string(64, 'd')},
            {"closureHash", "sha256:" + std::string(64, 'c')},
            {"revision", 1}}},
          {"since", kWhen}};
}

json model() {
  json m = {{"apiVersion", "lockstep.dev/v1alpha1"},
            {"kind", "Model"},
            {"metadata", {{"name", kModel}, {"namespace", kNs}}},
            {"spec", {{"serviceType", "ClusterIP"}, {"revisionHistoryLimit", 10}}}};
  const json created = m;
  serverMeta(m, "m042", 1);
  m["status"] = {{"observedGeneration", 1},
                 {"revision", 1},
                 {"prod", prodRecord()},
                 {"history", json::array({{{"action", "Promoted"},
                                           {"release", std::string(kModel) + "-v1"},
                                           {"uid", "6f1c2d3e-4b5a-4c6d-8e7f-00000000r042"},
                                           {"contentDigest", "sha256:" + std::string(64, 'e')},
                                           {"revision", 1},
                                           {"at", kWhen}}})},
                 {"conditions",
                  json::array({condition("Ready", "True", "ProdReady",
                                         "1/1 pods of " + std::string(kModel) +
                                             "-v1 Ready on its pair (torch@sha256:dddddddddddd)"),
                               condition("Degraded", "False", "AsRecorded")})}};
  m["metadata"]["managedFields"] =
      json::array({managed("kubectl-create", "Update", created, "lockstep.dev/v1alpha1"),
                   managed("lockstep-operator", "Update", {{"status", m["status"]}},
                           "lockstep.dev/v1alpha1", true)});
  return m;
}

json release() {
  json r = {{"apiVersion", "lockstep.dev/v1alpha1"},
            {"kind", "ModelRelease"},
            {"metadata", {{"name", std::string(kModel) + "-v1"}, {"namespace", kNs}}},
            {"spec",
             {{"model", kModel},
              {"package", "registry.example/models/" + std::string(kModel) + "@sha256:" + kDigest},
              {"runtimeEnvRef", {{"name", "torch"}}},
              {"closureHash", "sha256:" + std::string(64, 'c')},
              {"stages",
               json::array(
                   {{{"name", "prod"},
                     {"serving", {{"template", servingRelease()}, {"replicas", 1}, {"port", 8080}}},
                     {"canary", {{"steps", json::array({{{"weight", 100}}})}}}}})}}}};
  const json created = r;
  r["metadata"]["labels"] = {{"lockstep.dev/model", kModel}};
  r["metadata"]["finalizers"] = json::array({"lockstep.dev/release"});
  serverMeta(r, "r042", 1);
  r["status"] = {
      {"observedGeneration", 1},
      {"phase", "Promoted"},
      {"currentStage", "prod"},
      {"runtime",
       {{"runtimeEnv", "torch"},
        {"revision", 1},
        {"image", "registry.example/runtimes/torch@sha256:" + std::string(64, 'd')},
        {"closureHash", "sha256:" + std::string(64, 'c')}}},
      {"stages", json::array({{{"name", "prod"}, {"phase", "Promoted"}, {"finishedAt", kWhen}}})},
      {"conditions",
       json::array({condition("Ready", "True", "Promoted",
                              "prod of model " + std::string(kModel) + " runs this release"),
                    condition("Stalled", "False", "AsPlanned")})}};
  r["metadata"]["managedFields"] =
      json::array({managed("kubectl-create", "Update", created, "lockstep.dev/v1alpha1"),
                   managed("lockstep-operator", "Update", {{"status", r["status"]}},
                           "lockstep.dev/v1alpha1", true)});
  return r;
}

#if LOCKSTEP_BENCH_JEMALLOC
constexpr const char* kAllocator = "jemalloc stats.allocated";
size_t heapInUse() {
  uint64_t epoch = 1;
  size_t len = sizeof(epoch);
  mallctl("epoch", &epoch, &len, &epoch, len);
  size_t allocated = 0;
  len = sizeof(allocated);
  if (mallctl("stats.allocated", &allocated, &len, nullptr, 0) != 0) {
    std::fprintf(stderr, "bench_cache_bytes: jemalloc has no stats.allocated\n");
    std::exit(1);
  }
  return allocated;
}
#else
constexpr const char* kAllocator = "glibc mallinfo2";
size_t heapInUse() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}
#endif

using Transform = std::function<void(kube::Object&)>;

// Bytes per object held after `transform`, over `copies` copies.
double bytesPerObject(const std::string& text, const Transform& transform, int copies) {
  std::vector<kube::ObjectPtr> held;
  held.reserve(static_cast<size_t>(copies));
  const size_t before = heapInUse();
  for (int i = 0; i < copies; ++i) {
    kube::Object o = json::parse(text);
    o["metadata"]["name"] = o["metadata"]["name"].get<std::string>() + "-" + std::to_string(i);
    if (transform) transform(o);
    held.push_back(std::make_shared<const kube::Object>(std::move(o)));
  }
  const size_t after = heapInUse();
  return static_cast<double>(after - before) / copies;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double measure(const std::string& text, const Transform& t, int copies, int reps) {
  std::vector<double> v;
  v.reserve(static_cast<size_t>(reps));
  for (int r = 0; r < reps; ++r) v.push_back(bytesPerObject(text, t, copies));
  return median(v);
}

struct Row {
  const char* cache;  // the informer
  json object;
  Transform before, after;
};

}  // namespace

int main(int argc, char** argv) {
  // --dump: each object as the cache now holds it (what the rows measure).
  const bool dump = argc > 1 && std::string(argv[1]) == "--dump";
  if (dump) {
    argc = 1;
  }
  const int copies = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 7;
  if (copies <= 0 || reps <= 0) {
    std::fprintf(stderr, "usage: bench_cache_bytes [copies > 0] [repetitions > 0]\n");
    return 2;
  }
  const json dep = deployment();
  const json rs = replicaSet(dep);
  const json p = pod(rs);
  const Transform strip = kube::stripManagedFields;
  const std::vector<Row> rows = {
      {"ModelRelease (all)", release(), strip, strip},
      {"Model (all)", model(), strip, strip},
      {"Deployment (lockstep.dev/model)", dep, strip, ctl::slimDeployment},
      {"Service (lockstep.dev/model)", service(), strip, ctl::slimService},
      {"ReplicaSet (lockstep.dev/model)", rs, lockstep::api::v1alpha1::slimReplicaSet,
       lockstep::api::v1alpha1::slimReplicaSet},
      {"Pod (lockstep.dev/release)", p, strip, ctl::slimReleasePod},
      {"Pod (unfinished: GPU count, drift)", p, ctl::slimPod, ctl::slimPod},
  };
  if (dump) {
    for (const Row& r : rows) {
      kube::Object o = r.object;
      r.after(o);
      std::printf("%s: %s\n", r.cache, o.dump(2).c_str());
    }
    return 0;
  }
  std::printf("copies %d, repetitions %d, %s; heap bytes per cached object (median)\n", copies,
              reps, kAllocator);
  std::printf("%-36s %8s %8s %8s %8s\n", "cache", "text", "whole", "before", "after");
  double sumWhole = 0, sumBefore = 0, sumAfter = 0;
  for (const Row& r : rows) {
    const std::string text = r.object.dump();
    const double whole = measure(text, nullptr, copies, reps);
    const double before = measure(text, r.before, copies, reps);
    const double after = measure(text, r.after, copies, reps);
    sumWhole += whole;
    sumBefore += before;
    sumAfter += after;
    std::printf("%-36s %8zu %8.0f %8.0f %8.0f\n", r.cache, text.size(), whole, before, after);
  }
  std::printf("%-36s %8s %8.0f %8.0f %8.0f\n", "per model (the 7 caches)", "", sumWhole, sumBefore,
              sumAfter);
  // The cache's own entry: the key and the namespace and owner-uid indexes.
  std::vector<double> idx;
  idx.reserve(static_cast<size_t>(reps));
  for (int r = 0; r < reps; ++r) {
    std::vector<kube::ObjectPtr> objs;
    objs.reserve(static_cast<size_t>(copies));
    for (int i = 0; i < copies; ++i) {
      kube::Object o = p;
      o["metadata"]["name"] = "pod-" + std::to_string(i);
      ctl::slimPod(o);
      objs.push_back(std::make_shared<const kube::Object>(std::move(o)));
    }
    const size_t before = heapInUse();
    {
      kube::Indexer cache;
      for (const auto& o : objs) cache.upsert(o);
      idx.push_back(static_cast<double>(heapInUse() - before) / copies);
    }
  }
  std::printf("%-36s %8s %8.0f\n", "index entry (key, 2 indexes)", "", median(idx));
  return 0;
}
