#include "cmd/lockstep/verify_input.h"

#include <ostream>

#include "cmd/lockstep/file_include_reader.h"
#include "cmd/lockstep/path_names.h"
#include "cmd/lockstep/verbs.h"

namespace lockstep::cli {

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

StatusOr<ResolvedRuntime> resolveRuntime(const VerifyInput& in) {
  ResolvedRuntime r;
  std::optional<verify::RuntimeSpec> spec;
  if (!in.runtimeJsonPath.empty()) {
    auto text = readFile(in.runtimeJsonPath, closure::kMaxLockBytes);
    if (!text.isOk()) return text.status();
    auto parsed = verify::parseRuntimeJson(*text, in.runtimeJsonPath);
    if (!parsed.isOk()) return parsed.status();
    spec = std::move(*parsed);
    r.closureHash = spec->closureHash;
    r.cuda = spec->cuda;
    r.rdma = spec->rdma;
    r.packages = spec->packages;
    r.source = in.runtimeJsonPath;
  }
  if (!in.lockPath.empty()) {
    closure::ClosureOptions options;
    const std::string format = !in.format.empty() ? in.format : (spec ? spec->format : "");
    auto fmt = closure::parseFormatName(format);
    if (!fmt.isOk()) return fmt.status();
    options.format = *fmt;
    options.platform = !in.platform.empty() ? in.platform : (spec ? spec->platform : "");
    options.environment =
        !in.environment.empty() ? in.environment : (spec ? spec->environment : "");
    options.allowUnhashed = in.allowUnhashed;
    auto text = readFile(in.lockPath, options.limits.maxBytes);
    if (!text.isOk()) return text.status();
    FileIncludeReader includes(in.lockPath == "-" ? "." : dirName(in.lockPath));
    options.includes = &includes;
    options.sourceName = in.lockPath == "-" ? "stdin" : baseName(in.lockPath);
    auto c = closure::computeClosure(*text, options);
    if (!c.isOk()) return c.status();
    if (spec && !spec->closureHash.empty() && spec->closureHash != c->closureHash) {
      return invalidArgument(in.lockPath + ": the lock's closure hash is " + c->closureHash + ", " +
                             in.runtimeJsonPath + " says closureHash " + spec->closureHash +
                             ": not the lock this runtime was packaged from");
    }
    r.closureHash = c->closureHash;
    r.cuda = c->cuda;
    r.packages = c->packages;
    r.source = spec ? in.lockPath + " + " + in.runtimeJsonPath : in.lockPath;
  }
  return r;
}

nlohmann::ordered_json differenceJson(const verify::Difference& d) {
  nlohmann::ordered_json j;
  j["kind"] = std::string(verify::diffKindName(d.kind));
  j["ecosystem"] = d.ecosystem;
  j["package"] = d.package;
  j["expected"] = d.expected;
  j["found"] = d.found;
  j["where"] = d.where;
  j["message"] = verify::describe(d);
  return j;
}

int reportError(std::ostream& out, std::ostream& err, const std::string& verb, bool json,
                const std::string& message) {
  if (json) {
    nlohmann::ordered_json j;
    j["result"] = "error";
    j["error"] = message;
    out << j.dump(2) << "\n";
  }
  err << verb << ": error: " << message << "\n";
  return kExitFailure;
}

}  // namespace lockstep::cli
