// The client, watch and informer against the real control plane
// (tests/cluster/cluster.sh): CRUD and status of a CRD-backed object, watch
// ordering, relist after etcd compaction, and surviving an apiserver restart.
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "operator/kube/client.h"
#include "operator/kube/connect.h"
#include "operator/kube/event_recorder.h"
#include "operator/kube/informer.h"
#include "tests/support/cluster_env.h"

namespace lockstep::kube {
namespace {

using namespace std::chrono_literals;
using lockstep::testing::clusterScript;
using lockstep::testing::kubeconfigPath;
using lockstep::testing::uniqueName;

const Resource kWidgets{"test.lockstep.dev", "v1", "widgets", "Widget", true};

// Wraps a transport; while paused every call fails as if the server were unreachable
// and open watches are cut, so a test can change the world behind an informer's back.
class PausableTransport final : public Transport {
 public:
  explicit PausableTransport(std::shared_ptr<Transport> inner) : inner_(std::move(inner)) {}
  StatusOr<Response> send(const Request& r) override {
    if (paused_) return unavailable("paused by test");
    ++requests_;
    return inner_->send(r);
  }
  StatusOr<std::unique_ptr<LineStream>> openStream(const Request& r) override {
    if (paused_) return unavailable("paused by test");
    auto s = inner_->openStream(r);
    if (!s.isOk()) return s.status();
    auto wrapped = std::make_unique<Tracked>(std::move(s).value(), this);
    return std::unique_ptr<LineStream>(std::move(wrapped));
  }
  void pause() {
    paused_ = true;
    std::lock_guard<std::mutex> l(mu_);
    for (auto* s : open_) s->cancelInner();
  }
  void resume() { paused_ = false; }
  int requests() const { return requests_; }

 private:
  class Tracked final : public LineStream {
   public:
    Tracked(std::unique_ptr<LineStream> s, PausableTransport* owner)
        : s_(std::move(s)), owner_(owner) {
      std::lock_guard<std::mutex> l(owner_->mu_);
      owner_->open_.insert(this);
    }
    ~Tracked() override {
      std::lock_guard<std::mutex> l(owner_->mu_);
      owner_->open_.erase(this);
    }
    StatusOr<std::optional<std::string>> readLine() override {
      auto r = s_->readLine();
      // A cut by pause() looks like a dropped connection, not a local cancel.
      if (!r.isOk() && cut_) return unavailable("connection cut by test");
      return r;
    }
    void cancel() override { s_->cancel(); }
    void cancelInner() {
      cut_ = true;
      s_->cancel();
    }

   private:
    std::unique_ptr<LineStream> s_;
    PausableTransport* owner_;
    std::atomic<bool> cut_{false};
  };

  std::shared_ptr<Transport> inner_;
  std::atomic<bool> paused_{false};
  std::atomic<int> requests_{0};
  std::mutex mu_;
  std::set<Tracked*> open_;
};

class KubeIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto cfg = loadKubeConfig(kubeconfigPath());
    ASSERT_TRUE(cfg.isOk()) << cfg.status().toString();
    RestOptions rest;
    rest.requestTimeout = 20s;
    auto transport = RestTransport::create(*cfg, rest);
    ASSERT_TRUE(transport.isOk()) << transport.status().toString();
    transport_ =
        new std::shared_ptr<PausableTransport>(std::make_shared<PausableTransport>(*transport));
    client_ = new std::shared_ptr<Client>(std::make_shared<Client>(*transport_));
    ensureCrd();
  }

