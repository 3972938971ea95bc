#include "webhooks/admission/pod_validator.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/webhooks/builders.h"
#include "webhooks/admission/admission_review.h"

namespace lockstep::webhooks {
namespace {

using testing::kEnvHash;
using testing::kEnvImage;
using testing::PodBuilder;
using testing::sha;

RuntimeEnvView torch() { return {"torch", "ml", kEnvHash, kEnvImage, true}; }

struct Case {
  std::string name;
  Operation op = Operation::kCreate;
  nlohmann::json pod;
  nlohmann::json oldPod = nullptr;
  NamespaceMode mode = NamespaceMode::kUnset;
  std::optional<RuntimeEnvView> env = torch();
  Decision want = Decision::kAllowed;
  bool checked = true;
  std::vector<std::string> mentions = {};  // substrings of the message (or warnings)
};

std::vector<Case> cases() {
  RuntimeEnvView notReady = torch();
  notReady.ready = false;
  RuntimeEnvView unpinned = torch();
  unpinned.image = "registry.example/runtimes/torch:2.5";
  RuntimeEnvView hub = torch();
  hub.image = "docker.io/library/python@" + sha('e');
  RuntimeEnvView movedOn = torch();
  movedOn.closureHash = sha('9');
  const std::string tagged = "registry.example/runtimes/torch:2.5";
  const std::string otherDigest = "registry.example/runtimes/torch@" + sha('f');
  const std::string foreign = "busybox@" + sha('a');

  return {
      {"good pod admitted", Operation::kCreate, PodBuilder::good().json()},
      {"unlabelled pod in unlabelled namespace not checked", Operation::kCreate,
       PodBuilder().container("app", "nginx").json(), nullptr, NamespaceMode::kUnset, torch(),
       Decision::kAllowed, false},
      {"unlabelled pod in enforce namespace denied",
       Operation::kCreate,
       PodBuilder().container("app", "nginx").json(),
       nullptr,
       NamespaceMode::kEnforce,
       std::nullopt,
       Decision::kDenied,
       true,
       {"requires label lockstep.dev/runtime-env", "pod \"ml/web-1\""}},
      {"missing RuntimeEnv denied",
       Operation::kCreate,
       PodBuilder::good().json(),
       nullptr,
       NamespaceMode::kUnset,
       std::nullopt,
       Decision::kDenied,
       true,
       {"RuntimeEnv \"ml/torch\"", "does not exist"}},
      {"RuntimeEnv not Ready denied",
       Operation::kCreate,
       PodBuilder::good().json(),
       nullptr,
       NamespaceMode::kUnset,
       notReady,
       Decision::kDenied,
       true,
       {"\"ml/torch\" is not Ready"}},
      {"missing closure-hash annotation denied",
       Operation::kCreate,
       PodBuilder::good().noHash().json(),
       nullptr,
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"annotation lockstep.dev/closure-hash is missing", "expected \"" + kEnvHash + "\""}},
      {"wrong closure hash denied",
       Operation::kCreate,
       PodBuilder::good().hash(sha('d')).json(),
       nullptr,
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"is \"" + sha('d') + "\"", "expected \"" + kEnvHash + "\""}},
      {"image by tag denied",
       Operation::kCreate,
       PodBuilder::good().clearContainers().container("app", tagged).json(),
       nullptr,
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"container \"app\" image \"" + tagged + "\" is not pinned by digest",
        "expected \"" + kEnvImage + "\""}},
      {"other digest denied",
       Operation::kCreate,
       PodBuilder::good().clearContainers().container("app", otherDigest).json(),
       nullptr,
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"has digest \"" + sha('f') + "\""}},
      {"foreign repository with the same digest denied",
       Operation::kCreate,
       PodBuilder::good().container("side", foreign).json(),
       nullptr,
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"container \"side\"", "is not the image of RuntimeEnv \"torch\""}},
      {"init container with foreign image denied",
       Operation::kCreate,
       PodBuilder::good().init("setup", foreign).json(),
       nullptr,
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"init container \"setup\""}},
      {"ephemeral container with foreign image on create denied",
       Operation::kCreate,
       PodBuilder::good().ephemeral("debug", foreign).json(),
       nullptr,
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"ephemeral container \"debug\""}},
      {"container without image denied",
       Operation::kCreate,
       PodBuilder::good().container("empty", "").json(),
       nullptr,
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"container \"empty\" has no image"}},
      {"invalid image reference denied",
       Operation::kCreate,
       PodBuilder::good().container("bad", "Registry.Example/UPPER@" + sha('a')).json(),
       nullptr,
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"container \"bad\"", "is invalid"}},
      {"docker hub short name matches normalized RuntimeEnv image", Operation::kCreate,
       PodBuilder::good()
           .clearContainers()
           .container("py", "python@" + sha('e'))
           .init("init", "index.docker.io/library/python@" + sha('e'))
           .json(),
       nullptr, NamespaceMode::kUnset, hub},
      {"tag alongside the right digest admitted", Operation::kCreate,
       PodBuilder::good()
           .clearContainers()
           .container("app", "registry.example/runtimes/torch:2.5@" + sha('a'))
           .json()},
      {"RuntimeEnv image not pinned: nothing can match",
       Operation::kCreate,
       PodBuilder::good().json(),
       nullptr,
       NamespaceMode::kUnset,
       unpinned,
       Decision::kDenied,
       true,
       {"spec.image \"" + tagged + "\" is not pinned by digest"}},
      {"several violations are all reported",
       Operation::kCreate,
       PodBuilder::good().hash(sha('d')).init("setup", tagged).json(),
       nullptr,
       NamespaceMode::kEnforce,
       torch(),
       Decision::kDenied,
       true,
       {"closure-hash is \"" + sha('d'), "init container \"setup\""}},
      {"warn mode admits with warnings",
       Operation::kCreate,
       PodBuilder::good().hash(sha('d')).json(),
       nullptr,
       NamespaceMode::kWarn,
       torch(),
       Decision::kWarned,
       true,
       {"closure-hash is \"" + sha('d')}},
      {"audit mode admits and records",
       Operation::kCreate,
       PodBuilder::good().hash(sha('d')).json(),
       nullptr,
       NamespaceMode::kAudit,
       torch(),
       Decision::kAudited,
       true,
       {"closure-hash is \"" + sha('d')}},
      {"off mode checks nothing", Operation::kCreate, PodBuilder::good().hash(sha('d')).json(),
       nullptr, NamespaceMode::kOff, torch(), Decision::kAllowed, false},
      {"generateName pod is named by its prefix",
       Operation::kCreate,
       PodBuilder::good().generateName("web-7d9f-").hash(sha('d')).json(),
       nullptr,
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"pod \"ml/web-7d9f-*\" (generateName)"}},
      {"update adding a foreign ephemeral container denied",
       Operation::kUpdate,
       PodBuilder::good().ephemeral("debug", "busybox:1.36").json(),
       PodBuilder::good().json(),
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"ephemeral container \"debug\" image \"busybox:1.36\" is not pinned by digest"}},
      {"update adding a pinned ephemeral container admitted", Operation::kUpdate,
       PodBuilder::good().ephemeral("debug", kEnvImage).json(), PodBuilder::good().json()},
      {"update keeping existing ephemeral containers checks only new ones", Operation::kUpdate,
       PodBuilder::good().ephemeral("old", "busybox").ephemeral("new", kEnvImage).json(),
       PodBuilder::good().ephemeral("old", "busybox").json()},
      {"metadata-only update of a pod whose RuntimeEnv moved on admitted", Operation::kUpdate,
       PodBuilder::good().json(), PodBuilder::good().json(), NamespaceMode::kEnforce, movedOn,
       Decision::kAllowed, false},
      {"metadata-only update with the RuntimeEnv gone admitted", Operation::kUpdate,
       PodBuilder::good().json(), PodBuilder::good().json(), NamespaceMode::kEnforce, std::nullopt,
       Decision::kAllowed, false},
      {"update changing an image to a tag denied",
       Operation::kUpdate,
       PodBuilder::good().clearContainers().container("app", tagged).json(),
       PodBuilder::good().json(),
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"is not pinned by digest"}},
      {"update changing the closure hash annotation denied",
       Operation::kUpdate,
       PodBuilder::good().hash(sha('d')).json(),
       PodBuilder::good().json(),
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"closure-hash is \"" + sha('d')}},
      {"update re-labelling the pod re-validates everything",
       Operation::kUpdate,
       PodBuilder::good().env("other").json(),
       PodBuilder::good().json(),
       NamespaceMode::kUnset,
       std::nullopt,
       Decision::kDenied,
       true,
       {"RuntimeEnv \"ml/other\""}},
      {"ephemeral container on an unlabelled pod in an enforce namespace denied",
       Operation::kUpdate,
       PodBuilder().container("app", "nginx").ephemeral("debug", "busybox").json(),
       PodBuilder().container("app", "nginx").json(),
       NamespaceMode::kEnforce,
       std::nullopt,
       Decision::kDenied,
       true,
       {"requires label"}},
      {"update removing the runtime-env label denied (unlabelled namespace)",
       Operation::kUpdate,
       PodBuilder::good().noEnv().json(),
       PodBuilder::good().json(),
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"label lockstep.dev/runtime-env cannot be removed from a running pod (it was \"torch\")"}},
      {"update removing the runtime-env label and swapping the image denied",
       Operation::kUpdate,
       PodBuilder::good().noEnv().clearContainers().container("app", foreign).json(),
       PodBuilder::good().json(),
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"cannot be removed"}},
      {"update removing the runtime-env label warned in warn mode",
       Operation::kUpdate,
       PodBuilder::good().noEnv().json(),
       PodBuilder::good().json(),
       NamespaceMode::kWarn,
       torch(),
       Decision::kWarned,
       true,
       {"cannot be removed"}},
      {"update removing the runtime-env label not checked in mode off", Operation::kUpdate,
       PodBuilder::good().noEnv().json(), PodBuilder::good().json(), NamespaceMode::kOff, torch(),
       Decision::kAllowed, false},
      {"update of an unlabelled pod in an unlabelled namespace not checked", Operation::kUpdate,
       PodBuilder().container("app", foreign).json(), PodBuilder().container("app", "nginx").json(),
       NamespaceMode::kUnset, std::nullopt, Decision::kAllowed, false},
      {"image volume by digest admitted", Operation::kCreate,
       PodBuilder::good().imageVolume("model", "registry.example/models/gpt2@" + sha('c')).json()},
      {"image volume by tag denied",
       Operation::kCreate,
       PodBuilder::good().imageVolume("model", "registry.example/models/gpt2:latest").json(),
       nullptr,
       NamespaceMode::kEnforce,
       torch(),
       Decision::kDenied,
       true,
       {"image volume \"model\" reference \"registry.example/models/gpt2:latest\" is not pinned "
        "by digest"}},
      {"image volume without a reference denied",
       Operation::kCreate,
       PodBuilder::good().imageVolume("model", "").json(),
       nullptr,
       NamespaceMode::kUnset,
       torch(),
       Decision::kDenied,
       true,
       {"image volume \"model\" has no reference"}},
      {"image volume by tag on an unlabelled pod in an unlabelled namespace not checked",
       Operation::kCreate,
       PodBuilder().container("app", "nginx").imageVolume("m", "models/x:latest").json(), nullptr,
       NamespaceMode::kUnset, std::nullopt, Decision::kAllowed, false},
      {"delete not checked", Operation::kDelete, PodBuilder::good().hash(sha('d')).json(), nullptr,
       NamespaceMode::kEnforce, torch(), Decision::kAllowed, false},
  };
}

