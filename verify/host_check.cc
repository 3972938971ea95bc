#include "verify/host_check.h"

#include "closure/cuda.h"

namespace lockstep::verify {
namespace {

std::string cudaMajorOf(const std::string& cuda) { return cuda.substr(0, cuda.find('.')); }

std::string joinNames(const std::map<std::string, IbDevice>& devices) {
  std::string out;
  for (const auto& [name, dev] : devices) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

Difference hostDiff(std::string check, std::string expected, std::string found,
                    std::string where = "") {
  return {DiffKind::kHost,     "host",           std::move(check),
          std::move(expected), std::move(found), std::move(where)};
}

bool matches(const HcaSelector& sel, const std::string& device, bool exact) {
  return exact ? device == sel.device : device.rfind(sel.device, 0) == 0;
}

void checkRdma(const HostRequirement& want, const HostFacts& facts, HostReport& report) {
  const std::string devDir = facts.root == "/" ? "/dev/infiniband" : facts.root + "/dev/infiniband";
  const std::string sysDir =
      facts.root == "/" ? "/sys/class/infiniband" : facts.root + "/sys/class/infiniband";
  if (want.rdma) {
    if (facts.uverbs.empty()) {
      report.differences.push_back(
          hostDiff("rdma", "/dev/infiniband/uverbs* visible (RDMA declared)", "none", devDir));
    }
    if (facts.ibDevices.empty()) {
      report.differences.push_back(
          hostDiff("rdma", "an InfiniBand/RoCE device (RDMA declared)", "none", sysDir));
    }
  }
  if (want.ncclIbHca.empty()) {
    if (want.rdma && !facts.ibDevices.empty()) {
      bool active = false;
      for (const auto& [name, dev] : facts.ibDevices) {
        for (const auto& [num, port] : dev.ports) active = active || port.state == "ACTIVE";
      }
      if (!active) {
        report.differences.push_back(hostDiff(
            "rdma", "an ACTIVE port", "no ACTIVE port on " + joinNames(facts.ibDevices), sysDir));
      }
    }
    return;
  }
  HcaList list = parseNcclIbHca(want.ncclIbHca);
  if (list.exclude) {
    report.notes.push_back("NCCL_IB_HCA=" + want.ncclIbHca + " excludes devices; not checked");
    return;
  }
  for (const HcaSelector& sel : list.devices) {
    const std::string label = sel.device + (sel.port.empty() ? "" : ":" + sel.port);
    bool found = false;
    for (const auto& [name, dev] : facts.ibDevices) {
      if (!matches(sel, name, list.exact)) continue;
      found = true;
      if (sel.port.empty()) continue;
      auto p = dev.ports.find(sel.port);
      if (p == dev.ports.end()) {
        report.differences.push_back(
            hostDiff("nccl-ib-hca", "NCCL_IB_HCA " + label + ": port " + sel.port,
                     "no port " + sel.port + " on " + name, sysDir + "/" + name + "/ports"));
      } else if (!p->second.state.empty() && p->second.state != "ACTIVE") {
        report.differences.push_back(
            hostDiff("nccl-ib-hca", "NCCL_IB_HCA " + label + ": ACTIVE", p->second.state,
                     sysDir + "/" + name + "/ports/" + sel.port + "/state"));
      }
    }
    if (!found) {
      report.differences.push_back(hostDiff("nccl-ib-hca", "NCCL_IB_HCA device " + label,
                                            "absent (present: " + joinNames(facts.ibDevices) + ")",
                                            sysDir));
    }
  }
}

}  // namespace

HcaList parseNcclIbHca(const std::string& value) {
  HcaList out;
  std::string_view v = value;
  if (!v.empty() && v.front() == '^') {
    out.exclude = true;
    v.remove_prefix(1);
  }
  if (!v.empty() && v.front() == '=') {
    out.exact = true;
    v.remove_prefix(1);
  }
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t comma = v.find(',', pos);
    std::string_view item =
        v.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (!item.empty()) {
      size_t colon = item.find(':');
      out.devices.push_back(
          {std::string(item.substr(0, colon)),
           colon == std::string_view::npos ? "" : std::string(item.substr(colon + 1))});
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

HostReport checkHost(const HostRequirement& want, const HostFacts& facts) {
  HostReport report;
  const size_t visible = facts.visibleGpuCount();
  if (!want.cuda.empty()) {
    if (auto min = closure::minDriverForCuda(want.cuda)) report.minDriver = *min;
    const std::string need = report.minDriver.empty()
                                 ? "an NVIDIA driver (CUDA " + want.cuda + ")"
                                 : ">= " + report.minDriver + " (CUDA " + want.cuda + ")";
    if (report.minDriver.empty()) {
      report.notes.push_back("CUDA " + want.cuda +
                             " is not in the driver table; the driver version is not checked");
    }
    if (facts.driverVersion.empty()) {
      const std::string where = facts.root == "/" ? "/proc/driver/nvidia/version"
                                                  : facts.root + "/proc/driver/nvidia/version";
      report.differences.push_back(hostDiff("driver", need, "no NVIDIA driver", where));
    } else if (!closure::driverSatisfies(facts.driverVersion, report.minDriver)) {
      report.differences.push_back(
          hostDiff("driver", need, facts.driverVersion, facts.driverSource));
    } else if (visible == 0) {
      report.differences.push_back(
          hostDiff("gpus", "at least 1 visible GPU (CUDA " + want.cuda + ")", "none visible",
                   facts.root == "/" ? "/dev" : facts.root + "/dev"));
    }
    const std::string major = cudaMajorOf(want.cuda);
    for (const SharedLibrary& lib : facts.libraries) {
      if (lib.cudaMajor.empty() || lib.cudaMajor == major) continue;
      report.differences.push_back(
          hostDiff(lib.kind == "nccl" ? "nccl" : "cuda-runtime",
                   "built for CUDA " + major + " (CUDA " + want.cuda + ")",
                   (lib.kind == "nccl" ? "NCCL " + lib.version + " for CUDA " : "libcudart ") +
                       lib.cudaMajor,
                   lib.path));
    }
  }
  // NCCL and the CUDA runtime of one environment must agree on the CUDA major.
  std::string cudartMajor;
  for (const SharedLibrary& lib : facts.libraries) {
    if (lib.kind == "cudart" && !lib.cudaMajor.empty() && cudartMajor.empty())
      cudartMajor = lib.cudaMajor;
  }
  if (want.cuda.empty() && !cudartMajor.empty()) {
    for (const SharedLibrary& lib : facts.libraries) {
      if (lib.kind == "nccl" && !lib.cudaMajor.empty() && lib.cudaMajor != cudartMajor) {
        report.differences.push_back(
            hostDiff("nccl", "built for CUDA " + cudartMajor + " (libcudart)",
                     "NCCL " + lib.version + " for CUDA " + lib.cudaMajor, lib.path));
      }
    }
  }
  if (want.gpus && static_cast<int>(visible) < *want.gpus) {
    report.differences.push_back(hostDiff(
        "gpus", "at least " + std::to_string(*want.gpus) + " visible",
        std::to_string(visible) + " visible",
        facts.nvidiaSmiUsed ? "nvidia-smi" : (facts.root == "/" ? "/dev" : facts.root + "/dev")));
  }
  checkRdma(want, facts, report);
  return report;
}

}  // namespace lockstep::verify
