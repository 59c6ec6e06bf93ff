// The --db flag shared by the commands that read or write the result store (history, search
// --save, calibrate, report): where the SQLite file is, and opening it. See docs/store.md.
#ifndef MESHPLAN_CLI_STORE_FLAGS_H_
#define MESHPLAN_CLI_STORE_FLAGS_H_

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/result_store.h"
#include "core/status.h"

namespace meshplan::cli {

// Registers `--db PATH` on `cmd`, stored into *db (which must outlive parsing). The help text
// shows the default path (core::DefaultStorePath(): $MESHPLAN_DB, else the XDG data directory).
// Returns the option, for ->needs() and the like.
CLI::Option* AddDbFlag(CLI::App* cmd, std::string* db);

// Opens the store named by a --db value; an empty flag means core::DefaultStorePath(). The error
// names the path (print it after "error: --db: " and exit 1).
core::Result<std::unique_ptr<core::ResultStore>> OpenStoreFromFlag(const std::string& flag);

// The store to read (history): as OpenStoreFromFlag, but with no store at the path yet an empty
// one in memory, so that reading creates no file or folder (the GUI's History view reads so too);
// a path no store can ever be at (under a file) is opened all the same, for its error.
core::Result<std::unique_ptr<core::ResultStore>> OpenStoreToRead(const std::string& flag);

// The path OpenStoreFromFlag(flag) opens, for messages ("# saved sweep 3 to PATH").
std::string StorePathFromFlag(const std::string& flag);

// What set that path, for errors ("error: NAME: PATH: ..."): "--db" when the flag is given,
// "$MESHPLAN_DB" when the environment variable chose it, else "--db" (the default's path, which
// the message names).
std::string StoreSourceFromFlag(const std::string& flag);

}  // namespace meshplan::cli

#endif  // MESHPLAN_CLI_STORE_FLAGS_H_
