#include "tests/prometheus/prometheus_world.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "tests/support/process.h"

#ifndef LOCKSTEP_TEST_EXPORTER_BIN
#error "LOCKSTEP_TEST_EXPORTER_BIN must be defined by the build"
#endif

namespace lockstep::testing {

bool PrometheusWorld::script(const std::vector<std::string>& args, std::string* out) {
  std::vector<std::string> argv{sourcePath("tests/cluster/prometheus.sh"), args.at(0), "--dir",
                                dir_};
  argv.insert(argv.end(), args.begin() + 1, args.end());
  CommandResult r = run(argv);
  if (out != nullptr) *out = r.out;
  if (r.exitCode != 0) {
    std::cerr << "prometheus.sh " << args.at(0) << " exited " << r.exitCode << "\n"
              << r.out << r.err;
  }
  return r.exitCode == 0;
}

std::unique_ptr<PrometheusWorld> PrometheusWorld::start(const Options& options,
                                                        std::string& error) {
  std::unique_ptr<PrometheusWorld> w(new PrometheusWorld);
  char tmpl[] = "/tmp/lockstep-prometheus-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    error = "mkdtemp failed";
    return nullptr;
  }
  w->dir_ = tmpl;
  // --owner-pid: the script stops both processes if this test binary crashes.
  std::vector<std::string> args{"up", "--exporter", LOCKSTEP_TEST_EXPORTER_BIN, "--owner-pid",
                                std::to_string(getpid())};
  if (options.tls) args.emplace_back("--tls");
  for (const std::string& target : options.scrapeTargets) {
    args.emplace_back("--target");
    args.push_back(target);
  }
  if (!options.scrapeInterval.empty()) {
    args.emplace_back("--scrape-interval");
    args.push_back(options.scrapeInterval);
  }
  if (!options.kubeconfig.empty()) {
    args.emplace_back("--kubeconfig");
    args.push_back(options.kubeconfig);
  }
  if (!options.ns.empty()) {
    args.emplace_back("--namespace");
    args.push_back(options.ns);
  }
  for (const std::string& pod : options.pods) {
    args.emplace_back("--pod");
    args.push_back(pod);
  }
  if (!options.scrapeToken.empty()) {
    const std::string tokenFile = w->dir_ + "-scrape.token";
    std::ofstream(tokenFile) << options.scrapeToken;
    args.emplace_back("--target-token-file");
    args.push_back(tokenFile);
  }
  std::string out;
  if (!w->script(args, &out)) {
    error = "tests/cluster/prometheus.sh up failed (its log is above):\n" + out;
    return nullptr;
  }
  auto env = exportsOf(out);
  w->url_ = env["LOCKSTEP_PROMETHEUS_URL"];
  w->exporterUrl_ = env["LOCKSTEP_EXPORTER_URL"];
  w->caFile_ = env["LOCKSTEP_PROMETHEUS_CA"];
  if (w->url_.empty() || w->exporterUrl_.empty()) {
    error = "prometheus.sh up printed no URLs:\n" + out;
    return nullptr;
  }
  return w;
}

PrometheusWorld::~PrometheusWorld() {
  if (!dir_.empty()) {
    (void)script({"down"});
    std::remove((dir_ + "-scrape.token").c_str());
  }
}

bool PrometheusWorld::setRate(const std::string& release, double errors, double rps) {
  std::vector<std::string> args{"rate", release, std::to_string(errors)};
  if (rps >= 0) args.push_back(std::to_string(rps));
  return script(args);
}

bool PrometheusWorld::stopPrometheus() { return script({"stop-prometheus"}); }
bool PrometheusWorld::startPrometheus() { return script({"start-prometheus"}); }

}  // namespace lockstep::testing
