// OCI referrers: the pure manifest/index code, and RegistryClient's push and
// list against an in-memory registry with a knob: with the referrers API
// (OCI-Subject on PUT, GET /referrers/) or without it (404, the tag schema).
#include "operator/registry/referrers.h"
#include "operator/registry/bundle_referrers.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>

#include "operator/registry/bundle_referrers.h"
#include "operator/registry/distribution.h"

namespace lockstep::registry {
namespace {

using nlohmann::json;

constexpr const char* kReferrersHost = "registry.example";
constexpr const char* kReferrersRepo = "models/gpt2";

HttpResponse replyReferrers(int status, std::string body = "", Headers headers = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

// A registry in memory: blobs, manifests by digest and tag; with
// `referrersApi` it indexes manifests by their subject as distribution 3 does.
class MemoryRegistry final : public HttpTransport {
 public:
  bool referrersApi = true;
  int failPutsLeft = 0;  // the next N manifest PUTs answer 429
  // The next N writes of a fallback index tag are overwritten at once by a
  // concurrent writer that read the index before them (a lost update).
  int clobberIndexPuts = 0;
  std::map<std::string, std::string> blobs;
  std::map<std::string, std::pair<std::string, std::string>> manifests;  // ref -> (type, bytes)
  std::vector<HttpRequest> requests;

  StatusOr<HttpResponse> send(const HttpRequest& r) override {
    requests.push_back(r);
    const std::string base = std::string("/v2/") + kReferrersRepo;
    if (r.method == "POST" && r.target == base + "/blobs/uploads/")
      return replyReferrers(202, "", {{"Location", base + "/blobs/uploads/u1?state=x"}});
    if (r.method == "PUT" && r.target.rfind(base + "/blobs/uploads/u1", 0) == 0) {
      blobs[sha256Digest(r.body)] = r.body;
      return replyReferrers(201);
    }
    const std::string bprefix = base + "/blobs/";
    if (r.method == "GET" && r.target.rfind(bprefix + "sha256:", 0) == 0) {
      auto it = blobs.find(r.target.substr(bprefix.size()));
      if (it == blobs.end()) return replyReferrers(404);
      return replyReferrers(200, it->second);
    }
    const std::string mprefix = base + "/manifests/";
    if (r.target.rfind(mprefix, 0) == 0) {
      std::string ref = r.target.substr(mprefix.size());
      if (r.method == "PUT") {
        if (failPutsLeft > 0) {
          --failPutsLeft;
          return replyReferrers(429,
                                R"({"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]})");
        }
        std::string digest = sha256Digest(r.body);
        if (ref.rfind("sha256-", 0) == 0 && clobberIndexPuts > 0) {
          --clobberIndexPuts;
          auto before = manifests.find(ref);
          if (before == manifests.end()) {
            manifests.erase(ref);
          } else {
            manifests[sha256Digest(before->second.second)] = before->second;
          }
          return replyReferrers(201, "", {{"Docker-Content-Digest", digest}});
        }
        manifests[ref] = {r.header("Content-Type"), r.body};
        manifests[digest] = manifests[ref];
        Headers h{{"Docker-Content-Digest", digest}};
        json m = json::parse(r.body);
        if (referrersApi && m.contains("subject"))
          h.emplace_back("OCI-Subject", m["subject"]["digest"].get<std::string>());
        return replyReferrers(201, "", h);
      }
      auto it = manifests.find(ref);
      if (it == manifests.end())
        return replyReferrers(404,
                              R"({"errors":[{"code":"MANIFEST_UNKNOWN","message":"unknown"}]})");
      return replyReferrers(200, it->second.second, {{"Content-Type", it->second.first}});
    }
    const std::string rprefix = base + "/referrers/";
    if (r.target.rfind(rprefix, 0) == 0) {
      if (!referrersApi) return replyReferrers(404, "404 page not found\n");
      std::string subject = r.target.substr(rprefix.size());
      json index = {{"schemaVersion", 2}, {"mediaType", kOciIndex}, {"manifests", json::array()}};
      for (const auto& [ref, tm] : manifests) {
        if (ref.rfind("sha256:", 0) != 0) continue;
        json m = json::parse(tm.second);
        if (!m.contains("subject") || m["subject"]["digest"] != subject) continue;
        auto d = referrerDescriptor(tm.second);
        json e = {{"mediaType", d->mediaType},
                  {"digest", d->digest},
                  {"size", d->size},
                  {"artifactType", d->artifactType}};
        if (!d->annotations.empty()) e["annotations"] = d->annotations;
        index["manifests"].push_back(e);
      }
      return replyReferrers(200, index.dump(), {{"Content-Type", kOciIndex}});
    }
    return replyReferrers(404);
  }
};

const std::string kPackage =
    R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
    R"("config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:c","size":2},)"
    R"("layers":[]})";

struct World {
  std::shared_ptr<MemoryRegistry> reg = std::make_shared<MemoryRegistry>();
  std::string subjectDigest;
  World() {
    subjectDigest = sha256Digest(kPackage);
    reg->manifests[subjectDigest] = {kOciManifest, kPackage};
  }
  RegistryClient client() {
    RegistryClient c(kReferrersHost, std::nullopt,
                     [this](const std::string&) -> StatusOr<std::shared_ptr<HttpTransport>> {
                       return std::shared_ptr<HttpTransport>(reg);
                     });
    c.setSettle([this](int attempt) { settles.push_back(attempt); });
    return c;
  }
  std::vector<int> settles;  // the pauses before each read-back
  Artifact bundle(const std::string& payload, const std::string& predicate) const {
    return {"application/vnd.dev.sigstore.bundle.v0.3+json",
            payload,
            {{"dev.sigstore.bundle.predicateType", predicate}}};
  }
};

TEST(ReferrerManifest, CarriesSubjectArtifactTypeEmptyConfigAndOneLayer) {
  Descriptor subject{kOciManifest, "sha256:" + std::string(64, 'a'), 321, "x", {{"a", "b"}}};
  Artifact a{"application/vnd.dev.sigstore.bundle.v0.3+json", "BUNDLE", {{"k", "v"}}};
  const std::string bytes = referrerManifest(subject, a);
  json m = json::parse(bytes);
  EXPECT_EQ(m["schemaVersion"], 2);
  EXPECT_EQ(m["mediaType"], kOciManifest);
  EXPECT_EQ(m["artifactType"], a.artifactType);
  EXPECT_EQ(m["config"]["mediaType"], kEmptyMediaType);
  EXPECT_EQ(m["config"]["digest"],
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
  EXPECT_EQ(m["config"]["size"], 2);
  ASSERT_EQ(m["layers"].size(), 1u);
  EXPECT_EQ(m["layers"][0]["digest"], sha256Digest("BUNDLE"));
  EXPECT_EQ(m["layers"][0]["size"], 6);
  // The subject is a plain descriptor: what a list shows of it is not copied in.
  EXPECT_EQ(m["subject"],
            json({{"mediaType", kOciManifest}, {"digest", subject.digest}, {"size", 321}}));
  EXPECT_EQ(m["annotations"]["k"], "v");
  EXPECT_EQ(referrerManifest(subject, a), bytes) << "the same input gives the same bytes";
  auto d = referrerDescriptor(bytes);
  ASSERT_TRUE(d.isOk());
  EXPECT_EQ(d->digest, sha256Digest(bytes));
  EXPECT_EQ(d->artifactType, a.artifactType);
  EXPECT_EQ(d->annotations.at("k"), "v");
}

TEST(ReferrersIndex, FallbackIndexKeepsWhatIsThereAndAddsOnce) {
  EXPECT_EQ(referrersTag("sha256:abc"), "sha256-abc");
  Descriptor one{kOciManifest, "sha256:" + std::string(64, '1'), 10, "t1", {}};
  Descriptor two{kOciManifest, "sha256:" + std::string(64, '2'), 20, "t2", {{"p", "q"}}};
  auto first = indexWith("", one);
  ASSERT_TRUE(first.isOk());
  auto second = indexWith(*first, two);
  ASSERT_TRUE(second.isOk());
  auto again = indexWith(*second, one);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(*again, *second) << "a descriptor already listed is not added twice";
  auto list = parseReferrersIndex(*second, "index");
  ASSERT_TRUE(list.isOk()) << list.status().toString();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].digest, one.digest);
  EXPECT_EQ((*list)[1].annotations.at("p"), "q");
  EXPECT_EQ(json::parse(*second)["mediaType"], kOciIndex);
}

