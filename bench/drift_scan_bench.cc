// The drift scan's CPU cost (drift/pod_drift.h) at 10,000 pods, beside the pod
// admission check (webhooks/admission/pod_validator.h) of the same pods in the
// same run: the scan does per running pod roughly what admission did once per
// created pod, so the ratio says what the background scan adds.
//
//   bench_drift_scan [pods] [namespaces] [repetitions]
//
// Pods are slimmed as the shared cache holds them (controllers/common/cached_pods.h);
// every 100th runs another image. Each repetition scans every namespace once
// (scanNamespace, then the PolicyReport) and admits every pod once (validatePod,
// warn mode); medians of the CPU time per pod over the repetitions are printed.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/cpu_timing.h"
#include "drift/pod_drift.h"
#include "webhooks/admission/pod_validator.h"

namespace {

using lockstep::webhooks::NamespaceMode;
using lockstep::webhooks::RevisionView;
using lockstep::webhooks::RuntimeEnvView;
using nlohmann::json;

using lockstep::bench::cpuSeconds;
using lockstep::bench::median;

}  // namespace

int main(int argc, char** argv) {
  const int pods = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10000;
  const int namespaces = argc > 2 ? std::max(1, std::atoi(argv[2])) : 20;
  const int reps = argc > 3 ? std::max(1, std::atoi(argv[3])) : 11;
  const std::string image = "registry.example/runtimes/torch@sha256:" + std::string(64, 'a');
  const std::string other = "registry.example/runtimes/torch@sha256:" + std::string(64, 'b');
  const std::string hash = "sha256:" + std::string(64, '1');
  RuntimeEnvView env;
  env.name = "torch";
  env.closureHash = hash;
  env.image = image;
  env.ready = true;
  env.currentRevision = 3;
  env.revisions = {RevisionView{2, image, "sha256:" + std::string(64, '2')},
                   RevisionView{3, image, hash}};
  std::vector<std::vector<json>> byNs(namespaces);
  for (int i = 0; i < pods; ++i) {
    const std::string ns = "team-" + std::to_string(i % namespaces);
    env.ns = ns;
    byNs[i % namespaces].push_back(
        {{"metadata",
          {{"name", "serve-" + std::to_string(i)},
           {"namespace", ns},
           {"uid", "uid-" + std::to_string(i)},
           {"labels", {{"lockstep.dev/runtime-env", "torch"}, {"app", "serve"}}},
           {"annotations", {{"lockstep.dev/closure-hash", hash}}}}},
         {"spec",
          {{"containers",
            json::array({{{"name", "main"}, {"image", i % 100 == 99 ? other : image}}})},
           {"initContainers", json::array()},
           {"volumes", json::array({{{"name", "model"}, {"image", {{"reference", image}}}}})}}},
         {"status", {{"phase", "Running"}}}});
  }
  lockstep::drift::RuntimeEnvFinder find = [&](std::string_view) { return env; };
  std::vector<double> scan, admit;
  size_t findings = 0;
  for (int r = 0; r < reps; ++r) {
    double t0 = cpuSeconds();
    findings = 0;
    for (int n = 0; n < namespaces; ++n) {
      std::vector<const json*> ptrs;
      for (const json& p : byNs[n]) ptrs.push_back(&p);
      auto s = lockstep::drift::scanNamespace("team-" + std::to_string(n), NamespaceMode::kWarn,
                                              ptrs, find, "");
      findings += s.findings.size();
      json report = lockstep::drift::policyReport(s, lockstep::drift::sinceOf(json()), 0);
      if (report.empty()) return 1;
    }
    double t1 = cpuSeconds();
    size_t denied = 0;
    for (int n = 0; n < namespaces; ++n) {
      for (const json& p : byNs[n]) {
        lockstep::webhooks::PodReview review;
        review.ns = "team-" + std::to_string(n);
        review.pod = &p;
        review.mode = NamespaceMode::kWarn;
        review.runtimeEnv = env;
        denied += lockstep::webhooks::validatePod(review).warnings.empty() ? 0 : 1;
      }
    }
    double t2 = cpuSeconds();
    if (denied != findings) {
      std::fprintf(stderr, "scan found %zu, admission warned %zu: they disagree\n", findings,
                   denied);
      return 1;
    }
    scan.push_back((t1 - t0) / pods);
    admit.push_back((t2 - t1) / pods);
  }
  const double s = median(scan), a = median(admit);
  std::printf(
      "{\"pods\": %d, \"namespaces\": %d, \"repetitions\": %d, \"drifting\": %zu,\n"
      " \"scan_us_per_pod\": %.3f, \"scan_ms_per_round\": %.2f,\n"
      " \"admission_us_per_pod\": %.3f, \"ratio_scan_over_admission\": %.2f}\n",
      pods, namespaces, reps, findings, s * 1e6, s * pods * 1e3, a * 1e6, s / a);
  return 0;
}
