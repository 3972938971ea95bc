// What the C++ micro-benchmarks under bench/ share: the process's CPU time and
// the median of repetitions (these machines are noisy; medians, not means).
#pragma once

#include <algorithm>
#include <ctime>
#include <vector>

namespace lockstep::bench {

// CPU seconds of this process (all threads).
inline double cpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace lockstep::bench
