// lockstep-webhook-dev: serves both admission webhooks from in-memory lookups
// (a JSON file; see webhooks/admission/static_lookups.h) over TLS, with a
// self-signed CA generated at start (written to --ca-out for the caBundle) or
// a mounted certificate pair (--cert-file/--key-file, reloaded on change).
// For the benchmark and local cluster smoke tests until the operator main
// wires the same pieces to the informer cache.
#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>
#include <csignal>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "webhooks/admission/handler.h"
#include "webhooks/admission/static_lookups.h"
#include "webhooks/certs/cert_file_watcher.h"
#include "webhooks/certs/cert_upkeep.h"
#include "webhooks/certs/in_memory_cert_store.h"
#include "webhooks/certs/self_managed.h"
#include "webhooks/metrics/prometheus_recorder.h"
#include "webhooks/server/beast_server.h"
#include "webhooks/webhook_routes.h"

namespace lw = lockstep::webhooks;

namespace {

constexpr const char* kUsage = R"(usage: lockstep-webhook-dev [flags]
  --config FILE        lookups JSON {"runtimeEnvs":[...],"namespaces":{...},
                       "authorization":{...}} (default: empty; approvals allowed)
  --address ADDR       listen address (default 127.0.0.1)
  --port N             listen port, 0 = any (default 9443)
  --port-file FILE     write the bound port here once listening
  --threads N          server threads (default 2)
  --ca-out FILE        write the generated CA bundle here (self-managed mode)
  --cert-validity-hours N  serving certificate validity (default 2160)
  --cert-file FILE --key-file FILE   use a mounted pair instead (reloaded on change)
  --metrics-port N     serve Prometheus /metrics on 127.0.0.1:N (default off)
  --log-level LEVEL    trace|debug|info|warn|error|off (default info)
)";

struct Flags {
  std::map<std::string, std::string> values;
  std::string get(const std::string& k, const std::string& def = "") const {
    auto it = values.find(k);
    return it == values.end() ? def : it->second;
  }
};

bool parseFlags(int argc, char** argv, Flags& f) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") return false;
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) {
      std::cerr << "bad flag: " << a << "\n";
      return false;
    }
    f.values[a.substr(2)] = argv[++i];
  }
  return true;
}

std::string readFile(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int fail(const std::string& m) {
  std::cerr << "lockstep-webhook-dev: " << m << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!parseFlags(argc, argv, flags)) {
    std::cerr << kUsage;
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(flags.get("log-level", "info")));

  lw::StaticLookups lookups;
  if (std::string path = flags.get("config"); !path.empty()) {
    bool ok = false;
    std::string text = readFile(path, ok);
    if (!ok) return fail("cannot read --config " + path);
    auto loaded = lw::loadStaticLookups(text);
    if (!loaded.isOk()) return fail(loaded.status().toString());
    lookups = std::move(loaded).value();
  }

  // Signals are handled by sigwait below; block them before threads start.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  lw::ServerOptions opts;
  opts.address = flags.get("address", "127.0.0.1");
  opts.port = static_cast<uint16_t>(std::stoi(flags.get("port", "9443")));
  opts.threads = std::stoi(flags.get("threads", "2"));

  // Certificates: a mounted pair (cert-manager mode) or generated in memory.
  const std::string certFile = flags.get("cert-file"), keyFile = flags.get("key-file");
  lw::InMemoryCertStore store;
  lw::CaBundleFile caOut(flags.get("ca-out", "webhook-ca.crt"));
  lw::TlsCertificate initial;
  std::unique_ptr<lw::SelfManagedCertificates> selfManaged;

  // A sink that forwards to the server once it exists.
  struct Forward final : lw::CertificateSink {
    lw::Server* server = nullptr;
    lw::TlsCertificate latest;
    lockstep::Status setCertificate(const lw::TlsCertificate& c) override {
      latest = c;
      return server != nullptr ? server->setCertificate(c) : lockstep::Status::ok();
    }
  } forward;

  std::unique_ptr<lw::CertFileWatcher> watcher;
  if (!certFile.empty() || !keyFile.empty()) {
    watcher = std::make_unique<lw::CertFileWatcher>(certFile, keyFile, forward);
    auto r = watcher->poll(std::chrono::steady_clock::now());
    if (!r.isOk()) return fail(r.status().toString());
  } else {
    lw::SelfManagedOptions so;
    so.ipAddresses = {"127.0.0.1"};
    if (opts.address != "127.0.0.1" && opts.address != "0.0.0.0")
      so.ipAddresses.push_back(opts.address);
    so.servingValidity = std::chrono::hours(std::stoi(flags.get("cert-validity-hours", "2160")));
    selfManaged = std::make_unique<lw::SelfManagedCertificates>(so, store, caOut, forward);
    auto r = selfManaged->reconcile(std::chrono::system_clock::now());
    if (!r.isOk()) return fail(r.status().toString());
  }
  initial = forward.latest;

  auto registry = std::make_shared<prometheus::Registry>();
  lw::PrometheusRecorder prom(*registry);
  lw::LogRecorder logs;
  lw::FanoutRecorder recorder{&prom, &logs};
  lw::SteadyClock clock;
  lw::PodWebhook pods(*lookups.envs, *lookups.namespaces, recorder, clock);
  lw::ModelReleaseWebhook releases(*lookups.envs, *lookups.authorizer, recorder, clock);

  std::unique_ptr<prometheus::Exposer> exposer;
  if (int mp = std::stoi(flags.get("metrics-port", "0")); mp > 0) {
    try {
      exposer = std::make_unique<prometheus::Exposer>("127.0.0.1:" + std::to_string(mp));
      exposer->RegisterCollectable(registry);
    } catch (const std::exception& e) {
      return fail(std::string("metrics: ") + e.what());
    }
  }

  auto made = lw::makeBeastServer(opts, initial);
  if (!made.isOk()) return fail(made.status().toString());
  std::unique_ptr<lw::Server> server = std::move(made).value();
  lw::mountWebhook(*server, pods);
  lw::mountWebhook(*server, releases);
  if (auto st = server->start(); !st.isOk()) return fail(st.toString());
  forward.server = server.get();
  if (std::string pf = flags.get("port-file"); !pf.empty()) {
    std::ofstream(pf + ".tmp") << server->port() << "\n";
    std::rename((pf + ".tmp").c_str(), pf.c_str());
  }
  std::cout << "listening on " << opts.address << ":" << server->port() << std::endl;

  // Certificate upkeep: renew (self-managed) or watch the files (mounted).
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  lw::CertificateUpkeep certUpkeep =
      watcher ? lw::CertificateUpkeep(*watcher, certFile) : lw::CertificateUpkeep(*selfManaged);
  std::thread upkeep([&] {
    std::unique_lock<std::mutex> lock(mu);
    auto wait = std::chrono::seconds(10);
    while (!stopping) {
      cv.wait_for(lock, wait);
      if (stopping) break;
      wait = certUpkeep.tick(std::chrono::system_clock::now(), std::chrono::steady_clock::now());
    }
  });

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("signal {}: shutting down", sig);
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  cv.notify_all();
  upkeep.join();
  forward.server = nullptr;
  server->stop();
  return 0;
}
