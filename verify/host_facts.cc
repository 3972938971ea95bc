#include "verify/host_facts.h"

#include <algorithm>
#include <set>

namespace lockstep::verify {
namespace {

bool startsWithHostFacts(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// A dotted number ("570.86.15", "535.104.05"): digits and dots, starting and ending
// with a digit, with at least one dot.
bool isDottedNumber(std::string_view s) {
  if (s.empty() || !isDigit(s.front()) || !isDigit(s.back())) return false;
  bool dot = false;
  for (char c : s) {
    if (c == '.') {
      dot = true;
    } else if (!isDigit(c)) {
      return false;
    }
  }
  return dot;
}

std::string_view trimHostFacts(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

std::string under(const std::string& root, const std::string& path) {
  return (root.empty() || root == "/") ? path : joinPath(root, path);
}

std::vector<std::string> splitWords(std::string_view line) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    size_t end = pos;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
    if (end > pos) out.emplace_back(line.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

}  // namespace

size_t HostFacts::visibleGpuCount() const {
  // nvidia-smi lists what the caller may use; without it the device nodes say.
  return nvidiaSmiUsed ? gpus.size() : gpuDevices.size();
}

StatusOr<std::string> parseDriverVersionFile(std::string_view text, const std::string& where) {
  size_t nl = text.find('\n');
  std::string_view first = text.substr(0, nl);
  if (!startsWithHostFacts(first, "NVRM version:")) {
    return invalidArgument(where + ": line 1: expected \"NVRM version: ...\"");
  }
  // The version is the first dotted number after "Kernel Module" (proprietary:
  // "... x86_64 Kernel Module  570.86.15  Wed ...", open: "... Open Kernel Module for
  // x86_64  570.86.15  Release Build ...").
  size_t km = first.find("Kernel Module");
  std::string_view rest = km == std::string_view::npos ? first.substr(13) : first.substr(km);
  for (const std::string& w : splitWords(rest)) {
    if (isDottedNumber(w)) return w;
  }
  return invalidArgument(where + ": line 1: no driver version in \"" + std::string(first) + "\"");
}

StatusOr<HostFacts> parseNvidiaSmi(std::string_view text) {
  HostFacts f;
  f.nvidiaSmiUsed = true;
  f.driverSource = "nvidia-smi";
  size_t pos = 0;
  int lineNo = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = trimHostFacts(
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++lineNo;
    if (line.empty()) continue;
    size_t c1 = line.find(',');
    size_t c2 = c1 == std::string_view::npos ? c1 : line.find(',', c1 + 1);
    if (c2 == std::string_view::npos) {
      return invalidArgument("nvidia-smi: line " + std::to_string(lineNo) +
                             ": expected \"driver_version, pci.bus_id, name\"");
    }
    std::string driver(trimHostFacts(line.substr(0, c1)));
    if (!isDottedNumber(driver)) {
      return invalidArgument("nvidia-smi: line " + std::to_string(lineNo) + ": driver_version \"" +
                             driver + "\" is not a version");
    }
    f.driverVersion = driver;
    f.gpus.push_back({std::string(trimHostFacts(line.substr(c1 + 1, c2 - c1 - 1))),
                      std::string(trimHostFacts(line.substr(c2 + 1)))});
  }
  if (f.driverVersion.empty()) return invalidArgument("nvidia-smi: no GPU listed");
  return f;
}

std::optional<SharedLibrary> classifyLibrary(const std::string& fileName) {
  SharedLibrary lib;
  std::string_view rest;
  if (startsWithHostFacts(fileName, "libcudart.so")) {
    lib.kind = "cudart";
    rest = std::string_view(fileName).substr(12);
  } else if (startsWithHostFacts(fileName, "libnccl.so")) {
    lib.kind = "nccl";
    rest = std::string_view(fileName).substr(10);
  } else {
    return std::nullopt;
  }
  if (rest.empty()) return lib;                  // the development symlink: no version in the name
  if (rest.front() != '.') return std::nullopt;  // libnccl.so-foo, libcudart.so~
  rest.remove_prefix(1);
  for (char c : rest) {
    if (!isDigit(c) && c != '.') return std::nullopt;
  }
  lib.version = std::string(rest);
  if (lib.kind == "cudart") lib.cudaMajor = lib.version.substr(0, lib.version.find('.'));
  return lib;
}

std::string ncclCudaMajorFromBuildString(std::string_view text) {
  size_t at = text.find("+cuda");
  if (at == std::string_view::npos) return "";
  std::string_view digits = text.substr(at + 5);
  size_t n = 0;
  while (n < digits.size() && isDigit(digits[n])) ++n;
  return std::string(digits.substr(0, n));
}

std::vector<std::string> defaultLibraryDirs(const Tree& tree, const std::string& root,
                                            const std::string& prefix) {
  std::vector<std::string> dirs;
  if (!prefix.empty()) {
    dirs.push_back(joinPath(prefix, "lib"));
    // pip wheels: site-packages/nvidia/{cuda_runtime,nccl}/lib.
    for (const char* lib : {"lib", "lib64"}) {
      auto pys = tree.list(under(root, joinPath(prefix, lib)));
      if (!pys.isOk()) continue;
      for (const DirEntry& e : *pys) {
        if (!e.isDir || !startsWithHostFacts(e.name, "python")) continue;
        const std::string nvidia =
            joinPath(prefix, std::string(lib) + "/" + e.name + "/site-packages/nvidia");
        for (const char* sub : {"cuda_runtime/lib", "nccl/lib"}) {
          dirs.push_back(joinPath(nvidia, sub));
        }
      }
    }
  }
  for (const char* d :
       {"/usr/local/cuda/lib64", "/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"}) {
    dirs.emplace_back(d);
  }
  return dirs;
}

StatusOr<HostFacts> collectHostFacts(const Tree& tree, const HostProbe& probe) {
  HostFacts f;
  f.root = probe.root.empty() ? "/" : probe.root;
  const std::string versionFile = under(f.root, "/proc/driver/nvidia/version");
  if (tree.exists(versionFile)) {
    auto text = tree.read(versionFile, size_t{64} * 1024);
    if (!text.isOk()) return text.status().withContext(versionFile);
    auto v = parseDriverVersionFile(*text, versionFile);
    if (!v.isOk()) return v.status();
    f.driverVersion = *v;
    f.driverSource = versionFile;
  }
  const std::string gpusDir = under(f.root, "/proc/driver/nvidia/gpus");
  if (auto gpus = tree.list(gpusDir); gpus.isOk()) {
    for (const DirEntry& e : *gpus) {
      Gpu g{e.name, ""};
      if (auto info =
              tree.read(joinPath(joinPath(gpusDir, e.name), "information"), size_t{64} * 1024);
          info.isOk()) {
        size_t m = info->find("Model:");
        if (m != std::string::npos) {
          size_t nl = info->find('\n', m);
          g.model = std::string(trimHostFacts(std::string_view(*info).substr(m + 6, nl - m - 6)));
        }
      }
      f.gpus.push_back(std::move(g));
    }
  }
  if (auto dev = tree.list(under(f.root, "/dev")); dev.isOk()) {
    for (const DirEntry& e : *dev) {
      if (startsWithHostFacts(e.name, "nvidia") && e.name.size() > 6 &&
          std::all_of(e.name.begin() + 6, e.name.end(), isDigit)) {
        f.gpuDevices.push_back(e.name);
      }
    }
  }
  std::set<std::string> seen;
  for (const std::string& dir : probe.libraryDirs) {
    const std::string d = under(f.root, dir);
    auto entries = tree.list(d);
    if (!entries.isOk()) continue;
    // The most specific name of each kind per directory (libnccl.so.2.21.5 over its
    // libnccl.so.2 and libnccl.so symlinks).
    std::map<std::string, SharedLibrary> best;
    for (const DirEntry& e : *entries) {
      auto lib = classifyLibrary(e.name);
      if (!lib) continue;
      lib->path = joinPath(d, e.name);
      auto it = best.find(lib->kind);
      if (it == best.end() || lib->version.size() > it->second.version.size()) {
        best[lib->kind] = *lib;
      }
    }
    for (auto& [kind, lib] : best) {
      if (!seen.insert(lib.path).second) continue;
      if (kind == "nccl") {
        if (auto s = tree.find(lib.path, "+cuda", 8, size_t{1} << 30)) {
          lib.cudaMajor = ncclCudaMajorFromBuildString(*s);
        }
      }
      f.libraries.push_back(lib);
    }
  }
  if (auto uv = tree.list(under(f.root, "/dev/infiniband")); uv.isOk()) {
    for (const DirEntry& e : *uv) {
      if (startsWithHostFacts(e.name, "uverbs")) f.uverbs.push_back(e.name);
    }
  }
  const std::string ibDir = under(f.root, "/sys/class/infiniband");
  if (auto devs = tree.list(ibDir); devs.isOk()) {
    for (const DirEntry& e : *devs) {
      IbDevice dev;
      const std::string portsDir = joinPath(joinPath(ibDir, e.name), "ports");
      if (auto ports = tree.list(portsDir); ports.isOk()) {
        for (const DirEntry& p : *ports) {
          IbPort port;
          // "4: ACTIVE"
          if (auto s = tree.read(joinPath(joinPath(portsDir, p.name), "state"), 4096); s.isOk()) {
            std::string_view v = trimHostFacts(*s);
            size_t colon = v.find(':');
            port.state = std::string(
                trimHostFacts(colon == std::string_view::npos ? v : v.substr(colon + 1)));
          }
          dev.ports[p.name] = port;
        }
      }
      f.ibDevices[e.name] = std::move(dev);
    }
  }
  return f;
}

}  // namespace lockstep::verify
