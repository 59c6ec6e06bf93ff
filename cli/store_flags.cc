#include "cli/store_flags.h"

namespace meshplan::cli {

CLI::Option* AddDbFlag(CLI::App* cmd, std::string* db) {
  return cmd->add_option(
      "--db", *db,
      "Result store, an SQLite file (default " + core::DefaultStorePath() + "; $MESHPLAN_DB overrides the default)");
}

std::string StorePathFromFlag(const std::string& flag) { return flag.empty() ? core::DefaultStorePath() : flag; }

core::Result<std::unique_ptr<core::ResultStore>> OpenStoreFromFlag(const std::string& flag) {
  return core::OpenSqliteResultStore(StorePathFromFlag(flag));
}

}  // namespace meshplan::cli
