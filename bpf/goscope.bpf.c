// SPDX-License-Identifier: GPL-2.0
/* goscope.bpf.c: the generic uprobe program behind `goscope count`, `latency`
 * and `trace`. Precompiled, configured at run time:
 *
 *   - every attached address carries a cookie (probe id << 8 | site kind);
 *   - "probe_cfg" says per probe what to do (count, latency, events, stacks,
 *     read a global) and which capture spec ("capture_specs") describes the
 *     memory an event copies;
 *   - aggregates stay in the kernel (per-CPU counts, latency histograms, stack
 *     counts); only requested events cross the ring buffer.
 *
 * The same body is compiled into two programs: gs_uprobe_multi (loaded with
 * expected_attach_type BPF_TRACE_UPROBE_MULTI, attached through uprobe_multi
 * links) and gs_uprobe_perf (attached to perf-event uprobes, the fallback on
 * kernels without uprobe_multi). A program loaded for one cannot attach to the
 * other, and bpf_get_attach_cookie() has a different implementation in each.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "goscope_shared.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before load. */
const volatile __u32 goid_offset = 152;      /* g.goid (Go 1.19; from DWARF) */
const volatile __u32 stack_hi_offset = 8;    /* g.stack.hi */
const volatile __u64 wakeup_bytes = 0;       /* 0: adaptive wakeups (libbpf default) */

/* Who may be seen (src/backend/bpf/privileges.cpp decides, docs/security.md
 * says why). 0: every task (goscope is fully privileged). 1: only tasks
 * goscope's user may ptrace, by the kernel's own rule for a caller without
 * CAP_SYS_PTRACE (ptrace_may_access, PTRACE_MODE_ATTACH_REALCREDS): the
 * task's real, effective and saved uid are access_uid, its three gids
 * access_gid, its permitted capabilities a subset of access_caps (goscope's
 * own), and its memory is dumpable (not a setuid program, nor one that
 * changed its ids). Anything else is dropped before it is counted; the drops
 * are counted (GS_STAT_FOREIGN). Constant after load: off costs nothing. */
const volatile __u32 access_filter = 0;
const volatile __u32 access_uid = 0;
const volatile __u32 access_gid = 0;
const volatile __u64 access_caps = 0;

#define GS_MMF_DUMPABLE_MASK 3ULL /* mm->flags bits 0-1: get_dumpable() */
#define GS_SUID_DUMP_USER 1ULL

/* Written by user space (mmapped .bss) while attached: which generation of
 * links counts (GS_COOKIE_GEN). */
volatile __u32 active_gen = 0;
/* Written by user space while attached: which of the two stack-count maps
 * the probes add to (0: "stack_counts", 1: "stack_counts_b"). A drain
 * flips it, waits for every program in flight (rcu_barrier below), then
 * empties the other map, which nothing touches any more (docs/kernel.md,
 * "Stacks"). */
volatile __u32 counts_side = 0;

#define BPF_F_USER_STACK_ (1ULL << 8)

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 65536);
  __type(key, __u32);
  __type(value, struct gs_probe_cfg);
} probe_cfg SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, struct gs_capture_spec);
} capture_specs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, struct gs_filter);
} filters SEC(".maps");

/* Per probe, the calls its filter dropped (as "counts"): what they cost
 * (the trap) is still the target's, and the cost meter prices it. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 65536 / GS_COUNTS_PER_BLOCK);
  __type(key, __u32);
  __type(value, struct gs_count_block);
} filtered_counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 65536 / GS_COUNTS_PER_BLOCK);
  __type(key, __u32);
  __type(value, struct gs_count_block);
} counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, struct gs_lat_stats);
} lat_stats SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, struct gs_start_key);
  __type(value, __u64);
} starts SEC(".maps");

/* GS_SITE_MORESTACK_MARK's marks: each lives from a jbe going to morestack
 * to its goroutine's next pass of the entry, a few microseconds (longer
 * when the jbe was taken to preempt the goroutine: until it runs again). */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, struct gs_mark_key);
  __type(value, __u8);
} morestack_marks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 65536);
  __type(key, __u32);
  __type(value, struct gs_global_value);
} globals SEC(".maps");

