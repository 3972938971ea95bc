// The OSV export adapter: a directory (recursive) or a zip (written here with libzip, flat
// as osv.dev's all.zip), the limits, and errors that name the file inside the zip.
#include "advisories/osv_export.h"

#include <gtest/gtest.h>
#include <zip.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace lockstep::advisories {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "lockstep-osv-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes a zip of (name, content) entries with libzip.
void writeZip(const std::string& path,
              const std::vector<std::pair<std::string, std::string>>& entries) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr) << err;
  for (const auto& [name, content] : entries) {
    if (name.back() == '/') {
      ASSERT_GE(zip_dir_add(z, name.c_str(), ZIP_FL_ENC_UTF_8), 0);
      continue;
    }
    zip_source_t* src = zip_source_buffer(z, content.data(), content.size(), 0);
    ASSERT_NE(src, nullptr);
    ASSERT_GE(zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8), 0) << zip_strerror(z);
  }
  ASSERT_EQ(zip_close(z), 0);
}

std::vector<std::pair<std::string, std::string>> testdataEntries() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : fs::recursive_directory_iterator(LOCKSTEP_OSV_TESTDATA_DIR)) {
    if (e.path().extension() == ".json")
      out.emplace_back(e.path().filename().string(), readFile(e.path()));
  }
  return out;
}

TEST(OsvExport, ADirectoryIsReadRecursively) {
  auto r = loadOsvExport(LOCKSTEP_OSV_TESTDATA_DIR);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->files, 13u);
  EXPECT_EQ(r->index.size(), 13u);
  EXPECT_GT(r->bytes, 20'000u);
}

TEST(OsvExport, AZipIsReadAndItsOtherEntriesSkipped) {
  TempDir dir;
  auto entries = testdataEntries();
  entries.emplace_back("README.txt", "not a record");
  entries.emplace_back("PyPI/", "");
  entries.emplace_back("W-1.json", R"({"id": "W-1", "withdrawn": "2024-01-01T00:00:00Z"})");
  const std::string zip = dir.path() + "/all.zip";
  writeZip(zip, entries);
  auto r = loadOsvExport(zip);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->files, 14u);
  EXPECT_EQ(r->index.size(), 13u);
  EXPECT_EQ(r->index.withdrawn(), 1u);
}

TEST(OsvExport, ABadRecordInAZipIsNamedWithTheZip) {
  TempDir dir;
  const std::string zip = dir.path() + "/all.zip";
  writeZip(zip,
           {{"GOOD.json", R"({"id": "GOOD"})"}, {"BAD.json", R"({"id": "BAD", "aliases": 3})"}});
  auto r = loadOsvExport(zip);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(), zip + ":BAD.json: aliases: expected an array of strings");
}

TEST(OsvExport, LimitsAreResourceExhaustedNamingTheFile) {
  OsvExportLimits small;
  small.maxRecordBytes = 2000;
  auto r = loadOsvExport(LOCKSTEP_OSV_TESTDATA_DIR, small);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kResourceExhausted);
  EXPECT_NE(r.status().message().find("bytes; the limit for one OSV record is 2000"),
            std::string::npos)
      << r.status().message();
  OsvExportLimits few;
  few.maxRecords = 2;
  auto f = loadOsvExport(LOCKSTEP_OSV_TESTDATA_DIR, few);
  ASSERT_FALSE(f.isOk());
  EXPECT_NE(f.status().message().find("the export has more than 2 records"), std::string::npos);
  OsvExportLimits total;
  total.maxTotalBytes = 10'000;
  auto t = loadOsvExport(LOCKSTEP_OSV_TESTDATA_DIR, total);
  ASSERT_FALSE(t.isOk());
  EXPECT_NE(t.status().message().find("the export is over 10000 bytes of records"),
            std::string::npos);
}

TEST(OsvExport, WhatIsNotAnExportIsSaidSo) {
  TempDir dir;
  EXPECT_EQ(loadOsvExport(dir.path() + "/none").status().message(),
            dir.path() + "/none: no such file or directory");
  EXPECT_NE(loadOsvExport(dir.path()).status().message().find("no OSV records (*.json) in it"),
            std::string::npos);
  std::ofstream(dir.path() + "/x.json") << "{}";
  EXPECT_NE(loadOsvExport(dir.path() + "/x.json").status().message().find("neither a directory"),
            std::string::npos);
  std::ofstream(dir.path() + "/broken.zip") << "PK\x03\x04 and then nothing";
  EXPECT_NE(loadOsvExport(dir.path() + "/broken.zip").status().message().find("not a readable zip"),
            std::string::npos);
}

}  // namespace
}  // namespace lockstep::advisories
