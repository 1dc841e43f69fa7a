/* goscope_shared.h: the structs and constants seen by both the BPF programs
 * (bpf/goscope.bpf.c) and the user-space engine (src/backend/bpf/).
 *
 * Plain C, fixed-width __u8..__u64 types only, no pointers: the same bytes are
 * written by one side and read by the other. Every struct has explicit padding
 * so that clang -target bpf and the host compiler lay it out identically
 * (checked by static_asserts in src/backend/bpf/bpf_engine.cpp).
 */
#ifndef GOSCOPE_SHARED_H
#define GOSCOPE_SHARED_H

#if !defined(__bpf__)
#include <linux/types.h>
#endif

/* ---- cookies ------------------------------------------------------------
 * Every attached address carries a 64-bit cookie: (probe id << 8) | site kind.
 */
/* Bit 7 of the site byte is the link's generation: when probes are dropped
 * while a session runs, the links without them are created in the other
 * generation (their hits ignored), then "active_gen" flips in one write and
 * the old links close, so no call is counted twice or missed. */
#define GS_COOKIE(probe_id, site) ((((__u64)(probe_id)) << 8) | (__u64)(site))
#define GS_COOKIE_PROBE(cookie) ((__u32)((cookie) >> 8))
#define GS_COOKIE_SITE(cookie) ((__u32)((cookie)&0x7f))
#define GS_COOKIE_GEN(cookie) ((__u32)(((cookie) >> 7) & 1))
#define GS_SITE_GEN_BIT 0x80

enum gs_site_kind {
  /* Function entry, RSP as at the call (the return address at [RSP]). */
  GS_SITE_ENTRY = 0,
  /* The `jbe` of a stack-check prologue (`cmp 0x10(%r14),%rsp; jbe morestack`),
   * emulated by the kernel. When CF or ZF is set this pass goes to morestack
   * and will come back through the entry: the program does nothing, so a call
   * whose stack grows is seen once. RSP is still as at the call. */
  GS_SITE_ENTRY_STACKCHECK = 1,
  /* A RET instruction of the function (never a uretprobe: they crash Go). */
  GS_SITE_RETURN = 2,
  /* The first instruction of a body the compiler inlined into a caller
   * (docs/go-runtime.md, "Inlined calls"): an entry with no RET of its own,
   * in a caller with a frame: RBP is set, the kernel's frame-pointer walk is
   * complete and [RSP] is no return address (not read). */
  GS_SITE_INLINED = 3,
  /* The same in a caller without a frame (a leaf: SP not moved, RBP still
   * its caller's): [RSP] is the caller's return address, as at an entry. */
  GS_SITE_INLINED_FRAMELESS = 4,
  /* A `call rel32` (5 bytes) of a function probed at its call sites
   * (src/binary/call_sites.hpp): the arguments are in their registers and R14
   * holds g as at the entry, but the return address is not pushed yet, so
   * RSP is 8 above the entry's. The program works with RSP - 8 (the entry's
   * RSP: frame, stack-passed arguments, filters) and takes ip + 5 as the
   * return address (docs/go-runtime.md, "At a call site"). An entry site. */
  GS_SITE_CALL = 5,
  /* The instruction after such a call (its return address): the callee's RET
   * has just popped the return address, so RSP is 8 above the entry's again
   * (RSP - 8 is used) and the results are in their registers. A return
   * site; ip is the return address. */
  GS_SITE_CALL_RETURN = 6,
  /* The first instruction of a function that has a stack check, probed
   * there on request (--entry) with a GS_SITE_MORESTACK_MARK on its `jbe`:
   * a call that grows its stack passes the entry twice (morestack comes
   * back to it). An entry as GS_SITE_ENTRY, except that a pass which finds
   * the mark the jbe left for its goroutine is that same call again: it
   * takes the mark and does nothing. */
  GS_SITE_ENTRY_MARKED = 7,
  /* The `jbe` of such a function: a pass going to morestack (CF or ZF set,
   * as at GS_SITE_ENTRY_STACKCHECK) leaves a mark keyed (tgid, probe, g)
   * in "morestack_marks"; nothing else, ever. g is R14 at both sites (the
   * register ABI's g; the prologue's compare does not change it). */
  GS_SITE_MORESTACK_MARK = 8,
  GS_SITE_KIND_COUNT = 9,
};

