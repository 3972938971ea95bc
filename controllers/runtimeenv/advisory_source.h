// The operator's advisory sources: what each RuntimeEnv's closures are matched against
// (runtimeenv_advisories.h), as an immutable snapshot a reconcile takes at once.
//
// OsvExportSource (--osv-export PATH): a local OSV export, a directory or osv.dev's
// all.zip (advisories/osv_export.h), that the platform refreshes. It is loaded once at
// start (a bad export is a start-up error naming the file and field) and again when its
// content changes: the path's modification times and sizes are compared at most once a
// minute. A reload that fails keeps the last good index and says why in the log.
//
// OsvEndpointSource (--osv-url URL): an OSV-compatible HTTP endpoint
// (advisories/osv_client.h). A reconcile never waits on it: the plan names the closures
// that have no answer yet or whose answer fell due, lookUp() queues them, and one
// dispatcher thread looks each closure up in turn (the client bounds the requests'
// concurrency and time) and wakes the RuntimeEnvs that asked. Each closure keeps its last
// good answer; a failed lookup (refused, timeout, non-200, malformed JSON) keeps it and
// records what was wrong, which status.advisories shows. Answers no RuntimeEnv asked for
// in a day are dropped.
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "advisories/osv_client.h"
#include "common/status.h"
#include "controllers/runtimeenv/runtimeenv_advisories.h"
#include "operator/kube/clock.h"

namespace lockstep::controllers {

class AdvisorySource {
 public:
  using Wake = std::function<void(const std::string& ns, const std::string& name)>;
  virtual ~AdvisorySource() = default;
  // What to match against now.
  virtual std::shared_ptr<const AdvisorySnapshot> snapshot() = 0;
  // Asks for the closures' records on behalf of RuntimeEnv ns/name, woken when they came.
  // (An export has every record: nothing to do.)
  virtual void lookUp(const std::string& /*ns*/, const std::string& /*name*/,
                      std::vector<AdvisoryLookup>&& /*lookups*/) {}
  // Set before the first lookUp().
  void setWake(Wake wake) { wake_ = std::move(wake); }

 protected:
  Wake wake_;
};

class OsvExportSource final : public AdvisorySource {
 public:
  OsvExportSource(std::string path, kube::Clock& clock);
  // The first load; an error names the file and field.
  Status load();
  // The index (reloaded first when the export changed).
  std::shared_ptr<const AdvisorySnapshot> snapshot() override;

 private:
  std::string fingerprint() const;
  Status reload(const std::string& print);

  const std::string path_;
  kube::Clock& clock_;
  std::mutex mu_;
  std::shared_ptr<const AdvisorySnapshot> snapshot_;
  std::string fingerprint_;
  kube::Clock::TimePoint checkedAt_{};
};

struct OsvEndpointOptions {
  std::chrono::seconds refresh{1800};  // a good answer is looked up again after this
  std::chrono::seconds retry{60};      // a failed lookup is tried again after this
};

class OsvEndpointSource final : public AdvisorySource {
 public:
  OsvEndpointSource(std::unique_ptr<advisories::OsvClient> client, kube::Clock& clock,
                    OsvEndpointOptions options = {});
  ~OsvEndpointSource() override;
  OsvEndpointSource(const OsvEndpointSource&) = delete;
  OsvEndpointSource& operator=(const OsvEndpointSource&) = delete;

  std::shared_ptr<const AdvisorySnapshot> snapshot() override;
  void lookUp(const std::string& ns, const std::string& name,
              std::vector<AdvisoryLookup>&& lookups) override;

  // One closure's lookup on the calling thread (the dispatcher's; tests): the answer
  // is recorded in the snapshot.
  void run(const AdvisoryLookup& lookup);

 private:
  void dispatch();

  std::unique_ptr<advisories::OsvClient> client_;
  kube::Clock& clock_;
  const OsvEndpointOptions options_;
  mutable std::mutex mu_;
  std::condition_variable work_;
  std::shared_ptr<const AdvisorySnapshot> snapshot_;
  std::deque<AdvisoryLookup> queue_;
  std::set<std::string> pending_;                         // closure hashes queued or running
  std::map<std::string, std::set<std::string>> waiting_;  // closure hash -> "ns/name"
  std::map<std::string, int64_t> askedAt_;                // closure hash -> Unix seconds
  bool stopping_ = false;
  std::thread dispatcher_;
};

}  // namespace lockstep::controllers
