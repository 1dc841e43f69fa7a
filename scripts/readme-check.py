#!/usr/bin/env python3
"""Re-runs the documentation's examples and says where their output drifted.

Every fenced block of README.md and of the command reference
(docs/commands/*.md) whose lines start with `$ goscope ...` is an example: the command and, until the next `$ ` line or the block's end, the
output the README shows. Each is run again from the repository's root with
build/ first on PATH (as root: BPF needs it).

Live processes (on by default as root; --no-live turns them off): an example
on `-p PID` gets a fixture of its own started from build/fixtures for that
PID (one process per PID the README shows, shared by the examples that show
the same PID, killed by its own pid at the end). Which fixture: a recipe
below, else the path the README's output prints for that PID
(`PID 9337 (/.../fixtures/default/counter)`, `fixtures/go/zoo/...`), else
the names the example uses (HINTS); its arguments are those
scripts/readme-examples.sh gives it (FIXTURE_ARGS). The PID is put in the
command wherever the README's was. Examples that need more than a running
fixture (a background kill, a Prometheus scrape, a container, files made
with objcopy, go-samples) have a small recipe in RECIPES; an example whose
files or process cannot be made is listed as not re-run, with the reason,
and the summary counts the reasons.

Output is compared by its shape, line by line: numbers, hex addresses,
times, PIDs and absolute paths are replaced by placeholders, so a count of
1302 where the README shows 1301 is the same line, while a reworded message,
a renamed key or a line goscope no longer prints is drift. A line the run
printed that the README does not show is drift only with --strict (many
examples are excerpts). Lines are compared as sets (how many trace lines
arrive, and the order of interval rows, depend on timing); a README line
with an ellipsis (`...`, `…`: an example cut for length) matches any line
with its beginning and end. --show prints each run's real output (with the
command as run) for pasting into the README.

Lines a run prints or not by timing alone, and figures that come from this
host's history, are set aside (SHAPES' first rules, a recipe's maybe and
same), and every example's plan starts from the documented Delve cost
(pinned_cache, repin): without that, each whole run found another such
line. The ctest
`readme_examples` runs it (CI is root); its timings are in tests/README.md.

  usage: scripts/readme-check.py [--build DIR] [--readme FILE]... [--only SUBSTRING]
                                 [--timeout SECS] [--strict] [--no-live] [--show]
  (an example still running after SECS, default 20, gets SIGINT: Ctrl-C)
  exit:  0 every re-run example has the README's shape; 1 some drifted;
         2 usage or setup error.
"""
import argparse
import collections
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The arguments scripts/readme-examples.sh starts each fixture with when an
# example runs on its PID (a fixture that would exit at once loops instead).
FIXTURE_ARGS = {
    "counter": [], "zoo": ["--sleep-ms", "10"], "fibonacci": ["--loop"], "pacer": ["--rate", "10"],
    "nested": [], "functions": ["--loop"], "ifaces": ["--loop"],
}

# Where no output names the PID's binary: the fixture whose names the
# example's command or output uses.
HINTS = [
    (r"main\.(counter|doWork)\b", "default/counter"),
    (r"main\.(cfg|items|labels|primary|errNotFound|Point|Server|checkRecord|mayPanic|processJob)\b", "default/zoo"),
    (r"main\.(handle|Conn)\b", "default/nested"),
    (r"main\.fibonacci", "default/fibonacci"),
    (r"main\.scale\b", "default/pacer"),
]

