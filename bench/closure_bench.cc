// Closure benchmark: parse+hash throughput over every shared fixture lock file,
// next to raw SHA-256 throughput over the same bytes, measured in the same run.
//
//   bench_closure [fixtures-dir] [repetitions]
//
// Each repetition parses and hashes every file once (computeClosure, auto
// format detection, unhashed packages allowed so every fixture counts), then
// SHA-256s the same bytes once; the medians over repetitions are reported.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "closure/closure.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using lockstep::closure::computeClosure;
  const std::string dir = argc > 1 ? argv[1] : LOCKSTEP_FIXTURES_DIR;
  const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 21;

  std::vector<std::string> texts;
  size_t bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    if (name == "MANIFEST.tsv" || name == "README.md") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    texts.push_back(ss.str());
    bytes += texts.back().size();
  }
  if (texts.empty()) {
    std::fprintf(stderr, "bench_closure: no lock files under %s\n", dir.c_str());
    return 1;
  }

  lockstep::closure::ClosureOptions options;
  options.allowUnhashed = true;
  std::vector<double> parseMBs, shaMBs;
  std::map<std::string, std::vector<double>> formatSeconds;  // per repetition
  std::map<std::string, size_t> formatBytes;
  for (const auto& t : texts) {
    auto f = lockstep::closure::detectFormat(t);
    formatBytes[std::string(lockstep::closure::formatName(
        f.isOk() ? *f : lockstep::closure::LockFormat::kAuto))] += t.size();
  }
  size_t sink = 0;
  for (int r = 0; r < reps; ++r) {
    std::map<std::string, double> perFormat;
    auto t0 = Clock::now();
    for (const auto& t : texts) {
      auto f0 = Clock::now();
      auto c = computeClosure(t, options);
      if (!c.isOk()) {
        std::fprintf(stderr, "bench_closure: %s\n", c.status().toString().c_str());
        return 1;
      }
      sink += c->packageCount();
      perFormat[std::string(lockstep::closure::formatName(c->format))] +=
          std::chrono::duration<double>(Clock::now() - f0).count();
    }
    auto t1 = Clock::now();
    for (const auto& [f, sec] : perFormat) formatSeconds[f].push_back(sec);
    for (const auto& t : texts) sink += lockstep::closure::sha256Hex(t).size();
    auto t2 = Clock::now();
    const double mb = static_cast<double>(bytes) / 1e6;
    parseMBs.push_back(mb / std::chrono::duration<double>(t1 - t0).count());
    shaMBs.push_back(mb / std::chrono::duration<double>(t2 - t1).count());
  }
  const double p = median(parseMBs), s = median(shaMBs);
  std::printf("files: %zu, bytes: %zu, repetitions: %d (checksum %zu)\n", texts.size(), bytes, reps,
              sink);
  std::printf("parse+hash (computeClosure): median %.2f MB/s (min %.2f, max %.2f)\n", p,
              *std::min_element(parseMBs.begin(), parseMBs.end()),
              *std::max_element(parseMBs.begin(), parseMBs.end()));
  std::printf("raw SHA-256 of the same bytes: median %.2f MB/s (min %.2f, max %.2f)\n", s,
              *std::min_element(shaMBs.begin(), shaMBs.end()),
              *std::max_element(shaMBs.begin(), shaMBs.end()));
  std::printf("ratio raw SHA-256 / parse+hash: %.1fx\n", s / p);
  for (const auto& [f, secs] : formatSeconds) {
    std::printf("  %-10s %7zu bytes  parse+hash median %.2f MB/s\n", f.c_str(), formatBytes[f],
                static_cast<double>(formatBytes[f]) / 1e6 / median(secs));
  }
  return 0;
}