/* A pass of a GS_SITE_MORESTACK_MARK going to morestack, waiting for its
 * goroutine to come back through the entry. */
struct gs_mark_key {
  __u32 tgid;
  __u32 probe_id;
  __u64 g;
};

/* x86 EFLAGS bits tested at GS_SITE_ENTRY_STACKCHECK. */
#define GS_EFLAGS_CF 0x001
#define GS_EFLAGS_ZF 0x040

/* ---- call counts -----------------------------------------------------------
 * Per-CPU array "counts": element i holds the counters of probes 64*i ..
 * 64*i+63. Blocks instead of one element per probe because the kernel
 * allocates every element of a per-CPU array apart: 65,536 of them took 124 ms
 * to create, 1,024 blocks take about 2 ms. */
#define GS_COUNTS_PER_BLOCK 64
struct gs_count_block {
  __u64 c[GS_COUNTS_PER_BLOCK];
};

/* ---- per-probe configuration (array map "probe_cfg", index = probe id) --- */
enum gs_action {
  GS_ACT_COUNT = 1 << 0,        /* count calls at entry sites (per-CPU) */
  GS_ACT_LATENCY = 1 << 1,      /* pair entry/return by goroutine; histogram */
  GS_ACT_EVENT_ENTRY = 1 << 2,  /* emit an event at entry sites */
  GS_ACT_EVENT_RETURN = 1 << 3, /* emit an event at return sites */
  GS_ACT_USER_STACK = 1 << 4,   /* events carry the user stack */
  GS_ACT_STACK_COUNT = 1 << 5,  /* count (stack id, return address) at entry sites */
  GS_ACT_READ_GLOBAL = 1 << 6,  /* read a fixed address at entry sites */
  /* --filter: at entry sites, the call goes on only when "filters"[filter_idx]
   * holds for its arguments; a call that fails does nothing more (no event,
   * no stack count, no global read; its RET sends nothing), counted in
   * GS_STAT_FILTERED_OUT. */
  GS_ACT_FILTER = 1 << 7,
  /* With GS_ACT_FILTER: GS_ACT_COUNT counts only the calls that pass (count
   * --filter). Without it the count is every call (trace: the hits the cost
   * meter prices). */
  GS_ACT_COUNT_MATCHING = 1 << 8,
};

struct gs_probe_cfg {
  __u32 actions;       /* GS_ACT_* */
  __u32 lat_slot;      /* index into "lat_stats" when GS_ACT_LATENCY */
  __u32 entry_spec;    /* index into "capture_specs" for entry events, 0 = none */
  __u32 return_spec;   /* index into "capture_specs" for return events, 0 = none */
  __u64 global_addr;   /* GS_ACT_READ_GLOBAL: runtime address */
  __u32 global_len;    /* 1..8 bytes */
  __u32 sample_every;  /* events: 0 or 1 = every call; N = about one call in N (the cost bound) */
  __u32 filter_idx;    /* GS_ACT_FILTER: index into "filters" (0 = none) */
  __u32 _pad;
};

/* Register numbers used by capture steps: the Go ABIInternal integer argument
 * and result registers in order, then RSP, then "absolute" (base 0). */
enum gs_reg {
  GS_REG_RAX = 0,
  GS_REG_RBX = 1,
  GS_REG_RCX = 2,
  GS_REG_RDI = 3,
  GS_REG_RSI = 4,
  GS_REG_R8 = 5,
  GS_REG_R9 = 6,
  GS_REG_R10 = 7,
  GS_REG_R11 = 8,
  GS_NREGS = 9,       /* events always carry these nine */
  GS_REG_RSP = 9,
  GS_REG_ABS = 10,    /* base address 0: `off` is an absolute address */
  GS_REG_COUNT = 11,
};