/* Stacks by the hash of their frames, and hits by (probe, stack, caller).
 * Allocated as they fill (BPF_F_NO_PREALLOC): their size in entries is a
 * bound, not memory taken up front. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 1);
  __type(key, __u64);
  __type(value, struct gs_stack_frames);
} stacks SEC(".maps");

struct gs_stack_counts_map {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 1);
  __type(key, struct gs_stack_key);
  __type(value, __u64);
};
struct gs_stack_counts_map stack_counts SEC(".maps");
struct gs_stack_counts_map stack_counts_b SEC(".maps");

/* No program uses these: user space updates the outer map's slot to wait
 * for the programs in flight. An update of a map-in-map slot returns only
 * after synchronize_rcu(), and non-sleepable uprobe programs run under
 * rcu_read_lock() (docs/kernel.md, "Stacks"). */
struct gs_barrier_inner {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} rcu_barrier_inner SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
  __uint(max_entries, 1);
  __type(key, __u32);
  __array(values, struct gs_barrier_inner);
} rcu_barrier SEC(".maps");

/* Where a stack is walked before it is hashed (1 KB: too big for the BPF
 * stack). `busy` as in gs_scratch. */
struct gs_stack_scratch {
  __u64 busy;
  struct gs_stack_frames st;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct gs_stack_scratch);
} stack_scratch SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4 << 20);
} events SEC(".maps");

struct gs_scratch {
  __u64 busy;
  __u8 buf[GS_SCRATCH_SIZE];
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct gs_scratch);
} scratch SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, GS_STAT_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 idx) {
  __u64 *v = bpf_map_lookup_elem(&stats, &idx);
  if (v) __sync_fetch_and_add(v, 1);
}

/* The ids of struct cred from uid to egid, in the kernel's order (unchanged
 * since credentials became a struct, 2.6.29). */
struct gs_cred_ids {
  __u32 uid, gid, suid, sgid, euid, egid;
};

/* May goscope's user ptrace the current task? (access_filter above). The
 * task's objective credentials (real_cred), as ptrace_may_access reads them.
 * Any failed read means no. */
static __always_inline int current_visible(void) {
  struct task_struct *t = (struct task_struct *)bpf_get_current_task();
  const struct cred *c = BPF_CORE_READ(t, real_cred);
  if (!c) return 0;
  struct gs_cred_ids ids;
  if (bpf_probe_read_kernel(&ids, sizeof ids, __builtin_preserve_access_index(&c->uid))) return 0;
  if (ids.uid != access_uid || ids.euid != access_uid || ids.suid != access_uid) return 0;
  if (ids.gid != access_gid || ids.egid != access_gid || ids.sgid != access_gid) return 0;
  __u64 caps = 0; /* kernel_cap_t: one u64 since 6.3, two u32 before: 8 bytes either way */
  if (bpf_probe_read_kernel(&caps, sizeof caps, __builtin_preserve_access_index(&c->cap_permitted))) return 0;
  if (caps & ~access_caps) return 0;
  struct mm_struct *mm = BPF_CORE_READ(t, mm);
  if (!mm) return 0;
  __u64 flags = 0; /* an unsigned long, or mm_flags_t whose first word it is (6.18) */
  if (bpf_probe_read_kernel(&flags, sizeof flags, __builtin_preserve_access_index(&mm->flags))) return 0;
  return (flags & GS_MMF_DUMPABLE_MASK) == GS_SUID_DUMP_USER;
}

/* An atomic max without a helper: a few compare-and-swap attempts. Losing a
 * race four times in a row leaves the value one update behind, no worse. */
static __always_inline void atomic_max(__u64 *p, __u64 v) {
  __u64 cur = *(volatile __u64 *)p;
  for (int i = 0; i < 4; i++) {
    if (v <= cur) return;
    __u64 old = __sync_val_compare_and_swap(p, cur, v);
    if (old == cur) return;
    cur = old;
  }
}

static __always_inline __u64 read_u64(__u64 addr, long *err) {
  __u64 v = 0;
  long e = bpf_probe_read_user(&v, sizeof(v), (const void *)addr);
  if (e) {
    *err = e;
    return 0;
  }
  return v;
}

