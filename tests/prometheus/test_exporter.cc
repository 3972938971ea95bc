// lockstep-test-exporter: the metrics of a simulated model server's pods for
// the analysis tests and the demo (ModelServerSim, model_server.h). It serves
//
//   GET  /metrics   lockstep_test_requests_total{namespace,pod,model,release,track,code}
//                   per Ready serving pod; code="500" only after the pod's first error
//   POST /rate?release=v3&errors=0.5[&rps=10]   sets a release's error ratio (0..1)
//                   and request rate per pod from now on; 400 naming the bad parameter
//   GET  /-/ready   200 "ready"
//
// With --kubeconfig it watches the cluster's pods labelled lockstep.dev/track
// (in --namespace, or all), as Lockstep's serving pods are: a pod serves while
// it is Ready and not terminating, and its counters start again after a
// container restart. Each --pod NAMESPACE/POD/RELEASE/TRACK[/MODEL] adds a pod
// that is always Ready (for the Prometheus client tests, which have no cluster).
//
//   lockstep-test-exporter [--listen 127.0.0.1:0] [--port-file FILE] [--rps N]
//                          [--kubeconfig FILE [--namespace NS]] [--pod SPEC]...
//
// Serves one connection at a time (Prometheus and a test are its only peers).
#include <sys/socket.h>
#include <sys/time.h>

#include <utility>  // before Boost.Asio, whose headers use std::exchange without it

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "operator/kube/connect.h"
#include "operator/kube/informer.h"
#include "tests/prometheus/model_server.h"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;
using lockstep::testing::ModelServerSim;
using lockstep::testing::SimPod;

struct State {
  std::mutex mu;
  ModelServerSim sim;
};

std::string number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

std::string label(const nlohmann::json& pod, const std::string& key) {
  auto p = nlohmann::json::json_pointer("/metadata/labels/" + key);
  return pod.contains(p) && pod[p].is_string() ? pod[p].get<std::string>() : std::string();
}

// A watched pod as the simulator sees it.
SimPod simPod(const nlohmann::json& pod) {
  SimPod p;
  p.ns = lockstep::kube::namespaceOf(pod);
  p.name = lockstep::kube::name(pod);
  p.model = label(pod, "lockstep.dev~1model");
  p.release = label(pod, "lockstep.dev~1release");
  p.track = label(pod, "lockstep.dev~1track");
  bool terminating = pod.contains("metadata") && pod["metadata"].contains("deletionTimestamp");
  const nlohmann::json status = pod.value("status", nlohmann::json::object());
  for (const auto& c : status.value("conditions", nlohmann::json::array())) {
    if (c.value("type", "") == "Ready") p.ready = c.value("status", "") == "True" && !terminating;
  }
  for (const auto& c : status.value("containerStatuses", nlohmann::json::array())) {
    p.restarts += c.value("restartCount", 0);
  }
  return p;
}

std::string urlDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size()) {
      int v = 0;
      auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
      if (ec == std::errc() && p == s.data() + i + 3) {
        out += static_cast<char>(v);
        i += 2;
      } else {
        out += s[i];
      }
    } else {
      out += s[i];
    }
  }
  return out;
}

std::map<std::string, std::string> queryParams(const std::string& target) {
  std::map<std::string, std::string> out;
  auto q = target.find('?');
  if (q == std::string::npos) return out;
  std::string rest = target.substr(q + 1);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t amp = rest.find('&', start);
    std::string kv = rest.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    if (!kv.empty()) {
      auto eq = kv.find('=');
      out[urlDecode(kv.substr(0, eq))] =
          eq == std::string::npos ? "" : urlDecode(kv.substr(eq + 1));
    }
    if (amp == std::string::npos) break;
    start = amp + 1;
  }
  return out;
}

