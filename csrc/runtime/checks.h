// Device-side assertions. An op whose lowering added checks (ops::CheckSpec:
// an index in range, a target class that exists) returns one extra 0-d
// result per check. Those results wait here and are read at the next sync
// point (a device-to-host copy, synchronize()), or at once in Debug mode,
// so checking costs no host round trip per op. A failed check raises the
// exception CPU raises for the same input, naming the op.
#pragma once

#include <stdexcept>
#include <string>

#include "ops/lowering.h"
#include "runtime/runtime.h"

namespace ttpu::runtime {

struct DeviceAssertError : std::runtime_error {
  DeviceAssertError(const std::string& msg, bool index_error) : std::runtime_error(msg), index_error(index_error) {}
  bool index_error;
};

// Keeps `flag` (an s64 0-d result) until the next sync point.
void add_check(BufferPtr flag, const ops::CheckSpec& spec, const std::string& op);
// Reads every pending flag; throws DeviceAssertError for the first failed
// check (the others are dropped: they come from later ops).
void raise_pending_checks();
size_t pending_checks();
// The spec and op of `flag` when it is a pending check's (graph replay
// re-registers the flags its executable produces).
bool find_pending_check(const pjrt::Buffer* flag, ops::CheckSpec* spec, std::string* op);

}  // namespace ttpu::runtime
