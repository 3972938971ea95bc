// Kubeconfig and in-cluster loading, including the bad inputs a user meets.
#include "operator/kube/kube_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "operator/kube/token_source.h"
#include "tests/support/fake_clock.h"

namespace lockstep::kube {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/lockstep-kubeconfig-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { (void)std::system(("rm -rf " + path_).c_str()); }
  std::string write(const std::string& name, const std::string& content) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << content;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const char* kCertPem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

std::string kubeconfig(const std::string& userBlock, const std::string& clusterExtra = "",
                       const std::string& current = "dev") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: " + current +
         "\n"
         "clusters:\n- name: local\n  cluster:\n    server: https://127.0.0.1:6443/\n" +
         clusterExtra +
         "contexts:\n- name: dev\n  context: {cluster: local, user: admin, namespace: ml}\n"
         "- name: other\n  context: {cluster: local, user: admin}\n"
         "users:\n- name: admin\n  user:\n" +
         userBlock;
}

TEST(KubeConfigTest, InlineDataAndCurrentContext) {
  TempDir dir;
  std::string ca = base64Encode(kCertPem);
  std::string path =
      dir.write("config", kubeconfig("    client-certificate-data: " + base64Encode("CERT") +
                                         "\n    client-key-data: " + base64Encode("KEY") + "\n",
                                     "    certificate-authority-data: " + ca + "\n"));
  auto cfg = loadKubeConfig(path);
  ASSERT_TRUE(cfg.isOk()) << cfg.status().toString();
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg->caPem, kCertPem);
  EXPECT_EQ(cfg->clientCertPem, "CERT");
  EXPECT_EQ(cfg->clientKeyPem, "KEY");
  EXPECT_EQ(cfg->defaultNamespace, "ml");
  EXPECT_FALSE(cfg->insecureSkipTlsVerify);
}

TEST(KubeConfigTest, RelativeFilesResolveAgainstTheKubeconfigDir) {
  TempDir dir;
  dir.write("ca.crt", kCertPem);
  dir.write("admin.crt", "CERTFILE");
  dir.write("admin.key", "KEYFILE");
  std::string path = dir.write(
      "config", kubeconfig("    client-certificate: admin.crt\n    client-key: " + dir.path() +
                               "/admin.key\n",
                           "    certificate-authority: ca.crt\n"));
  auto cfg = loadKubeConfig(path, "other");
  ASSERT_TRUE(cfg.isOk()) << cfg.status().toString();
  EXPECT_EQ(cfg->caPem, kCertPem);
  EXPECT_EQ(cfg->clientCertPem, "CERTFILE");
  EXPECT_EQ(cfg->clientKeyPem, "KEYFILE");
  EXPECT_EQ(cfg->defaultNamespace, "default");
}

TEST(KubeConfigTest, TokenAndInsecureOnlyWhenSaid) {
  TempDir dir;
  auto cfg = parseKubeConfig(kubeconfig("    token: abc\n", "    insecure-skip-tls-verify: true\n"),
                             dir.path(), "test");
  ASSERT_TRUE(cfg.isOk()) << cfg.status().toString();
  EXPECT_EQ(cfg->token, "abc");
  EXPECT_TRUE(cfg->insecureSkipTlsVerify);
  cfg = parseKubeConfig(kubeconfig("    token: abc\n", "    insecure-skip-tls-verify: false\n"),
                        dir.path(), "test");
  ASSERT_TRUE(cfg.isOk());
  EXPECT_FALSE(cfg->insecureSkipTlsVerify);
}

TEST(KubeConfigTest, MalformedYamlIsOneClearError) {
  TempDir dir;
  std::string path = dir.write("config", "clusters:\n- name: [unclosed\n  cluster: {\n");
  auto cfg = loadKubeConfig(path);
  ASSERT_FALSE(cfg.isOk());
  EXPECT_EQ(cfg.status().code(), Code::kInvalidArgument);
  EXPECT_NE(cfg.status().message().find(path), std::string::npos) << cfg.status().message();
  EXPECT_NE(cfg.status().message().find("malformed YAML at line"), std::string::npos)
      << cfg.status().message();
}

