package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// terminalPrinters are the packages that print to a terminal (or a CI log) what a
// template, a config, CloudFormation or CDK says: they print through internal/printer,
// the terminal's one printer, never with fmt or io directly, so no value can forge a line
// (a GitHub workflow command such as ::error::) or send an escape sequence.
var terminalPrinters = []string{"cmd/cairn", "internal/follow", "internal/diff"}

// rawPrints are the calls that write to a terminal without the printer.
var rawPrints = map[string][]string{
	"fmt": {"Print", "Printf", "Println", "Fprint", "Fprintf", "Fprintln"},
	"io":  {"WriteString"},
}

// rawPrintsIn lists the calls of src (a Go file named name) that print with fmt or io
// anything but constant text.
func rawPrintsIn(name string, src any) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok || !slices.Contains(rawPrints[pkg.Name], sel.Sel.Name) {
			return true
		}
		args := call.Args
		if strings.HasPrefix(sel.Sel.Name, "F") || pkg.Name == "io" {
			args = args[min(1, len(args)):]
		}
		for _, a := range args {
			if !constantText(a) {
				out = append(out, fmt.Sprintf("%s: %s.%s prints %s raw: print it with printer.Fprintf (or printer.Lines for text of lines)", fset.Position(call.Pos()), pkg.Name, sel.Sel.Name, types(a)))
				break
			}
		}
		return true
	})
	return out, nil
}

// constantText reports whether e is a literal, or literals joined with +.
func constantText(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.BinaryExpr:
		return e.Op == token.ADD && constantText(e.X) && constantText(e.Y)
	case *ast.ParenExpr:
		return constantText(e.X)
	}
	return false
}

// types names an argument for the message.
func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return types(e.X) + "." + e.Sel.Name
	case *ast.CallExpr:
		return types(e.Fun) + "(...)"
	}
	return "a value"
}

// TestTerminalPrintsGoThroughThePrinter: see terminalPrinters.
func TestTerminalPrintsGoThroughThePrinter(t *testing.T) {
	root, files := trackedFiles(t)
	checked := 0
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || !under(filepath.ToSlash(filepath.Dir(f)), terminalPrinters...) {
			continue
		}
		checked++
		got, err := rawPrintsIn(filepath.Join(root, f), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range got {
			t.Error(strings.TrimPrefix(v, root+string(filepath.Separator)))
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d files of %v: are they still there?", checked, terminalPrinters)
	}
}

// TestRawPrintsFindsWhatTheRuleForbids checks the rule itself, on made-up code.
func TestRawPrintsFindsWhatTheRuleForbids(t *testing.T) {
	src := `package main

func f(w io.Writer, reason string, err error) {
	fmt.Fprintf(w, "reason: %s\n", reason)
	fmt.Fprintln(w, err)
	fmt.Println("a " + reason)
	io.WriteString(w, reason)
	fmt.Fprintf(w, "STACK\tSTATUS\n")
	fmt.Fprintln(w, "constant " + "text")
	fmt.Fprintln(w)
	printer.Fprintf(w, "reason: %s\n", reason)
	_ = fmt.Sprintf("%s", reason)
}
`
	got, err := rawPrintsIn("f.go", src)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"f.go:4:2: fmt.Fprintf prints reason raw", "f.go:5:2: fmt.Fprintln prints err raw", "f.go:6:2: fmt.Println prints a value raw", "f.go:7:2: io.WriteString prints reason raw"}
	if len(got) != len(want) {
		t.Fatalf("got %d:\n%s\nwant %d: %v", len(got), strings.Join(got, "\n"), len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("got %s, want %s...", got[i], want[i])
		}
	}
}
