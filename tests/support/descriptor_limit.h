// DescriptorLimit: while alive, the process is at its file-descriptor limit,
// so every new descriptor (accept, socket, open) fails with EMFILE — the state
// a server meets under a connection flood (or, with headroom, close to it).
// Restores the limit on destruction.
// Thread-safety: test-body use only (the limit is process-wide).
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <stdexcept>

namespace lockstep::testing {

class DescriptorLimit {
 public:
  // `headroom`: how many more descriptors may still be opened.
  explicit DescriptorLimit(int headroom = 0) {
    if (::getrlimit(RLIMIT_NOFILE, &saved_) != 0) throw std::runtime_error("getrlimit failed");
    // The lowest free descriptor: with the soft limit there, none can be made.
    const int lowestFree = ::open("/dev/null", O_RDONLY);
    if (lowestFree < 0) throw std::runtime_error("open /dev/null failed");
    ::close(lowestFree);
    rlimit low = saved_;
    low.rlim_cur = static_cast<rlim_t>(lowestFree + headroom);
    if (::setrlimit(RLIMIT_NOFILE, &low) != 0) throw std::runtime_error("setrlimit failed");
  }
  ~DescriptorLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  DescriptorLimit(const DescriptorLimit&) = delete;
  DescriptorLimit& operator=(const DescriptorLimit&) = delete;

 private:
  rlimit saved_{};
};

}  // namespace lockstep::testing
