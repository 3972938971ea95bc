// checkHost and the host-fact parsers/collector over an in-memory tree.
#include "verify/host_check.h"

#include <gtest/gtest.h>

#include "tests/verify/fake_tree.h"
#include "verify/host_facts.h"

namespace lockstep::verify {
namespace {

using testing::FakeTree;

const char* kProprietary =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Wed Jan 22 23:12:03 UTC 2025\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
const char* kOpen =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release Build  "
    "(dvs-builder@U16-T02-35-3)  Sat Aug 19 01:13:58 UTC 2023\n";

TEST(ParseDriverVersionFile, ProprietaryAndOpenKernelModules) {
  EXPECT_EQ(*parseDriverVersionFile(kProprietary, "v"), "570.86.15");
  EXPECT_EQ(*parseDriverVersionFile(kOpen, "v"), "535.104.05");
  auto bad = parseDriverVersionFile("hello\n", "/r/proc/driver/nvidia/version");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().message(),
            "/r/proc/driver/nvidia/version: line 1: expected \"NVRM version: ...\"");
}

TEST(ParseNvidiaSmi, DriverAndGpus) {
  auto f = parseNvidiaSmi(
      "570.86.15, 00000000:17:00.0, NVIDIA H100 80GB HBM3\n"
      "570.86.15, 00000000:2A:00.0, NVIDIA H100 80GB HBM3\n");
  ASSERT_TRUE(f.isOk()) << f.status().message();
  EXPECT_EQ(f->driverVersion, "570.86.15");
  EXPECT_EQ(f->visibleGpuCount(), 2u);
  EXPECT_EQ(f->gpus[1].model, "NVIDIA H100 80GB HBM3");
  EXPECT_FALSE(parseNvidiaSmi("NVIDIA-SMI has failed\n").isOk());
}

TEST(ClassifyLibrary, SonamesAndVersions) {
  auto c = classifyLibrary("libcudart.so.12.8.90");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, "cudart");
  EXPECT_EQ(c->version, "12.8.90");
  EXPECT_EQ(c->cudaMajor, "12");
  auto n = classifyLibrary("libnccl.so.2.21.5");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->version, "2.21.5");
  EXPECT_EQ(n->cudaMajor, "");
  EXPECT_FALSE(classifyLibrary("libcudart_static.a"));
  EXPECT_FALSE(classifyLibrary("libnccl.so-x"));
  EXPECT_EQ(ncclCudaMajorFromBuildString("+cuda12.4\0"), "12");
}

TEST(ParseNcclIbHca, PrefixExactExcludeAndPorts) {
  HcaList l = parseNcclIbHca("mlx5_0:1,mlx5_1");
  EXPECT_FALSE(l.exclude);
  ASSERT_EQ(l.devices.size(), 2u);
  EXPECT_EQ(l.devices[0].device, "mlx5_0");
  EXPECT_EQ(l.devices[0].port, "1");
  EXPECT_EQ(l.devices[1].port, "");
  EXPECT_TRUE(parseNcclIbHca("=mlx5_0").exact);
  EXPECT_TRUE(parseNcclIbHca("^mlx5_3").exclude);
}

// The requirement of a closure pinning `release` ("" for CPU-only), nothing else declared.
HostRequirement cuda(const std::string& release) {
  HostRequirement want;
  want.cuda = release;
  return want;
}

