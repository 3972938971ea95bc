// `lockstep mirror push|fetch`: a lock's artifact files kept in an OCI repository as
// blobs under their own digests, with an artifact manifest per closure, and read back
// into a wheelhouse or conda channel (docs/supply-chain.md, "The mirror"). The pure part
// is mirror/; this file reads files, hashes them and talks to the registry (with the
// CLI's registry access: registry_access.h) and to the lock's https URLs.
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <thread>

#include "closure/closure.h"
#include "cmd/lockstep/file_include_reader.h"
#include "cmd/lockstep/path_names.h"
#include "cmd/lockstep/registry_access.h"
#include "cmd/lockstep/verbs.h"
#include "common/flags.h"
#include "mirror/mirror.h"
#include "mirror/narinfo.h"
#include "mirror/xz.h"
#include "operator/registry/beast_transport.h"
#include "operator/registry/credentials.h"
#include "operator/registry/reference.h"
#include "operator/registry/referrers.h"

namespace lockstep::cli {
namespace {

namespace fs = std::filesystem;
using mirror::Entry;
using mirror::Plan;

// One transfer is held in memory (the registry client sends and reads whole bodies).
constexpr size_t kMaxFileBytes = size_t{4} << 30;
constexpr std::chrono::seconds kTransferTimeout{600};

std::string hexOf(const unsigned char* d, unsigned n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += kHex[d[i] >> 4];
    out += kHex[d[i] & 15];
  }
  return out;
}

// "sha256:<hex>" of a file, read in chunks.
StatusOr<std::string> fileDigest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalidArgument(path + ": cannot be read");
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::vector<char> buf(size_t{1} << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx, buf.data(), static_cast<size_t>(in.gcount()));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(ctx, md, &n);
  EVP_MD_CTX_free(ctx);
  if (in.bad()) return invalidArgument(path + ": read error");
  return "sha256:" + hexOf(md, n);
}

// GET an https URL, following up to 5 redirects; `caPem` empty: the system roots.
StatusOr<std::string> httpsGet(const std::string& url, const RegistryAccess& access,
                               const std::string& caPem = "") {
  std::string current = url;
  for (int hop = 0; hop < 6; ++hop) {
    auto split = registry::splitUrl(current);
    if (!split.isOk()) return split.status().withContext(url);
    if (split->first.rfind("https://", 0) != 0) return invalidArgument(current + ": not https");
    registry::BeastTransportOptions options;
    options.timeout = access.timeout;
    options.maxResponseBytes = access.maxResponseBytes;
    options.caPem = caPem;
    auto t = registry::BeastTransport::create(split->first, options);
    if (!t.isOk()) return t.status().withContext(url);
    registry::HttpRequest req;
    req.target = split->second.empty() ? "/" : split->second;
    auto resp = (*t)->send(req);
    if (!resp.isOk()) return resp.status().withContext(url);
    if (resp->status >= 300 && resp->status < 400) {
      std::string location = resp->header("Location");
      if (location.empty()) return unavailable(current + ": HTTP " + std::to_string(resp->status));
      current = location.front() == '/' ? split->first + location : location;
      continue;
    }
    if (resp->status != 200) {
      return Status(registry::codeForHttpStatus(resp->status),
                    current + ": HTTP " + std::to_string(resp->status));
    }
    return std::move(resp->body);
  }
  return unavailable(url + ": more than 5 redirects");
}

// --nix-cache: where it is and the certificates its https server is checked against.
struct NixCache {
  std::string url;    // parseNixCacheUrl's; "" when not given
  std::string caPem;  // --nix-cache-cert-dir's; "" the system roots
};

StatusOr<std::string> getFromCache(const std::string& url, const NixCache& cache,
                                   const RegistryAccess& access) {
  if (url.rfind("file://", 0) == 0) return readFile(url.substr(7), kMaxFileBytes);
  return httpsGet(url, access, cache.caPem);
}

