// SPDX-License-Identifier: GPL-2.0
/* synth_ring.bpf.c: the in-kernel synthetic producer of bench/synth_ring.c
 * (bench only; not part of goscope). It writes trace records into the event
 * ring buffer of a running `goscope trace` session, so that goscope's reading
 * path (ring -> decode -> match -> format -> stdout) can be measured at rates
 * no uprobe trap reaches on a small machine (bench/README.md,
 * "trace_throughput.sh SYNTH=1").
 *
 * A BPF_PROG_TYPE_SYSCALL program, run by BPF_PROG_TEST_RUN from user space
 * (docs/kernel.md, "A synthetic producer: ringbuf records from a syscall
 * program"). "events" and "stats" are not created: user space makes them the
 * session's own maps (bpf_map__reuse_fd) before the load. Each run writes
 * `pairs` calls: an entry record and a return record, copies of a real pair
 * of the session that user space put into this thread's slot, each with a
 * fresh timestamp, exactly as emit_event (bpf/goscope.bpf.c) writes them:
 * one bpf_ringbuf_output, the wake-up flag from wakeup_bytes, a refused
 * record counted in the session's GS_STAT_LOST (goscope's "events lost"),
 * a written one in GS_STAT_EVENTS.
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

#include "goscope_shared.h"

char LICENSE[] SEC("license") = "GPL";

/* The session's ring (its size is adopted from the reused map). */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4096);
} events SEC(".maps");

/* The session's engine-wide counters (struct gs_stat indexes). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, GS_STAT_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} stats SEC(".maps");

#define SYNTH_MAX_THREADS 64

/* One producer thread's records: [0] the entry, [1] the return. */
struct synth_slot {
  __u32 len[2];
  __u8 rec[2][GS_EVENT_MAX];
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, SYNTH_MAX_THREADS);
  __type(key, __u32);
  __type(value, struct synth_slot);
} slots SEC(".maps");

/* The run's context (BPF_PROG_TEST_RUN's ctx_in, copied back after the
 * run): what to write in, what happened out. Mirrored in synth_ring.c. */
struct synth_ctx {
  __u32 slot;          /* in: this thread's slot */
  __u32 pairs;         /* in: calls to write (two records each) */
  __u64 wakeup_bytes;  /* in: the session's (0: libbpf's adaptive wake-ups) */
  __u32 crossing;      /* in: 0 emit_event's wake-up rule; 1 wake only when a record crosses wakeup_bytes */
  __u32 _pad;
  __u64 written[2];    /* out: records the ring took, entry and return */
  __u64 refused[2];    /* out: records the ring refused (full) */
};

struct loop_state {
  struct synth_slot *s;
  struct synth_ctx *c;
};

static __always_inline void stat_inc(__u32 idx) {
  __u64 *v = bpf_map_lookup_elem(&stats, &idx);
  if (v) __sync_fetch_and_add(v, 1);
}

static __always_inline void write_one(struct loop_state *st, int kind) {
  struct synth_slot *s = st->s;
  __u32 len = s->len[kind];
  if (len < sizeof(struct gs_event) || len > GS_EVENT_MAX) return;
  struct gs_event *e = (struct gs_event *)s->rec[kind];
  e->ts_ns = bpf_ktime_get_ns();
  /* emit_event's wake-up rule, byte for byte: a forced wake-up once
   * wakeup_bytes wait. Or (crossing) only for the record that makes them
   * wait: the experiment of docs/kernel.md, "A synthetic producer". */
  __u64 flags = 0;
  __u64 wakeup = st->c->wakeup_bytes;
  if (wakeup) {
    __u64 waiting = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
    flags = waiting + len >= wakeup ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
    if (st->c->crossing && waiting >= wakeup) flags = BPF_RB_NO_WAKEUP;
  }
  if (bpf_ringbuf_output(&events, s->rec[kind], len, flags)) {
    stat_inc(GS_STAT_LOST);
    st->c->refused[kind]++;
  } else {
    stat_inc(GS_STAT_EVENTS);
    st->c->written[kind]++;
  }
}

static long one_call(__u64 i, void *data) {
  struct loop_state *st = data;
  write_one(st, 0);
  write_one(st, 1);
  return 0;
}

SEC("syscall")
int synth_calls(struct synth_ctx *c) {
  __u32 slot = c->slot;
  struct synth_slot *s = bpf_map_lookup_elem(&slots, &slot);
  if (!s) return 1;
  struct synth_ctx out = {};
  out.wakeup_bytes = c->wakeup_bytes;
  out.crossing = c->crossing;
  struct loop_state st = {s, &out};
  bpf_loop(c->pairs, one_call, &st, 0);
  c->written[0] = out.written[0];
  c->written[1] = out.written[1];
  c->refused[0] = out.refused[0];
  c->refused[1] = out.refused[1];
  return 0;
}
