#include "daemon/commit/server.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "daemon/commit/protocol.hpp"

namespace epbrokerd::commit {
namespace {

using catalog::Errc;

// A string field of at most `max` bytes, or nullopt.
std::optional<std::string> string_field(const nlohmann::json& body, const char* key,
                                        std::size_t max) {
  auto it = body.find(key);
  if (it == body.end() || !it->is_string()) return std::nullopt;
  const auto& s = it->get_ref<const std::string&>();
  if (s.empty() || s.size() > max) return std::nullopt;
  return s;
}

catalog::Result<nlohmann::json> run(Message& request, const CommitEnv& env, int sock,
                                    std::stop_token stop) {
  const auto op = string_field(request.body, "op", 16);
  if (op && *op == "install") {
    const auto remote = string_field(request.body, "remote", 64);
    const auto target = string_field(request.body, "target", 4096);
    if (!remote || !target || request.fds.size() != 2) {
      return catalog::fail(Errc::invalid_argument,
                           "install takes remote, target, and two descriptors");
    }
    store::CommitInstall req{*remote, *target, request.fds[0].get(), request.fds[1].get()};
    auto installed = commit_install(
        env, req,
        [&](store::InstallPhase phase, std::uint64_t done, std::uint64_t total) {
          (void)send_message(sock, {{"progress", std::string(store::install_phase_name(phase))},
                                    {"done", done},
                                    {"total", total}});
        },
        stop);
    if (!installed) return std::unexpected(installed.error());
    return nlohmann::json{
        {"ok", true}, {"name", installed->name()}, {"version", installed->version()}};
  }
  if (op && *op == "remove") {
    const auto name = string_field(request.body, "name", 256);
    std::optional<std::string> version;
    if (auto it = request.body.find("version"); it != request.body.end() && !it->is_null()) {
      version = string_field(request.body, "version", 256);
      if (!version) return catalog::fail(Errc::invalid_argument, "remove: bad version");
    }
    if (!name || !request.fds.empty()) {
      return catalog::fail(Errc::invalid_argument, "remove takes a name and no descriptors");
    }
    auto gone = commit_remove(env, *name,
                              version ? std::optional<std::string_view>(*version) : std::nullopt);
    if (!gone) return std::unexpected(gone.error());
    return nlohmann::json{{"ok", true}, {"name", *name}, {"version", version ? *version : ""}};
  }
  if (op && *op == "recover" && request.fds.empty()) {
    if (auto ok = commit_recover(env); !ok) return std::unexpected(ok.error());
    return nlohmann::json{{"ok", true}};
  }
  return catalog::fail(Errc::invalid_argument, "unknown operation");
}

}  // namespace

int serve_one(int sock, const CommitEnv& env) {
  auto request = receive_message(sock, 30'000);
  if (!request) {
    if (request.error().code == Errc::io) return 1;
    return send_message(sock, error_reply(request.error())) ? 0 : 1;
  }
  // The peer hanging up cancels (the daemon's job was cancelled, or it died).
  std::stop_source cancel;
  std::atomic<bool> done{false};
  std::jthread watcher([&] {
    while (!done.load()) {
      pollfd p{sock, POLLRDHUP, 0};
      if (::poll(&p, 1, 100) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
        cancel.request_stop();
        return;
      }
    }
  });
  auto reply = run(*request, env, sock, cancel.get_token());
  done.store(true);
  watcher.join();
  const auto body = reply ? *reply : error_reply(reply.error());
  return send_message(sock, body) ? 0 : 1;
}

}  // namespace epbrokerd::commit
