// The binding of a package name to its target path namespace (issue 17, item 1).
//
// TUF delegations trust a role for target PATHS ("vendor-a/*"), while a package's
// NAME is what its signed custom.epbroker metadata claims: nothing in TUF ties the
// two. Without a rule, a role delegated only "vendor-a/*" could sign
// "vendor-a/x.tar.zst" claiming name "openvino" and take that name over. The
// rule: a package named NAME is trusted only from a target path whose first
// '/'-separated segment is NAME exactly, so only a role trusted for "NAME/*"
// (or for the whole repository) can publish it. epbroker-publish writes such
// paths ("NAME/<file>") by default. The same rule binds model names when models
// come.
//
// Self-contained (no bus, no network, no allocation beyond the error message):
// used wherever a catalog entry becomes trusted — the daemon's catalog, its
// install job, the privileged commit helper — and by epbroker-publish.
#pragma once

#include <string_view>

#include "catalog/error.hpp"

namespace catalog {

// Ok iff `target_path` has at least one '/' and its first segment (everything
// before the first '/') is byte-equal to `name`; the name itself is not
// otherwise validated here (EP metadata parsing does that). An empty name, a
// path without '/', an empty first segment, or any difference in case, spelling
// or Unicode form is refused with Errc::bad_field and a message naming both
// the path and the claimed name.
Result<void> check_name_binding(std::string_view name, std::string_view target_path);

}  // namespace catalog
