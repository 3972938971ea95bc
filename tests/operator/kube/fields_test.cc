// takeFields (operator/kube/fields.h): the members named, moved out; absent ones
// stay absent.
#include "operator/kube/fields.h"

#include <gtest/gtest.h>

namespace lockstep::kube::fields_test {

TEST(FieldsTest, TakeFieldsKeepsTheNamedMembersThatExist) {
  nlohmann::json o = nlohmann::json::parse(
      R"({"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}}, "env": [1],
          "ports": null})");
  const char* const kFields[] = {"name", "resources", "ports", "command"};
  nlohmann::json kept = takeFields(o, kFields);
  EXPECT_EQ(kept, nlohmann::json::parse(
                      R"({"name": "c", "resources": {"limits": {"cpu": "1"}}, "ports": null})"));
  EXPECT_FALSE(kept.contains("command"));  // absent stays absent, not null
  EXPECT_FALSE(kept.contains("env"));
  EXPECT_EQ(o["env"], nlohmann::json::parse("[1]"));  // what is not taken stays
  EXPECT_EQ(takeFields(o, {"image"}), nlohmann::json::parse(R"({"image": "i"})"));
  // Not an object: nothing to take.
  nlohmann::json list = nlohmann::json::array({1});
  EXPECT_EQ(takeFields(list, {"name"}), nlohmann::json::object());
  nlohmann::json null;
  EXPECT_EQ(takeFields(null, {"name"}), nlohmann::json::object());
}

}  // namespace lockstep::kube::fields_test