  static void ensureCrd() {
    Object crd = nlohmann::json::parse(R"({
      "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "widgets.test.lockstep.dev"},
      "spec": {"group": "test.lockstep.dev", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{"name": "v1", "served": true, "storage": true,
          "subresources": {"status": {}},
          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
              "size": {"type": "integer", "minimum": 0}, "color": {"type": "string"}}},
            "status": {"type": "object", "properties": {
              "phase": {"type": "string"}, "observedGeneration": {"type": "integer"}}}}}}}]}})");
    auto applied = client().apply(resources::kCustomResourceDefinitions, crd);
    ASSERT_TRUE(applied.isOk()) << applied.status().toString();
    for (int i = 0; i < 100; ++i) {
      auto got =
          client().get(resources::kCustomResourceDefinitions, "", "widgets.test.lockstep.dev");
      if (got.isOk()) {
        for (const auto& c : (*got)["status"].value("conditions", nlohmann::json::array())) {
          if (c.value("type", "") == "Established" && c.value("status", "") == "True") {
            // Discovery may lag the condition a little.
            for (int j = 0; j < 50; ++j) {
              if (client().list(kWidgets, "default").isOk()) return;
              std::this_thread::sleep_for(100ms);
            }
          }
        }
      }
      std::this_thread::sleep_for(100ms);
    }
    FAIL() << "CRD widgets.test.lockstep.dev never became established";
  }

  static Client& client() { return **client_; }
  static PausableTransport& transport() { return **transport_; }

  std::string makeNamespace() {
    std::string ns = uniqueName("kube-it");
    auto created =
        client().create(resources::kNamespaces, newObject(resources::kNamespaces, "", ns));
    EXPECT_TRUE(created.isOk()) << created.status().toString();
    namespaces_.push_back(ns);
    return ns;
  }
  void TearDown() override {
    for (const auto& ns : namespaces_) (void)client().remove(resources::kNamespaces, "", ns);
  }

  static Object widget(const std::string& ns, const std::string& name, int size) {
    Object w = newObject(kWidgets, ns, name);
    w["spec"] = {{"size", size}, {"color", "blue"}};
    return w;
  }

  static std::shared_ptr<PausableTransport>* transport_;
  static std::shared_ptr<Client>* client_;
  std::vector<std::string> namespaces_;
};

std::shared_ptr<PausableTransport>* KubeIntegrationTest::transport_ = nullptr;
std::shared_ptr<Client>* KubeIntegrationTest::client_ = nullptr;

// Polls `pred` (real time) until true or the timeout.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = 60s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return pred();
}

TEST_F(KubeIntegrationTest, CrudAndStatusOfACustomResource) {
  std::string ns = makeNamespace();
  auto created = client().create(kWidgets, widget(ns, "w1", 3));
  ASSERT_TRUE(created.isOk()) << created.status().toString();
  EXPECT_EQ(generation(*created), 1);
  EXPECT_FALSE(uid(*created).empty());
  EXPECT_EQ(client().create(kWidgets, widget(ns, "w1", 3)).status().code(), Code::kAlreadyExists);

  auto got = client().get(kWidgets, ns, "w1");
  ASSERT_TRUE(got.isOk());
  EXPECT_EQ((*got)["spec"]["size"], 3);

  // Update with the current resourceVersion works; a stale one is a Conflict.
  Object stale = *got;
  (*got)["spec"]["size"] = 4;
  auto updated = client().update(kWidgets, *got);
  ASSERT_TRUE(updated.isOk()) << updated.status().toString();
  EXPECT_EQ(generation(*updated), 2);
  stale["spec"]["size"] = 9;
  EXPECT_EQ(client().update(kWidgets, stale).status().code(), Code::kConflict);

  // Schema validation failures are Invalid.
  Object bad = *updated;
  bad["spec"]["size"] = -1;
  EXPECT_EQ(client().update(kWidgets, bad).status().code(), Code::kInvalid);

  // Status through the subresource: merge patch, then a full update.
  auto patched =
      client().patchStatus(kWidgets, ns, "w1", {{"phase", "Ready"}, {"observedGeneration", 2}});
  ASSERT_TRUE(patched.isOk()) << patched.status().toString();
  EXPECT_EQ((*patched)["status"]["phase"], "Ready");
  EXPECT_EQ(generation(*patched), 2);  // status writes do not bump the generation
  Object withStatus = *patched;
  withStatus["status"]["phase"] = "Degraded";
  withStatus["spec"]["size"] = 100;  // ignored by /status
  auto statusUpdated = client().updateStatus(kWidgets, withStatus);
  ASSERT_TRUE(statusUpdated.isOk()) << statusUpdated.status().toString();
  EXPECT_EQ((*statusUpdated)["status"]["phase"], "Degraded");
  EXPECT_EQ((*statusUpdated)["spec"]["size"], 4);

  // Spec merge patch.
  auto specPatched = client().mergePatch(kWidgets, ns, "w1", {{"spec", {{"color", "red"}}}});
  ASSERT_TRUE(specPatched.isOk());
  EXPECT_EQ((*specPatched)["spec"]["color"], "red");
  EXPECT_EQ((*specPatched)["spec"]["size"], 4);

  // Delete with a wrong UID precondition is refused; the right one deletes.
  DeleteOptions wrong;
  wrong.preconditions.uid = "00000000-0000-0000-0000-000000000000";
  EXPECT_EQ(client().remove(kWidgets, ns, "w1", wrong).code(), Code::kConflict);
  DeleteOptions right;
  right.preconditions.uid = uid(*created);
  right.propagationPolicy = "Background";
  ASSERT_TRUE(client().remove(kWidgets, ns, "w1", right).isOk());
  EXPECT_TRUE(eventually(
      [&] { return client().get(kWidgets, ns, "w1").status().code() == Code::kNotFound; }));
  EXPECT_EQ(client().remove(kWidgets, ns, "w1").code(), Code::kNotFound);
}

