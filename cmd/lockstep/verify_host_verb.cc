// `lockstep verify-host`: a node (or a container on it) against a runtime's CUDA, driver,
// GPU and RDMA requirements. Exit 0 when it fits, 1 when it does not (each check named)
// or on bad input, 2 on a usage error (docs/verify.md).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ostream>

#include "cmd/lockstep/verbs.h"
#include "cmd/lockstep/verify_input.h"
#include "common/flags.h"
#include "verify/fs_tree.h"
#include "verify/host_check.h"
#include "verify/host_facts.h"

namespace lockstep::cli {
namespace {

constexpr const char* kHostVerb = "verify-host";

std::string hostEnvOr(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// `exe` in a directory of $PATH, or "".
std::string findOnPath(const std::string& exe) {
  std::string dirs = hostEnvOr("PATH");
  for (char& c : dirs) c = c == ':' ? ',' : c;
  for (const std::string& dir : splitComma(dirs)) {
    std::string path = dir + "/" + exe;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

// Runs nvidia-smi's query directly (no shell), its standard output captured (at most 1 MiB).
StatusOr<std::string> runNvidiaSmi(const std::string& path) {
  int fds[2];
  if (::pipe(fds) != 0)
    return unavailable("nvidia-smi: pipe: " + std::string(std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return unavailable("nvidia-smi: fork: " + std::string(std::strerror(errno)));
  }
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    if (int devnull = ::open("/dev/null", O_WRONLY); devnull >= 0) ::dup2(devnull, STDERR_FILENO);
    const char* argv[] = {path.c_str(), "--query-gpu=driver_version,pci.bus_id,name",
                          "--format=csv,noheader", nullptr};
    ::execv(path.c_str(), const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  std::array<char, 4096> buf{};
  ssize_t n = 0;
  while ((n = ::read(fds[0], buf.data(), buf.size())) > 0) {
    if (out.size() < (size_t{1} << 20)) out.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return unavailable("nvidia-smi exited with status " +
                       std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  }
  return out;
}

nlohmann::ordered_json factsJson(const verify::HostFacts& f, const verify::HostReport& r) {
  nlohmann::ordered_json j;
  j["driver"] = f.driverVersion;
  j["driverSource"] = f.driverSource;
  j["minDriver"] = r.minDriver;
  j["gpusVisible"] = f.visibleGpuCount();
  j["gpus"] = nlohmann::ordered_json::array();
  for (const auto& g : f.gpus) j["gpus"].push_back({{"busId", g.busId}, {"model", g.model}});
  j["libraries"] = nlohmann::ordered_json::array();
  for (const auto& l : f.libraries) {
    j["libraries"].push_back(
        {{"kind", l.kind}, {"path", l.path}, {"version", l.version}, {"cudaMajor", l.cudaMajor}});
  }
  j["uverbs"] = f.uverbs;
  j["ibDevices"] = nlohmann::ordered_json::array();
  for (const auto& [name, dev] : f.ibDevices) {
    nlohmann::ordered_json d{{"name", name}, {"ports", nlohmann::ordered_json::object()}};
    for (const auto& [num, port] : dev.ports) d["ports"][num] = port.state;
    j["ibDevices"].push_back(d);
  }
  return j;
}

}  // namespace

void verifyHostUsage(std::ostream& os, const std::string& program) {
  os << "usage: " << program
     << " verify-host [--runtime-json FILE | --lock FILE] [--root DIR] [--prefix DIR]\n"
        "                 [--gpus N] [--rdma] [--nccl-ib-hca LIST] [--lib-dir DIR,...] [--json]\n"
        "\n"
        "Checks this node against a runtime: the NVIDIA driver against the minimum for the\n"
        "closure's CUDA release (the operator's table), visible GPUs, the CUDA runtime and NCCL\n"
        "libraries' CUDA major, and, when RDMA is declared, /dev/infiniband/uverbs* and the\n"
        "NCCL_IB_HCA devices under /sys/class/infiniband. A CPU-only closure needs no driver.\n"
        "  --runtime-json F  runtime.json (cuda; rdma: true declares RDMA)\n"
        "  --lock F          a lock instead (its CUDA runtime; --format/--platform/--environment)\n"
        "  --root DIR        read proc/, dev/ and sys/ under DIR (fixture roots; nvidia-smi "
        "unused)\n"
        "  --prefix DIR      the job's environment: its lib/ and pip nvidia/*/lib are searched\n"
        "  --gpus N          at least N visible GPUs\n"
        "  --rdma            declare RDMA (as runtime.json's rdma: true)\n"
        "  --nccl-ib-hca L   the job's NCCL_IB_HCA (default: $NCCL_IB_HCA)\n"
        "  --lib-dir DIRS    more library directories, searched first\n"
        "  --json            print the report as JSON\n"
        "Exit: 0 fits, 1 does not (each check named) or bad input, 2 usage error.\n";
}

int runVerifyHost(const VerbContext& ctx) {
  Flags flags({
      {"runtime-json", "", "runtime.json"},
      {"lock", "", "lock file"},
      {"format", "", "lock format"},
      {"platform", "", "lock platform"},
      {"environment", "", "pixi environment"},
      {"allow-unhashed", "false", "accept packages without digests", FlagType::kBool},
      {"root", "", "fixture root"},
      {"prefix", "", "the job's environment"},
      {"gpus", "", "at least N visible GPUs"},
      {"rdma", "false", "declare RDMA", FlagType::kBool},
      {"nccl-ib-hca", "", "NCCL_IB_HCA"},
      {"lib-dir", "", "library directories"},
      {"json", "false", "print JSON", FlagType::kBool},
  });
  std::vector<const char*> argv{kHostVerb};
  for (const auto& a : ctx.args) argv.push_back(a.c_str());
  if (Status s = flags.parse(static_cast<int>(argv.size()), argv.data()); !s.isOk()) {
    ctx.err << kHostVerb << ": " << s.message() << "\n";
    verifyHostUsage(ctx.err, ctx.programName);
    return kExitUsage;
  }
  if (flags.helpRequested()) {
    verifyHostUsage(ctx.out, ctx.programName);
    return kExitOk;
  }
  const bool json = flags.getBool("json");
  verify::HostRequirement want;
  if (std::string g = flags.get("gpus"); !g.empty()) {
    auto n = parseNonNegativeInt(g);
    if (!n.isOk()) {
      ctx.err << kHostVerb << ": --gpus: " << n.status().message() << "\n";
      return kExitUsage;
    }
    want.gpus = *n;
  }
  VerifyInput in{flags.get("lock"),     flags.get("runtime-json"), flags.get("format"),
                 flags.get("platform"), flags.get("environment"),  flags.getBool("allow-unhashed")};
  std::string source = "no runtime given";
  std::string closureHash;
  if (!in.lockPath.empty() || !in.runtimeJsonPath.empty()) {
    auto runtime = resolveRuntime(in);
    if (!runtime.isOk()) {
      return reportError(ctx.out, ctx.err, kHostVerb, json, runtime.status().message());
    }
    want.cuda = runtime->cuda;
    want.rdma = runtime->rdma;
    source = runtime->source;
    closureHash = runtime->closureHash;
  }
  want.rdma = want.rdma || flags.getBool("rdma");
  want.ncclIbHca = flags.get("nccl-ib-hca");
  if (want.ncclIbHca.empty()) want.ncclIbHca = hostEnvOr("NCCL_IB_HCA");

  verify::FsTree tree;
  verify::HostProbe probe;
  const std::string root = flags.get("root");
  probe.root = root.empty() ? "/" : root;
  if (auto top = tree.list(probe.root); !top.isOk()) {
    return reportError(ctx.out, ctx.err, kHostVerb, json, "--root: " + top.status().message());
  }
  probe.libraryDirs = splitComma(flags.get("lib-dir"));
  if (root.empty()) {
    // The job's own library path first, as the dynamic loader searches it.
    std::string ld = hostEnvOr("LD_LIBRARY_PATH");
    for (char& c : ld) c = c == ':' ? ',' : c;
    for (const auto& d : splitComma(ld)) probe.libraryDirs.push_back(d);
  }
  for (auto& d : verify::defaultLibraryDirs(tree, probe.root, flags.get("prefix"))) {
    probe.libraryDirs.push_back(d);
  }
  auto facts = verify::collectHostFacts(tree, probe);
  if (!facts.isOk())
    return reportError(ctx.out, ctx.err, kHostVerb, json, facts.status().message());
  std::vector<std::string> extraNotes;
  if (root.empty()) {
    if (std::string smi = findOnPath("nvidia-smi"); !smi.empty()) {
      auto out = runNvidiaSmi(smi);
      auto parsed =
          out.isOk() ? verify::parseNvidiaSmi(*out) : StatusOr<verify::HostFacts>(out.status());
      if (parsed.isOk()) {
        facts->driverVersion = parsed->driverVersion;
        facts->driverSource = smi;
        facts->gpus = parsed->gpus;
        facts->nvidiaSmiUsed = true;
      } else {
        extraNotes.push_back(smi + ": " + parsed.status().message() + "; read /proc instead");
      }
    }
  }
  verify::HostReport report = verify::checkHost(want, *facts);
  report.notes.insert(report.notes.begin(), extraNotes.begin(), extraNotes.end());

  if (json) {
    nlohmann::ordered_json j;
    j["result"] = report.match() ? "match" : "mismatch";
    j["closureHash"] = closureHash;
    j["source"] = source;
    j["cuda"] = want.cuda;
    j["rdma"] = want.rdma;
    j["host"] = factsJson(*facts, report);
    j["differences"] = nlohmann::ordered_json::array();
    for (const auto& d : report.differences) j["differences"].push_back(differenceJson(d));
    j["notes"] = report.notes;
    ctx.out << j.dump(2) << "\n";
  } else {
    std::string summary =
        "driver " + (facts->driverVersion.empty() ? std::string("none") : facts->driverVersion);
    summary += ", " + std::to_string(facts->visibleGpuCount()) + " GPU(s) visible";
    summary += want.cuda.empty() ? ", CPU-only closure" : ", CUDA " + want.cuda;
    if (!report.minDriver.empty()) summary += " needs driver >= " + report.minDriver;
    if (want.rdma) summary += ", RDMA declared";
    if (report.match()) {
      ctx.out << kHostVerb << ": OK: " << summary << "\n";
    } else {
      ctx.out << kHostVerb << ": MISMATCH: " << summary << "; " << report.differences.size()
              << " check(s) failed (" << source << ")\n";
      for (const auto& d : report.differences) ctx.out << "  " << verify::describe(d) << "\n";
    }
    for (const auto& n : report.notes) ctx.out << "  note: " << n << "\n";
  }
  return report.match() ? kExitOk : kExitFailure;
}

}  // namespace lockstep::cli
