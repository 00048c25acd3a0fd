package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	t.Chdir("../..") // make demo runs from the repository root
	var out, errOut bytes.Buffer
	if code := run([]string{"demo"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{
		`validated testdata/bundles/webshop: 5 stacks in namespace "shop"`,
		"  1. network   shop-network\n",
		"  5. edge      shop-edge      <- service\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
