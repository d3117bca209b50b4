// Whether a library path (or a model's directory) the daemon granted may be
// loaded (issue 17 item 2).
//
// The daemon talks to the network; were it compromised, it could answer
// RequestSession with any path. So libepbroker loads (and lets <epbroker/ort.hpp>
// register) only files inside the store it trusts on its own: the system store
// /var/lib/epbroker/store, or the one EPBROKER_STORE_DIR names (read with
// secure_getenv, so a setuid or file-capability program always gets the system
// store: tests and the demo run private stores).
#pragma once

#include <string>

namespace epbroker::detail {

inline constexpr const char* kSystemStoreDir = "/var/lib/epbroker/store";

// EPBROKER_STORE_DIR when set (and the program not privileged), else kSystemStoreDir.
std::string trusted_store_dir();

// "" when `library_path` may be loaded from `store_dir`; else why not. The
// path, resolved (symlinks too), must be a regular file strictly inside the
// resolved store directory, and it and every directory from the store directory
// down to it must belong to the store directory's owner (root for the system
// store) and be writable by no one else (no group or other write bit).
std::string refuse_library_path(const std::string& library_path, const std::string& store_dir);

// "" when `dir` may be handed to an app as a directory of `store_dir` (a granted
// model variant's path); else why not. The same rules as refuse_library_path(),
// for a directory instead of a regular file.
std::string refuse_store_dir(const std::string& dir, const std::string& store_dir);

}  // namespace epbroker::detail
