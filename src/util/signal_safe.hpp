// Small tools for code that must be async-signal-safe (a forked child of a
// threaded process, a sentinel, a signal handler's helpers): no allocation,
// no stdio, no locks; system calls and fixed buffers only.
#pragma once

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace goscope::signal_safe {

inline long monotonicUs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000L + ts.tv_nsec / 1000L;
}

inline long monotonicMs() { return monotonicUs() / 1000L; }

inline void sleepUs(long us) {
  timespec ts{us / 1'000'000L, (us % 1'000'000L) * 1000L};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// A string built in a fixed buffer, always NUL-terminated. A piece that
// does not fit is not added, and `ok` turns false.
template <size_t N>
struct FixedText {
  char data[N];
  size_t len = 0;
  bool ok = true;
  FixedText() { data[0] = 0; }
  FixedText& add(const char* s) {
    const size_t n = s ? ::strlen(s) : 0;
    if (len + n >= N) {
      ok = false;
      return *this;
    }
    ::memcpy(data + len, s, n);
    len += n;
    data[len] = 0;
    return *this;
  }
  FixedText& num(uint64_t v) {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    char out[24];
    for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
    out[n] = 0;
    return add(out);
  }
};

// Reads at most cap - 1 bytes of a small file (a /proc status or stat) into
// `out`, NUL-terminated; the length read, 0 when it cannot be opened.
inline size_t readSmallFile(const char* path, char* out, size_t cap) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t len = 0;
  while (len + 1 < cap) {
    const ssize_t n = ::read(fd, out + len, cap - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += static_cast<size_t>(n);
  }
  ::close(fd);
  out[len] = 0;
  return len;
}

// The hexadecimal value of the line that starts with `key` in a /proc
// status text ("SigPnd:\t0000000000000100"); 0 when there is none.
inline uint64_t hexFieldOf(const char* text, size_t len, const char* key) {
  const size_t k = ::strlen(key);
  for (size_t i = 0; k <= len && i + k <= len; ++i) {
    if ((i != 0 && text[i - 1] != '\n') || ::memcmp(text + i, key, k) != 0) continue;
    size_t j = i + k;
    while (j < len && (text[j] == ' ' || text[j] == '\t')) ++j;
    uint64_t v = 0;
    for (; j < len; ++j) {
      const char c = text[j];
      const int d = (c >= '0' && c <= '9')   ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                             : -1;
      if (d < 0) break;
      v = (v << 4) | static_cast<uint64_t>(d);
    }
    return v;
  }
  return 0;
}

// A signal's bit in a /proc signal mask.
constexpr uint64_t signalBit(int sig) { return uint64_t(1) << (sig - 1); }

}  // namespace goscope::signal_safe
