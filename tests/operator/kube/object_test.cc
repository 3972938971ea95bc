#include "operator/kube/object.h"

#include <gtest/gtest.h>

#include "operator/kube/clock.h"

namespace lockstep::kube {
namespace {

TEST(ObjectTest, AccessorsReadMetadataAndToleratesMissingFields) {
  Object o = nlohmann::json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "d", "namespace": "ml", "uid": "u", "resourceVersion": "9",
                 "generation": 3, "labels": {"app": "x"}, "annotations": {"a": "b"},
                 "finalizers": ["lockstep.dev/cleanup"],
                 "deletionTimestamp": "2024-01-01T00:00:00Z",
                 "ownerReferences": [{"apiVersion": "lockstep.dev/v1alpha1", "kind": "ModelRelease",
                                      "name": "mr", "uid": "o", "controller": true}]}})");
  EXPECT_EQ(name(o), "d");
  EXPECT_EQ(namespaceOf(o), "ml");
  EXPECT_EQ(uid(o), "u");
  EXPECT_EQ(resourceVersion(o), "9");
  EXPECT_EQ(generation(o), 3);
  EXPECT_EQ(label(o, "app"), "x");
  EXPECT_FALSE(label(o, "nope"));
  EXPECT_EQ(annotations(o).at("a"), "b");
  EXPECT_TRUE(hasFinalizer(o, "lockstep.dev/cleanup"));
  EXPECT_TRUE(isBeingDeleted(o));
  ASSERT_TRUE(controllerOf(o));
  EXPECT_EQ(controllerOf(o)->uid, "o");
  EXPECT_EQ(objectKey(o), "ml/d");

  Object empty = nlohmann::json::array();
  EXPECT_EQ(name(empty), "");
  EXPECT_EQ(generation(empty), 0);
  EXPECT_TRUE(labels(empty).empty());
  EXPECT_TRUE(ownerReferences(empty).empty());
}

TEST(ObjectTest, BuildersAndOwnerReferences) {
  Object owner =
      newObject(Resource{"lockstep.dev", "v1alpha1", "modelreleases", "ModelRelease"}, "ml", "mr");
  owner["metadata"]["uid"] = "ou";
  Object child = newObject(resources::kJobs, "ml", "gate");
  EXPECT_EQ(child["apiVersion"], "batch/v1");
  setOwnerReference(child, ownerReferenceTo(owner));
  setOwnerReference(child, ownerReferenceTo(owner));  // replaces, no duplicate
  ASSERT_EQ(ownerReferences(child).size(), 1u);
  EXPECT_EQ(ownerReferences(child)[0].kind, "ModelRelease");
  EXPECT_TRUE(ownerReferences(child)[0].blockOwnerDeletion);
  setLabel(child, "lockstep.dev/release", "mr");
  EXPECT_EQ(label(child, "lockstep.dev/release"), "mr");
  EXPECT_EQ(objectKey(newObject(resources::kNodes, "x", "n")), "n");
}

// label() and annotation() answer what labels() and annotations() hold: string
// values only, nothing from a map that is not an object.
TEST(ObjectTest, OneLabelOrAnnotationIsWhatTheWholeMapSays) {
  const Object o = nlohmann::json::parse(R"({"metadata": {
    "labels": {"app": "x", "empty": "", "count": 3, "nothing": null},
    "annotations": {"a": "b", "list": ["c"]}}})");
  for (const std::string key : {"app", "empty", "count", "nothing", "absent"}) {
    const auto all = labels(o);
    const auto it = all.find(key);
    EXPECT_EQ(label(o, key), it == all.end() ? std::nullopt : std::optional(it->second)) << key;
  }
  EXPECT_EQ(label(o, "empty"), "");
  EXPECT_FALSE(label(o, "count")) << "a number is no label value";
  EXPECT_EQ(annotation(o, "a"), "b");
  EXPECT_FALSE(annotation(o, "list"));
  const Object notMaps = nlohmann::json::parse(R"({"metadata": {"labels": "app=x",
                                                                 "annotations": ["a"]}})");
  EXPECT_FALSE(label(notMaps, "app"));
  EXPECT_FALSE(annotation(notMaps, "a"));
  EXPECT_FALSE(label(nlohmann::json::array(), "app"));
}

TEST(ClockTest, FormatsAndParsesKubernetesTimes) {
  Clock::WallTime t;
  ASSERT_TRUE(parseTime("2024-05-01T10:00:00.123456Z", &t));
  EXPECT_EQ(formatTime(t, true), "2024-05-01T10:00:00.123456Z");
  EXPECT_EQ(formatTime(t, false), "2024-05-01T10:00:00Z");
  ASSERT_TRUE(parseTime("2024-05-01T12:00:00+02:00", &t));
  EXPECT_EQ(formatTime(t, false), "2024-05-01T10:00:00Z");
  EXPECT_FALSE(parseTime("yesterday", &t));
  EXPECT_FALSE(parseTime("2024-05-01T10:00:00", &t));
}

TEST(ClockTest, UnixSecondsOfKubernetesTimes) {
  EXPECT_EQ(unixSecondsOf("2024-05-01T10:00:00Z"), 1714557600);
  EXPECT_EQ(unixSecondsOf("2024-05-01T12:00:00+02:00"), 1714557600);
  EXPECT_EQ(unixSecondsOf("2024-05-01T10:00:00.9Z"), 1714557600) << "whole seconds";
  EXPECT_EQ(unixSecondsOf(""), 0);
  EXPECT_EQ(unixSecondsOf("yesterday"), 0);
  EXPECT_EQ(timeOfUnixSeconds(1714557600), "2024-05-01T10:00:00Z");
  EXPECT_EQ(timeOfUnixSeconds(0), "1970-01-01T00:00:00Z");
}

}  // namespace
}  // namespace lockstep::kube