# Per-example recipes. A recipe applies to an example when each of its
# regexes present matches: `cmd` the command, `shown` the README's output,
# `block` the whole fenced block. Keys:
#   fixture  "variant/name args..." instead of the inferred one
#   launch   a shell command whose process (pid "child": its first child)
#            is the target; {fx} is the fixtures directory
#   stop     SIGSTOP the target before the example (kill -STOP in the block)
#   dir      shell run once in a fresh directory, which becomes the
#            example's working directory (the block's `$ cat FILE` outputs
#            are written there first); {fx}, {samples} as above
#   pre      shell run in that directory before this example
#   beside   shell run alongside the example ({pid}: the target)
#   when     a regex: beside and steps start once the example printed a
#            line matching it
#   steps    shell run one after another once the example has started;
#            "@curl" runs the block's `$ curl` line and compares its output
#            too; the example then gets Ctrl-C (it runs until stopped)
#   port     a port the block uses, replaced by a free one
#   hexfrom  (shell, JSON keys): the address the command reads is a run's
#            own: take it from that command's first JSON line
#   needs    "samples": skip unless go-samples are here
#   maybe    README lines that a run prints or not, by timing (a call in
#            flight when the probes went in or came off): not drift if absent
#   same     a regex over shaped lines: what it matches is one thing on
#            both sides (either of two endings of a session)
RECIPES = [
    {"cmd": r"trace -p \d+ main\.scale -d 0\.5", "fixture": "default/pacer --rate 100000",
     "maybe": r"calls had not returned when tracing ended"},
    {"cmd": r"trace -n \d+ -p", "maybe": r"returns of calls already running"},
    {"cmd": r"main\.deepRecurse", "maybe": r"stack the kernel could not record|goscope: target exited"},
    {"cmd": r"break -p \d+ main\.scale .*kill -USR1", "fixture": "default/pacer --rate 10",
     "when": r"breakpoint at main\.scale", "beside": "sleep 1.5; kill -USR1 {pid}"},
    {"cmd": r"\| head -\d+$", "same": r"goscope: (?:output closed|duration reached)"},
    {"cmd": r"read -p \d+ main\.counter$", "shown": r"\(stripped\)", "fixture": "stripped/counter"},
    {"block": r"\$ kill -STOP", "stop": True},
    {"block": r"/mnt/app/server", "pid": "child",
     "launch": "exec unshare --mount --pid --fork --kill-child sh -c 'mount -t tmpfs none /mnt"
               " && mkdir /mnt/app && cp {fx}/default/counter /mnt/app/server && exec /mnt/app/server'"},
    # the process runs a copy of ./server: objcopy then adds the debuglink to
    # a file that is not running, as the README's run did
    {"block": r"server\.debug",
     "dir": "mkdir w run && cd w && objcopy --only-keep-debug {fx}/default/counter server.debug"
            " && objcopy --strip-all {fx}/default/counter server && cp server ../run/server"
            " && objcopy --only-keep-debug {fx}/default/zoo ../zoo.debug",
     "cwd": "w", "launch": "exec ../run/server"},
    {"cmd": r"info -b \./server \|", "pre": "objcopy --add-gnu-debuglink=server.debug server"},
    {"block": r"--debug-dir \./debug",
     "dir": "cp {fx}/buildid/functions-stripped app && id=$(readelf -n app | awk '/Build ID/{print $3}')"
            " && mkdir -p debug/.build-id/${id:0:2} && cp {fx}/buildid/functions.debug debug/.build-id/${id:0:2}/${id:2}.debug"},
    {"block": r"\./run\.sh", "dir": "cp {fx}/default/functions functions && chmod +x run.sh"},
    {"cmd": r"go-samples/", "dir": "ln -s {samples} go-samples", "needs": "samples"},
    {"block": r"--burst 1000 &", "fixture": "default/counter --burst 1000", "port": 9464,
     "when": "Prometheus metrics at", "steps": ["sleep 0.3", "kill -USR1 {pid}", "sleep 0.3", "kill -USR1 {pid}", "sleep 0.5", "@curl"]},
    {"cmd": r"latency -p \d+ .*--prometheus", "fixture": "default/counter --burst 1000", "port": 9464,
     "when": "Prometheus metrics at", "steps": ["sleep 0.3", "kill -USR1 {pid}", "sleep 0.5", "@curl"]},
    {"cmd": r"\*\(\*\*main\.Conn\)\(0x",
     "hexfrom": ("goscope trace --json --strategy delve -p {pid} main.handle -d 0.1 | head -1",
                 ["args", "r", "value", "Peer", "value", "Rwc", "value", "addr"])},
]


Example = collections.namedtuple("Example", "line cmd shown block")

# The pages whose examples are checked: the README and the command reference.
DOCS = ["README.md", "docs/commands/*.md"]


def doc_files(given):
    """The files to check, in order: those given, else DOCS under ROOT."""
    if given:
        return given
    import glob
    return [f for pat in DOCS for f in sorted(glob.glob(os.path.join(ROOT, pat)))]


