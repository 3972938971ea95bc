// `lockstep verify-env` on a conda prefix assembled from a real conda-lock, and
// `lockstep verify-host` on fixture roots: the binary end to end (exit code and report).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;

// A fixture shared with the closure tests; provenance in
// tests/closure/testdata/lockfiles/MANIFEST.tsv (01-ai/Yi conda-lock.yml: conda-forge pytorch 2.1.0
// for CUDA 11.8, 187 conda + 8 pip entries).
const std::string kCondaLock =
    std::string(LOCKSTEP_FIXTURES_DIR) + "/conda-lock/pytorch-cu118-01ai-yi.conda-lock.yml";

struct CliResult {
  int exitCode = -1;
  std::string output;  // stdout and stderr
};

// Runs the binary; `env` is put in front of it ("NCCL_IB_HCA=mlx5_0"). A NCCL_IB_HCA of the
// machine running the tests is not passed on: the fixture roots have their own devices.
CliResult lockstep(const std::string& args, const std::string& env = "") {
  CliResult r;
  const std::string cmd = "env -u NCCL_IB_HCA " + env + " '" + LOCKSTEP_CLI + "' " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = ::pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

void writeFile(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "lockstep-verify-XXXXXX").string();
    path_ = ::mkdtemp(templ.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A conda prefix as conda/pixi leave it: conda-meta/<name>-<version>-<build>.json records
// (name, version, build, channel, fn, url, md5, sha256, depends, files) for the lock's
// conda entries, pip dist-infos for its pip entries, and a dist-info conda installed.
class CondaPrefix {
 public:
  explicit CondaPrefix(fs::path prefix) : prefix_(std::move(prefix)) {
    YAML::Node lock = YAML::LoadFile(kCondaLock);
    for (const auto& pkg : lock["package"]) {
      if (pkg["platform"].as<std::string>() != "linux-64") continue;
      const std::string name = pkg["name"].as<std::string>();
      const std::string version = pkg["version"].as<std::string>();
      const std::string url = pkg["url"].as<std::string>();
      const std::string sha = pkg["hash"]["sha256"].as<std::string>();
      if (pkg["manager"].as<std::string>() == "pip") {
        pipDist(name, version);
        continue;
      }
      std::string fn = url.substr(url.rfind('/') + 1);
      std::string stem = fn.substr(0, fn.size() - (fn.ends_with(".conda") ? 6 : 8));
      nlohmann::ordered_json r;
      r["build"] = stem.substr(stem.rfind('-') + 1);
      r["build_number"] = 0;
      r["channel"] = url.substr(0, url.rfind('/', url.rfind('/') - 1));
      r["depends"] = nlohmann::json::array();
      r["files"] = nlohmann::json::array();
      if (name == "numpy") {
        // conda's own Python packages install a dist-info too; it is conda's, not pip's.
        const std::string di = "lib/python3.11/site-packages/numpy-" + version + ".dist-info";
        r["files"].push_back(di + "/METADATA");
        writeFile(prefix_ / di / "METADATA",
                  "Metadata-Version: 2.1\nName: numpy\nVersion: " + version + "\n\n");
        writeFile(prefix_ / di / "INSTALLER", "conda\n");
      }
      r["fn"] = fn;
      r["md5"] = pkg["hash"]["md5"].as<std::string>();
      r["name"] = name;
      r["requested_spec"] = "";
      r["sha256"] = sha;
      r["size"] = 0;
      r["subdir"] = "linux-64";
      r["url"] = url;
      r["version"] = version;
      const fs::path path = prefix_ / "conda-meta" / (stem + ".json");
      writeFile(path, r.dump(1));
      records_[name] = path;
    }
  }
  void pipDist(const std::string& name, const std::string& version) {
    std::string dir = name;
    for (char& c : dir) c = c == '-' ? '_' : c;
    const fs::path di =
        prefix_ / "lib/python3.11/site-packages" / (dir + "-" + version + ".dist-info");
    writeFile(di / "METADATA",
              "Metadata-Version: 2.1\nName: " + dir + "\nVersion: " + version + "\n\n");
    writeFile(di / "INSTALLER", "pip\n");
  }
  // Rewrites one field of a package's record.
  void setField(const std::string& name, const std::string& field, const std::string& value) {
    std::ifstream in(records_.at(name));
    nlohmann::ordered_json r = nlohmann::ordered_json::parse(in);
    r[field] = value;
    writeFile(records_.at(name), r.dump(1));
  }
  const fs::path& record(const std::string& name) const { return records_.at(name); }
  size_t recordCount() const { return records_.size(); }

 private:
  fs::path prefix_;
  std::map<std::string, fs::path> records_;
};

TEST(VerifyEnvCondaPrefix, ARealLocksPrefixMatches) {
  TempDir dir;
  CondaPrefix prefix(dir.path());
  ASSERT_EQ(prefix.recordCount(), 187u);
  CliResult r =
      lockstep("verify-env --lock '" + kCondaLock + "' --prefix '" + dir.path().string() + "'");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("verify-env: OK: " + dir.path().string() + " matches sha256:"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("(187 conda, 8 PyPI, 0 Nix entries checked)"), std::string::npos)
      << r.output;
}

TEST(VerifyEnvCondaPrefix, AnArchiveWithAnotherSha256IsNamed) {
  TempDir dir;
  CondaPrefix prefix(dir.path());
  const std::string other(64, 'e');
  prefix.setField("cuda-cudart", "sha256", other);
  CliResult r =
      lockstep("verify-env --lock '" + kCondaLock + "' --prefix '" + dir.path().string() + "'");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("in 1 place(s)"), std::string::npos) << r.output;
  EXPECT_NE(
      r.output.find("  conda cuda-cudart: digest: expected "
                    "sha256:f8cf96ae45acf1bef5ff0be3e849d87e3543144ec8c0075db235f4933113a3b0, "
                    "found sha256:" +
                    other + " (" + prefix.record("cuda-cudart").string() + ")"),
      std::string::npos)
      << r.output;

  CliResult j = lockstep("verify-env --json --lock '" + kCondaLock + "' --prefix '" +
                         dir.path().string() + "'");
  EXPECT_EQ(j.exitCode, 1) << j.output;
  auto doc = nlohmann::json::parse(j.output);
  EXPECT_EQ(doc["result"], "mismatch");
  ASSERT_EQ(doc["differences"].size(), 1u);
  EXPECT_EQ(doc["differences"][0]["kind"], "digest");
  EXPECT_EQ(doc["differences"][0]["package"], "cuda-cudart");
  EXPECT_EQ(doc["differences"][0]["found"], "sha256:" + other);
}

TEST(VerifyEnvCondaPrefix, UnlockedAndMissingCondaPackagesAreNamed) {
  TempDir dir;
  CondaPrefix prefix(dir.path());
  fs::remove(prefix.record("ca-certificates"));
  writeFile(dir.path() / "conda-meta/htop-3.3.0-h0_0.json",
            R"({"name":"htop","version":"3.3.0","build":"h0_0","sha256":")" + std::string(64, 'c') +
                R"(","files":[]})");
  CliResult r =
      lockstep("verify-env --lock '" + kCondaLock + "' --prefix '" + dir.path().string() + "'");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("  conda htop: extra: installed 3.3.0 h0_0, not in the lock"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("  conda ca-certificates: missing: expected 2023.7.22, not installed"),
            std::string::npos)
      << r.output;
}

