// pip requirements with --hash (pip-compile --generate-hashes, uv pip compile,
// bazel rules_python locks). Hand-written line parser: no library, no file I/O;
// `-r` includes come through the IncludeReader.
#include <set>

#include "closure/lock_parsers.h"

namespace lockstep::closure::internal {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// pip strips "# ..." comments that start the line or follow whitespace.
std::string_view stripComment(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || isSpace(line[i - 1]))) return line.substr(0, i);
  }
  return line;
}

struct LogicalLine {
  std::string text;
  int line;  // first physical line
};

// Joins backslash continuations the way pip does: a physical line that carries a
// comment ends the logical line even when it ends with '\\'; comments are
// stripped after joining.
std::vector<LogicalLine> logicalLines(std::string_view text) {
  std::vector<LogicalLine> out;
  std::string cur;
  bool open = false;
  int curLine = 0;
  int lineNo = 0;
  size_t pos = 0;
  auto flush = [&]() {
    std::string_view body = trim(stripComment(cur));
    if (!body.empty()) out.push_back({std::string(body), curLine});
    cur.clear();
    open = false;
  };
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view raw =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    ++lineNo;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    if (!open) curLine = lineNo;
    bool hasComment = stripComment(raw).size() != raw.size();
    std::string_view right = raw;
    while (!right.empty() && isSpace(right.back())) right.remove_suffix(1);
    if (!hasComment && !right.empty() && right.back() == '\\') {
      right.remove_suffix(1);
      if (open) cur += ' ';
      cur.append(right);
      open = true;
    } else {
      if (open) cur += ' ';
      cur.append(raw);
      flush();
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  if (open) flush();
  return out;
}

// Splits a logical line into whitespace-separated tokens.
std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && isSpace(s[i])) ++i;
    size_t j = i;
    while (j < s.size() && !isSpace(s[j])) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

// Options that take a value as the next token when not written with '='.
bool optionTakesValue(std::string_view opt) {
  static const std::set<std::string_view> kOpts = {"-i",
                                                   "--index-url",
                                                   "--extra-index-url",
                                                   "-f",
                                                   "--find-links",
                                                   "--trusted-host",
                                                   "--no-binary",
                                                   "--only-binary",
                                                   "-c",
                                                   "--constraint",
                                                   "--use-feature",
                                                   "--config-settings",
                                                   "--global-option",
                                                   "--hash"};
  return kOpts.count(opt) > 0;
}

class PipParser {
 public:
  // `text` is the lock itself: it counts against the byte and line budgets.
  PipParser(const Ctx& ctx, std::string_view text)
      : ctx_(ctx), bytes_(text.size()), lines_(countLines(text)) {}

  Status parseFile(std::string_view text, const std::string& fileName, int depth) {
    for (const LogicalLine& ll : logicalLines(text)) {
      LOCKSTEP_RETURN_IF_ERROR(parseLine(ll, fileName, depth));
    }
    return Status::ok();
  }

  ParsedLock take() { return std::move(out_); }

 private:
  Status err(const std::string& file, int line, std::string_view field,
             std::string_view reason) const {
    return errorAt(file, line, field, reason);
  }
  Status tooLarge(const std::string& file, int line, std::string_view reason) const {
    return errorAt(file, line, "-r", reason, Code::kResourceExhausted);
  }

