// runtime.json as verify-env / verify-host read it.
#include "verify/runtime_spec.h"

#include <gtest/gtest.h>

namespace lockstep::verify {
namespace {

// The closure of docs/closure-hash.md's first test vector.
const char* kIdna =
    "pypi\tidna\t3.11\tsha256:771a87f49d9defaf64091e6e6fe9c18d4833f140bd19464795bc32d966ca37ea,"
    "sha256:795dafcc9c04ed0c1fb032c2aa73654d8e8c5023a7df64a53f39190ada629902";
const char* kTyping =
    "pypi\ttyping-extensions\t4.15.0\t"
    "sha256:0cea48d173cc12fa28ecabc3b837ea3cf6f38c6d1136f85cbaaf598984861466";
const char* kHash = "sha256:5014c4e76b5327600d5b17180ea13d216a89e41e1f28e0291274a274d989ec2f";

std::string runtimeJson(const std::string& packages) {
  return std::string(R"({"closureHash":")") + kHash +
         R"(","format":"pip","cuda":"12.8","minDriver":"570.26","rdma":true,"packages":)" +
         packages + "}";
}

TEST(ParseRuntimeJson, ClosureHashCudaRdmaAndPackages) {
  std::string lines = std::string("[\"") + kTyping + "\",\"" + kIdna + "\"]";
  // JSON strings: the TABs escaped.
  for (size_t at; (at = lines.find('\t')) != std::string::npos;) lines.replace(at, 1, "\\t");
  auto spec = parseRuntimeJson(runtimeJson(lines), "runtime.json");
  ASSERT_TRUE(spec.isOk()) << spec.status().message();
  EXPECT_EQ(spec->closureHash, kHash);
  EXPECT_EQ(spec->cuda, "12.8");
  EXPECT_TRUE(spec->rdma);
  ASSERT_TRUE(spec->packages);
  ASSERT_EQ(spec->packages->size(), 2u);
  EXPECT_EQ((*spec->packages)[1].name, "idna");
  EXPECT_EQ((*spec->packages)[1].digests.size(), 2u);
}

TEST(ParseRuntimeJson, PackagesThatDoNotHashToClosureHashAreRefused) {
  std::string lines = std::string("[\"") + kIdna + "\"]";
  for (size_t at; (at = lines.find('\t')) != std::string::npos;) lines.replace(at, 1, "\\t");
  auto spec = parseRuntimeJson(runtimeJson(lines), "runtime.json");
  ASSERT_FALSE(spec.isOk());
  EXPECT_EQ(spec.status().message().rfind("runtime.json: packages: the lines hash to sha256:", 0),
            0u)
      << spec.status().message();
}

TEST(ParseRuntimeJson, BadFieldsAreNamed) {
  EXPECT_EQ(parseRuntimeJson(R"({"rdma":"yes"})", "r.json").status().message(),
            "r.json: rdma: not a boolean");
  EXPECT_EQ(parseRuntimeJson(R"({"cuda":12})", "r.json").status().message(),
            "r.json: cuda: not a string");
  EXPECT_EQ(parseRuntimeJson(R"({"closureHash":"x","packages":["pypi\tx"]})", "r.json")
                .status()
                .message(),
            "r.json: packages[0]: expected 4 TAB-separated fields, found 2");
  EXPECT_EQ(parseRuntimeJson("[]", "r.json").status().message(), "r.json: not a JSON object");
  // closure-hash --json output as it is: no packages, no rdma.
  auto plain = parseRuntimeJson(R"({"closureHash":"sha256:00","cuda":"","weak":false})", "r.json");
  ASSERT_TRUE(plain.isOk());
  EXPECT_FALSE(plain->packages);
  EXPECT_FALSE(plain->rdma);
}

}  // namespace
}  // namespace lockstep::verify
