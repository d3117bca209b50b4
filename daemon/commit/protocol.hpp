// The commit protocol: one request and its answers over a SOCK_SEQPACKET unix
// socket (one message = one JSON object, at most kMaxMessageBytes; descriptors
// ride as SCM_RIGHTS). The daemon connects (systemd starts one epbroker-commit per
// connection, the socket as its standard input: Accept=yes) or, with no separate
// owner of the store, starts the helper itself on a socketpair.
//
//   daemon -> helper  {"op":"install","remote":R,"target":PATH}  + [metadata dir, package]
//                     {"op":"remove","name":N,"version":V|null}
//                     {"op":"recover"}        (Store::open(): at the daemon's start)
//                     {"op":"install_model","remote":R,"target":CARD,"variant":ID,
//                      "repair":B}  + [metadata dir]
//                     {"op":"remove_model","name":N,"version":V|null,"variant":ID|null,
//                      "even_if_leased":B}
//   helper -> daemon  {"progress":"extracting"|"verifying"|"committing","done":D,"total":T}
//                     ... then exactly one of
//                     {"ok":true,"name":N,"version":V}
//                     {"ok":false,"code":ERRC,"message":TEXT}
//
// install_model is a conversation (commit_model.hpp): the helper verifies the
// card and answers, in parts of at most 500, the blobs the store lacks (with
// "repair":true, sent when the daemon found the installed variant damaged, the
// helper also hashes the variant's stored blobs, and "need" also names each
// whose bytes are damaged: the daemon sends a fresh download as for a missing
// one, and at the commit the helper links its verified copy over every path of
// that content in every installed variant, then over the blob, never writing
// into the damaged inode; Store::replace_model_blobs()):
//   helper -> daemon  {"need":[SHA256...],"more":B}    (until "more" is false)
//   daemon -> helper  {"op":"blob","sha256":SHA256} + [the downloaded bytes]
//                     ... once for each needed blob, in any order; then
//                     {"op":"commit"}
// and then progress and the final answer as above ({"ok":true,"name":N,
// "version":V,"variant":ID}). A blob not asked for, one sent twice or a commit
// before every needed blob ends it (invalid_argument); busy with a message
// starting "a blob vanished from the store: " asks the daemon to start over.
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
