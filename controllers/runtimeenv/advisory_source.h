// The operator's advisory source (--osv-export PATH): a local OSV export, a directory
// or osv.dev's all.zip (advisories/osv_export.h), that the platform refreshes. It is
// loaded once at start (a bad export is a start-up error naming the file and field)
// and again when its content changes: the path's modification times and sizes are
// compared at most once a minute. A reload that fails keeps the last good index and
// says why in the log; RuntimeEnvs keep being matched against it.
// Thread-safety: current() may be called from several workers.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "advisories/match.h"
#include "common/status.h"
#include "operator/kube/clock.h"

namespace lockstep::controllers {

class AdvisorySource {
 public:
  struct Snapshot {
    std::shared_ptr<const advisories::AdvisoryIndex> index;  // never null after load()
    std::string description;                                 // "<path>: N records (M files)"
  };
  AdvisorySource(std::string path, kube::Clock& clock);
  // The first load; an error names the file and field.
  Status load();
  // The index to match against now (reloaded first when the export changed).
  Snapshot current();

 private:
  std::string fingerprint() const;
  Status reload(const std::string& print);

  const std::string path_;
  kube::Clock& clock_;
  std::mutex mu_;
  Snapshot snapshot_;
  std::string fingerprint_;
  kube::Clock::TimePoint checkedAt_{};
};

}  // namespace lockstep::controllers