def examples(readme):
    """An Example for each `$ goscope` line; block: every `$ ` entry of its
    fenced block as (line, command, [output lines]). `line` is FILE:N."""
    out, block, entries = [], False, []
    name = os.path.relpath(readme, ROOT) if os.path.isabs(readme) else readme

    def close():
        text = "\n".join(f"$ {c}\n" + "\n".join(o) for _, c, o in entries)
        out.extend(Example(n, c, o, (entries, text)) for n, c, o in entries if c.startswith("goscope"))

    for n, line in enumerate(open(readme, encoding="utf-8"), 1):
        n = f"{name}:{n}"
        line = line.rstrip("\n")
        if line.startswith("```"):
            if block:
                close()
            block, entries = not block, []
            continue
        if not block:
            continue
        if line.startswith("$ "):
            entries.append((n, line[2:], []))
        elif entries:
            entries[-1][2].append(line)
    return out


SHAPES = [
    # Parts of a line that come and go with timing or with what this host
    # has measured before, not with goscope's version: the cost line's peak
    # (printed once a rate was sampled), where a Delve hit's cost comes from
    # (~/.cache/goscope/host-costs.json), the GNU build-id's directory.
    (re.compile(r", peak [\d.]+ hits/s(?: in [^\s;]+)?"), ""),   # (the name ends before a "; capped ...")
    (re.compile(r" \([\d.]+ hits/s\)(?=;)"), ""),   # break's rate: said once it ran 1 s
    (re.compile(r',"peak_func":"[^"]*"'), ""),   # JSON's peak: named once a rate was sampled, as the text's
    # The cap on the cost estimate: said or not as this host's per-hit
    # figures price the probes above the target's own CPU clock or not.
    (re.compile(r"; capped at the target's own CPU time: the host's per-hit figures priced [\d.,]+ ms, more than it used"), ""),
    # (or, where the target's clock cannot be read, at what every CPU could run)
    (re.compile(r"; capped at what all \d+ CPUs? could run in that time: the host's per-hit figures priced [\d.,]+ ms"), ""),
    # (and whether the clock was read to the end: not when a -c program
    # exited before the session's last sample)
    (re.compile(r',"target_cpu_ms":[\d.eE+-]+,"capped":(?:true|false)(?:,"estimate_cpu_ms":[\d.eE+-]+)?'), ''),
    (re.compile(r"a Delve hit ~([\d.]+ ms), (?:default from docs/delve\.md \(no Delve session measured here yet\)"
                r"|measured here: \d+ Delve hits stopped the target [\d.]+ ms"
                r"(?:, at load [\d.]+ on \d+ CPUs?, [\d-]+ [\d:]+ UTC)?(?: \(the lowest of \d+ sessions measured\))?)"),
     r"a Delve hit ~\1, DELVE-COST"),
    (re.compile(r"\.build-id/[0-9a-f]{2}/[0-9a-f]+"), ".build-id/HEX"),
    (re.compile(r"(?<![\w/.-])[\w-]{20}/[\w-]{3}\b"), "GO-BUILD-ID"),
    (re.compile(r"/(?:work|tmp|home|root|usr|var)/[^\s\"',)\]]*"), "PATH"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d| UTC)?"), "TIME"),
    (re.compile(r"\b\d\d:\d\d:\d\d(?:\.\d+)?\b"), "TIME"),
    (re.compile(r"0x[0-9a-fA-F]+"), "HEX"),
    (re.compile(r"\b(?=[0-9]*[a-f])[0-9a-f]{12,}\b"), "HEX"),   # (digits alone are a number)
    (re.compile(r"\d+(?:[.,]\d+)*(?:e[+-]?\d+)?\s?(?:ns|us|µs|ms|s)\b"), "DUR"),
    (re.compile(r"\d+(?:[.,]\d+)*(?:e[+-]?\d+)?"), "N"),
    (re.compile(r"\|\**\s*\|"), "|BAR|"),
    (re.compile(r"[ \t]+"), " "),
]


# Where this clone and its build live on the machine that runs the check
# (CI clones to /check, not under /work): any path under them is PATH too.
HERE = re.compile("|".join(re.escape(os.path.realpath(d)) + r"(?=/|\b)[^\s\"',)\]]*"
                           for d in sorted({ROOT, os.path.realpath(ROOT)}, key=len, reverse=True)))


def shape(line):
    line = HERE.sub("PATH", line)
    for rx, rep in SHAPES:
        line = rx.sub(rep, line)
    return line.strip()