struct goroutine {
  __u64 g;
  __u64 goid;
  __u64 frame;
};

/* `sp`: RSP as at the entry (at call sites ctx->sp - 8, GS_SITE_CALL). */
static __always_inline void read_goroutine(struct pt_regs *ctx, struct goroutine *gr, int want_goid, __u64 sp) {
  long err = 0;
  gr->g = ctx->r14;
  __u64 hi = read_u64(gr->g + stack_hi_offset, &err);
  /* Without a readable g (not Go code), fall back to the raw stack pointer:
   * still the same at the entry and the RET of one call. */
  gr->frame = (hi && hi >= sp) ? hi - sp : sp;
  if (want_goid) gr->goid = read_u64(gr->g + goid_offset, &err);
  if (err) stat_inc(GS_STAT_READ_ERRORS);
}

/* A global function (as capture_blocks and morestack_mark_pass): the
 * verifier checks it once, on its own, instead of once for every path of
 * handle() that reaches it; gs_hist_bucket's branches multiplied those
 * paths (docs/kernel.md, "What the verifier walks"). Returns 0. */
__noinline int latency_record(__u32 slot, __u64 d) {
  struct gs_lat_stats *ls = bpf_map_lookup_elem(&lat_stats, &slot);
  if (!ls) return 0;
  __sync_fetch_and_add(&ls->count, 1);
  __sync_fetch_and_add(&ls->sum_ns, d);
  __u32 b = gs_hist_bucket(d);
  if (b < GS_HIST_BUCKETS) __sync_fetch_and_add(&ls->hist[b], 1);
  atomic_max(&ls->max_ns, d);
  atomic_max(&ls->min_inv, ~d);
  return 0;
}

static __always_inline void latency_mismatch(__u32 slot) {
  struct gs_lat_stats *ls = bpf_map_lookup_elem(&lat_stats, &slot);
  if (ls) __sync_fetch_and_add(&ls->mismatches, 1);
  stat_inc(GS_STAT_MISMATCHES);
}

static __always_inline __u64 reg_of(const struct gs_event *e, __u32 r) {
  if (r < GS_NREGS) return e->regs[r];
  if (r == GS_REG_RSP) return e->sp;
  return 0; /* GS_REG_ABS */
}

/* The argument registers at the entry and RSP, by gs_reg number (0..9).
 * Copied out of the context once: an index into pt_regs would be a
 * modified context pointer, which the verifier refuses. */
struct gs_entry_regs {
  __u64 r[GS_REG_RSP + 1];
};

static __always_inline void entry_regs(struct pt_regs *ctx, struct gs_entry_regs *g, __u64 sp) {
  g->r[GS_REG_RAX] = ctx->ax;
  g->r[GS_REG_RBX] = ctx->bx;
  g->r[GS_REG_RCX] = ctx->cx;
  g->r[GS_REG_RDI] = ctx->di;
  g->r[GS_REG_RSI] = ctx->si;
  g->r[GS_REG_R8] = ctx->r8;
  g->r[GS_REG_R9] = ctx->r9;
  g->r[GS_REG_R10] = ctx->r10;
  g->r[GS_REG_R11] = ctx->r11;
  g->r[GS_REG_RSP] = sp;
}

static __always_inline __u64 entry_reg(const struct gs_entry_regs *g, __u32 r) {
  return r <= GS_REG_RSP ? g->r[r] : 0;
}

/* Does one comparison of the filter hold at this entry? A failed read of the
 * argument's memory means no (and is counted as a read error). */
