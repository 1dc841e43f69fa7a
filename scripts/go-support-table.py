#!/usr/bin/env python3
"""The Go support table of docs/go-support.md, made from the release-contract
tests (tests/release/): one row per Go release of the matrix, one column per
part of the contract, each cell what the test of that part found.

  scripts/go-support-table.py [--build DIR] [--xml REPORT] [--write]

Without --xml it runs DIR/goscope_release_tests (every release of the
matrix unless GOSCOPE_RELEASES narrows it: ~2-5 minutes a release) with
doctest's XML reporter; --xml reads a report saved from such a run
(`goscope_release_tests -r=xml > REPORT`). It prints the table; --write
puts it into docs/go-support.md between its two markers, with the date and
the command. A cell is "yes" and the facts the test printed
("support: ..." messages), "skipped: why" when the release could not run
here, or "FAILED" with the first failed check. Exit: 0, 1 when a test
failed (the table is still printed), 2 on bad input.
"""
import argparse
import datetime
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "go-support.md")
BEGIN = "<!-- release-matrix: begin (scripts/go-support-table.py --write) -->"
END = "<!-- release-matrix: end -->"

# The contract's parts, in the table's order: (test name after "release go1.NN: ", column header).
PARTS = [
    ("list and info", "`list`, `info`"),
    ("exact counts", "exact `count`"),
    ("goroutine-paired latency", "`latency` per goroutine"),
    ("typed trace arguments and results", "`trace`, typed from DWARF"),
    ("stripped: traceback layout, struct and method signatures", "stripped: layouts, signatures"),
    ("stripped: inferred types print DWARF's values, call by call", "stripped: inferred = DWARF"),
    ("folded stacks", "`--folded`"),
    ("direct read", "direct `read`"),
    ("read oracle, every kind of value read directly prints what Delve prints", "direct read = Delve's"),
    ("the Delve path", "Delve path"),
]
NAME = re.compile(r"^release (go1\.\d+): (.*)$")


def run_tests(build):
    exe = os.path.join(build, "goscope_release_tests")
    if not os.access(exe, os.X_OK):
        sys.exit(f"go-support-table: {exe} is not built (scripts/build.sh, then scripts/toolchains.sh and "
                 "ctest -R build_release_fixtures)")
    r = subprocess.run([exe, "-r=xml", "-tc=release go1.*"], cwd=build, capture_output=True, text=True)
    if not r.stdout.lstrip().startswith("<?xml"):
        sys.exit("go-support-table: the test binary printed no report: " + (r.stderr or r.stdout)[:300])
    return r.stdout


def cells(report):
    root = ET.fromstring(report)
    out = {}  # (release, part) -> text
    failed = False
    for tc in root.iter("TestCase"):
        m = NAME.match(tc.get("name", ""))
        if not m or tc.get("skipped") == "true":
            continue
        rel, part = m.groups()
        msgs = [" ".join((t.text or "").split()) for t in tc.iter("Text")]
        facts = [x[len("support: "):] for x in msgs if x.startswith("support: ")]
        skips = [x[len("skipped: "):] for x in msgs if x.startswith("skipped: ")]
        res = tc.find("OverallResultsAsserts")
        ok = res is not None and res.get("test_case_success") == "true"
        if not ok:
            failed = True
            first = next((" ".join((e.text or "").split()) for e in tc.iter("Original")), "")
            out[(rel, part)] = "FAILED" + (f": `{first[:80]}`" if first else "")
        elif skips:
            out[(rel, part)] = "skipped: " + skips[0].split(":")[0]
        else:
            out[(rel, part)] = "yes" + ("; " + "; ".join(facts) if facts else "")
    return out, failed


def table(out):
    releases = sorted({rel for rel, _ in out}, key=lambda r: int(r.split(".")[1]))
    lines = ["| Go | " + " | ".join(h for _, h in PARTS) + " |", "|---" * (len(PARTS) + 1) + "|"]
    for rel in releases:
        row = [out.get((rel, p), "not run") for p, _ in PARTS]
        lines.append(f"| {rel[2:]} | " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.environ.get("GOSCOPE_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--xml", help="a saved report of goscope_release_tests -r=xml")
    ap.add_argument("--write", action="store_true", help="put the table into docs/go-support.md")
    a = ap.parse_args()
    if a.xml:
        try:
            report = open(a.xml, encoding="utf-8").read()
        except OSError as e:
            print(f"go-support-table: {e}", file=sys.stderr)
            return 2
    else:
        report = run_tests(os.path.abspath(a.build))
    try:
        out, failed = cells(report)
    except ET.ParseError as e:
        print(f"go-support-table: not a doctest XML report: {e}", file=sys.stderr)
        return 2
    if not out:
        print("go-support-table: the report has no release-contract test", file=sys.stderr)
        return 2
    t = table(out)
    print(t)
    if a.write:
        doc = open(DOC, encoding="utf-8").read()
        if BEGIN not in doc or END not in doc:
            print(f"go-support-table: {DOC} has no markers", file=sys.stderr)
            return 2
        stamp = (f"Made {datetime.date.today().isoformat()} by `scripts/go-support-table.py --write` from one run "
                 "of the release-contract tests (tests/release/); each cell is what that test checked.\n\n")
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        open(DOC, "w", encoding="utf-8").write(head + BEGIN + "\n" + stamp + t + "\n" + END + tail)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