TEST_F(KubeIntegrationTest, ServerSideApplyOwnsFieldsAndForceTakesThem) {
  std::string ns = makeNamespace();
  Object desired = widget(ns, "applied", 1);
  auto first = client().apply(kWidgets, desired, PatchParams{.fieldManager = "", .force = false});
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_EQ((*first)["spec"]["size"], 1);
  // Another manager takes spec.size ...
  auto r = lockstep::testing::kubectl({"-n", ns, "patch", "widget", "applied", "--type=merge", "-p",
                                       R"({"spec":{"size":7}})", "--field-manager=someone-else"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // ... so a non-forced apply of a different value conflicts, and a forced one wins.
  desired["spec"]["size"] = 2;
  EXPECT_EQ(client()
                .apply(kWidgets, desired, PatchParams{.fieldManager = "", .force = false})
                .status()
                .code(),
            Code::kConflict);
  auto forced = client().apply(kWidgets, desired, PatchParams{.fieldManager = "", .force = true});
  ASSERT_TRUE(forced.isOk()) << forced.status().toString();
  EXPECT_EQ((*forced)["spec"]["size"], 2);
  // Status by apply through the subresource.
  Object status = newObject(kWidgets, ns, "applied");
  status["status"] = {{"phase", "Applied"}};
  auto st = client().applyStatus(kWidgets, status);
  ASSERT_TRUE(st.isOk()) << st.status().toString();
  EXPECT_EQ((*st)["status"]["phase"], "Applied");
}

TEST_F(KubeIntegrationTest, ListPaginatesWithLimitAndContinue) {
  std::string ns = makeNamespace();
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(client().create(kWidgets, widget(ns, "p" + std::to_string(i), i)).isOk());
  }
  int before = transport().requests();
  ListOptions o;
  o.limit = 2;
  auto all = client().list(kWidgets, ns, o);
  ASSERT_TRUE(all.isOk()) << all.status().toString();
  EXPECT_EQ(all->items.size(), 7u);
  EXPECT_EQ(transport().requests() - before, 4);  // 2 + 2 + 2 + 1
  EXPECT_FALSE(all->resourceVersion.empty());
  std::set<std::string> names;
  for (const auto& w : all->items) names.insert(name(w));
  EXPECT_EQ(names.size(), 7u);
}

TEST_F(KubeIntegrationTest, WatchSeesCreateUpdateDeleteInOrder) {
  std::string ns = makeNamespace();
  auto listed = client().list(kWidgets, ns);
  ASSERT_TRUE(listed.isOk());
  WatchOptions wo;
  wo.resourceVersion = listed->resourceVersion;
  wo.timeoutSeconds = 60;
  auto w = client().watch(kWidgets, ns, wo);
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  std::thread writer([&] {
    auto c = client().create(kWidgets, widget(ns, "watched", 1));
    ASSERT_TRUE(c.isOk());
    Object o = *c;
    o["spec"]["size"] = 2;
    ASSERT_TRUE(client().update(kWidgets, o).isOk());
    ASSERT_TRUE(client().remove(kWidgets, ns, "watched").isOk());
  });
  std::vector<std::string> seen;
  std::string lastRv;
  while (seen.size() < 3) {
    auto ev = (*w)->next();
    ASSERT_TRUE(ev.isOk()) << ev.status().toString();
    ASSERT_TRUE(ev->has_value()) << "watch ended early";
    if ((*ev)->type == WatchEvent::Type::kBookmark) continue;
    seen.push_back(std::string(watchEventTypeName((*ev)->type)) + " " + name((*ev)->object) +
                   " size=" + (*ev)->object["spec"]["size"].dump());
    std::string rv = resourceVersion((*ev)->object);
    EXPECT_GT(std::stoll(rv), lastRv.empty() ? 0 : std::stoll(lastRv));
    lastRv = rv;
  }
  writer.join();
  (*w)->cancel();
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED watched size=1", "MODIFIED watched size=2",
                                            "DELETED watched size=2"}));
}

