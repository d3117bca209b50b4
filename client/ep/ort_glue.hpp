// <epbroker/ort.hpp> for this library: its rules without a linked ONNX Runtime.
// ORT hands the plugin its API table (OrtApiBase) at CreateEpFactories, so the
// C++ API's global initialisation is manual and never used here; only the
// ORT-free parts of the header are (detail::ensure_session, detail::unusable,
// SkippedProvider, to_string(SkipCode)).
#pragma once

#ifndef ORT_API_MANUAL_INIT
#define ORT_API_MANUAL_INIT
#endif
#include <epbroker/ort.hpp>
