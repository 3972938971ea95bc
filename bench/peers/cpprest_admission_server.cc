// bench_cpprest_admission_server: the benchmark peer of lockstep-webhook-dev.
// Serves the same admission handlers (PodWebhook / ModelReleaseWebhook over
// static lookups, Prometheus + log recorders, exactly as the dev server wires
// them) on cpprestsdk's http_listener instead of the Boost.Beast server, so a
// side-by-side run differs only in the HTTP/TLS layer (docs/contracts.md, "Library choices").
// Same TLS setup as webhooks/server/tls_context.cc (TLS 1.2+, the same cipher
// list, no renegotiation), keep-alive (cpprestsdk's default), a fixed pool of
// --threads threads. Not for production: it exists to keep the comparison.
//
//   bench_cpprest_admission_server --config lookups.json --cert-file tls.crt
//       --key-file tls.key --port 9444 [--address 127.0.0.1] [--threads 2]
//       [--port-file FILE] [--log-level warn]
// --port must be a real port (http_listener cannot report a bound port 0).
#include <openssl/ssl.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cpprest/http_listener.h>
#include <pplx/threadpool.h>
#include <prometheus/registry.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "webhooks/admission/handler.h"
#include "webhooks/admission/static_lookups.h"
#include "webhooks/metrics/prometheus_recorder.h"

namespace lw = lockstep::webhooks;
using web::http::http_request;
using web::http::http_response;
using web::http::methods;
using web::http::status_codes;
using web::http::experimental::listener::http_listener;
using web::http::experimental::listener::http_listener_config;

namespace {

constexpr const char* kUsage = R"(usage: bench_cpprest_admission_server [flags]
  --config FILE        lookups JSON (as lockstep-webhook-dev; default: empty)
  --cert-file FILE     PEM certificate chain (required)
  --key-file FILE      PEM private key (required)
  --address ADDR       listen address (default 127.0.0.1)
  --port N             listen port (required, not 0)
  --port-file FILE     write the port here once listening
  --threads N          cpprestsdk thread pool size (default 2)
  --log-level LEVEL    spdlog level for the log recorder (default warn)
)";

// The cipher list of webhooks/server/tls_context.cc, so both servers negotiate alike.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

std::string readFile(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int fail(const std::string& m) {
  std::cerr << "bench_cpprest_admission_server: " << m << "\n";
  return 1;
}

// Replies without blocking; a failed reply (peer gone) is observed and dropped.
void reply(http_request& req, int status, const std::string& contentType, std::string body) {
  http_response res(static_cast<web::http::status_code>(status));
  res.set_body(std::move(body), contentType);
  req.reply(res).then([](pplx::task<void> t) {
    try {
      t.get();  // already complete in a task-based continuation: does not block
    } catch (const std::exception& e) {
      spdlog::debug("reply failed: {}", e.what());
    }
  });
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help" || a.rfind("--", 0) != 0 || i + 1 >= argc) {
      std::cerr << kUsage;
      return 2;
    }
    flags[a.substr(2)] = argv[++i];
  }
  auto get = [&](const std::string& k, const std::string& def = "") {
    auto it = flags.find(k);
    return it == flags.end() ? def : it->second;
  };
  const std::string certFile = get("cert-file"), keyFile = get("key-file");
  const int port = std::stoi(get("port", "0"));
  const int threads = std::stoi(get("threads", "2"));
  if (certFile.empty() || keyFile.empty() || port <= 0 || threads <= 0) {
    std::cerr << kUsage;
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(get("log-level", "warn")));

  lw::StaticLookups lookups;
  if (std::string path = get("config"); !path.empty()) {
    bool ok = false;
    std::string text = readFile(path, ok);
    if (!ok) return fail("cannot read --config " + path);
    auto loaded = lw::loadStaticLookups(text);
    if (!loaded.isOk()) return fail(loaded.status().toString());
    lookups = std::move(loaded).value();
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Before anything touches cpprestsdk's shared pool (the listener's I/O and
  // every pplx continuation run on it).
  crossplat::threadpool::initialize_with_threads(static_cast<size_t>(threads));

  // The handler wiring of cmd/lockstep-webhook-dev/main.cc.
  auto registry = std::make_shared<prometheus::Registry>();
  lw::PrometheusRecorder prom(*registry);
  lw::LogRecorder logs;
  lw::FanoutRecorder recorder{&prom, &logs};
  lockstep::kube::SystemClock clock;
  lw::PodWebhook pods(*lookups.envs, *lookups.namespaces, recorder, clock);
  lw::ModelReleaseWebhook releases(*lookups.envs, *lookups.authorizer, recorder, clock);
  std::map<std::string, lw::AdmissionWebhook*, std::less<>> routes{
      {std::string(pods.path()), &pods}, {std::string(releases.path()), &releases}};

  http_listener_config config;
  config.set_ssl_context_callback([certFile, keyFile](boost::asio::ssl::context& ctx) {
    namespace ssl = boost::asio::ssl;
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                    ssl::context::single_dh_use);
    SSL_CTX* native = ctx.native_handle();
    SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    SSL_CTX_set_cipher_list(native, kTls12Ciphers);
    SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION);
    ctx.use_certificate_chain_file(certFile);  // throws on error: the listener fails to open
    ctx.use_private_key_file(keyFile, ssl::context::pem);
  });

  const std::string uri =
      "https://" + get("address", "127.0.0.1") + ":" + std::to_string(port) + "/";
  http_listener listener(uri, config);
  listener.support([&routes](http_request req) {
    const std::string path = req.relative_uri().path();
    auto it = routes.find(path);
    if (it == routes.end())
      return reply(req, status_codes::NotFound, "text/plain; charset=utf-8", "not found\n");
    if (req.method() != methods::POST) {
      return reply(req, status_codes::MethodNotAllowed, "text/plain; charset=utf-8",
                   "method not allowed\n");
    }
    // As webhooks/webhook_routes.cc: JSON bodies only.
    const std::string ct = req.headers().content_type();
    if (!ct.empty() && ct.substr(0, 16) != "application/json") {
      return reply(req, 415, "text/plain; charset=utf-8",
                   "Content-Type must be application/json\n");
    }
    lw::AdmissionWebhook* webhook = it->second;
    req.extract_utf8string(true).then([req, webhook](pplx::task<std::string> body) mutable {
      try {
        lw::HttpReply r = webhook->handle(body.get());  // complete: does not block
        reply(req, r.status, r.contentType, std::move(r.body));
      } catch (const std::exception& e) {
        reply(req, status_codes::BadRequest, "text/plain; charset=utf-8",
              std::string(e.what()) + "\n");
      }
    });
  });

  try {
    listener.open().wait();  // main thread, not a continuation
  } catch (const std::exception& e) {
    return fail(std::string("listen on ") + uri + ": " + e.what());
  }
  if (std::string pf = get("port-file"); !pf.empty()) {
    std::ofstream(pf + ".tmp") << port << "\n";
    std::rename((pf + ".tmp").c_str(), pf.c_str());
  }
  std::cout << "listening on " << uri << std::endl;

  int sig = 0;
  sigwait(&signals, &sig);
  try {
    listener.close().wait();
  } catch (const std::exception& e) {
    spdlog::warn("close: {}", e.what());
  }
  return 0;
}
