// `lockstep closure-hash`: the packaging-time side of closure hash v1.
#include <nlohmann/json.hpp>

#include <ostream>

#include "closure/closure.h"
#include "cmd/lockstep/file_include_reader.h"
#include "cmd/lockstep/path_names.h"
#include "cmd/lockstep/verbs.h"
#include "common/flags.h"

namespace lockstep::cli {

void closureHashUsage(std::ostream& os, const std::string& program) {
  os << "usage: " << program
     << " closure-hash [--format F] [--platform P] [--environment E]\n"
        "                [--allow-unhashed] [--json | --explain] FILE\n"
        "\n"
        "Prints the closure hash v1 of a lock file (last line of output).\n"
        "  --format F        uv, pip, conda-lock, pixi, poetry, flox, nix (default: detect)\n"
        "  --platform P      per-platform locks: linux-64 / x86_64-linux, ... (default: the only\n"
        "                    platform, else linux-64 / x86_64-linux)\n"
        "  --environment E   pixi environment (default: default)\n"
        "  --allow-unhashed  keep packages without digests; the result is marked weak\n"
        "  --json            print runtime.json (closureHash, format, platform, packageCount,\n"
        "                    cuda, minDriver, weak)\n"
        "  --explain         print the canonical lines, then the hash\n"
        "FILE may be '-' for standard input (pip -r includes then resolve in '.').\n";
}

int runClosureHash(const VerbContext& ctx) {
  Flags flags(
      {
          {"format", "", "lock format (default: detect)"},
          {"platform", "", "per-platform locks: the platform"},
          {"environment", "", "pixi environment"},
          {"allow-unhashed", "false", "keep packages without digests", FlagType::kBool},
          {"json", "false", "print runtime.json", FlagType::kBool},
          {"explain", "false", "print the canonical lines", FlagType::kBool},
      },
      /*maxPositional=*/1);
  std::vector<const char*> argv{"closure-hash"};
  for (const auto& a : ctx.args) argv.push_back(a.c_str());
  if (Status s = flags.parse(static_cast<int>(argv.size()), argv.data()); !s.isOk()) {
    ctx.err << "closure-hash: " << s.message() << "\n";
    closureHashUsage(ctx.err, ctx.programName);
    return kExitUsage;
  }
  if (flags.helpRequested()) {
    closureHashUsage(ctx.out, ctx.programName);
    return kExitOk;
  }
  closure::ClosureOptions options;
  if (std::string f = flags.get("format"); !f.empty()) {
    auto fmt = closure::parseFormatName(f);
    if (!fmt.isOk()) {
      ctx.err << "closure-hash: " << fmt.status().message() << "\n";
      return kExitUsage;
    }
    options.format = *fmt;
  }
  options.platform = flags.get("platform");
  options.environment = flags.get("environment");
  options.allowUnhashed = flags.getBool("allow-unhashed");
  const bool json = flags.getBool("json");
  const bool explain = flags.getBool("explain");
  if (flags.positional().empty()) {
    closureHashUsage(ctx.err, ctx.programName);
    return kExitUsage;
  }
  const std::string file = flags.positional()[0];
  if (json && explain) {
    ctx.err << "closure-hash: --json and --explain are exclusive\n";
    return kExitUsage;
  }

  auto text = readFile(file, options.limits.maxBytes);
  if (!text.isOk()) {
    ctx.err << "closure-hash: " << text.status().message() << "\n";
    return kExitFailure;
  }
  FileIncludeReader includes(file == "-" ? "." : dirName(file));
  options.includes = &includes;
  options.sourceName = file == "-" ? "stdin" : baseName(file);
  auto result = closure::computeClosure(*text, options);
  if (!result.isOk()) {
    ctx.err << "closure-hash: " << result.status().message() << "\n";
    return kExitFailure;
  }
  const closure::Closure& c = *result;
  if (c.weak) {
    ctx.err << "closure-hash: warning: weak closure, " << c.unhashed.size()
            << " package(s) without digest:";
    for (const auto& u : c.unhashed) ctx.err << " " << u << ";";
    ctx.err << "\n";
  }
  if (json) {
    nlohmann::ordered_json j;
    j["closureHash"] = c.closureHash;
    j["hashVersion"] = "lockstep-closure-v1";
    j["format"] = std::string(closure::formatName(c.format));
    j["platform"] = c.platform;
    if (!c.environment.empty()) j["environment"] = c.environment;
    j["packageCount"] = c.packageCount();
    j["cuda"] = c.cuda;
    j["minDriver"] = c.minDriver;
    j["weak"] = c.weak;
    // The hash stays on the last line, as for the plain output.
    ctx.out << j.dump(2) << "\n";
    return kExitOk;
  }
  if (explain) ctx.out << c.canonicalText;
  ctx.out << c.closureHash << "\n";
  return kExitOk;
}

}  // namespace lockstep::cli