// The NAR of `e` from a binary cache: its narinfo (the lock's NarHash and NarSize, a
// compression read here), the file it names (its FileHash when given), decompressed.
// The caller still checks the NAR's sha256 against the lock.
StatusOr<std::string> narFromCache(const Entry& e, const std::string& narInfoUrl,
                                   const NixCache& cache, const RegistryAccess& access) {
  auto text = getFromCache(narInfoUrl, cache, access);  // errors name the URL or file
  if (!text.isOk()) return text.status();
  auto info = mirror::parseNarInfo(*text, narInfoUrl);
  if (!info.isOk()) return info.status();
  LOCKSTEP_RETURN_IF_ERROR(mirror::checkNarInfo(*info, e, narInfoUrl));
  auto fileUrl = mirror::narFileUrl(cache.url, *info, narInfoUrl);
  if (!fileUrl.isOk()) return fileUrl.status();
  auto file = getFromCache(*fileUrl, cache, access);
  if (!file.isOk()) return file.status();
  if (!info->fileHash.empty()) {
    const std::string got = registry::sha256Digest(*file);
    if (got != info->fileHash) {
      return invalidArgument(*fileUrl + ": sha256 mismatch: the narinfo's FileHash is " +
                             info->fileHash + ", the file is " + got);
    }
  }
  if (info->compression == "xz") {
    auto nar = mirror::xzDecompress(*file, kMaxFileBytes);
    if (!nar.isOk()) return nar.status().withContext(*fileUrl);
    return nar;
  }
  return file;
}

// The progress line on a TTY (stderr), redrawn in place; nothing when not a TTY.
class Progress {
 public:
  Progress(std::ostream& err, size_t total, std::string verb)
      : err_(err), total_(total), verb_(std::move(verb)), tty_(isatty(STDERR_FILENO) == 1) {}
  void done(bool transferred, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
    if (transferred) {
      ++transferred_;
      bytes_ += bytes;
    } else {
      ++present_;
    }
    if (tty_) {
      err_ << "\r" << mirror::progressLine(done_, total_, transferred_, present_, bytes_, verb_)
           << "\x1b[K" << std::flush;
    }
  }
  void failed(const std::string& message) {
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
    ++failed_;
    if (tty_) err_ << "\r\x1b[K";
    err_ << message << "\n";
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mu_);
    if (tty_ && done_ > 0) err_ << "\n";
  }
  size_t transferred() const { return transferred_; }
  size_t present() const { return present_; }
  size_t failures() const { return failed_; }
  uint64_t bytes() const { return bytes_; }

 private:
  std::ostream& err_;
  size_t total_;
  std::string verb_;
  bool tty_;
  std::mutex mu_;
  size_t done_ = 0, transferred_ = 0, present_ = 0, failed_ = 0;
  uint64_t bytes_ = 0;
};

// Runs work(i) for i in [0, n) on `jobs` threads, each with its own registry client
// (a RegistryClient is not for concurrent use).
Status runPool(size_t n, int jobs, const std::string& host, const RegistryAccess& access,
               const std::function<void(size_t, registry::RegistryClient&)>& work) {
  std::atomic<size_t> next{0};
  std::vector<std::unique_ptr<registry::RegistryClient>> clients;
  const size_t threads = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(jobs), n));
  for (size_t t = 0; t < threads; ++t) {
    auto c = openRegistry(host, access);
    if (!c.isOk()) return c.status();
    clients.push_back(std::move(*c));
  }
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t i = next++; i < n; i = next++) work(i, *clients[t]);
    });
  }
  for (auto& th : pool) th.join();
  return Status::ok();
}

struct Common {
  Plan plan;
  mirror::RepositoryRef repo;
  std::string host;  // the API host
  RegistryAccess access;
  int jobs = 4;
};

std::vector<FlagSpec> commonFlags(std::vector<FlagSpec> more) {
  std::vector<FlagSpec> specs{
      {"lock", "", "the lock file"},
      {"format", "", "lock format (default: detect)"},
      {"platform", "", "per-platform locks: the platform"},
      {"environment", "", "pixi environment"},
      {"tag", "", "the manifest's tag (default closure-<hex of the closure hash>)"},
      {"authfile", "", "docker config file with the registry's credentials"},
      {"cert-dir", "", "directory of *.crt files the registry's certificate is checked against"},
      {"jobs", "4", "parallel transfers", FlagType::kInt},
  };
  specs.insert(specs.end(), more.begin(), more.end());
  return specs;
}

