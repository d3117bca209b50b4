// Canonical JSON as TUF signs it (the OLPC form used by python-tuf /
// securesystemslib): object keys sorted by code point, no whitespace, strings
// escaping only '"' and '\\' (everything else, control bytes and UTF-8 included,
// verbatim), integers only, true/false/null.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "catalog/error.hpp"

namespace catalog {

// Contract: fails with Errc::malformed on a floating-point number anywhere
// (canonical JSON has none); never throws.
Result<std::string> canonical_json(const nlohmann::json& value);

// Parses JSON text without throwing; Errc::malformed with the parser's message,
// also for a NUL byte anywhere or nesting deeper than 512 arrays/objects.
Result<nlohmann::json> parse_json(std::string_view text);

}  // namespace catalog