// Keys and resourceVersions the server has, and what the informer cached.
std::map<std::string, std::string> serverState(Client& c, const std::string& ns) {
  std::map<std::string, std::string> out;
  auto l = c.list(kWidgets, ns);
  if (!l.isOk()) return {{"<error>", l.status().toString()}};
  for (const auto& o : l->items) out[objectKey(o)] = resourceVersion(o);
  return out;
}

std::map<std::string, std::string> cacheState(const Informer& inf) {
  std::map<std::string, std::string> out;
  for (const auto& o : inf.cache().list()) out[objectKey(*o)] = resourceVersion(*o);
  return out;
}

TEST_F(KubeIntegrationTest, InformerRelistsAfterCompactionAndMatchesTheServer) {
  std::string ns = makeNamespace();
  for (const char* n : {"keep", "change", "remove"}) {
    ASSERT_TRUE(client().create(kWidgets, widget(ns, n, 1)).isOk());
  }
  InformerOptions io;
  io.resource = kWidgets;
  io.ns = ns;
  io.backoff.initial = 200ms;  // keep the test short; production keeps 800 ms
  io.backoff.max = 2s;
  Informer informer(*client_, io);
  informer.addLabelIndex("app");
  std::mutex mu;
  std::vector<std::string> deleted;
  EventHandler h;
  h.onDelete = [&](const Object& o) {
    std::lock_guard<std::mutex> l(mu);
    deleted.push_back(name(o));
  };
  informer.addEventHandler(h);
  informer.start();
  ASSERT_TRUE(informer.waitForSync(60s));
  EXPECT_EQ(cacheState(informer), serverState(client(), ns));
  std::string staleRv = informer.lastSyncResourceVersion();

  // Behind the informer's back: change the world, compact etcd past its version and
  // restart the apiserver so its watch cache holds nothing older either.
  transport().pause();
  struct Resume {
    ~Resume() { transport().resume(); }
  } resumeOnExit;
  auto direct = connect(ConnectOptions{kubeconfigPath()});
  ASSERT_TRUE(direct.isOk());
  Client& other = **direct;
  ASSERT_TRUE(other.remove(kWidgets, ns, "remove").isOk());
  auto changed = other.mergePatch(kWidgets, ns, "change", {{"spec", {{"size", 5}}}});
  ASSERT_TRUE(changed.isOk());
  ASSERT_TRUE(other.create(kWidgets, widget(ns, "new", 1)).isOk());
  auto compact = clusterScript({"compact-etcd"});
  ASSERT_EQ(compact.exitCode, 0) << compact.err;
  auto restart = clusterScript({"restart-apiserver"});
  ASSERT_EQ(restart.exitCode, 0) << restart.err;
  // The stale version is now unusable: a watch from it is answered 410 Gone.
  WatchOptions wo;
  wo.resourceVersion = staleRv;
  wo.timeoutSeconds = 5;
  // (Right after the restart the server may still answer "storage is initializing".)
  Status probeResult = unavailable("not probed");
  for (int i = 0; i < 100 && probeResult.code() == Code::kUnavailable; ++i) {
    if (i > 0) std::this_thread::sleep_for(200ms);
    auto probe = other.watch(kWidgets, ns, wo);
    if (!probe.isOk()) {
      probeResult = probe.status();
      continue;
    }
    auto ev = (*probe)->next();
    probeResult = ev.isOk() ? internalError("watch from a compacted version delivered an event")
                            : ev.status();
    (*probe)->cancel();
  }
  EXPECT_EQ(probeResult.code(), Code::kGone) << probeResult.toString();
  int listsBefore = informer.listCount();
  transport().resume();

  ASSERT_TRUE(eventually([&] { return informer.listCount() > listsBefore; }, 90s))
      << "informer never relisted";
  ASSERT_TRUE(eventually([&] { return cacheState(informer) == serverState(client(), ns); }, 30s));
  auto cached = cacheState(informer);
  EXPECT_EQ(cached.size(), 3u);
  EXPECT_TRUE(cached.count(ns + "/new"));
  EXPECT_FALSE(cached.count(ns + "/remove"));  // no phantom
  EXPECT_EQ(resourceVersion(*informer.cache().get(ns, "change")), resourceVersion(*changed));
  {
    std::lock_guard<std::mutex> l(mu);
    EXPECT_EQ(deleted, std::vector<std::string>{"remove"});
  }
  // And it keeps watching after the relist.
  ASSERT_TRUE(client().create(kWidgets, widget(ns, "after", 1)).isOk());
  EXPECT_TRUE(eventually([&] { return informer.cache().get(ns, "after") != nullptr; }, 30s));
  informer.stop();
}