// Parses flags, reads the lock and plans; nullopt with `rc` set on an error.
std::optional<Common> prepare(const VerbContext& ctx, Flags& flags, const std::string& name,
                              const std::vector<std::string>& args, const std::string& repoFlag,
                              int& rc) {
  std::vector<const char*> argv{name.c_str()};
  for (const auto& a : args) argv.push_back(a.c_str());
  if (Status s = flags.parse(static_cast<int>(argv.size()), argv.data()); !s.isOk()) {
    ctx.err << name << ": " << s.message() << "\n";
    mirrorUsage(ctx.err, ctx.programName);
    rc = kExitUsage;
    return std::nullopt;
  }
  if (flags.helpRequested()) {
    mirrorUsage(ctx.out, ctx.programName);
    rc = kExitOk;
    return std::nullopt;
  }
  const std::string lock = flags.get("lock");
  if (lock.empty() || flags.get(repoFlag).empty()) {
    ctx.err << name << ": --lock and --" << repoFlag << " are required\n";
    mirrorUsage(ctx.err, ctx.programName);
    rc = kExitUsage;
    return std::nullopt;
  }
  rc = kExitFailure;
  Common c;
  c.jobs = std::max(1, flags.getInt("jobs"));
  auto repo = mirror::parseRepository(flags.get(repoFlag));
  if (!repo.isOk()) {
    ctx.err << name << ": --" << repoFlag << ": " << repo.status().message() << "\n";
    rc = kExitUsage;
    return std::nullopt;
  }
  c.repo = *repo;
  c.host = registry::PackageRef{c.repo.registry, c.repo.repository, ""}.apiHost();
  c.access.authFile = flags.get("authfile");
  c.access.certDir = flags.get("cert-dir");
  c.access.timeout = kTransferTimeout;
  c.access.maxResponseBytes = kMaxFileBytes;

  closure::ClosureOptions options;
  if (std::string f = flags.get("format"); !f.empty()) {
    auto fmt = closure::parseFormatName(f);
    if (!fmt.isOk()) {
      ctx.err << name << ": " << fmt.status().message() << "\n";
      return std::nullopt;
    }
    options.format = *fmt;
  }
  options.platform = flags.get("platform");
  options.environment = flags.get("environment");
  auto text = readFile(lock, options.limits.maxBytes);
  if (!text.isOk()) {
    ctx.err << name << ": " << text.status().message() << "\n";
    return std::nullopt;
  }
  FileIncludeReader includes(lock == "-" ? "." : dirName(lock));
  options.includes = &includes;
  options.sourceName = lock == "-" ? "stdin" : baseName(lock);
  auto closure = closure::computeClosure(*text, options);
  if (!closure.isOk()) {
    ctx.err << name << ": " << closure.status().message() << "\n";
    return std::nullopt;
  }
  auto plan = mirror::planMirror(*closure);
  if (!plan.isOk()) {
    ctx.err << name << ": " << plan.status().message() << "\n";
    return std::nullopt;
  }
  c.plan = std::move(*plan);
  if (c.plan.entries.empty()) {
    ctx.err << name << ": the lock's closure has no artifact file to mirror\n";
    return std::nullopt;
  }
  return c;
}

// The --from-dir listing: every regular file by name (the first in path order).
StatusOr<mirror::DirIndex> listDir(const std::string& dir) {
  mirror::DirIndex index;
  index.given = true;
  index.dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return invalidArgument("--from-dir " + dir + ": not a directory");
  std::vector<std::string> paths;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec)) paths.push_back(it->path().string());
  }
  if (ec) return invalidArgument("--from-dir " + dir + ": " + ec.message());
  std::sort(paths.begin(), paths.end());
  for (const std::string& p : paths) index.byName.emplace(baseName(p), p);
  return index;
}