TEST(VerifyEnvCondaPrefix, BadInputIsAnErrorNamingTheFileAndField) {
  TempDir dir;
  CondaPrefix prefix(dir.path());
  writeFile(prefix.record("ca-certificates"), R"({"version":"2023.7.22"})");
  CliResult r =
      lockstep("verify-env --lock '" + kCondaLock + "' --prefix '" + dir.path().string() + "'");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("verify-env: error: " + prefix.record("ca-certificates").string() +
                          ": name: missing"),
            std::string::npos)
      << r.output;
  CliResult none = lockstep("verify-env --lock '" + kCondaLock + "' --prefix '" +
                            (dir.path() / "absent").string() + "'");
  EXPECT_EQ(none.exitCode, 1) << none.output;
  EXPECT_NE(none.output.find("prefix: " + (dir.path() / "absent").string() + ": no such directory"),
            std::string::npos)
      << none.output;
  writeFile(dir.path() / "bad.conda-lock.yml", "version: 1\npackage:\n- name: x\n  version: [\n");
  CliResult bad = lockstep("verify-env --lock '" + (dir.path() / "bad.conda-lock.yml").string() +
                           "' --format conda-lock --prefix '" + dir.path().string() + "'");
  EXPECT_EQ(bad.exitCode, 1) << bad.output;
  EXPECT_NE(bad.output.find("verify-env: error: bad.conda-lock.yml:"), std::string::npos)
      << bad.output;
  CliResult usage = lockstep("verify-env --prefix '" + dir.path().string() + "'");
  EXPECT_EQ(usage.exitCode, 2) << usage.output;
}