TEST(ReferrersIndex, MalformedIndexNamesTheField) {
  auto bad = parseReferrersIndex(R"({"manifests":[{"mediaType":"x","digest":"d"}]})", "tag t");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().message(),
            "tag t.manifests[0].size: missing or not a non-negative integer");
  auto wrongType = parseReferrersIndex(R"({"mediaType":"application/json"})", "tag t");
  ASSERT_FALSE(wrongType.isOk());
  EXPECT_NE(wrongType.status().message().find("tag t.mediaType"), std::string::npos);
  EXPECT_FALSE(parseReferrersIndex("not json", "tag t").isOk());
  EXPECT_FALSE(indexWith("[]", Descriptor{}).isOk());
}

TEST(RegistryReferrers, PushedWithTheApiAreListedByIt) {
  World w;
  auto c = w.client();
  auto subject = c.describe(kReferrersRepo, w.subjectDigest);
  ASSERT_TRUE(subject.isOk()) << subject.status().toString();
  EXPECT_EQ(subject->size, static_cast<int64_t>(kPackage.size()));
  auto pushed = c.pushReferrer(kReferrersRepo, *subject, w.bundle("B1", "https://p/eval"));
  ASSERT_TRUE(pushed.isOk()) << pushed.status().toString();
  EXPECT_EQ(w.reg->blobs.count(sha256Digest("B1")), 1u);
  EXPECT_EQ(w.reg->blobs.count(sha256Digest(kEmptyBlob)), 1u);
  EXPECT_EQ(w.reg->manifests.count(referrersTag(w.subjectDigest)), 0u)
      << "a registry that indexed the subject gets no fallback tag";
  auto list = c.referrers(kReferrersRepo, w.subjectDigest);
  ASSERT_TRUE(list.isOk()) << list.status().toString();
  EXPECT_FALSE(list->viaTag);
  ASSERT_EQ(list->descriptors.size(), 1u);
  EXPECT_EQ(list->descriptors[0].digest, pushed->digest);
  EXPECT_EQ(list->descriptors[0].annotations.at("dev.sigstore.bundle.predicateType"),
            "https://p/eval");
}

