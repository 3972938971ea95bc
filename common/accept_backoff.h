// AcceptBackoff: how long a server waits before accepting again after an
// accept error (EMFILE, ENFILE, ENOBUFS, ...), as Go's net/http does: 5 ms,
// doubling to at most 1 s, back to 5 ms after a successful accept. Re-arming at
// once would spin a core while the process is out of descriptors; giving up
// would stop the server for good.
// Pure. Thread-safety: one per accept loop.
#pragma once

#include <algorithm>
#include <chrono>

namespace lockstep {

class AcceptBackoff {
 public:
  static constexpr std::chrono::milliseconds kFirst{5};
  static constexpr std::chrono::milliseconds kMax{1000};

  // The wait before the next accept after another failure.
  std::chrono::milliseconds failed() {
    next_ = next_.count() == 0 ? kFirst : std::min(next_ * 2, kMax);
    return next_;
  }
  void succeeded() { next_ = std::chrono::milliseconds(0); }

 private:
  std::chrono::milliseconds next_{0};
};

}  // namespace lockstep