// A metadata-only informer with a "has no such label" selector, against the
// real API server: it holds the unlabelled objects as PartialObjectMetadata
// (no data), never a labelled one, and follows a label added (the object
// leaves) and a new unlabelled object (it comes), as the operator's caches of
// foreign objects at a model's names rely on (cached_serving_objects.h).
TEST_F(KubeIntegrationTest, AMetadataOnlyInformerHoldsTheUnlabelledObjectsMetadata) {
  std::string ns = makeNamespace();
  auto configMap = [&](const std::string& name, bool labelled) {
    Object cm = newObject(resources::kConfigMaps, ns, name);
    cm["data"] = {{"big", std::string(4096, 'x')}};
    if (labelled) cm["metadata"]["labels"] = {{"lockstep.dev/model", "gpt2"}};
    return cm;
  };
  ASSERT_TRUE(client().create(resources::kConfigMaps, configMap("team", false)).isOk());
  ASSERT_TRUE(client().create(resources::kConfigMaps, configMap("ours", true)).isOk());
  InformerOptions io;
  io.resource = resources::kConfigMaps;
  io.ns = ns;
  io.labelSelector = "!lockstep.dev/model";
  io.metadataOnly = true;
  Informer informer(*client_, io);
  informer.start();
  ASSERT_TRUE(informer.waitForSync(60s));
  ObjectPtr team = informer.cache().get(ns, "team");
  ASSERT_NE(team, nullptr);
  EXPECT_EQ(team->value("kind", ""), "PartialObjectMetadata") << team->dump();
  EXPECT_FALSE(team->contains("data")) << team->dump();
  EXPECT_FALSE(uid(*team).empty());
  EXPECT_EQ(informer.cache().get(ns, "ours"), nullptr);

  ASSERT_TRUE(client()
                  .mergePatch(resources::kConfigMaps, ns, "team",
                              {{"metadata", {{"labels", {{"lockstep.dev/model", "gpt2"}}}}}})
                  .isOk());
  EXPECT_TRUE(eventually([&] { return informer.cache().get(ns, "team") == nullptr; }, 30s))
      << "a label added takes the object out";
  ASSERT_TRUE(client().create(resources::kConfigMaps, configMap("later", false)).isOk());
  EXPECT_TRUE(eventually([&] { return informer.cache().get(ns, "later") != nullptr; }, 30s));
  ObjectPtr later = informer.cache().get(ns, "later");
  ASSERT_NE(later, nullptr);
  EXPECT_FALSE(later->contains("data")) << "watch events carry metadata only: " << later->dump();
  informer.stop();
}

