#include "api/v1alpha1/model_anchor.h"

#include <gtest/gtest.h>

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

json anchor(json data) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", "lockstep-model-gpt2"},
            {"namespace", "ml"},
            {"uid", "u1"},
            {"resourceVersion", "42"},
            {"labels", {{"lockstep.dev/model", "gpt2"}}}}},
          {"data", std::move(data)}};
}

TEST(ModelAnchorView, DecodesTheVocabulary) {
  EXPECT_EQ(modelAnchorName("gpt2"), "lockstep-model-gpt2");
  json history = json::array({{{"action", "Promoted"}, {"release", "v1"}}});
  ModelAnchor a = decodeModelAnchor(anchor({{"promoted", "v1"},
                                            {"promotedPackage", "r.example/m@sha256:aa"},
                                            {"promotedClosureHash", "sha256:bb"},
                                            {"canary", "v2"},
                                            {"revision", "7"},
                                            {"history", history.dump()}}));
  EXPECT_EQ(a.model, "gpt2");
  EXPECT_EQ(a.meta.uid, "u1");
  EXPECT_EQ(a.resourceVersion, "42");
  EXPECT_EQ(a.promoted, "v1");
  EXPECT_EQ(a.promotedPackage, "r.example/m@sha256:aa");
  EXPECT_EQ(a.promotedClosureHash, "sha256:bb");
  EXPECT_EQ(a.canary, "v2");
  EXPECT_EQ(a.prodRevision(), "7");
  EXPECT_EQ(a.nextRevision(), "8");
  EXPECT_EQ(a.history, history);
  EXPECT_FALSE(a.historyMalformed);
}

TEST(ModelAnchorView, RevisionsAndAMalformedHistory) {
  ModelAnchor empty = decodeModelAnchor(anchor(json::object()));
  EXPECT_EQ(empty.prodRevision(), "0");  // before the first promotion
  EXPECT_EQ(empty.nextRevision(), "1");
  EXPECT_TRUE(empty.history.empty());
  EXPECT_FALSE(empty.historyMalformed);
  ModelAnchor edited = decodeModelAnchor(anchor({{"revision", "x9"}, {"history", "{not json"}}));
  EXPECT_EQ(edited.nextRevision(), "1");  // not ours: start again
  EXPECT_TRUE(edited.historyMalformed);
  EXPECT_TRUE(edited.history.empty());
  EXPECT_EQ(previousRevision("8"), "7");
  EXPECT_EQ(previousRevision("0"), "");
  EXPECT_EQ(previousRevision("x"), "");
}

}  // namespace
}  // namespace lockstep::api::v1alpha1
