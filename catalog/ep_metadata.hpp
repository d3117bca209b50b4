// EP metadata: what a catalog publisher says about one EP package, carried in the
// `custom` field of the package's TUF target as custom["epbroker"].
//
// The format is parsed strictly: every field is typed, bounded and checked, and
// unknown keys are errors. Schemas 1 and 2 are known: schema 2 adds packages of
// kind "model" (catalog/model_metadata.hpp), which are not EP packages and are
// read by parse_model_metadata(); an EP or runtime package reads the same in both.
// A later schema is Errc::unsupported so that old brokers skip new packages
// instead of misreading them, which is also why to_json() keeps writing schema 1
// (brokers that know only schema 1 still read the EP packages it describes).
// Other keys of `custom` belong to others and are ignored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "catalog/device_type.hpp"
#include "catalog/error.hpp"
#include "catalog/version.hpp"

namespace catalog {

inline constexpr std::string_view kEpMetadataKey = "epbroker";  // key in `custom`
// The schemas parse_ep_metadata() reads: kMinEpMetadataSchema..kEpMetadataSchema.
// to_json(const EpMetadata&) writes kMinEpMetadataSchema.
inline constexpr int kEpMetadataSchema = 2;
inline constexpr int kMinEpMetadataSchema = 1;

// Bounds of the format (lengths are in characters, i.e. code points; every field
// except `vendor` and `description` is ASCII-only, so there it is also bytes).
inline constexpr std::size_t kMaxPackageNameLength = 64;
inline constexpr std::size_t kMaxEpNames = 16;
inline constexpr std::size_t kMaxEpNameLength = 128;
inline constexpr std::size_t kMaxVendorLength = 128;
inline constexpr std::size_t kMaxLibraryPathLength = 255;
inline constexpr std::size_t kMaxSupports = 64;
inline constexpr std::size_t kMaxPciIds = 64;
inline constexpr std::size_t kMaxDriverNameLength = 64;
inline constexpr std::size_t kMaxRequires = 16;
inline constexpr std::size_t kMaxSonameLength = 128;
inline constexpr std::size_t kMaxDescriptionLength = 1024;
// parse_ep_metadata_text() refuses larger input (Errc::too_many).
inline constexpr std::size_t kMaxEpMetadataTextBytes = 1 << 20;

// What a package provides. An execution_provider package carries a plugin EP
// library that apps register in their own ONNX Runtime; a runtime package carries
// libonnxruntime itself (its version is the ONNX Runtime version it provides), for
// apps built only against ORT's headers (the shared-runtime case). JSON "kind":
// "execution_provider" (the default when absent) or "runtime".
enum class PackageKind { execution_provider, runtime };
std::string_view package_kind_name(PackageKind k);

// One kind of device the EP can run on ("supports" entry). A device qualifies when
// every given constraint holds (see catalog/compat.hpp).
struct DeviceSupport {
  DeviceType type = DeviceType::cpu;
  std::vector<std::uint16_t> vendor_ids;  // PCI vendor ids; empty: any vendor
  std::vector<std::uint16_t> device_ids;  // PCI device ids; empty: any device
  std::optional<std::string> driver;      // kernel driver name, [a-z0-9_-]{1,64}
  std::optional<VersionText> driver_min;  // minimum driver version; only with `driver`

  friend bool operator==(const DeviceSupport&, const DeviceSupport&) = default;
};

// The parsed custom["epbroker"] object. Plain data: values produced by
// parse_ep_metadata() satisfy every rule of the format; values built by hand are
// checked only when parsed (e.g. parse_ep_metadata(to_json(m))).
struct EpMetadata {
  std::string name;  // package name, [a-z0-9][a-z0-9._-]{0,63}
  PackageKind kind = PackageKind::execution_provider;
  VersionText version;  // package version (for a runtime: the ORT version it provides)
  // EP registration names, unique: 1..16 for an execution_provider; 0..16 for a
  // runtime (the EPs built into it, informational).
  std::vector<std::string> ep_names;
  std::string vendor;                   // who built the EP (free text, printable)
  std::string arch;                     // "x86_64" or "aarch64"
  VersionText ort_min;                  // minimum ONNX Runtime version
  std::string library;                  // relative path of the EP library (runtime: libonnxruntime)
  std::vector<DeviceSupport> supports;  // 1..64 entries
  std::vector<std::string> required_sonames;  // JSON "requires": shared libraries needed
  std::string description;                    // optional free text; "" when absent

  friend bool operator==(const EpMetadata&, const EpMetadata&) = default;
};

// Parses the EP metadata found at custom["epbroker"] of a TUF target.
// Errors: Errc::unsupported for a schema other than 1 or 2, and for kind "model"
// in schema 2 (a model package: parse_model_metadata() reads it, so callers that
// list providers skip it); Errc::bad_field for anything else (kind "model" in
// schema 1 included) (custom not an object, key missing, wrong type, out of range,
// unsafe path, invalid UTF-8, unknown key, ...). The message starts with the path
// of the offending field, e.g. "epbroker.supports[1].vendor_ids[0]: out of range
// 0..65535". Never throws.
Result<EpMetadata> parse_ep_metadata(const nlohmann::json& custom);

// The JSON form of `m`, as {"epbroker": {...}} (the value for a target's `custom`).
// Written as schema kMinEpMetadataSchema (1). Versions are written from their text; empty optional
// lists, absent optionals and an empty description are left out. For any m returned by
// parse_ep_metadata(), parse_ep_metadata(to_json(m)) == m. Does not validate `m`.
nlohmann::json to_json(const EpMetadata& m);

// parse_ep_metadata() on JSON text of the same shape ({"epbroker": {...}}), for the
// CLIs. Errors: Errc::malformed when the text is not JSON (including invalid UTF-8
// and duplicate object keys anywhere in the text), Errc::too_large above
// kMaxEpMetadataTextBytes, else as parse_ep_metadata() (a float where an integer
// or a string is expected is Errc::bad_field). Never throws.
Result<EpMetadata> parse_ep_metadata_text(std::string_view json_text);

}  // namespace catalog