class PodValidatorTest : public ::testing::TestWithParam<Case> {};

TEST_P(PodValidatorTest, Decides) {
  const Case& c = GetParam();
  PodReview r;
  r.operation = c.op;
  r.ns = "ml";
  r.pod = &c.pod;
  r.oldPod = c.oldPod.is_null() ? nullptr : &c.oldPod;
  r.mode = c.mode;
  r.runtimeEnv = c.env;
  Verdict v = validatePod(r);
  std::string all = v.message;
  for (const auto& w : v.warnings) all += "\n" + w;
  EXPECT_EQ(decisionName(v.decision), decisionName(c.want)) << all;
  EXPECT_EQ(v.checked, c.checked);
  for (const auto& m : c.mentions)
    EXPECT_NE(all.find(m), std::string::npos) << "want: " << m << "\ngot: " << all;
  switch (c.want) {
    case Decision::kDenied:
      EXPECT_EQ(v.code, 403);
      EXPECT_EQ(v.reason, "Forbidden");
      EXPECT_TRUE(v.warnings.empty());
      break;
    case Decision::kWarned:
      EXPECT_TRUE(v.allowed());
      EXPECT_EQ(v.warnings.size(), v.violations.size());
      break;
    case Decision::kAudited:
      EXPECT_TRUE(v.allowed());
      EXPECT_FALSE(v.message.empty());
      break;
    default:
      EXPECT_TRUE(v.violations.empty()) << all;
  }
}

