#include "operator/kube/kube_config.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace lockstep::kube {
namespace {

std::string joinPath(const std::string& baseDir, const std::string& p) {
  if (p.empty() || p[0] == '/' || baseDir.empty()) return p;
  return baseDir + "/" + p;
}

// Finds the entry named `name` in a kubeconfig list (`clusters`, `users`, `contexts`).
YAML::Node findNamed(const YAML::Node& list, const std::string& name) {
  if (!list || !list.IsSequence()) return YAML::Node(YAML::NodeType::Undefined);
  for (const auto& item : list) {
    if (item.IsMap() && item["name"] && item["name"].as<std::string>() == name) return item;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string scalar(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap()) return "";
  YAML::Node v = n[key];
  if (!v || !v.IsScalar()) return "";
  return v.as<std::string>();
}

// Loads a `<key>-data` (base64) or `<key>` (file path) pair into `out`.
Status loadPem(const YAML::Node& n, const std::string& key, const std::string& baseDir,
               const std::string& what, std::string* out) {
  std::string data = scalar(n, (key + "-data").c_str());
  if (!data.empty()) {
    auto decoded = base64Decode(data);
    if (!decoded.isOk()) return invalidArgument(what + ": " + key + "-data is not valid base64");
    *out = *decoded;
    return Status::ok();
  }
  std::string file = scalar(n, key.c_str());
  if (file.empty()) return Status::ok();
  auto content = readFile(joinPath(baseDir, file));
  if (!content.isOk()) return invalidArgument(what + ": " + key + " " + content.status().message());
  *out = *content;
  return Status::ok();
}

}  // namespace

StatusOr<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    std::string msg = "file \"" + path + "\" cannot be read: " + std::strerror(err);
    if (err == ENOENT) return notFound(msg);
    return invalidArgument(msg);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

StatusOr<std::string> base64Decode(const std::string& in) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned buf = 0;
  int bits = 0;
  bool padding = false;
  for (char c : in) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    if (padding) return invalidArgument("base64: data after padding");
    auto pos = kAlphabet.find(c);
    if (pos == std::string::npos) return invalidArgument("base64: invalid character");
    buf = (buf << 6) | static_cast<unsigned>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buf >> bits) & 0xff));
    }
  }
  return out;
}