static __always_inline int cond_holds(const struct gs_entry_regs *g, const struct gs_filter_cond *c) {
  long err = 0;
  if (c->kind == GS_FK_STRING) {
    __u64 ptr, len;
    if (c->base == GS_REG_RSP) {
      ptr = read_u64(g->r[GS_REG_RSP] + (__s64)c->off, &err);
      len = read_u64(g->r[GS_REG_RSP] + (__s64)c->off + 8, &err);
    } else {
      ptr = entry_reg(g, c->base);
      len = entry_reg(g, c->len_reg);
    }
    if (err) {
      stat_inc(GS_STAT_READ_ERRORS);
      return 0;
    }
    __u32 want = c->str_len;
    if (want > GS_FILTER_STR) return 0;
    int same;
    if (c->op == GS_OP_PREFIX) {
      if (len < want) return 0;
    } else if (len != want) {
      return c->op == GS_OP_NE;
    }
    /* The first `want` bytes decide (equal lengths, or a prefix). Unsigned
     * as the constant's (__u8): a plain char is signed here, and a byte of
     * 0x80 or more (UTF-8 beyond ASCII) never equalled its own constant. */
    __u8 buf[GS_FILTER_STR];
    if (want && bpf_probe_read_user(buf, want, (const void *)ptr)) {
      stat_inc(GS_STAT_READ_ERRORS);
      return 0;
    }
    same = 1;
    for (int j = 0; j < GS_FILTER_STR; j++) {
      if (j >= want) break;
      if (buf[j] != c->str[j]) {
        same = 0;
        break;
      }
    }
    return c->op == GS_OP_NE ? !same : same;
  }

  __u64 v = c->base == GS_REG_RSP ? read_u64(g->r[GS_REG_RSP] + (__s64)c->off, &err) : entry_reg(g, c->base);
  if (err) {
    stat_inc(GS_STAT_READ_ERRORS);
    return 0;
  }
  /* Registers hold garbage above a narrow argument: only `size` bytes count. */
  if (c->size < 8) {
    __u32 shift = 64 - 8 * (__u32)c->size;
    v = c->kind == GS_FK_SIGNED ? (__u64)(((__s64)(v << shift)) >> shift) : (v << shift) >> shift;
  }
  __u64 k = c->value;
  int lt = c->kind == GS_FK_SIGNED ? (__s64)v < (__s64)k : v < k;
  switch (c->op) {
    case GS_OP_EQ: return v == k;
    case GS_OP_NE: return v != k;
    case GS_OP_LT: return lt;
    case GS_OP_LE: return lt || v == k;
    case GS_OP_GT: return !lt && v != k;
    case GS_OP_GE: return !lt;
  }
  return 0;
}

/* Do the arguments at this entry pass the probe's filter (every condition)?
 * A filter that cannot be found passes nothing. */
static __always_inline int filter_passes(struct pt_regs *ctx, __u32 idx, __u64 sp) {
  struct gs_filter *f = bpf_map_lookup_elem(&filters, &idx);
  if (!f) return 0;
  struct gs_entry_regs g;
  entry_regs(ctx, &g, sp);
  __u32 n = f->nconds;
  for (int i = 0; i < GS_MAX_FILTER_CONDS; i++) {
    if (i >= n) break;
    if (!cond_holds(&g, &f->conds[i])) return 0;
  }
  return 1;
}

/* Copies the capture spec's memory reads into the event being built in
 * this CPU's scratch (emit_event's, which holds it busy); returns the new
 * end position. A global function, verified once on its own: inlined, its
 * loop was walked again with every state of handle() that reached it
 * (docs/kernel.md, "What the verifier walks"). Its arguments are anything
 * to the verifier, hence the scratch looked up here and `pos` masked
 * before each use. */
__noinline __u32 capture_blocks(__u32 spec_idx, __u32 pos) {
  __u32 zero = 0;
  struct gs_scratch *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return pos;
  struct gs_event *e = (struct gs_event *)s->buf;
  struct gs_capture_spec *spec = bpf_map_lookup_elem(&capture_specs, &spec_idx);
  if (!spec) return pos;
  __u32 nsteps = spec->nsteps;
  __u32 nblocks = 0;
  for (int i = 0; i < GS_MAX_STEPS; i++) {
    if (i >= nsteps) break;
    struct gs_read_step *st = &spec->steps[i];
    long err = 0;
    __u64 addr = reg_of(e, st->base) + (__s64)st->off;
    __u64 n = st->len;
    if (st->flags & GS_READ_DEREF) {
      __u64 ptr = read_u64(addr, &err);
      if (st->len_src == GS_LEN_MEM) n = read_u64(addr + 8, &err) * st->len;
      addr = ptr + (__s64)st->deref_off;
    } else if (st->len_src == GS_LEN_MEM) {
      n = read_u64(addr + 8, &err) * st->len;
      addr = read_u64(addr, &err);
    }
    if (st->len_src == GS_LEN_REG) n = reg_of(e, st->len_reg) * st->len;
    __u64 full = n;
    if ((__s64)n < 0) n = 0; /* a negative Go length: corrupt, read nothing */
    if (n > st->max_len) n = st->max_len;
    if (n > GS_MAX_READ) n = GS_MAX_READ;

    pos &= GS_EVENT_MAX - 1;
    struct gs_block *b = (struct gs_block *)&s->buf[pos];
    b->full_len = full > 0xffffffffULL ? 0xffffffffU : (__u32)full;
    b->err = 0;
    b->len = 0;
    if (!err && n) {
      __u32 len = n;
      len &= (GS_MAX_READ * 2 - 1);
      err = bpf_probe_read_user(&s->buf[pos + sizeof(struct gs_block)], len, (const void *)addr);
      if (!err) b->len = len;
    }
    if (err) {
      b->err = (__s16)err;
      stat_inc(GS_STAT_READ_ERRORS);
    }
    pos += sizeof(struct gs_block) + ((b->len + 7) & ~7u);
    nblocks++;
  }
  e->nblocks = nblocks;
  return pos;
}

