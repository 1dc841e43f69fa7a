// SPDX-License-Identifier: GPL-2.0
/* stopwatch.bpf.c: how long a process was stopped by its tracer — the Delve
 * path's true cost, every breakpoint hit included.
 *
 * A thread enters a ptrace stop by scheduling out in state __TASK_TRACED
 * (sched_switch's prev_state) and leaves it when its tracer resumes it
 * (sched_wakeup). An episode lasts while at least one thread is in such a
 * stop: from the first thread that traps (a breakpoint hit; Delve then stops
 * every other thread) to the last one resumed. Two sums: the episodes
 * (some thread stopped), and the time the episode's first thread — the one
 * that hit the breakpoint — spent stopped in it, its single-step over the
 * breakpoint aside: what the code that called the probed function lost. A
 * group stop (SIGSTOP without a tracer) is __TASK_STOPPED and not counted:
 * it is not ours. docs/overhead.md has the facts.
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

#define GS_TASK_TRACED 0x8 /* __TASK_TRACED */

const volatile __u32 target_tgid = 0;

/* Read by user space through the mmapped .bss. */
__u64 stopped_ns = 0; /* completed process-level stops, summed */
__u64 stops = 0;      /* how many */
__u64 since_ns = 0;   /* start of the stop in progress (nstopped > 0) */
__s64 nstopped = 0;   /* threads in a ptrace stop now */
__u32 leader = 0;     /* the thread that began the episode in progress */
__u64 leader_ns = 0;  /* its stopped time, summed over episodes */

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, __u64);
} stopped_threads SEC(".maps");

SEC("tp_btf/sched_switch")
int BPF_PROG(gs_stop_begin, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state) {
  if (prev->tgid != target_tgid || !(prev_state & GS_TASK_TRACED)) return 0;
  __u32 tid = prev->pid;
  __u64 now = bpf_ktime_get_ns();
  if (bpf_map_update_elem(&stopped_threads, &tid, &now, BPF_NOEXIST) != 0) return 0;
  if (__sync_fetch_and_add(&nstopped, 1) == 0) {
    since_ns = now;
    leader = tid;
    __sync_fetch_and_add(&stops, 1);
  }
  return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(gs_stop_end, struct task_struct *p) {
  if (p->tgid != target_tgid) return 0;
  __u32 tid = p->pid;
  __u64 *began = bpf_map_lookup_elem(&stopped_threads, &tid);
  if (!began) return 0;
  __u64 now = bpf_ktime_get_ns();
  if (tid == leader && now > *began) __sync_fetch_and_add(&leader_ns, now - *began);
  bpf_map_delete_elem(&stopped_threads, &tid);
  if (__sync_fetch_and_add(&nstopped, -1) == 1) {
    __u64 since = since_ns;
    if (now > since) __sync_fetch_and_add(&stopped_ns, now - since);
  }
  return 0;
}
