// `lockstep evidence list|get|verify PACKAGE`: the evidence published as OCI
// referrers of a package (controllers/evidence), read from its registry with
// the CLI's registry access (registry_access.h). docs/evidence.md.
#pragma once

#include <string>
#include <vector>

#include "cmd/lockstep/verbs.h"
#include "common/flags.h"
#include "common/status.h"
#include "evidence/verify.h"

namespace lockstep::cli {

// Parses an `evidence` sub-command's arguments: nullopt to go on, else the exit
// code (usage printed on an error or --help).
std::optional<int> parseEvidenceFlags(const VerbContext& ctx, Flags& flags, const std::string& name,
                                      const std::vector<std::string>& args);

int runEvidenceList(const VerbContext& ctx, const std::vector<std::string>& args);
int runEvidenceGet(const VerbContext& ctx, const std::vector<std::string>& args);
int runEvidenceVerify(const VerbContext& ctx, const std::vector<std::string>& args);

}  // namespace lockstep::cli
