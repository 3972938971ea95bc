// `lockstep fleet status`: a package's fleet rollout as the registry holds it
// (docs/fleet.md "Seeing a rollout"): the hub's signed wave permits and fleet
// aborts and the serving clusters' signed prod records, read as referrers of
// the package, verified, and shown per wave and cluster. Read-only: nothing is
// signed or pushed.
#include <chrono>
#include <ostream>

#include "cmd/lockstep/fleet_status.h"
#include "cmd/lockstep/manifest_file.h"
#include "cmd/lockstep/registry_access.h"
#include "cmd/lockstep/verbs.h"
#include "cmd/lockstep/verifier_trust.h"
#include "common/flags.h"
#include "evidence/fleet_statement.h"
#include "operator/registry/bundle_referrers.h"
#include "operator/registry/reference.h"

namespace lockstep::cli {
namespace {

int statusUsage(const VerbContext& ctx, std::ostream& os, int rc) {
  fleetUsage(os, ctx.programName);
  return rc;
}

int runStatus(const VerbContext& ctx, const std::vector<std::string>& args) {
  Flags flags(
      {
          {"rollout", "", "a ModelRollout manifest: its waves, strategy and spec.package"},
          {"key", "", "trusted public keys, PEM files, comma-separated"},
          {"policy", "", "a TrustPolicy file (YAML or JSON; a List of them too)"},
          {"now", "", "evaluate at this RFC 3339 time instead of the clock"},
          {"output", "table", "table or json", FlagType::kChoice, {"table", "json"}},
          {"authfile", "",
           "docker config with the registry's credentials (default: $REGISTRY_AUTH_FILE, "
           "$DOCKER_CONFIG/config.json, ~/.docker/config.json)"},
          {"cert-dir", "", "a directory of *.crt CA certificates (default: system roots)"},
      },
      /*maxPositional=*/1);
  // `-o json` as kubectl spells it.
  std::vector<const char*> argv{"fleet status"};
  std::vector<std::string> spelled;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" && i + 1 < args.size()) {
      spelled.push_back("--output=" + args[++i]);
    } else if (args[i].rfind("-o", 0) == 0 && args[i].size() > 2 && args[i][2] != '-') {
      spelled.push_back("--output=" + args[i].substr(2));
    } else {
      spelled.push_back(args[i]);
    }
  }
  for (const std::string& a : spelled) argv.push_back(a.c_str());
  if (Status s = flags.parse(static_cast<int>(argv.size()), argv.data()); !s.isOk()) {
    ctx.err << "fleet status: " << s.message() << "\n";
    return statusUsage(ctx, ctx.err, kExitUsage);
  }
  if (flags.helpRequested()) return statusUsage(ctx, ctx.out, kExitOk);
  if (flags.get("key").empty() && flags.get("policy").empty()) {
    ctx.err << "fleet status: give --key FILES and/or --policy FILE: the keys trusted for the "
               "hub's statements (stage fleet) and the clusters' prod records (stage prod)\n";
    return kExitUsage;
  }
  if (flags.positional().empty() && flags.get("rollout").empty()) {
    ctx.err << "fleet status: give a PACKAGE (REGISTRY/REPOSITORY@sha256:…) or --rollout FILE\n";
    return kExitUsage;
  }
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  if (!flags.get("now").empty()) {
    auto t = evidence::parseStatementTime(flags.get("now"));
    if (!t) {
      ctx.err << "fleet status: --now: \"" << flags.get("now")
              << "\" is not an RFC 3339 time (2026-11-30T09:00:00Z)\n";
      return kExitUsage;
    }
    now = *t;
  }