TEST_F(KubeIntegrationTest, InformerSurvivesAnApiserverRestartMidWatch) {
  std::string ns = makeNamespace();
  ASSERT_TRUE(client().create(kWidgets, widget(ns, "before", 1)).isOk());
  InformerOptions io;
  io.resource = kWidgets;
  io.ns = ns;
  io.backoff.initial = 200ms;
  io.backoff.max = 2s;
  Informer informer(*client_, io);
  informer.start();
  ASSERT_TRUE(informer.waitForSync(60s));
  ASSERT_TRUE(client().create(kWidgets, widget(ns, "during-watch", 1)).isOk());
  ASSERT_TRUE(eventually([&] { return informer.cache().get(ns, "during-watch") != nullptr; }));

  auto restart = clusterScript({"restart-apiserver"});
  ASSERT_EQ(restart.exitCode, 0) << restart.err;
  // Writes after the restart reach the cache: the informer re-established its watch.
  ASSERT_TRUE(
      eventually([&] { return client().create(kWidgets, widget(ns, "after-restart", 1)).isOk(); }));
  ASSERT_TRUE(client().remove(kWidgets, ns, "before").isOk());
  EXPECT_TRUE(eventually([&] { return cacheState(informer) == serverState(client(), ns); }, 90s))
      << "cache never matched the server after the restart";
  EXPECT_TRUE(informer.cache().get(ns, "after-restart") != nullptr);
  EXPECT_TRUE(informer.cache().get(ns, "before") == nullptr);
  informer.stop();
}

TEST_F(KubeIntegrationTest, EventsAreRecordedAndRepeatsCounted) {
  std::string ns = makeNamespace();
  auto w = client().create(kWidgets, widget(ns, "evented", 1));
  ASSERT_TRUE(w.isOk());
  EventRecorder rec(*client_, "lockstep-test");
  ASSERT_TRUE(rec.warning(*w, "GateFailed", "accuracy 0.70 < 0.82").isOk());
  ASSERT_TRUE(rec.warning(*w, "GateFailed", "accuracy 0.70 < 0.82").isOk());
  ASSERT_TRUE(rec.normal(*w, "Promoted", "ok").isOk());
  auto events = client().list(resources::kEvents, ns);
  ASSERT_TRUE(events.isOk());
  std::map<std::string, int64_t> counts;
  for (const auto& e : events->items) {
    EXPECT_EQ(e["involvedObject"]["uid"], uid(*w));
    counts[e.value("reason", "")] = e.value("count", int64_t{0});
  }
  EXPECT_EQ(counts, (std::map<std::string, int64_t>{{"GateFailed", 2}, {"Promoted", 1}}));
}

TEST_F(KubeIntegrationTest, ErrorsFromTheRealServerMap) {
  EXPECT_EQ(client().get(resources::kConfigMaps, "default", "no-such-configmap").status().code(),
            Code::kNotFound);
  Object bad = newObject(resources::kConfigMaps, "default", "Invalid_Name");
  EXPECT_EQ(client().create(resources::kConfigMaps, bad).status().code(), Code::kInvalid);
  EXPECT_EQ(client()
                .get(Resource{"nope.lockstep.dev", "v1", "things", "Thing"}, "default", "x")
                .status()
                .code(),
            Code::kNotFound);
}