  // Each file is read and parsed once, however often it is included: a second
  // `-r` of a file adds the same packages again, which the canonical text
  // de-duplicates anyway. Without this, 3,000 lines of `-r a.txt` in a file
  // whose a.txt has 3,000 lines of `-r b.txt` parse b.txt nine million times.
  Status include(std::string_view target, const std::string& file, int line, int depth) {
    std::string name(target);
    while (startsWith(name, "./")) name.erase(0, 2);
    if (name.empty() || name.find('/') != std::string::npos ||
        name.find('\\') != std::string::npos || name == "." || name == "..") {
      return err(file, line, "-r",
                 "include \"" + std::string(target) + "\" is not a file in the same directory");
    }
    if (!ctx_.options.includes) {
      return err(file, line, "-r", "include \"" + name + "\" needs a file reader (none given)");
    }
    if (active_.count(name)) {
      return err(file, line, "-r", "include \"" + name + "\" is recursive");
    }
    if (done_.count(name)) return Status::ok();
    const Limits& limits = ctx_.limits();
    if (depth >= limits.maxIncludeDepth) {
      return err(file, line, "-r",
                 "include \"" + name + "\" is nested too deeply (more than " +
                     std::to_string(limits.maxIncludeDepth) + " levels)");
    }
    if (done_.size() + active_.size() >= limits.maxIncludeFiles) {
      return tooLarge(file, line,
                      "include \"" + name + "\" is one file too many; the limit is " +
                          std::to_string(limits.maxIncludeFiles) + " included files");
    }
    const size_t budget = limits.maxBytes > bytes_ ? limits.maxBytes - bytes_ : 0;
    auto text = ctx_.options.includes->read(name, budget);
    if (!text.isOk() || text->size() > budget) {
      if (text.isOk() || text.status().code() == Code::kResourceExhausted) {
        return tooLarge(file, line,
                        "include \"" + name + "\" takes the lock and its includes over " +
                            std::to_string(limits.maxBytes) + " bytes");
      }
      return err(file, line, "-r",
                 "cannot read include \"" + name + "\": " + text.status().message());
    }
    bytes_ += text->size();
    lines_ += countLines(*text);
    if (lines_ > limits.maxLines) {
      return tooLarge(file, line,
                      "include \"" + name + "\" takes the lock and its includes over " +
                          std::to_string(limits.maxLines) + " lines");
    }
    active_.insert(name);
    Status st = parseFile(*text, name, depth + 1);
    active_.erase(name);
    done_.insert(name);
    return st;
  }

