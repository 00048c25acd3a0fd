package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	keepEnv(t)       // the demo exports the emulator's environment into the process
	t.Chdir("../..") // make demo runs from the repository root
	var out, errOut bytes.Buffer
	if code := run([]string{"demo"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	got := out.String()
	section := func(title string) string {
		_, rest, ok := strings.Cut(got, title)
		if !ok {
			t.Fatalf("demo output lacks the section %q:\n%s", title, got)
		}
		rest, _, _ = strings.Cut(rest, "\n==> ")
		return rest
	}
	for _, tt := range []struct {
		section string
		want    []string // regular expressions, each matching a line
		notWant []string
	}{
		{"validating testdata/bundles/webshop", []string{
			`^validated testdata/bundles/webshop: 5 stacks in namespace "shop"`,
			`^  1\. network   shop-network$`,
			`^  5\. edge      shop-edge      <- service$`,
		}, nil},
		{"(version 1): its database is protected", []string{`^network +shop-network +create`, `^  Add +Vpc +AWS::EC2::VPC`, `^database +shop-database +create +created at apply$`, `^plan id: \S+$`}, nil},
		{"exactly the reviewed change sets are executed", []string{`^run \S+ succeeded in \S+: 5 created, 0 updated, 0 deleted, 0 unchanged, 0 failed$`, `^  \d\d:\d\d  edge +create +done$`, `^  \d\d:\d\d  database +create +done$`}, nil},
		{"stacks and their outputs", []string{
			`^shop-network +CREATE_COMPLETE +PrivateSubnetIds=subnet-`,
			`^shop-service +CREATE_COMPLETE +ListenerPort=\d+ `,
			`^shop-edge +CREATE_COMPLETE `,
		}, nil},
		{"ports allocated by Custom::PortAllocation", []string{`^default +\d+ +shop-service +Port `}, nil},
		{"planning version 2", []string{`^guard: guard relaxed: deletion_policy.max_deletions 1 → 2$`, `^cache +shop-cache +update`, `^plan id: \S+$`}, nil},
		{"of version 2", []string{`^run \S+ succeeded in \S+: 0 created, 1 updated, 2 deleted, 2 unchanged, 0 failed$`, `^  \d\d:\d\d  cache +update +done$`, `^  \d\d:\d\d  service +delete +done$`, `^  \d\d:\d\d  network +none +unchanged`}, nil},
		{"stacks after version 2", []string{`^shop-cache +UPDATE_COMPLETE `, `^shop-network +CREATE_COMPLETE `}, []string{"shop-service", "shop-edge"}},
		{"(dependents first)", []string{`^  1\. shop-edge +deleted at `, `^  2\. shop-service +deleted at `}, nil},
		{"ports after version 2", []string{`^no port allocations in any pool`}, nil},
		{"checking for drift", []string{`set to 10.9.0.0/16 out of band`, `^webshop +network +shop-network +DRIFTED +Vpc /CidrBlock: 10.20.0.0/16 -> 10.9.0.0/16$`, `^webshop +cache +shop-cache +IN_SYNC`}, nil},
		{"run reports", []string{`^  s3://cairn-000000000000-us-east-1/runs/webshop/\S+\.md$`,
			// The way on is the README's tour: a push alone would be refused (the database is protected).
			`^demo finished in \S+s\. To explore by hand, follow the README's quick tour: bin/cairn local up &, bin/cairn local wait, .*, then bin/cairn plan testdata/bundles/webshop --deployment shop --wait and bin/cairn approve$`}, []string{"then cairn push"}},
	} {
		text := section(tt.section)
		for _, re := range tt.want {
			if !regexp.MustCompile("(?m)" + re).MatchString(text) {
				t.Errorf("section %q lacks a line matching %s:\n%s", tt.section, re, text)
			}
		}
		for _, s := range tt.notWant {
			if strings.Contains(text, s) {
				t.Errorf("section %q names %s:\n%s", tt.section, s, text)
			}
		}
	}
	if n := strings.Count(section("run reports"), ".md\n"); n != 4 {
		t.Errorf("%d run reports, want four: each version's plan run and its apply run", n)
	}
}
