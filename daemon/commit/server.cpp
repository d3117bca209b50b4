#include "daemon/commit/server.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "daemon/commit/commit_model.hpp"
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

// The daemon's side of the blob conversation, over the socket.
class SocketFeed : public BlobFeed {
 public:
  explicit SocketFeed(int sock) : sock_(sock) {}
  catalog::Result<void> need(const std::vector<std::string>& sha256s) override {
    // In parts of kNeedPerMessage (a message holds at most kMaxMessageBytes).
    std::size_t i = 0;
    do {
      const std::size_t end = std::min(sha256s.size(), i + kNeedPerMessage);
      nlohmann::json part = nlohmann::json::array();
      for (; i < end; ++i) part.push_back(sha256s[i]);
      if (auto ok = send_message(sock_, {{"need", part}, {"more", i < sha256s.size()}}); !ok) {
        return ok;
      }
    } while (i < sha256s.size());
    return {};
  }
  catalog::Result<std::optional<std::pair<std::string, catalog::UniqueFd>>> next(
      std::stop_token stop) override {
    for (;;) {
      auto m = receive_message(sock_, 200);
      if (!m && m.error().code == Errc::busy) {
        if (stop.stop_requested()) return catalog::fail(Errc::cancelled, "cancelled");
        continue;
      }
      if (!m) return std::unexpected(m.error());
      const auto op = string_field(m->body, "op", 16);
      if (op && *op == "commit" && m->fds.empty()) return std::nullopt;
      const auto sha = string_field(m->body, "sha256", 64);
      if (op && *op == "blob" && sha && m->fds.size() == 1) {
        return std::make_optional(std::make_pair(*sha, std::move(m->fds[0])));
      }
      return catalog::fail(Errc::invalid_argument,
                           "expected a blob (sha256, one descriptor) or commit");
    }
  }

 private:
  static constexpr std::size_t kNeedPerMessage = 500;
  int sock_;
};

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
  if (op && *op == "install_model") {
    const auto remote = string_field(request.body, "remote", 64);
    const auto target = string_field(request.body, "target", 4096);
    const auto variant = string_field(request.body, "variant", 64);
    const auto repair = request.body.find("repair");
    if (!remote || !target || !variant || repair == request.body.end() || !repair->is_boolean() ||
        request.fds.size() != 1) {
      return catalog::fail(Errc::invalid_argument,
                           "install_model takes remote, target, variant, repair, and one "
                           "descriptor");
    }
    store::CommitModelInstall req{*remote, *target, *variant, repair->get<bool>(),
                                  request.fds[0].get()};
    SocketFeed feed(sock);
    auto installed = commit_install_model(
        env, req, feed,
        [&](store::InstallPhase phase, std::uint64_t done, std::uint64_t total) {
          (void)send_message(sock, {{"progress", std::string(store::install_phase_name(phase))},
                                    {"done", done},
                                    {"total", total}});
        },
        stop);
    if (!installed) return std::unexpected(installed.error());
    return nlohmann::json{{"ok", true},
                          {"name", installed->name},
                          {"version", installed->version},
                          {"variant", installed->variant}};
  }
  if (op && *op == "remove_model") {
    const auto name = string_field(request.body, "name", 256);
    std::optional<std::string> version;
    std::optional<std::string> variant;
    for (auto [key, out] : {std::pair{"version", &version}, std::pair{"variant", &variant}}) {
      if (auto it = request.body.find(key); it != request.body.end() && !it->is_null()) {
        *out = string_field(request.body, key, 256);
        if (!*out)
          return catalog::fail(Errc::invalid_argument, "remove_model: bad " + std::string(key));
      }
    }
    const auto even = request.body.find("even_if_leased");
    if (!name || even == request.body.end() || !even->is_boolean() || !request.fds.empty()) {
      return catalog::fail(Errc::invalid_argument,
                           "remove_model takes a name, even_if_leased and no descriptors");
    }
    auto gone = commit_remove_model(
        env, *name, version ? std::optional<std::string_view>(*version) : std::nullopt,
        variant ? std::optional<std::string_view>(*variant) : std::nullopt, even->get<bool>());
    if (!gone) return std::unexpected(gone.error());
    return nlohmann::json{{"ok", true}, {"name", *name}};
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
  if (!send_message(sock, body)) return 1;
  // Read what the peer still sends (the rest of a refused install_model's
  // blobs, its commit) until it hangs up: closing with unread messages would
  // reset the connection and lose the answer before the peer reads it.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < until) {
    auto m = receive_message(sock, 100);
    if (!m && m.error().code == Errc::io) break;
  }
  return 0;
}

}  // namespace epbrokerd::commit