TEST(KubeConfigTest, MissingKubeconfigFileNamesIt) {
  auto cfg = loadKubeConfig("/nonexistent/dir/kubeconfig");
  ASSERT_FALSE(cfg.isOk());
  EXPECT_EQ(cfg.status().code(), Code::kInvalidArgument);
  EXPECT_NE(cfg.status().message().find("/nonexistent/dir/kubeconfig"), std::string::npos);
  EXPECT_NE(cfg.status().message().find("No such file"), std::string::npos);
}

TEST(KubeConfigTest, MissingReferencedFileNamesItAndTheUser) {
  TempDir dir;
  std::string path = dir.write(
      "config", kubeconfig("    client-certificate: missing.crt\n    client-key: missing.key\n"));
  auto cfg = loadKubeConfig(path);
  ASSERT_FALSE(cfg.isOk());
  const std::string& m = cfg.status().message();
  EXPECT_EQ(cfg.status().code(), Code::kInvalidArgument);
  EXPECT_NE(m.find("user \"admin\""), std::string::npos) << m;
  EXPECT_NE(m.find("client-certificate"), std::string::npos) << m;
  EXPECT_NE(m.find(dir.path() + "/missing.crt"), std::string::npos) << m;
  EXPECT_NE(m.find("No such file"), std::string::npos) << m;
}

TEST(KubeConfigTest, MissingCaFileNamesTheCluster) {
  TempDir dir;
  auto cfg = parseKubeConfig(kubeconfig("    token: t\n", "    certificate-authority: nope.crt\n"),
                             dir.path(), "kubeconfig x");
  ASSERT_FALSE(cfg.isOk());
  EXPECT_NE(cfg.status().message().find("cluster \"local\""), std::string::npos);
  EXPECT_NE(cfg.status().message().find("nope.crt"), std::string::npos);
}

TEST(KubeConfigTest, MissingCurrentContext) {
  TempDir dir;
  auto cfg = parseKubeConfig(kubeconfig("    token: t\n", "", "prod"), dir.path(), "kubeconfig x");
  ASSERT_FALSE(cfg.isOk());
  EXPECT_EQ(cfg.status().message(), "kubeconfig x: context \"prod\" not found");
  cfg = parseKubeConfig("apiVersion: v1\nclusters: []\n", dir.path(), "kubeconfig x");
  ASSERT_FALSE(cfg.isOk());
  EXPECT_EQ(cfg.status().message(),
            "kubeconfig x: current-context is not set and no context was given");
}

TEST(KubeConfigTest, DanglingClusterAndUserReferences) {
  std::string text =
      "current-context: c\ncontexts:\n- name: c\n  context: {cluster: gone, user: u}\n";
  auto cfg = parseKubeConfig(text, "", "k");
  ASSERT_FALSE(cfg.isOk());
  EXPECT_EQ(cfg.status().message(), "k: cluster \"gone\" (of context \"c\") not found");
  text += "clusters:\n- name: gone\n  cluster: {server: https://x}\n";
  cfg = parseKubeConfig(text, "", "k");
  ASSERT_FALSE(cfg.isOk());
  EXPECT_EQ(cfg.status().message(), "k: user \"u\" (of context \"c\") not found");
}

TEST(KubeConfigTest, BadBase64AndHalfAKeyPair) {
  auto cfg = parseKubeConfig(kubeconfig("    client-certificate-data: '***'\n"), "", "k");
  ASSERT_FALSE(cfg.isOk());
  EXPECT_NE(cfg.status().message().find("client-certificate-data is not valid base64"),
            std::string::npos);
  cfg = parseKubeConfig(kubeconfig("    client-certificate-data: " + base64Encode("C") + "\n"), "",
                        "k");
  ASSERT_FALSE(cfg.isOk());
  EXPECT_NE(cfg.status().message().find("without a key"), std::string::npos);
}