/* One memory read of a capture spec:
 *   addr = base + off
 *   if (flags & GS_READ_DEREF) addr = *(u64 *)addr + deref_off
 *       (with GS_LEN_MEM the 8 bytes after that pointer are its length: a Go
 *        string or slice header in memory)
 *   n = GS_LEN_CONST: len; GS_LEN_REG: regs[len_reg] * len; GS_LEN_MEM: mem_len * len
 *   read min(n, max_len, GS_MAX_READ) bytes at addr (never a _str read: Go
 *   strings have no NUL). */
enum gs_len_src {
  GS_LEN_CONST = 0,
  GS_LEN_REG = 1,
  GS_LEN_MEM = 2,
};
#define GS_READ_DEREF 0x1

struct gs_read_step {
  __u8 base;       /* gs_reg */
  __u8 flags;      /* GS_READ_* */
  __u8 len_src;    /* gs_len_src */
  __u8 len_reg;    /* gs_reg (0..8) for GS_LEN_REG */
  __s32 deref_off;
  __s64 off;       /* 64-bit: with GS_REG_ABS it is a (PIE) address */
  __u16 len;       /* constant length, or element size for REG/MEM lengths */
  __u16 max_len;   /* cap, at most GS_MAX_READ */
  __u32 _pad;
};

#define GS_MAX_STEPS 8  /* memory reads per capture spec */
#define GS_MAX_READ 256 /* bytes per read, hard ceiling */

struct gs_capture_spec {
  __u32 nsteps;
  __u32 _pad;
  struct gs_read_step steps[GS_MAX_STEPS];
};

/* ---- filters (array map "filters", index = gs_probe_cfg.filter_idx) -------
 * `--filter 'n > 40 && name =~ "api*"'`: up to GS_MAX_FILTER_CONDS
 * comparisons of arguments at the entry with constants, all of which must
 * hold (src/probe/filter_expr.hpp parses and binds them). */
#define GS_MAX_FILTER_CONDS 4
#define GS_FILTER_STR 32 /* bytes of a string constant */

enum gs_filter_kind {
  GS_FK_SIGNED = 0,   /* an integer, sign-extended from `size` bytes */
  GS_FK_UNSIGNED = 1, /* an integer, zero-extended from `size` bytes */
  GS_FK_STRING = 2,   /* a Go string: (pointer, length) */
};

enum gs_filter_op {
  GS_OP_EQ = 0,
  GS_OP_NE = 1,
  GS_OP_LT = 2,
  GS_OP_LE = 3,
  GS_OP_GT = 4,
  GS_OP_GE = 5,
  GS_OP_PREFIX = 6, /* strings: the first str_len bytes are `str` */
};

struct gs_filter_cond {
  __u8 kind;     /* gs_filter_kind */
  __u8 op;       /* gs_filter_op */
  __u8 base;     /* gs_reg: RAX..R11 holds the integer or the string's pointer;
                  * GS_REG_RSP: the value (string: its header) is at RSP+off */
  __u8 len_reg;  /* a string in registers: the register of its length */
  __u8 size;     /* integers: 1, 2, 4 or 8 */
  __u8 str_len;  /* strings: bytes of `str`, at most GS_FILTER_STR */
  __u16 _pad;
  __s32 off;
  __u32 _pad2;
  __u64 value;   /* integers: the constant (two's complement) */
  __u8 str[GS_FILTER_STR];
};

struct gs_filter {
  __u32 nconds;
  __u32 _pad;
  struct gs_filter_cond conds[GS_MAX_FILTER_CONDS];
};

/* ---- latency ------------------------------------------------------------
 * Log-linear histogram: values below GS_HIST_SUB nanoseconds get a bucket each;
 * above, every power of two [2^m, 2^(m+1)) is split into GS_HIST_SUB linear
 * sub-buckets (1/16 = 6.25% wide: a percentile taken at a bucket's middle is
 * within ~3% of the truth). Values of 2^(GS_HIST_MAX_LOG+1) ns (~37 min) and
 * more land in the last bucket. */
