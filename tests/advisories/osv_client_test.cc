// The OSV API client over a FakeTransport: the queries a closure makes, the querybatch
// and vulns requests it sends, batching by 1000, paging by next_page_token, the record
// cache by (id, modified), and how a bad answer or an unreachable endpoint is named.
// No socket.
#include "advisories/osv_client.h"

#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/fake_transport.h"

namespace lockstep::advisories {
namespace {

using lockstep::testing::FakeTransport;
using nlohmann::json;

kube::Response answer(int status, const std::string& body) {
  kube::Response r;
  r.status = status;
  r.body = body;
  r.contentType = "application/json";
  return r;
}

// A record affecting `name` at the versions listed.
std::string record(const std::string& id, const std::string& modified, const std::string& name,
                   const std::vector<std::string>& versions) {
  return json{{"id", id},
              {"modified", modified},
              {"summary", id + " in " + name},
              {"database_specific", {{"severity", "HIGH"}}},
              {"affected",
               {{{"package", {{"ecosystem", "PyPI"}, {"name", name}}}, {"versions", versions}}}}}
      .dump();
}

// A tiny OSV API: per (name, version) the ids that affect it, the records by id, and
// `pageSize` ids per page (the page token is the offset, as text).
struct FakeOsv {
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> affects;
  std::map<std::string, std::pair<std::string, std::string>> records;  // id -> (modified, json)
  size_t pageSize = 1000;
  std::vector<size_t> batchSizes;
  std::vector<std::string> gets;