static __always_inline void emit_event(struct pt_regs *ctx, __u32 probe_id, __u32 site, __u32 actions, __u32 spec_idx,
                                       __u64 ip, __u64 now, const struct goroutine *gr, __s64 duration,
                                       __u64 ret_addr, __u64 sp) {
  __u32 zero = 0;
  struct gs_scratch *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return;
  if (s->busy) {
    /* Another run of this program on this CPU preempted one that is building
     * an event: drop this one, counted. */
    stat_inc(GS_STAT_BUSY);
    return;
  }
  s->busy = 1;

  struct gs_event *e = (struct gs_event *)s->buf;
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  e->ts_ns = now;
  e->ip = ip;
  e->g = gr->g;
  e->goid = gr->goid;
  e->frame = gr->frame;
  e->duration_ns = duration;
  e->regs[GS_REG_RAX] = ctx->ax;
  e->regs[GS_REG_RBX] = ctx->bx;
  e->regs[GS_REG_RCX] = ctx->cx;
  e->regs[GS_REG_RDI] = ctx->di;
  e->regs[GS_REG_RSI] = ctx->si;
  e->regs[GS_REG_R8] = ctx->r8;
  e->regs[GS_REG_R9] = ctx->r9;
  e->regs[GS_REG_R10] = ctx->r10;
  e->regs[GS_REG_R11] = ctx->r11;
  e->sp = sp;
  e->ret_addr = ret_addr;
  e->pid = pid_tgid >> 32;
  e->tid = (__u32)pid_tgid;
  e->probe_id = probe_id;
  e->site = site;
  e->nblocks = 0;
  e->stack_bytes = 0;
  e->_pad = 0;

  __u32 pos = sizeof(struct gs_event);
  if (spec_idx) pos = capture_blocks(spec_idx, pos);

  if (actions & GS_ACT_USER_STACK) {
    pos &= GS_EVENT_MAX - 1;
    long r = bpf_get_stack(ctx, &s->buf[pos], GS_MAX_STACK_DEPTH * sizeof(__u64), BPF_F_USER_STACK_);
    if (r > 0) {
      e->stack_bytes = r;
      pos += r;
    }
  }

  if (pos > GS_SCRATCH_SIZE) pos = GS_SCRATCH_SIZE;
  e->size = pos;

  __u64 flags = 0;
  if (wakeup_bytes) {
    __u64 waiting = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
    flags = waiting + pos >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
  }
  if (bpf_ringbuf_output(&events, s->buf, pos, flags))
    stat_inc(GS_STAT_LOST);
  else
    stat_inc(GS_STAT_EVENTS);
  s->busy = 0;
}

#define GS_EEXIST 17

/* One more hit of `sk` in `counts` (one of the two stack-count maps). */
static __always_inline void add_stack_count(void *counts, struct gs_stack_key *sk) {
  __u64 *c = bpf_map_lookup_elem(counts, sk);
  if (c) {
    __sync_fetch_and_add(c, 1);
    return;
  }
  __u64 one = 1;
  if (bpf_map_update_elem(counts, sk, &one, BPF_NOEXIST) == 0) {
    stat_inc(GS_STAT_STACK_KEYS);
    return;
  }
  c = bpf_map_lookup_elem(counts, sk); /* another CPU inserted it meanwhile */
  if (c)
    __sync_fetch_and_add(c, 1);
  else
    stat_inc(GS_STAT_STACKS_UNCOUNTED);
}

