// The commit protocol: one request and its answers over a SOCK_SEQPACKET unix
// socket (one message = one JSON object, at most kMaxMessageBytes; descriptors
// ride as SCM_RIGHTS). The daemon connects (systemd starts one epbroker-commit per
// connection, the socket as its standard input: Accept=yes) or, with no separate
// owner of the store, starts the helper itself on a socketpair.
//
//   daemon -> helper  {"op":"install","remote":R,"target":PATH}  + [metadata dir, package]
//                     {"op":"remove","name":N,"version":V|null}
//                     {"op":"recover"}        (Store::open(): at the daemon's start)
//   helper -> daemon  {"progress":"extracting"|"verifying"|"committing","done":D,"total":T}
//                     ... then exactly one of
//                     {"ok":true,"name":N,"version":V}
//                     {"ok":false,"code":ERRC,"message":TEXT}
//
// Closing the connection cancels: the helper stops before its commit starts.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/error.hpp"
#include "catalog/unique_fd.hpp"

namespace epbrokerd::commit {

inline constexpr std::size_t kMaxMessageBytes = 65536;
inline constexpr std::size_t kMaxMessageFds = 2;

struct Message {
  nlohmann::json body;
  std::vector<catalog::UniqueFd> fds;
};

// Sends `body` (and `fds`, borrowed) as one message. Errors: Errc::io (a closed
// peer included), invalid_argument (too large, too many fds).
catalog::Result<void> send_message(int sock, const nlohmann::json& body,
                                   std::span<const int> fds = {});

// Receives one message; waits at most `timeout_ms` (-1: forever). A message with
// more descriptors than kMaxMessageFds, truncated, not a JSON object, or with
// descriptors of a kind other than SCM_RIGHTS is Errc::malformed (every
// descriptor received is closed). Errors: Errc::io (peer gone: "closed"),
// Errc::busy (timeout), Errc::malformed.
catalog::Result<Message> receive_message(int sock, int timeout_ms = -1);

// The wire form of an error and back (errc_name(); an unknown name reads as io).
nlohmann::json error_reply(const catalog::Error& e);
catalog::Error error_from_reply(const nlohmann::json& reply);

}  // namespace epbrokerd::commit
