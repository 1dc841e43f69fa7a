// Kernel experiment (docs/kernel.md, "Who drops a uprobe_multi link's last
// reference"): a child holds one uprobe_multi link on N function entries of a
// running target, then is SIGKILLed a random 0..MAXUS microseconds after it
// starts one of these actions:
//   create  BPF_LINK_CREATE itself
//   close   close(2) of the link's only fd
//   unlink  the link pinned in a bpffs and its fd closed: unlink(2) of the pin
//   ns      the link pinned in a bpffs mounted in the child's private mount
//           namespace, fd closed: the child just dies (the namespace goes)
//   exit    the child just dies holding the link's only fd (its exit closes it)
//   park    the link's only fd in flight in a unix socket message that also
//           carries the receiving socket itself (a cycle only the af_unix
//           garbage collector frees, from a kworker), fd closed: the child
//           just dies holding the socket (needs no capability, no bpffs)
//   exitnow the child calls _exit(0) holding the link's only fd: a task that
//           exits of its own accord while a SIGKILL comes
//   handoff the child leads a process group; it forks a helper into that
//           group that holds a copy of the fd and waits for a pipe's EOF,
//           closes its own fd, then the pipe; the whole group is SIGKILLed
//           (the fd-keeping link holder's detach until 2026-11-27)
// After each round: how many probed entries still hold int3 (0xcc) in the
// target, and whether a link of the target's pid is left. Count "leaking
// uprobe" lines in dmesg around the run to see what the kernel said.
//   build: gcc -O2 -o /tmp/link_release_kill bench/link_release_kill.c -lbpf
//   usage: link_release_kill MODE ROUNDS MAXUS TARGET_PID BINARY OFFSETS_FILE
// OFFSETS_FILE: one hex file offset per line (instruction boundaries!); the
// binary must be a non-PIE Go binary (vaddr = offset + 0x400000).
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct attr {
  uint32_t prog, target, type, flags;
  uint64_t path, offsets, ref, cookies;
  uint32_t cnt, mflags, pid, pad;
};

static int create(int prog, const char* path, uint64_t* offs, uint64_t* cookies, int n, int pid) {
  struct attr a = {0};
  a.prog = prog;
  a.type = 48;
  a.path = (uint64_t)path;
  a.offsets = (uint64_t)offs;
  a.cookies = (uint64_t)cookies;
  a.cnt = n;
  a.pid = pid;
  long fd = syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof a);
  return fd < 0 ? -errno : (int)fd;
}

