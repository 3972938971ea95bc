#include "cmd/lockstep/release_args.h"

#include <gtest/gtest.h>

#include <sstream>

namespace lockstep::cli {
namespace {

using A = ReleaseCommand::Action;

struct ParseCase {
  std::vector<std::string> args;
  A action;
  std::string name = "";
  std::string stage = "";
  std::string ns = "";
};

void PrintTo(const ParseCase& c, std::ostream* os) {
  for (const auto& a : c.args) *os << a << " ";
}

class ParseReleaseArgsTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseReleaseArgsTest, Parses) {
  const ParseCase& c = GetParam();
  auto cmd = parseReleaseArgs(c.args);
  ASSERT_TRUE(cmd.isOk()) << cmd.status().toString();
  EXPECT_EQ(cmd->action, c.action);
  EXPECT_EQ(cmd->name, c.name);
  EXPECT_EQ(cmd->stage, c.stage);
  EXPECT_EQ(cmd->kube.ns, c.ns);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseReleaseArgsTest,
    ::testing::Values(ParseCase{{"list"}, A::kList},
                      ParseCase{{"ls", "-n", "ml"}, A::kList, "", "", "ml"},
                      ParseCase{{"status", "gpt2", "--namespace=ml"}, A::kStatus, "gpt2", "", "ml"},
                      ParseCase{{"-n", "ml", "approve", "gpt2"}, A::kApprove, "gpt2", "", "ml"},
                      ParseCase{{"approve", "gpt2", "ci"}, A::kApprove, "gpt2", "ci"},
                      ParseCase{
                          {"abort", "gpt2", "--namespace", "ml"}, A::kAbort, "gpt2", "", "ml"},
                      ParseCase{{"wait", "gpt2", "--for=phase=Validated"}, A::kWait, "gpt2"},
                      ParseCase{{"help"}, A::kHelp}, ParseCase{{"approve", "--help"}, A::kHelp}));

TEST(ParseReleaseArgs, Flags) {
  auto cmd = parseReleaseArgs({"wait", "gpt2", "--for", "phase=failed", "--timeout=90s",
                               "--kubeconfig", "/k", "--context=dev"});
  ASSERT_TRUE(cmd.isOk()) << cmd.status().toString();
  EXPECT_EQ(cmd->forPhase, "Failed");  // case-insensitive, canonical spelling
  EXPECT_EQ(cmd->timeout, std::chrono::seconds(90));
  EXPECT_EQ(cmd->kube.kubeconfig, "/k");
  EXPECT_EQ(cmd->kube.context, "dev");
  auto def = parseReleaseArgs({"wait", "gpt2", "--for=phase=Validated"});
  EXPECT_EQ(def->timeout, std::chrono::minutes(5));
  auto all = parseReleaseArgs({"list", "-A", "-o", "json"});
  ASSERT_TRUE(all.isOk());
  EXPECT_TRUE(all->kube.allNamespaces);
  EXPECT_TRUE(all->json);
  EXPECT_TRUE(parseReleaseArgs({"status", "x", "-o=json"})->json);
  auto promote = parseReleaseArgs({"promote", "gpt2", "--full"});
  ASSERT_TRUE(promote.isOk()) << promote.status().toString();
  EXPECT_EQ(promote->action, ReleaseCommand::Action::kPromote);
  EXPECT_TRUE(promote->full);
  EXPECT_FALSE(parseReleaseArgs({"promote", "gpt2"})->full);
}

struct BadCase {
  std::vector<std::string> args;
  std::string message;
};

void PrintTo(const BadCase& c, std::ostream* os) {
  for (const auto& a : c.args) *os << a << " ";
}

class ParseReleaseArgsErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ParseReleaseArgsErrorTest, NamesTheProblem) {
  auto cmd = parseReleaseArgs(GetParam().args);
  ASSERT_FALSE(cmd.isOk());
  EXPECT_NE(cmd.status().message().find(GetParam().message), std::string::npos)
      << cmd.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseReleaseArgsErrorTest,
    ::testing::Values(
        BadCase{{}, "missing subcommand"},
        BadCase{{"rollout", "x"}, "unknown subcommand \"rollout\""},
        BadCase{{"promote"}, "usage: release promote NAME [--full]"},
        BadCase{{"approve", "x", "--full"}, "--full applies to promote only"},
        BadCase{{"status"}, "usage: release status NAME"},
        BadCase{{"approve", "a", "b", "c"}, "usage: release approve NAME [STAGE]"},
        BadCase{{"wait", "x"}, "wait needs --for=phase=PHASE"},
        BadCase{{"wait", "x", "--for=condition=Ready"}, "expected --for=phase=PHASE"},
        BadCase{{"wait", "x", "--for=phase=Done"}, "unknown phase (one of Pending, Evaluating"},
        BadCase{{"wait", "x", "--for=phase=Failed", "--timeout=soon"},
                "--timeout: invalid duration"},
        BadCase{{"status", "x", "-o", "yaml"}, "only -o json"},
        BadCase{{"approve", "x", "-o", "json"}, "-o json applies to list and status only"},
        BadCase{{"status", "x", "-A"}, "applies to list only"},
        BadCase{{"status", "x", "--timeout=5m"}, "apply to wait only"},
        BadCase{{"status", "x", "--frobnicate"}, "unknown flag --frobnicate"},
        BadCase{{"status", "x", "-n"}, "-n needs a value"}));

