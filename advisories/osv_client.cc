#include "advisories/osv_client.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "advisories/name_mapping.h"
#include "operator/kube/kube_config.h"
#include "operator/kube/rest_transport.h"

namespace lockstep::advisories {
namespace {

using nlohmann::json;

bool hasControlOrSpace(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f;
  });
}

std::string quote(const std::string& s) { return "\"" + s + "\""; }

// The first bytes of a body, on one line, for a message about an unexpected answer.
std::string snippet(const std::string& body) {
  std::string out = body.substr(0, 200);
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (body.size() > 200) out += "…";
  return out;
}

Status badAnswer(const std::string& where, const std::string& field, const std::string& why) {
  return invalidArgument(where + ": " + field + ": " + why);
}

// An HTTP status other than 200, as an error the caller can classify: 5xx and 429 are
// the endpoint's trouble (kUnavailable), the rest a refusal of the request.
Status httpError(const std::string& where, const kube::Response& r) {
  std::string m = where + ": HTTP " + std::to_string(r.status);
  if (!r.body.empty()) m += ": " + snippet(r.body);
  if (r.status >= 500 || r.status == 429) return unavailable(m);
  return invalidArgument(m);
}

StatusOr<json> parseJson(const kube::Response& r, const std::string& where) {
  if (r.status != 200) return httpError(where, r);
  json j;
  try {
    j = json::parse(r.body);
  } catch (const json::parse_error& e) {
    return invalidArgument(where + ": the answer is not JSON: " + e.what());
  }
  if (!j.is_object()) return invalidArgument(where + ": the answer is not a JSON object");
  return j;
}

// A PyPI version without its local label: advisories describe the public version.
std::string publicVersion(const std::string& ecosystem, const std::string& version) {
  if (ecosystem != "PyPI") return version;
  return version.substr(0, version.find('+'));
}

}  // namespace

std::vector<OsvQuery> osvQueriesFor(const std::vector<closure::Package>& packages) {
  std::set<OsvQuery> out;
  for (const closure::Package& p : packages) {
    PackageMapping m = osvPackageFor(p);
    if (!m.matched) continue;
    out.insert({m.ref.ecosystem, m.ref.name, publicVersion(m.ref.ecosystem, m.ref.version)});
  }
  return {out.begin(), out.end()};
}

StatusOr<OsvEndpoint> parseOsvUrl(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return invalidArgument("OSV URL " + quote(url) + ": " + why);
  };
  if (url.empty()) return invalidArgument("OSV URL is empty");
  if (hasControlOrSpace(url)) return bad("contains spaces or control characters");
  OsvEndpoint e;
  e.url = url;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    e.https = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return bad("must start with https:// (or http://)");
  }
  if (rest.find_first_of("?#") != std::string::npos)
    return bad("must not have a query or fragment");
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  if (authority.empty() || authority.front() == ':') return bad("has no host");
  if (authority.find('@') != std::string::npos) return bad("must not carry credentials");
  e.origin = (e.https ? "https://" : "http://") + authority;
  if (slash != std::string::npos) {
    e.pathPrefix = rest.substr(slash);
    while (!e.pathPrefix.empty() && e.pathPrefix.back() == '/') e.pathPrefix.pop_back();
  }
  while (!e.url.empty() && e.url.back() == '/') e.url.pop_back();
  return e;
}

kube::Request osvQueryBatchRequest(const OsvEndpoint& endpoint,
                                   const std::vector<OsvPageQuery>& queries) {
  json list = json::array();
  for (const OsvPageQuery& q : queries) {
    json one = {{"package", {{"name", q.query.name}, {"ecosystem", q.query.ecosystem}}},
                {"version", q.query.version}};
    if (!q.pageToken.empty()) one["page_token"] = q.pageToken;
    list.push_back(std::move(one));
  }
  kube::Request r;
  r.method = "POST";
  r.path = endpoint.pathPrefix + "/v1/querybatch";
  r.headers.emplace_back("Accept", "application/json");
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = json{{"queries", std::move(list)}}.dump();
  return r;
}

kube::Request osvVulnRequest(const OsvEndpoint& endpoint, const std::string& id) {
  kube::Request r;
  r.method = "GET";
  r.path = endpoint.pathPrefix + "/v1/vulns/" + kube::escapePathSegment(id);
  r.headers.emplace_back("Accept", "application/json");
  return r;
}

