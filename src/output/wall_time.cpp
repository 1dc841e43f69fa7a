#include "output/wall_time.hpp"

#include <time.h>


namespace goscope::output {

namespace {

int64_t ns(const timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }

// Seconds and the fraction, floored (a stamp before 1970 keeps a positive fraction).
void split(int64_t unixNs, time_t& secs, int64_t& fracNs) {
  secs = static_cast<time_t>(unixNs / 1'000'000'000);
  fracNs = unixNs % 1'000'000'000;
  if (fracNs < 0) {
    fracNs += 1'000'000'000;
    secs -= 1;
  }
}

}  // namespace

int64_t measureRealtimeOffsetNs() {
  int64_t best = 0, bestSpan = -1;
  for (int i = 0; i < 5; i++) {
    timespec m1{}, r{}, m2{};
    clock_gettime(CLOCK_MONOTONIC, &m1);
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &m2);
    const int64_t span = ns(m2) - ns(m1);
    if (bestSpan < 0 || span < bestSpan) {
      bestSpan = span;
      best = ns(r) - (ns(m1) + span / 2);
    }
  }
  return best;
}

namespace {

// The text of one second ("2026-11-24T20:31:05" or "20:31:05"), kept: a
// line per event must not pay for gmtime and strftime each time.
struct SecondText {
  time_t secs = -1;
  char text[32] = {};
  size_t len = 0;
};

// `digits` zero-padded decimal digits of `x` (x < 10^digits).
void appendFraction(int64_t x, int digits, std::string& out) {
  char buf[16];
  for (int i = digits - 1; i >= 0; i--) {
    buf[i] = static_cast<char>('0' + x % 10);
    x /= 10;
  }
  out.append(buf, static_cast<size_t>(digits));
}

// The second of `secs` as `fmt` formats it in UTC or local time, from
// `last` when it is the same second; returns the fraction's nanoseconds.
int64_t appendSecond(int64_t unixNs, SecondText& last, bool utc, const char* fmt, std::string& out) {
  time_t secs;
  int64_t frac;
  split(unixNs, secs, frac);
  if (secs != last.secs) {
    tm parts{};
    if (utc)
      gmtime_r(&secs, &parts);
    else
      localtime_r(&secs, &parts);
    last.len = strftime(last.text, sizeof last.text, fmt, &parts);
    last.secs = secs;
  }
  out.append(last.text, last.len);
  return frac;
}

}  // namespace

void appendRfc3339Nanos(int64_t unixNs, std::string& out) {
  thread_local SecondText last;
  const int64_t frac = appendSecond(unixNs, last, true, "%Y-%m-%dT%H:%M:%S", out);
  out += '.';
  appendFraction(frac, 9, out);
  out += 'Z';
}

void appendClockMicros(int64_t unixNs, std::string& out) {
  thread_local SecondText last;
  const int64_t frac = appendSecond(unixNs, last, false, "%H:%M:%S", out);
  out += '.';
  appendFraction(frac / 1000, 6, out);
}

std::string rfc3339Nanos(int64_t unixNs) {
  std::string s;
  appendRfc3339Nanos(unixNs, s);
  return s;
}

std::string clockMicros(int64_t unixNs) {
  std::string s;
  appendClockMicros(unixNs, s);
  return s;
}

}  // namespace goscope::output