TEST(RegistryReferrers, WithoutTheApiTheFallbackTagIndexHoldsEveryReferrer) {
  World w;
  w.reg->referrersApi = false;
  auto c = w.client();
  auto none = c.referrers(kReferrersRepo, w.subjectDigest);
  ASSERT_TRUE(none.isOk()) << none.status().toString();
  EXPECT_TRUE(none->viaTag);
  EXPECT_TRUE(none->descriptors.empty());
  auto subject = c.describe(kReferrersRepo, w.subjectDigest);
  ASSERT_TRUE(subject.isOk());
  auto p1 = c.pushReferrer(kReferrersRepo, *subject, w.bundle("B1", "https://p/eval"));
  auto p2 = c.pushReferrer(kReferrersRepo, *subject, w.bundle("B2", "https://p/decision"));
  ASSERT_TRUE(p1.isOk() && p2.isOk());
  auto again = c.pushReferrer(kReferrersRepo, *subject, w.bundle("B1", "https://p/eval"));
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again->digest, p1->digest);
  auto list = c.referrers(kReferrersRepo, w.subjectDigest);
  ASSERT_TRUE(list.isOk()) << list.status().toString();
  EXPECT_TRUE(list->viaTag);
  ASSERT_EQ(list->descriptors.size(), 2u) << "pushed twice, listed once";
  EXPECT_EQ(list->descriptors[0].digest, p1->digest);
  EXPECT_EQ(list->descriptors[1].digest, p2->digest);
  EXPECT_EQ(list->descriptors[1].artifactType, "application/vnd.dev.sigstore.bundle.v0.3+json");
  const auto& tagged = w.reg->manifests.at(referrersTag(w.subjectDigest));
  EXPECT_EQ(tagged.first, kOciIndex);
}