TEST(KubeConfigTest, ExecPluginIsRejectedByName) {
  auto cfg = parseKubeConfig(kubeconfig("    exec: {command: aws}\n"), "", "k");
  ASSERT_FALSE(cfg.isOk());
  EXPECT_NE(cfg.status().message().find("exec credential plugin"), std::string::npos);
}

TEST(KubeConfigTest, Base64RoundTrip) {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "hello world\n"}) {
    auto d = base64Decode(base64Encode(s));
    ASSERT_TRUE(d.isOk());
    EXPECT_EQ(*d, s);
  }
}

TEST(InClusterConfigTest, ReadsServiceAccountMount) {
  TempDir dir;
  dir.write("token", "tok-1\n");
  dir.write("ca.crt", kCertPem);
  dir.write("namespace", "lockstep-system");
  InClusterSource src{"10.0.0.1", "443", dir.path()};
  auto cfg = loadInClusterConfig(src);
  ASSERT_TRUE(cfg.isOk()) << cfg.status().toString();
  EXPECT_EQ(cfg->server, "https://10.0.0.1:443");
  EXPECT_EQ(cfg->tokenFile, dir.path() + "/token");
  EXPECT_EQ(cfg->caPem, kCertPem);
  EXPECT_EQ(cfg->defaultNamespace, "lockstep-system");
  src.serviceHost = "fd00::1";
  EXPECT_EQ(loadInClusterConfig(src)->server, "https://[fd00::1]:443");
}

TEST(InClusterConfigTest, MissingTokenIsClear) {
  TempDir dir;
  InClusterSource src{"10.0.0.1", "443", dir.path()};
  auto cfg = loadInClusterConfig(src);
  ASSERT_FALSE(cfg.isOk());
  EXPECT_NE(cfg.status().message().find(dir.path() + "/token"), std::string::npos);
}

TEST(TokenSourceTest, RereadsRotatedTokenFile) {
  TempDir dir;
  std::string tokenPath = dir.write("token", "first\n");
  KubeConfig cfg;
  cfg.tokenFile = tokenPath;
  testing::FakeClock clock;
  TokenSource tokens(cfg, clock);
  EXPECT_EQ(tokens.authorizationHeader(), "Bearer first");
  // Rotation: the kubelet swaps the file; the new mtime triggers a re-read.
  std::string tmp = dir.write("token.new", "second\n");
  struct timespec times[2] = {{0, UTIME_OMIT}, {1, 0}};
  utimensat(AT_FDCWD, tmp.c_str(), times, 0);
  ASSERT_EQ(std::rename(tmp.c_str(), tokenPath.c_str()), 0);
  EXPECT_EQ(tokens.authorizationHeader(), "Bearer second");
  // Even an unchanged mtime is re-read after a minute.
  std::ofstream(tokenPath) << "third";
  utimensat(AT_FDCWD, tokenPath.c_str(), times, 0);
  EXPECT_EQ(tokens.authorizationHeader(), "Bearer second");
  clock.advance(std::chrono::seconds(61));
  EXPECT_EQ(tokens.authorizationHeader(), "Bearer third");
}

TEST(TokenSourceTest, StaticAndBasic) {
  testing::FakeClock clock;
  KubeConfig cfg;
  cfg.token = "t";
  EXPECT_EQ(TokenSource(cfg, clock).authorizationHeader(), "Bearer t");
  KubeConfig basic;
  basic.username = "u";
  basic.password = "p";
  EXPECT_EQ(TokenSource(basic, clock).authorizationHeader(), "Basic dTpw");
  EXPECT_EQ(TokenSource(KubeConfig{}, clock).authorizationHeader(), "");
}

}  // namespace
}  // namespace lockstep::kube