// The pod webhook decodes only podFieldMask() of the pod (and old pod). Every
// case of the table must decide the same on the masked pods, word for word: a
// field the validator reads but the mask drops changes a verdict here.
nlohmann::json masked(const nlohmann::json& pod) {
  if (pod.is_null()) return pod;
  StatusOr<AdmissionRequest> r =
      decodeAdmissionReview(testing::review("CREATE", pod), &podFieldMask());
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return r.isOk() ? r->object : nlohmann::json();
}

TEST_P(PodValidatorTest, DecidesTheSameOnTheMaskedPod) {
  const Case& c = GetParam();
  const nlohmann::json pod = masked(c.pod);
  const nlohmann::json oldPod = masked(c.oldPod);
  PodReview whole;
  whole.operation = c.op;
  whole.ns = "ml";
  whole.pod = &c.pod;
  whole.oldPod = c.oldPod.is_null() ? nullptr : &c.oldPod;
  whole.mode = c.mode;
  whole.runtimeEnv = c.env;
  PodReview part = whole;
  part.pod = &pod;
  part.oldPod = oldPod.is_null() ? nullptr : &oldPod;
  const Verdict want = validatePod(whole);
  const Verdict got = validatePod(part);
  EXPECT_EQ(got.decision, want.decision);
  EXPECT_EQ(got.checked, want.checked);
  EXPECT_EQ(got.message, want.message);
  EXPECT_EQ(got.warnings, want.warnings);
  EXPECT_EQ(got.violations, want.violations);
  EXPECT_EQ(podRuntimeEnvName(pod), podRuntimeEnvName(c.pod));
}

