// Command tracefeed is the trace-throughput benchmark's producer: G
// goroutines call main.emit(n int, name string) int in a tight loop, so a
// tracer gets as many events as the kernel's uprobes let through. emit
// calls main.mix, so it has a frame and Go's stack-check prologue (goscope's
// entry probe goes on the cheap, emulated `jbe`); its arguments and result
// are in registers (Go's register ABI): RAX = n, RBX/RCX = name's pointer
// and length, RAX = the result.
//
// Flags:
//
//	--goroutines G  callers (default 2)
//	--rate N        calls per second in all, paced once a millisecond
//	                (0, the default: as fast as they go)
//	--out FILE      append one line a second to FILE (default stdout):
//	                "tracefeed: t=<unix ns> n=<calls so far> ops=<calls in the last second>"
//	--duration S    exit (status 0) after S seconds; 0 = run forever
//	--sites         the callers call main.emitLeaf(n int, name string) int
//	                instead: a leaf (no stack check), so goscope probes its
//	                call sites, and each caller's loop is shaped so that the
//	                instruction after the call is the loop's `jmp` back. Both
//	                ends of a call are then instructions the kernel emulates
//	                (the `call`, the `jmp`: ~0.4 us a trap) instead of a
//	                single-stepped RET (~4-17 us): the shape for a million
//	                events a second (bench/trace_throughput.sh SITES=1).
//	                Unthrottled only (--rate is ignored).
package main

import (
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"
)

var calls int64

var names = []string{"alpha", "beta", "gamma", "delta"}

// The same names in an array: names4[n&3] needs no bounds check, whose
// branch would rotate feedSites' loop (the top after the call).
var names4 = [4]string{"alpha", "beta", "gamma", "delta"}

//go:noinline
func mix(n int) int { return n*31 + 7 }

//go:noinline
func emit(n int, name string) int {
	return mix(n) + len(name)
}

// emitLeaf is emit without the call: a leaf, probed at its call sites. It
// counts its own calls (an atomic add is an instruction, not a call), so
// that nothing after the call in feedSites needs a register back.
//
//go:noinline
func emitLeaf(n int, name string) int {
	atomic.AddInt64(&calls, 1)
	return n*31 + 7 + len(name)
}

// feedSites calls emitLeaf for ever. n comes from memory at the loop's top
// and the result is dropped, so no value lives across the call (Go's ABI
// has no callee-saved registers: one would be reloaded right after the
// call, a single-stepped `mov`): the instruction after the `call` is the
// `jmp` back to the top, which the kernel emulates.
//
//go:noinline
func feedSites() {
	for {
		n := int(atomic.LoadInt64(&calls))
		emitLeaf(n, names4[n&3])
	}
}

func main() {
	goroutines := flag.Int("goroutines", 2, "callers")
	rate := flag.Int("rate", 0, "calls per second in all (0: unthrottled)")
	out := flag.String("out", "", "append the report lines to this file (default stdout)")
	duration := flag.Int("duration", 0, "exit after this many seconds (0 = forever)")
	sites := flag.Bool("sites", false, "call main.emitLeaf, probed at call sites whose next instruction is a jmp")
	flag.Parse()

	w := os.Stdout
	if *out != "" {
		f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tracefeed:", err)
			os.Exit(1)
		}
		w = f
	}
	for g := 0; g < *goroutines; g++ {
		if *sites {
			go feedSites()
			continue
		}
		go func(g int) {
			sink := 0
			if *rate <= 0 {
				for i := 0; ; i++ {
					sink += emit(i, names[i&3])
					atomic.AddInt64(&calls, 1)
				}
			}
			// Paced in 1 ms ticks, the remainder carried over; a slowed
			// caller does not catch up later.
			perMs := float64(*rate) / float64(*goroutines) / 1000
			owed := 0.0
			next := time.Now()
			for i := 0; ; {
				owed += perMs
				for ; owed >= 1; owed-- {
					sink += emit(i, names[i&3])
					atomic.AddInt64(&calls, 1)
					i++
				}
				next = next.Add(time.Millisecond)
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				} else if d < -10*time.Millisecond {
					next = time.Now()
				}
			}
		}(g)
	}
	prev, prevT := atomic.LoadInt64(&calls), time.Now()
	ticker := time.NewTicker(time.Second)
	for seconds := 1; ; seconds++ {
		now := <-ticker.C
		n := atomic.LoadInt64(&calls)
		ops := float64(n-prev) / now.Sub(prevT).Seconds()
		fmt.Fprintf(w, "tracefeed: t=%d n=%d ops=%.0f\n", now.UnixNano(), n, ops)
		prev, prevT = n, now
		if *duration > 0 && seconds >= *duration {
			os.Exit(0)
		}
	}
}