/* One hit of a stack-counting probe: walks the user stack, keys it by a
 * hash of its frames (the frames stored under the hash the first time),
 * and adds one to (probe, stack, caller). A hit whose stack cannot be
 * walked or stored (an empty walk, the scratch in use, "stacks" full) is
 * counted under (probe, not recorded); one with no room even for that is
 * counted in GS_STAT_STACKS_UNCOUNTED. So every hit is somewhere. */
static __always_inline void count_stack(struct pt_regs *ctx, __u32 probe_id, __u64 ret_addr) {
  struct gs_stack_key sk = {};
  sk.probe_id = probe_id;
  __u32 zero = 0;
  struct gs_stack_scratch *s = bpf_map_lookup_elem(&stack_scratch, &zero);
  if (s && !s->busy) {
    s->busy = 1;
    long n = bpf_get_stack(ctx, s->st.frames, sizeof(s->st.frames), BPF_F_USER_STACK_);
    if (n > 0) {
      /* A 64-bit mix of the frames (a multiply and an xor-shift per
       * frame): two different stacks share a key with a chance of about
       * N^2 / 2^65 for N stacks. */
      __u64 h = 0x9e3779b97f4a7c15ULL ^ (__u64)n;
      for (int i = 0; i < GS_MAX_STACK_DEPTH; i++) {
        if (i * 8 >= n) break;
        h ^= s->st.frames[i];
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
      }
      long err = 0;
      if (!bpf_map_lookup_elem(&stacks, &h)) {
        err = bpf_map_update_elem(&stacks, &h, &s->st, BPF_NOEXIST);
        if (err == 0) stat_inc(GS_STAT_STACKS_STORED);
      }
      if (err == 0 || err == -GS_EEXIST) {
        sk.recorded = 1;
        sk.stack_hash = h;
        sk.ret_addr = ret_addr;
      }
    }
    s->busy = 0;
  }
  if (counts_side)
    add_stack_count(&stack_counts_b, &sk);
  else
    add_stack_count(&stack_counts, &sk);
}

/* --entry's two sites (GS_SITE_MORESTACK_MARK, GS_SITE_ENTRY_MARKED): does
 * this pass end here? 1 for every pass of a mark site, and for an entry's
 * pass that takes its goroutine's mark (the same call, back from
 * morestack); 0 for any other pass, which goes on as an entry.
 * A global function called on every pass, with the test of `site` inside:
 * a test of `site` in handle() (even an arithmetic one) left the verifier
 * a path with `site` known to be GS_SITE_ENTRY_MARKED through the rest of
 * the program, walked apart from the others (docs/kernel.md, "What the
 * verifier walks"). */
__noinline int morestack_mark_pass(__u32 site, __u32 probe_id, __u64 g, __u64 flags) {
  if (site != GS_SITE_MORESTACK_MARK && site != GS_SITE_ENTRY_MARKED) return 0;
  struct gs_mark_key mk = {};
  mk.tgid = bpf_get_current_pid_tgid() >> 32;
  mk.probe_id = probe_id;
  mk.g = g;
  if (site == GS_SITE_MORESTACK_MARK) {
    /* The plain entry (GS_SITE_ENTRY_MARKED) already saw this call: its
     * next pass, back from morestack, is not another one. */
    if (flags & (GS_EFLAGS_CF | GS_EFLAGS_ZF)) {
      __u8 one = 1;
      bpf_map_update_elem(&morestack_marks, &mk, &one, BPF_ANY);
    }
    return 1;
  }
  if (bpf_map_delete_elem(&morestack_marks, &mk) == 0) {
    stat_inc(GS_STAT_MORESTACK);
    return 1;
  }
  return 0;
}

