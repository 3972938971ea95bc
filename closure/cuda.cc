#include "closure/cuda.h"

#include <cstdlib>

namespace lockstep::closure {
namespace {

// Minimum Linux x86_64 driver per CUDA toolkit release (the GA row of each minor
// release). Source: NVIDIA CUDA Toolkit Release Notes, table "CUDA Toolkit and
// Corresponding Driver Versions" (docs.nvidia.com/cuda/cuda-toolkit-release-notes,
// and the archived release notes of each version). Later updates of a minor
// release sometimes raise the number (e.g. 12.4 Update 1: 550.54.15); a lock pins
// the minor release, so the GA row is the requirement. Add rows, never edit them.
const std::vector<CudaDriverRow> kTable = {
    {"9.0", "384.81"},     {"9.1", "390.46"},     {"9.2", "396.26"},     {"10.0", "410.48"},
    {"10.1", "418.39"},    {"10.2", "440.33"},    {"11.0", "450.51.05"}, {"11.1", "455.23"},
    {"11.2", "460.27.03"}, {"11.3", "465.19.01"}, {"11.4", "470.42.01"}, {"11.5", "495.29.05"},
    {"11.6", "510.39.01"}, {"11.7", "515.43.04"}, {"11.8", "520.61.05"}, {"12.0", "525.60.13"},
    {"12.1", "530.30.02"}, {"12.2", "535.54.03"}, {"12.3", "545.23.06"}, {"12.4", "550.54.14"},
    {"12.5", "555.42.02"}, {"12.6", "560.28.03"}, {"12.8", "570.26"},    {"12.9", "575.51.03"},
    {"13.0", "580.65.06"},
};

// Dotted numeric components; nullopt when any component is not a number.
std::optional<std::vector<long>> components(std::string_view v) {
  std::vector<long> out;
  if (v.empty()) return std::nullopt;
  size_t pos = 0;
  while (true) {
    size_t dot = v.find('.', pos);
    std::string_view part =
        v.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos);
    if (part.empty() || part.size() > 9) return std::nullopt;
    long n = 0;
    for (char c : part) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + (c - '0');
    }
    out.push_back(n);
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  return out;
}

// "12.1.105" -> "12.1"; "" unless it starts with two numeric components.
std::string majorMinor(std::string_view version) {
  size_t end = 0;
  int dots = 0;
  while (end < version.size()) {
    char c = version[end];
    if (c == '.') {
      if (++dots == 2) break;
    } else if (c < '0' || c > '9') {
      break;
    }
    ++end;
  }
  std::string_view mm = version.substr(0, end);
  if (dots == 0 || mm.empty() || mm.back() == '.' || mm.front() == '.') return "";
  return std::string(mm);
}

// "+cu121" local version -> "12.1".
std::string fromTorchLocal(std::string_view version) {
  size_t plus = version.find("+cu");
  if (plus == std::string_view::npos) return "";
  std::string_view digits = version.substr(plus + 3);
  size_t n = 0;
  while (n < digits.size() && digits[n] >= '0' && digits[n] <= '9') ++n;
  digits = digits.substr(0, n);
  if (digits.size() < 2 || digits.size() > 4) return "";
  return std::string(digits.substr(0, digits.size() - 1)) + "." +
         std::string(digits.substr(digits.size() - 1));
}

bool lessVersion(const std::string& a, const std::string& b) {
  auto ca = components(a), cb = components(b);
  if (!ca || !cb) return a < b;
  return *ca < *cb;
}

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

std::string detectCuda(const std::vector<Package>& packages) {
  std::string runtime, framework;
  auto keepMax = [](std::string& cur, const std::string& v) {
    if (v.empty()) return;
    if (cur.empty() || lessVersion(cur, v)) cur = v;
  };
  for (const auto& p : packages) {
    const std::string& n = p.name;
    if (p.ecosystem == "pypi") {
      if (n == "nvidia-cuda-runtime" || startsWith(n, "nvidia-cuda-runtime-cu") ||
          n == "cuda-toolkit") {
        keepMax(runtime, majorMinor(p.version));
      } else if (n == "torch" || n == "torchvision" || n == "torchaudio") {
        keepMax(framework, fromTorchLocal(p.version));
      }
    } else if (p.ecosystem == "conda") {
      if (n == "cuda-version" || n == "cuda-cudart" || n == "cudatoolkit" || n == "cuda-runtime" ||
          n == "pytorch-cuda") {
        keepMax(runtime, majorMinor(p.version));
      }
    } else if (p.ecosystem == "nix") {
      // Nix names carry the version: "cuda_cudart-12.4.127", "cudatoolkit-12.4.1".
      for (std::string_view prefix : {"cuda_cudart-", "cudatoolkit-"}) {
        if (startsWith(n, prefix))
          keepMax(runtime, majorMinor(std::string_view(n).substr(prefix.size())));
      }
    }
  }
  return runtime.empty() ? framework : runtime;
}

std::optional<std::string> minDriverForCuda(std::string_view cuda) {
  std::string mm = majorMinor(cuda);
  for (const auto& row : kTable) {
    if (mm == row.cuda) return std::string(row.minDriver);
  }
  return std::nullopt;
}

const std::vector<CudaDriverRow>& cudaDriverTable() { return kTable; }

bool driverSatisfies(const std::string& nodeDriver, const std::string& minDriver) {
  if (minDriver.empty()) return true;
  auto have = components(nodeDriver);
  auto want = components(minDriver);
  if (!have || !want) return false;
  size_t n = std::max(have->size(), want->size());
  have->resize(n, 0);
  want->resize(n, 0);
  return *have >= *want;
}

std::optional<std::string> driverFromGfdLabels(const std::map<std::string, std::string>& labels) {
  auto get = [&](const char* key) -> std::string {
    auto it = labels.find(key);
    return it == labels.end() ? "" : it->second;
  };
  std::string major = get(kGfdDriverMajorLabel);
  std::string minor = get(kGfdDriverMinorLabel);
  std::string rev = get(kGfdDriverRevLabel);
  if (!components(major) || !components(minor) || major.find('.') != std::string::npos ||
      minor.find('.') != std::string::npos) {
    return std::nullopt;
  }
  std::string v = major + "." + minor;
  if (!rev.empty()) {
    if (!components(rev) || rev.find('.') != std::string::npos) return std::nullopt;
    v += "." + rev;
  }
  return v;
}

}  // namespace lockstep::closure