StatusOr<std::vector<OsvBatchResult>> parseOsvQueryBatch(const kube::Response& response,
                                                         size_t queries, const std::string& where) {
  auto j = parseJson(response, where);
  if (!j.isOk()) return j.status();
  auto results = j->find("results");
  if (results == j->end() || !results->is_array())
    return badAnswer(where, "results", "expected an array");
  if (results->size() != queries)
    return badAnswer(where, "results",
                     "expected " + std::to_string(queries) + " results (one per query), got " +
                         std::to_string(results->size()));
  std::vector<OsvBatchResult> out;
  out.reserve(queries);
  for (size_t i = 0; i < results->size(); ++i) {
    const json& r = (*results)[i];
    const std::string at = "results[" + std::to_string(i) + "]";
    if (!r.is_object()) return badAnswer(where, at, "expected an object");
    OsvBatchResult one;
    if (auto token = r.find("next_page_token"); token != r.end() && !token->is_null()) {
      if (!token->is_string())
        return badAnswer(where, at + ".next_page_token", "expected a string");
      one.nextPageToken = token->get<std::string>();
    }
    if (auto vulns = r.find("vulns"); vulns != r.end() && !vulns->is_null()) {
      if (!vulns->is_array()) return badAnswer(where, at + ".vulns", "expected an array");
      for (size_t k = 0; k < vulns->size(); ++k) {
        const json& v = (*vulns)[k];
        const std::string vat = at + ".vulns[" + std::to_string(k) + "]";
        if (!v.is_object()) return badAnswer(where, vat, "expected an object");
        auto id = v.find("id");
        if (id == v.end() || !id->is_string() || id->get<std::string>().empty())
          return badAnswer(where, vat + ".id", "expected a string");
        std::string modified;
        if (auto m = v.find("modified"); m != v.end() && !m->is_null()) {
          if (!m->is_string()) return badAnswer(where, vat + ".modified", "expected a string");
          modified = m->get<std::string>();
        }
        one.vulns.emplace_back(id->get<std::string>(), std::move(modified));
      }
    }
    out.push_back(std::move(one));
  }
  return out;
}

OsvClient::OsvClient(OsvClientConfig config, OsvEndpoint endpoint,
                     std::shared_ptr<kube::Transport> transport)
    : config_(std::move(config)),
      endpoint_(std::move(endpoint)),
      transport_(std::move(transport)) {}

StatusOr<std::unique_ptr<OsvClient>> OsvClient::create(const OsvClientConfig& config,
                                                       std::shared_ptr<kube::Transport> transport) {
  auto endpoint = parseOsvUrl(config.url);
  if (!endpoint.isOk()) return endpoint.status();
  if (!config.caFile.empty() && !config.caPem.empty())
    return invalidArgument("OSV " + endpoint->url + ": give a CA file or a CA bundle, not both");
  if (!endpoint->https && (!config.caFile.empty() || !config.caPem.empty()))
    return invalidArgument("OSV " + endpoint->url + ": a CA is set but the URL is http, not https");
  if (config.timeout.count() < 1 || config.deadline < config.timeout)
    return invalidArgument("OSV " + endpoint->url +
                           ": the request timeout must be at least 1s and at most the deadline");
  OsvClientConfig c = config;
  c.concurrency = std::max<size_t>(c.concurrency, 1);
  return std::unique_ptr<OsvClient>(new OsvClient(std::move(c), *endpoint, std::move(transport)));
}

