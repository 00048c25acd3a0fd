package policy

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestInputIsDocumented: every field of Input, at any depth, is in the input table of
// docs/policy.md: a row naming its path, or one whose first cell names its parent
// (`stacks[].options`) and which names the field.
func TestInputIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ cell, line string }
	var rows []row
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "| `") {
			cell, _, _ := strings.Cut(strings.TrimPrefix(l, "| "), " |")
			rows = append(rows, row{cell, l})
		}
	}
	n := 0
	walkFields(reflect.TypeFor[Input](), "", func(parent, name string) {
		n++
		for _, r := range rows {
			if strings.Contains(r.cell, "`"+parent+name+"`") || strings.Contains(r.cell, "`"+parent+name+"[]`") ||
				parent != "" && strings.Contains(r.cell, "`"+strings.TrimSuffix(parent, ".")) && strings.Contains(r.line, "`"+name+"`") {
				return
			}
		}
		t.Errorf("input field %s%s is not in docs/policy.md's input table", parent, name)
	})
	if n < 40 {
		t.Errorf("walked %d fields: is Input still there?", n)
	}
}

// walkFields calls f with each JSON field of typ (structs, slices of structs, pointers
// followed), its parent's path ("stacks[].") and its name.
func walkFields(typ reflect.Type, parent string, f func(parent, name string)) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	for i := range typ.NumField() {
		fl := typ.Field(i)
		name, _, _ := strings.Cut(fl.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		f(parent, name)
		ft := fl.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			walkFields(ft, parent+name+".", f)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			walkFields(ft.Elem(), parent+name+"[].", f)
		}
	}
}
