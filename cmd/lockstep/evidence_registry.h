// `lockstep evidence list|get|verify PACKAGE`: the evidence published as OCI
// referrers of a package (controllers/evidence), read from its registry with
// the CLI's registry access (registry_access.h). docs/evidence.md.
#pragma once

#include <string>
#include <vector>

#include "cmd/lockstep/verbs.h"

namespace lockstep::cli {

int runEvidenceList(const VerbContext& ctx, const std::vector<std::string>& args);
int runEvidenceGet(const VerbContext& ctx, const std::vector<std::string>& args);
int runEvidenceVerify(const VerbContext& ctx, const std::vector<std::string>& args);

}  // namespace lockstep::cli