std::optional<double> parseNumber(const std::string& s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

// POST /rate: 200 with the new setting, or 400 naming the parameter.
std::pair<http::status, std::string> setRate(State& s, const std::string& target) {
  auto params = queryParams(target);
  auto release = params.find("release");
  if (release == params.end() || release->second.empty()) {
    return {http::status::bad_request, "rate: parameter release is missing (a release name)\n"};
  }
  std::optional<double> errors, rps;
  if (auto e = params.find("errors"); e != params.end()) {
    errors = parseNumber(e->second);
    if (!errors || *errors < 0 || *errors > 1) {
      return {http::status::bad_request,
              "rate: errors \"" + e->second + "\" is not a number in [0, 1]\n"};
    }
  }
  if (auto r = params.find("rps"); r != params.end()) {
    rps = parseNumber(r->second);
    if (!rps || *rps < 0) {
      return {http::status::bad_request, "rate: rps \"" + r->second + "\" is not a number >= 0\n"};
    }
  }
  if (!errors && !rps) return {http::status::bad_request, "rate: give errors, rps or both\n"};
  std::lock_guard<std::mutex> lock(s.mu);
  s.sim.setRate(release->second, errors, rps, Clock::now());
  auto now = s.sim.rate(release->second);
  return {http::status::ok, "release=" + release->second + " errors=" + number(now.errors) +
                                " rps=" + number(now.rps) + "\n"};
}

void serve(asio::ip::tcp::socket& socket, State& s) {
  beast::flat_buffer buffer;
  http::request<http::string_body> req;
  beast::error_code ec;
  http::read(socket, buffer, req, ec);
  if (ec) return;
  std::string target(req.target());
  std::string path = target.substr(0, target.find('?'));
  http::status status = http::status::ok;
  std::string body;
  std::string type = "text/plain; charset=utf-8";
  if (path == "/metrics" && req.method() == http::verb::get) {
    std::lock_guard<std::mutex> lock(s.mu);
    body = s.sim.metrics(Clock::now());
    type = "text/plain; version=0.0.4; charset=utf-8";
  } else if (path == "/rate" && req.method() == http::verb::post) {
    std::tie(status, body) = setRate(s, target);
  } else if (path == "/-/ready" && req.method() == http::verb::get) {
    body = "ready\n";
  } else {
    status = http::status::not_found;
    body = "not found: " + std::string(req.method_string()) + " " + path + "\n";
  }
  http::response<http::string_body> res{status, req.version()};
  res.set(http::field::content_type, type);
  res.keep_alive(false);
  res.body() = std::move(body);
  res.prepare_payload();
  http::write(socket, res, ec);
  socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
}

int usage(const std::string& why) {
  std::cerr
      << "lockstep-test-exporter: " << why
      << "\nusage: lockstep-test-exporter [--listen HOST:PORT] [--port-file FILE] [--rps N] "
         "[--kubeconfig FILE [--namespace NS]] [--pod NAMESPACE/POD/RELEASE/TRACK[/MODEL]]...\n";
  return 2;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:0", portFile, kubeconfig, ns;
  double rps = 10;
  std::vector<SimPod> staticPods;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage("flag " + a + " needs a value");
    std::string v = argv[++i];
    if (a == "--listen") {
      listen = v;
    } else if (a == "--port-file") {
      portFile = v;
    } else if (a == "--kubeconfig") {
      kubeconfig = v;
    } else if (a == "--namespace") {
      ns = v;
    } else if (a == "--pod") {
      auto f = split(v, '/');
      if (f.size() < 4 || f.size() > 5 || f[0].empty() || f[1].empty() || f[2].empty() ||
          f[3].empty()) {
        return usage("--pod \"" + v + "\" is not NAMESPACE/POD/RELEASE/TRACK[/MODEL]");
      }
      staticPods.push_back({f[0], f[1], f.size() == 5 ? f[4] : "gpt2", f[2], f[3], true, 0});
    } else if (a == "--rps") {
      auto n = parseNumber(v);
      if (!n || *n < 0) return usage("--rps \"" + v + "\" is not a number >= 0");
      rps = *n;
    } else {
      return usage("unknown flag " + a);
    }
  }
  if (!ns.empty() && kubeconfig.empty()) return usage("--namespace needs --kubeconfig");
  State state;
  state.sim = ModelServerSim(rps);
  for (const SimPod& p : staticPods) state.sim.upsert(p, Clock::now());
  std::unique_ptr<lockstep::kube::Informer> informer;
  if (!kubeconfig.empty()) {
    lockstep::kube::ConnectOptions options;
    options.kubeconfigPath = kubeconfig;
    auto client = lockstep::kube::connect(options);
    if (!client.isOk()) {
      std::cerr << "lockstep-test-exporter: --kubeconfig " << kubeconfig << ": "
                << client.status().toString() << "\n";
      return 1;
    }
    lockstep::kube::InformerOptions io;
    io.resource = lockstep::kube::resources::kPods;
    io.ns = ns;
    io.labelSelector = "lockstep.dev/track";
    informer = std::make_unique<lockstep::kube::Informer>(*client, io);
    auto put = [&state](const lockstep::kube::Object& pod) {
      std::lock_guard<std::mutex> lock(state.mu);
      state.sim.upsert(simPod(pod), Clock::now());
    };
    informer->addEventHandler(
        {[put](const lockstep::kube::Object& o, bool) { put(o); },
         [put](const lockstep::kube::Object&, const lockstep::kube::Object& o) { put(o); },
         [&state](const lockstep::kube::Object& o) {
           std::lock_guard<std::mutex> lock(state.mu);
           state.sim.remove(lockstep::kube::namespaceOf(o), lockstep::kube::name(o), Clock::now());
         }});
    informer->start();
    if (!informer->waitForSync(std::chrono::seconds(30))) {
      std::cerr << "lockstep-test-exporter: the pod watch did not sync within 30s\n";
      return 1;
    }
  }
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) return usage("--listen \"" + listen + "\" is not HOST:PORT");
  try {
    asio::io_context io;
    asio::ip::tcp::endpoint endpoint(asio::ip::make_address(listen.substr(0, colon)),
                                     static_cast<uint16_t>(std::stoi(listen.substr(colon + 1))));
    asio::ip::tcp::acceptor acceptor(io, endpoint);
    int port = acceptor.local_endpoint().port();
    if (!portFile.empty()) {
      std::string tmp = portFile + ".tmp";
      std::ofstream(tmp) << port << "\n";
      if (std::rename(tmp.c_str(), portFile.c_str()) != 0) {
        std::cerr << "lockstep-test-exporter: cannot write --port-file " << portFile << "\n";
        return 1;
      }
    }
    std::cerr << "lockstep-test-exporter: listening on " << listen.substr(0, colon) << ":" << port
              << "\n";
    while (true) {
      asio::ip::tcp::socket socket(io);
      acceptor.accept(socket);
      // A peer that stops sending must not stall the next scrape.
      struct timeval tv {
        5, 0
      };
      setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      serve(socket, state);
    }
  } catch (const std::exception& e) {
    std::cerr << "lockstep-test-exporter: " << listen << ": " << e.what() << "\n";
    return 1;
  }
}