def compare(shown, got, strict, same=None):
    """(README lines the run lacks, run lines the README lacks)."""
    alike = (lambda l: re.sub(same, "SAME", l)) if same else (lambda l: l)
    want = {alike(shape(l)) for l in shown if l.strip() and "..." not in l and "…" not in l}
    have = {alike(shape(l)) for l in got if l.strip()}
    # A line cut with an ellipsis matches any run line with its beginning
    # and its end (and whatever between): neither side is then drift.
    cut = [re.compile(".*".join(re.escape(shape(part)) for part in re.split(r"\.\.\.|…", l)))
           for l in shown if "..." in l or "…" in l]
    gone = sorted(want - have)
    new = sorted(l for l in have - want if not any(c.fullmatch(l) for c in cut))
    gone += sorted(c.pattern for c in cut if not any(c.fullmatch(l) for l in have))
    return gone, new


def readme_pids(cmd):
    return re.findall(r"(?:-p\s+|--pid[=\s]+|/proc/)(\d+)", cmd)


def recipe_for(ex):
    r = {}
    for rec in RECIPES:
        if all(re.search(rec[k], text) for k, text in (("cmd", ex.cmd), ("shown", "\n".join(ex.shown)),
                                                        ("block", ex.block[1])) if k in rec):
            r.update({k: v for k, v in rec.items() if k not in ("cmd", "shown", "block")})
    return r


def binaries_by_pid(exs):
    """README PID -> "variant/name" of the fixture its output names."""
    found = {}
    for ex in exs:
        pids = readme_pids(ex.cmd)
        text = "\n".join(ex.shown)
        m = re.search(r"fixtures/(default|stripped|pie|nopt)/(\w+)", text) or re.search(r"fixtures/go/(\w+)/", text)
        if pids and m:
            found.setdefault(pids[0], "/".join(m.groups()) if m.lastindex == 2 else f"default/{m.group(1)}")
    return found


