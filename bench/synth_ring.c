// bench/trace_throughput.sh SYNTH=1's producer (bench only): writes trace
// records into the event ring buffer of a running `goscope trace` session
// from inside the kernel (bench/synth_ring.bpf.c, a BPF_PROG_TYPE_SYSCALL
// program run by BPF_PROG_TEST_RUN), so that what is measured is goscope's
// reading path alone (ring -> decode -> match -> format -> stdout), without
// the uprobe traps that limit a real producer to ~0.3 M events a second on
// a 2-vCPU machine (bench/README.md).
//
// 1. The session: every program named gs_uprobe_multi / gs_uprobe_perf
//    (bpf/goscope.bpf.c) is found by id; its maps give the ring ("events",
//    BPF_MAP_TYPE_RINGBUF), the counters ("stats") and the .rodata holding
//    wakeup_bytes (read through the map's BTF). With several sessions on the
//    machine, --reader PID keeps the one whose ring that process holds an fd
//    of (/proc/PID/fdinfo "map_id:"). docs/kernel.md, "A synthetic producer".
// 2. The records: a real call of the session (an entry and the return with
//    the same pid, g, frame and probe id), copied from the ring's data pages
//    mapped read-only: a record goscope has read stays in the ring until the
//    kernel writes over it, and until the ring wraps every record starts
//    where the one before it ended (position 0 first). So the target must
//    have made one traced call; --wait S waits for it.
// 3. THREADS threads, each with its own copy (g changed per thread, so that
//    goscope pairs each thread's entries with its own returns), run the
//    program in batches for SECS seconds (or PAIRS calls), at RATE records a
//    second in all (0: as fast as the ring takes them).
// 4. Report: records written and refused (the program counts a refused one
//    in the session's GS_STAT_LOST, which goscope's end line reports as
//    "events lost"), and over the window the records goscope consumed (the
//    ring's consumer position) and the reader's CPU (/proc/PID/stat), then
//    how long goscope took to drain what was left.
//
//   build: bench/synth_ring_build.sh OUTDIR [VMLINUX_H]  (OUTDIR/synth_ring, OUTDIR/synth_ring.bpf.o)
//   usage: synth_ring [--reader PID] [--secs S] [--threads N] [--rate R] [--pairs N]
//                     [--mark V] [--wait S] [--batch N] [--wakeup emit_event|crossing]
//                     [--cont-reader-after N] [--obj PATH]
//   --mark V: RAX of both records (the first integer argument and the first
//   result) set to V, so that the synthetic calls can be told from real ones.
//   --cont-reader-after N: SIGCONT the --reader once the first thread has
//   offered N calls (a test stops goscope first, so that the ring certainly
//   fills before goscope reads again).
// Output (stdout, one line): "synth_ring: key=value ...". Exit 0, 1 on error.
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "goscope_shared.h"

#define SYNTH_MAX_THREADS 64  // synth_ring.bpf.c's slots

// synth_ring.bpf.c's, the same layout.
struct synth_slot {
  uint32_t len[2];
  uint8_t rec[2][GS_EVENT_MAX];
};
struct synth_ctx {
  uint32_t slot, pairs;
  uint64_t wakeup_bytes;
  uint32_t crossing, pad;
  uint64_t written[2], refused[2];
};

#define RB_BUSY (1u << 31)     // BPF_RINGBUF_BUSY_BIT
#define RB_DISCARD (1u << 30)  // BPF_RINGBUF_DISCARD_BIT
#define RB_HDR 8u              // BPF_RINGBUF_HDR_SZ

static void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "synth_ring: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// ---- the session's maps ----------------------------------------------------

struct session {
  uint32_t events_id, stats_id, rodata_id;
  int events_fd, stats_fd;
  uint32_t ring_bytes;
  uint64_t wakeup_bytes;
  int wakeup_known;
};

