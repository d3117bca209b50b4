// Bus methods that may need authorization, answered without blocking the bus
// thread (core/authorizer.hpp says how the core decides).
//
// Such a method is declared org.freedesktop.DBus.Method.Async "server" in
// dbus/org.epbroker.Broker1.xml, so that it can be answered after its handler
// returned. authorized() runs it:
//   1. admits and counts the call (Service::enter_call: it stays counted until
//      answered, so the idle exit waits for it) and reads the caller;
//   2. calls the core with a fresh CallAuthorization (Service::run_authorized);
//   3. when the core noted a question it could not decide alone (polkit), asks it,
//      once, and returns: the bus thread serves other callers while polkit (or the
//      user's authentication agent) answers, within authorization_timeout_sec;
//   4. with the answer (dispatched on the bus thread) calls the core again; that
//      result is the reply, through `reply`, which turns the core's value into the
//      method's out values (and publishes jobs, logs).
// An exception out of the core or of `reply` is answered as a bus error, as
// guarded() does for plain methods.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "daemon/core/authorizer.hpp"
#include "daemon/core/error.hpp"
#include "daemon/dbus/errors.hpp"
#include "daemon/dbus/lifecycle.hpp"
#include "daemon/dbus/service.hpp"

namespace epbrokerd::dbus {

// Sends `error` as the answer of `result`; a failure to send is logged (the
// caller is gone), not thrown.
template <typename... Out>
void answer_error(const sdbus::Result<Out...>& result, const sdbus::Error& error) {
  try {
    result.returnError(error);
  } catch (const sdbus::Error& e) {
    log_unsent_reply(e);
  }
}

// Admits the call on `object` (steps 1-4 above). `call(ctx)` returns a
// core::Result<T>; `reply` takes the T (nothing for Result<void>) and returns the
// out values: nothing, the one value, or a std::tuple of them.
template <typename... Out, typename Call, typename Reply>
void authorized(Service& service, sdbus::IObject& object, const char* method, bool starts_work,
                sdbus::Result<Out...>&& result, Call call, Reply reply) {
  auto res = std::make_shared<sdbus::Result<Out...>>(std::move(result));
  std::shared_ptr<CallScope> scope;
  core::RequestContext ctx;
  try {
    guarded([&] {
      scope = std::make_shared<CallScope>(service.enter_call(object, method, starts_work));
      ctx = Service::context_of(object);
    });
  } catch (const sdbus::Error& e) {
    answer_error(*res, e);
    return;
  }
  using R = std::invoke_result_t<Call&, const core::RequestContext&>;
  using T = typename R::value_type;
  auto attempt = [res, scope, call = std::move(call),
                  reply = std::move(reply)](const core::RequestContext& c) mutable -> bool {
    try {
      return guarded([&] {
        R r = call(c);
        if (!r && c.authorization && c.authorization->wants_asking()) return false;
        if (!r) throw_bus_error(r.error());
        auto out = [&] {
          if constexpr (std::is_void_v<T>) {
            return reply();
          } else {
            return reply(std::move(*r));
          }
        };
        if constexpr (sizeof...(Out) == 0) {
          out();
          res->returnResults();
        } else if constexpr (sizeof...(Out) == 1) {
          res->returnResults(out());
        } else {
          std::apply([&](const auto&... v) { res->returnResults(v...); }, out());
        }
        return true;
      });
    } catch (const sdbus::Error& e) {
      answer_error(*res, e);
      return true;
    }
  };
  service.run_authorized(std::move(ctx), std::move(attempt),
                         [res](const sdbus::Error& e) { answer_error(*res, e); });
}

}  // namespace epbrokerd::dbus
