#!/usr/bin/env python3
"""Re-runs the README's examples and says where their output drifted.

Every fenced block of README.md whose lines start with `$ goscope ...` is an
example: the command and, until the next `$ ` line or the block's end, the
output the README shows. An example that needs no live process (`-b`, `-c`,
`-- CMD`, `--help`, `info`/`list` of a file) is run again from the
repository's root with build/ first on PATH (as root: BPF needs it); those
with `-p PID` name a process of the run that made them, and those naming a
`./file` made for that example, are listed as not re-run
(scripts/readme-examples.sh starts fixtures for some of them).

Output is compared by its shape, line by line: numbers, hex addresses,
times, PIDs and absolute paths are replaced by placeholders, so a count of
1302 where the README shows 1301 is the same line, while a reworded message,
a renamed key or a line goscope no longer prints is drift. A line the run
printed that the README does not show is drift only with --strict (many
examples are excerpts). Lines are compared as sets (how many trace lines
arrive, and the order of interval rows, depend on timing); a README line
with an ellipsis (`...`, `…`: an example cut for length) matches any line
with its beginning and end.

  usage: scripts/readme-check.py [--build DIR] [--readme FILE] [--only SUBSTRING] [--timeout SECS] [--strict]
  (an example still running after SECS, default 20, gets SIGINT: Ctrl-C)
  exit:  0 every re-run example has the README's shape; 1 some drifted;
         2 usage or setup error.
"""
import argparse
import os
import re
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def examples(readme):
    """(line number, command, [output lines]) for each `$ goscope` line."""
    out, block, cur = [], False, None
    for n, line in enumerate(open(readme, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if line.startswith("```"):
            if cur:
                out.append(cur)
                cur = None
            block = not block
            continue
        if not block:
            continue
        if line.startswith("$ "):
            if cur:
                out.append(cur)
            cur = (n, line[2:], []) if line.startswith("$ goscope") else None
        elif cur:
            cur[2].append(line)
    return out


SHAPES = [
    (re.compile(r"/(?:work|tmp|home|root|usr|var)/[^\s\"',)\]]*"), "PATH"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d| UTC)?"), "TIME"),
    (re.compile(r"\b\d\d:\d\d:\d\d(?:\.\d+)?\b"), "TIME"),
    (re.compile(r"0x[0-9a-fA-F]+"), "HEX"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "HEX"),
    (re.compile(r"\d+(?:[.,]\d+)*(?:e[+-]?\d+)?\s?(?:ns|us|µs|ms|s)\b"), "DUR"),
    (re.compile(r"\d+(?:[.,]\d+)*(?:e[+-]?\d+)?"), "N"),
    (re.compile(r"\|\**\s*\|"), "|BAR|"),
    (re.compile(r"[ \t]+"), " "),
]


def shape(line):
    for rx, rep in SHAPES:
        line = rx.sub(rep, line)
    return line.strip()


def needs_process(cmd):
    return re.search(r"(^|\s)-p\s|--pid\b", cmd) is not None


def main():
    ap = argparse.ArgumentParser(description="re-run the README's examples and report drift")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    ap.add_argument("--only", default="", help="only examples whose command contains this")
    ap.add_argument("--strict", action="store_true",
                    help="lines the run printed that the README does not show are drift too (many examples are excerpts)")
    ap.add_argument("--timeout", type=float, default=20, help="seconds before an example gets Ctrl-C")
    a = ap.parse_args()
    goscope = os.path.join(a.build, "goscope")
    if not os.access(goscope, os.X_OK):
        print(f"readme-check: no goscope at {goscope} (build first, or --build DIR)", file=sys.stderr)
        return 2
    env = dict(os.environ, PATH=a.build + os.pathsep + os.environ.get("PATH", ""))
    ran = drifted = skipped = 0
    for n, cmd, shown in examples(a.readme):
        if a.only and a.only not in cmd:
            continue
        if needs_process(cmd):
            skipped += 1
            print(f"README:{n}: not re-run (needs a live process): $ {cmd}")
            continue
        files = re.findall(r"(?:^|\s|')(\./[\w./-]+)", cmd) + re.findall(r"(?:-b|--debug-file|--debug-dir)\s+'?([\w./-]+)", cmd)
        missing = sorted({f for f in files if not os.path.exists(os.path.join(ROOT, f))})
        if missing:
            skipped += 1
            print(f"README:{n}: not re-run (needs {', '.join(missing)}, not here): $ {cmd}")
            continue
        ran += 1
        # An example that runs until Ctrl-C gets one (SIGINT to its process
        # group) after --timeout seconds, as its README run did.
        p = subprocess.Popen(cmd, shell=True, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, errors="replace", start_new_session=True)
        try:
            out, _ = p.communicate(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGINT)
            try:
                out, _ = p.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, _ = p.communicate()
        got = out.splitlines()
        want = {shape(l) for l in shown if l.strip() and "..." not in l and "…" not in l}
        have = {shape(l) for l in got if l.strip()}
        # A line cut with an ellipsis matches any run line with its beginning
        # and its end (and whatever between): neither side is then drift.
        cut = [re.compile(".*".join(re.escape(shape(part)) for part in re.split(r"\.\.\.|…", l)))
               for l in shown if "..." in l or "…" in l]
        gone = sorted(want - have)
        new = sorted(l for l in have - want if not any(c.fullmatch(l) for c in cut))
        gone += sorted(c.pattern for c in cut if not any(c.fullmatch(l) for l in have))
        if not gone and (not new or not a.strict):
            print(f"README:{n}: same shape{' (the run printed more: --strict shows it)' if new else ''}: $ {cmd}")
            continue
        drifted += 1
        print(f"README:{n}: DRIFT: $ {cmd}")
        for l in gone:
            print(f"    README only: {l[:300]}")
        for l in new:
            print(f"    run only:    {l[:300]}")
    print(f"readme-check: {ran} examples re-run, {drifted} drifted, {skipped} not re-run (live processes, files of their own)")
    return 1 if drifted else 0


if __name__ == "__main__":
    sys.exit(main())