  void serve(FakeTransport& t) {
    t.setHandler([this](const kube::Request& r) -> std::optional<lockstep::testing::FakeReply> {
      if (r.method == "POST" && r.path.ends_with("/v1/querybatch")) {
        json body = json::parse(r.body);
        batchSizes.push_back(body["queries"].size());
        json results = json::array();
        for (const json& q : body["queries"]) {
          const auto& ids =
              affects[{q["package"]["name"].get<std::string>(), q["version"].get<std::string>()}];
          size_t start =
              q.contains("page_token") ? std::stoul(q["page_token"].get<std::string>()) : 0;
          json one = json::object();
          json vulns = json::array();
          for (size_t i = start; i < ids.size() && i < start + pageSize; ++i)
            vulns.push_back({{"id", ids[i]},
                             {"modified", records.count(ids[i]) ? records.at(ids[i]).first : ""}});
          if (!vulns.empty()) one["vulns"] = vulns;
          if (start + pageSize < ids.size())
            one["next_page_token"] = std::to_string(start + pageSize);
          results.push_back(one);
        }
        return answer(200, json{{"results", results}}.dump());
      }
      const std::string prefix = "/v1/vulns/";
      if (r.method == "GET" && r.path.find(prefix) != std::string::npos) {
        std::string id = r.path.substr(r.path.find(prefix) + prefix.size());
        gets.push_back(id);
        auto it = records.find(id);
        if (it == records.end()) return answer(404, R"({"code":5,"message":"Bug not found."})");
        return answer(200, it->second.second);
      }
      return answer(404, "");
    });
  }
  void add(const std::string& id, const std::string& modified, const std::string& name,
           const std::string& version) {
    records[id] = {modified, record(id, modified, name, {version})};
    affects[{name, version}].push_back(id);
  }
};

std::unique_ptr<OsvClient> makeClient(std::shared_ptr<FakeTransport> t,
                                      const std::string& url = "https://osv.example/api/") {
  OsvClientConfig config;
  config.url = url;
  config.concurrency = 3;
  auto c = OsvClient::create(config, std::move(t));
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  return c.isOk() ? std::move(*c) : nullptr;
}

closure::Package pkg(const std::string& ecosystem, const std::string& name,
                     const std::string& version, std::vector<std::string> digests = {}) {
  return {ecosystem, name, version, std::move(digests)};
}

TEST(OsvQueries, OnePerOsvPackageVersionWithoutLocalLabels) {
  std::vector<closure::Package> closure = {
      pkg("pypi", "torch", "2.3.1+cu121"),
      pkg("conda", "pytorch", "2.3.1"),  // the same PyPI project at the same version
      pkg("pypi", "Jinja2", "3.1.2"),
      pkg("conda", "openssl", "3.1.4"),  // not matched: no query
      pkg("nix", "requests", "2.31.0",
          {"/nix/store/00000000000000000000000000000000-python3.11-requests-2.31.0"}),
  };
  std::vector<OsvQuery> q = osvQueriesFor(closure);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[0].name, "jinja2");
  EXPECT_EQ(q[0].version, "3.1.2");
  EXPECT_EQ(q[1].name, "requests");
  EXPECT_EQ(q[2].name, "torch");
  EXPECT_EQ(q[2].version, "2.3.1");
  for (const OsvQuery& one : q) EXPECT_EQ(one.ecosystem, "PyPI");
}

TEST(OsvUrl, RefusesCredentialsQueriesAndOtherSchemes) {
  auto e = parseOsvUrl("https://osv.example:8443/mirror/");
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_EQ(e->origin, "https://osv.example:8443");
  EXPECT_EQ(e->pathPrefix, "/mirror");
  EXPECT_EQ(e->url, "https://osv.example:8443/mirror");
  EXPECT_TRUE(e->https);
  auto creds = parseOsvUrl("https://user:secret@osv.example");
  ASSERT_FALSE(creds.isOk());
  EXPECT_NE(creds.status().message().find("must not carry credentials"), std::string::npos);
  EXPECT_FALSE(parseOsvUrl("https://osv.example/?key=x").isOk());
  EXPECT_FALSE(parseOsvUrl("ftp://osv.example").isOk());
  EXPECT_FALSE(parseOsvUrl("https:///v1").isOk());
  EXPECT_FALSE(parseOsvUrl("").isOk());
}

TEST(OsvRequests, QueryBatchBodyIsTheOsvApiFormat) {
  auto e = parseOsvUrl("https://osv.example/api");
  ASSERT_TRUE(e.isOk());
  kube::Request r = osvQueryBatchRequest(
      *e, {{{"PyPI", "idna", "3.4"}, ""}, {{"PyPI", "jinja2", "3.1.2"}, "tok 2"}});
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.uri(), "/api/v1/querybatch");
  EXPECT_EQ(r.header("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"queries":[
              {"package":{"name":"idna","ecosystem":"PyPI"},"version":"3.4"},
              {"package":{"name":"jinja2","ecosystem":"PyPI"},"version":"3.1.2","page_token":"tok 2"}]})"));
  kube::Request v = osvVulnRequest(*e, "GHSA-jjg7-2v4v-x38h");
  EXPECT_EQ(v.method, "GET");
  EXPECT_EQ(v.uri(), "/api/v1/vulns/GHSA-jjg7-2v4v-x38h");
  EXPECT_EQ(osvVulnRequest(*e, "a/b").path, "/api/v1/vulns/a%2Fb");
}

TEST(OsvRequests, QueryBatchAnswersAreCheckedFieldByField) {
  const std::string where = "https://osv.example/v1/querybatch";
  auto ok = parseOsvQueryBatch(
      answer(200,
             R"({"results":[{"vulns":[{"id":"A","modified":"2024-01-01T00:00:00Z"}],
                 "next_page_token":"p2"},{}]})"),
      2, where);
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  ASSERT_EQ(ok->size(), 2u);
  ASSERT_EQ((*ok)[0].vulns.size(), 1u);
  EXPECT_EQ((*ok)[0].vulns[0].first, "A");
  EXPECT_EQ((*ok)[0].vulns[0].second, "2024-01-01T00:00:00Z");
  EXPECT_EQ((*ok)[0].nextPageToken, "p2");
  EXPECT_TRUE((*ok)[1].vulns.empty());

  auto count = parseOsvQueryBatch(answer(200, R"({"results":[{}]})"), 2, where);
  ASSERT_FALSE(count.isOk());
  EXPECT_EQ(count.status().message(),
            where + ": results: expected 2 results (one per query), got 1");
  auto field =
      parseOsvQueryBatch(answer(200, R"({"results":[{}, {"vulns":[{"id":7}]}]})"), 2, where);
  ASSERT_FALSE(field.isOk());
  EXPECT_EQ(field.status().message(), where + ": results[1].vulns[0].id: expected a string");
  auto status = parseOsvQueryBatch(answer(503, "upstream overloaded"), 1, where);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.status().code(), Code::kUnavailable);
  EXPECT_EQ(status.status().message(), where + ": HTTP 503: upstream overloaded");
  auto syntax = parseOsvQueryBatch(answer(200, "{\"results\": [\n{,}]}"), 1, where);
  ASSERT_FALSE(syntax.isOk());
  EXPECT_NE(syntax.status().message().find(where + ": the answer is not JSON"), std::string::npos);
  EXPECT_NE(syntax.status().message().find("line 2"), std::string::npos)
      << syntax.status().message();
}

