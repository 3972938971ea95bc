// `lockstep closure-hash`: the packaging-time side of closure hash v1.
#include <nlohmann/json.hpp>

#include <ostream>

#include "closure/closure.h"
#include "cmd/lockstep/file_include_reader.h"
#include "cmd/lockstep/verbs.h"

namespace lockstep::cli {
namespace {

std::string baseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string dirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

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
  closure::ClosureOptions options;
  bool json = false, explain = false;
  std::string file;
  const auto& a = ctx.args;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string& arg = a[i];
    auto value = [&](const std::string& flag, std::string& dst) -> bool {
      if (arg == flag) {
        if (i + 1 >= a.size()) return false;
        dst = a[++i];
        return true;
      }
      dst = arg.substr(flag.size() + 1);
      return true;
    };
    auto is = [&](const std::string& flag) { return arg == flag || arg.rfind(flag + "=", 0) == 0; };
    if (arg == "-h" || arg == "--help") {
      closureHashUsage(ctx.out, ctx.programName);
      return kExitOk;
    } else if (is("--format")) {
      std::string f;
      if (!value("--format", f)) {
        ctx.err << "closure-hash: --format needs a value\n";
        return kExitUsage;
      }
      auto fmt = closure::parseFormatName(f);
      if (!fmt.isOk()) {
        ctx.err << "closure-hash: " << fmt.status().message() << "\n";
        return kExitUsage;
      }
      options.format = *fmt;
    } else if (is("--platform")) {
      if (!value("--platform", options.platform)) {
        ctx.err << "closure-hash: --platform needs a value\n";
        return kExitUsage;
      }
    } else if (is("--environment")) {
      if (!value("--environment", options.environment)) {
        ctx.err << "closure-hash: --environment needs a value\n";
        return kExitUsage;
      }
    } else if (arg == "--allow-unhashed") {
      options.allowUnhashed = true;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--explain") {
      explain = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      ctx.err << "closure-hash: unknown flag " << arg << "\n";
      closureHashUsage(ctx.err, ctx.programName);
      return kExitUsage;
    } else if (file.empty()) {
      file = arg;
    } else {
      ctx.err << "closure-hash: one FILE only (got " << file << " and " << arg << ")\n";
      return kExitUsage;
    }
  }
  if (file.empty()) {
    closureHashUsage(ctx.err, ctx.programName);
    return kExitUsage;
  }
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