#define GS_HIST_SUB_BITS 4
#define GS_HIST_SUB (1u << GS_HIST_SUB_BITS)
#define GS_HIST_MAX_LOG 41
#define GS_HIST_BUCKETS (GS_HIST_SUB + (GS_HIST_MAX_LOG - GS_HIST_SUB_BITS + 1) * GS_HIST_SUB)

struct gs_lat_stats {
  __u64 count;
  __u64 sum_ns;
  __u64 min_inv;     /* ~min: 0 means no value yet (atomic max of ~v) */
  __u64 max_ns;
  __u64 mismatches;  /* returns that found no entry */
  __u64 _pad[3];
  __u64 hist[GS_HIST_BUCKETS];
};

/* Entry timestamps, keyed by goroutine and frame: the frame is g.stack.hi -
 * RSP, which is the same at the entry and at the RET of one call, differs for
 * every recursion level, and survives stack copying (copystack keeps the
 * distance to the stack top). Entries that never return (panics) are evicted
 * by the LRU. At call sites the key also holds the return address (ip + 5 at
 * the call, ip at the instruction after it; 0 at entries and RETs): a return
 * site pairs only with a start of its own call, never with a stale start left
 * at the same depth by another call site (a missed start is a mismatch). */
struct gs_start_key {
  __u32 tgid;
  __u32 probe_id;
  __u64 g;
  __u64 frame;
  __u64 ret;
};

/* ---- stacks ---------------------------------------------------------------- */
#define GS_MAX_STACK_DEPTH 127 /* perf_event_max_stack */

/* "stack_counts": hits per (probe, stack, direct caller). A stack is keyed
 * by a 64-bit hash of its frames (the "stacks" map holds the frames under
 * it), not by a bucket of the kernel's stack-trace map, whose -EEXIST on a
 * taken bucket lost 17-67% of hits on busy programs (docs/kernel.md,
 * "Stacks"). */
struct gs_stack_key {
  __u32 probe_id;
  __u32 recorded;    /* 1: stack_hash names a stack in "stacks"; 0: not recorded (counted, shown as lost) */
  __u64 stack_hash;  /* 0 when not recorded */
  __u64 ret_addr;    /* [RSP]: the direct caller, missing from the walk; 0 when not recorded */
};

/* The "stacks" map's value: bpf_get_stack(BPF_F_USER_STACK)'s frames,
 * innermost first, zero after the last. */
struct gs_stack_frames {
  __u64 frames[GS_MAX_STACK_DEPTH];
};

/* ---- global reads (array "globals", index = probe id) -------------------- */
struct gs_global_value {
  __u64 value;
  __u64 ts_ns;  /* 0 = never read */
  __s64 err;    /* last bpf_probe_read_user error, 0 = fine */
  __u64 _pad;
};

/* ---- engine-wide counters (per-CPU array "stats", index = gs_stat) ------ */
enum gs_stat {
  GS_STAT_EVENTS = 0,      /* events written to the ring */
  GS_STAT_LOST = 1,        /* events dropped: ring full */
  GS_STAT_BUSY = 2,        /* events dropped: scratch in use (preempted) */
  GS_STAT_MORESTACK = 3,   /* stack-check passes going to morestack (skipped) */
  GS_STAT_NO_CONFIG = 4,   /* hits whose probe id has no config */
  GS_STAT_READ_ERRORS = 5, /* failed user-memory reads */
  GS_STAT_MISMATCHES = 6,  /* returns without an entry, all probes */
  GS_STAT_HITS = 7,        /* program runs of probes that do more than count */
  GS_STAT_SAMPLED_OUT = 8, /* calls whose events sampling left out (sample_every) */
  GS_STAT_FOREIGN = 9,     /* calls of tasks goscope's user may not ptrace, dropped (access_filter) */
  GS_STAT_FILTERED_OUT = 10, /* calls whose arguments failed the probe's filter (GS_ACT_FILTER) */
  GS_STAT_STACKS_UNCOUNTED = 11, /* stack-counting hits with no room left in "stack_counts" (not even as lost) */
  GS_STAT_STACKS_STORED = 12,    /* entries added to "stacks": with those drained, its fill */
  GS_STAT_STACK_KEYS = 13,       /* entries added to "stack_counts": with those drained, its fill */
  GS_STAT_COUNT = 14,
};

