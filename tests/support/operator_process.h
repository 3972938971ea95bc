// Runs the real lockstep-operator binary against the test cluster the way the
// Helm chart deploys it: CRDs applied, the chart's RBAC and both webhook
// configurations (validating and mutating) rendered by helm (clientConfig
// switched from the Service to https://127.0.0.1:<port>, since a Service
// cannot reach loopback), and the operator authenticating as the chart's
// ServiceAccount (a token from the TokenRequest API), so least-privilege RBAC
// is exercised for real.
// Thread-safety: test-body use only.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"

namespace lockstep::testing {

inline constexpr const char* kOperatorNamespace = "lockstep-system";
inline constexpr const char* kReleaseName = "lockstep";  // helm fullname == "lockstep"

class OperatorProcess {
 public:
  OperatorProcess() = default;
  ~OperatorProcess();
  OperatorProcess(const OperatorProcess&) = delete;
  OperatorProcess& operator=(const OperatorProcess&) = delete;

  // Installs CRDs, namespace, RBAC and both webhook configurations (once per process),
  // rendered with the chart's admission.mode: "webhook" (the pods webhook) or "policy" (the
  // pod ValidatingAdmissionPolicies instead; start the operator with --admission-mode=policy).
  static void installClusterPieces(int webhookPort, const std::string& admissionMode = "webhook");
  // The same without the webhook configurations and pod policies: CRDs, namespace,
  // ServiceAccount, RBAC, the anchor and status policies.
  static void installCrdsAndRbac();
  // Deletes the webhook configurations and the pod policies (so a stopped operator cannot
  // block other tests, and a later test binary meets the mode it installs).
  static void uninstallWebhooks();

  // Starts the operator and waits until its webhook is serving. Empty on success,
  // else a message with the operator's log tail.
  std::string start(const std::vector<std::string>& extraArgs = {});
  // Serve on `port` instead of sharedWebhookPort() (a second replica; call before start()).
  void useWebhookPort(int port) { portOverride_ = port; }
  // Sends `sig` and reaps the operator (SIGKILL after 10 s). After SIGTERM the operator
  // must have exited 0 and left Lease lockstep-operator with an empty holder: otherwise
  // this records a test failure (ADD_FAILURE, also from a destructor or TearDown) and
  // returns what was wrong with the log tail; "" when all is well.
  std::string stop(int sig = SIGTERM);
  bool running() const { return pid_ > 0; }
  // Whether the started process is still running (reaps it if it exited, e.g.
  // after losing its lease).
  bool alive();

  int webhookPort() const { return webhookPort_; }
  int metricsPort() const { return metricsPort_; }
  // GET /metrics over HTTPS with metricsScraperToken().
  std::string scrapeMetrics() const;
  std::string log() const;

 private:
  std::string startOnce(const std::vector<std::string>& extraArgs);

  pid_t pid_ = -1;
  int webhookPort_ = 0;
  int portOverride_ = 0;
  int metricsPort_ = 0;
  int healthPort_ = 0;
  std::string dir_;
};

// Writes the status of `resource` ns/name (kubectl's name: "rte", "mr") as
// the operator's ServiceAccount, impersonated by the test's admin: the only
// user the chart's status policy (templates/status-policy.yaml) lets write a
// Lockstep status. `statusPatch` is a JSON merge patch of the current status;
// the result is server-side applied to the status subresource (field manager
// lockstep-test), since the ServiceAccount may patch status but not read it,
// which `kubectl patch` does first. A test that forges a status, to show what
// the operator does with a record it did not write, writes it this way. Needs
// the chart's RBAC (installClusterPieces).
CommandResult patchStatusAsOperator(const std::string& resource, const std::string& ns,
                                    const std::string& name, const nlohmann::json& statusPatch);

// A token of ServiceAccount lockstep-test-scraper, bound to the chart's
// <release>-metrics-reader ClusterRole (made once per test binary).
std::string metricsScraperToken();

// `helm template --show-only FILE` of the chart (release "lockstep" in
// kOperatorNamespace), as JSON objects. Throws on a helm or kubectl failure.
// `setValues`: helm --set arguments ("registryTags.enabled=true").
std::vector<nlohmann::json> renderChart(const std::string& showOnly,
                                        const std::vector<std::string>& setValues = {});

// Applies RuntimeEnv `name` in `ns` (image by digest, inline lock), waits for
// Ready and returns its status.closureHash ("" when it never became Ready).
std::string applyReadyRuntimeEnv(const std::string& ns, const std::string& name,
                                 const std::string& image, const std::string& lock);

// The webhook port every test in this binary registers (chosen once).
int sharedWebhookPort();

// Where the cluster pieces (crds/, the chart) and the operator binary of
// installCrdsAndRbac, installClusterPieces, renderChart and the next start()
// come from: an earlier release's directory as tests/upgrade/previous.sh
// makes it (its lockstep-operator and src/), or "" for this build's (the
// default). Process-wide.
void useOperatorRelease(const std::string& dir);

}  // namespace lockstep::testing
