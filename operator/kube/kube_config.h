// KubeConfig: how to reach and authenticate to one API server, loaded from a
// kubeconfig file (the current or a named context) or from the in-cluster
// service-account mount. Certificates and keys are held as PEM text so the
// transport can load them from memory; a token file is kept as a path so a
// rotated token is re-read (see TokenSource).
// Thread-safety: a value; loading functions are reentrant.
#pragma once

#include <string>

#include "common/status.h"

namespace lockstep::kube {

struct KubeConfig {
  std::string server;         // "https://127.0.0.1:6443", no trailing slash
  std::string caPem;          // trusted CA bundle; empty means the system roots
  std::string clientCertPem;  // client certificate chain (PEM), with clientKeyPem
  std::string clientKeyPem;
  std::string token;      // static bearer token
  std::string tokenFile;  // bearer token re-read when the file changes
  std::string username;   // basic auth (rare; kept for completeness)
  std::string password;
  std::string tlsServerName;           // SNI / verification name override
  bool insecureSkipTlsVerify = false;  // only when the kubeconfig says so
  std::string defaultNamespace = "default";
  std::string origin;  // for messages: "kubeconfig <path>, context <name>" or "in-cluster"
};

// Loads a kubeconfig file. `context` empty selects current-context. Relative
// file references resolve against the kubeconfig's directory. Every failure is
// one InvalidArgument naming the file and the problem.
StatusOr<KubeConfig> loadKubeConfig(const std::string& path, const std::string& context = "");

// Parses kubeconfig text; `baseDir` resolves relative paths, `origin` names it in errors.
StatusOr<KubeConfig> parseKubeConfig(const std::string& yaml, const std::string& baseDir,
                                     const std::string& origin, const std::string& context = "");

// Where in-cluster configuration lives; overridable for tests.
struct InClusterSource {
  std::string serviceHost;  // empty: $KUBERNETES_SERVICE_HOST
  std::string servicePort;  // empty: $KUBERNETES_SERVICE_PORT
  std::string dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// The service-account config of a pod: token file (re-read on rotation), CA, namespace.
StatusOr<KubeConfig> loadInClusterConfig(const InClusterSource& source = {});

// Decodes standard base64 (with or without padding, whitespace ignored).
StatusOr<std::string> base64Decode(const std::string& in);
std::string base64Encode(const std::string& in);

// Reads a whole file; NotFound/InvalidArgument naming the path on failure.
StatusOr<std::string> readFile(const std::string& path);

}  // namespace lockstep::kube
