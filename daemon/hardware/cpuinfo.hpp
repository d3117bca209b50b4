// CPU discovery from the text of /proc/cpuinfo.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "daemon/hardware/device.hpp"

namespace epbrokerd::hardware {

// Bounds on what parse_cpuinfo() believes; blocks beyond them are ignored.
inline constexpr std::size_t kMaxCpuProcessors = 8192;  // the largest distro NR_CPUS
inline constexpr std::size_t kMaxCpuPackages = 64;

// One Device per CPU package (socket) described by `text`, the contents of
// /proc/cpuinfo, in ascending package order with ids "cpu0", "cpu1"...; `arch`
// ("x86_64", "aarch64", as uname -m) is copied into each and picks the ISA table.
//
// The text is a series of blocks separated by blank lines, one per logical processor,
// each starting with "processor : N"; blocks without "processor" (aarch64's trailing
// "Hardware"/"Revision" block) are ignored. Keys used:
//  - x86: "physical id" (the package; absent = 0), "vendor_id" (GenuineIntel →
//    Intel 0x8086, AuthenticAMD → AMD 0x1022, else the string itself with id 0),
//    "model name", "flags", "cpu cores" and "siblings" (cores and threads of the
//    package; when absent or garbage: the distinct "core id"s, and the blocks
//    counted), "core id".
//  - aarch64 (no package key: one package): "CPU implementer" (0x41 Arm 0x13b5,
//    0x51 Qualcomm 0x17cb, 0x4e NVIDIA 0x10de, else "0xNN" with id 0), "CPU part",
//    "Features", and "model name" where the kernel prints one; else the name is the
//    distinct core names in order of appearance ("Cortex-A76", "Cortex-X4 +
//    Cortex-A720"), or "Arm part 0xd99" for a part not in the table. Cores = threads
//    = blocks counted.
// isa lists, in this fixed order, the extensions every processor of the package has:
//  x86_64: fma f16c avx2 avx_vnni avx512f avx512_vnni avx512_bf16 avx512_fp16
//          amx_tile amx_bf16 amx_int8 amx_fp16
//  aarch64: asimd asimddp sve sve2 i8mm bf16
// Values that do not parse are skipped field by field (a garbage "cpu cores" falls
// back to counting; a model name with control bytes becomes ""). An empty result
// means no processor block at all.
std::vector<Device> parse_cpuinfo(std::string_view text, std::string_view arch);

}  // namespace epbrokerd::hardware
