#include "cli/store_flags.h"

#include <cstdlib>
#include <filesystem>

namespace meshplan::cli {

CLI::Option* AddDbFlag(CLI::App* cmd, std::string* db) {
  return cmd->add_option(
      "--db", *db,
      "Result store, an SQLite file (default " + core::DefaultStorePath() + "; $MESHPLAN_DB overrides the default)");
}

std::string StorePathFromFlag(const std::string& flag) { return flag.empty() ? core::DefaultStorePath() : flag; }

std::string StoreSourceFromFlag(const std::string& flag) {
  const char* env = std::getenv("MESHPLAN_DB");
  return flag.empty() && env != nullptr && *env != '\0' ? "$MESHPLAN_DB" : "--db";
}

core::Result<std::unique_ptr<core::ResultStore>> OpenStoreFromFlag(const std::string& flag) {
  return core::OpenSqliteResultStore(StorePathFromFlag(flag));
}

core::Result<std::unique_ptr<core::ResultStore>> OpenStoreToRead(const std::string& flag) {
  const std::filesystem::path path = StorePathFromFlag(flag);
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return OpenStoreFromFlag(flag);
  std::filesystem::path existing = path.parent_path();  // the nearest folder that exists
  while (!existing.empty() && !std::filesystem::exists(existing, ec) && existing != existing.parent_path())
    existing = existing.parent_path();
  if (!existing.empty() && !std::filesystem::is_directory(existing, ec)) return OpenStoreFromFlag(flag);
  return core::Result<std::unique_ptr<core::ResultStore>>(core::NewMemoryResultStore());
}

}  // namespace meshplan::cli
