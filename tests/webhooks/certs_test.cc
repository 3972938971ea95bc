#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "webhooks/certs/cert_file_watcher.h"
#include "webhooks/certs/cert_upkeep.h"
#include "webhooks/certs/in_memory_cert_store.h"
#include "webhooks/certs/rotation.h"
#include "webhooks/certs/self_managed.h"
#include "webhooks/certs/x509.h"

namespace lockstep::webhooks {
namespace {

using namespace std::chrono_literals;
using std::chrono::hours;

// A fixed "now" so validity arithmetic is exact (seconds resolution in X.509).
const SystemTime kNow = std::chrono::system_clock::from_time_t(1'900'000'000);

CertKeyPair testCa(KeyType t = KeyType::kEcdsaP256, SystemTime now = kNow) {
  CaOptions o;
  o.now = now;
  o.keyType = t;
  o.validity = hours(24 * 365);
  auto ca = generateCa(o);
  EXPECT_TRUE(ca.isOk()) << ca.status().toString();
  return *ca;
}

ServingOptions servingOpts(SystemTime now = kNow) {
  ServingOptions o;
  o.dnsNames = serviceDnsNames("lockstep-webhook", "lockstep-system");
  o.ipAddresses = {"127.0.0.1"};
  o.now = now;
  o.validity = hours(24 * 30);
  return o;
}

TEST(X509, ServiceDnsNames) {
  EXPECT_EQ(serviceDnsNames("wh", "ops"),
            (std::vector<std::string>{"wh", "wh.ops", "wh.ops.svc", "wh.ops.svc.cluster.local"}));
}

TEST(X509, GeneratesCaAndServingCertificate) {
  for (KeyType t : {KeyType::kEcdsaP256, KeyType::kRsa2048}) {
    CertKeyPair ca = testCa(t);
    ServingOptions so = servingOpts();
    so.keyType = t;
    auto serving = generateServingCert(ca, so);
    ASSERT_TRUE(serving.isOk()) << serving.status().toString();

    auto caInfo = parseCertificate(ca.certPem);
    ASSERT_TRUE(caInfo.isOk());
    EXPECT_TRUE(caInfo->isCa);
    EXPECT_EQ(caInfo->commonName, "lockstep-webhook-ca");
    EXPECT_EQ(caInfo->notAfter, kNow + hours(24 * 365));
    EXPECT_EQ(caInfo->notBefore, kNow - kBackdate);

    auto info = parseCertificate(serving->certPem);
    ASSERT_TRUE(info.isOk());
    EXPECT_FALSE(info->isCa);
    EXPECT_EQ(info->dnsNames, so.dnsNames);
    EXPECT_EQ(info->ipAddresses, std::vector<std::string>{"127.0.0.1"});
    EXPECT_EQ(info->notAfter, kNow + hours(24 * 30));
    EXPECT_TRUE(checkKeyMatchesCert(serving->certPem, serving->keyPem).isOk());
    EXPECT_TRUE(checkIssuedBy(serving->certPem, ca.certPem).isOk());
    EXPECT_FALSE(checkKeyMatchesCert(serving->certPem, ca.keyPem).isOk());
    EXPECT_FALSE(checkIssuedBy(serving->certPem, testCa().certPem).isOk());
  }
}

TEST(X509, RejectsBadInputs) {
  CertKeyPair ca = testCa();
  ServingOptions so = servingOpts();
  so.dnsNames = {"evil,IP:1.2.3.4"};
  EXPECT_EQ(generateServingCert(ca, so).status().code(), Code::kInvalidArgument);
  so = servingOpts();
  so.ipAddresses = {"300.1.1.1"};
  EXPECT_EQ(generateServingCert(ca, so).status().code(), Code::kInvalidArgument);
  so = servingOpts();
  so.dnsNames.clear();
  so.ipAddresses.clear();
  EXPECT_FALSE(generateServingCert(ca, so).isOk());
  EXPECT_FALSE(generateServingCert({"junk", ca.keyPem}, servingOpts()).isOk());
  EXPECT_FALSE(
      parseCertificate("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").isOk());
  EXPECT_FALSE(parseCertificate("").isOk());
  so = servingOpts();
  so.ipAddresses = {"::1"};
  auto v6 = generateServingCert(ca, so);
  ASSERT_TRUE(v6.isOk());
  EXPECT_EQ(parseCertificate(v6->certPem)->ipAddresses, std::vector<std::string>{"::1"});
}

TEST(Rotation, ShouldRotateTable) {
  const SystemTime nb = kNow, na = kNow + hours(90);
  struct Case {
    SystemTime now;
    double fraction;
    bool want;
  } cases[] = {
      {nb, 2.0 / 3, false},
      {nb + hours(59), 2.0 / 3, false},
      {nb + hours(60), 2.0 / 3, true},
      {na, 2.0 / 3, true},
      {na + hours(1), 2.0 / 3, true},
      {nb - hours(1), 2.0 / 3, true},
      {nb + hours(44), 0.5, false},
      {nb + hours(45), 0.5, true},
      {nb, 0.0, true},
      {na - 1s, 1.0, false},
      {na - 1s, 7.0, false},
      {nb + hours(1), -1.0, true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(shouldRotate(c.now, nb, na, c.fraction), c.want)
        << "t+" << std::chrono::duration_cast<hours>(c.now - nb).count() << "h f=" << c.fraction;
  }
  EXPECT_EQ(renewAt(nb, na, 2.0 / 3), nb + hours(60));
}

TEST(Rotation, PlanTable) {
  CertInfo ca{kNow, kNow + hours(3000), "ca", {}, {}, true};
  CertInfo serving{kNow, kNow + hours(300), "s", {"svc", "svc.ns"}, {"127.0.0.1"}, false};
  StoredCertFacts good{ca, true, serving, true, true};
  CertRequirements req{{"svc", "svc.ns"}, {"127.0.0.1"}, 2.0 / 3};

  auto with = [&](auto mutate) {
    StoredCertFacts f = good;
    mutate(f);
    return std::optional<StoredCertFacts>(f);
  };
  struct Case {
    std::string name;
    SystemTime now;
    std::optional<StoredCertFacts> stored;
    CertAction want;
  } cases[] = {
      {"nothing stored", kNow, std::nullopt, CertAction::kIssueAll},
      {"all good", kNow + hours(1), good, CertAction::kKeep},
      {"no CA", kNow, with([](auto& f) { f.ca.reset(); }), CertAction::kIssueAll},
      {"CA flag missing", kNow, with([](auto& f) { f.ca->isCa = false; }), CertAction::kIssueAll},
      {"CA key mismatch", kNow, with([](auto& f) { f.caKeyMatches = false; }),
       CertAction::kIssueAll},
      {"CA at renewal time", kNow + hours(2000), good, CertAction::kIssueAll},
      {"serving at renewal time", kNow + hours(200), good, CertAction::kIssueServing},
      {"serving expired", kNow + hours(301), good, CertAction::kIssueServing},
      {"serving missing", kNow, with([](auto& f) { f.serving.reset(); }),
       CertAction::kIssueServing},
      {"serving key mismatch", kNow, with([](auto& f) { f.servingKeyMatches = false; }),
       CertAction::kIssueServing},
      {"serving from another CA", kNow, with([](auto& f) { f.servingIssuedByCa = false; }),
       CertAction::kIssueServing},
      {"serving lacks a DNS name", kNow, with([](auto& f) { f.serving->dnsNames = {"svc"}; }),
       CertAction::kIssueServing},
      {"serving lacks the IP", kNow, with([](auto& f) { f.serving->ipAddresses.clear(); }),
       CertAction::kIssueServing},
      {"extra names are fine", kNow, with([](auto& f) { f.serving->dnsNames.push_back("x"); }),
       CertAction::kKeep},
  };
  for (const Case& c : cases) {
    CertPlan p = planCertificates(c.now, c.stored, req);
    EXPECT_EQ(static_cast<int>(p.action), static_cast<int>(c.want)) << c.name << ": " << p.reason;
  }
  EXPECT_EQ(planCertificates(kNow, good, req).renewCheck, kNow + hours(200));
}

// The webhook configuration's caBundle, as the patcher sees it: a write only
// when it differs (like WebhookConfigCaBundlePatcher); `caBundle` can be
// cleared to play a `kubectl replace` of the configuration.
class FakeWebhookConfig final : public CaBundlePatcher {
 public:
  StatusOr<bool> patchCaBundle(const std::string& pem) override {
    if (fail) return unavailable("api down");
    ++calls;
    if (caBundle == pem) return false;
    caBundle = pem;
    bundles.push_back(pem);
    return true;
  }
  std::string caBundle;
  std::vector<std::string> bundles;  // every write
  int calls = 0;
  bool fail = false;
};

class RecordingSink final : public CertificateSink {
 public:
  Status setCertificate(const TlsCertificate& c) override {
    certs.push_back(c);
    return Status::ok();
  }
  std::vector<TlsCertificate> certs;
};

class SelfManagedTest : public ::testing::Test {
 protected:
  SelfManagedTest() {
    opts_.service = "lockstep-webhook";
    opts_.ns = "lockstep-system";
    opts_.ipAddresses = {"127.0.0.1"};
    opts_.caValidity = hours(24 * 360);
    opts_.servingValidity = hours(24 * 30);
  }
  SelfManagedOptions opts_;
  InMemoryCertStore store_;
  FakeWebhookConfig patcher_;
  RecordingSink sink_;
};

TEST_F(SelfManagedTest, IssuesThenKeepsThenRotatesServing) {
  SelfManagedCertificates m(opts_, store_, patcher_, sink_);
  auto r = m.reconcile(kNow);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->action, CertAction::kIssueAll);
  ASSERT_EQ(patcher_.bundles.size(), 1u);
  ASSERT_EQ(sink_.certs.size(), 1u);
  auto stored = store_.current();
  ASSERT_TRUE(stored);
  EXPECT_EQ(patcher_.bundles[0], stored->caCertPem);
  EXPECT_EQ(sink_.certs[0].certChainPem, stored->certPem);
  auto expected = renewAt(kNow - kBackdate, kNow + hours(24 * 30), kDefaultRenewFraction);
  EXPECT_LT(std::chrono::abs(r->nextCheck - expected), 1s);
  auto info = parseCertificate(stored->certPem);
  EXPECT_EQ(info->dnsNames.size(), 4u);

  r = m.reconcile(kNow + hours(24));
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->action, CertAction::kKeep);
  EXPECT_EQ(patcher_.bundles.size(), 1u) << "no write when the bundle did not change";
  EXPECT_EQ(patcher_.calls, 2) << "but the configuration is checked every round";
  EXPECT_EQ(sink_.certs.size(), 1u);

  r = m.reconcile(kNow + hours(24 * 21));
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->action, CertAction::kIssueServing);
  EXPECT_EQ(patcher_.bundles.size(), 1u) << "same CA, same caBundle";
  ASSERT_EQ(sink_.certs.size(), 2u);
  EXPECT_NE(sink_.certs[1].certChainPem, sink_.certs[0].certChainPem);
  EXPECT_EQ(store_.current()->caCertPem, stored->caCertPem);
}

TEST_F(SelfManagedTest, CaRotationPublishesBothCasAndDefersTheSwap) {
  SelfManagedCertificates m(opts_, store_, patcher_, sink_);
  ASSERT_TRUE(m.reconcile(kNow).isOk());
  std::string oldCa = store_.current()->caCertPem;
  // Keep the serving certificate fresh until the CA reaches 2/3 of its life.
  SystemTime t = kNow;
  for (int i = 0; i < 11; ++i) {
    t += hours(24 * 20);
    ASSERT_TRUE(m.reconcile(t).isOk());
  }
  t = kNow + hours(24 * 241);
  size_t swaps = sink_.certs.size();
  auto r = m.reconcile(t);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->action, CertAction::kIssueAll);
  auto stored = store_.current();
  EXPECT_NE(stored->caCertPem, oldCa);
  EXPECT_EQ(stored->previousCaCertPem, oldCa);
  EXPECT_EQ(patcher_.bundles.back(), stored->caCertPem + oldCa);
  EXPECT_EQ(sink_.certs.size(), swaps) << "swap deferred until the caBundle propagated";
  EXPECT_EQ(r->nextCheck, t + opts_.caPropagationDelay);

