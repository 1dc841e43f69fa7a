// SPDX-License-Identifier: GPL-2.0
/* stopwatch.bpf.c: how long a process was stopped by its tracer — the Delve
 * path's true cost, every breakpoint hit included.
 *
 * A thread enters a ptrace stop by scheduling out in state __TASK_TRACED
 * (sched_switch's prev_state) and leaves it when its tracer resumes it
 * (sched_wakeup). An episode lasts while at least one thread is in such a
 * stop: from the first thread that traps (a breakpoint hit; Delve then stops
 * every other thread) to the last one resumed. Two sums: the episodes
 * (some thread stopped), and the stops of the threads that hit a breakpoint
 * — a stop that follows a SIGTRAP generated for the thread (the int3, then
 * the single-step over it) —, each from the stop until that thread runs
 * again: what the code that called the probed function lost. (An earlier
 * version summed the stops of each episode's first thread; Go's SIGURG
 * preemption stops, ~450 a second while Delve stops the process, often
 * began the episode, and their thread's stop was counted instead.) A
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
__u64 hit_ns = 0;     /* the stops of threads at a breakpoint (or stepping over one), summed */

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, __u64);
} stopped_threads SEC(".maps");

/* Threads with a SIGTRAP just generated for them (a breakpoint's int3, or
 * the single-step over it): their next ptrace stop is a hit's. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, __u8);
} trapped SEC(".maps");

/* A hit's stop in progress: tid -> when it began. It ends when the thread
 * runs again (switched in), not at its wakeup: under load the wait for a
 * CPU after the resume is time the calling code loses to the stop too. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, __u64);
} trap_stops SEC(".maps");

#define GS_SIGTRAP 5

SEC("tp_btf/signal_generate")
int BPF_PROG(gs_trap, int sig, struct kernel_siginfo *info, struct task_struct *task, int group, int result) {
  if (sig != GS_SIGTRAP || task->tgid != target_tgid) return 0;
  __u32 tid = task->pid;
  __u8 one = 1;
  bpf_map_update_elem(&trapped, &tid, &one, BPF_ANY);
  return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(gs_stop_begin, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state) {
  if (next->tgid == target_tgid) {
    __u32 ntid = next->pid;
    __u64 *began = bpf_map_lookup_elem(&trap_stops, &ntid);
    if (began) {
      __u64 now = bpf_ktime_get_ns();
      if (now > *began) __sync_fetch_and_add(&hit_ns, now - *began);
      bpf_map_delete_elem(&trap_stops, &ntid);
    }
  }
  if (prev->tgid != target_tgid || !(prev_state & GS_TASK_TRACED)) return 0;
  __u32 tid = prev->pid;
  __u64 now = bpf_ktime_get_ns();
  if (bpf_map_lookup_elem(&trapped, &tid)) {
    bpf_map_delete_elem(&trapped, &tid);
    bpf_map_update_elem(&trap_stops, &tid, &now, BPF_NOEXIST);
  }
  if (bpf_map_update_elem(&stopped_threads, &tid, &now, BPF_NOEXIST) != 0) return 0;
  if (__sync_fetch_and_add(&nstopped, 1) == 0) {
    since_ns = now;
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
  bpf_map_delete_elem(&stopped_threads, &tid);
  if (__sync_fetch_and_add(&nstopped, -1) == 1) {
    __u64 since = since_ns;
    if (now > since) __sync_fetch_and_add(&stopped_ns, now - since);
  }
  return 0;
}