TEST(VerifyEnvRuntimeJson, TheLockMustHashToRuntimeJsonsClosureHash) {
  TempDir dir;
  CondaPrefix prefix(dir.path());
  writeFile(dir.path() / "runtime.json",
            R"({"closureHash":"sha256:)" + std::string(64, '0') + R"(","cuda":"11.8"})");
  CliResult r =
      lockstep("verify-env --lock '" + kCondaLock + "' --runtime-json '" +
               (dir.path() / "runtime.json").string() + "' --prefix '" + dir.path().string() + "'");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("says closureHash sha256:" + std::string(64, '0') +
                          ": not the lock this runtime was packaged from"),
            std::string::npos)
      << r.output;
  // runtime.json alone names what it lacks.
  CliResult alone =
      lockstep("verify-env --runtime-json '" + (dir.path() / "runtime.json").string() +
               "' --prefix '" + dir.path().string() + "'");
  EXPECT_EQ(alone.exitCode, 1) << alone.output;
  EXPECT_NE(alone.output.find("runtime.json: packages: absent"), std::string::npos) << alone.output;
}

// A node's /proc, /dev and /sys under a temporary root.
class HostRoot {
 public:
  HostRoot& driver(const std::string& version) {
    writeFile(dir_.path() / "proc/driver/nvidia/version",
              "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + version +
                  "  Wed Jan 22 23:12:03 UTC 2025\nGCC version:  gcc version 12.2.0\n");
    return *this;
  }
  HostRoot& gpus(int n) {
    for (int i = 0; i < n; ++i) {
      writeFile(dir_.path() / ("dev/nvidia" + std::to_string(i)), "");
      writeFile(dir_.path() /
                    ("proc/driver/nvidia/gpus/0000:1" + std::to_string(i) + ":00.0/information"),
                "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 42\n");
    }
    return *this;
  }
  HostRoot& ib(const std::string& device, const std::string& state = "4: ACTIVE") {
    writeFile(dir_.path() / ("dev/infiniband/uverbs" + std::to_string(ib_++)), "");
    writeFile(dir_.path() / ("sys/class/infiniband/" + device + "/ports/1/state"), state + "\n");
    return *this;
  }
  HostRoot& ibDeviceOnly(const std::string& device) {
    writeFile(dir_.path() / ("sys/class/infiniband/" + device + "/ports/1/state"), "4: ACTIVE\n");
    return *this;
  }
  // runtime.json for the closure: `cuda` ("" CPU-only), `rdma`.
  std::string runtime(const std::string& cuda, bool rdma = false) {
    const fs::path p = dir_.path() / "runtime.json";
    nlohmann::ordered_json j{
        {"closureHash", "sha256:" + std::string(64, '1')}, {"cuda", cuda}, {"rdma", rdma}};
    writeFile(p, j.dump());
    return p.string();
  }
  std::string root() const { return dir_.path().string(); }
  CliResult verify(const std::string& runtimeJson, const std::string& more = "") const {
    return lockstep("verify-host --runtime-json '" + runtimeJson + "' --root '" + root() + "' " +
                    more);
  }