// The transport sends a bearer token with every request; a failed request's error names
// the request and the kubeconfig, never the token (errors are logged and become Events).
TEST(KubeConnectTest, UnreachableServerIsUnavailableAndTheErrorCarriesNoToken) {
  const std::string token = "lockstep-test-bearer-7f3a9c";
  KubeConfig cfg;
  cfg.server = "https://127.0.0.1:1";
  cfg.origin = "test";
  cfg.token = token;
  RestOptions o;
  o.requestTimeout = 5s;
  auto c = connect(cfg, o);
  ASSERT_TRUE(c.isOk());
  auto r = (*c)->get(resources::kNamespaces, "", "default");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().toString();
  EXPECT_NE(r.status().message().find("GET /api/v1/namespaces/default"), std::string::npos)
      << r.status().toString();
  EXPECT_EQ(r.status().toString().find(token), std::string::npos) << r.status().toString();
  EXPECT_EQ(r.status().toString().find("Bearer"), std::string::npos) << r.status().toString();
}

TEST(KubeConnectTest, BadPemFailsAtStartup) {
  KubeConfig cfg;
  cfg.server = "https://127.0.0.1:6443";
  cfg.origin = "kubeconfig x";
  cfg.clientCertPem = "not a certificate";
  cfg.clientKeyPem = "not a key";
  auto t = RestTransport::create(cfg);
  ASSERT_FALSE(t.isOk());
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
  EXPECT_NE(t.status().message().find("kubeconfig x: TLS material"), std::string::npos);
  EXPECT_EQ(t.status().message().find("not a key"), std::string::npos);
}

// A CA nobody signed the API server's certificate with (openssl, in a fresh directory).
std::string foreignCaPem() {
  char dir[] = "/tmp/lockstep-foreign-ca-XXXXXX";
  if (mkdtemp(dir) == nullptr) return "";
  std::string d(dir);
  auto r = lockstep::testing::run({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                   "ec_paramgen_curve:P-256", "-nodes", "-keyout", d + "/ca.key",
                                   "-out", d + "/ca.crt", "-subj", "/CN=foreign-ca", "-days", "1"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  std::string pem = lockstep::testing::readFile(d + "/ca.crt");
  (void)lockstep::testing::run({"rm", "-rf", d});
  return pem;
}

KubeConfig clusterConfig() {
  ConnectOptions o;
  o.kubeconfigPath = kubeconfigPath();
  auto cfg = resolveConfig(o);
  EXPECT_TRUE(cfg.isOk()) << cfg.status().toString();
  return cfg.isOk() ? *cfg : KubeConfig{};
}

// Issue 12 item 7 and issue 13 item 9: a kubeconfig whose CA did not sign the API server's
// certificate fails with an error naming the kubeconfig — even when the system trust store
// (here SSL_CERT_FILE, read by OpenSSL's default paths) holds the CA that did.
TEST(KubeConnectTest, AForeignCaFailsClearlyAndTheSystemStoreIsNotTrusted) {
  KubeConfig cfg = clusterConfig();
  ASSERT_FALSE(cfg.caPem.empty());
  char file[] = "/tmp/lockstep-system-ca-XXXXXX";
  int fd = mkstemp(file);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, cfg.caPem.data(), cfg.caPem.size()), static_cast<ssize_t>(cfg.caPem.size()));
  close(fd);
  setenv("SSL_CERT_FILE", file, 1);
  cfg.caPem = foreignCaPem();
  ASSERT_FALSE(cfg.caPem.empty());
  RestOptions o;
  o.requestTimeout = 10s;
  auto c = connect(cfg, o);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  auto r = (*c)->get(resources::kNamespaces, "", "default");
  unsetenv("SSL_CERT_FILE");
  unlink(file);
  ASSERT_FALSE(r.isOk()) << "the API server was trusted through the system store";
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().toString();
  EXPECT_NE(r.status().message().find("TLS handshake with " + cfg.server), std::string::npos)
      << r.status().toString();
  EXPECT_NE(r.status().message().find("certificate-authority of " + cfg.origin), std::string::npos)
      << r.status().toString();
}