static int map_info(uint32_t id, struct bpf_map_info* info) {
  int fd = bpf_map_get_fd_by_id(id);
  if (fd < 0) return -1;
  uint32_t len = sizeof *info;
  memset(info, 0, sizeof *info);
  if (bpf_obj_get_info_by_fd(fd, info, &len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Does process `pid` hold an fd of map `id`? (/proc/PID/fdinfo/N: "map_id:")
static int holds_map(pid_t pid, uint32_t id) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/fdinfo", (int)pid);
  DIR* d = opendir(dir);
  if (!d) die("cannot read %s: %s (is --reader a running goscope?)", dir, strerror(errno));
  int found = 0;
  struct dirent* de;
  while (!found && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    FILE* f = fopen(path, "r");
    if (!f) continue;
    while (fgets(line, sizeof line, f)) {
      unsigned v;
      if (sscanf(line, "map_id: %u", &v) == 1 && v == id) found = 1;
    }
    fclose(f);
  }
  closedir(d);
  return found;
}

// The value of the u64 variable `name` in a .rodata map, through its BTF.
static int read_rodata_u64(uint32_t map_id, const char* name, uint64_t* out) {
  struct bpf_map_info info;
  int fd = map_info(map_id, &info);
  if (fd < 0) return -1;
  int ok = -1;
  struct btf* btf = info.btf_id ? btf__load_from_kernel_by_id(info.btf_id) : NULL;
  const struct btf_type* sec = btf ? btf__type_by_id(btf, info.btf_value_type_id) : NULL;
  uint8_t* value = calloc(1, info.value_size);
  uint32_t key = 0;
  if (sec && btf_is_datasec(sec) && value && bpf_map_lookup_elem(fd, &key, value) == 0) {
    const struct btf_var_secinfo* v = btf_var_secinfos(sec);
    for (int i = 0; i < btf_vlen(sec); i++, v++) {
      const struct btf_type* var = btf__type_by_id(btf, v->type);
      if (var && strcmp(btf__name_by_offset(btf, var->name_off), name) == 0 && v->size == 8 &&
          v->offset + 8 <= info.value_size) {
        memcpy(out, value + v->offset, 8);
        ok = 0;
      }
    }
  }
  free(value);
  btf__free(btf);
  close(fd);
  return ok;
}

// Every goscope event program's (events, stats, .rodata) maps; the one
// session kept (see the file's comment), its ring and counters opened.
static void find_session(pid_t reader, struct session* s) {
  struct session cand[16];
  int n = 0;
  uint32_t id = 0;
  while (bpf_prog_get_next_id(id, &id) == 0) {
    int pfd = bpf_prog_get_fd_by_id(id);
    if (pfd < 0) continue;  // gone meanwhile
    uint32_t map_ids[64];
    struct bpf_prog_info info;
    memset(&info, 0, sizeof info);
    info.nr_map_ids = 64;
    info.map_ids = (uint64_t)(uintptr_t)map_ids;
    uint32_t len = sizeof info;
    int got = bpf_obj_get_info_by_fd(pfd, &info, &len);
    close(pfd);
    if (got != 0 || (strcmp(info.name, "gs_uprobe_multi") != 0 && strcmp(info.name, "gs_uprobe_perf") != 0)) continue;
    struct session c = {0};
    for (uint32_t i = 0; i < info.nr_map_ids && i < 64; i++) {
      struct bpf_map_info mi;
      int mfd = map_info(map_ids[i], &mi);
      if (mfd < 0) continue;
      close(mfd);
      if (mi.type == BPF_MAP_TYPE_RINGBUF && strcmp(mi.name, "events") == 0) {
        c.events_id = mi.id;
        c.ring_bytes = mi.max_entries;
      } else if (mi.type == BPF_MAP_TYPE_PERCPU_ARRAY && strcmp(mi.name, "stats") == 0 &&
                 mi.max_entries == GS_STAT_COUNT && mi.value_size == 8) {
        c.stats_id = mi.id;
      } else if (mi.type == BPF_MAP_TYPE_ARRAY && strstr(mi.name, ".rodata")) {
        c.rodata_id = mi.id;
      }
    }
    if (!c.events_id || !c.stats_id) continue;
    if (reader > 0 && !holds_map(reader, c.events_id)) continue;
    int dup = 0;
    for (int k = 0; k < n; k++) dup |= cand[k].events_id == c.events_id;
    if (!dup && n < 16) cand[n++] = c;
  }
  if (n == 0)
    die(reader > 0 ? "no goscope event ring held by pid %d (is it a `goscope trace` with its probes attached?)"
                   : "no goscope event ring on this machine (start `goscope trace` first)",
        (int)reader);
  if (n > 1) die("%d goscope event rings on this machine: say whose with --reader PID", n);
  *s = cand[0];
  s->events_fd = bpf_map_get_fd_by_id(s->events_id);
  s->stats_fd = bpf_map_get_fd_by_id(s->stats_id);
  if (s->events_fd < 0 || s->stats_fd < 0) die("the session's maps went away: %s", strerror(errno));
  s->wakeup_known = s->rodata_id && read_rodata_u64(s->rodata_id, "wakeup_bytes", &s->wakeup_bytes) == 0;
  if (!s->wakeup_known) s->wakeup_bytes = s->ring_bytes / 16;  // the engine's default (EngineOptions::wakeupBytes)
}

// ---- the ring's pages, read-only ---------------------------------------------

struct ring_view {
  const volatile uint64_t* consumer;
  const volatile uint64_t* producer;
  const uint8_t* data;
  uint64_t mask;
};

static void map_ring(const struct session* s, struct ring_view* v) {
  const long page = sysconf(_SC_PAGESIZE);
  // The consumer page, the producer page, the data twice (the kernel maps
  // it so that a record never wraps); read-only from offset 0 is allowed
  // (only a writable mapping is restricted to the consumer page;
  // docs/kernel.md, "A synthetic producer").
  size_t len = 2 * (size_t)page + 2 * (size_t)s->ring_bytes;
  uint8_t* base = mmap(NULL, len, PROT_READ, MAP_SHARED, s->events_fd, 0);
  if (base == MAP_FAILED) die("mmap of the ring (%u bytes): %s", s->ring_bytes, strerror(errno));
  v->consumer = (const volatile uint64_t*)base;
  v->producer = (const volatile uint64_t*)(base + page);
  v->data = base + 2 * page;
  v->mask = s->ring_bytes - 1;
}

static uint64_t load_acquire(const volatile uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

static int is_entry_site(unsigned site) {
  return site == GS_SITE_ENTRY || site == GS_SITE_ENTRY_STACKCHECK || site == GS_SITE_CALL;
}
static int is_return_site(unsigned site) { return site == GS_SITE_RETURN || site == GS_SITE_CALL_RETURN; }

// The newest entry + return of one call among the records goscope has read.
// 0 found, 1 none yet; dies once the ring has wrapped (record starts lost).
static int find_pair(const struct ring_view* v, uint32_t ring_bytes, struct synth_slot* pair) {
  const uint64_t cons = load_acquire(v->consumer), prod = load_acquire(v->producer);
  if (prod > ring_bytes)
    die("the ring wrapped before a traced call was seen (%llu bytes written): start synth_ring sooner after the attach",
        (unsigned long long)prod);
  enum { kEntries = 64 };
  uint64_t entry_pos[kEntries];
  int nentries = 0, found = 0;
  for (uint64_t pos = 0; pos + RB_HDR <= cons;) {
    uint32_t hdr;
    memcpy(&hdr, v->data + (pos & v->mask), 4);
    if (hdr & RB_BUSY) break;
    const uint32_t len = hdr & ~(RB_BUSY | RB_DISCARD);
    const uint64_t next = pos + ((RB_HDR + len + 7) & ~7ull);
    if (next > cons) break;
    struct gs_event e;
    if (!(hdr & RB_DISCARD) && len >= sizeof e && len <= GS_EVENT_MAX) {
      memcpy(&e, v->data + ((pos + RB_HDR) & v->mask), sizeof e);
      if (e.size == len && is_entry_site(e.site)) {
        entry_pos[nentries % kEntries] = pos;
        nentries++;
      } else if (e.size == len && is_return_site(e.site)) {
        for (int k = nentries < kEntries ? nentries : kEntries; k-- > 0;) {
          struct gs_event in;
          const uint64_t ep = entry_pos[k];
          uint32_t elen;
          memcpy(&elen, v->data + (ep & v->mask), 4);
          elen &= ~(RB_BUSY | RB_DISCARD);
          memcpy(&in, v->data + ((ep + RB_HDR) & v->mask), sizeof in);
          if (in.pid == e.pid && in.g == e.g && in.frame == e.frame && in.probe_id == e.probe_id) {
            pair->len[0] = elen;
            memcpy(pair->rec[0], v->data + ((ep + RB_HDR) & v->mask), elen);
            pair->len[1] = len;
            memcpy(pair->rec[1], v->data + ((pos + RB_HDR) & v->mask), len);
            found = 1;
            break;
          }
        }
      }
    }
    pos = next;
  }
  return found ? 0 : 1;
}

// ---- producing -----------------------------------------------------------------

struct worker {
  pthread_t th;
  int prog_fd;
  uint32_t slot;
  uint32_t batch;
  uint64_t max_pairs;  // 0: no limit
  double rate;         // records a second for this thread; 0: unthrottled
  double deadline;
  uint64_t wakeup_bytes;
  uint32_t crossing;
  pid_t cont_pid;          // SIGCONT this process once cont_after pairs were offered (0: no)
  uint64_t cont_after;
  uint64_t written[2], refused[2], runs;
  int err;
};

static void* produce(void* arg) {
  struct worker* w = arg;
  const double t0 = now_s();
  uint64_t pairs = 0;
  while (now_s() < w->deadline && (!w->max_pairs || pairs < w->max_pairs)) {
    if (w->rate > 0) {
      // Paced: the records offered so far are due at t0 + records / rate.
      const double due = t0 + 2.0 * (double)pairs / w->rate;
      const double ahead = due - now_s();
      if (ahead > 0) {
        struct timespec ts = {(time_t)ahead, (long)((ahead - (double)(time_t)ahead) * 1e9)};
        nanosleep(&ts, NULL);
        continue;
      }
    }
    struct synth_ctx c = {0};
    c.slot = w->slot;
    c.pairs = w->batch;
    if (w->max_pairs && w->max_pairs - pairs < c.pairs) c.pairs = (uint32_t)(w->max_pairs - pairs);
    c.wakeup_bytes = w->wakeup_bytes;
    c.crossing = w->crossing;
    LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &c, .ctx_size_in = sizeof c);
    if (bpf_prog_test_run_opts(w->prog_fd, &o) != 0 || o.retval != 0) {
      w->err = errno ? errno : EINVAL;
      break;
    }
    for (int k = 0; k < 2; k++) {
      w->written[k] += c.written[k];
      w->refused[k] += c.refused[k];
    }
    pairs += c.pairs;
    w->runs++;
    if (w->cont_pid > 0 && pairs >= w->cont_after) {
      kill(w->cont_pid, SIGCONT);
      w->cont_pid = 0;
    }
  }
  return NULL;
}

// utime + stime of a process in clock ticks; -1 when unreadable.
static long long cpu_ticks(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* p = strrchr(buf, ')');  // the name may hold spaces
  unsigned long long ut = 0, st = 0;
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2) return -1;
  return (long long)(ut + st);
}

static int libbpf_quiet(enum libbpf_print_level level, const char* fmt, va_list ap) {
  return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

int main(int argc, char** argv) {
  pid_t reader = 0;
  double secs = 5, rate = 0, wait_s = 10;
  int threads = 1;
  uint64_t max_pairs = 0;
  long long mark = -1;
  int have_mark = 0;
  uint32_t batch = 256;
  int crossing = 0;
  uint64_t cont_after = 0;
  char obj_path[4096];
  snprintf(obj_path, sizeof obj_path, "%s.bpf.o", argv[0]);
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) die("%s needs a value", a);
    if (!strcmp(a, "--reader")) reader = (pid_t)atoi(v);
    else if (!strcmp(a, "--secs")) secs = atof(v);
    else if (!strcmp(a, "--threads")) threads = atoi(v);
    else if (!strcmp(a, "--rate")) rate = atof(v);
    else if (!strcmp(a, "--pairs")) max_pairs = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--mark")) mark = atoll(v), have_mark = 1;
    else if (!strcmp(a, "--wait")) wait_s = atof(v);
    else if (!strcmp(a, "--cont-reader-after")) cont_after = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--batch")) batch = (uint32_t)atoi(v);
    else if (!strcmp(a, "--wakeup")) {
      if (strcmp(v, "emit_event") && strcmp(v, "crossing")) die("--wakeup is emit_event or crossing");
      crossing = !strcmp(v, "crossing");
    } else if (!strcmp(a, "--obj")) snprintf(obj_path, sizeof obj_path, "%s", v);
    else die("unknown option %s", a);
    i++;
  }
  if (threads < 1 || threads > SYNTH_MAX_THREADS) die("--threads must be 1..%d", SYNTH_MAX_THREADS);
  if (secs <= 0 || batch < 1 || batch > (1u << 20)) die("--secs must be > 0 and --batch 1..1048576");
  libbpf_set_print(libbpf_quiet);

  struct session s;
  find_session(reader, &s);
  struct ring_view rv;
  map_ring(&s, &rv);

  // A real call to copy.
  static struct synth_slot pair;
  const double wait_end = now_s() + wait_s;
  while (find_pair(&rv, s.ring_bytes, &pair) != 0) {
    if (now_s() > wait_end) die("no traced call (an entry and its return) in the ring after %.1f s", wait_s);
    usleep(20000);
  }

  struct bpf_object* obj = bpf_object__open_file(obj_path, NULL);
  if (!obj) die("opening %s: %s", obj_path, strerror(errno));
  struct bpf_map* events = bpf_object__find_map_by_name(obj, "events");
  struct bpf_map* stats = bpf_object__find_map_by_name(obj, "stats");
  struct bpf_map* slots = bpf_object__find_map_by_name(obj, "slots");
  struct bpf_program* prog = bpf_object__find_program_by_name(obj, "synth_calls");
  if (!events || !stats || !slots || !prog) die("%s is not synth_ring.bpf.o", obj_path);
  if (bpf_map__reuse_fd(events, s.events_fd) || bpf_map__reuse_fd(stats, s.stats_fd))
    die("reusing the session's maps: %s", strerror(errno));
  if (bpf_object__load(obj)) die("loading %s failed (libbpf's messages above)", obj_path);

  // Each thread its copy: g (the pairing key's goroutine) made its own.
  for (int t = 0; t < threads; t++) {
    static struct synth_slot copy;
    copy = pair;
    for (int k = 0; k < 2; k++) {
      struct gs_event e;
      memcpy(&e, copy.rec[k], sizeof e);
      e.g ^= (uint64_t)(t + 1) << 48;
      if (have_mark) e.regs[GS_REG_RAX] = (uint64_t)mark;
      memcpy(copy.rec[k], &e, sizeof e);
    }
    uint32_t key = (uint32_t)t;
    if (bpf_map_update_elem(bpf_map__fd(slots), &key, &copy, BPF_ANY)) die("writing slot %d: %s", t, strerror(errno));
  }

  const uint64_t rec_bytes[2] = {(RB_HDR + pair.len[0] + 7) & ~7ull, (RB_HDR + pair.len[1] + 7) & ~7ull};
  struct worker* ws = calloc((size_t)threads, sizeof *ws);
  const double t0 = now_s();
  const uint64_t cons0 = load_acquire(rv.consumer);
  const long long cpu0 = reader > 0 ? cpu_ticks(reader) : -1;
  for (int t = 0; t < threads; t++) {
    ws[t].prog_fd = bpf_program__fd(prog);
    ws[t].slot = (uint32_t)t;
    ws[t].batch = batch;
    ws[t].max_pairs = max_pairs ? (max_pairs + (uint64_t)threads - 1) / (uint64_t)threads : 0;
    ws[t].rate = rate / threads;
    ws[t].deadline = t0 + secs;
    ws[t].wakeup_bytes = s.wakeup_bytes;
    ws[t].crossing = (uint32_t)crossing;
    if (t == 0 && cont_after && reader > 0) {
      ws[t].cont_pid = reader;
      ws[t].cont_after = cont_after;
    }
    if (pthread_create(&ws[t].th, NULL, produce, &ws[t])) die("pthread_create failed");
  }
  uint64_t written[2] = {0, 0}, refused[2] = {0, 0}, runs = 0;
  int err = 0;
  for (int t = 0; t < threads; t++) {
    pthread_join(ws[t].th, NULL);
    for (int k = 0; k < 2; k++) {
      written[k] += ws[t].written[k];
      refused[k] += ws[t].refused[k];
    }
    runs += ws[t].runs;
    if (ws[t].err) err = ws[t].err;
  }
  const double t1 = now_s();
  const uint64_t cons1 = load_acquire(rv.consumer);
  const long long cpu1 = reader > 0 ? cpu_ticks(reader) : -1;
  if (err) die("BPF_PROG_TEST_RUN failed: %s", strerror(err));
  // What is left in the ring, drained by goscope (10 s at most).
  double drained = -1;
  while (now_s() - t1 < 10) {
    if (load_acquire(rv.consumer) == load_acquire(rv.producer)) {
      drained = now_s() - t1;
      break;
    }
    usleep(1000);
  }

  const double w = t1 - t0, hz = (double)sysconf(_SC_CLK_TCK);
  const uint64_t tot_written = written[0] + written[1], tot_refused = refused[0] + refused[1];
  // Records goscope read in the window: the bytes its consumer position
  // moved over, in records of this pair's average size (the target's own
  // records, a few a second, are in the error).
  const double consumed = (double)(cons1 - cons0) / ((double)(rec_bytes[0] + rec_bytes[1]) / 2);
  const double cpu = cpu0 >= 0 && cpu1 >= 0 ? (double)(cpu1 - cpu0) / hz : -1;
  printf("synth_ring: secs=%.3f threads=%d runs=%llu written=%llu refused=%llu entries_written=%llu returns_written=%llu "
         "entries_refused=%llu returns_refused=%llu offered_per_s=%.0f written_per_s=%.0f consumed=%.0f consumed_per_s=%.0f "
         "reader_cpu_s=%.3f ns_cpu_per_event=%.1f drained_s=%.3f ring_bytes=%u wakeup_bytes=%llu%s wakeup_rule=%s record_bytes=%u/%u "
         "probe_id=%u site=%u/%u\n",
         w, threads, (unsigned long long)runs, (unsigned long long)tot_written, (unsigned long long)tot_refused,
         (unsigned long long)written[0], (unsigned long long)written[1], (unsigned long long)refused[0],
         (unsigned long long)refused[1], (double)(tot_written + tot_refused) / w, (double)tot_written / w, consumed,
         consumed / w, cpu, cpu >= 0 && consumed > 0 ? cpu / consumed * 1e9 : -1.0, drained, s.ring_bytes,
         (unsigned long long)s.wakeup_bytes, s.wakeup_known ? "" : "(default)", crossing ? "crossing" : "emit_event", pair.len[0], pair.len[1],
         ((struct gs_event*)pair.rec[0])->probe_id, ((struct gs_event*)pair.rec[0])->site,
         ((struct gs_event*)pair.rec[1])->site);
  bpf_object__close(obj);
  return 0;
}
