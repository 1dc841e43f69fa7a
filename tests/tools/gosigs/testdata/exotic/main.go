// exotic exercises the corners of Go 1.19's DWARF naming that gosigs must
// reproduce: unnamed and blank parameters, receivers and results; imported,
// aliased, anonymous and generic types; init functions. Every function is
// kept out of line and reachable so that it is in the binary.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"time"
	"unsafe"
)

type MyInt int

type P struct{ X int }

type Pair[K comparable, V any] struct {
	K K
	V V
}

type hidden interface{ m() int }

func (p P) m() int { return p.X }

var sink []any

func init() { sink = append(sink, 1) }

//go:noinline
func (MyInt) Unnamed(int, string) bool { return true }

//go:noinline
func (_ *P) Blank(_ string, s string) (_ int, err error) { return len(s), nil }

//go:noinline
func (m MyInt) Double() MyInt { return m * 2 }

//go:noinline
func basics(b byte, r rune, a any, u uintptr, c complex64, z complex128, up unsafe.Pointer) (n int, ok bool) {
	return int(b) + int(r), a != nil && u > 0 && c != 0 && z != 0 && up != nil
}

//go:noinline
func imported(f *os.File, d time.Duration, m os.FileMode, buf *bytes.Buffer, r io.Reader) error {
	return nil
}

//go:noinline
func anonymous(s struct {
	A    int `json:"a"`
	name string
	P
}, e struct{}, h hidden, i interface{ M(int) int }) int {
	if h != nil {
		return h.m()
	}
	return s.A + len(s.name)
}

//go:noinline
func channels(a chan int, b <-chan string, c chan<- []byte, d chan (<-chan int)) {}

//go:noinline
func funcs(f func(int, ...string) (bool, error), g func() func() int, h func(...any)) func(int) int {
	return nil
}

//go:noinline
func containers(a [4]P, pp **P, m map[string][]int, mm map[P]map[int]bool, arr [2][3]int8) int {
	return len(a) + len(m) + len(mm) + len(arr)
}

//go:noinline
func Keys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

//go:noinline
func (p Pair[K, V]) Swap(extra ...V) (Pair[K, V], int) { return p, len(extra) }

//go:noinline
func (p *Pair[A, B]) Set(k A, v B) { p.K, p.V = k, v }

//go:noinline
func usePair(p Pair[string, int], q *Pair[int, []string]) int { return p.V + len(q.V) }

//go:noinline
func noResults() {}

func init() { sink = append(sink, 2) }

func main() {
	var m MyInt = 3
	p := &P{1}
	fmt.Println(m.Unnamed(1, ""), m.Double())
	fmt.Println(p.Blank("", "x"))
	fmt.Println(basics(1, 'x', 1, 1, 1, 1, unsafe.Pointer(p)))
	fmt.Println(imported(os.Stdout, time.Second, 0644, &bytes.Buffer{}, os.Stdin))
	fmt.Println(anonymous(struct {
		A    int `json:"a"`
		name string
		P
	}{}, struct{}{}, *p, nil))
	channels(nil, nil, nil, nil)
	fmt.Println(funcs(nil, nil, nil) == nil)
	fmt.Println(containers([4]P{}, &p, nil, nil, [2][3]int8{}))
	fmt.Println(Keys(map[string]int{"a": 1}), Keys(map[int]bool{1: true}))
	pr := Pair[string, int]{"a", 1}
	fmt.Println(pr.Swap(1, 2))
	pr.Set("b", 2)
	q := &Pair[int, []string]{}
	q.Set(1, nil)
	fmt.Println(usePair(pr, q))
	noResults()
	fmt.Println(len(sink))
}