// tls-server-name is the name the certificate is verified against (and sent as SNI).
TEST(KubeConnectTest, TlsServerNameIsTheNameVerified) {
  KubeConfig cfg = clusterConfig();
  RestOptions o;
  o.requestTimeout = 10s;
  cfg.tlsServerName = "kubernetes.default";  // in the API server's certificate
  auto good = connect(cfg, o);
  ASSERT_TRUE(good.isOk());
  auto ok = (*good)->get(resources::kNamespaces, "", "default");
  EXPECT_TRUE(ok.isOk()) << ok.status().toString();
  cfg.tlsServerName = "not-the-apiserver.example";  // the server address (an IP) would match
  auto bad = connect(cfg, o);
  ASSERT_TRUE(bad.isOk());
  auto refused = (*bad)->get(resources::kNamespaces, "", "default");
  ASSERT_FALSE(refused.isOk()) << "verified against the server address, not tls-server-name";
  EXPECT_NE(refused.status().message().find("\"not-the-apiserver.example\""), std::string::npos)
      << refused.status().toString();
}

// Issue 12 item 14: connect()'s sources, in controller-runtime's order: an explicit path,
// then $KUBECONFIG (its first file), then in-cluster, then ~/.kube/config. Pure: no cluster.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(KubeConnectTest, KubeconfigSourcesAreTriedInOrder) {
  char dir[] = "/tmp/lockstep-connect-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string d(dir);
  auto write = [&](const std::string& path, const std::string& server) {
    std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                        << "    server: " << server << "\nusers:\n- name: u\n  user: {token: t}\n"
                        << "contexts:\n- name: c\n  context: {cluster: c, user: u}\n"
                        << "current-context: c\n";
  };
  ASSERT_EQ(lockstep::testing::run({"mkdir", "-p", d + "/home/.kube"}).exitCode, 0);
  write(d + "/explicit", "https://explicit.example:6443");
  write(d + "/env", "https://env.example:6443");
  write(d + "/home/.kube/config", "https://home.example:6443");
  const std::string envList = d + "/env:" + d + "/explicit";
  const std::string home = d + "/home";
  const std::string inClusterHost = "10.0.0.1";
  auto server = [](const ConnectOptions& o) {
    auto c = resolveConfig(o);
    return c.isOk() ? c->server : "error: " + c.status().message();
  };
  {
    ScopedEnv k("KUBECONFIG", &envList), h("HOME", &home),
        i("KUBERNETES_SERVICE_HOST", &inClusterHost);
    EXPECT_EQ(server({d + "/explicit"}), "https://explicit.example:6443");
    EXPECT_EQ(server({}), "https://env.example:6443");  // the first file of the list
  }
  {
    ScopedEnv k("KUBECONFIG", nullptr), h("HOME", &home),
        i("KUBERNETES_SERVICE_HOST", &inClusterHost);
    // In a pod (KUBERNETES_SERVICE_HOST set) the in-cluster config wins over ~/.kube/config.
    std::string got = server({});
    EXPECT_NE(got.find("in-cluster config"), std::string::npos) << got;
  }
  {
    ScopedEnv k("KUBECONFIG", nullptr), h("HOME", &home), i("KUBERNETES_SERVICE_HOST", nullptr);
    EXPECT_EQ(server({}), "https://home.example:6443");
  }
  {
    const std::string empty = d + "/nowhere";
    ScopedEnv k("KUBECONFIG", nullptr), h("HOME", &empty), i("KUBERNETES_SERVICE_HOST", nullptr);
    std::string got = server({});
    EXPECT_NE(got.find("no Kubernetes configuration"), std::string::npos) << got;
  }
  (void)lockstep::testing::run({"rm", "-rf", d});
}

}  // namespace
}  // namespace lockstep::kube
