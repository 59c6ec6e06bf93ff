// What core/result_store.cc (the memory fake) and core/sqlite_result_store.cc share so that both
// stores say the same thing. Not part of the store's interface; include only from those two files.
#ifndef MESHPLAN_CORE_RESULT_STORE_INTERNAL_H_
#define MESHPLAN_CORE_RESULT_STORE_INTERNAL_H_

#include <string>
#include <vector>

namespace meshplan::core::internal {

// GetProfile's NotFound message: "no profile named 'x' in WHERE (profiles: a, b)", or "... (it
// holds no profiles yet)". `names` sorted; `where` is the file path or "the memory store".
std::string ProfileNotFoundMessage(const std::string& name, const std::vector<std::string>& names,
                                   const std::string& where);

}  // namespace meshplan::core::internal

#endif  // MESHPLAN_CORE_RESULT_STORE_INTERNAL_H_
