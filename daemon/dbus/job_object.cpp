#include "daemon/dbus/job_object.hpp"

#include <utility>

#include "daemon/dbus/convert.hpp"
#include "daemon/dbus/errors.hpp"
#include "daemon/dbus/service.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {

JobObject::JobObject(sdbus::IConnection& conn, Service& service, std::shared_ptr<core::Job> job)
    : AdaptorInterfaces(conn, job_path(job->id())), service_(service), job_(std::move(job)) {
  registerAdaptor();
  emitInterfacesAddedSignal({org::epbroker::Job1_adaptor::INTERFACE_NAME});
}

JobObject::~JobObject() {
  emitInterfacesRemovedSignal({org::epbroker::Job1_adaptor::INTERFACE_NAME});
  unregisterAdaptor();
}

void JobObject::changed(const core::JobSnapshot& s) {
  emitPropertiesChangedSignal(org::epbroker::Job1_adaptor::INTERFACE_NAME,
                              {"State", "BytesDone", "BytesTotal", "Error", "ErrorMessage"});
  if (core::is_final(s.state) && !finished_.exchange(true)) {
    const std::string err = s.error ? bus_error_name_of(*s.error) : "";
    emitFinished(std::string(core::job_state_name(s.state)), err, s.error ? s.error->message : "");
  }
}

void JobObject::Cancel() {
  guarded([&] {
    const auto call = service_.enter_call(getObject(), "Job1.Cancel", false);
    const auto ctx = Service::context_of(getObject());
    value_or_throw(service_.broker().cancel_job(ctx, job_->id()));
    log::info("job {}: cancel requested by {} (uid {})", job_->id(), ctx.sender, ctx.uid);
  });
}

std::string JobObject::Kind() { return std::string(core::job_kind_name(job_->snapshot().kind)); }
std::string JobObject::Target() { return job_->snapshot().target; }
std::string JobObject::State() { return std::string(core::job_state_name(job_->snapshot().state)); }
uint64_t JobObject::BytesDone() { return job_->snapshot().bytes_done; }
uint64_t JobObject::BytesTotal() { return job_->snapshot().bytes_total; }
std::string JobObject::Error() {
  const auto s = job_->snapshot();
  return s.error ? bus_error_name_of(*s.error) : std::string();
}
std::string JobObject::ErrorMessage() {
  const auto s = job_->snapshot();
  return s.error ? s.error->message : std::string();
}

}  // namespace epbrokerd::dbus
