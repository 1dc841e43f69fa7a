// gosigs prints the signature of every function and method declared in a Go
// package directory, one per line, in the format goscope derives from DWARF
// (src/binary/go_signature.hpp), so that a test can compare the two:
//
//	main.add(x int, y int) int
//	main.(*Server).Handle(s *main.Server, req main.Request) (main.Response, error)
//	main.divmod(a int, b int) (q int, r int)
//
// Conventions, chosen to match what Go 1.19 writes into DWARF:
//   - the receiver is the first parameter; parameters are never grouped;
//   - parameters (receivers included) that are unnamed or named `_` are left
//     out: the compiler emits no DWARF entry for them;
//   - results: unnamed ones print as bare types; named ones as `name type`,
//     with `_` for results declared `_` (DWARF's `~bN`);
//   - types are spelled as the linker names them: package-qualified by import
//     path (`main.Point`, `*net/http.Request`, `io/fs.FileMode` for the alias
//     os.FileMode), `uint8` for byte, `int32` for rune, `interface {}` for any,
//     `struct { A int "tag"; main.P }` (unexported field and method names
//     qualified: `struct { main.name string }`), `func(int, ...string) (bool, error)`;
//   - generic functions print with their type parameter names in the name and
//     the types, `main.Map[T,U](xs []T, f func(T) U) []U`, methods of generic
//     types as `main.(*Stack[T]).Push(s *main.Stack[T], v T)`. DWARF holds
//     shape instantiations (`main.Map[go.shape.int_0,go.shape.string_1]`)
//     instead; the test maps shape _N to the Nth type parameter name;
//   - `func init()` prints as main.init.0, main.init.1, ... in file order;
//     closures (main.main.func1 in DWARF) are not declarations and are not printed.
//
// Usage: gosigs DIR
package main

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"sort"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gosigs DIR")
		os.Exit(2)
	}
	lines, err := signatures(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gosigs:", err)
		os.Exit(1)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}

func signatures(dir string) ([]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		return nil, err
	}
	if len(pkgs) != 1 {
		return nil, fmt.Errorf("%s: want exactly one package, found %d", dir, len(pkgs))
	}
	var files []*ast.File
	var names []string
	for _, p := range pkgs {
		for name := range p.Files {
			names = append(names, name)
		}
		sort.Strings(names) // go build compiles files in name order: init.N follows it
		for _, name := range names {
			files = append(files, p.Files[name])
		}
	}

	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	check := func(imp types.Importer) error {
		conf := types.Config{Importer: imp}
		_, err := conf.Check("main", fset, files, info)
		return err
	}
	// Export data of the standard library is fast when installed; type-check
	// imports from source otherwise (offline either way).
	if err := check(importer.Default()); err != nil {
		info.Defs = map[*ast.Ident]types.Object{}
		if err2 := check(importer.ForCompiler(fset, "source", nil)); err2 != nil {
			return nil, err2
		}
	}

	var out []string
	inits := 0
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name == "_" {
				continue
			}
			fn, ok := info.Defs[fd.Name].(*types.Func)
			if !ok {
				continue
			}
			name := funcName(fn)
			if fd.Recv == nil && fd.Name.Name == "init" {
				name = "main.init." + strconv.Itoa(inits)
				inits++
			}
			out = append(out, name+signature(fn.Type().(*types.Signature)))
		}
	}
	return out, nil
}

// funcName is the symbol name: main.f, main.T.m, main.(*T).m, main.Map[T,U],
// main.(*Stack[T]).Push.
func funcName(fn *types.Func) string {
	sig := fn.Type().(*types.Signature)
	pkg := pkgName(fn.Pkg())
	if sig.Recv() == nil {
		return pkg + "." + fn.Name() + typeParamList(sig.TypeParams())
	}
	rt := sig.Recv().Type()
	ptr := false
	if p, ok := rt.(*types.Pointer); ok {
		rt, ptr = p.Elem(), true
	}
	named := rt.(*types.Named)
	recv := named.Obj().Name() + typeParamList(sig.RecvTypeParams())
	if ptr {
		return pkg + ".(*" + recv + ")." + fn.Name()
	}
	return pkg + "." + recv + "." + fn.Name()
}

func typeParamList(l *types.TypeParamList) string {
	if l.Len() == 0 {
		return ""
	}
	var ns []string
	for i := 0; i < l.Len(); i++ {
		ns = append(ns, l.At(i).Obj().Name())
	}
	return "[" + strings.Join(ns, ",") + "]"
}

func signature(sig *types.Signature) string {
	var params []string
	add := func(v *types.Var) {
		if v.Name() == "" || v.Name() == "_" { // no DWARF entry for these
			return
		}
		params = append(params, v.Name()+" "+typeString(v.Type()))
	}
	if sig.Recv() != nil {
		add(sig.Recv())
	}
	for i := 0; i < sig.Params().Len(); i++ {
		add(sig.Params().At(i))
	}
	s := "(" + strings.Join(params, ", ") + ")"

	res := sig.Results()
	if res.Len() == 0 {
		return s
	}
	named := res.At(0).Name() != ""
	if !named && res.Len() == 1 {
		return s + " " + typeString(res.At(0).Type())
	}
	var rs []string
	for i := 0; i < res.Len(); i++ {
		r := res.At(i)
		if named {
			rs = append(rs, r.Name()+" "+typeString(r.Type()))
		} else {
			rs = append(rs, typeString(r.Type()))
		}
	}
	return s + " (" + strings.Join(rs, ", ") + ")"
}