static __always_inline int handle(struct pt_regs *ctx, const int multi) {
  __u64 cookie = bpf_get_attach_cookie(ctx);
  __u32 probe_id = GS_COOKIE_PROBE(cookie);
  __u32 site = GS_COOKIE_SITE(cookie);

  /* A link being replaced (or its replacement, not yet live): not counted. */
  if (GS_COOKIE_GEN(cookie) != active_gen) return 0;

  if (site == GS_SITE_ENTRY_STACKCHECK && (ctx->flags & (GS_EFLAGS_CF | GS_EFLAGS_ZF))) {
    /* This pass goes to morestack and comes back through the entry. */
    stat_inc(GS_STAT_MORESTACK);
    return 0;
  }
  if (morestack_mark_pass(site, probe_id, ctx->r14, ctx->flags)) return 0;
  int is_entry = site != GS_SITE_RETURN && site != GS_SITE_CALL_RETURN;
  if (access_filter && !current_visible()) {
    /* Another user's process (or one more privileged): nothing of it is
     * counted or sent; its calls (entries) are counted as dropped. */
    if (is_entry) stat_inc(GS_STAT_FOREIGN);
    return 0;
  }
  struct gs_probe_cfg *cfg = bpf_map_lookup_elem(&probe_cfg, &probe_id);
  if (!cfg || !cfg->actions) {
    stat_inc(GS_STAT_NO_CONFIG);
    return 0;
  }
  __u32 actions = cfg->actions;
  /* At a call site and the instruction after it, RSP is 8 above the entry's
   * (no return address on the stack): everything below works with the
   * entry's RSP (docs/go-runtime.md, "At a call site"). */
  /* Arithmetic, not branches: a branch here doubled the paths the verifier
   * walks through the rest of the program (docs/kernel.md, "What the
   * verifier walks"). GS_SITE_CALL_RETURN = GS_SITE_CALL + 1. */
  _Static_assert(GS_SITE_CALL_RETURN == GS_SITE_CALL + 1, "at_call below tests both kinds with one compare");
  const __u64 at_call = (__u64)(site - GS_SITE_CALL) <= 1;
  __u64 sp = ctx->sp - (at_call << 3);

  /* --filter: tested right after the arguments are there (the entry), before
   * anything is counted or sent. The trap is paid either way; the event,
   * the ring buffer and the decoding are what it saves (docs/overhead.md,
   * "Filters"). */
  const int filtered = actions & GS_ACT_FILTER;
  int passes = 1;
  if (is_entry && filtered) passes = filter_passes(ctx, cfg->filter_idx, sp);

  if (is_entry && (actions & GS_ACT_COUNT) && (passes || !(actions & GS_ACT_COUNT_MATCHING))) {
    __u32 blk = probe_id / GS_COUNTS_PER_BLOCK;
    struct gs_count_block *cb = bpf_map_lookup_elem(&counts, &blk);
    /* Atomic although per-CPU: uprobe programs run with migration disabled
     * but preemptible, so a preempted run on this CPU may be mid-add. */
    if (cb) __sync_fetch_and_add(&cb->c[probe_id % GS_COUNTS_PER_BLOCK], 1);
  }
  if (!passes) {
    stat_inc(GS_STAT_FILTERED_OUT);
    __u32 fblk = probe_id / GS_COUNTS_PER_BLOCK;
    struct gs_count_block *fb = bpf_map_lookup_elem(&filtered_counts, &fblk);
    if (fb) __sync_fetch_and_add(&fb->c[probe_id % GS_COUNTS_PER_BLOCK], 1);
    return 0;
  }
  /* A count is all most probes do: nothing more per hit (bench/prog_cost.sh). The counts are the hits of such probes. */
  if ((actions & ~(__u32)(GS_ACT_FILTER | GS_ACT_COUNT_MATCHING)) == GS_ACT_COUNT) return 0;
  stat_inc(GS_STAT_HITS);

  __u64 now = 0;
  int want_event = is_entry ? (actions & GS_ACT_EVENT_ENTRY) : (actions & GS_ACT_EVENT_RETURN);
  int want_latency = actions & GS_ACT_LATENCY;
  int want_global = is_entry && (actions & GS_ACT_READ_GLOBAL);
  int want_stack_count = is_entry && (actions & GS_ACT_STACK_COUNT);
  /* Sampling (the cost bound): about one call in N has its events. The
   * entry decides; a sampled call leaves its key in "starts" (latency does
   * that anyway) so that its RET knows. */
  __u32 every = cfg->sample_every;
  int sampling = every > 1 && want_event;
  if (sampling && is_entry && (bpf_get_prandom_u32() % every) != 0) {
    stat_inc(GS_STAT_SAMPLED_OUT);
    want_event = 0;
  }
  /* A filtered probe's RET follows its entry as a sampled one's does: only
   * the calls that passed left their key in "starts". */
  if (filtered && want_event) sampling = 1;
  if (!want_event && !want_latency && !want_global && !want_stack_count) return 0;
  now = bpf_ktime_get_ns();

  if (want_global) {
    struct gs_global_value *gv = bpf_map_lookup_elem(&globals, &probe_id);
    if (gv) {
      __u64 v = 0;
      __u32 len = cfg->global_len;
      if (len == 0 || len > 8) len = 8;
      long err = bpf_probe_read_user(&v, len, (const void *)cfg->global_addr);
      gv->value = v;
      gv->err = err;
      gv->ts_ns = now;
      if (err) stat_inc(GS_STAT_READ_ERRORS);
    }
  }

  struct goroutine gr = {};
  __s64 duration = -1;
  if (want_latency || want_event) read_goroutine(ctx, &gr, want_event, sp);
  /* Call sites: the return address, known without reading the stack (the
   * call is `call rel32`, 5 bytes; user space placed only those). */
  __u64 ip = 0, call_ret = 0;
  if (at_call || want_event) ip = multi ? bpf_get_func_ip(ctx) : PT_REGS_IP(ctx);
  if (at_call) call_ret = ip + 5 * (__u64)(site == GS_SITE_CALL);

  if (sampling && !want_latency && want_event) {
    struct gs_start_key k = {};
    k.tgid = bpf_get_current_pid_tgid() >> 32;
    k.probe_id = probe_id;
    k.g = gr.g;
    k.frame = gr.frame;
    k.ret = call_ret;
    if (is_entry) {
      bpf_map_update_elem(&starts, &k, &now, BPF_ANY);
    } else if (bpf_map_lookup_elem(&starts, &k)) {
      bpf_map_delete_elem(&starts, &k);
    } else {
      want_event = 0; /* its entry was sampled out */
    }
    if (!want_event && !want_stack_count) return 0;
  }

  if (want_latency) {
    struct gs_start_key k = {};
    k.tgid = bpf_get_current_pid_tgid() >> 32;
    k.probe_id = probe_id;
    k.g = gr.g;
    k.frame = gr.frame;
    k.ret = call_ret;
    if (is_entry) {
      bpf_map_update_elem(&starts, &k, &now, BPF_ANY);
    } else {
      __u64 *ts = bpf_map_lookup_elem(&starts, &k);
      if (ts) {
        __u64 t0 = *ts;
        bpf_map_delete_elem(&starts, &k);
        duration = now > t0 ? (__s64)(now - t0) : 0;
        latency_record(cfg->lat_slot, (__u64)duration);
      } else {
        latency_mismatch(cfg->lat_slot);
      }
    }
  }

  __u64 ret_addr = call_ret;
  if ((want_event || want_stack_count) && site != GS_SITE_INLINED && !at_call) {
    long err = 0;
    ret_addr = read_u64(ctx->sp, &err);
  }

  if (want_stack_count) count_stack(ctx, probe_id, ret_addr);

  if (want_event)
    emit_event(ctx, probe_id, site, actions, is_entry ? cfg->entry_spec : cfg->return_spec, ip, now, &gr, duration,
               ret_addr, sp);
  return 0;
}

/* Attached through uprobe_multi links: user space sets expected_attach_type
 * BPF_TRACE_UPROBE_MULTI (48) before load (libbpf 1.1 has no "uprobe.multi"
 * section). */
SEC("uprobe")
int gs_uprobe_multi(struct pt_regs *ctx) { return handle(ctx, 1); }

/* Attached to perf-event uprobes (one per address), the fallback. */
SEC("uprobe")
int gs_uprobe_perf(struct pt_regs *ctx) { return handle(ctx, 0); }
