// checkHost: a node's facts against a runtime's requirements.
//
// The minimum driver comes from the closure's CUDA release through the same table
// the operator counts compatible nodes with (closure/cuda.h: minDriverForCuda,
// driverSatisfies). A CPU-only closure needs no driver. Pure: no I/O.
// Thread-safety: pure functions over values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "verify/difference.h"
#include "verify/host_facts.h"

namespace lockstep::verify {

struct HostRequirement {
  std::string cuda;         // "12.8" from the closure (runtime.json `cuda`); "" for CPU-only
  std::optional<int> gpus;  // at least this many visible GPUs (--gpus)
  bool rdma = false;        // the runtime declares RDMA (runtime.json `rdma`, --rdma)
  std::string ncclIbHca;    // NCCL_IB_HCA as the job will see it ("" when unset)
};

struct HostReport {
  std::vector<Difference> differences;
  std::vector<std::string> notes;  // facts worth a line ("CUDA 12.7 is not in the table")
  std::string minDriver;           // the table's minimum for `cuda`, "" when none
  bool match() const { return differences.empty(); }
};

// One NCCL_IB_HCA entry: "mlx5_0", "mlx5_0:1"; `exclude` for a "^" list, `exact` for "=".
struct HcaSelector {
  std::string device;
  std::string port;  // "" for every port
};
struct HcaList {
  bool exclude = false;
  bool exact = false;
  std::vector<HcaSelector> devices;
};
HcaList parseNcclIbHca(const std::string& value);

HostReport checkHost(const HostRequirement& want, const HostFacts& facts);

}  // namespace lockstep::verify
