// What verify-host reads from a node: the NVIDIA driver, the visible GPUs, the CUDA
// runtime and NCCL libraries, and the InfiniBand devices NCCL would use.
//
// collectHostFacts() reads them through a Tree under a root ("/" on a node, a fixture
// directory in tests): ROOT/proc/driver/nvidia/version and .../gpus/*/information,
// ROOT/dev/nvidia[0-9]*, ROOT/dev/infiniband/uverbs*, ROOT/sys/class/infiniband/*/ports/*/state,
// and libcudart.so* / libnccl.so* in the library directories given. nvidia-smi output,
// when the caller ran it, is parsed by parseNvidiaSmi(). Thread-safety: pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "verify/tree.h"

namespace lockstep::verify {

struct Gpu {
  std::string busId;  // "0000:17:00.0"
  std::string model;  // "NVIDIA H100 80GB HBM3", "" when unknown
};

struct SharedLibrary {
  std::string kind;       // "cudart" or "nccl"
  std::string path;       // where it was found
  std::string version;    // from the file name ("12.8.90", "2.21.5"), else the soname's ("12")
  std::string cudaMajor;  // the CUDA major the library is for ("12"): cudart's own major,
                          // NCCL's "+cudaNN.N" build string; "" when unknown
};

struct IbPort {
  std::string state;  // "ACTIVE", "DOWN", ... ("" when the state file is unreadable)
};

struct IbDevice {
  std::map<std::string, IbPort> ports;  // port number -> state
};

struct HostFacts {
  std::string root;                     // "/" or the fixture root, for messages
  std::string driverVersion;            // "570.86.15", "" when no driver was found
  std::string driverSource;             // the file (or "nvidia-smi") it came from
  std::vector<Gpu> gpus;                // GPUs the driver reports
  std::vector<std::string> gpuDevices;  // visible /dev/nvidiaN nodes
  bool nvidiaSmiUsed = false;
  std::vector<SharedLibrary> libraries;       // cudart and NCCL found, in search order
  std::vector<std::string> uverbs;            // ROOT/dev/infiniband/uverbs* names
  std::map<std::string, IbDevice> ibDevices;  // ROOT/sys/class/infiniband/<name>
  size_t visibleGpuCount() const;
};

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Wed ..." (proprietary and
// open kernel modules) -> "570.86.15"; InvalidArgument naming `where` otherwise.
StatusOr<std::string> parseDriverVersionFile(std::string_view text, const std::string& where);

// `nvidia-smi --query-gpu=driver_version,pci.bus_id,name --format=csv,noheader` output.
StatusOr<HostFacts> parseNvidiaSmi(std::string_view text);

// "libcudart.so.12.8.90" -> {"cudart", version "12.8.90"}; nullopt for other names.
std::optional<SharedLibrary> classifyLibrary(const std::string& fileName);

// "NCCL version 2.21.5+cuda12.4" (the build string inside libnccl) -> "12"; "" otherwise.
std::string ncclCudaMajorFromBuildString(std::string_view text);

struct HostProbe {
  std::string root = "/";
  std::vector<std::string> libraryDirs;  // absolute, searched under root
};

// Reads the facts a probe names. A missing file is a fact (no driver, no devices),
// never an error; an unreadable or malformed driver version file is an error.
StatusOr<HostFacts> collectHostFacts(const Tree& tree, const HostProbe& probe);

// The library directories searched by default, in order: those of the environment
// (PREFIX/lib and the pip wheels' nvidia/*/lib), then the system's.
std::vector<std::string> defaultLibraryDirs(const Tree& tree, const std::string& root,
                                            const std::string& prefix);

}  // namespace lockstep::verify