func pkgName(p *types.Package) string {
	if p.Path() == "main" || p.Name() == "main" {
		return "main"
	}
	return p.Path()
}

var basicNames = map[types.BasicKind]string{
	types.Bool: "bool", types.Int: "int", types.Int8: "int8", types.Int16: "int16",
	types.Int32: "int32", types.Int64: "int64", types.Uint: "uint", types.Uint8: "uint8",
	types.Uint16: "uint16", types.Uint32: "uint32", types.Uint64: "uint64",
	types.Uintptr: "uintptr", types.Float32: "float32", types.Float64: "float64",
	types.Complex64: "complex64", types.Complex128: "complex128", types.String: "string",
	types.UnsafePointer: "unsafe.Pointer",
}

// typeString spells a type the way Go's linker names it in DWARF (the
// runtime's type string with full import paths).
func typeString(t types.Type) string {
	switch t := t.(type) {
	case *types.Basic:
		if n, ok := basicNames[t.Kind()]; ok {
			return n
		}
		return t.Name()
	case *types.Pointer:
		return "*" + typeString(t.Elem())
	case *types.Slice:
		return "[]" + typeString(t.Elem())
	case *types.Array:
		return "[" + strconv.FormatInt(t.Len(), 10) + "]" + typeString(t.Elem())
	case *types.Map:
		return "map[" + typeString(t.Key()) + "]" + typeString(t.Elem())
	case *types.Chan:
		switch t.Dir() {
		case types.SendOnly:
			return "chan<- " + typeString(t.Elem())
		case types.RecvOnly:
			return "<-chan " + typeString(t.Elem())
		}
		if c, ok := t.Elem().(*types.Chan); ok && c.Dir() == types.RecvOnly {
			return "chan (" + typeString(c) + ")"
		}
		return "chan " + typeString(t.Elem())
	case *types.Signature:
		return "func" + funcTypeString(t)
	case *types.Interface:
		if t.NumMethods() == 0 {
			return "interface {}"
		}
		var ms []string
		for i := 0; i < t.NumMethods(); i++ {
			m := t.Method(i)
			ms = append(ms, memberName(m)+funcTypeString(m.Type().(*types.Signature)))
		}
		return "interface { " + strings.Join(ms, "; ") + " }"
	case *types.Struct:
		if t.NumFields() == 0 {
			return "struct {}"
		}
		var fs []string
		for i := 0; i < t.NumFields(); i++ {
			f := t.Field(i)
			s := typeString(f.Type())
			if !f.Embedded() {
				s = memberName(f) + " " + s
			}
			if tag := t.Tag(i); tag != "" {
				s += " " + strconv.Quote(tag)
			}
			fs = append(fs, s)
		}
		return "struct { " + strings.Join(fs, "; ") + " }"
	case *types.Named:
		name := t.Obj().Name()
		if t.Obj().Pkg() != nil { // nil: the predeclared error
			name = pkgName(t.Obj().Pkg()) + "." + name
		}
		if args := t.TypeArgs(); args.Len() > 0 {
			var as []string
			for i := 0; i < args.Len(); i++ {
				as = append(as, typeString(args.At(i)))
			}
			name += "[" + strings.Join(as, ",") + "]"
		}
		return name
	case *types.TypeParam:
		return t.Obj().Name()
	}
	return t.String()
}

// memberName qualifies unexported field and method names with their
// package, as the linker's type names do: `struct { main.name string }`.
func memberName(o types.Object) string {
	if o.Exported() || o.Pkg() == nil {
		return o.Name()
	}
	return pkgName(o.Pkg()) + "." + o.Name()
}

// funcTypeString is a func type without the `func` keyword: parameter types
// only, `(int, ...string) (bool, error)`.
func funcTypeString(sig *types.Signature) string {
	var ps []string
	for i := 0; i < sig.Params().Len(); i++ {
		t := sig.Params().At(i).Type()
		if sig.Variadic() && i == sig.Params().Len()-1 {
			ps = append(ps, "..."+typeString(t.(*types.Slice).Elem()))
			continue
		}
		ps = append(ps, typeString(t))
	}
	s := "(" + strings.Join(ps, ", ") + ")"
	switch sig.Results().Len() {
	case 0:
		return s
	case 1:
		return s + " " + typeString(sig.Results().At(0).Type())
	}
	var rs []string
	for i := 0; i < sig.Results().Len(); i++ {
		rs = append(rs, typeString(sig.Results().At(i).Type()))
	}
	return s + " (" + strings.Join(rs, ", ") + ")"
}
