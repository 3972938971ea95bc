// PackageDescriber (controllers/modelrelease/package_reader.h) over a fake
// registry reader with knobs: answers cached by content, a failure to read
// retried after kRetrySeconds, and a registry that does not answer at all
// not asked again, for any package on it, for kRegistryDownSeconds.
#include "controllers/modelrelease/package_reader.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/v1alpha1/keys.h"
#include "tests/support/fake_transport.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;

// Answers by registry host: down (no answer at all), missing (404) or an image.
class FakeReader final : public PackageReader {
 public:
  std::map<std::string, std::string> mode;  // host -> "down" | "missing" | "image"
  std::vector<std::string> asked;           // "registry/repository", in order

  PackageObserved read(const registry::PackageRef& ref,
                       const std::optional<registry::Credentials>&) override {
    asked.push_back(ref.name());
    PackageObserved out;
    out.digest = ref.digest;
    const std::string m = mode.count(ref.registry) ? mode[ref.registry] : "image";
    if (m == "down") {
      out.unreadable = "registry " + ref.registry + ": GET manifest: connect: timed out";
      out.registryDown = true;
    } else if (m == "missing") {
      out.unreadable = "registry " + ref.registry + ": manifest unknown (404)";
    } else {
      api::v1alpha1::PackageInfo info;
      info.kind = api::v1alpha1::kPackageKindImage;
      info.digest = ref.digest;
      out.info = info;
    }
    return out;
  }
};

const std::string kDigest = "sha256:" + std::string(64, 'b');

json release(const std::string& name, const std::string& package) {
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "ModelRelease"},
          {"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"spec", {{"model", name}, {"package", package + "@" + kDigest}}}};
}

class PackageDescriberTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeReader> reader = std::make_shared<FakeReader>();
  PackageDescriber describer{std::make_shared<kube::Client>(
                                 std::make_shared<testing::FakeTransport>(), kube::ClientOptions{}),
                             reader};
};

TEST_F(PackageDescriberTest, ARegistryThatDoesNotAnswerIsNotAskedAgainForAWhileForAnyPackage) {
  reader->mode["down.example"] = "down";
  auto first = describer.describe(release("a", "down.example/models/a"), 1000);
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->registryDown);
  EXPECT_NE(first->unreadable.find("timed out"), std::string::npos) << first->unreadable;

  // 10 more models on that registry: none is asked while it is down, and each says why.
  for (int i = 0; i < 10; ++i) {
    auto other = describer.describe(
        release("m" + std::to_string(i), "down.example/models/m" + std::to_string(i)), 1010);
    ASSERT_TRUE(other.has_value());
    EXPECT_TRUE(other->registryDown);
    EXPECT_EQ(other->digest, kDigest);
    EXPECT_NE(other->unreadable.find("registry down.example not asked: it did not answer 10s ago"),
              std::string::npos)
        << other->unreadable;
    EXPECT_NE(other->unreadable.find("timed out"), std::string::npos) << other->unreadable;
  }
  EXPECT_EQ(reader->asked, std::vector<std::string>{"down.example/models/a"});

  // Another registry is asked meanwhile.
  auto up = describer.describe(release("u", "up.example/models/u"), 1010);
  ASSERT_TRUE(up.has_value() && up->info.has_value());

  // Past the window the registry is asked again, by a package not read yet.
  auto later = describer.describe(release("n", "down.example/models/n"),
                                  1000 + PackageDescriber::kRegistryDownSeconds);
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(reader->asked.back(), "down.example/models/n");
  EXPECT_EQ(reader->asked.size(), 3u);

  // Back up: the packages skipped are read at their own retry, and answered.
  reader->mode["down.example"] = "image";
  auto back = describer.describe(release("m0", "down.example/models/m0"),
                                 1010 + PackageDescriber::kRetrySeconds);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->info.has_value()) << back->unreadable;
  EXPECT_FALSE(back->registryDown);
}

TEST_F(PackageDescriberTest, AnAnswerAboutOnePackageDoesNotStopTheRegistrysOthers) {
  reader->mode["reg.example"] = "missing";
  auto missing = describer.describe(release("a", "reg.example/models/a"), 1000);
  ASSERT_TRUE(missing.has_value());
  EXPECT_FALSE(missing->registryDown);
  EXPECT_NE(missing->unreadable.find("404"), std::string::npos);
  // Cached for its own retry: not asked again for the same content...
  describer.describe(release("a", "reg.example/models/a"), 1001);
  EXPECT_EQ(reader->asked.size(), 1u);
  // ...but the registry's other packages are asked at once.
  reader->mode["reg.example"] = "image";
  auto other = describer.describe(release("b", "reg.example/models/b"), 1001);
  ASSERT_TRUE(other.has_value());
  EXPECT_TRUE(other->info.has_value());
  EXPECT_EQ(reader->asked.size(), 2u);
}

}  // namespace
}  // namespace lockstep::controllers
