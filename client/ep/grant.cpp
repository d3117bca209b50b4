#include "client/ep/grant.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "client/epbroker-run/progress.hpp"

namespace epbroker::meta_ep {

namespace {

using Answer = std::expected<Grant, std::string>;

// The conversation itself, on the worker thread.
Answer converse(const Options& options, const std::string& app, const CancelToken& cancel) {
  const auto app_v = detail::parse_version(app);
  if (!app_v) return std::unexpected("cannot read this ONNX Runtime's version '" + app + "'");
  try {
    Client client;
    EnsureOptions eo;
    eo.policy = options.policy;
    eo.providers = options.providers;
    eo.install = options.install;
    eo.cancel = cancel;
    ProgressCallback progress;
    if (options.install) progress = epbroker_run::ProgressPrinter();
    detail::EnsuredSession ensured = detail::ensure_session(client, app, progress, eo);
    Grant out;
    for (const Provider& p : ensured.session.providers()) {
      if (auto skip = detail::unusable(p, app, *app_v)) {
        out.skipped.push_back(std::move(*skip));
      } else {
        out.usable.push_back(Usable{p.name, p.library_path, p.version, p.ep_names});
      }
    }
    detail::prefer_early(out.skipped, ensured.early);
    out.session = std::move(ensured.session);
    return out;
  } catch (const Error& e) {
    return std::unexpected(std::string(errc_name(e.code())) + ": " + e.message());
  } catch (const std::exception& e) {
    return std::unexpected(std::string("internal error: ") + e.what());
  }
}

// What the caller and the worker share; the last of them to let go frees it.
struct Exchange {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Answer> answer;
  bool abandoned = false;  // the caller stopped waiting
  CancelToken cancel;
};

}  // namespace

std::expected<Grant, std::string> request_grant(const Options& options,
                                                const std::string& ort_version) {
  auto ex = std::make_shared<Exchange>();
  try {
    std::thread([ex, options, ort_version] {
      Answer answer = converse(options, ort_version, ex->cancel);
      std::unique_lock lock(ex->mu);
      if (ex->abandoned) return;  // `answer` goes with this frame: its session is released
      ex->answer = std::move(answer);
      ex->cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    return std::unexpected(std::string("cannot start a thread: ") + e.what());
  }
  std::unique_lock lock(ex->mu);
  if (!ex->cv.wait_for(lock, options.timeout, [&] { return ex->answer.has_value(); })) {
    ex->abandoned = true;
    ex->cancel.cancel();
    return std::unexpected("the broker did not answer within " +
                           std::to_string(options.timeout.count()) + " ms (" + kTimeoutVar + ")");
  }
  return std::move(*ex->answer);
}

}  // namespace epbroker::meta_ep