  std::optional<FleetRollout> rollout;
  if (!flags.get("rollout").empty()) {
    auto file = ManifestFile::read(flags.get("rollout"));
    if (!file.isOk()) {
      ctx.err << "fleet status: " << file.status().message() << "\n";
      return kExitFailure;
    }
    auto r = decodeRolloutManifest(*file);
    if (!r.isOk()) {
      ctx.err << "fleet status: " << r.status().message() << "\n";
      return kExitFailure;
    }
    rollout = std::move(*r);
  }
  const std::string packageText =
      flags.positional().empty() ? rollout->spec.package : flags.positional()[0];
  auto package = registry::parsePackageRef(packageText);
  if (!package.isOk()) {
    ctx.err << "fleet status: " << package.status().message() << "\n";
    return flags.positional().empty() ? kExitFailure : kExitUsage;
  }
  if (rollout && package->digest != rollout->spec.packageRef.digest) {
    ctx.err << "fleet status: " << packageText << " is not the rollout's spec.package "
            << rollout->spec.package << "\n";
    return kExitUsage;
  }
  auto trust = loadTrust(flags.get("key"), flags.get("policy"));
  if (!trust.isOk()) {
    ctx.err << "fleet status: " << trust.status().message() << "\n";
    return kExitFailure;
  }

  auto client = openRegistry(package->apiHost(), {flags.get("authfile"), flags.get("cert-dir")});
  if (!client.isOk()) {
    ctx.err << "fleet status: " << client.status().message() << "\n";
    return kExitFailure;
  }
  auto list = registry::readBundleReferrers(**client, package->repository, package->digest);
  if (!list.isOk()) {
    ctx.err << "fleet status: " << package->name() << "@" << package->digest << ": "
            << list.status().message() << "\n";
    return kExitFailure;
  }
  std::vector<FleetReferrer> referrers;
  for (const registry::BundleReferrer& r : list->referrers)
    referrers.push_back({r.descriptor.digest,
                         registry::annotationOf(r.descriptor, registry::kBundleStatementAnnotation),
                         registry::annotationOf(r.descriptor, registry::kBundlePredicateAnnotation),
                         r.bundle, r.error});
  const FleetEvidence ev = readFleetEvidence(referrers, package->name(), package->digest, *trust);
  const auto status =
      fleetStatus(package->name() + "@" + package->digest, ev, rollout ? &*rollout : nullptr, now);
  if (flags.get("output") == "json") {
    ctx.out << status.dump(2) << "\n";
  } else {
    ctx.out << fleetStatusTable(status);
  }
  return kExitOk;
}

}  // namespace

void fleetUsage(std::ostream& os, const std::string& program) {
  os << "usage: " << program
     << " fleet status [PACKAGE] [--rollout FILE] (--key PUB.pem[,…] | --policy FILE)…\n"
        "                [--now RFC3339] [-o table|json] [--authfile FILE] [--cert-dir DIR]\n"
        "\n"
        "status: a package's fleet rollout as its registry holds it: the hub's signed wave\n"
        "     permits and fleet aborts and the serving clusters' signed prod records (OCI\n"
        "     referrers of PACKAGE, REGISTRY/REPOSITORY@sha256:…), each verified: permits and\n"
        "     aborts must be signed by a key trusted for stage fleet, prod records for stage\n"
        "     prod (--key: trusted for every stage; --policy: a TrustPolicy's rules). What is\n"
        "     refused is listed with the reason and counts for nothing.\n"
        "     --rollout FILE: the ModelRollout (as written, or kubectl get modelrollout -o\n"
        "     yaml); PACKAGE defaults to its spec.package. The hub's own wave planner runs at\n"
        "     --now (default the clock) over what the registry holds: the rollout's phase,\n"
        "     each wave and cluster (Pending, Permitted, Promoted, Soaked, RolledBack,\n"
        "     TimedOut) and what the hub writes on its next pass. Selectors read\n"
        "     spec.inventory. Without --rollout: the clusters the permits and records name.\n"
        "     Read-only. Exit 0 when shown, 1 when the registry or a file is refused, 2 for\n"
        "     bad flags. See docs/fleet.md.\n";
}

int runFleet(const VerbContext& ctx) {
  if (ctx.args.empty() || ctx.args[0] == "-h" || ctx.args[0] == "--help" || ctx.args[0] == "help") {
    fleetUsage(ctx.args.empty() ? ctx.err : ctx.out, ctx.programName);
    return ctx.args.empty() ? kExitUsage : kExitOk;
  }
  const std::vector<std::string> rest(ctx.args.begin() + 1, ctx.args.end());
  if (ctx.args[0] == "status") return runStatus(ctx, rest);
  ctx.err << "fleet: unknown command \"" << ctx.args[0] << "\"\n";
  fleetUsage(ctx.err, ctx.programName);
  return kExitUsage;
}

}  // namespace lockstep::cli
