#include "daemon/dbus/options.hpp"

#include <string_view>

#include "common/wire.hpp"
#include "daemon/dbus/errors.hpp"

namespace epbrokerd::dbus {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw_bus_error({core::Errc::InvalidArgument, message});
}

// Walks `opts`: for each entry, `on_key(key, reader)` returns false for an
// unknown key; reader.get<T>(signature) checks the value's type first.
class Reader {
 public:
  Reader(const std::string& key, const sdbus::Variant& value) : key_(key), value_(value) {}

  template <typename T>
  T get(const char* signature) const {
    const std::string sig = value_.peekValueType();
    if (sig != signature) {
      invalid("option '" + key_ + "' must have type " + signature + ", not " + sig);
    }
    return value_.get<T>();
  }

  std::string bounded_string() const {
    auto s = get<std::string>("s");
    if (s.size() > kMaxOptionLength) invalid("option '" + key_ + "' is too long");
    return s;
  }

 private:
  const std::string& key_;
  const sdbus::Variant& value_;
};

template <typename F>
void for_each_option(const Options& opts, F&& on_key) {
  if (opts.size() > kMaxOptions) invalid("too many options");
  for (const auto& [key, value] : opts) {
    const Reader reader(key, value);
    if (!on_key(std::string_view(key), reader)) {
      invalid("unknown option '" + key.substr(0, 64) + "'");
    }
  }
}

}  // namespace

core::SessionRequest parse_session_options(const Options& opts) {
  core::SessionRequest r;
  for_each_option(opts, [&](std::string_view key, const Reader& v) {
    if (key == common::key::policy) {
      r.policy = v.bounded_string();
    } else if (key == common::key::ort_version) {
      r.ort_version = v.bounded_string();
    } else if (key == common::key::providers) {
      r.providers = v.get<std::vector<std::string>>("as");
    } else if (key == common::key::download) {
      r.download = v.get<bool>("b");
    } else if (key == common::key::models) {
      r.models = v.get<std::map<std::string, std::string>>("a{ss}");
    } else {
      return false;
    }
    return true;
  });
  return r;
}

core::InstallOptions parse_install_options(const Options& opts) {
  core::InstallOptions r;
  for_each_option(opts, [&](std::string_view key, const Reader& v) {
    if (key == common::key::version) {
      r.version = v.bounded_string();
    } else if (key == common::key::allow_older) {
      r.allow_older = v.get<bool>("b");
    } else {
      return false;
    }
    return true;
  });
  return r;
}

namespace {

common::Policy policy_of(const std::string& text) {
  const auto p = common::parse_policy(text);
  if (!p) invalid("unknown policy '" + text + "'");
  return *p;
}

}  // namespace

core::ModelListOptions parse_model_list_options(const Options& opts) {
  core::ModelListOptions r;
  for_each_option(opts, [&](std::string_view key, const Reader& v) {
    if (key == common::key::policy) {
      r.policy = policy_of(v.bounded_string());
    } else if (key == common::key::ort_version) {
      r.ort_version = v.bounded_string();
    } else {
      return false;
    }
    return true;
  });
  return r;
}

core::ModelRemoveOptions parse_model_remove_options(const Options& opts) {
  core::ModelRemoveOptions r;
  for_each_option(opts, [&](std::string_view key, const Reader& v) {
    if (key == common::key::version) {
      r.version = v.bounded_string();
    } else if (key == common::key::variant) {
      r.variant = v.bounded_string();
    } else if (key == common::key::now) {
      r.now = v.get<bool>("b");
    } else {
      return false;
    }
    return true;
  });
  return r;
}

core::ModelInstallOptions parse_model_install_options(const Options& opts) {
  core::ModelInstallOptions r;
  for_each_option(opts, [&](std::string_view key, const Reader& v) {
    if (key == common::key::variant) {
      r.variant = v.bounded_string();
    } else if (key == common::key::version) {
      r.version = v.bounded_string();
    } else if (key == common::key::policy) {
      r.policy = policy_of(v.bounded_string());
    } else if (key == common::key::ort_version) {
      r.ort_version = v.bounded_string();
    } else {
      return false;
    }
    return true;
  });
  return r;
}

UpdateOptions parse_update_options(const Options& opts) {
  UpdateOptions r;
  for_each_option(opts, [&](std::string_view key, const Reader& v) {
    if (key != common::key::dry_run) return false;
    r.dry_run = v.get<bool>("b");
    return true;
  });
  return r;
}

void check_update_names(const std::vector<std::string>& names) {
  if (names.size() > kMaxUpdateNames) {
    invalid("too many package names (" + std::to_string(names.size()) + "; at most " +
            std::to_string(kMaxUpdateNames) + ")");
  }
}

}  // namespace epbrokerd::dbus