/* ---- events ----------------------------------------------------------------
 * Layout in the ring buffer: struct gs_event, then nblocks times
 * (struct gs_block + data padded to 8 bytes), then stack_bytes of user stack
 * (u64 addresses; the walk starts at the probed ip and lacks the direct
 * caller: insert ret_addr after the first frame). */
struct gs_event {
  __u64 ts_ns;       /* bpf_ktime_get_ns */
  __u64 ip;          /* probed address in the process */
  __u64 g;           /* R14 */
  __u64 goid;        /* g.goid, 0 when unreadable */
  __u64 frame;       /* g.stack.hi - RSP: pairs the entry and return events of a call */
  __s64 duration_ns; /* return events of latency probes whose entry was seen, else -1 */
  __u64 regs[GS_NREGS];
  __u64 sp;          /* RSP as at the entry (at call sites: RSP - 8) */
  __u64 ret_addr;    /* [RSP] (at call sites: the address after the call) */
  __u32 pid;         /* tgid */
  __u32 tid;
  __u32 probe_id;
  __u8 site;         /* gs_site_kind */
  __u8 nblocks;
  __u16 stack_bytes;
  __u32 size;        /* total bytes of this record */
  __u32 _pad;
};

struct gs_block {
  __u32 full_len; /* the length asked for, before the cap (saturated) */
  __u16 len;      /* bytes that follow (0 on error) */
  __s16 err;      /* 0, or the negative errno of the failed read */
};

#define GS_EVENT_MAX 4096 /* header + blocks + stack always fit */
#define GS_SCRATCH_SIZE (2 * GS_EVENT_MAX)

/* ---- histogram bucket math (used by both sides) ---------------------------- */
static inline __u32 gs_log2_u64(__u64 v) {
  __u32 r = 0;
  if (v >> 32) { v >>= 32; r += 32; }
  if (v >> 16) { v >>= 16; r += 16; }
  if (v >> 8) { v >>= 8; r += 8; }
  if (v >> 4) { v >>= 4; r += 4; }
  if (v >> 2) { v >>= 2; r += 2; }
  if (v >> 1) { r += 1; }
  return r;
}

static inline __u32 gs_hist_bucket(__u64 v) {
  __u32 m;
  if (v < GS_HIST_SUB) return (__u32)v;
  m = gs_log2_u64(v);
  if (m > GS_HIST_MAX_LOG) return GS_HIST_BUCKETS - 1;
  return GS_HIST_SUB + (m - GS_HIST_SUB_BITS) * GS_HIST_SUB +
         (__u32)((v >> (m - GS_HIST_SUB_BITS)) & (GS_HIST_SUB - 1));
}

/* [low, high) of a bucket in nanoseconds. */
static inline __u64 gs_hist_bucket_low(__u32 b) {
  __u32 m, sub;
  if (b < GS_HIST_SUB) return b;
  m = (b - GS_HIST_SUB) / GS_HIST_SUB + GS_HIST_SUB_BITS;
  sub = (b - GS_HIST_SUB) % GS_HIST_SUB;
  return ((__u64)(GS_HIST_SUB + sub)) << (m - GS_HIST_SUB_BITS);
}

static inline __u64 gs_hist_bucket_high(__u32 b) {
  __u32 m, sub;
  if (b < GS_HIST_SUB) return (__u64)b + 1;
  m = (b - GS_HIST_SUB) / GS_HIST_SUB + GS_HIST_SUB_BITS;
  sub = (b - GS_HIST_SUB) % GS_HIST_SUB;
  return ((__u64)(GS_HIST_SUB + sub + 1)) << (m - GS_HIST_SUB_BITS);
}

#endif /* GOSCOPE_SHARED_H */