int runPush(const VerbContext& ctx, const std::vector<std::string>& args) {
  Flags flags(commonFlags({
      {"to", "", "the repository: host[:port]/path"},
      {"from-dir", "", "a local wheelhouse or conda channel to take files from"},
      {"nix-cache", "", "a Nix binary cache (https:// or file://) to take NARs from"},
      {"nix-cache-cert-dir", "", "*.crt files the --nix-cache server is checked against"},
  }));
  int rc = kExitOk;
  auto common = prepare(ctx, flags, "mirror push", args, "to", rc);
  if (!common) return rc;
  Plan& plan = common->plan;
  const std::string& repository = common->repo.repository;
  const std::string where = common->repo.registry + "/" + repository;

  NixCache nixCache;
  if (std::string u = flags.get("nix-cache"); !u.empty()) {
    auto parsed = mirror::parseNixCacheUrl(u);
    if (!parsed.isOk()) {
      ctx.err << "mirror push: " << parsed.status().message() << "\n";
      return kExitUsage;
    }
    nixCache.url = *parsed;
  }
  if (std::string d = flags.get("nix-cache-cert-dir"); !d.empty()) {
    auto pem = certificates(d, "--nix-cache-cert-dir");
    if (!pem.isOk()) {
      ctx.err << "mirror push: " << pem.status().message() << "\n";
      return kExitFailure;
    }
    nixCache.caPem = *pem;
  }

  mirror::DirIndex dir;
  if (std::string d = flags.get("from-dir"); !d.empty()) {
    auto listed = listDir(d);
    if (!listed.isOk()) {
      ctx.err << "mirror push: " << listed.status().message() << "\n";
      return kExitFailure;
    }
    dir = std::move(*listed);
    // Files the lock does not name (a pip lock gives only hashes) are found by digest:
    // the directory's other files are hashed once.
    bool lookup = false;
    std::set<std::string> named;
    for (const Entry& e : plan.entries) {
      lookup = lookup || mirror::needsDigestLookup(e, dir);
      // A NAR's name is ours, not the lock's: its file is found by content.
      if (!e.fileName.empty() && e.storePath.empty()) named.insert(e.fileName);
    }
    if (lookup) {
      for (const auto& [name, path] : dir.byName) {
        if (named.count(name)) continue;
        auto d2 = fileDigest(path);
        if (d2.isOk()) dir.byDigest.emplace(*d2, path);
      }
    }
  }

  Progress progress(ctx.err, plan.entries.size(), "pushed");
  Status pool = runPool(
      plan.entries.size(), common->jobs, common->host, common->access,
      [&](size_t i, registry::RegistryClient& client) {
        Entry& e = plan.entries[i];
        const mirror::Source source = mirror::pickSource(e, dir, nixCache.url);
        if (e.fileName.empty() && source.kind == mirror::Source::kDirFile) {
          mirror::nameEntry(e, baseName(source.location));
        }
        const std::string label =
            !e.storePath.empty()
                ? e.storePath
                : e.name + " " + e.version + " " + (e.fileName.empty() ? e.digest : e.fileName);
        auto have = client.blobSize(repository, e.digest);
        if (!have.isOk()) {
          progress.failed("mirror push: " + label + ": " + have.status().message());
          return;
        }
        if (have->has_value() && !e.fileName.empty()) {
          if (e.size < 0 && **have >= 0) e.size = **have;
          if (e.size < 0 && source.kind == mirror::Source::kDirFile) {
            std::error_code ec;
            e.size = static_cast<int64_t>(fs::file_size(source.location, ec));
          }
          if (e.size >= 0) {
            progress.done(false, 0);
            return;
          }
        }
        if (source.kind == mirror::Source::kMissing) {
          progress.failed("mirror push: " + label + " " + e.digest + ": " + source.location);
          return;
        }
        StatusOr<std::string> bytes =
            source.kind == mirror::Source::kDirFile ? readFile(source.location, kMaxFileBytes)
            : source.kind == mirror::Source::kNixCache
                ? narFromCache(e, source.location, nixCache, common->access)
                : httpsGet(source.location, common->access);
        if (!bytes.isOk()) {
          progress.failed("mirror push: " + label + ": " + bytes.status().message());
          return;
        }
        const std::string got = registry::sha256Digest(*bytes);
        if (got != e.digest) {
          const std::string what =
              e.storePath.empty() ? "" : " of the NAR of " + e.storePath + " (its narHash)";
          progress.failed("mirror push: " + source.location + ": sha256 mismatch: the lock says " +
                          e.digest + what + ", the file is " + got + "; not pushed");
          return;
        }
        if (!e.storePath.empty() && e.size >= 0 && static_cast<int64_t>(bytes->size()) != e.size) {
          progress.failed("mirror push: " + source.location + ": the NAR of " + e.storePath +
                          " is " + std::to_string(bytes->size()) + " bytes, the lock's narSize " +
                          std::to_string(e.size) + "; not pushed");
          return;
        }
        e.size = static_cast<int64_t>(bytes->size());
        if (have->has_value()) {  // present, but its name or size had to be read
          progress.done(false, 0);
          return;
        }
        auto pushed = client.pushBlob(repository, *bytes);
        if (!pushed.isOk()) {
          progress.failed("mirror push: " + label + ": " + pushed.status().message());
          return;
        }
        progress.done(true, bytes->size());
      });
  progress.finish();
  if (!pool.isOk()) {
    ctx.err << "mirror push: " << pool.message() << "\n";
    return kExitFailure;
  }
  for (const std::string& n : plan.notMirrored) ctx.err << "not mirrored: " << n << "\n";
  if (progress.failures() > 0) {
    ctx.err << "mirror push: " << progress.failures() << " of " << plan.entries.size()
            << " files failed; no manifest written (run again to resume: what was pushed "
               "stays)\n";
    return kExitFailure;
  }

  auto manifest = mirror::mirrorManifest(plan);
  if (!manifest.isOk()) {
    ctx.err << "mirror push: " << manifest.status().message() << "\n";
    return kExitFailure;
  }
  auto client = openRegistry(common->host, common->access);
  if (!client.isOk()) {
    ctx.err << "mirror push: " << client.status().message() << "\n";
    return kExitFailure;
  }
  auto& c = **client;
  const std::string configDigest = registry::sha256Digest(registry::kEmptyBlob);
  auto config = c.blobSize(repository, configDigest);
  if (config.isOk() && !config->has_value()) {
    auto pushed = c.pushBlob(repository, registry::kEmptyBlob);
    if (!pushed.isOk()) config = pushed.status();
  }
  if (!config.isOk()) {
    ctx.err << "mirror push: " << config.status().message() << "\n";
    return kExitFailure;
  }
  registry::Manifest m;
  m.mediaType = registry::kOciManifest;
  m.bytes = *manifest;
  m.digest = registry::sha256Digest(m.bytes);
  const std::string tag =
      flags.get("tag").empty() ? mirror::mirrorTag(plan.closureHash) : flags.get("tag");
  bool wrote = false;
  auto current = c.resolveTag(repository, tag);
  if (!current.isOk() && current.status().code() != Code::kNotFound) {
    ctx.err << "mirror push: " << current.status().message() << "\n";
    return kExitFailure;
  }
  if (!current.isOk() || *current != m.digest) {
    if (Status s = c.putManifest(repository, tag, m); !s.isOk()) {
      ctx.err << "mirror push: " << s.message() << "\n";
      return kExitFailure;
    }
    wrote = true;
  }
  ctx.out << "mirrored " << plan.entries.size() << " files of " << plan.format << " lock "
          << plan.closureHash << ": " << progress.transferred() << " pushed ("
          << mirror::humanBytes(progress.bytes()) << "), " << progress.present()
          << " already present\n"
          << "manifest " << m.digest << " at " << where << ":" << tag
          << (wrote ? "" : " (unchanged)") << "\n";
  return kExitOk;
}