INSTANTIATE_TEST_SUITE_P(Table, PodValidatorTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n;
                           for (char ch : info.param.name)
                             n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

TEST(PodValidator, RuntimeEnvNameFromLabel) {
  EXPECT_EQ(podRuntimeEnvName(PodBuilder::good().json()), "torch");
  EXPECT_EQ(podRuntimeEnvName(PodBuilder().json()), std::nullopt);
  EXPECT_EQ(podRuntimeEnvName(nlohmann::json::parse(R"({"metadata":{"labels":[1]}})")),
            std::nullopt);
}

// Fail closed (issue 12 item 12): a CREATE or UPDATE whose object is missing or not an
// object cannot show it is outside the policy, so it is refused wherever the policy may
// apply, and answered by the namespace's mode; only mode off and DELETE skip it.
TEST(PodValidator, NonObjectOrMissingPodFailsClosed) {
  const nlohmann::json notAPod = nlohmann::json::array({1, 2});
  struct Row {
    const nlohmann::json* pod;
    Operation op;
    NamespaceMode mode;
    bool checked;
    Decision decision;
  };
  for (const Row& row : {
           Row{&notAPod, Operation::kCreate, NamespaceMode::kEnforce, true, Decision::kDenied},
           Row{&notAPod, Operation::kUpdate, NamespaceMode::kEnforce, true, Decision::kDenied},
           Row{nullptr, Operation::kCreate, NamespaceMode::kEnforce, true, Decision::kDenied},
           Row{&notAPod, Operation::kCreate, NamespaceMode::kUnset, true, Decision::kDenied},
           Row{&notAPod, Operation::kCreate, NamespaceMode::kWarn, true, Decision::kWarned},
           Row{&notAPod, Operation::kCreate, NamespaceMode::kAudit, true, Decision::kAudited},
           Row{&notAPod, Operation::kCreate, NamespaceMode::kOff, false, Decision::kAllowed},
           Row{&notAPod, Operation::kDelete, NamespaceMode::kEnforce, false, Decision::kAllowed},
       }) {
    PodReview r;
    r.ns = "ml";
    r.pod = row.pod;
    r.operation = row.op;
    r.mode = row.mode;
    Verdict v = validatePod(r);
    SCOPED_TRACE(std::string(namespaceModeName(row.mode)) + (row.pod ? " array" : " none"));
    EXPECT_EQ(v.checked, row.checked);
    EXPECT_EQ(v.decision, row.decision) << decisionName(v.decision);
    if (row.decision == Decision::kDenied) {
      EXPECT_EQ(v.code, 403);
      EXPECT_EQ(v.message,
                std::string("lockstep: pod in namespace \"ml\": request.object is not a Pod "
                            "object (JSON ") +
                    (row.pod ? "array" : "none") + "), so the pod's runtime cannot be checked");
    }
  }
}

TEST(PodValidator, WrongTypesAreViolationsNotCrashes) {
  auto pod =
      nlohmann::json::parse(R"({"metadata":{"name":7,"labels":{"lockstep.dev/runtime-env":"torch"},
      "annotations":{"lockstep.dev/closure-hash":5}},"spec":{"containers":[{"name":1,"image":2}, 3],
      "initContainers":"x"}})");
  PodReview r;
  r.ns = "ml";
  r.pod = &pod;
  r.runtimeEnv = torch();
  Verdict v = validatePod(r);
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_GE(v.violations.size(), 3u);
  // The same on the pod as the pod webhook decodes it (wrong types survive the mask).
  const nlohmann::json part = masked(pod);
  r.pod = &part;
  Verdict m = validatePod(r);
  EXPECT_EQ(m.decision, v.decision);
  EXPECT_EQ(m.violations, v.violations);
}

