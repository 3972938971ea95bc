// The mirror checker's shell with a fake registry (an HttpTransport answering the
// distribution API from a set of digests): HEAD requests only, at most `concurrency`
// at once, the missing files in lock order, a failing registry or credentials never
// reported as a complete mirror, one check per request however often it is asked for,
// and the RuntimeEnv woken when it ends.
#include "controllers/runtimeenv/mirror_checker.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "closure/closure.h"
#include "mirror/mirror.h"
#include "tests/support/fake_clock.h"

namespace lockstep::controllers {
namespace {

using registry::HttpRequest;
using registry::HttpResponse;

std::string digestOf(int i) {
  std::string hex = std::to_string(i);
  return "sha256:" + std::string(64 - hex.size(), '0') + hex;
}

// One registry: the blobs it holds, whether the manifest tag is there, and how many
// requests are in flight at most.
class FakeRegistry final : public registry::HttpTransport, public MirrorRegistry {
 public:
  std::set<std::string> blobs;
  bool manifest = true;
  int failStatus = 0;  // answer every HEAD with this status
  size_t bound = 1;    // the concurrency the test expects
  std::string credentialsError;

  StatusOr<HttpResponse> send(const HttpRequest& r) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      requests_.push_back(r.method + " " + r.target);
      ++inFlight_;
      maxInFlight_ = std::max(maxInFlight_, inFlight_);
      cv_.notify_all();
      // A blob request is held briefly, so that every request the checker has in flight
      // overlaps it; one more than `bound` in flight ends the wait at once (and the test).
      if (r.target.find("/blobs/") != std::string::npos)
        cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return inFlight_ > bound; });
      --inFlight_;
      cv_.notify_all();
    }
    HttpResponse resp;
    if (r.target.find("/manifests/") != std::string::npos) {
      resp.status = manifest ? 200 : 404;
      resp.headers = {{"Content-Type", "application/vnd.oci.image.manifest.v1+json"}};
      resp.body = manifest ? R"({"schemaVersion":2})" : R"({"errors":[]})";
      return resp;
    }
    if (failStatus != 0) {
      resp.status = failStatus;
      resp.body = R"({"errors":[{"code":"UNAVAILABLE","message":"try later"}]})";
      return resp;
    }
    const std::string digest = r.target.substr(r.target.rfind('/') + 1);
    resp.status = blobs.count(digest) != 0 ? 200 : 404;
    if (resp.status == 200) resp.headers = {{"Content-Length", "10"}};
    return resp;
  }

  StatusOr<std::optional<registry::Credentials>> credentials(
      const std::string&, const std::string& secret, const mirror::RepositoryRef&) override {
    if (!credentialsError.empty()) return Status(Code::kForbidden, credentialsError);
    if (secret.empty()) return std::optional<registry::Credentials>();
    return std::optional<registry::Credentials>(registry::Credentials{"u", "p", ""});
  }

  StatusOr<std::unique_ptr<registry::RegistryClient>> open(
      const std::string& host, const std::optional<registry::Credentials>& creds) override {
    return std::make_unique<registry::RegistryClient>(
        host, creds, [this](const std::string&) -> StatusOr<std::shared_ptr<HttpTransport>> {
          return std::shared_ptr<HttpTransport>(this, [](HttpTransport*) {});
        });
  }

  std::vector<std::string> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  size_t maxInFlight() const {
    std::lock_guard<std::mutex> lock(mu_);
    return maxInFlight_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> requests_;
  size_t inFlight_ = 0, maxInFlight_ = 0;
};

MirrorCheckRequest request(int files) {
  MirrorCheckRequest r;
  r.ns = "ml";
  r.name = "torch";
  r.repository = "registry.example/mirror/torch";
  r.where = {"registry.example", "mirror/torch"};
  r.closureHash = "sha256:" + std::string(64, 'c');
  r.revision = 3;
  for (int i = 0; i < files; ++i) {
    mirror::Entry e;
    e.name = "pkg" + std::to_string(i);
    e.version = "1.0";
    e.fileName = e.name + "-1.0-py3-none-any.whl";
    e.purl = "pkg:pypi/" + e.name + "@1.0";
    e.digest = digestOf(i);
    r.artifacts.push_back(e);
  }
  return r;
}

TEST(MirrorChecker, HeadsEveryBlobAtMostConcurrencyAtOnceAndNamesTheMissingInLockOrder) {
  auto fake = std::make_shared<FakeRegistry>();
  for (int i = 0; i < 20; ++i)
    if (i != 4 && i != 11 && i != 17) fake->blobs.insert(digestOf(i));
  fake->bound = 4;
  testing::FakeClock clock;
  MirrorChecker checker(fake, clock, 4);
  MirrorCheckResult r = checker.run(request(20));
  EXPECT_EQ(r.outcome, MirrorCheckResult::Outcome::kChecked) << r.error;
  EXPECT_EQ(r.artifacts, 20);
  EXPECT_TRUE(r.manifestPresent);
  ASSERT_EQ(r.missing.size(), 3u);
  EXPECT_EQ(r.missing[0].file, "pkg4-1.0-py3-none-any.whl");
  EXPECT_EQ(r.missing[1].digest, digestOf(11));
  EXPECT_EQ(r.missing[2].purl, "pkg:pypi/pkg17@1.0");
  // Bounded (a fifth in flight would show at once), and more than one at a time.
  EXPECT_LE(fake->maxInFlight(), 4u);
  EXPECT_GE(fake->maxInFlight(), 2u);
  size_t heads = 0;
  for (const std::string& req : fake->requests()) {
    if (req.find("/blobs/") != std::string::npos) {
      EXPECT_EQ(req.rfind("HEAD ", 0), 0u) << req;  // never a download
      ++heads;
    }
  }
  EXPECT_EQ(heads, 20u);
}