int runFetch(const VerbContext& ctx, const std::vector<std::string>& args) {
  Flags flags(commonFlags({
      {"from", "", "the repository: host[:port]/path"},
      {"dest", "", "the directory to write the wheelhouse / channel into"},
  }));
  int rc = kExitOk;
  auto common = prepare(ctx, flags, "mirror fetch", args, "from", rc);
  if (!common) return rc;
  const std::string dest = flags.get("dest");
  if (dest.empty()) {
    ctx.err << "mirror fetch: --dest is required\n";
    return kExitUsage;
  }
  const Plan& plan = common->plan;
  const std::string& repository = common->repo.repository;
  const std::string tag =
      flags.get("tag").empty() ? mirror::mirrorTag(plan.closureHash) : flags.get("tag");
  const std::string where = common->repo.registry + "/" + repository + ":" + tag;

  auto client = openRegistry(common->host, common->access);
  if (!client.isOk()) {
    ctx.err << "mirror fetch: " << client.status().message() << "\n";
    return kExitFailure;
  }
  auto bytes = (*client)->getManifest(repository, tag);
  if (!bytes.isOk()) {
    ctx.err << "mirror fetch: " << where << ": " << bytes.status().message() << "\n";
    return kExitFailure;
  }
  auto manifest = mirror::parseMirrorManifest(bytes->bytes, where);
  if (!manifest.isOk()) {
    ctx.err << "mirror fetch: " << manifest.status().message() << "\n";
    return kExitFailure;
  }
  mirror::FetchSet set = mirror::fetchSet(plan, *manifest);
  if (!set.missing.empty()) {
    ctx.err << "mirror fetch: " << where << " lacks " << set.missing.size() << " of the lock's "
            << plan.entries.size() << " files:\n";
    for (size_t i = 0; i < set.missing.size() && i < 20; ++i)
      ctx.err << "  " << set.missing[i] << "\n";
    if (set.missing.size() > 20) ctx.err << "  ... and " << set.missing.size() - 20 << " more\n";
    return kExitFailure;
  }
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) {
    ctx.err << "mirror fetch: --dest " << dest << ": " << ec.message() << "\n";
    return kExitFailure;
  }

  Progress progress(ctx.err, set.entries.size(), "fetched");
  Status pool = runPool(
      set.entries.size(), common->jobs, common->host, common->access,
      [&](size_t i, registry::RegistryClient& c) {
        const Entry& e = set.entries[i];
        const fs::path path = fs::path(dest) / mirror::destPath(e);
        std::error_code fec;
        if (fs::is_regular_file(path, fec)) {
          auto d = fileDigest(path.string());
          if (d.isOk() && *d == e.digest) {
            progress.done(false, 0);
            return;
          }
        }
        auto blob = c.getBlob(repository, e.digest, kMaxFileBytes);  // verified against digest
        if (!blob.isOk()) {
          progress.failed("mirror fetch: " + e.fileName + ": " + blob.status().message());
          return;
        }
        if (!e.storePath.empty() && e.size >= 0 && static_cast<int64_t>(blob->size()) != e.size) {
          progress.failed("mirror fetch: " + e.fileName + ": the NAR of " + e.storePath + " is " +
                          std::to_string(blob->size()) + " bytes, the lock's narSize " +
                          std::to_string(e.size));
          return;
        }
        fs::create_directories(path.parent_path(), fec);
        const fs::path tmp = path.string() + ".lockstep-partial";
        {
          std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
          out.write(blob->data(), static_cast<std::streamsize>(blob->size()));
          if (!out) {
            progress.failed("mirror fetch: " + tmp.string() + ": cannot be written");
            return;
          }
        }
        fs::rename(tmp, path, fec);
        if (fec) {
          progress.failed("mirror fetch: " + path.string() + ": " + fec.message());
          return;
        }
        progress.done(true, blob->size());
      });
  progress.finish();
  if (!pool.isOk()) {
    ctx.err << "mirror fetch: " << pool.message() << "\n";
    return kExitFailure;
  }
  if (progress.failures() > 0) {
    ctx.err << "mirror fetch: " << progress.failures() << " of " << set.entries.size()
            << " files failed\n";
    return kExitFailure;
  }
  // NARs: a file:// binary cache over them (every narinfo from the lock: two store paths
  // may share one NAR, downloaded once).
  auto cache = mirror::nixBinaryCache(plan.entries);
  if (!cache.isOk()) {
    ctx.err << "mirror fetch: " << cache.status().message() << "\n";
    return kExitFailure;
  }
  for (const mirror::CacheFile& f : *cache) {
    const fs::path path = fs::path(dest) / f.path;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << f.text;
    if (!out) {
      ctx.err << "mirror fetch: " << path.string() << ": cannot be written\n";
      return kExitFailure;
    }
  }
  bool pypi = false;
  for (const Entry& e : set.entries) pypi = pypi || e.ecosystem == "pypi";
  if (pypi) {
    std::ofstream req(fs::path(dest) / "requirements.txt", std::ios::trunc);
    req << mirror::requirementsText(set.entries);
    if (!req) {
      ctx.err << "mirror fetch: " << dest << "/requirements.txt: cannot be written\n";
      return kExitFailure;
    }
  }
  ctx.out << "fetched " << set.entries.size() << " files of " << plan.format << " lock "
          << plan.closureHash << " from " << where << " into " << dest << ": "
          << progress.transferred() << " downloaded (" << mirror::humanBytes(progress.bytes())
          << "), " << progress.present() << " already there, every one verified\n";
  if (pypi) {
    ctx.out << "install offline: pip install --no-index --find-links " << dest
            << " --require-hashes -r " << dest << "/requirements.txt\n";
  }
  if (!cache->empty()) {
    ctx.out << "a Nix binary cache of " << cache->size() - 1
            << " store paths (unsigned): nix copy --from file://" << fs::absolute(dest).string()
            << " --no-require-sigs <store path>\n";
  }
  return kExitOk;
}

}  // namespace

