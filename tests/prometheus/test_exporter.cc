// lockstep-test-exporter: a simulated model server's metrics for the analysis
// tests. It serves
//
//   GET  /metrics   lockstep_test_requests_total{model,track,code} (counters)
//   POST /rate?track=canary&errors=0.5[&rps=100]   sets a track's error ratio
//                   (0..1) and request rate from now on; 400 naming the bad parameter
//   GET  /-/ready   200 "ready"
//
// Traffic is simulated, not generated: each track serves `rps` requests per
// second, a fraction `errors` of them with code 500, the rest with 200. The
// counters are computed from the time elapsed since the last change when they
// are scraped, so `rate()` over any window after a change is exactly `rps` and
// the error ratio exactly `errors`, with no timer thread.
//
//   lockstep-test-exporter [--listen 127.0.0.1:0] [--port-file FILE] [--model NAME] [--rps N]
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
#include <optional>
#include <sstream>
#include <string>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

struct Track {
  double rps = 100;
  double errors = 0;
  double total = 0;       // requests counted up to `since`
  double errorTotal = 0;  // of which code 500
  Clock::time_point since = Clock::now();

  // Folds the traffic since `since` into the totals.
  void advance(Clock::time_point now) {
    double seconds = std::chrono::duration<double>(now - since).count();
    total += rps * seconds;
    errorTotal += rps * seconds * errors;
    since = now;
  }
};

struct State {
  std::string model = "gpt2";
  std::map<std::string, Track> tracks{{"canary", {}}, {"stable", {}}};
};

// Formats a counter value the way Prometheus' text format reads it.
std::string number(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

std::string metrics(State& s) {
  auto now = Clock::now();
  std::string out =
      "# HELP lockstep_test_requests_total Requests served by the simulated model, by track and "
      "status code.\n# TYPE lockstep_test_requests_total counter\n";
  for (auto& [name, t] : s.tracks) {
    t.advance(now);
    std::string labels = "model=\"" + s.model + "\",track=\"" + name + "\"";
    out += "lockstep_test_requests_total{" + labels + ",code=\"200\"} " +
           number(t.total - t.errorTotal) + "\n";
    out +=
        "lockstep_test_requests_total{" + labels + ",code=\"500\"} " + number(t.errorTotal) + "\n";
  }
  return out;
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
  auto track = params.find("track");
  if (track == params.end()) {
    return {http::status::bad_request, "rate: parameter track is missing (canary or stable)\n"};
  }
  auto t = s.tracks.find(track->second);
  if (t == s.tracks.end()) {
    return {http::status::bad_request,
            "rate: track \"" + track->second + "\" is not canary or stable\n"};
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
  t->second.advance(Clock::now());
  if (errors) t->second.errors = *errors;
  if (rps) t->second.rps = *rps;
  return {http::status::ok, "track=" + t->first + " errors=" + number(t->second.errors) +
                                " rps=" + number(t->second.rps) + "\n"};
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
    body = metrics(s);
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
  std::cerr << "lockstep-test-exporter: " << why
            << "\nusage: lockstep-test-exporter [--listen HOST:PORT] [--port-file FILE] "
               "[--model NAME] [--rps N]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  State state;
  std::string listen = "127.0.0.1:0", portFile;
  double rps = 100;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage("flag " + a + " needs a value");
    std::string v = argv[++i];
    if (a == "--listen") {
      listen = v;
    } else if (a == "--port-file") {
      portFile = v;
    } else if (a == "--model") {
      state.model = v;
    } else if (a == "--rps") {
      auto n = parseNumber(v);
      if (!n || *n < 0) return usage("--rps \"" + v + "\" is not a number >= 0");
      rps = *n;
    } else {
      return usage("unknown flag " + a);
    }
  }
  for (auto& [name, t] : state.tracks) t.rps = rps;
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