TEST(RegistryReferrers, ARefusedPushIsAnErrorNamingTheRegistryAndNothingIsIndexed) {
  World w;
  w.reg->referrersApi = false;
  w.reg->failPutsLeft = 1;
  auto c = w.client();
  auto subject = c.describe(kReferrersRepo, w.subjectDigest);
  ASSERT_TRUE(subject.isOk());
  auto pushed = c.pushReferrer(kReferrersRepo, *subject, w.bundle("B1", "https://p/eval"));
  ASSERT_FALSE(pushed.isOk());
  EXPECT_EQ(pushed.status().code(), Code::kUnavailable) << pushed.status().toString();
  EXPECT_NE(pushed.status().message().find("registry registry.example, repository models/gpt2"),
            std::string::npos)
      << pushed.status().message();
  EXPECT_NE(pushed.status().message().find("HTTP 429"), std::string::npos);
  EXPECT_EQ(w.reg->manifests.count(referrersTag(w.subjectDigest)), 0u);
  // The retry lands.
  ASSERT_TRUE(c.pushReferrer(kReferrersRepo, *subject, w.bundle("B1", "https://p/eval")).isOk());
  EXPECT_EQ(c.referrers(kReferrersRepo, w.subjectDigest)->descriptors.size(), 1u);
}

}  // namespace
TEST(RegistryReferrers, AnEntryAConcurrentWriterDroppedFromTheFallbackIndexIsAddedAgain) {
  World w;
  w.reg->referrersApi = false;
  auto c = w.client();
  auto subject = c.describe(kReferrersRepo, w.subjectDigest);
  ASSERT_TRUE(subject.isOk());
  ASSERT_TRUE(c.pushReferrer(kReferrersRepo, *subject, w.bundle("B1", "https://p/eval")).isOk());
  EXPECT_EQ(w.settles, std::vector<int>({1})) << "written, paused, read back";
  // Another writer's older read overwrites the next two writes of B2.
  w.reg->clobberIndexPuts = 2;
  w.settles.clear();
  auto p2 = c.pushReferrer(kReferrersRepo, *subject, w.bundle("B2", "https://p/decision"));
  ASSERT_TRUE(p2.isOk()) << p2.status().toString();
  EXPECT_EQ(w.settles, std::vector<int>({1, 2, 3}));
  auto list = c.referrers(kReferrersRepo, w.subjectDigest);
  ASSERT_TRUE(list.isOk());
  ASSERT_EQ(list->descriptors.size(), 2u) << "B1 kept, B2 there in the end";
  EXPECT_EQ(list->descriptors[1].digest, p2->digest);
  // Overwritten every time: an error that says so, for the caller to retry later.
  w.reg->clobberIndexPuts = 100;
  auto lost = c.pushReferrer(kReferrersRepo, *subject, w.bundle("B3", "https://p/prod"));
  ASSERT_FALSE(lost.isOk());
  EXPECT_EQ(lost.status().code(), Code::kUnavailable);
  EXPECT_NE(lost.status().message().find("lost this entry to concurrent writers 6 times"),
            std::string::npos)
      << lost.status().message();
}

TEST(BundleReferrers, ACacheReadsEachBundleOnceAndOnlyTheListAgain) {
  World w;
  auto c = w.client();
  auto subject = c.describe(kReferrersRepo, w.subjectDigest);
  ASSERT_TRUE(subject.isOk());
  Artifact a{"application/vnd.dev.sigstore.bundle.v0.3+json",
             R"({"bundle":1})",
             {{"dev.sigstore.bundle.content", "dsse-envelope"}}};
  ASSERT_TRUE(c.pushReferrer(kReferrersRepo, *subject, a).isOk());
  BundleCache cache;
  auto first = readBundleReferrers(c, kReferrersRepo, w.subjectDigest, &cache);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  ASSERT_EQ(first->referrers.size(), 1u);
  EXPECT_EQ(first->referrers[0].bundle, R"({"bundle":1})");
  EXPECT_EQ(cache.size(), 1u);
  w.reg->requests.clear();
  auto again = readBundleReferrers(c, kReferrersRepo, w.subjectDigest, &cache);
  ASSERT_TRUE(again.isOk());
  ASSERT_EQ(again->referrers.size(), 1u);
  EXPECT_EQ(again->referrers[0].bundle, R"({"bundle":1})");
  ASSERT_EQ(w.reg->requests.size(), 1u) << "only the referrers list";
  EXPECT_NE(w.reg->requests[0].target.find("/referrers/"), std::string::npos);
  // Without a cache every bundle is read again.
  w.reg->requests.clear();
  ASSERT_TRUE(readBundleReferrers(c, kReferrersRepo, w.subjectDigest).isOk());
  EXPECT_EQ(w.reg->requests.size(), 3u) << "the list, the manifest, the blob";
}

}  // namespace lockstep::registry
