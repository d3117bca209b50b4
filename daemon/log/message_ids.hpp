// The MESSAGE_IDs of the events an admin filters on in the journal
// (`journalctl MESSAGE_ID=…`, or `journalctl -x` for the explanation). Each is
// explained by an entry of the message catalog systemd/epbroker.catalog (catalog(7);
// installed as /usr/lib/systemd/catalog/epbroker.catalog): every id here has one
// there and the catalog has no other (tests/cli/journal_catalog_test.sh). Made once
// with `systemd-id128 new`; never change one: admins' filters name them.
#pragma once

#include <string_view>

namespace epbrokerd::log {

// A package version was installed and made current (history action install):
// EPBROKER_PACKAGE, EPBROKER_VERSION, EPBROKER_REMOTE, EPBROKER_JOB, EPBROKER_CALLER_UID.
inline constexpr std::string_view kMessageInstalled = "9740fda51f9b49c0b4f6c149a182ad5e";
// A package was updated to a newer version (history action update), manually or by
// auto_update: the install fields and EPBROKER_FROM_VERSION.
inline constexpr std::string_view kMessageUpdated = "abc2666e4a9f4624b32db8c7e6f44511";
// A package was removed (RemoveProvider, RemoveProviderNow): EPBROKER_PACKAGE,
// EPBROKER_VERSION (the version that was current), EPBROKER_CALLER_UID.
inline constexpr std::string_view kMessageRemoved = "b90e961562124351be7b0aeb9d48dc6f";
// A remote's catalog refresh failed (any cause; EPBROKER_ERROR names it): EPBROKER_REMOTE,
// EPBROKER_ERROR, EPBROKER_JOB, EPBROKER_CALLER_UID.
inline constexpr std::string_view kMessageRefreshFailed = "7b3bcb9458ad43fcbdc2edaf1b7b40de";
// A package failed verification: a download failed the signed length, hashes or
// manifest (an install job; EPBROKER_JOB_KIND=install), or installed files no longer
// match their manifest (a verify job; EPBROKER_JOB_KIND=verify): EPBROKER_PACKAGE,
// EPBROKER_VERSION, EPBROKER_JOB, and for installs EPBROKER_REMOTE and EPBROKER_ERROR.
inline constexpr std::string_view kMessageVerificationFailed = "2f759f10719542b8a5ac394c2171aadc";
// An installed ML model variant failed verification (a verify job): its files no
// longer match the signed card. EPBROKER_PACKAGE (the model's name), EPBROKER_VERSION
// ("VERSION/VARIANT", as the model's history entries write it), EPBROKER_JOB,
// EPBROKER_JOB_KIND=verify.
inline constexpr std::string_view kMessageModelDamaged = "4bbcaac4adab48c59230a67a2c51bb76";

}  // namespace epbrokerd::log
