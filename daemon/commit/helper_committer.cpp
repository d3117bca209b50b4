#include "daemon/commit/helper_committer.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "catalog/tuf/metadata.hpp"
#include "catalog/version.hpp"
#include "daemon/commit/commit_model.hpp"
#include "daemon/commit/protocol.hpp"
#include "daemon/store/installed.hpp"

extern char** environ;

namespace epbrokerd::commit {
namespace {

using catalog::Errc;
using catalog::fail;
using catalog::Result;

std::optional<store::InstallPhase> phase_of(const std::string& name) {
  for (auto p : {store::InstallPhase::extracting, store::InstallPhase::verifying,
                 store::InstallPhase::committing}) {
    if (store::install_phase_name(p) == name) return p;
  }
  return std::nullopt;
}

// Reaps a spawned helper when the exchange ends, however it ends.
struct Child {
  pid_t pid = -1;
  ~Child() { (void)reap(); }
  // Waits for the helper; says how it ended ("" when there is none).
  std::string reap() {
    if (pid <= 0) return "";
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
    if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
    return "exit status " + std::to_string(WEXITSTATUS(status));
  }
};

// A helper that ended without an answer: say how it ended, when we started it.
catalog::Error ended(catalog::Error e, Child& child) {
  if (e.code == Errc::unavailable) {
    if (auto how = child.reap(); !how.empty()) e.message += "; the helper's " + how;
  }
  return e;
}

// An {"ok":false,...} answer as its error.
catalog::Error error_of(const nlohmann::json& b) {
  const std::string code =
      b.contains("code") && b["code"].is_string() ? b["code"].get<std::string>() : "";
  const std::string msg =
      b.contains("message") && b["message"].is_string() ? b["message"].get<std::string>() : "";
  return error_from_reply({{"code", code}, {"message", msg}});
}

// Reads answers until the final one, passing progress on.
Result<nlohmann::json> await_answer(int sock, const store::InstallProgress& progress,
                                    std::stop_token stop) {
  for (;;) {
    auto m = receive_message(sock, 200);
    if (!m && m.error().code == Errc::busy) {
      if (stop.stop_requested()) return fail(Errc::cancelled, "cancelled");
      continue;
    }
    if (!m) {
      return fail(Errc::unavailable,
                  "the commit helper ended without an answer (" + m.error().message + ")");
    }
    const auto& b = m->body;
    if (auto it = b.find("progress"); it != b.end() && it->is_string()) {
      auto phase = phase_of(it->get<std::string>());
      const auto done = b.find("done");
      const auto total = b.find("total");
      if (phase && progress && done != b.end() && done->is_number_unsigned() && total != b.end() &&
          total->is_number_unsigned()) {
        progress(*phase, done->get<std::uint64_t>(), total->get<std::uint64_t>());
      }
      continue;
    }
    auto ok = b.find("ok");
    if (ok == b.end() || !ok->is_boolean())
      return fail(Errc::malformed, "commit helper: bad answer");
    if (!ok->get<bool>()) return std::unexpected(error_of(b));
    return b;
  }
}

// Sends `request`, then reads answers until the final one, passing progress on.
Result<nlohmann::json> exchange(int sock, const nlohmann::json& request, std::span<const int> fds,
                                const store::InstallProgress& progress, std::stop_token stop) {
  if (auto ok = send_message(sock, request, fds); !ok) return std::unexpected(ok.error());
  return await_answer(sock, progress, stop);
}

// Reads the helper's {"need":[...],"more":B} parts (or its error).
Result<std::vector<std::string>> await_need(int sock, std::stop_token stop) {
  std::vector<std::string> need;
  for (;;) {
    auto m = receive_message(sock, 200);
    if (!m && m.error().code == Errc::busy) {
      if (stop.stop_requested()) return fail(Errc::cancelled, "cancelled");
      continue;
    }
    if (!m) {
      return fail(Errc::unavailable,
                  "the commit helper ended without an answer (" + m.error().message + ")");
    }
    const auto& b = m->body;
    if (auto ok = b.find("ok"); ok != b.end() && ok->is_boolean() && !ok->get<bool>()) {
      return std::unexpected(error_of(b));
    }
    const auto part = b.find("need");
    const auto more = b.find("more");
    if (part == b.end() || !part->is_array() || more == b.end() || !more->is_boolean()) {
      return fail(Errc::malformed, "commit helper: bad answer");
    }
    for (const auto& sha : *part) {
      if (!sha.is_string() || !store::is_blob_name(sha.get<std::string>())) {
        return fail(Errc::malformed, "commit helper: bad blob name");
      }
      need.push_back(sha.get<std::string>());
    }
    if (!more->get<bool>()) return need;
  }
}

}  // namespace

HelperCommitter HelperCommitter::over_socket(std::filesystem::path socket_path) {
  HelperCommitter c;
  c.socket_path_ = std::move(socket_path);
  return c;
}

HelperCommitter HelperCommitter::spawning(std::filesystem::path helper,
                                          std::vector<std::string> args) {
  HelperCommitter c;
  c.helper_ = std::move(helper);
  c.args_ = std::move(args);
  return c;
}

Result<catalog::UniqueFd> HelperCommitter::connect(pid_t* child) const {
  if (!socket_path_.empty()) {
    catalog::UniqueFd s(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (!s.valid()) return fail(Errc::io, std::string("socket: ") + std::strerror(errno));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string p = socket_path_.string();
    if (p.size() >= sizeof(addr.sun_path))
      return fail(Errc::invalid_argument, "socket path too long");
    std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
    if (::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      return fail(Errc::unavailable,
                  "cannot reach the commit helper at " + p + ": " + std::strerror(errno));
    }
    return s;
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return fail(Errc::io, std::string("socketpair: ") + std::strerror(errno));
  }
  catalog::UniqueFd ours(pair[0]);
  catalog::UniqueFd theirs(pair[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, theirs.get(), 0);  // clears CLOEXEC on 0
  std::vector<std::string> argv_s{helper_.string()};
  argv_s.insert(argv_s.end(), args_.begin(), args_.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = ::posix_spawn(child, helper_.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return fail(Errc::unavailable,
                "cannot start the commit helper " + helper_.string() + ": " + std::strerror(rc));
  }
  return ours;
}

Result<store::InstalledPackage> HelperCommitter::install(const store::CommitInstall& request,
                                                         const store::InstallProgress& progress,
                                                         std::stop_token stop) {
  Child child;
  auto sock = connect(&child.pid);
  if (!sock) return std::unexpected(sock.error());
  const int fds[] = {request.metadata_dir_fd, request.package_fd};
  auto reply = exchange(
      sock->get(), {{"op", "install"}, {"remote", request.remote}, {"target", request.target_path}},
      fds, progress, stop);
  if (!reply) return std::unexpected(ended(reply.error(), child));
  // The answer only names what was installed; the caller reads it from the disk.
  store::InstalledPackage p;
  const auto name = reply->find("name");
  const auto version = reply->find("version");
  if (name == reply->end() || !name->is_string() || version == reply->end() ||
      !version->is_string()) {
    return fail(Errc::malformed, "commit helper: bad answer");
  }
  p.manifest.ep.name = name->get<std::string>();
  auto v = catalog::parse_version_text(version->get<std::string>());
  if (!v) return fail(Errc::malformed, "commit helper: bad version in its answer");
  p.manifest.ep.version = std::move(*v);
  return p;
}

Result<void> HelperCommitter::remove(std::string_view name,
                                     std::optional<std::string_view> version) {
  Child child;
  auto sock = connect(&child.pid);
  if (!sock) return std::unexpected(sock.error());
  nlohmann::json request = {{"op", "remove"}, {"name", std::string(name)}};
  request["version"] = version ? nlohmann::json(std::string(*version)) : nlohmann::json(nullptr);
  auto reply = exchange(sock->get(), request, {}, {}, {});
  if (!reply) return std::unexpected(ended(reply.error(), child));
  return {};
}

Result<void> HelperCommitter::recover() {
  Child child;
  auto sock = connect(&child.pid);
  if (!sock) return std::unexpected(sock.error());
  auto reply = exchange(sock->get(), {{"op", "recover"}}, {}, {}, {});
  if (!reply) return std::unexpected(ended(reply.error(), child));
  return {};
}

Result<store::InstalledModel> HelperCommitter::install_model(
    const store::CommitModelInstall& request, const store::BlobSource& blobs,
    const store::InstallProgress& progress, std::stop_token stop) {
  auto installed = install_model_once(request, blobs, progress, stop);
  if (installed || !is_vanished_blob(installed.error())) return installed;
  return install_model_once(request, blobs, progress, stop);
}

Result<store::InstalledModel> HelperCommitter::install_model_once(
    const store::CommitModelInstall& request, const store::BlobSource& blobs,
    const store::InstallProgress& progress, std::stop_token stop) {
  Child child;
  auto sock = connect(&child.pid);
  if (!sock) return std::unexpected(sock.error());
  const int fds[] = {request.metadata_dir_fd};
  const nlohmann::json body = {{"op", "install_model"},
                               {"remote", request.remote},
                               {"target", request.target_path},
                               {"variant", request.variant},
                               {"repair", request.repair}};
  if (auto ok = send_message(sock->get(), body, fds); !ok) {
    return std::unexpected(ended({Errc::unavailable, ok.error().message}, child));
  }
  auto need = await_need(sock->get(), stop);
  if (!need) return std::unexpected(ended(need.error(), child));
  // Closing the socket on any error below cancels the helper's side.
  for (const auto& sha : *need) {
    if (stop.stop_requested()) return fail(Errc::cancelled, "cancelled");
    if (!blobs) return fail(Errc::invalid_argument, "no source for blob " + sha);
    auto fd = blobs(sha);
    if (!fd) return std::unexpected(fd.error());
    const int blob_fds[] = {fd->get()};
    if (auto ok = send_message(sock->get(), {{"op", "blob"}, {"sha256", sha}}, blob_fds); !ok) {
      // The helper may have refused the blob and answered: read that first.
      auto answer = await_answer(sock->get(), progress, stop);
      return std::unexpected(ended(answer ? ok.error() : answer.error(), child));
    }
  }
  auto reply = exchange(sock->get(), {{"op", "commit"}}, {}, progress, stop);
  if (!reply) return std::unexpected(ended(reply.error(), child));
  store::InstalledModel m;
  for (auto [key, out] : {std::pair{"name", &m.name}, std::pair{"version", &m.version},
                          std::pair{"variant", &m.variant}}) {
    const auto it = reply->find(key);
    if (it == reply->end() || !it->is_string()) {
      return fail(Errc::malformed, "commit helper: bad answer");
    }
    *out = it->get<std::string>();
  }
  return m;
}

Result<void> HelperCommitter::remove_model(std::string_view name,
                                           std::optional<std::string_view> version,
                                           std::optional<std::string_view> variant,
                                           bool even_if_leased) {
  Child child;
  auto sock = connect(&child.pid);
  if (!sock) return std::unexpected(sock.error());
  nlohmann::json request = {
      {"op", "remove_model"}, {"name", std::string(name)}, {"even_if_leased", even_if_leased}};
  request["version"] = version ? nlohmann::json(std::string(*version)) : nlohmann::json(nullptr);
  request["variant"] = variant ? nlohmann::json(std::string(*variant)) : nlohmann::json(nullptr);
  auto reply = exchange(sock->get(), request, {}, {}, {});
  if (!reply) return std::unexpected(ended(reply.error(), child));
  return {};
}

}  // namespace epbrokerd::commit
