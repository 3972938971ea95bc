// CUDA requirement of a closure and NVIDIA driver compatibility helpers.
//
// detectCuda() reads the CUDA runtime a lock pins (PyPI nvidia-cuda-runtime[-cuNN],
// cuda-toolkit; conda cuda-version / cuda-cudart / cudatoolkit / cuda-runtime /
// pytorch-cuda; Nix cuda_cudart / cudatoolkit store names; else a torch local
// version such as +cu121). minDriverForCuda() maps a "major.minor" release to the
// minimum Linux x86_64 driver from NVIDIA's published table (see cuda.cc).
// The RuntimeEnv controller counts compatible nodes with driverFromGfdLabels() +
// driverSatisfies(). Thread-safety: pure functions over values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "closure/closure.h"

namespace lockstep::closure {

// "12.4", or "" when the closure pins no CUDA runtime. When several CUDA runtimes
// are pinned (e.g. a universal lock with cu12 and cu13 wheels) the highest wins:
// the node driver must support every runtime the lock may install.
std::string detectCuda(const std::vector<Package>& packages);

// Minimum Linux x86_64 driver for a CUDA toolkit release ("12.4" or "12.4.1" ->
// "550.54.14"); nullopt when the release is not in the table.
std::optional<std::string> minDriverForCuda(std::string_view cuda);

// One row of the table, for docs and tests.
struct CudaDriverRow {
  const char* cuda;       // "12.4"
  const char* minDriver;  // "550.54.14"
};
const std::vector<CudaDriverRow>& cudaDriverTable();

// True when dotted version `nodeDriver` >= `minDriver` (numeric per component,
// missing components count as 0: "570.26" == "570.26.0"). An empty minDriver is
// satisfied by anything; an unparsable nodeDriver satisfies nothing.
bool driverSatisfies(const std::string& nodeDriver, const std::string& minDriver);

// The GPU feature discovery labels the driver version is read from.
inline constexpr const char* kGfdDriverMajorLabel = "nvidia.com/cuda.driver.major";
inline constexpr const char* kGfdDriverMinorLabel = "nvidia.com/cuda.driver.minor";
inline constexpr const char* kGfdDriverRevLabel = "nvidia.com/cuda.driver.rev";

// Builds "major.minor.rev" from GPU feature discovery labels
// nvidia.com/cuda.driver.major / .minor / .rev (rev may be absent or empty);
// nullopt when major or minor is missing or not numeric.
std::optional<std::string> driverFromGfdLabels(const std::map<std::string, std::string>& labels);

}  // namespace lockstep::closure
