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

// Parses JSON text without throwing; Errc::malformed for invalid JSON ("WHAT is
// not valid JSON"), a NUL byte anywhere, nesting deeper than 512 arrays/objects,
// and an object with a key twice at any depth ("WHAT JSON has a duplicate key
// "K"", json::parse_strict's check: two parsers could read different values, as
// a signature checked by one and a field read by another). `what` names the
// document in messages.
Result<nlohmann::json> parse_json(std::string_view text, std::string_view what = "document");

}  // namespace catalog