// The operator's verification containers (docs/verify.md, "Admission"): init
// containers on exactly the trusted CLI image (the operator's --cli-image, by
// digest) are admitted in an enforcing namespace; the rest of the pod is
// checked as always.
const std::string kCli = "registry.example/lockstep/lockstep@" + sha('1');

// The pod a verification Job (or an onStart gate Job) makes: verify-env and
// verify-host on the CLI image, the runtime image mounted by digest, the main
// container on the runtime's image.
PodBuilder verificationPod() {
  return PodBuilder("torch-verify-1-0")
      .env("torch")
      .hash(kEnvHash)
      .init("verify-env", kCli)
      .init("verify-host", kCli)
      .container("smoke", kEnvImage)
      .imageVolume("lockstep-runtime", kEnvImage);
}

Verdict validateIn(NamespaceMode mode, const nlohmann::json& pod, const std::string& trusted,
                   Operation op = Operation::kCreate, const nlohmann::json* oldPod = nullptr) {
  PodReview r;
  r.operation = op;
  r.ns = "ml";
  r.pod = &pod;
  r.oldPod = oldPod;
  r.mode = mode;
  r.runtimeEnv = torch();
  r.trustedInitImage = trusted;
  return validatePod(r);
}

TEST(PodValidatorVerification, TheCliImageAsInitContainerIsAdmittedWhereEnforced) {
  Verdict v = validateIn(NamespaceMode::kEnforce, verificationPod().json(), kCli);
  EXPECT_EQ(decisionName(v.decision), decisionName(Decision::kAllowed)) << v.message;
  EXPECT_TRUE(v.checked);
  EXPECT_TRUE(v.violations.empty());
}

TEST(PodValidatorVerification, WithoutTrustTheCliInitContainersAreRefused) {
  Verdict v = validateIn(NamespaceMode::kEnforce, verificationPod().json(), "");
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("init container \"verify-env\" image \"" + kCli +
                           "\" is not the image of RuntimeEnv \"torch\""),
            std::string::npos)
      << v.message;
}

TEST(PodValidatorVerification, AnotherImageAsInitContainerIsStillRefused) {
  const std::string busybox = "busybox@" + sha('b');
  const std::string otherCli = "registry.example/lockstep/lockstep@" + sha('2');
  for (const std::string& image :
       {busybox, otherCli, std::string("registry.example/lockstep/lockstep:1.0")}) {
    SCOPED_TRACE(image);
    Verdict v =
        validateIn(NamespaceMode::kEnforce, verificationPod().init("setup", image).json(), kCli);
    EXPECT_EQ(v.decision, Decision::kDenied);
    ASSERT_EQ(v.violations.size(), 1u) << v.message;  // only the other image
    EXPECT_NE(v.violations[0].find("init container \"setup\" image \"" + image + "\""),
              std::string::npos)
        << v.message;
    EXPECT_EQ(v.message.find("verify-env"), std::string::npos) << v.message;
  }
}