void mirrorUsage(std::ostream& os, const std::string& program) {
  os << "usage: " << program
     << " mirror push  --lock FILE --to REPO [--from-dir DIR] [--nix-cache URL] [flags]\n"
        "       "
     << program
     << " mirror fetch --lock FILE --from REPO --dest DIR [flags]\n"
        "\n"
        "push: every artifact file of the lock's closure (wheels, sdists, conda packages, Nix\n"
        "NARs) is taken from --from-dir (by file name, else by digest; a NAR by digest) or the\n"
        "lock's https URL, checked against the lock's sha256 (a NAR's narHash) and pushed as a\n"
        "blob under that digest unless the registry has it; then an artifact manifest listing\n"
        "them is tagged closure-<hex>. Run again to resume. fetch: the files of that manifest\n"
        "for the lock, verified, written under DIR (conda packages under DIR/<subdir>/) with\n"
        "DIR/requirements.txt for pip --require-hashes, NARs as a Nix binary cache (DIR/nar/,\n"
        "DIR/<hash>.narinfo) (docs/supply-chain.md, \"The mirror\").\n"
        "  --lock FILE          the lock (uv, pip, conda-lock, pixi, poetry, nix path-info)\n"
        "  --to / --from REPO   host[:port]/path of the OCI repository\n"
        "  --from-dir DIR       push: a local wheelhouse or conda channel (searched recursively)\n"
        "  --nix-cache URL      push: a Nix binary cache (https://… or file:///…) for NARs not\n"
        "                       in --from-dir (narinfo checked against the lock; none or xz)\n"
        "  --nix-cache-cert-dir D  *.crt files the --nix-cache server is checked against\n"
        "  --dest DIR           fetch: where to write\n"
        "  --tag T              the manifest's tag (default closure-<hex of the closure hash>)\n"
        "  --format, --platform, --environment   as for closure-hash\n"
        "  --authfile F         docker config with credentials (else $REGISTRY_AUTH_FILE,\n"
        "                       $DOCKER_CONFIG/config.json, ~/.docker/config.json)\n"
        "  --cert-dir D         *.crt files the registry's certificate is checked against\n"
        "                       (else the system roots)\n"
        "  --jobs N             parallel transfers (default 4)\n"
        "Exit codes: 0 done; 1 a file missing, mismatched or failed (nothing is pushed for a\n"
        "mismatch, and no manifest is written); 2 bad flags.\n";
}

int runMirror(const VerbContext& ctx) {
  if (ctx.args.empty() || ctx.args[0] == "-h" || ctx.args[0] == "--help" || ctx.args[0] == "help") {
    mirrorUsage(ctx.args.empty() ? ctx.err : ctx.out, ctx.programName);
    return ctx.args.empty() ? kExitUsage : kExitOk;
  }
  const std::vector<std::string> rest(ctx.args.begin() + 1, ctx.args.end());
  if (ctx.args[0] == "push") return runPush(ctx, rest);
  if (ctx.args[0] == "fetch") return runFetch(ctx, rest);
  ctx.err << "mirror: unknown command \"" << ctx.args[0] << "\" (push or fetch)\n";
  mirrorUsage(ctx.err, ctx.programName);
  return kExitUsage;
}

}  // namespace lockstep::cli
