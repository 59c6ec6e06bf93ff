// libFuzzer harness: the result store opened on a corrupted database file (bytes written to a
// file, then OpenSqliteResultStore and every reader `meshplan history` and the GUI's History view
// use). A damaged file must give an error, never a crash or a hang.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/result_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("meshplan_fuzz_store_" + std::to_string(getpid()) + ".db")).string();
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  meshplan::core::SqliteStoreOptions options;
  options.busy_timeout_ms = 50;
  auto store = meshplan::core::OpenSqliteResultStore(path, options);
  if (store.ok()) {
    (void)(*store)->History(20);
    (void)(*store)->ListPredictions(20);
    (void)(*store)->ListProfiles();
    (void)(*store)->ListSweeps(20);
    (void)(*store)->GetPlan(1);
    (void)(*store)->GetMeasurement(1);
    (void)(*store)->CheckIntegrity();
  }
  return 0;
}
