// CUDA detection, the driver table and the driver comparison helpers.
#include <gtest/gtest.h>

#include "closure/cuda.h"

namespace lockstep::closure {
namespace {

TEST(Cuda, TableValuesFromNvidiaReleaseNotes) {
  EXPECT_EQ(minDriverForCuda("12.4"), "550.54.14");
  EXPECT_EQ(minDriverForCuda("12.8"), "570.26");
  EXPECT_EQ(minDriverForCuda("12.1"), "530.30.02");
  EXPECT_EQ(minDriverForCuda("11.8"), "520.61.05");
  EXPECT_EQ(minDriverForCuda("12.1.105"), "530.30.02");
  EXPECT_EQ(minDriverForCuda("12.7"), std::nullopt);  // there is no 12.7 release
  EXPECT_EQ(minDriverForCuda("nonsense"), std::nullopt);
  // The table is ordered and its drivers grow with the toolkit.
  const auto& t = cudaDriverTable();
  for (size_t i = 1; i < t.size(); ++i) {
    EXPECT_TRUE(driverSatisfies(t[i].minDriver, t[i - 1].minDriver)) << t[i].cuda;
  }
}

TEST(Cuda, DetectionSources) {
  auto detect = [](std::vector<Package> ps) { return detectCuda(ps); };
  EXPECT_EQ(detect({{"pypi", "nvidia-cuda-runtime-cu12", "12.1.105", {}}}), "12.1");
  EXPECT_EQ(detect({{"pypi", "nvidia-cuda-runtime", "13.0.96", {}}}), "13.0");
  EXPECT_EQ(detect({{"pypi", "torch", "2.3.1+cu121", {}}}), "12.1");
  EXPECT_EQ(detect({{"pypi", "torch", "2.1.0+cu118", {}}}), "11.8");
  EXPECT_EQ(detect({{"pypi", "torch", "2.14.0+cpu", {}}}), "");
  // The runtime package wins over the framework's local version.
  EXPECT_EQ(detect({{"pypi", "torch", "2.5.1+cu124", {}},
                    {"pypi", "nvidia-cuda-runtime-cu12", "12.4.127", {}}}),
            "12.4");
  EXPECT_EQ(detect({{"conda", "cuda-version", "12.6", {}}}), "12.6");
  EXPECT_EQ(detect({{"conda", "pytorch-cuda", "11.8", {}}}), "11.8");
  EXPECT_EQ(detect({{"conda", "cuda-cudart", "12.6.77", {}}}), "12.6");
  EXPECT_EQ(detect({{"nix", "cuda_cudart-12.4.127", "", {}}}), "12.4");
  // Several runtimes: the highest, which the driver must support.
  EXPECT_EQ(detect({{"pypi", "nvidia-cuda-runtime-cu11", "11.8.89", {}},
                    {"pypi", "nvidia-cuda-runtime-cu12", "12.8.57", {}}}),
            "12.8");
  EXPECT_EQ(detect({{"pypi", "numpy", "2.0", {}}}), "");
}

TEST(Driver, DottedComparison) {
  EXPECT_TRUE(driverSatisfies("570.86.15", "570.26"));
  EXPECT_TRUE(driverSatisfies("570.26", "570.26.0"));
  EXPECT_TRUE(driverSatisfies("550.54.14", "550.54.14"));
  EXPECT_FALSE(driverSatisfies("550.54.13", "550.54.14"));
  EXPECT_FALSE(driverSatisfies("535.104.05", "570.26"));
  EXPECT_TRUE(driverSatisfies("535.104.05", "530.30.02"));  // 104 > 30 numerically, not as text
  EXPECT_TRUE(driverSatisfies("1000.1", "999.99.99"));
  EXPECT_TRUE(driverSatisfies("anything", ""));
  EXPECT_FALSE(driverSatisfies("", "530.30.02"));
  EXPECT_FALSE(driverSatisfies("570.x", "530.30.02"));
}

TEST(Driver, FromGfdLabels) {
  EXPECT_EQ(driverFromGfdLabels({{"nvidia.com/cuda.driver.major", "550"},
                                 {"nvidia.com/cuda.driver.minor", "54"},
                                 {"nvidia.com/cuda.driver.rev", "14"}}),
            "550.54.14");
  EXPECT_EQ(driverFromGfdLabels({{"nvidia.com/cuda.driver.major", "570"},
                                 {"nvidia.com/cuda.driver.minor", "26"},
                                 {"nvidia.com/cuda.driver.rev", ""}}),
            "570.26");
  EXPECT_EQ(driverFromGfdLabels({{"nvidia.com/cuda.driver.major", "530"},
                                 {"nvidia.com/cuda.driver.minor", "30"},
                                 {"nvidia.com/cuda.driver.rev", "02"}}),
            "530.30.02");
  EXPECT_EQ(driverFromGfdLabels({{"nvidia.com/cuda.driver.major", "530"}}), std::nullopt);
  EXPECT_EQ(driverFromGfdLabels(
                {{"nvidia.com/cuda.driver.major", "x"}, {"nvidia.com/cuda.driver.minor", "1"}}),
            std::nullopt);
  // A 12.8 lock runs on the recent driver only; a 12.1 lock on both.
  const std::string recent = *driverFromGfdLabels({{"nvidia.com/cuda.driver.major", "570"},
                                                   {"nvidia.com/cuda.driver.minor", "124"},
                                                   {"nvidia.com/cuda.driver.rev", "06"}});
  const std::string older = *driverFromGfdLabels({{"nvidia.com/cuda.driver.major", "535"},
                                                  {"nvidia.com/cuda.driver.minor", "104"},
                                                  {"nvidia.com/cuda.driver.rev", "05"}});
  EXPECT_TRUE(driverSatisfies(recent, *minDriverForCuda("12.8")));
  EXPECT_FALSE(driverSatisfies(older, *minDriverForCuda("12.8")));
  EXPECT_TRUE(driverSatisfies(recent, *minDriverForCuda("12.1")));
  EXPECT_TRUE(driverSatisfies(older, *minDriverForCuda("12.1")));
}

}  // namespace
}  // namespace lockstep::closure
