package repocheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The size budgets: a file or a function a reader can hold in mind. They hold for the Go
// code of the product, the emulator and infra (the files git tracks, without tests and
// testdata): a test's table may be as long as its cases.
const (
	fileBudget = 600 // lines of a non-test .go file
	funcBudget = 120 // lines of a function or method, from func to its closing brace
)

// longFiles are the files over fileBudget when the budget came, with their size then. The
// list only shrinks: a listed file may not grow, and one back within the budget leaves the
// list (TestSizeBudgets says so).
var longFiles = map[string]int{
	"internal/awslocal/cfnlocal/engine.go":  685,
	"internal/awslocal/cfnlocal/persist.go": 643,
	"internal/run/advance.go":               978,
}

// longFuncs are the functions over funcBudget when the budget came, named by their
// package's folder, receiver type and name, with their size then. The list only shrinks,
// as longFiles does.
var longFuncs = map[string]int{
	"internal/awslocal/cfnlocal.Service.beginStep":       171,
	"internal/awslocal/cfnlocal.Service.createChangeSet": 155,
	"internal/awslocal/cfnlocal.Service.finishPhase":     131,
	"internal/awslocal/cfnlocal.evaluator.fn":            268,
}

// lineCount is the number of lines of src, as wc -l counts them but for a last line
// without a newline, which counts too.
func lineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// funcSizes gives the size in lines of each function of src (a Go file named name, in the
// folder dir), keyed "dir.Name" or "dir.Type.Name" for a method. Functions that may repeat
// in a package (init, _) and those of a file with build constraints, which may have a twin
// for other builds, are keyed by the file instead of the folder.
func funcSizes(dir, name string, src any) (map[string]int, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	scope := dir
	if constrained(f) {
		scope = path.Join(dir, path.Base(filepath.ToSlash(name)))
	}
	out := map[string]int{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		key := scope + "." + fd.Name.Name
		if fd.Name.Name == "init" || fd.Name.Name == "_" {
			key = path.Join(dir, path.Base(filepath.ToSlash(name))) + "." + fd.Name.Name
		}
		if fd.Recv != nil && len(fd.Recv.List) > 0 {
			key = scope + "." + receiver(fd.Recv.List[0].Type) + "." + fd.Name.Name
		}
		out[key] = max(out[key], fset.Position(fd.End()).Line-fset.Position(fd.Pos()).Line+1)
	}
	return out, nil
}

// constrained reports whether f has a //go:build line.
func constrained(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "//go:build ") {
				return true
			}
		}
	}
	return false
}

// receiver names a method's receiver type: T of T, *T, T[P] and *T[P].
func receiver(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiver(e.X)
	case *ast.IndexExpr:
		return receiver(e.X)
	case *ast.IndexListExpr:
		return receiver(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}

// overBudget lists what breaks a budget: anything over it that is not allowed, anything
// allowed that grew, and entries of allowed to remove (back within the budget, or gone).
// list names the allow-list for the messages.
func overBudget(sizes map[string]int, budget int, allowed map[string]int, list string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(sizes)) {
		n := sizes[name]
		was, listed := allowed[name]
		switch {
		case n > budget && !listed:
			out = append(out, fmt.Sprintf("%s is %d lines, over the budget of %d: split it by concept (a long list of cases can be a table)", name, n, budget))
		case n > budget && n > was:
			out = append(out, fmt.Sprintf("%s grew from %d to %d lines, over the budget of %d: %s only shrinks; bring it back to %d lines or fewer (better: within the budget)", name, was, n, budget, list, was))
		case n <= budget && listed:
			out = append(out, fmt.Sprintf("%s is %d lines, within the budget of %d: remove it from %s", name, n, budget, list))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(allowed)) {
		if _, ok := sizes[name]; !ok {
			out = append(out, fmt.Sprintf("%s no longer exists: remove it from %s", name, list))
		}
	}
	return out
}

// TestSizeBudgets keeps every file and function within its budget, or at most the size it
// had when the budget came (longFiles, longFuncs).
func TestSizeBudgets(t *testing.T) {
	root, files := trackedFiles(t)
	fileSizes, fnSizes := map[string]int{}, map[string]int{}
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || slices.Contains(strings.Split(f, "/"), "testdata") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		fileSizes[f] = lineCount(src)
		got, err := funcSizes(path.Dir(f), f, src)
		if err != nil {
			t.Fatal(err)
		}
		for k, n := range got {
			fnSizes[k] = max(fnSizes[k], n)
		}
	}
	if len(fileSizes) < 100 {
		t.Fatalf("measured %d Go files: is this the repository?", len(fileSizes))
	}
	for _, v := range overBudget(fileSizes, fileBudget, longFiles, "longFiles") {
		t.Error(v)
	}
	for _, v := range overBudget(fnSizes, funcBudget, longFuncs, "longFuncs") {
		t.Error(v)
	}
}

// TestSizeBudgetsFindWhatTheyForbid checks the rules themselves, on a made-up file and
// made-up allow-lists.
func TestSizeBudgetsFindWhatTheyForbid(t *testing.T) {
	long := func(name string, n int) string { // a function of n lines
		return "func " + name + "() {\n" + strings.Repeat("\t_ = 1\n", n-2) + "}\n"
	}
	src := "//go:build !cairn.lambda\n\npackage p\n\n" + long("short", 5) + long("tooLong", 8) + long("grown", 9) + long("kept", 9) + long("shrunk", 6) +
		"type T[P any] struct{}\n\n" + long("(*T[P]) Method", 7) + long("init", 3)
	got, err := funcSizes("internal/p", "internal/p/p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"internal/p/p.go.short": 5, "internal/p/p.go.tooLong": 8, "internal/p/p.go.grown": 9, "internal/p/p.go.kept": 9,
		"internal/p/p.go.shrunk": 6, "internal/p/p.go.T.Method": 7, "internal/p/p.go.init": 3,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("funcSizes = %v, want %v", got, want)
	}
	if plain, _ := funcSizes("internal/p", "p.go", "package p\n\n"+long("f", 3)); !maps.Equal(plain, map[string]int{"internal/p.f": 3}) {
		t.Errorf("funcSizes without build constraints = %v, want internal/p.f", plain)
	}
	if n := lineCount([]byte(src)); n != strings.Count(src, "\n") {
		t.Errorf("lineCount = %d", n)
	}
	allowed := map[string]int{"internal/p/p.go.grown": 8, "internal/p/p.go.kept": 9, "internal/p/p.go.shrunk": 10, "internal/p/p.go.gone": 9}
	v := overBudget(got, 6, allowed, "longFuncs")
	wantV := []string{
		"internal/p/p.go.T.Method is 7 lines, over the budget of 6",
		"internal/p/p.go.grown grew from 8 to 9 lines",
		"internal/p/p.go.shrunk is 6 lines, within the budget of 6: remove it from longFuncs",
		"internal/p/p.go.tooLong is 8 lines, over the budget of 6",
		"internal/p/p.go.gone no longer exists: remove it from longFuncs",
	}
	if len(v) != len(wantV) {
		t.Fatalf("violations:\n%s\nwant %d: %v", strings.Join(v, "\n"), len(wantV), wantV)
	}
	for i := range wantV {
		if !strings.HasPrefix(v[i], wantV[i]) {
			t.Errorf("violation %d = %q, want %q...", i, v[i], wantV[i])
		}
	}
}