TEST(MirrorChecker, AFailingRegistryOrCredentialsAreNeverAComplete) {
  auto fake = std::make_shared<FakeRegistry>();
  fake->failStatus = 503;
  testing::FakeClock clock;
  MirrorChecker checker(fake, clock, 3);
  MirrorCheckResult r = checker.run(request(6));
  EXPECT_EQ(r.outcome, MirrorCheckResult::Outcome::kUnreachable);
  EXPECT_NE(r.error.find("503"), std::string::npos) << r.error;
  EXPECT_TRUE(r.missing.empty());
  EXPECT_FALSE(r.manifestPresent);

  fake->failStatus = 0;
  fake->credentialsError = "Secret ml/pull does not lend its credentials";
  r = checker.run(request(6));
  EXPECT_EQ(r.outcome, MirrorCheckResult::Outcome::kCredentials);
  EXPECT_EQ(r.error, "Secret ml/pull does not lend its credentials");
  EXPECT_TRUE(fake->requests().size() <= 7u);  // nothing sent after the refusal
}

TEST(MirrorChecker, OneCheckPerRequestAndTheRuntimeEnvIsWoken) {
  auto fake = std::make_shared<FakeRegistry>();
  fake->manifest = false;
  testing::FakeClock clock;
  MirrorChecker checker(fake, clock, 2);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> woken;
  checker.setWake([&](const std::string& ns, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    woken.push_back(ns + "/" + name);
    cv.notify_all();
  });
  EXPECT_FALSE(checker.latest("ml", "torch"));
  checker.start(request(2));
  checker.start(request(2));  // the same check: queued or running once
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return !woken.empty(); }));
  }
  auto latest = checker.latest("ml", "torch");
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->missing.size(), 2u);
  EXPECT_FALSE(latest->manifestPresent);
  EXPECT_EQ(latest->closureHash, request(2).closureHash);
  checker.forget("ml", "torch");
  EXPECT_FALSE(checker.latest("ml", "torch"));
  // One manifest GET and two HEADs, or twice that if the second start came after the
  // first check had ended: never a third check.
  const size_t n = fake->requests().size();
  EXPECT_TRUE(n == 3u || n == 6u) << n;
}

// The NARs of a Nix lock are blobs like any file: one HEAD each under the narHash's sha256,
// a missing one named by its file name and purl.
TEST(MirrorChecker, NixNarsAreHeadedAndAMissingOneIsNamed) {
  auto c = closure::computeClosure(
      R"([{"path":"/nix/store/3v48v4c4czb950lyipir65701lisxkxg-top","narHash":"sha256-9nIg+WAQEqHLTZpTWkskv/aRvzmN9iX8P/27mE5UXBA=","narSize":168,"references":["/nix/store/d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep"]},)"
      R"({"path":"/nix/store/d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep","narHash":"sha256-FVcImz9sWhSb74L5u30+1KrcOHzTY1SsY5uBlqln5/M=","narSize":480,"references":[]}])",
      {});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  auto plan = mirror::planMirror(*c);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  MirrorCheckRequest req = request(0);
  req.artifacts = plan->entries;
  auto fake = std::make_shared<FakeRegistry>();
  const std::string dep = "sha256:1557089b3f6c5a149bef82f9bb7d3ed4aadc387cd36354ac639b8196a967e7f3";
  const std::string top = "sha256:f67220f9601012a1cb4d9a535a4b24bff691bf398df625fc3ffdbb984e545c10";
  fake->blobs.insert(dep);
  testing::FakeClock clock;
  MirrorChecker checker(fake, clock, 2);
  MirrorCheckResult r = checker.run(req);
  EXPECT_EQ(r.outcome, MirrorCheckResult::Outcome::kChecked) << r.error;
  EXPECT_EQ(r.artifacts, 2);
  ASSERT_EQ(r.missing.size(), 1u);
  EXPECT_EQ(r.missing[0].file, "3v48v4c4czb950lyipir65701lisxkxg-top.nar");
  EXPECT_EQ(r.missing[0].purl, "pkg:nix/top");
  EXPECT_EQ(r.missing[0].digest, top);
  std::set<std::string> heads;
  for (const std::string& q : fake->requests()) {
    if (q.rfind("HEAD ", 0) == 0) heads.insert(q.substr(q.rfind('/') + 1));
  }
  EXPECT_EQ(heads, (std::set<std::string>{dep, top}));
}

}  // namespace
}  // namespace lockstep::controllers