std::string base64Encode(const std::string& in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  while (i + 2 < in.size()) {
    unsigned n = (static_cast<unsigned char>(in[i]) << 16) |
                 (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
    i += 3;
  }
  if (i + 1 == in.size()) {
    unsigned n = static_cast<unsigned char>(in[i]) << 16;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    unsigned n =
        (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

StatusOr<KubeConfig> loadKubeConfig(const std::string& path, const std::string& context) {
  auto text = readFile(path);
  if (!text.isOk()) return invalidArgument("kubeconfig: " + text.status().message());
  std::string baseDir;
  if (auto slash = path.rfind('/'); slash != std::string::npos) baseDir = path.substr(0, slash);
  if (baseDir.empty() && !path.empty() && path[0] == '/') baseDir = "/";
  return parseKubeConfig(*text, baseDir, "kubeconfig " + path, context);
}

StatusOr<KubeConfig> parseKubeConfig(const std::string& yaml, const std::string& baseDir,
                                     const std::string& origin, const std::string& context) {
  auto fail = [&](const std::string& m) -> Status { return invalidArgument(origin + ": " + m); };
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return fail("malformed YAML at line " + std::to_string(e.mark.line + 1) + ", column " +
                std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  try {
    if (!root.IsMap()) return fail("malformed: not a YAML mapping");
    std::string ctxName = context.empty() ? scalar(root, "current-context") : context;
    if (ctxName.empty()) return fail("current-context is not set and no context was given");
    YAML::Node ctx = findNamed(root["contexts"], ctxName);
    if (!ctx) return fail("context \"" + ctxName + "\" not found");
    YAML::Node ctxBody = ctx["context"];
    std::string clusterName = scalar(ctxBody, "cluster");
    std::string userName = scalar(ctxBody, "user");
    if (clusterName.empty()) return fail("context \"" + ctxName + "\" names no cluster");

    KubeConfig cfg;
    cfg.origin = origin + ", context " + ctxName;
    if (auto ns = scalar(ctxBody, "namespace"); !ns.empty()) cfg.defaultNamespace = ns;

    YAML::Node cluster = findNamed(root["clusters"], clusterName);
    if (!cluster)
      return fail("cluster \"" + clusterName + "\" (of context \"" + ctxName + "\") not found");
    YAML::Node c = cluster["cluster"];
    cfg.server = scalar(c, "server");
    if (cfg.server.empty()) return fail("cluster \"" + clusterName + "\" has no server");
    while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
    cfg.tlsServerName = scalar(c, "tls-server-name");
    std::string insecure = scalar(c, "insecure-skip-tls-verify");
    cfg.insecureSkipTlsVerify = insecure == "true";
    LOCKSTEP_RETURN_IF_ERROR(loadPem(c, "certificate-authority", baseDir,
                                     origin + ": cluster \"" + clusterName + "\"", &cfg.caPem));

    if (!userName.empty()) {
      YAML::Node user = findNamed(root["users"], userName);
      if (!user)
        return fail("user \"" + userName + "\" (of context \"" + ctxName + "\") not found");
      YAML::Node u = user["user"];
      std::string what = origin + ": user \"" + userName + "\"";
      if (u && u.IsMap()) {
        if (u["exec"])
          return fail("user \"" + userName +
                      "\" uses an exec credential plugin, which is not supported");
        if (u["auth-provider"])
          return fail("user \"" + userName + "\" uses an auth-provider, which is not supported");
        LOCKSTEP_RETURN_IF_ERROR(
            loadPem(u, "client-certificate", baseDir, what, &cfg.clientCertPem));
        LOCKSTEP_RETURN_IF_ERROR(loadPem(u, "client-key", baseDir, what, &cfg.clientKeyPem));
        if (cfg.clientCertPem.empty() != cfg.clientKeyPem.empty()) {
          return fail("user \"" + userName +
                      "\" has a client certificate without a key or a key without a certificate");
        }
        cfg.token = scalar(u, "token");
        std::string tokenFile = scalar(u, "tokenFile");
        if (!tokenFile.empty() && cfg.token.empty()) {
          cfg.tokenFile = joinPath(baseDir, tokenFile);
          auto t = readFile(cfg.tokenFile);
          if (!t.isOk()) return invalidArgument(what + ": tokenFile " + t.status().message());
        }
        cfg.username = scalar(u, "username");
        cfg.password = scalar(u, "password");
      }
    }
    if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0) {
      return fail("cluster \"" + clusterName + "\" server \"" + cfg.server +
                  "\" is not an http(s) URL");
    }
    return cfg;
  } catch (const YAML::Exception& e) {
    return fail("malformed kubeconfig: " + e.msg);
  }
}

StatusOr<KubeConfig> loadInClusterConfig(const InClusterSource& source) {
  std::string host = source.serviceHost;
  std::string port = source.servicePort;
  if (host.empty()) {
    const char* h = std::getenv("KUBERNETES_SERVICE_HOST");
    host = h ? h : "";
  }
  if (port.empty()) {
    const char* p = std::getenv("KUBERNETES_SERVICE_PORT");
    port = p ? p : "";
  }
  if (host.empty() || port.empty()) {
    return invalidArgument(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  KubeConfig cfg;
  cfg.origin = "in-cluster";
  bool ipv6 = host.find(':') != std::string::npos;
  cfg.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;
  cfg.tokenFile = source.dir + "/token";
  auto token = readFile(cfg.tokenFile);
  if (!token.isOk()) return invalidArgument("in-cluster config: token " + token.status().message());
  auto ca = readFile(source.dir + "/ca.crt");
  if (!ca.isOk()) return invalidArgument("in-cluster config: CA " + ca.status().message());
  cfg.caPem = *ca;
  if (auto ns = readFile(source.dir + "/namespace"); ns.isOk() && !ns->empty()) {
    std::string n = *ns;
    while (!n.empty() && (n.back() == '\n' || n.back() == ' ')) n.pop_back();
    cfg.defaultNamespace = n;
  }
  return cfg;
}

}  // namespace lockstep::kube