  r = m.reconcile(r->nextCheck);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->action, CertAction::kKeep);
  ASSERT_EQ(sink_.certs.size(), swaps + 1);
  EXPECT_EQ(sink_.certs.back().certChainPem, stored->certPem);
  EXPECT_TRUE(checkIssuedBy(sink_.certs.back().certChainPem, stored->caCertPem).isOk());
}

TEST_F(SelfManagedTest, ConflictingWriterWins) {
  SelfManagedCertificates other(opts_, store_, patcher_, sink_);
  InMemoryCertStore theirs;
  FakeWebhookConfig p2;
  RecordingSink s2;
  SelfManagedCertificates replica(opts_, theirs, p2, s2);
  ASSERT_TRUE(replica.reconcile(kNow).isOk());

  // Between our load and save, another replica writes its bundle.
  class RacingStore final : public CertStore {
   public:
    RacingStore(InMemoryCertStore& s, CertBundle b) : s_(s), b_(std::move(b)) {}
    StatusOr<std::optional<CertBundle>> load() override {
      auto r = s_.load();
      if (!raced_) {
        raced_ = true;
        s_.externalWrite(b_);
      }
      return r;
    }
    Status save(const CertBundle& b) override { return s_.save(b); }

   private:
    InMemoryCertStore& s_;
    CertBundle b_;
    bool raced_ = false;
  };
  RacingStore racing(store_, *theirs.current());
  SelfManagedCertificates m(opts_, racing, patcher_, sink_);
  auto r = m.reconcile(kNow);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->action, CertAction::kKeep);
  EXPECT_EQ(sink_.certs.back().certChainPem, theirs.current()->certPem);
}

