// OSV records from an OSV-compatible HTTP endpoint (the OSV API v1,
// https://google.github.io/osv.dev/api/):
//
//   POST <url>/v1/querybatch
//   {"queries":[{"package":{"name","ecosystem"},"version"[,"page_token"]}]}
//        -> {"results":[{"vulns":[{"id","modified"}],"next_page_token"?}]}, one per query
//   GET  <url>/v1/vulns/{id}  -> the full OSV record
//
// A closure's lookups go in batches of at most 1000 queries (OSV's limit); a result
// with next_page_token is asked again with it as page_token until none is left. The
// full records are then read with at most `concurrency` GETs at once, and kept in the
// client by (id, modified): the next lookup reads only records that are new or were
// modified. The endpoint only supplies records: which of them affect which entry is
// decided by the pure matching (advisories/match.h), as for a local export.
//
// HTTP goes through the project's cpprestsdk adapter (kube::RestTransport: TLS 1.2+,
// certificates verified against the CA bundle or the system roots, host name checked);
// the request bodies and the answers are built and read here, so unit tests drive the
// client with a FakeTransport. Every failure names the URL (which carries no
// credentials: one with user info, a query or a fragment is refused), the HTTP status
// or the field: "https://osv.example/v1/querybatch: results[3].vulns[0].id: expected a
// string". Thread-safety: a Client is safe for concurrent use.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "advisories/match.h"
#include "closure/closure.h"
#include "common/status.h"
#include "operator/kube/request.h"
#include "operator/kube/transport.h"

namespace lockstep::advisories {

inline constexpr size_t kOsvMaxBatch = 1000;  // queries per querybatch (the OSV API's limit)

struct OsvClientConfig {
  std::string url;     // "https://api.osv.dev" or "https://osv.internal/prefix"; no credentials
  std::string caFile;  // optional PEM bundle; https only; empty: the system roots
  std::string caPem;   // optional PEM bundle in memory (instead of caFile)
  std::chrono::seconds timeout{30};    // one HTTP request
  std::chrono::seconds deadline{300};  // one lookup, all its requests
  size_t concurrency = 8;              // GETs of records at once
  size_t maxPages = 100;               // pages of one query
  size_t maxRecords = 100'000;         // distinct records of one lookup
};

// One package version to look up.
struct OsvQuery {
  std::string ecosystem;  // "PyPI"
  std::string name;
  std::string version;
  bool operator<(const OsvQuery& o) const {
    return std::tie(ecosystem, name, version) < std::tie(o.ecosystem, o.name, o.version);
  }
};

// The queries for a closure: each entry's OSV package (name_mapping.h; entries not
// matched are left out, match() reports them), once per (ecosystem, name, version),
// sorted; a PyPI version without its local label ("2.3.1+cu121" asks for 2.3.1).
std::vector<OsvQuery> osvQueriesFor(const std::vector<closure::Package>& packages);

// The URL split for the transport: scheme://authority and a path prefix ("" or "/p").
struct OsvEndpoint {
  std::string origin;
  std::string pathPrefix;
  bool https = false;
  std::string url;  // as given, for messages
};
StatusOr<OsvEndpoint> parseOsvUrl(const std::string& url);

// One query of a batch, with the page token of its previous answer ("" for the first).
struct OsvPageQuery {
  OsvQuery query;
  std::string pageToken;
};
kube::Request osvQueryBatchRequest(const OsvEndpoint& endpoint,
                                   const std::vector<OsvPageQuery>& queries);
kube::Request osvVulnRequest(const OsvEndpoint& endpoint, const std::string& id);

// One querybatch answer: per query, the (id, modified) of the records that affect it
// and the token of the next page ("" when none).
struct OsvBatchResult {
  std::vector<std::pair<std::string, std::string>> vulns;
  std::string nextPageToken;
};
// The answer must be HTTP 200 with exactly `queries` results; else an error naming
// `where`, the status or the field.
StatusOr<std::vector<OsvBatchResult>> parseOsvQueryBatch(const kube::Response& response,
                                                         size_t queries, const std::string& where);

// What one lookup read.
struct OsvLookup {
  std::vector<std::shared_ptr<const OsvRecord>> records;  // sorted by id
  size_t queries = 0;                                     // package versions asked about
  size_t requests = 0;  // HTTP requests made (querybatch pages and record GETs)
  size_t fetched = 0;   // records read from the endpoint
  size_t cached = 0;    // records taken from the client's cache (same id and modified)
};

class OsvClient {
 public:
  // Over the project's cpprestsdk adapter. InvalidArgument for a bad URL or CA.
  static StatusOr<std::unique_ptr<OsvClient>> connect(const OsvClientConfig& config);
  // Over any transport (tests). Checks the config like connect().
  static StatusOr<std::unique_ptr<OsvClient>> create(const OsvClientConfig& config,
                                                     std::shared_ptr<kube::Transport> transport);

  // The records that the endpoint says affect the queries. Never throws; an error
  // (kUnavailable, kDeadlineExceeded, kInvalidArgument for a malformed answer) names
  // the URL and what was wrong.
  StatusOr<OsvLookup> lookup(const std::vector<OsvQuery>& queries);

  const std::string& url() const { return endpoint_.url; }

 private:
  OsvClient(OsvClientConfig config, OsvEndpoint endpoint,
            std::shared_ptr<kube::Transport> transport);
  StatusOr<kube::Response> send(const kube::Request& request,
                                std::chrono::steady_clock::time_point deadline);

  OsvClientConfig config_;
  OsvEndpoint endpoint_;
  std::shared_ptr<kube::Transport> transport_;
  std::mutex mu_;
  // id -> (modified, record): the records read so far.
  std::map<std::string, std::pair<std::string, std::shared_ptr<const OsvRecord>>> cache_;
};

// The index of a lookup's records, to match the closure against.
AdvisoryIndex indexOf(const OsvLookup& lookup);

}  // namespace lockstep::advisories
