// The Job1 object (dbus/org.epbroker.Job1.xml): one per published job, at
// job_path(id). Created, kept and removed by Service (service.hpp), which also
// decides how long a finished job's object stays on the bus.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "daemon/core/job.hpp"
#include "generated/dbus/Job1_adaptor.h"

namespace epbrokerd::dbus {

class Service;

class JobObject final
    : public sdbus::AdaptorInterfaces<org::epbroker::Job1_adaptor, sdbus::Properties_adaptor,
                                      sdbus::ManagedObject_adaptor> {
 public:
  JobObject(sdbus::IConnection& conn, Service& service, std::shared_ptr<core::Job> job);
  ~JobObject();
  // Emits PropertiesChanged, and Finished once when `snap` is final.
  void changed(const core::JobSnapshot& snap);

 private:
  void Cancel() override;
  std::string Kind() override;
  std::string Target() override;
  std::string State() override;
  uint64_t BytesDone() override;
  uint64_t BytesTotal() override;
  std::string Error() override;
  std::string ErrorMessage() override;

  Service& service_;
  // The object reads its job directly, so it outlives the job table's entry.
  std::shared_ptr<core::Job> job_;
  std::atomic<bool> finished_{false};
};

}  // namespace epbrokerd::dbus