TEST_F(SelfManagedTest, PatchFailureDoesNotSwap) {
  patcher_.fail = true;
  SelfManagedCertificates m(opts_, store_, patcher_, sink_);
  auto r = m.reconcile(kNow);
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_TRUE(sink_.certs.empty());
  patcher_.fail = false;
  r = m.reconcile(kNow + 1min);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->action, CertAction::kKeep) << "the saved bundle is reused";
  EXPECT_EQ(sink_.certs.size(), 1u);
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lockstep-certs-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const {
    return (std::filesystem::path(path_) / name).string();
  }

 private:
  std::string path_;
};

void writeFile(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::trunc) << content;
  std::filesystem::rename(tmp, path);  // like the kubelet's atomic swap
}

TEST(CertFileWatcher, ReloadsWhenFilesChange) {
  TempDir dir;
  CertKeyPair ca = testCa(KeyType::kEcdsaP256, std::chrono::system_clock::now());
  auto a = generateServingCert(ca, servingOpts(std::chrono::system_clock::now()));
  auto b = generateServingCert(ca, servingOpts(std::chrono::system_clock::now()));
  ASSERT_TRUE(a.isOk() && b.isOk());
  writeFile(dir.file("tls.crt"), a->certPem);
  writeFile(dir.file("tls.key"), a->keyPem);

  RecordingSink sink;
  CertFileWatcher w(dir.file("tls.crt"), dir.file("tls.key"), sink, 10s);
  std::chrono::steady_clock::time_point t{};
  auto r = w.poll(t);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_TRUE(*r);
  ASSERT_EQ(sink.certs.size(), 1u);
  EXPECT_EQ(sink.certs[0].certChainPem, a->certPem);
  EXPECT_FALSE(*w.poll(t + 11s)) << "unchanged files";

  writeFile(dir.file("tls.crt"), b->certPem);  // half-updated pair
  EXPECT_FALSE(*w.poll(t + 12s)) << "not due yet";
  r = w.poll(t + 22s);
  EXPECT_FALSE(r.isOk()) << "mismatched pair is an error";
  EXPECT_EQ(sink.certs.size(), 1u);
  writeFile(dir.file("tls.key"), b->keyPem);
  r = w.poll(t + 33s);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_TRUE(*r);
  ASSERT_EQ(sink.certs.size(), 2u);
  EXPECT_EQ(sink.certs[1].certChainPem, b->certPem);

  // Touched but identical content: no reload.
  writeFile(dir.file("tls.crt"), b->certPem);
  EXPECT_FALSE(*w.poll(t + 44s));
  EXPECT_EQ(sink.certs.size(), 2u);

  std::filesystem::remove(dir.file("tls.key"));
  EXPECT_EQ(w.poll(t + 55s).status().code(), Code::kNotFound);
}