 private:
  TempDir dir_;
  int ib_ = 0;
};

TEST(VerifyHostRoots, Driver570PassesACuda128Closure) {
  HostRoot node;
  node.driver("570.86.15").gpus(8);
  CliResult r = node.verify(node.runtime("12.8"), "--gpus 8");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("verify-host: OK: driver 570.86.15, 8 GPU(s) visible, CUDA 12.8 needs "
                          "driver >= 570.26"),
            std::string::npos)
      << r.output;
}

TEST(VerifyHostRoots, Driver535FailsACuda128ClosureNamingTheMinimum) {
  HostRoot node;
  node.driver("535.104.05").gpus(8);
  CliResult r = node.verify(node.runtime("12.8"));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("  host driver: expected >= 570.26 (CUDA 12.8), found 535.104.05 (" +
                          node.root() + "/proc/driver/nvidia/version)"),
            std::string::npos)
      << r.output;
  CliResult j = node.verify(node.runtime("12.8"), "--json");
  auto doc = nlohmann::json::parse(j.output);
  EXPECT_EQ(doc["result"], "mismatch");
  EXPECT_EQ(doc["host"]["minDriver"], "570.26");
  EXPECT_EQ(doc["differences"][0]["package"], "driver");
}

TEST(VerifyHostRoots, NoDriverFailsACudaClosure) {
  HostRoot node;
  CliResult r = node.verify(node.runtime("12.8"));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("  host driver: expected >= 570.26 (CUDA 12.8), found no NVIDIA driver"),
            std::string::npos)
      << r.output;
}

TEST(VerifyHostRoots, ACpuOnlyClosurePassesWithoutADriver) {
  HostRoot node;
  CliResult r = node.verify(node.runtime(""));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("verify-host: OK: driver none, 0 GPU(s) visible, CPU-only closure"),
            std::string::npos)
      << r.output;
}

TEST(VerifyHostRoots, RdmaDeclaredWithoutDevInfinibandFails) {
  HostRoot node;
  node.driver("570.86.15").gpus(8).ibDeviceOnly("mlx5_0");
  CliResult r = node.verify(node.runtime("12.8", /*rdma=*/true));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("  host rdma: expected /dev/infiniband/uverbs* visible (RDMA declared), "
                          "found none (" +
                          node.root() + "/dev/infiniband)"),
            std::string::npos)
      << r.output;
  // --rdma declares it as well; with the devices there the node fits.
  HostRoot ok;
  ok.driver("570.86.15").gpus(8).ib("mlx5_0");
  CliResult fits = ok.verify(ok.runtime("12.8"), "--rdma");
  EXPECT_EQ(fits.exitCode, 0) << fits.output;
}

TEST(VerifyHostRoots, NcclIbHcaNamingAMissingDeviceFails) {
  HostRoot node;
  node.driver("570.86.15").gpus(8).ib("mlx5_0").ib("mlx5_1");
  CliResult r = node.verify(node.runtime("12.8", /*rdma=*/true), "--nccl-ib-hca mlx5_0:1,mlx5_3:1");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("  host nccl-ib-hca: expected NCCL_IB_HCA device mlx5_3:1, found absent "
                          "(present: mlx5_0, mlx5_1)"),
            std::string::npos)
      << r.output;
  // Without the flag, the job's NCCL_IB_HCA is read from the environment.
  const std::string args = "verify-host --runtime-json '" + node.runtime("12.8", true) +
                           "' --root '" + node.root() + "'";
  CliResult fromEnv = lockstep(args, "NCCL_IB_HCA=mlx5_7");
  EXPECT_EQ(fromEnv.exitCode, 1) << fromEnv.output;
  EXPECT_NE(fromEnv.output.find("NCCL_IB_HCA device mlx5_7, found absent"), std::string::npos)
      << fromEnv.output;
  CliResult fits = lockstep(args, "NCCL_IB_HCA=mlx5_0:1,mlx5_1:1");
  EXPECT_EQ(fits.exitCode, 0) << fits.output;
}