// A node under /r: driver, GPUs, libraries, InfiniBand devices.
struct Node {
  FakeTree tree;
  Node& driver(const std::string& version) {
    tree.file("/r/proc/driver/nvidia/version",
              "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + version + "  Wed Jan 1 UTC\n");
    return *this;
  }
  Node& gpus(int n) {
    for (int i = 0; i < n; ++i) {
      tree.file("/r/dev/nvidia" + std::to_string(i), "");
      tree.file("/r/proc/driver/nvidia/gpus/0000:1" + std::to_string(i) + ":00.0/information",
                "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ: 1\n");
    }
    return *this;
  }
  Node& ib(const std::string& dev, const std::string& state = "4: ACTIVE") {
    tree.file("/r/dev/infiniband/uverbs" + std::to_string(ibCount_++), "");
    tree.file("/r/sys/class/infiniband/" + dev + "/ports/1/state", state + "\n");
    return *this;
  }
  Node& lib(const std::string& dir, const std::string& name, const std::string& content = "") {
    tree.file("/r" + dir + "/" + name, content);
    return *this;
  }
  HostFacts facts(std::vector<std::string> libDirs = {"/usr/lib/x86_64-linux-gnu"}) const {
    auto f = collectHostFacts(tree, {"/r", std::move(libDirs)});
    EXPECT_TRUE(f.isOk()) << f.status().message();
    return f.isOk() ? *f : HostFacts{};
  }

 private:
  int ibCount_ = 0;
};

TEST(CollectHostFacts, ReadsDriverGpusLibrariesAndDevices) {
  Node n;
  n.driver("570.86.15").gpus(2).ib("mlx5_0").lib("/usr/lib/x86_64-linux-gnu", "libnccl.so.2");
  n.lib("/usr/lib/x86_64-linux-gnu", "libnccl.so.2.21.5",
        std::string("\x7f"
                    "ELF...NCCL version 2.21.5+cuda12.4\0",
                    38));
  HostFacts f = n.facts();
  EXPECT_EQ(f.driverVersion, "570.86.15");
  EXPECT_EQ(f.driverSource, "/r/proc/driver/nvidia/version");
  EXPECT_EQ(f.visibleGpuCount(), 2u);
  EXPECT_EQ(f.gpus[0].model, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(f.libraries.size(), 1u);
  EXPECT_EQ(f.libraries[0].version, "2.21.5");
  EXPECT_EQ(f.libraries[0].cudaMajor, "12");
  EXPECT_EQ(f.uverbs, std::vector<std::string>{"uverbs0"});
  EXPECT_EQ(f.ibDevices.at("mlx5_0").ports.at("1").state, "ACTIVE");
}

TEST(CollectHostFacts, AMalformedDriverFileIsAnError) {
  FakeTree t;
  t.file("/r/proc/driver/nvidia/version", "garbage\n");
  auto f = collectHostFacts(t, {"/r", {}});
  ASSERT_FALSE(f.isOk());
  EXPECT_NE(f.status().message().find("/r/proc/driver/nvidia/version: line 1"), std::string::npos);
}

TEST(CheckHost, DriverAgainstTheOperatorsTable) {
  Node ok;
  ok.driver("570.86.15").gpus(1);
  HostReport r = checkHost(cuda("12.8"), ok.facts());
  EXPECT_TRUE(r.match()) << describe(r.differences.front());
  EXPECT_EQ(r.minDriver, "570.26");

  Node old;
  old.driver("535.104.05").gpus(1);
  HostReport o = checkHost(cuda("12.8"), old.facts());
  ASSERT_EQ(o.differences.size(), 1u);
  EXPECT_EQ(describe(o.differences[0]),
            "host driver: expected >= 570.26 (CUDA 12.8), found 535.104.05 "
            "(/r/proc/driver/nvidia/version)");
}

TEST(CheckHost, NoDriverFailsACudaClosureNotACpuOnlyOne) {
  Node none;
  HostReport r = checkHost(cuda("12.8"), none.facts());
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_EQ(r.differences[0].package, "driver");
  EXPECT_EQ(r.differences[0].found, "no NVIDIA driver");
  EXPECT_TRUE(checkHost(cuda(""), none.facts()).match());
}

TEST(CheckHost, ACudaClosureNeedsAVisibleGpu) {
  Node n;
  n.driver("570.86.15");
  HostReport r = checkHost(cuda("12.8"), n.facts());
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_EQ(r.differences[0].package, "gpus");
}

TEST(CheckHost, GpuCount) {
  Node n;
  n.driver("570.86.15").gpus(4);
  HostRequirement want = cuda("12.8");
  want.gpus = 8;
  HostReport r = checkHost(want, n.facts());
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_EQ(describe(r.differences[0]),
            "host gpus: expected at least 8 visible, found 4 visible (/r/dev)");
}

TEST(CheckHost, CudaRuntimeAndNcclMajorsMustFitTheClosure) {
  Node n;
  n.driver("570.86.15").gpus(1);
  n.lib("/env/lib", "libcudart.so.11.8.89");
  n.lib("/env/lib", "libnccl.so.2.18.3", "NCCL version 2.18.3+cuda11.0");
  HostReport r = checkHost(cuda("12.8"), n.facts({"/env/lib"}));
  ASSERT_EQ(r.differences.size(), 2u);
  EXPECT_EQ(r.differences[0].package, "cuda-runtime");
  EXPECT_EQ(r.differences[0].found, "libcudart 11");
  EXPECT_EQ(r.differences[1].package, "nccl");
  EXPECT_EQ(r.differences[1].found, "NCCL 2.18.3 for CUDA 11");
}

TEST(CheckHost, NcclBuiltForAnotherCudaThanTheRuntimeWithoutAClosure) {
  Node n;
  n.lib("/env/lib", "libcudart.so.12");
  n.lib("/env/lib", "libnccl.so.2", "NCCL version 2.18.3+cuda11.0");
  HostReport r = checkHost(cuda(""), n.facts({"/env/lib"}));
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_EQ(r.differences[0].expected, "built for CUDA 12 (libcudart)");
}

TEST(CheckHost, RdmaDeclaredNeedsUverbsAndDevices) {
  Node n;
  HostRequirement want;
  want.rdma = true;
  HostReport r = checkHost(want, n.facts());
  ASSERT_EQ(r.differences.size(), 2u);
  EXPECT_EQ(describe(r.differences[0]),
            "host rdma: expected /dev/infiniband/uverbs* visible (RDMA declared), found none "
            "(/r/dev/infiniband)");
  Node ib;
  ib.ib("mlx5_0");
  EXPECT_TRUE(checkHost(want, ib.facts()).match());
  Node down;
  down.ib("mlx5_0", "1: DOWN");
  HostReport d = checkHost(want, down.facts());
  ASSERT_EQ(d.differences.size(), 1u);
  EXPECT_EQ(d.differences[0].found, "no ACTIVE port on mlx5_0");
}

TEST(CheckHost, NcclIbHcaNamingAMissingDeviceOrPortFails) {
  Node n;
  n.ib("mlx5_0").ib("mlx5_1", "1: DOWN");
  HostRequirement want;
  want.rdma = true;
  want.ncclIbHca = "mlx5_0:1,mlx5_4";
  HostReport r = checkHost(want, n.facts());
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_EQ(describe(r.differences[0]),
            "host nccl-ib-hca: expected NCCL_IB_HCA device mlx5_4, found absent (present: mlx5_0, "
            "mlx5_1) (/r/sys/class/infiniband)");
  want.ncclIbHca = "mlx5_1:1";
  HostReport down = checkHost(want, n.facts());
  ASSERT_EQ(down.differences.size(), 1u);
  EXPECT_EQ(down.differences[0].found, "DOWN");
  want.ncclIbHca = "mlx5";  // a prefix: every mlx5_* device
  EXPECT_TRUE(checkHost(want, n.facts()).match());
  want.ncclIbHca = "=mlx5";  // exact: no device is called mlx5
  EXPECT_FALSE(checkHost(want, n.facts()).match());
}

}  // namespace
}  // namespace lockstep::verify