TEST(CaBundleFile, WritesAtomically) {
  TempDir dir;
  CaBundleFile f(dir.file("ca.crt"));
  auto wrote = f.patchCaBundle("PEM");
  ASSERT_TRUE(wrote.isOk());
  EXPECT_TRUE(*wrote);
  std::ifstream in(dir.file("ca.crt"));
  std::string s((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(s, "PEM");
  wrote = f.patchCaBundle("PEM");
  ASSERT_TRUE(wrote.isOk());
  EXPECT_FALSE(*wrote) << "same content: checked every round, not rewritten";
}

}  // namespace
}  // namespace lockstep::webhooks

TEST(CaBundleFile, NeverReplacesAnythingButARegularFile) {
  // Renaming over a device as root would replace it: /dev/null must survive.
  lockstep::webhooks::CaBundleFile devNull("/dev/null");
  auto s = devNull.patchCaBundle("-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(s.status().code(), lockstep::Code::kInvalidArgument) << s.status().toString();
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  EXPECT_FALSE(std::filesystem::exists("/dev/null.tmp"));
  // A directory is refused too.
  auto dir =
      std::filesystem::temp_directory_path() / ("lockstep-cabundle-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(lockstep::webhooks::CaBundleFile(dir.string()).patchCaBundle("x").isOk());
  std::filesystem::remove_all(dir);
}

namespace lockstep::webhooks {
namespace {

TEST_F(SelfManagedTest, UpkeepIssuesThenWaitsAtMostTheCap) {
  SelfManagedCertificates m(opts_, store_, patcher_, sink_);
  CertificateUpkeep upkeep(m);
  auto steady = std::chrono::steady_clock::time_point{};
  auto wait = upkeep.tick(kNow, steady);
  ASSERT_EQ(sink_.certs.size(), 1u);  // issued and served
  EXPECT_GE(wait, std::chrono::seconds(1));
  EXPECT_LE(wait, CertificateUpkeep::kDefaultCheckInterval);
  // Nothing due: keeps the certificate, still polls within the cap.
  wait = upkeep.tick(kNow + std::chrono::seconds(30), steady);
  EXPECT_EQ(sink_.certs.size(), 1u);
  EXPECT_EQ(wait, CertificateUpkeep::kDefaultCheckInterval);
  EXPECT_EQ(CertificateUpkeep(m, std::chrono::seconds(3)).tick(kNow + 40s, steady), 3s);
  EXPECT_EQ(CertificateUpkeep(m, std::chrono::seconds(0)).tick(kNow + 41s, steady), 1s)
      << "at least a second between rounds";
  // The patcher failing is logged and retried soon, the old certificate kept.
  patcher_.fail = true;
  (void)store_.save({});  // another writer emptied the store: a new bundle must be issued
  wait = upkeep.tick(kNow + std::chrono::minutes(2), steady);
  EXPECT_EQ(wait, CertificateUpkeep::kRetryWait);
  EXPECT_EQ(sink_.certs.size(), 1u);
}

// Issue 13 item 2: the configuration replaced with an empty caBundle (a
// reinstall, `kubectl replace`, Argo CD Replace=true) is repaired at the next
// round although the bundle itself did not change.
TEST_F(SelfManagedTest, ACaBundleEmptiedByAReplaceIsRepairedAtTheNextRound) {
  SelfManagedCertificates m(opts_, store_, patcher_, sink_);
  auto r = m.reconcile(kNow);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_FALSE(r->caBundleRepaired) << "the first write is no repair";
  const std::string published = patcher_.caBundle;
  ASSERT_EQ(published, store_.current()->caCertPem);

  patcher_.caBundle.clear();  // kubectl replace with the chart's empty caBundle
  r = m.reconcile(kNow + 10s);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->action, CertAction::kKeep);
  EXPECT_EQ(patcher_.caBundle, published);
  EXPECT_TRUE(r->caBundleRepaired);
  EXPECT_EQ(sink_.certs.size(), 1u) << "the serving certificate is untouched";

  r = m.reconcile(kNow + 20s);
  ASSERT_TRUE(r.isOk());
  EXPECT_FALSE(r->caBundleRepaired);
  EXPECT_EQ(patcher_.bundles.size(), 2u) << "nothing written when the caBundle is right";
}

// Issue 12 item 8: a second replica finds the CA another replica rotated in the
// store. It publishes both CAs at once and keeps serving its certificate of the
// old CA until the new caBundle had time to reach the API server, then swaps.
TEST_F(SelfManagedTest, ASecondReplicaServesARotatedCaAfterThePropagationDelay) {
  FakeWebhookConfig configB;
  RecordingSink sinkB;
  SelfManagedCertificates a(opts_, store_, patcher_, sink_);
  SelfManagedCertificates b(opts_, store_, configB, sinkB);
  ASSERT_TRUE(a.reconcile(kNow).isOk());
  ASSERT_TRUE(b.reconcile(kNow).isOk());
  ASSERT_EQ(sinkB.certs.size(), 1u);
  EXPECT_EQ(sinkB.certs[0], sink_.certs[0]) << "B serves the bundle A stored";
  const std::string oldCa = store_.current()->caCertPem;
  // Both keep the serving certificate fresh until the CA reaches 2/3 of its life.
  for (int i = 1; i <= 11; ++i) {
    ASSERT_TRUE(a.reconcile(kNow + hours(24 * 20 * i)).isOk());
    ASSERT_TRUE(b.reconcile(kNow + hours(24 * 20 * i) + 1s).isOk());
  }
  ASSERT_EQ(sinkB.certs.back(), sink_.certs.back());
  ASSERT_EQ(store_.current()->caCertPem, oldCa);
  const size_t served = sinkB.certs.size();

  // The CA reaches its renewal time; A renews it first.
  const SystemTime t = kNow + hours(24 * 241);
  auto ra = a.reconcile(t);
  ASSERT_TRUE(ra.isOk()) << ra.status().toString();
  ASSERT_EQ(ra->action, CertAction::kIssueAll);
  const CertBundle rotated = *store_.current();
  ASSERT_NE(rotated.caCertPem, oldCa);
  ASSERT_EQ(rotated.previousCaCertPem, oldCa);

  auto rb = b.reconcile(t + 5s);
  ASSERT_TRUE(rb.isOk()) << rb.status().toString();
  EXPECT_EQ(rb->action, CertAction::kKeep) << "B does not rotate again";
  EXPECT_EQ(configB.caBundle, rotated.caCertPem + oldCa) << "both CAs are trusted";
  ASSERT_EQ(sinkB.certs.size(), served) << "B keeps its old-CA certificate for now";
  ASSERT_TRUE(rb->swapDeferredUntil.has_value());
  EXPECT_EQ(*rb->swapDeferredUntil, t + 5s + opts_.caPropagationDelay);
  EXPECT_EQ(rb->nextCheck, *rb->swapDeferredUntil);

  rb = b.reconcile(t + 5s + opts_.caPropagationDelay - 1s);
  ASSERT_TRUE(rb.isOk());
  EXPECT_EQ(sinkB.certs.size(), served);

  rb = b.reconcile(t + 5s + opts_.caPropagationDelay);
  ASSERT_TRUE(rb.isOk());
  ASSERT_EQ(sinkB.certs.size(), served + 1);
  EXPECT_EQ(sinkB.certs.back().certChainPem, rotated.certPem);
  EXPECT_TRUE(checkIssuedBy(sinkB.certs.back().certChainPem, rotated.caCertPem).isOk());
  EXPECT_FALSE(rb->swapDeferredUntil.has_value());
}

// A bundle replaced wholesale (a new CA, the old one not kept): waiting would
// only prolong serving a certificate nobody trusts any more, so it is served now.
TEST_F(SelfManagedTest, ACaThatDroppedOursIsServedAtOnce) {
  SelfManagedCertificates m(opts_, store_, patcher_, sink_);
  ASSERT_TRUE(m.reconcile(kNow).isOk());
  InMemoryCertStore other;
  FakeWebhookConfig otherConfig;
  RecordingSink otherSink;
  SelfManagedCertificates fresh(opts_, other, otherConfig, otherSink);
  ASSERT_TRUE(fresh.reconcile(kNow).isOk());
  store_.externalWrite(*other.current());  // no previous CA in it

  auto r = m.reconcile(kNow + 1min);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_FALSE(r->swapDeferredUntil.has_value());
  ASSERT_EQ(sink_.certs.size(), 2u);
  EXPECT_EQ(sink_.certs[1].certChainPem, other.current()->certPem);
  EXPECT_EQ(patcher_.caBundle, other.current()->caCertPem);
}

// Issue 12 item 8: a malformed bundle in the store is named key by key and
// re-issued over it; what still holds (a good CA) is kept.
TEST_F(SelfManagedTest, AMalformedStoredBundleIsNamedAndReissued) {
  SelfManagedCertificates m(opts_, store_, patcher_, sink_);
  ASSERT_TRUE(m.reconcile(kNow).isOk());
  const CertBundle good = *store_.current();
  EXPECT_EQ(describeBundleProblems(good), "");

  CertBundle bad = good;
  bad.certPem = "-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n";
  store_.externalWrite(bad);
  auto r = m.reconcile(kNow + 1min);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->action, CertAction::kIssueServing);
  EXPECT_EQ(r->storedProblems.rfind("tls.crt: ", 0), 0u) << r->storedProblems;
  EXPECT_EQ(store_.current()->caCertPem, good.caCertPem) << "the CA is kept";
  EXPECT_EQ(describeBundleProblems(*store_.current()), "");

  bad = *store_.current();
  bad.caKeyPem = testCa().keyPem;  // a key of another CA
  bad.keyPem.clear();
  store_.externalWrite(bad);
  r = m.reconcile(kNow + 2min);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->action, CertAction::kIssueAll);
  EXPECT_NE(r->storedProblems.find("ca.key: "), std::string::npos) << r->storedProblems;
  EXPECT_NE(r->storedProblems.find("tls.key is missing"), std::string::npos) << r->storedProblems;
  EXPECT_EQ(describeBundleProblems(*store_.current()), "");
  // The certificate served still chains to the old CA, which stays in the caBundle.
  EXPECT_TRUE(r->swapDeferredUntil.has_value());

  // A healthy renewal names no problem.
  r = m.reconcile(kNow + hours(24 * 21));
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->action, CertAction::kIssueServing);
  EXPECT_EQ(r->storedProblems, "");
}

}  // namespace
}  // namespace lockstep::webhooks