  Status parseLine(const LogicalLine& ll, const std::string& file, int depth) {
    std::string_view s = trim(ll.text);
    // Split the requirement part from trailing per-requirement options (--hash ...).
    std::vector<std::string_view> toks = tokens(s);
    if (toks.empty()) return Status::ok();
    std::string_view first = toks[0];

    if (first == "-r" || first == "--requirement" || startsWith(first, "-r") ||
        startsWith(first, "--requirement=")) {
      std::string_view target;
      if (first == "-r" || first == "--requirement") {
        if (toks.size() < 2) return err(file, ll.line, "-r", "missing file name");
        target = toks[1];
      } else if (startsWith(first, "--requirement=")) {
        target = first.substr(14);
      } else {
        target = first.substr(2);
      }
      return include(target, file, ll.line, depth);
    }
    if (first == "-e" || first == "--editable" || startsWith(first, "--editable=") ||
        startsWith(first, "-e")) {
      return Status::ok();  // the project's own tree: not part of the runtime
    }
    if (first == "--hash" || startsWith(first, "--hash=")) {
      return err(file, ll.line, "--hash",
                 "hash outside a requirement (a broken line continuation?)");
    }
    if (first.front() == '-')
      return Status::ok();  // global options: index URLs, --require-hashes, ...

    // Requirement: everything up to the first " --option", markers after ';'.
    std::string_view req = s;
    std::vector<std::string_view> opts;
    {
      size_t cut = std::string_view::npos;
      for (size_t i = 1; i + 1 < s.size(); ++i) {
        if (isSpace(s[i - 1]) && s[i] == '-' && s[i + 1] == '-') {
          cut = i;
          break;
        }
      }
      if (cut != std::string_view::npos) {
        req = trim(s.substr(0, cut));
        opts = tokens(s.substr(cut));
      }
    }
    std::vector<std::string> digests;
    for (size_t i = 0; i < opts.size(); ++i) {
      std::string_view o = opts[i];
      std::string_view value;
      if (startsWith(o, "--hash=")) {
        value = o.substr(7);
      } else if (o == "--hash") {
        if (i + 1 >= opts.size()) return err(file, ll.line, "--hash", "missing value");
        value = opts[++i];
      } else {
        if (optionTakesValue(o) && i + 1 < opts.size()) ++i;
        continue;
      }
      if (!hasSha256Prefix(value)) {
        if (value.find(':') == std::string_view::npos) {
          return err(file, ll.line, "--hash",
                     "malformed hash \"" + std::string(value) + "\" (want algo:hex)");
        }
        continue;  // sha384/sha512: not a digest of the contract
      }
      auto d = canonicalSha256(value);
      if (!d) {
        return err(file, ll.line, "--hash", "malformed sha256 \"" + std::string(value) + "\"");
      }
      digests.push_back(*d);
    }

    size_t semi = req.find(';');
    std::string_view spec = trim(semi == std::string_view::npos ? req : req.substr(0, semi));
    if (spec.empty()) return err(file, ll.line, "requirement", "empty requirement before ';'");

    // Local paths and archives are the project's own trees, left out.
    if (spec.front() == '.' || spec.front() == '/' || startsWith(spec, "file:"))
      return Status::ok();

    size_t n = 0;
    while (n < spec.size() && isNameChar(spec[n])) ++n;
    std::string name(spec.substr(0, n));
    if (name.empty()) {
      return err(file, ll.line, "requirement",
                 "cannot read a package name in \"" + std::string(spec) + "\"");
    }
    std::string_view rest = trim(spec.substr(n));
    if (!rest.empty() && rest.front() == '[') {  // extras are dropped
      size_t close = rest.find(']');
      if (close == std::string_view::npos) {
        return err(file, ll.line, "requirement",
                   "unclosed extras in \"" + std::string(spec) + "\"");
      }
      rest = trim(rest.substr(close + 1));
    }
    std::string version;
    if (startsWith(rest, "@")) {  // direct reference: name @ url
      std::string_view url = trim(rest.substr(1));
      if (startsWith(url, "file:") || url.empty() || url.front() == '.' || url.front() == '/') {
        return Status::ok();  // local tree
      }
      if (startsWith(url, "git+") || startsWith(url, "hg+") || startsWith(url, "svn+") ||
          startsWith(url, "bzr+")) {
        auto commit = gitCommitFromUrl(url);
        if (!commit) {
          return err(file, ll.line, "requirement",
                     "\"" + name + "\" VCS reference is not pinned to a full commit");
        }
        digests.push_back("git:" + *commit);
      } else {
        size_t frag = url.find("#sha256=");
        if (frag != std::string_view::npos) {
          auto d = canonicalSha256(url.substr(frag + 8));
          if (!d)
            return err(file, ll.line, "requirement", "malformed #sha256= in \"" + name + "\" URL");
          digests.push_back(*d);
        }
      }
    } else if (startsWith(rest, "===") || startsWith(rest, "==")) {
      version = std::string(trim(rest.substr(startsWith(rest, "===") ? 3 : 2)));
      if (version.empty() || version.find_first_of(",<>!=~*") != std::string::npos) {
        return err(file, ll.line, "requirement",
                   "\"" + name + "\" is not pinned to one version (" + std::string(rest) + ")");
      }
    } else {
      return err(file, ll.line, "requirement",
                 "\"" + name + "\" is not pinned with == (" +
                     (rest.empty() ? std::string("no version") : std::string(rest)) + ")");
    }
    if (out_.packages.size() >= ctx_.limits().maxEntries) {
      return errorAt(file, ll.line, "requirement",
                     "more than " + std::to_string(ctx_.limits().maxEntries) +
                         " requirements in the lock and its includes",
                     Code::kResourceExhausted);
    }
    out_.packages.push_back(RawPackage{"pypi", name, version, std::move(digests),
                                       file + ":" + std::to_string(ll.line)});
    return Status::ok();
  }

  const Ctx& ctx_;
  ParsedLock out_;
  std::set<std::string> active_;  // files being parsed (the include stack)
  std::set<std::string> done_;    // files parsed completely
  size_t bytes_;                  // the lock plus every distinct include read so far
  size_t lines_;
};

}  // namespace

StatusOr<ParsedLock> parsePipRequirements(std::string_view text, const Ctx& ctx) {
  PipParser parser(ctx, text);
  LOCKSTEP_RETURN_IF_ERROR(parser.parseFile(text, ctx.source, 0));
  return parser.take();
}

}  // namespace lockstep::closure::internal
