// The daemon's Committer: each request goes to a separate epbroker-commit
// process over the commit protocol (protocol.hpp), which re-verifies it.
//
//   socket: connects to the helper's socket (systemd's epbroker-commit.socket,
//           Accept=yes: one root helper per connection, no network); the
//           production mode, where store/ belongs to root;
//   spawn:  starts the helper itself on a socketpair, as the daemon's own uid:
//           for a store in the daemon's own state directory (tests, the demo),
//           where there is no privilege to separate; same code, same checks.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "catalog/unique_fd.hpp"
#include "daemon/store/committer.hpp"

namespace epbrokerd::commit {

class HelperCommitter : public store::Committer {
 public:
  // Connects to `socket_path` for each request.
  static HelperCommitter over_socket(std::filesystem::path socket_path);
  // Runs `helper` with `args` for each request, the socket as its standard input.
  static HelperCommitter spawning(std::filesystem::path helper, std::vector<std::string> args);

  catalog::Result<store::InstalledPackage> install(const store::CommitInstall& request,
                                                   const store::InstallProgress& progress,
                                                   std::stop_token stop) override;
  catalog::Result<void> remove(std::string_view name,
                               std::optional<std::string_view> version) override;
  catalog::Result<void> recover() override;
  // The install_model conversation (protocol.hpp); a new helper per attempt, and
  // a second attempt when a blob vanished from the store meanwhile.
  catalog::Result<store::InstalledModel> install_model(const store::CommitModelInstall& request,
                                                       const store::BlobSource& blobs,
                                                       const store::InstallProgress& progress,
                                                       std::stop_token stop) override;
  catalog::Result<void> remove_model(std::string_view name, std::optional<std::string_view> version,
                                     std::optional<std::string_view> variant,
                                     bool even_if_leased) override;

 private:
  HelperCommitter() = default;
  // A connection to a fresh helper; `child` is set when spawned.
  catalog::Result<catalog::UniqueFd> connect(pid_t* child) const;
  // One attempt of install_model().
  catalog::Result<store::InstalledModel> install_model_once(
      const store::CommitModelInstall& request, const store::BlobSource& blobs,
      const store::InstallProgress& progress, std::stop_token stop);

  std::filesystem::path socket_path_;
  std::filesystem::path helper_;
  std::vector<std::string> args_;
};

}  // namespace epbrokerd::commit
