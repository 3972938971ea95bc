// The verb table of the `lockstep` CLI: one entry per subcommand.
//
// A verb gets its arguments (after the verb name) and the streams to write to,
// and returns the process exit code.
// Thread-safety: run from main only.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace lockstep::cli {

struct VerbContext {
  std::vector<std::string> args;
  std::ostream& out;
  std::ostream& err;
  std::string programName;  // "lockstep" or "kubectl lockstep"
};

struct Verb {
  const char* name;
  const char* summary;
  int (*run)(const VerbContext&);
};

// Exit codes shared by verbs.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the input was rejected (bad lock, ...)
inline constexpr int kExitUsage = 2;    // bad flags

int runClosureHash(const VerbContext& ctx);
int runRelease(const VerbContext& ctx);
int runModel(const VerbContext& ctx);
int runVerifyEnv(const VerbContext& ctx);
int runVerifyHost(const VerbContext& ctx);
int runRuntime(const VerbContext& ctx);
int runDrift(const VerbContext& ctx);
int runEvidence(const VerbContext& ctx);
int runAdvisories(const VerbContext& ctx);
int runFleet(const VerbContext& ctx);
int runMirror(const VerbContext& ctx);
void closureHashUsage(std::ostream& os, const std::string& program);
void verifyEnvUsage(std::ostream& os, const std::string& program);
void verifyHostUsage(std::ostream& os, const std::string& program);
void evidenceUsage(std::ostream& os, const std::string& program);
void advisoriesUsage(std::ostream& os, const std::string& program);
void fleetUsage(std::ostream& os, const std::string& program);
void mirrorUsage(std::ostream& os, const std::string& program);

}  // namespace lockstep::cli
