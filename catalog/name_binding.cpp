#include "catalog/name_binding.hpp"

#include <string>

namespace catalog {

Result<void> check_name_binding(std::string_view name, std::string_view target_path) {
  const auto slash = target_path.find('/');
  // Byte equality, no normalisation: any folding (case, Unicode, "./") would let
  // two spellings of one namespace exist, and only one of them be delegated.
  if (!name.empty() && slash != std::string_view::npos && target_path.substr(0, slash) == name) {
    return {};
  }
  const std::string why =
      slash == std::string_view::npos
          ? "it has no '/', so it binds no package name"
          : "its first segment is '" + std::string(target_path.substr(0, slash)) + "'";
  return fail(Errc::bad_field, "target '" + std::string(target_path) + "' claims package name '" +
                                   std::string(name) + "', but " + why +
                                   ": a package NAME must be published under 'NAME/'");
}

}  // namespace catalog
