// libepbroker: ML models the daemon brokers beside the execution providers
// (Broker1.ListModels, EnsureModel, RemoveModel, and RequestSession's `models`).
//
//   epbroker::Client client;
//   for (const auto& m : client.models()) ...;          // what the catalogs offer
//   epbroker::ModelLease lease = client.ensure_model("tiny-net", {}, on_progress);
//   Ort::Session s(env, lease.main().c_str(), opts);     // the planned variant's file
//
// A ModelLease is a session of its own (Session1): while it lives the daemon
// deletes none of the variant's files, and remove_model() without `now` refuses
// it (Errc::busy). Included by <epbroker/client.hpp>; C++17, no D-Bus types.
// Added in libepbroker 0.2 (symbol version EPBROKER_0.2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "epbroker/client.hpp"

namespace epbroker {

// One variant of a model (ModelInfo::variants): the files built for some devices
// or EPs (or for any: devices and eps empty).
struct ModelVariantInfo {
  std::string id;                    // e.g. "fp32", "int8-npu"
  std::vector<std::string> devices;  // device types it is built for ("npu"); empty = any
  std::vector<std::string> eps;      // EP names it is built for; empty = any
  std::string ort_min;               // minimum ONNX Runtime
  std::uint32_t opset = 0;           // the ONNX opset of its main file
  std::uint64_t size = 0;            // bytes: the sum of its files
  bool installed = false;            // the store has it (of this version)
};

// One model version the trusted catalogs list (Broker1.ListModels), newest first
// per name.
struct ModelInfo {
  std::string name;
  std::string version;
  std::string publisher;
  std::string license;  // an SPDX id, e.g. "Apache-2.0"
  std::string license_url;
  std::string description;
  std::string task;  // e.g. "image-classification"
  // "available", or "refused": the card or its files are not signed as the card
  // says; never installable (reason says why). A newer daemon may send other words.
  std::string state;
  std::string reason;  // refused only
  std::string remote;  // the catalog it comes from
  std::vector<ModelVariantInfo> variants;
  // What a session with the policy and ORT version models() was given gets on
  // this machine: the variant ("" when none fits), on which device (an id, see
  // Device::id) and through which EP, and why (or why none fits).
  std::string planned;
  std::string plan_device;
  std::string plan_ep;
  std::string plan_reason;
};

// Client::ensure_model()'s choices.
struct ModelOptions {
  std::string variant;                     // a variant id; "" = the one planned for this machine
  std::string version;                     // "" = the newest valid one
  Policy policy = Policy::default_policy;  // for planning the variant
  std::string ort_version;                 // the app's ONNX Runtime ("1.22.0"); "" = not checked
  // Install the variant when it is not installed (Broker1.EnsureModel, polkit
  // org.epbroker.install); false: lease it only if installed, else Errc::not_found.
  bool download = true;
};

// One variant Client::install_model() installed (or found installed).
struct InstalledModel {
  std::string name;
  std::string version;
  std::string variant;
  std::uint64_t size = 0;  // bytes: the sum of its files
};

// One installed variant Client::remove_model() removed.
struct RemovedModel {
  std::string name;
  std::string version;
  std::string variant;
};

namespace detail {
struct GrantedModel;  // what RequestSession granted of one model
}  // namespace detail

// A lease on one installed model variant (a Session1 of its own, granting no
// provider): while it lives, the daemon deletes none of the variant's files.
// Released on destruction or release(); the daemon also ends it when this
// process's bus connection closes. What it says (name() ... eps()) stays readable
// after release(), but the files are no longer leased then. Move-only; a
// default-constructed or moved-from lease holds nothing (every string empty).
class EPBROKER_API ModelLease {
 public:
  ModelLease() noexcept;
  ~ModelLease();  // release(), errors ignored
  ModelLease(ModelLease&& other) noexcept;
  ModelLease& operator=(ModelLease&& other) noexcept;  // releases what *this held first
  ModelLease(const ModelLease&) = delete;
  ModelLease& operator=(const ModelLease&) = delete;

  const std::string& name() const noexcept;
  const std::string& version() const noexcept;
  const std::string& variant() const noexcept;
  // The variant's directory in the store (absolute).
  const std::string& path() const noexcept;
  // Its main file (absolute), the one to open with ONNX Runtime.
  const std::string& main() const noexcept;
  // Every file of the variant, relative to path() (main() among them).
  const std::vector<std::string>& files() const noexcept;
  // What the variant is built for: device types and EP names (empty = any).
  const std::vector<std::string>& devices() const noexcept;
  const std::vector<std::string>& eps() const noexcept;
  // D-Bus path of the lease's session object; "" when empty or released.
  const std::string& session_path() const noexcept;
  bool active() const noexcept;

  // Ends the lease now. Throws epbroker::Error if the daemon refuses; the lease
  // is inactive afterwards either way.
  void release();

 private:
  friend class Client;  // fills a lease it was granted

  Session session_;
  // Kept behind a pointer so that later versions may add to it without changing
  // this class's size (libepbroker.so.0's ABI).
  std::unique_ptr<detail::GrantedModel> model_;
};

}  // namespace epbroker