TEST(ParseCliDuration, Forms) {
  EXPECT_EQ(*parseCliDuration("90s"), std::chrono::seconds(90));
  EXPECT_EQ(*parseCliDuration("5m"), std::chrono::seconds(300));
  EXPECT_EQ(*parseCliDuration("1h30m"), std::chrono::seconds(5400));
  EXPECT_EQ(*parseCliDuration("42"), std::chrono::seconds(42));
  for (const char* bad : {"", "m", "5x", "1m30", "0s", "-5s", "1.5m"})
    EXPECT_FALSE(parseCliDuration(bad).isOk()) << bad;
}

TEST(KubeconfigPath, PicksLikeKubectl) {
  auto exists = [](const std::string& p) { return p == "/home/u/.kube/config"; };
  auto none = [](const std::string&) { return false; };
  KubeFlags flags;
  EXPECT_EQ(kubeconfigPath(flags, nullptr, "/home/u", exists), "/home/u/.kube/config");
  EXPECT_EQ(kubeconfigPath(flags, "/a:/b", "/home/u", exists), "/a");
  EXPECT_EQ(kubeconfigPath(flags, "", "/home/u", exists), "/home/u/.kube/config");
  EXPECT_EQ(kubeconfigPath(flags, nullptr, "/home/u", none), "");  // in-cluster
  flags.kubeconfig = "/flag";
  EXPECT_EQ(kubeconfigPath(flags, "/a", "/home/u", exists), "/flag");
}

TEST(EffectiveNamespace, FlagThenContextThenDefault) {
  KubeFlags flags;
  EXPECT_EQ(effectiveNamespace(flags, "team-a"), "team-a");
  EXPECT_EQ(effectiveNamespace(flags, ""), "default");
  flags.ns = "ml";
  EXPECT_EQ(effectiveNamespace(flags, "team-a"), "ml");
}

TEST(ReleaseUsage, MentionsEverySubcommand) {
  std::ostringstream os;
  releaseUsage(os, "kubectl lockstep");
  for (const char* s : {"kubectl lockstep release", "list", "status NAME", "approve NAME [STAGE]",
                        "abort NAME", "promote NAME [--full]", "wait NAME --for=phase=PHASE",
                        "--kubeconfig", "--context", "-n, --namespace"})
    EXPECT_NE(os.str().find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace lockstep::cli