StatusOr<std::unique_ptr<OsvClient>> OsvClient::connect(const OsvClientConfig& config) {
  auto endpoint = parseOsvUrl(config.url);
  if (!endpoint.isOk()) return endpoint.status();
  kube::KubeConfig tls;
  tls.server = endpoint->origin;
  tls.origin = "OSV " + endpoint->url;
  std::string pem = config.caPem;
  if (!config.caFile.empty()) {
    auto read = kube::readFile(config.caFile);
    if (!read.isOk())
      return invalidArgument("OSV " + endpoint->url + ": CA file " + read.status().message());
    pem = *read;
  }
  if (!pem.empty() && pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
    return invalidArgument("OSV " + endpoint->url + ": the CA bundle" +
                           (config.caFile.empty() ? "" : " " + quote(config.caFile)) +
                           " holds no PEM certificate");
  tls.caPem = pem;
  kube::RestOptions options;
  options.requestTimeout = config.timeout;
  options.userAgent = "lockstep/0.1 (OSV advisories)";
  auto transport = kube::RestTransport::create(tls, options);
  if (!transport.isOk()) return transport.status();
  OsvClientConfig c = config;
  c.caFile.clear();
  c.caPem.clear();
  auto client = create(c, *transport);
  return client;
}

StatusOr<kube::Response> OsvClient::send(const kube::Request& request,
                                         std::chrono::steady_clock::time_point deadline) {
  const std::string where = endpoint_.url + request.path.substr(endpoint_.pathPrefix.size());
  if (std::chrono::steady_clock::now() > deadline)
    return Status(Code::kDeadlineExceeded, where +
                                               ": the lookup took longer than its deadline of " +
                                               std::to_string(config_.deadline.count()) + "s");
  auto response = transport_->send(request);
  if (response.isOk()) return response;
  // The transport names the request line; the URL says enough.
  std::string why = response.status().message();
  if (std::string prefix = request.describe() + ": "; why.rfind(prefix, 0) == 0)
    why.erase(0, prefix.size());
  if (response.status().code() == Code::kDeadlineExceeded)
    return Status(
        Code::kDeadlineExceeded,
        where + ": no answer within " + std::to_string(config_.timeout.count()) + "s: " + why);
  return unavailable(where + ": unreachable: " + why);
}

StatusOr<OsvLookup> OsvClient::lookup(const std::vector<OsvQuery>& queries) {
  const auto deadline = std::chrono::steady_clock::now() + config_.deadline;
  OsvLookup out;
  out.queries = queries.size();
  std::map<std::string, std::string> wanted;  // id -> modified
  const std::string batchWhere = endpoint_.url + "/v1/querybatch";
  for (size_t start = 0; start < queries.size(); start += kOsvMaxBatch) {
    std::vector<OsvPageQuery> pending;
    for (size_t i = start; i < queries.size() && i < start + kOsvMaxBatch; ++i)
      pending.push_back({queries[i], ""});
    for (size_t page = 0; !pending.empty(); ++page) {
      if (page >= config_.maxPages)
        return resourceExhausted(
            batchWhere + ": " + pending.front().query.name + " " + pending.front().query.version +
            " still has a next_page_token after " + std::to_string(config_.maxPages) + " pages");
      auto response = send(osvQueryBatchRequest(endpoint_, pending), deadline);
      ++out.requests;
      if (!response.isOk()) return response.status();
      auto results = parseOsvQueryBatch(*response, pending.size(), batchWhere);
      if (!results.isOk()) return results.status();
      std::vector<OsvPageQuery> next;
      for (size_t i = 0; i < results->size(); ++i) {
        for (auto& [id, modified] : (*results)[i].vulns) wanted[id] = modified;
        if (!(*results)[i].nextPageToken.empty())
          next.push_back({pending[i].query, (*results)[i].nextPageToken});
      }
      if (wanted.size() > config_.maxRecords)
        return resourceExhausted(batchWhere + ": more than " + std::to_string(config_.maxRecords) +
                                 " records");
      pending = std::move(next);
    }
  }

  // The records: from the cache when it holds the same modification, else a GET each.
  std::vector<std::string> toFetch;
  std::map<std::string, std::shared_ptr<const OsvRecord>> records;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, modified] : wanted) {
      auto it = cache_.find(id);
      if (it != cache_.end() && !modified.empty() && it->second.first == modified) {
        records[id] = it->second.second;
        ++out.cached;
      } else {
        toFetch.push_back(id);
      }
    }
  }
  std::vector<std::shared_ptr<const OsvRecord>> fetched(toFetch.size());
  std::atomic<size_t> next{0};
  std::atomic<size_t> sent{0};
  std::atomic<bool> failed{false};
  std::mutex errorMu;
  Status error;
  auto fail = [&](Status s) {
    std::lock_guard<std::mutex> lock(errorMu);
    if (!failed.exchange(true)) error = std::move(s);
  };
  auto worker = [&] {
    for (size_t i = next++; i < toFetch.size() && !failed; i = next++) {
      const kube::Request request = osvVulnRequest(endpoint_, toFetch[i]);
      const std::string where = endpoint_.url + request.path.substr(endpoint_.pathPrefix.size());
      auto response = send(request, deadline);
      ++sent;
      if (!response.isOk()) return fail(response.status());
      if (response->status != 200) return fail(httpError(where, *response));
      auto record = parseOsvRecord(response->body, where);
      if (!record.isOk()) return fail(record.status());
      if (record->id != toFetch[i])
        return fail(badAnswer(where, "id",
                              "the record is " + quote(record->id) + ", not " + quote(toFetch[i])));
      fetched[i] = std::make_shared<const OsvRecord>(std::move(*record));
    }
  };
  const size_t threads = std::min(config_.concurrency, std::max<size_t>(toFetch.size(), 1));
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  out.requests += sent.load();
  if (failed) return error;

  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cache_.size() + fetched.size() > config_.maxRecords) cache_.clear();
    for (const auto& r : fetched) cache_[r->id] = {r->modified, r};
  }
  for (auto& r : fetched) records[r->id] = std::move(r);
  out.fetched = toFetch.size();
  out.records.reserve(records.size());
  for (auto& [id, r] : records) out.records.push_back(std::move(r));
  return out;
}

AdvisoryIndex indexOf(const OsvLookup& lookup) {
  AdvisoryIndex index;
  for (const auto& r : lookup.records) index.add(*r);
  return index;
}

}  // namespace lockstep::advisories
