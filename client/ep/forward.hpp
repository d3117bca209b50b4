// The granted plugin libraries one registration of libepbroker_ep.so loaded, and
// the factories each made: ORT gets those factories as if it had loaded each
// library itself, and each factory goes back to the library that made it.
#pragma once

#include <cstddef>
#include <expected>
#include <string>
#include <vector>

#include "client/ep/grant.hpp"
#include "client/ep/ort_log.hpp"

namespace epbroker::meta_ep {

class Forwarded {
 public:
  Forwarded() = default;
  // Releases every factory still outstanding, then closes the libraries.
  ~Forwarded();
  Forwarded(const Forwarded&) = delete;
  Forwarded& operator=(const Forwarded&) = delete;

  // Loads u.library_path (dlopen, RTLD_NOW | RTLD_LOCAL, as ORT loads a plugin)
  // and calls its CreateEpFactories with u.name as registration name and ORT's
  // `base` and `logger`, writing up to `room` factories to `out`. Returns how many
  // it made (0 is allowed), or why the library cannot be used; then nothing of it
  // stays loaded.
  std::expected<std::size_t, std::string> load(const Usable& u, const OrtApiBase* base,
                                               const OrtApi* api, const OrtLogger* logger,
                                               OrtEpFactory** out, std::size_t room);

  bool owns(const OrtEpFactory* factory) const;
  // Hands `factory` to its library's ReleaseEpFactory and forgets it (a library
  // is closed once all of its factories are back). Returns that call's status.
  // Precondition: owns(factory).
  OrtStatus* release(OrtEpFactory* factory);
  // No factory is outstanding.
  bool empty() const;

 private:
  using ReleaseFn = OrtStatus*(ORT_API_CALL*)(OrtEpFactory*);
  struct Library {
    std::string name;
    void* handle = nullptr;
    ReleaseFn release = nullptr;
    std::vector<OrtEpFactory*> factories;  // outstanding
  };
  std::vector<Library> libraries_;
  const OrtApi* api_ = nullptr;  // for statuses the destructor gets
};

}  // namespace epbroker::meta_ep