static int links_of(int pid) {  // uprobe_multi links whose pid filter is `pid`
  struct {
    uint32_t type, id, prog, pad;
    uint64_t path, offsets, ref, cookies;
    uint32_t psize, count, flags, pid;
  } info;
  uint32_t id = 0;
  int n = 0;
  while (bpf_link_get_next_id(id, &id) == 0) {
    int fd = bpf_link_get_fd_by_id(id);
    if (fd < 0) continue;
    uint32_t len = sizeof info;
    memset(&info, 0, sizeof info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.type == 12 && info.pid == (uint32_t)pid) n++;
    close(fd);
  }
  return n;
}

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s create|close|unlink|ns|exit|park|exitnow|handoff ROUNDS MAXUS PID BINARY OFFSETS\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  const int group = strcmp(mode, "handoff") == 0;  // the kill goes to the child's process group
  int rounds = atoi(argv[2]), maxus = atoi(argv[3]), pid = atoi(argv[4]);
  const char* bin = argv[5];
  static uint64_t offs[20000], cookies[20000];
  int n = 0;
  FILE* f = fopen(argv[6], "r");
  while (n < 20000 && fscanf(f, "%lx", &offs[n]) == 1) cookies[n] = n, n++;
  fclose(f);
  char mempath[64];
  snprintf(mempath, sizeof mempath, "/proc/%d/mem", pid);
  int bfd = open(bin, O_RDONLY), mfd = open(mempath, O_RDONLY);
  srand(time(NULL));
  // The parent's own private mount namespace and bpffs (unlink mode pins
  // there: the pin outlives the killed child).
  char fsdir[] = "/tmp/lrk.XXXXXX";
  if (!mkdtemp(fsdir) || unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
      mount("bpf", fsdir, "bpf", 0, NULL))
    return perror("bpffs"), 1;
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = 48);
  struct bpf_insn insns[] = {{0xb7, 0, 0, 0, 0}, {0x95, 0, 0, 0, 0}};  // r0 = 0; exit
  int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns, 2, &opts);
  if (prog < 0) return perror("prog"), 1;
  int leakyRounds = 0, before = 0;
  for (int i = 0; i < n; i++) {  // int3 left before this run
    unsigned char fb = 0, mb = 0;
    pread(bfd, &fb, 1, (off_t)offs[i]);
    pread(mfd, &mb, 1, (off_t)(offs[i] + 0x400000));
    before += mb == 0xcc && fb != 0xcc;
  }
  for (int r = 0; r < rounds; r++) {
    int ready[2], go[2];
    pipe(ready);
    pipe(go);
    pid_t c = fork();
    if (c == 0) {
      if (group) setpgid(0, 0);
      char pin[128] = "";
      if (strcmp(mode, "unlink") == 0 || strcmp(mode, "ns") == 0) {
        if (strcmp(mode, "ns") == 0) {  // a bpffs of its own, in a namespace of its own
          if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) _exit(10);
          if (mount("bpf", fsdir, "bpf", 0, NULL)) _exit(11);
        }
        snprintf(pin, sizeof pin, "%s/link%d", fsdir, r);
      }
      int fd = -1;
      if (strcmp(mode, "create") != 0) {
        fd = create(prog, bin, offs, cookies, n, pid);
        if (fd < 0) _exit(12);
        if (pin[0]) {
          if (bpf_obj_pin(fd, pin)) _exit(13);
          close(fd);  // the pin holds the link now
        } else if (strcmp(mode, "park") == 0) {
          int sv[2];
          if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv)) _exit(14);
          int fds[2] = {sv[1], fd};  // sv[1]'s own queue holds sv[1]: a cycle
          char byte = 0, cbuf[CMSG_SPACE(sizeof fds)];
          struct iovec iov = {&byte, 1};
          struct msghdr m = {0};
          m.msg_iov = &iov, m.msg_iovlen = 1, m.msg_control = cbuf, m.msg_controllen = sizeof cbuf;
          struct cmsghdr* c = CMSG_FIRSTHDR(&m);
          c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS, c->cmsg_len = CMSG_LEN(sizeof fds);
          memcpy(CMSG_DATA(c), fds, sizeof fds);
          if (sendmsg(sv[0], &m, 0) != 1) _exit(15);
          close(fd);  // the message holds the link now
        }
      }
      char b = 1;
      write(ready[1], &b, 1);
      read(go[0], &b, 1);
      if (strcmp(mode, "create") == 0) {
        fd = create(prog, bin, offs, cookies, n, pid);
        close(fd);
      } else if (strcmp(mode, "close") == 0) {
        close(fd);
      } else if (strcmp(mode, "unlink") == 0) {
        unlink(pin);
      } else if (strcmp(mode, "exitnow") == 0) {
        _exit(0);
      } else if (strcmp(mode, "handoff") == 0) {
        int done[2];
        if (pipe(done) == 0) {
          pid_t h = fork();
          if (h == 0) {  // the helper: its exit drops the last reference
            close(done[1]);
            while (read(done[0], &b, 1) < 0 && errno == EINTR) {
            }
            _exit(0);
          }
          close(fd);
          close(done[0]);
          close(done[1]);
          if (h > 0) waitpid(h, NULL, 0);
        }
      }
      pause();  // killed here at the latest
      _exit(0);
    }
    char b;
    if (read(ready[0], &b, 1) != 1) {
      int st;
      waitpid(c, &st, 0);
      fprintf(stderr, "round %d: child failed (exit %d)\n", r, WEXITSTATUS(st));
      return 1;
    }
    struct timespec d = {0, (long)(rand() % (maxus + 1)) * 1000};
    write(go[1], &b, 1);
    nanosleep(&d, NULL);
    kill(group ? -c : c, SIGKILL);
    int st;
    waitpid(c, &st, 0);
    close(ready[0]), close(ready[1]), close(go[0]), close(go[1]);
    int left = 0, links = 0;
    for (int t = 0; t < 50; t++) {  // the deferred release may take a moment
      usleep(20000);
      left = 0;
      for (int i = 0; i < n; i++) {
        unsigned char fb = 0, mb = 0;
        pread(bfd, &fb, 1, (off_t)offs[i]);
        pread(mfd, &mb, 1, (off_t)(offs[i] + 0x400000));
        left += mb == 0xcc && fb != 0xcc;
      }
      links = links_of(pid);
      if (!left && !links) break;
    }
    if (left > before) leakyRounds++;
    printf("%s round %d: killed after %ld us: %d new int3 left (%d in all), %d link(s) left\n", mode, r,
           d.tv_nsec / 1000, left - before, left, links);
    before = left;
  }
  umount(fsdir);
  rmdir(fsdir);
  printf("%s: %d of %d rounds left int3 in the target (%d probes)\n", mode, leakyRounds, rounds, n);
  return 0;
}
