// Every real lock file under the shared fixtures: it parses, its package count
// is known (and reconciled with MANIFEST.tsv), its hash is pinned, and the
// invariants of the contract hold under programmatic mutations per format:
// determinism, insensitivity to order/whitespace/comments, sensitivity to one
// version and one digest, and errors with a line for truncated input.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <sstream>

#include "closure/closure.h"
#include "tests/closure/testing_util.h"

namespace lockstep::closure {
namespace {

using testing::fixturesDir;
using testing::mustCompute;
using testing::readFileOrDie;

struct Fixture {
  std::string file;
  LockFormat format;
  bool allowUnhashed;
  size_t count;      // canonical entries for the default platform/environment
  std::string hash;  // closure hash v1, pinned
  std::string cuda;
  // Per-platform locks: every platform, whose counts add up to MANIFEST.tsv.
  std::vector<std::string> platforms;
};

// Counts that differ from MANIFEST.tsv are explained in docs/closure-hash.md
// ("Fixture counts"): the manifest counts entries as the format lists them; the
// closure leaves out the project's own root and selects one platform.
const std::vector<Fixture>& fixtures() {
  static const std::vector<Fixture> kFixtures = {
      {"conda-lock/condalock-tool-env-hachimaki98-docker-pytorch.conda-lock.yml",
       LockFormat::kCondaLock,
       false,
       101,
       "sha256:dfba487e504ba5dc6290c121fe6d3d6c8bf0793915d6969bf20f67b20aadc605",
       "",
       {"linux-64"}},
      {"conda-lock/multiplatform-4-defaults-channel-chenguangyang96ucr-rift.conda-lock.yml",
       LockFormat::kCondaLock,
       false,
       28,
       "sha256:e4f515bbd659e717ed94bf4e70a0035cbe6c9c9f17ba3f5c9145b1eb5b0c7f6b",
       "",
       {"linux-64", "osx-arm64", "osx-64", "win-64"}},
      {"conda-lock/pytorch-cu118-01ai-yi.conda-lock.yml",
       LockFormat::kCondaLock,
       false,
       195,
       "sha256:f522c84c06a577fe7b083c05d6d6c06cf69fc399eae476fa71944f29ceae3b43",
       "11.8",
       {"linux-64"}},
      {"flox/cuda-ollama-barstoolbluz-ollama-cuda.manifest.lock",
       LockFormat::kFlox,
       false,
       1,
       "sha256:bcfa5d27095ffa7402cbc8b3dcc2ec4f15d850607e59fa55e25c5676ae9a5c73",
       "",
       {"aarch64-linux", "x86_64-linux"}},
      {"flox/hello-build-flox-flox.manifest.lock",
       LockFormat::kFlox,
       false,
       1,
       "sha256:f7f9f8dbd32ee0f199ac5e270b49fe356bb44cb413bfd382327c0a60b61adeed",
       "",
       {"aarch64-darwin", "aarch64-linux", "x86_64-darwin", "x86_64-linux"}},
      {"flox/nvidia-nemo-helix.manifest.lock",
       LockFormat::kFlox,
       false,
       16,
       "sha256:d1863444d04c64a7051e1f68eca17a89431689b1b133ad410c123f5379f745d2",
       "",
       {"aarch64-darwin", "aarch64-linux", "x86_64-linux"}},
      {"pip/jax-0.7-cuda12-plugin-jax-ml-jax.requirements_lock_3_13.txt",
       LockFormat::kPip,
       false,
       66,
       "sha256:9e52674f3aa5de72a0c40745b10870f133036ce3b35c7ffc513ece973dc81ee4",
       "12.9",
       {}},
      {"pip/requests-only-mozilla-translations-splitter.requirements.txt",
       LockFormat::kPip,
       false,
       5,
       "sha256:71b6f29df6cd9596bd2a7bc9d6d364a1015c213f52c4c324d70fcf29f1042832",
       "",
       {}},
      {"pip/torch-2.1-cu12-tensorflow-sigstore-model-transparency.requirements.txt",
       LockFormat::kPip,
       false,
       78,
       "sha256:60c184b96a07bdb2b25319764f3cd9729b4881907ca5a8cf4b31950a13098000",
       "12.1",
       {}},
      {"pip/torch-2.14-cpu-only-antaeusio-nli-server.requirements-torch.lock",
       LockFormat::kPip,
       false,
       1,
       "sha256:0dad34f1d211e4cd7d7b62fa92b291719a096b8ed311b3e8d69840684ce88b5e",
       "",
       {}},
      {"pixi/cuda-nvcc-12.6-wolfv-pixi-cuda.pixi.lock",
       LockFormat::kPixi,
       false,
       47,
       "sha256:6316f4ba83ca8ccbd1d9c661250b18e979482434bbb6b6b30a93a95227e1c686",
       "12.6",
       {"linux-64"}},
      {"pixi/pypi-git-source-prefix-dev-pixi-examples-tqdm-git.pixi.lock",
       LockFormat::kPixi,
       false,
       26,
       "sha256:afc7b0e46c7406cd947cef30313ac1eae9514baf983dfcf91b266f9417bbcb01",
       "",
       {"osx-arm64"}},
      {"poetry/torch-1.13.1-cu11-lockv2.0-poetry1.7-rreece-poetry-torch.poetry.lock",
       LockFormat::kPoetry,
       false,
       33,
       "sha256:b85567fade30b6cf507351065f425f680b981b614a4bdc2340e7ba356b921fdf",
       "11.7",
       {}},
      {"uv/git-sources-upload-time-astral-uv-check-cache-changes.uv.lock",
       LockFormat::kUv,
       false,
       8,
       "sha256:2a57fcbbd079cbb66d6c24e630dca626b98cd7b9b79e0ceb558da57af0f678f8",
       "",
       {}},
      {"uv/local-registry-no-hashes-variants-astral-uv-cpu_user.uv.lock",
       LockFormat::kUv,
       true,
       4,
       "sha256:dcce0526b78650880bfcf7c0000e14a7af3e7f5c6fb60b305c06b258c6f2670e",
       "",
       {}},
      {"uv/torch-cu121-yyhhenry-uv-torch-env.uv.lock",
       LockFormat::kUv,
       false,
       30,
       "sha256:f6640ce493bcff3ce9c92deb00710e642435b7b63b8b58a69e13f906c87fd1c1",
       "12.1",
       {}},
      {"uv/torch-cu13-rabago85-pytorch-uv-demo.uv.lock",
       LockFormat::kUv,
       false,
       29,
       "sha256:4221667eda004e8df22f55ce91267a6ca55985043b1b3e6aeb7cb482680277ca",
       "13.0",
       {}},
  };
  return kFixtures;
}

// MANIFEST.tsv: file -> package_count.
std::map<std::string, size_t> manifestCounts() {
  std::map<std::string, size_t> out;
  std::istringstream in(readFileOrDie(fixturesDir() + "/MANIFEST.tsv"));
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::string col;
    std::istringstream ls(line);
    while (std::getline(ls, col, '\t')) cols.push_back(col);
    if (cols.size() >= 9) out[cols[0]] = std::stoul(cols[8]);
  }
  return out;
}

ClosureOptions optionsFor(const Fixture& f) {
  ClosureOptions o;
  o.allowUnhashed = f.allowUnhashed;
  o.sourceName = f.file;
  return o;
}

// ---------------------------------------------------------------------------
// Text surgery helpers (per format) for the mutation tests.

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line + "\n");
  return out;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l;
  return out;
}

