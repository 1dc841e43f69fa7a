// Command hotloop is the per-hit cost benchmark's target: main calls
// main.work in a tight loop, and work calls main.step. Because work calls
// another function it has a frame and therefore Go's stack-check prologue
// (`cmp 0x10(%r14),%rsp; jbe ...`): goscope places its entry probe on the
// jbe (probe_kind stack-check-branch), bpftrace on the entry.
//
// With --leaf the loop calls main.leafWork instead: a leaf without a stack
// check (no call, no frame), whose entry a uprobe single-steps; goscope
// counts it at its one call site in main (probe_kind call-sites), bpftrace
// at the entry.
//
// Flags:
//
//	--out FILE     append one line a second to FILE (default: stdout):
//	               "hotloop: t=<unix ns> n=<calls so far> ops=<calls in the last second>"
//	--duration S   exit (status 0) after S seconds; 0 = run forever
//	--leaf         call main.leafWork in the loop, not main.work
//
// At exit it prints "hotloop: total=<calls>" (approximate: the loop runs on
// while the line is written).
package main

import (
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"
)

var calls int64

//go:noinline
func step(x int64) int64 { return x + 1 }

//go:noinline
func work() {
	atomic.StoreInt64(&calls, step(atomic.LoadInt64(&calls)))
}

// A leaf: loads, adds and stores (xchg) without calling anything.
//
//go:noinline
func leafWork() {
	atomic.StoreInt64(&calls, atomic.LoadInt64(&calls)+1)
}

func main() {
	out := flag.String("out", "", "append the report lines to this file (default stdout)")
	duration := flag.Int("duration", 0, "exit after this many seconds (0 = forever)")
	leaf := flag.Bool("leaf", false, "call main.leafWork (a leaf without a stack check) in the loop")
	flag.Parse()

	w := os.Stdout
	if *out != "" {
		f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hotloop:", err)
			os.Exit(1)
		}
		w = f
	}
	go func() {
		prev, prevT := atomic.LoadInt64(&calls), time.Now()
		ticker := time.NewTicker(time.Second)
		for seconds := 1; ; seconds++ {
			now := <-ticker.C
			n := atomic.LoadInt64(&calls)
			// Scale to exactly one second: the ticker may fire late on a busy machine.
			ops := float64(n-prev) / now.Sub(prevT).Seconds()
			fmt.Fprintf(w, "hotloop: t=%d n=%d ops=%.0f\n", now.UnixNano(), n, ops)
			prev, prevT = n, now
			if *duration > 0 && seconds >= *duration {
				fmt.Fprintf(w, "hotloop: total=%d\n", atomic.LoadInt64(&calls))
				os.Exit(0)
			}
		}
	}()
	if *leaf {
		for {
			leafWork()
		}
	}
	for {
		work()
	}
}
