#include "advisories/osv_export.h"

#include <zip.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

namespace lockstep::advisories {
namespace {

namespace fs = std::filesystem;

bool endsWithJson(const std::string& name) {
  return name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
}

// Counts what is read against the limits, and adds each record to the index.
class Loader {
 public:
  explicit Loader(const OsvExportLimits& limits) : limits_(limits) {}

  Status checkSize(const std::string& where, size_t size) {
    if (size > limits_.maxRecordBytes) {
      return resourceExhausted(where + ": " + std::to_string(size) +
                               " bytes; the limit for one OSV record is " +
                               std::to_string(limits_.maxRecordBytes));
    }
    if (out_.bytes + size > limits_.maxTotalBytes) {
      return resourceExhausted(where + ": the export is over " +
                               std::to_string(limits_.maxTotalBytes) + " bytes of records");
    }
    if (out_.files + 1 > limits_.maxRecords) {
      return resourceExhausted(where + ": the export has more than " +
                               std::to_string(limits_.maxRecords) + " records");
    }
    return Status::ok();
  }

  Status add(const std::string& where, std::string_view text) {
    auto r = parseOsvRecord(text, where);
    if (!r.isOk()) return r.status();
    out_.index.add(std::move(*r));
    ++out_.files;
    out_.bytes += text.size();
    return Status::ok();
  }

  StatusOr<OsvExport> finish(const std::string& path) && {
    if (out_.files == 0) {
      return invalidArgument(path +
                             ": no OSV records (*.json) in it; an empty export would "
                             "report every package clean");
    }
    return std::move(out_);
  }

 private:
  OsvExportLimits limits_;
  OsvExport out_;
};

StatusOr<OsvExport> loadDirectory(const std::string& path, const OsvExportLimits& limits) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(path, ec);
  if (ec) return invalidArgument(path + ": " + ec.message());
  for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) return invalidArgument(path + ": " + ec.message());
    std::error_code sec;
    if (it->is_regular_file(sec) && endsWithJson(it->path().filename().string())) {
      files.push_back(it->path());
    }
  }
  if (ec) return invalidArgument(path + ": " + ec.message());
  std::sort(files.begin(), files.end());
  Loader loader(limits);
  for (const fs::path& f : files) {
    const std::string where = f.string();
    std::error_code sec;
    const auto size = fs::file_size(f, sec);
    if (sec) return invalidArgument(where + ": " + sec.message());
    LOCKSTEP_RETURN_IF_ERROR(loader.checkSize(where, size));
    std::ifstream in(f, std::ios::binary);
    std::string text(size, '\0');
    if (!in.read(text.data(), static_cast<std::streamsize>(size))) {
      return invalidArgument(where + ": cannot read");
    }
    LOCKSTEP_RETURN_IF_ERROR(loader.add(where, text));
  }
  return std::move(loader).finish(path);
}

StatusOr<OsvExport> loadZip(const std::string& path, const OsvExportLimits& limits) {
  int err = 0;
  std::unique_ptr<zip_t, decltype(&zip_discard)> z(zip_open(path.c_str(), ZIP_RDONLY, &err),
                                                   &zip_discard);
  if (!z) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    std::string why = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    return invalidArgument(path + ": not a readable zip: " + why);
  }
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  Loader loader(limits);
  std::string text;
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z.get(), static_cast<zip_uint64_t>(i), 0, &st) != 0) {
      return invalidArgument(path + ": entry " + std::to_string(i) + ": " + zip_strerror(z.get()));
    }
    const std::string name = (st.valid & ZIP_STAT_NAME) != 0 ? st.name : "";
    if (!endsWithJson(name)) continue;
    const std::string where = path + ":" + name;
    if ((st.valid & ZIP_STAT_SIZE) == 0) return invalidArgument(where + ": no size in the zip");
    LOCKSTEP_RETURN_IF_ERROR(loader.checkSize(where, st.size));
    std::unique_ptr<zip_file_t, decltype(&zip_fclose)> f(
        zip_fopen_index(z.get(), static_cast<zip_uint64_t>(i), 0), &zip_fclose);
    if (!f) return invalidArgument(where + ": " + zip_strerror(z.get()));
    // One byte more than the header says, so an entry longer than its stated size is
    // caught rather than truncated; libzip checks the CRC at the end.
    text.assign(st.size + 1, '\0');
    zip_int64_t got = 0;
    while (static_cast<zip_uint64_t>(got) < st.size + 1) {
      zip_int64_t r = zip_fread(f.get(), text.data() + got, st.size + 1 - got);
      if (r < 0) return invalidArgument(where + ": " + zip_file_strerror(f.get()));
      if (r == 0) break;
      got += r;
    }
    if (static_cast<zip_uint64_t>(got) != st.size) {
      return invalidArgument(where + ": " + std::to_string(got) + " bytes where the zip says " +
                             std::to_string(st.size));
    }
    text.resize(st.size);
    LOCKSTEP_RETURN_IF_ERROR(loader.add(where, text));
  }
  return std::move(loader).finish(path);
}

}  // namespace

StatusOr<OsvExport> loadOsvExport(const std::string& path, const OsvExportLimits& limits) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return invalidArgument(path + ": no such file or directory");
  if (fs::is_directory(st)) return loadDirectory(path, limits);
  if (!fs::is_regular_file(st)) return invalidArgument(path + ": not a directory or a file");
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  if (in.gcount() != 4 || magic[0] != 'P' || magic[1] != 'K' || magic[2] != 3 || magic[3] != 4) {
    return invalidArgument(path + ": neither a directory of OSV JSON files nor a zip of them");
  }
  return loadZip(path, limits);
}

}  // namespace lockstep::advisories