// Without --root, nvidia-smi on PATH gives the driver and the GPUs (a stand-in script here).
TEST(VerifyHostNvidiaSmi, GivesTheDriverAndTheVisibleGpus) {
  TempDir dir;
  const fs::path smi = dir.path() / "nvidia-smi";
  writeFile(smi,
            "#!/bin/sh\n"
            "[ \"$1 $2\" = \"--query-gpu=driver_version,pci.bus_id,name --format=csv,noheader\" ] "
            "|| exit 2\n"
            "echo '570.86.15, 00000000:17:00.0, NVIDIA H100 80GB HBM3'\n"
            "echo '570.86.15, 00000000:2A:00.0, NVIDIA H100 80GB HBM3'\n");
  fs::permissions(smi, fs::perms::owner_all);
  writeFile(dir.path() / "runtime.json", R"({"closureHash":"sha256:00","cuda":""})");
  const std::string path = "PATH='" + dir.path().string() + ":/usr/bin:/bin'";
  const std::string args =
      "verify-host --runtime-json '" + (dir.path() / "runtime.json").string() + "'";
  CliResult two = lockstep(args + " --gpus 2 --json", path);
  EXPECT_EQ(two.exitCode, 0) << two.output;
  auto doc = nlohmann::json::parse(two.output);
  EXPECT_EQ(doc["host"]["driver"], "570.86.15");
  EXPECT_EQ(doc["host"]["driverSource"], smi.string());
  EXPECT_EQ(doc["host"]["gpusVisible"], 2);
  EXPECT_EQ(doc["host"]["gpus"][1]["model"], "NVIDIA H100 80GB HBM3");
  CliResult three = lockstep(args + " --gpus 3", path);
  EXPECT_EQ(three.exitCode, 1) << three.output;
  EXPECT_NE(
      three.output.find("host gpus: expected at least 3 visible, found 2 visible (nvidia-smi)"),
      std::string::npos)
      << three.output;
  // A failing nvidia-smi (driver/library mismatch) is a note; /proc is read instead.
  writeFile(
      smi,
      "#!/bin/sh\necho 'Failed to initialize NVML: Driver/library version mismatch'\nexit 18\n");
  CliResult broken = lockstep(args, path);
  EXPECT_NE(broken.output.find("note: " + smi.string() +
                               ": nvidia-smi exited with status 18; read /proc instead"),
            std::string::npos)
      << broken.output;
}

TEST(VerifyHostRoots, BadInputAndUsage) {
  HostRoot node;
  writeFile(fs::path(node.root()) / "proc/driver/nvidia/version", "not a driver\n");
  CliResult r = node.verify(node.runtime("12.8"));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("verify-host: error: " + node.root() +
                          "/proc/driver/nvidia/version: line 1: expected \"NVRM version: ...\""),
            std::string::npos)
      << r.output;
  writeFile(fs::path(node.root()) / "bad.json", R"({"cuda": 12})");
  CliResult bad = node.verify(node.root() + "/bad.json");
  EXPECT_EQ(bad.exitCode, 1) << bad.output;
  EXPECT_NE(bad.output.find("bad.json: cuda: not a string"), std::string::npos) << bad.output;
  CliResult missingRoot = lockstep("verify-host --root '" + node.root() + "/absent'");
  EXPECT_EQ(missingRoot.exitCode, 1) << missingRoot.output;
  EXPECT_EQ(lockstep("verify-host --gpus many").exitCode, 2);
}

}  // namespace