TEST(OsvClient, LooksUpTheClosureAndMatchesWithThePureCode) {
  auto t = std::make_shared<FakeTransport>();
  FakeOsv osv;
  osv.add("GHSA-a", "2024-01-01T00:00:00Z", "idna", "3.4");
  // The endpoint supplies a record that does not name the version the lock has:
  // matching is Lockstep's, so it is not reported.
  osv.records["GHSA-other"] = {"2024-01-01T00:00:00Z",
                               record("GHSA-other", "2024-01-01T00:00:00Z", "jinja2", {"2.0"})};
  osv.affects[{"jinja2", "3.1.2"}].push_back("GHSA-other");
  osv.serve(*t);
  auto c = makeClient(t);
  std::vector<closure::Package> closure = {pkg("pypi", "idna", "3.4"),
                                           pkg("pypi", "jinja2", "3.1.2")};
  auto found = c->lookup(osvQueriesFor(closure));
  ASSERT_TRUE(found.isOk()) << found.status().toString();
  EXPECT_EQ(found->records.size(), 2u);
  EXPECT_EQ(found->queries, 2u);
  EXPECT_EQ(found->requests, 3u);  // one querybatch, two records
  AdvisoryReport report = indexOf(*found).match(closure);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].id, "GHSA-a");
  EXPECT_EQ(report.findings[0].package.name, "idna");
  auto requests = t->requests();
  ASSERT_FALSE(requests.empty());
  EXPECT_EQ(requests[0].path, "/api/v1/querybatch");
}

TEST(OsvClient, BatchesByAThousandAndFollowsPageTokens) {
  auto t = std::make_shared<FakeTransport>();
  FakeOsv osv;
  osv.pageSize = 2;
  // Five records on one query: three pages (2, 2, 1).
  for (int i = 0; i < 5; ++i) osv.add("R-" + std::to_string(i), "m", "pkg-0", "1.0");
  osv.serve(*t);
  auto c = makeClient(t);
  std::vector<OsvQuery> queries;
  for (int i = 0; i < 1001; ++i) queries.push_back({"PyPI", "pkg-" + std::to_string(i), "1.0"});
  auto found = c->lookup(queries);
  ASSERT_TRUE(found.isOk()) << found.status().toString();
  EXPECT_EQ(found->records.size(), 5u);
  // 1000 queries, then the two further pages of pkg-0 with its page token, then the 1001st.
  EXPECT_EQ(osv.batchSizes, (std::vector<size_t>{1000, 1, 1, 1}));
  EXPECT_EQ(osv.gets.size(), 5u);
  auto requests = t->requests();
  json second = json::parse(requests[1].body);
  EXPECT_EQ(second["queries"][0]["page_token"], "2");
  EXPECT_EQ(second["queries"][0]["package"]["name"], "pkg-0");
}