bool startsWith(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// A file cut into preamble, blocks (each starting at a line `isStart` accepts),
// and a trailer starting at the first line `isEnd` accepts after the blocks began.
struct Blocks {
  std::vector<std::string> preamble, trailer;
  std::vector<std::vector<std::string>> blocks;
  std::string text() const {
    std::string out = join(preamble);
    for (const auto& b : blocks) out += join(b);
    return out + join(trailer);
  }
};

Blocks splitBlocks(const std::string& text, const std::function<bool(const std::string&)>& isStart,
                   const std::function<bool(const std::string&)>& isEnd) {
  Blocks b;
  bool inTrailer = false;
  for (const auto& line : splitLines(text)) {
    if (inTrailer) {
      b.trailer.push_back(line);
    } else if (isStart(line)) {
      b.blocks.push_back({line});
    } else if (!b.blocks.empty() && isEnd(line)) {
      inTrailer = true;
      b.trailer.push_back(line);
    } else if (b.blocks.empty()) {
      b.preamble.push_back(line);
    } else {
      b.blocks.back().push_back(line);
    }
  }
  return b;
}

Blocks tomlBlocks(const std::string& text) {
  return splitBlocks(
      text, [](const std::string& l) { return startsWith(l, "[[package]]"); },
      [](const std::string& l) {
        return startsWith(l, "[") && !startsWith(l, "[[package]]") && !startsWith(l, "[package.");
      });
}

Blocks pipBlocks(const std::string& text) {
  return splitBlocks(
      text,
      [](const std::string& l) {
        return !l.empty() && l[0] != ' ' && l[0] != '\t' && l[0] != '#' && l[0] != '-' &&
               l[0] != '\n';
      },
      [](const std::string&) { return false; });
}

Blocks condaLockBlocks(const std::string& text) {
  return splitBlocks(
      text, [](const std::string& l) { return startsWith(l, "- name:"); },
      [](const std::string&) { return false; });
}

Blocks pixiBlocks(const std::string& text) {
  bool seenPackages = false;
  return splitBlocks(
      text,
      [&seenPackages](const std::string& l) {
        if (startsWith(l, "packages:")) seenPackages = true;
        return seenPackages && startsWith(l, "- ");
      },
      [](const std::string&) { return false; });
}

// Inserts ".post9" into a version value on a `key` line ("version = \"1.0\"",
// "  version: '0.1'", "  version: 1.0.8").
std::string bumpVersionLine(const std::string& line) {
  std::string l = line;
  while (!l.empty() && (l.back() == '\n' || l.back() == ' ')) l.pop_back();
  if (!l.empty() && (l.back() == '"' || l.back() == '\'')) {
    l.insert(l.size() - 1, ".post9");
  } else {
    l += ".post9";
  }
  return l + "\n";
}

std::string reorder(LockFormat format, const std::string& text) {
  using nlohmann::ordered_json;
  switch (format) {
    case LockFormat::kUv:
    case LockFormat::kPoetry: {
      Blocks b = tomlBlocks(text);
      for (auto& blk : b.blocks) {
        if (blk.back().back() != '\n') blk.back() += "\n";
      }
      std::reverse(b.blocks.begin(), b.blocks.end());
      return b.text();
    }
    case LockFormat::kPip: {
      Blocks b = pipBlocks(text);
      std::reverse(b.blocks.begin(), b.blocks.end());
      // And the hashes of each requirement (the last one carries no backslash).
      for (auto& blk : b.blocks) {
        std::vector<std::string> hashes;
        for (auto& l : blk) {
          if (startsWith(l, "    --hash="))
            hashes.push_back(l.substr(0, l.find_first_of(" \\\n", 4)));
        }
        std::reverse(hashes.begin(), hashes.end());
        size_t k = 0;
        for (auto& l : blk) {
          if (startsWith(l, "    --hash=")) {
            size_t end = l.find_first_of(" \\\n", 4);
            l = hashes[k++] + l.substr(end);
          }
        }
      }
      return b.text();
    }
    case LockFormat::kCondaLock: {
      Blocks b = condaLockBlocks(text);
      std::reverse(b.blocks.begin(), b.blocks.end());
      return b.text();
    }
    case LockFormat::kPixi: {
      Blocks b = pixiBlocks(text);
      std::reverse(b.blocks.begin(), b.blocks.end());
      // Also reverse the environment's package references.
      std::vector<std::string> lines = splitLines(b.text());
      size_t i = 0;
      while (i < lines.size()) {
        if (startsWith(lines[i], "      - ")) {
          size_t j = i;
          while (j < lines.size() && startsWith(lines[j], "      - ")) ++j;
          std::reverse(lines.begin() + static_cast<long>(i), lines.begin() + static_cast<long>(j));
          i = j;
        } else {
          ++i;
        }
      }
      return join(lines);
    }
    case LockFormat::kFlox: {
      ordered_json j = ordered_json::parse(text);
      auto& pk = j["packages"];
      std::reverse(pk.begin(), pk.end());
      return j.dump(1);
    }
    case LockFormat::kNix: {
      ordered_json j = ordered_json::parse(text);
      if (j.is_array()) {
        std::reverse(j.begin(), j.end());
        return j.dump();
      }
      ordered_json r = ordered_json::object();
      std::vector<std::string> keys;
      for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
      std::reverse(keys.begin(), keys.end());
      for (const auto& k : keys) r[k] = j[k];
      return r.dump();
    }
    case LockFormat::kAuto:
      break;
  }
  return text;
}

std::string reformat(LockFormat format, const std::string& text) {
  using nlohmann::ordered_json;
  switch (format) {
    case LockFormat::kUv:
    case LockFormat::kPoetry: {
      Blocks b = tomlBlocks(text);
      for (auto& blk : b.blocks) {
        if (blk.back().back() != '\n') blk.back() += "\n";
        blk.insert(blk.begin(), "\n# a comment that changes nothing\n");
        for (auto& l : blk) {
          if (startsWith(l, "name = ")) l = "name   =   " + l.substr(7);
          if (startsWith(l, "version = ")) l.insert(l.size() - 1, "   # trailing comment");
        }
      }
      return "# header comment\n\n" + b.text();
    }
    case LockFormat::kPip: {
      Blocks b = pipBlocks(text);
      for (auto& blk : b.blocks) {
        blk.insert(blk.begin(), "\n#   a comment line\n");
        for (auto& l : blk) {
          if (l.size() >= 3 && l.substr(l.size() - 3) == " \\\n")
            l = l.substr(0, l.size() - 3) + "   \\\n";
          if (startsWith(l, "    --hash")) l = "\t  " + l.substr(4);
        }
      }
      return b.text() + "\n# trailing comment\n";
    }
    case LockFormat::kCondaLock:
    case LockFormat::kPixi: {
      Blocks b = format == LockFormat::kPixi ? pixiBlocks(text) : condaLockBlocks(text);
      for (auto& blk : b.blocks) {
        if (blk.back().back() != '\n') blk.back() += "\n";
        blk.insert(blk.begin(), "# a comment\n\n");
        for (auto& l : blk) {
          if (startsWith(l, "  version: ")) l.insert(l.size() - 1, "   # trailing comment");
        }
      }
      return "# header comment\n" + b.text();
    }
    case LockFormat::kFlox:
    case LockFormat::kNix:
      return ordered_json::parse(text).dump(7) + "\n\n";
    case LockFormat::kAuto:
      break;
  }
  return text;
}

// Changes the version of one package the closure contains; "" if not possible.
std::string changeVersion(LockFormat format, const std::string& text, const Closure& c) {
  using nlohmann::ordered_json;
  switch (format) {
    case LockFormat::kUv:
    case LockFormat::kPoetry: {
      Blocks b = tomlBlocks(text);
      for (auto& blk : b.blocks) {
        std::string all = join(blk);
        if (all.find("editable =") != std::string::npos ||
            all.find("virtual =") != std::string::npos ||
            all.find("directory =") != std::string::npos)
          continue;
        for (auto& l : blk) {
          if (startsWith(l, "version = ")) {
            l = bumpVersionLine(l);
            return b.text();
          }
        }
      }
      return "";
    }
    case LockFormat::kPip: {
      std::vector<std::string> lines = splitLines(text);
      for (auto& l : lines) {
        size_t eq = l.find("==");
        if (l.empty() || l[0] == '#' || l[0] == ' ' || eq == std::string::npos) continue;
        size_t end = l.find_first_of(" ;\\\n", eq + 2);
        l.insert(end, ".post9");
        return join(lines);
      }
      return "";
    }
    case LockFormat::kCondaLock: {
      Blocks b = condaLockBlocks(text);
      for (auto& blk : b.blocks) {
        if (join(blk).find("  platform: " + c.platform + "\n") == std::string::npos) continue;
        for (auto& l : blk) {
          if (startsWith(l, "  version: ")) {
            l = bumpVersionLine(l);
            return b.text();
          }
        }
      }
      return "";
    }
    case LockFormat::kPixi: {
      Blocks b = pixiBlocks(text);
      for (auto& blk : b.blocks) {
        for (auto& l : blk) {
          if (startsWith(l, "  version: ")) {
            l = bumpVersionLine(l);
            return b.text();
          }
        }
      }
      // v6: conda entries carry name and version in the archive name only; change
      // it consistently in the environment list and the package list.
      std::smatch m;
      std::regex re("- conda: (\\S+/)([^/\\s]+)-([^-/\\s]+)-([^-/\\s]+)\\.conda");
      if (!std::regex_search(text, m, re)) return "";
      std::string from = m[1].str() + m[2].str() + "-" + m[3].str() + "-" + m[4].str() + ".conda";
      std::string to =
          m[1].str() + m[2].str() + "-" + m[3].str() + ".post9-" + m[4].str() + ".conda";
      std::string out = text;
      for (size_t pos = out.find(from); pos != std::string::npos;
           pos = out.find(from, pos + to.size())) {
        out.replace(pos, from.size(), to);
      }
      return out;
    }
    case LockFormat::kFlox: {
      ordered_json j = ordered_json::parse(text);
      for (auto& p : j["packages"]) {
        if (p["system"] == c.platform) {
          p["version"] = p["version"].get<std::string>() + ".post9";
          return j.dump(2);
        }
      }
      return "";
    }
    case LockFormat::kNix:  // path-info has no versions; the name is in the store path
    case LockFormat::kAuto:
      return "";
  }
  return "";
}

// Flips one character of one digest the closure contains, everywhere it occurs.
std::string changeDigest(const std::string& text, const Closure& c) {
  for (const auto& p : c.packages) {
    for (const auto& d : p.digests) {
      std::string raw;
      if (startsWith(d, "sha256:"))
        raw = d.substr(7);
      else if (startsWith(d, "git:"))
        raw = d.substr(4);
      else
        raw = d;
      if (text.find(raw) == std::string::npos) continue;
      std::string changed = raw;
      size_t at = startsWith(d, "/") ? raw.rfind('/') + 1 : 0;  // store hash, first char
      changed[at] = changed[at] == 'a' ? 'b' : 'a';
      std::string out = text;
      for (size_t pos = out.find(raw); pos != std::string::npos; pos = out.find(raw, pos + 1)) {
        out.replace(pos, raw.size(), changed);
      }
      return out;
    }
  }
  return "";
}

class FixtureTest : public ::testing::TestWithParam<Fixture> {
 protected:
  std::string text() const { return readFileOrDie(fixturesDir() + "/" + GetParam().file); }
};

TEST_P(FixtureTest, ParsesWithPinnedCountHashAndCuda) {
  const Fixture& f = GetParam();
  Closure c = mustCompute(text(), optionsFor(f));
  EXPECT_EQ(c.format, f.format);
  EXPECT_EQ(c.packageCount(), f.count);
  EXPECT_EQ(c.closureHash, f.hash);
  EXPECT_EQ(c.cuda, f.cuda);
  EXPECT_EQ(c.weak, f.allowUnhashed);
  EXPECT_EQ(c.closureHash, closureHashOfCanonicalText(c.canonicalText));
  // computeClosure builds the text and the hash in one pass each; the
  // definitions (docs/closure-hash.md §1.3, §1.4) say the same.
  EXPECT_EQ(c.canonicalText, canonicalText(c.packages));
  EXPECT_EQ(c.closureHash, "sha256:" + sha256Hex(std::string(kHashDomain) + c.canonicalText));
  EXPECT_EQ(std::count(c.canonicalText.begin(), c.canonicalText.end(), '\n'),
            static_cast<long>(f.count));
  // The explicit format gives the same result as detection.
  ClosureOptions o = optionsFor(f);
  o.format = f.format;
  EXPECT_EQ(mustCompute(text(), o).closureHash, f.hash);
}

TEST_P(FixtureTest, CountMatchesManifestOrTheDocumentedReason) {
  const Fixture& f = GetParam();
  auto manifest = manifestCounts();
  ASSERT_TRUE(manifest.count(f.file)) << f.file << " missing from MANIFEST.tsv";
  const size_t listed = manifest[f.file];
  if (!f.platforms.empty()) {
    // Per-platform locks: the manifest counts entries of all platforms.
    size_t sum = 0;
    for (const auto& p : f.platforms) {
      ClosureOptions o = optionsFor(f);
      o.platform = p;
      sum += mustCompute(text(), o).packageCount();
    }
    EXPECT_EQ(sum, listed) << f.file;
  } else if (f.format == LockFormat::kUv) {
    // uv: the manifest counts every [[package]], including the project's root.
    EXPECT_EQ(f.count + 1, listed) << f.file;
  } else {
    EXPECT_EQ(f.count, listed) << f.file;
  }
}

TEST_P(FixtureTest, SameFileTwiceSameHash) {
  const Fixture& f = GetParam();
  std::string a = text(), b = text();
  EXPECT_EQ(mustCompute(a, optionsFor(f)).closureHash, mustCompute(b, optionsFor(f)).closureHash);
}

TEST_P(FixtureTest, ReorderingDoesNotChangeHash) {
  const Fixture& f = GetParam();
  std::string mutated = reorder(f.format, text());
  ASSERT_NE(mutated, text());
  EXPECT_EQ(mustCompute(mutated, optionsFor(f)).closureHash, f.hash) << mutated.substr(0, 400);
}

TEST_P(FixtureTest, WhitespaceAndCommentsDoNotChangeHash) {
  const Fixture& f = GetParam();
  std::string mutated = reformat(f.format, text());
  ASSERT_NE(mutated, text());
  EXPECT_EQ(mustCompute(mutated, optionsFor(f)).closureHash, f.hash) << mutated.substr(0, 400);
}

TEST_P(FixtureTest, ChangingOneVersionChangesHash) {
  const Fixture& f = GetParam();
  Closure base = mustCompute(text(), optionsFor(f));
  std::string mutated = changeVersion(f.format, text(), base);
  ASSERT_FALSE(mutated.empty()) << "no version to change in " << f.file;
  Closure c = mustCompute(mutated, optionsFor(f));
  EXPECT_NE(c.closureHash, f.hash);
  EXPECT_EQ(c.packageCount(), f.count);
  EXPECT_NE(c.canonicalText.find(".post9"), std::string::npos);
}

// The digest tests run on every fixture that has digests (all but the one
// deliberately unhashed uv lock, which the unhashed-package tests cover).
class HashedFixtureTest : public FixtureTest {};

std::vector<Fixture> hashedFixtures() {
  std::vector<Fixture> out;
  for (const Fixture& f : fixtures()) {
    if (!f.allowUnhashed) out.push_back(f);
  }
  return out;
}

TEST_P(HashedFixtureTest, ChangingOneDigestChangesHash) {
  const Fixture& f = GetParam();
  Closure base = mustCompute(text(), optionsFor(f));
  std::string mutated = changeDigest(text(), base);
  ASSERT_FALSE(mutated.empty());
  Closure c = mustCompute(mutated, optionsFor(f));
  EXPECT_NE(c.closureHash, f.hash);
  EXPECT_EQ(c.packageCount(), f.count);
}

TEST_P(HashedFixtureTest, TruncatedInsideADigestIsAnErrorWithLine) {
  const Fixture& f = GetParam();
  const std::string t = text();
  Closure base = mustCompute(t, optionsFor(f));
  // Cut in the middle of the first digest that occurs after the middle of the file.
  size_t cut = std::string::npos;
  for (const auto& p : base.packages) {
    for (const auto& d : p.digests) {
      std::string raw = startsWith(d, "sha256:") ? d.substr(7)
                        : startsWith(d, "git:")  ? d.substr(4)
                                                 : d;
      size_t pos = t.find(raw, t.size() / 2);
      if (pos != std::string::npos && (cut == std::string::npos || pos < cut))
        cut = pos + raw.size() / 2;
    }
  }
  if (cut == std::string::npos) cut = t.size() / 2;
  auto r = computeClosure(t.substr(0, cut), optionsFor(f));
  ASSERT_FALSE(r.isOk()) << f.file << " truncated at " << cut << " parsed as " << r->closureHash;
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(std::regex_search(r.status().message(), std::regex(":[0-9]+: [^ ]")))
      << r.status().message();
}

TEST_P(FixtureTest, CorruptedBytesNeverCrash) {
  const Fixture& f = GetParam();
  const std::string t = text();
  const char* junk[] = {"\x00", "\"", "[", "{", "\n- ", ":", "\\", "#", "\xff\xfe", "]]"};
  for (size_t k = 0; k < 40; ++k) {
    std::string m = t;
    size_t pos = (t.size() * (k + 1)) / 41;
    m.insert(pos, junk[k % 10]);
    auto r = computeClosure(m, optionsFor(f));
    if (!r.isOk()) {
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
      EXPECT_FALSE(r.status().message().empty());
    }
  }
}

std::string fixtureName(const ::testing::TestParamInfo<Fixture>& info) {
  std::string n = info.param.file.substr(0, 40);
  for (char& c : n) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return std::to_string(info.index) + "_" + n;
}

void PrintTo(const Fixture& f, std::ostream* os) { *os << f.file; }

INSTANTIATE_TEST_SUITE_P(AllFixtures, FixtureTest, ::testing::ValuesIn(fixtures()), fixtureName);
INSTANTIATE_TEST_SUITE_P(HashedFixtures, HashedFixtureTest, ::testing::ValuesIn(hashedFixtures()),
                         fixtureName);

TEST(FixtureSet, OnlyTheUnhashedUvLockIsExemptFromDigestTests) {
  EXPECT_EQ(fixtures().size() - hashedFixtures().size(), 1u);
}

// Both ways: every file has a row and every row has its file, so the parameterised tests
// above can neither skip a fixture nor run over an empty (or wrongly named) directory.
TEST(FixtureSet, EveryFixtureFileIsCoveredAndEveryRowHasItsFile) {
  std::vector<std::string> rows;
  for (const auto& f : fixtures()) rows.push_back(f.file);
  std::vector<std::string> files;
  for (const auto& file : testing::listFiles(fixturesDir())) {
    if (file == "MANIFEST.tsv" || file == "README.md") continue;
    files.push_back(file);
    EXPECT_NE(std::find(rows.begin(), rows.end(), file), rows.end())
        << file << " is a fixture without a test row";
  }
  for (const auto& row : rows) {
    EXPECT_NE(std::find(files.begin(), files.end(), row), files.end())
        << row << " is a test row without its file under " << fixturesDir();
  }
  EXPECT_EQ(files.size(), rows.size());
  EXPECT_EQ(rows.size(), 17u) << "the fixture table changed size: update this count with it";
}

TEST(FixtureSet, UnhashedUvFixtureIsAnErrorNamingThePackage) {
  std::string t = readFileOrDie(fixturesDir() +
                                "/uv/local-registry-no-hashes-variants-astral-uv-cpu_user.uv.lock");
  ClosureOptions o;
  o.sourceName = "uv.lock";
  auto r = computeClosure(t, o);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("uv.lock:5:"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("\"anyio 4.9.0\""), std::string::npos)
      << r.status().message();
}

TEST(FixtureSet, NixPathInfoArrayAndObjectFormsAgree) {
  const std::string dir = testing::testdataDir() + "/nix/";
  Closure a = mustCompute(readFileOrDie(dir + "hello-closure.path-info.array.json"), {});
  Closure b = mustCompute(readFileOrDie(dir + "hello-closure.path-info.object.json"), {});
  EXPECT_EQ(a.format, LockFormat::kNix);
  EXPECT_EQ(a.packageCount(), 5u);
  EXPECT_EQ(a.closureHash, b.closureHash);
  // Invariants for nix too (no fixture in the shared set).
  for (const std::string file :
       {"hello-closure.path-info.array.json", "hello-closure.path-info.object.json"}) {
    std::string t = readFileOrDie(dir + file);
    EXPECT_EQ(mustCompute(reorder(LockFormat::kNix, t), {}).closureHash, a.closureHash);
    EXPECT_EQ(mustCompute(reformat(LockFormat::kNix, t), {}).closureHash, a.closureHash);
    Closure changed = mustCompute(changeDigest(t, a), {});
    EXPECT_NE(changed.closureHash, a.closureHash);
    EXPECT_EQ(changed.packageCount(), 5u);
    auto truncated = computeClosure(t.substr(0, t.size() / 2), {});
    ASSERT_FALSE(truncated.isOk());
    EXPECT_TRUE(std::regex_search(truncated.status().message(), std::regex(":[0-9]+: json: ")))
        << truncated.status().message();
  }
}

}  // namespace
}  // namespace lockstep::closure
