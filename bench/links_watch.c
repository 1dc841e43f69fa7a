// bench/stop_latency.sh's observer: waits until the uprobe_multi links whose
// pid filter is PID appear (MODE "on") or are all gone (MODE "off"), polling
// the kernel's link list every 200 us, and prints the moment it saw it as
// seconds since the epoch (bash's $EPOCHREALTIME clock). A link's id leaves
// the list in the same kernel call that takes its uprobes' int3 out of the
// target (docs/kernel.md, "When a link's id goes"): "off" is the moment the
// probes came off. Links are counted by target, not by owner: goscope's live
// in its link holder, a fork (docs/kernel.md).
//   build: cc -O2 -o links_watch bench/links_watch.c
//   usage: links_watch on|off PID TIMEOUT_S     exit 0 seen, 2 timed out, 1 usage
// struct bpf_link_info's uprobe_multi member (Linux 6.8+) is mirrored here:
// Debian 12's linux/bpf.h predates it.
#define _GNU_SOURCE
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { kUprobeMultiLinkType = 12 };  // BPF_LINK_TYPE_UPROBE_MULTI

struct uprobe_multi_link_info {
  uint32_t type, id, prog_id, pad;
  uint64_t path, offsets, ref_ctr_offsets, cookies;
  uint32_t path_size, count, flags, pid;
};

static int links_for(uint32_t pid) {
  int n = 0;
  uint32_t id = 0;
  for (;;) {
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.start_id = id;
    if (syscall(SYS_bpf, BPF_LINK_GET_NEXT_ID, &a, sizeof a) != 0) break;
    id = a.next_id;
    memset(&a, 0, sizeof a);
    a.link_id = id;
    int fd = (int)syscall(SYS_bpf, BPF_LINK_GET_FD_BY_ID, &a, sizeof a);
    if (fd < 0) continue;  // gone meanwhile
    struct uprobe_multi_link_info info;
    memset(&info, 0, sizeof info);
    memset(&a, 0, sizeof a);
    a.info.bpf_fd = (uint32_t)fd;
    a.info.info_len = sizeof info;
    a.info.info = (uint64_t)(uintptr_t)&info;
    if (syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &a, sizeof a) == 0 && info.type == kUprobeMultiLinkType &&
        info.pid == pid)
      n++;
    close(fd);
  }
  return n;
}

static double now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc != 4 || (strcmp(argv[1], "on") != 0 && strcmp(argv[1], "off") != 0)) {
    fprintf(stderr, "usage: links_watch on|off PID TIMEOUT_S\n");
    return 1;
  }
  const int want_on = strcmp(argv[1], "on") == 0;
  const uint32_t pid = (uint32_t)strtoul(argv[2], NULL, 10);
  const double deadline = now(CLOCK_MONOTONIC) + atof(argv[3]);
  while (now(CLOCK_MONOTONIC) < deadline) {
    const int n = links_for(pid);
    if (want_on ? n > 0 : n == 0) {
      printf("%.6f\n", now(CLOCK_REALTIME));
      return 0;
    }
    usleep(200);
  }
  return 2;
}