TEST(OsvClient, ReadsARecordAgainOnlyWhenItWasModified) {
  auto t = std::make_shared<FakeTransport>();
  FakeOsv osv;
  osv.add("GHSA-a", "2024-01-01T00:00:00Z", "idna", "3.4");
  osv.add("GHSA-b", "2024-01-01T00:00:00Z", "idna", "3.4");
  osv.serve(*t);
  auto c = makeClient(t);
  std::vector<OsvQuery> q = {{"PyPI", "idna", "3.4"}};
  ASSERT_TRUE(c->lookup(q).isOk());
  EXPECT_EQ(osv.gets.size(), 2u);
  auto again = c->lookup(q);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again->cached, 2u);
  EXPECT_EQ(again->fetched, 0u);
  EXPECT_EQ(osv.gets.size(), 2u);
  osv.records["GHSA-b"] = {"2024-06-01T00:00:00Z",
                           record("GHSA-b", "2024-06-01T00:00:00Z", "idna", {"3.4"})};
  auto modified = c->lookup(q);
  ASSERT_TRUE(modified.isOk());
  EXPECT_EQ(modified->cached, 1u);
  EXPECT_EQ(modified->fetched, 1u);
  ASSERT_EQ(osv.gets.size(), 3u);
  EXPECT_EQ(osv.gets[2], "GHSA-b");
  EXPECT_EQ(modified->records[1]->modified, "2024-06-01T00:00:00Z");
}

TEST(OsvClient, FailuresNameTheUrlAndWhatWasWrong) {
  std::vector<OsvQuery> q = {{"PyPI", "idna", "3.4"}};
  {
    auto t = std::make_shared<FakeTransport>();
    t->push(unavailable("POST /v1/querybatch: connection refused"));
    auto r = makeClient(t, "https://osv.example")->lookup(q);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), Code::kUnavailable);
    EXPECT_EQ(r.status().message(),
              "https://osv.example/v1/querybatch: unreachable: connection refused");
  }
  {
    auto t = std::make_shared<FakeTransport>();
    t->push(Status(Code::kDeadlineExceeded, "POST /v1/querybatch: timed out"));
    auto r = makeClient(t, "https://osv.example")->lookup(q);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), Code::kDeadlineExceeded);
    EXPECT_EQ(r.status().message(),
              "https://osv.example/v1/querybatch: no answer within 30s: timed out");
  }
  {
    auto t = std::make_shared<FakeTransport>();
    FakeOsv osv;
    osv.add("GHSA-a", "m", "idna", "3.4");
    osv.records["GHSA-a"].second = R"({"id":"GHSA-a","affected":[{"ranges":[{"type":"ECOSYSTEM",
      "events":[{"introduced":"0"},{"fixed":"1"}]}],"package":{"name":"idna","ecosystem":"PyPI"},
      "versions":"3.4"}]})";
    osv.serve(*t);
    auto r = makeClient(t, "https://osv.example")->lookup(q);
    ASSERT_FALSE(r.isOk());
    EXPECT_NE(
        r.status().message().find("https://osv.example/v1/vulns/GHSA-a: affected[0].versions"),
        std::string::npos)
        << r.status().message();
  }
  {
    auto t = std::make_shared<FakeTransport>();
    FakeOsv osv;
    osv.add("GHSA-a", "m", "idna", "3.4");
    osv.records["GHSA-a"].second = record("GHSA-z", "m", "idna", {"3.4"});
    osv.serve(*t);
    auto r = makeClient(t, "https://osv.example")->lookup(q);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().message(),
              "https://osv.example/v1/vulns/GHSA-a: id: the record is \"GHSA-z\", not \"GHSA-a\"");
  }
  {
    auto t = std::make_shared<FakeTransport>();
    FakeOsv osv;
    osv.affects[{"idna", "3.4"}].push_back("GHSA-gone");
    osv.serve(*t);
    auto r = makeClient(t, "https://osv.example")->lookup(q);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().message(),
              "https://osv.example/v1/vulns/GHSA-gone: HTTP 404: {\"code\":5,\"message\":\"Bug not "
              "found.\"}");
  }
}

TEST(OsvClient, ConfigIsCheckedBeforeAnyRequest) {
  auto t = std::make_shared<FakeTransport>();
  OsvClientConfig config;
  config.url = "http://osv.example";
  config.caPem = "-----BEGIN CERTIFICATE-----";
  auto c = OsvClient::create(config, t);
  ASSERT_FALSE(c.isOk());
  EXPECT_NE(c.status().message().find("a CA is set but the URL is http"), std::string::npos);
  EXPECT_EQ(t->requestCount(), 0u);
}

}  // namespace
}  // namespace lockstep::advisories
