// Wall-clock time for events stamped with CLOCK_MONOTONIC (BPF's
// bpf_ktime_get_ns, and the Delve path's own stamps): one offset,
// CLOCK_REALTIME - CLOCK_MONOTONIC, measured once when the output is made
// (at the session's start), turns every stamp into wall time. One offset for
// the whole session keeps the stamps' order and spacing exactly as measured;
// a wall-clock step (NTP) during the session is not followed.
#pragma once

#include <cstdint>
#include <string>

namespace goscope::output {

// CLOCK_REALTIME - CLOCK_MONOTONIC in ns, read as a bracketed pair (the
// tightest of a few tries).
int64_t measureRealtimeOffsetNs();

// "2026-11-24T20:31:05.123456789Z": RFC 3339, UTC, nanoseconds.
std::string rfc3339Nanos(int64_t unixNs);
// "20:31:05.123456": local time, microseconds (trace's text lines).
std::string clockMicros(int64_t unixNs);
// The same, appended to `out`; the date and time of day are kept for the
// last second formatted (trace writes many lines a second: gmtime/localtime
// and strftime once a second, not once a line).
void appendRfc3339Nanos(int64_t unixNs, std::string& out);
void appendClockMicros(int64_t unixNs, std::string& out);

}  // namespace goscope::output