TEST(PodValidatorVerification, OnlyInitContainersAreTrusted) {
  // The CLI image as a main or ephemeral container is checked as any other image.
  Verdict main =
      validateIn(NamespaceMode::kEnforce, verificationPod().container("shell", kCli).json(), kCli);
  EXPECT_EQ(main.decision, Decision::kDenied);
  EXPECT_NE(main.message.find("container \"shell\" image \"" + kCli + "\""), std::string::npos)
      << main.message;
  const nlohmann::json old = verificationPod().json();
  Verdict eph =
      validateIn(NamespaceMode::kEnforce, verificationPod().ephemeral("debug", kCli).json(), kCli,
                 Operation::kUpdate, &old);
  EXPECT_EQ(eph.decision, Decision::kDenied);
  EXPECT_NE(eph.message.find("ephemeral container \"debug\""), std::string::npos) << eph.message;
}

TEST(PodValidatorVerification, TheMainContainersAndImageVolumesAreCheckedAsBefore) {
  // Main container on another digest of the runtime: refused despite trusted inits.
  Verdict v = validateIn(NamespaceMode::kEnforce,
                         PodBuilder("p")
                             .env("torch")
                             .hash(kEnvHash)
                             .init("verify-env", kCli)
                             .container("smoke", "registry.example/runtimes/torch@" + sha('f'))
                             .json(),
                         kCli);
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("container \"smoke\""), std::string::npos) << v.message;
  // The wrong closure hash: refused.
  Verdict h = validateIn(NamespaceMode::kEnforce, verificationPod().hash(sha('9')).json(), kCli);
  EXPECT_EQ(h.decision, Decision::kDenied);
  EXPECT_NE(h.message.find("annotation lockstep.dev/closure-hash"), std::string::npos);
  // The runtime image volume by tag: refused.
  Verdict t = validateIn(
      NamespaceMode::kEnforce,
      verificationPod().imageVolume("rt", "registry.example/runtimes/torch:2.5").json(), kCli);
  EXPECT_EQ(t.decision, Decision::kDenied);
  EXPECT_NE(t.message.find("image volume \"rt\""), std::string::npos);
  // No runtime-env label: refused as any unlabelled pod in an enforcing namespace.
  Verdict n =
      validateIn(NamespaceMode::kEnforce,
                 PodBuilder("p").init("verify-env", kCli).container("c", kEnvImage).json(), kCli);
  EXPECT_EQ(n.decision, Decision::kDenied);
}

TEST(PodValidatorVerification, OnlyACliImageByDigestCanBeTrusted) {
  EXPECT_TRUE(checkTrustedInitImage(kCli).isOk());
  Status tag = checkTrustedInitImage("registry.example/lockstep/lockstep:1.0");
  EXPECT_EQ(tag.code(), Code::kInvalidArgument);
  EXPECT_NE(
      tag.message().find("\"registry.example/lockstep/lockstep:1.0\" is not pinned by digest"),
      std::string::npos)
      << tag.message();
  EXPECT_FALSE(checkTrustedInitImage("Not An Image").isOk());
}

TEST(NamespaceMode, ParsesLabelValuesAndFailsClosed) {
  EXPECT_EQ(parseNamespaceMode(std::nullopt), NamespaceMode::kUnset);
  EXPECT_EQ(parseNamespaceMode(""), NamespaceMode::kUnset);
  EXPECT_EQ(parseNamespaceMode("enforce"), NamespaceMode::kEnforce);
  EXPECT_EQ(parseNamespaceMode("warn"), NamespaceMode::kWarn);
  EXPECT_EQ(parseNamespaceMode("audit"), NamespaceMode::kAudit);
  EXPECT_EQ(parseNamespaceMode("off"), NamespaceMode::kOff);
  EXPECT_EQ(parseNamespaceMode("enforced"), NamespaceMode::kEnforce);
}

}  // namespace
}  // namespace lockstep::webhooks