class Live:
    """The fixtures started for README PIDs, and the directories made."""

    def __init__(self, fx, samples):
        self.fx, self.samples = fx, samples
        self.procs = {}   # README PID -> (Popen, target pid)
        self.dirs = {}    # recipe dir script -> path
        self.ports = {}   # README port -> a free one here
        self.top = tempfile.mkdtemp(prefix="readme-check-")
        # The README's commands name build/fixtures/... from the repository's
        # root: run them there, or, for a build directory elsewhere
        # (GOSCOPE_BUILD_DIR), where build/ is a link to it.
        self.home = ROOT
        if os.path.realpath(os.path.dirname(fx)) != os.path.realpath(os.path.join(ROOT, "build")):
            self.home = os.path.join(self.top, "root")
            os.makedirs(self.home)
            os.symlink(os.path.dirname(fx), os.path.join(self.home, "build"))

    def fill(self, s, pid=None):
        return s.replace("{fx}", self.fx).replace("{samples}", self.samples or "").replace("{pid}", str(pid))

    def workdir(self, rec, ex):
        if "dir" not in rec:
            return self.home
        key = rec["dir"]
        if key not in self.dirs:
            d = tempfile.mkdtemp(dir=self.top)
            for _, c, o in ex.block[0]:
                m = re.fullmatch(r"cat (\S+)", c)
                if m:
                    with open(os.path.join(d, m.group(1)), "w") as f:
                        f.write("\n".join(o) + "\n")
            r = subprocess.run(self.fill(key), shell=True, cwd=d, executable="/bin/bash",
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode:
                raise RuntimeError(f"making its files failed: {r.stdout.strip()[:200]}")
            self.dirs[key] = d
        return os.path.join(self.dirs[key], rec.get("cwd", ""))

    def target(self, readme_pid, fixture, rec, cwd):
        """The real pid standing for readme_pid, started on first use."""
        if readme_pid in self.procs:
            return self.procs[readme_pid][1]
        if "launch" in rec:
            argv = self.fill(rec["launch"])
        else:
            name, *args = fixture.split()
            path = os.path.join(self.fx, name)
            if not os.access(path, os.X_OK):
                raise RuntimeError(f"no fixture {path} (scripts/build-fixtures.sh)")
            argv = [path] + args
        p = subprocess.Popen(argv, shell=isinstance(argv, str), cwd=cwd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        pid = p.pid
        deadline = time.time() + 5
        if rec.get("pid") == "child":
            while time.time() < deadline:
                kids = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
                if kids:
                    pid = int(kids[0])
                    break
                time.sleep(0.05)
        self.procs[readme_pid] = (p, pid)
        time.sleep(0.7)   # past the fixture's start-up ("ready", its loop running)
        if p.poll() is not None:
            raise RuntimeError(f"the fixture exited at once ({argv})")
        return pid

    def release(self, readme_pid):
        """Kill the fixture standing for readme_pid (its process group)."""
        p, _ = self.procs.pop(readme_pid)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()

    def close(self):
        for readme_pid in list(self.procs):
            self.release(readme_pid)
        shutil.rmtree(self.top, ignore_errors=True)


def run(cmd, cwd, env, timeout, beside=None, steps=(), curls=(), when=None):
    """The example's combined output, and each @curl step's
    [(command, output lines)]. beside runs alongside; steps run one after
    another, and then the example gets Ctrl-C; both wait until the example
    has printed a line matching when (its attach: on a loaded machine that
    can take seconds, and a signal sent before it would change the plan)."""
    p = subprocess.Popen(cmd, shell=True, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, errors="replace", start_new_session=True, executable="/bin/bash")
    lines, seen = [], threading.Event()

    def read():
        for l in p.stdout:
            lines.append(l.rstrip("\n"))
            if when and re.search(when, l):
                seen.set()
        seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if when and (beside or steps):
        seen.wait(timeout)
    side = beside and subprocess.Popen(beside, shell=True, start_new_session=True)
    extra = []
    for step in steps:
        if step != "@curl":
            subprocess.run(step, shell=True, cwd=cwd)
            continue
        for c in curls:   # stdout only: curl's progress meter is for a pipe, not the README's terminal
            r = subprocess.run(c, shell=True, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, errors="replace", timeout=20)
            extra.append((c, r.stdout.splitlines()))
    # An example that runs until Ctrl-C gets one (SIGINT to its process
    # group) after --timeout seconds, as its README run did.
    try:
        p.wait(timeout=0.01 if steps else timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGINT)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    reader.join()
    if side:
        side.wait()
    return lines, extra


def wait_untraced(pid, seconds):
    """Until /proc/PID/status says TracerPid 0 (or the process is gone)."""
    end = time.time() + seconds
    while time.time() < end:
        try:
            status = open(f"/proc/{pid}/status").read()
        except OSError:
            return
        m = re.search(r"^TracerPid:\s*(\d+)", status, re.M)
        if not m or m.group(1) == "0":
            return
        time.sleep(0.05)


def pinned_cache(top):
    """An XDG_CACHE_HOME whose host-costs.json is this host's calibration
    (one measure, marked as taken at rest now) without the Delve stop cost the last Delve session here measured (under
    whatever load there was: 1 ms idle, 19 ms at load 26), so that the plans
    that weigh Delve against BPF start from the documented ~1 ms every run
    and do not flip with this machine's history; the analysis cache is
    shared."""
    src = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "goscope")
    dst = os.path.join(top, "cache", "goscope")
    os.makedirs(dst)
    if os.path.isdir(os.path.join(src, "analysis")):
        os.symlink(os.path.join(src, "analysis"), os.path.join(dst, "analysis"))
    try:
        costs = json.load(open(os.path.join(src, "host-costs.json")))
        for k in ("delve_stop_ns", "delve_source", "delve_measures"):
            costs.pop(k, None)
        # One probe measure, marked as taken now at rest: the plans and the
        # costs line then name one measure every run, whatever load this
        # host's own measures were taken at (docs/overhead.md).
        measures = costs.get("probe_measures") or []
        if measures:
            m = min(measures, key=lambda m: m.get("load", 0))
            m["load"], m["at"] = 0.0, int(time.time())
            costs["probe_measures"] = [m]
        json.dump(costs, open(os.path.join(dst, "host-costs.json"), "w"))
    except (OSError, ValueError):
        pass   # goscope calibrates (once, said on stderr)
    return os.path.dirname(dst)


def repin(cache_home):
    """Before each example: the Delve stop cost goes again. A Delve example
    records what its hits cost into the pinned cache, and under load (CI:
    20-60 ms a hit) the next example weighing Delve against BPF at ~10 hits/s
    then went to BPF from the start, unlike the documented run."""
    path = os.path.join(cache_home, "goscope", "host-costs.json")
    try:
        costs = json.load(open(path))
    except (OSError, ValueError):
        return
    if any(k in costs for k in ("delve_stop_ns", "delve_source", "delve_measures")):
        for k in ("delve_stop_ns", "delve_source", "delve_measures"):
            costs.pop(k, None)
        json.dump(costs, open(path, "w"))


def stop(pid):
    """kill -STOP, and wait for the stop: every thread of a busy Go process
    must reach it before /proc says T, which takes a while on a loaded
    machine (the README's run typed the next command seconds later)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.time() + 10
    while time.time() < deadline:
        stat = open(f"/proc/{pid}/stat").read()
        if stat[stat.rindex(")") + 2] == "T":
            return
        time.sleep(0.05)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(ex, rec, live, known, args):
    """(command to run, its cwd, the README lines to compare, the block's
    @curl commands with their README output, target pid) or a str: why the
    example is not re-run."""
    cmd, shown = ex.cmd, list(ex.shown)
    follow = []
    if rec.get("aside"):
        return rec["aside"]
    if rec.get("needs") == "samples" and not live.samples:
        return "no go-samples here (GOSCOPE_GO_SAMPLES or build/go-samples)"
    if "@curl" in rec.get("steps", []) and not shutil.which("curl"):
        return "no curl here (scripts/setup.sh installs it)"
    pids = readme_pids(cmd)
    if not pids and "launch" in rec:   # e.g. count -b PATH beside the block's container
        pids = [readme_pids(c)[0] for _, c, _ in ex.block[0] if readme_pids(c)][:1]
    pid = None
    if pids or "launch" in rec:
        if live is None or not args.live:
            return "needs a live process (--no-live, or not root)"
    try:
        cwd = live.workdir(rec, ex)
        if pids:
            fixture = rec.get("fixture") or known.get(pids[0]) or next(
                (f for rx, f in HINTS if re.search(rx, ex.cmd + "\n" + "\n".join(ex.shown))), None)
            if fixture is None and "launch" not in rec:
                return f"no fixture known for the README's PID {pids[0]}"
            if fixture and " " not in fixture:
                fixture += "".join(" " + a for a in FIXTURE_ARGS.get(fixture.split("/")[1], []))
            pid = live.target(pids[0], fixture, rec, cwd)
            if rec.get("stop"):
                stop(pid)
            sub = lambda s: re.sub(rf"\b{pids[0]}\b", str(pid), s)
            cmd, shown = sub(cmd), [sub(l) for l in shown]
    except (RuntimeError, OSError) as e:
        return str(e)
    if "port" in rec:
        port = str(live.ports.setdefault(rec["port"], free_port()))
        cmd = cmd.replace(f":{rec['port']}", f":{port}")
    if cmd.rstrip().endswith("&"):
        cmd = cmd.rstrip()[:-1]
    if "steps" in rec:
        for _, c, o in ex.block[0]:
            if c.startswith("curl"):
                c = c.replace(f":{rec['port']}", f":{port}") if "port" in rec else c
                follow.append((c, o))
    if "hexfrom" in rec:
        sh, keys = rec["hexfrom"]
        r = subprocess.run(live.fill(sh, pid), shell=True, cwd=cwd, env=args.env, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        try:
            v = json.loads(r.stdout.splitlines()[0])
            for k in keys:
                v = v[k]
        except (IndexError, KeyError, TypeError, ValueError):
            return f"could not find the address to read ({sh})"
        cmd = re.sub(r"0x[0-9a-f]+", v, cmd)
        shown = [re.sub(r"0x[0-9a-f]+", v, l) for l in shown]
    if "maybe" in rec:
        shown = [l for l in shown if not re.search(rec["maybe"], l)]
    if "pre" in rec:
        subprocess.run(rec["pre"], shell=True, cwd=cwd, check=False)
    files = re.findall(r"(?:^|\s|')(\./[\w./-]+)", cmd) + re.findall(r"(?:-b|--debug-file|--debug-dir)\s+'?([\w./-]+)", cmd)
    # (an absolute path is the example's own business: a container's path
    # that is not here, a /proc/PID/root path)
    missing = sorted({f for f in files if not f.startswith("/") and not os.path.lexists(os.path.join(cwd, f))})
    if missing:
        return f"needs {', '.join(missing)}, not here"
    return cmd, cwd, shown, follow, pid


def main():
    ap = argparse.ArgumentParser(description="re-run the README's examples and report drift")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--fixtures", help="the fixtures directory (default: BUILD/fixtures)")
    ap.add_argument("--readme", action="append", default=[],
                    help="a page to check (repeatable; default: README.md and docs/commands/*.md)")
    ap.add_argument("--only", default="", help="only examples whose command contains this")
    ap.add_argument("--strict", action="store_true",
                    help="lines the run printed that the README does not show are drift too (many examples are excerpts)")
    ap.add_argument("--timeout", type=float, default=20, help="seconds before an example gets Ctrl-C")
    ap.add_argument("--live", action=argparse.BooleanOptionalAction, default=os.geteuid() == 0,
                    help="start fixtures for the examples on -p PID (default: on as root)")
    ap.add_argument("--show", action="store_true", help="print each run's real output, for pasting")
    a = ap.parse_args()
    goscope = os.path.join(a.build, "goscope")
    if not os.access(goscope, os.X_OK):
        print(f"readme-check: no goscope at {goscope} (build first, or --build DIR)", file=sys.stderr)
        return 2
    a.env = dict(os.environ, PATH=a.build + os.pathsep + os.environ.get("PATH", ""))
    fx = os.path.abspath(a.fixtures or os.path.join(a.build, "fixtures"))
    samples = next((d for d in (os.environ.get("GOSCOPE_GO_SAMPLES"), os.path.join(a.build, "go-samples"))
                    if d and os.path.isdir(d)), None)
    exs = [ex for f in doc_files(a.readme) for ex in examples(f)]
    known = binaries_by_pid(exs)
    live = Live(fx, samples)
    a.env["XDG_CACHE_HOME"] = pinned_cache(live.top)
    ran = drifted = 0
    why = collections.Counter()
    t0 = time.time()
    todo = [ex for ex in exs if a.only in ex.cmd]
    try:
        for k, ex in enumerate(todo):
            # a fixture no later example names is killed now: a spinning
            # counter left to the end would load the machine all run long
            for readme_pid in [r for r in live.procs if not any(re.search(rf"\b{r}\b", e.block[1]) for e in todo[k:])]:
                live.release(readme_pid)
            rec = recipe_for(ex)
            prep = prepare(ex, rec, live, known, a)
            if isinstance(prep, str):
                why[re.sub(r"\d+", "N", prep)] += 1
                print(f"{ex.line}: not re-run ({prep}): $ {ex.cmd}")
                continue
            cmd, cwd, shown, follow, pid = prep
            # An example meets its target untraced, as a user would: the
            # dlv of an earlier example on the same fixture may still be
            # detaching (its guardian restores the target first), and a
            # traced target is one Delve cannot serve, which changes the plan.
            if pid:
                wait_untraced(pid, 15)
            repin(a.env["XDG_CACHE_HOME"])
            ran += 1
            got, extra = run(cmd, cwd, a.env, a.timeout, rec.get("beside") and live.fill(rec["beside"], pid),
                             [live.fill(s, pid) for s in rec.get("steps", [])], [c for c, _ in follow], rec.get("when"))
            if a.show:
                print(f"$ {cmd}\n" + "".join(l + "\n" for l in got) +
                      "".join(f"$ {c}\n" + "".join(l + "\n" for l in o) for c, o in extra), end="")
            gone, new = compare(shown, got, a.strict, rec.get("same"))
            for (_, want), (_, o) in zip(follow, extra):
                g, nw = compare(want, o, a.strict)
                gone, new = gone + g, new + nw
            if not gone and (not new or not a.strict):
                print(f"{ex.line}: same shape{' (the run printed more: --strict shows it)' if new else ''}: $ {ex.cmd}")
                continue
            drifted += 1
            print(f"{ex.line}: DRIFT: $ {ex.cmd}")
            for l in gone:
                print(f"    README only: {l[:300]}")
            for l in new:
                print(f"    run only:    {l[:300]}")
            # The whole run, for a drift that a re-run does not show (CI's log
            # is all that is left of it).
            for l in got[:40]:
                print(f"    run printed: {l[:200]}")
    finally:
        live.close()
    skipped = sum(why.values())
    print(f"readme-check: {ran + skipped} examples: {ran} re-run ({ran - drifted} same shape, {drifted} drifted),"
          f" {skipped} not re-run; {time.time() - t0:.0f} s")
    for reason, k in why.most_common():
        print(f"readme-check:   not re-run, {k}: {reason}")
    return 1 if drifted else 0


if __name__ == "__main__":
    sys.exit(main())
