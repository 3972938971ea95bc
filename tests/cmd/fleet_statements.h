// Signed fleet statements for the tests of `lockstep fleet status`: a hub's
// permits and aborts and a cluster's prod records, each signed with a key of
// tests/evidence/testdata into a Sigstore bundle, as the registry holds them.
// Thread-safety: values.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "evidence/bundle.h"
#include "evidence/ecdsa_p256.h"
#include "evidence/fleet_statement.h"
#include "evidence/statement.h"

namespace lockstep::testing::fleet {

inline const std::string kRepository = "registry.example/models/llama";
inline const std::string kDigest = "sha256:" + std::string(64, 'a');
inline const std::string kPackage = kRepository + "@" + kDigest;
// 2026-11-30T09:00:00Z
inline constexpr int64_t kT0 = 1796029200;

inline std::string testdata(const std::string& name) {
  std::ifstream in(std::string(LOCKSTEP_EVIDENCE_TESTDATA) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The bundle of `statement` signed with testdata's `key` ("signer.key", "other.key").
inline std::string signedBundle(const nlohmann::ordered_json& statement, const std::string& key) {
  auto signer = evidence::parseP256PrivateKey(testdata(key), key);
  EXPECT_TRUE(signer.isOk()) << signer.status().toString();
  auto bundle = evidence::signStatement(statement.dump(), **signer);
  EXPECT_TRUE(bundle.isOk()) << bundle.status().toString();
  return bundle->dump();
}

inline api::ImageRef packageRef(const std::string& digest = kDigest) {
  return *api::parseImageRef(kRepository + "@" + digest);
}

// An open permit when `clusters` is empty.
inline nlohmann::ordered_json permit(const std::string& wave, int64_t index,
                                     std::vector<std::string> clusters, int64_t issuedAt,
                                     const api::ImageRef& package = packageRef()) {
  evidence::WavePermit p;
  p.package = package;
  p.rollout = "ml/llama-v7";
  p.rolloutUid = "uid-1";
  p.wave = wave;
  p.waveIndex = index;
  p.allClusters = clusters.empty();
  p.clusters = std::move(clusters);
  p.issuedAt = issuedAt;
  p.model = "llama";
  return *evidence::wavePermitStatement(p);
}

inline nlohmann::ordered_json record(const std::string& cluster, const std::string& outcome,
                                     int64_t since, const std::string& reason = "",
                                     const api::ImageRef& package = packageRef()) {
  evidence::ProdRecordInput in;
  in.package = package;
  in.outcome = outcome;
  in.cluster = cluster;
  in.ns = "ml";
  in.model = "llama";
  in.release = "llama-v7";
  in.releaseUid = "rel-" + cluster;
  in.since = evidence::statementTime(since);
  in.reason = reason;
  return *evidence::prodRecordStatement(in);
}

inline nlohmann::ordered_json abort(const std::string& wave,
                                    std::vector<evidence::FleetFailure> failures,
                                    int64_t issuedAt) {
  evidence::FleetAbort a;
  a.package = packageRef();
  a.rollout = "ml/llama-v7";
  a.rolloutUid = "uid-1";
  a.wave = wave;
  a.failures = std::move(failures);
  a.maxFailures = 0;
  a.issuedAt = issuedAt;
  a.model = "llama";
  return *evidence::fleetAbortStatement(a);
}

}  // namespace lockstep::testing::fleet
