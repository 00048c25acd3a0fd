// Package benchbundle generates the large bundles the benchmarks load, schedule and deploy:
// n stacks over four templates, each depending on 0 to 6 earlier stacks (3 on average),
// half through requires and half through output lookups, so the graph is acyclic and
// about as dense as a large real platform. The seed is fixed and each stack's draws depend
// only on the stacks before it, so the first k stacks of a bundle of n are the stacks of a
// bundle of k, and figures compare between runs.
package benchbundle

import (
	"archive/zip"
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Template declares up to three inputs (with defaults, so a stack may set fewer) and an
// output every stack can read.
const Template = `AWSTemplateFormatVersion: "2010-09-09"
Parameters:
  In1: {Type: String, Default: ""}
  In2: {Type: String, Default: ""}
  In3: {Type: String, Default: ""}
  Size: {Type: Number}
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      Tags:
        - {Key: in, Value: !Join [",", [!Ref In1, !Ref In2, !Ref In3]]}
Outputs:
  Arn: {Value: !GetAtt Queue.Arn}
  Url: {Value: !Ref Queue}
`

// Stack is one generated stack: its dependencies by index, as requires or as output lookups.
type Stack struct {
	Name     string
	Template int // 0 to 3
	Requires []int
	Lookups  []int // ${output stack-NNNNN::Url}, at most three
}

// Deps returns every dependency of the stack, sorted.
func (s Stack) Deps() []int {
	return slices.Sorted(slices.Values(append(slices.Clone(s.Requires), s.Lookups...)))
}

// Name is the config name of stack i.
func Name(i int) string { return fmt.Sprintf("stack-%05d", i) }

// Stacks generates n stacks.
func Stacks(n int) []Stack {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]Stack, n)
	for i := range n {
		s := Stack{Name: Name(i), Template: i % 4}
		deps := map[int]bool{}
		if i > 0 {
			for range r.IntN(7) {
				deps[r.IntN(i)] = true
			}
		}
		for _, d := range slices.Sorted(maps.Keys(deps)) {
			if len(s.Lookups) < 3 && r.IntN(2) == 0 {
				s.Lookups = append(s.Lookups, d)
				continue
			}
			s.Requires = append(s.Requires, d)
		}
		out[i] = s
	}
	return out
}

// Config returns the cairn.yaml of stacks in namespace.
func Config(namespace string, stacks []Stack) string {
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "namespace: %s\ntags: {team: platform}\nstacks:\n", namespace)
	for i, s := range stacks {
		fmt.Fprintf(&cfg, "  - name: %s\n    template_path: templates/t%d.yaml\n", s.Name, s.Template)
		if len(s.Requires) > 0 {
			names := make([]string, len(s.Requires))
			for j, d := range s.Requires {
				names[j] = Name(d)
			}
			fmt.Fprintf(&cfg, "    requires: [%s]\n", strings.Join(names, ", "))
		}
		fmt.Fprintf(&cfg, "    parameters:\n      Size: %q\n", fmt.Sprint(i%100))
		for j, d := range s.Lookups {
			fmt.Fprintf(&cfg, "      In%d: ${output %s::Url}\n", j+1, Name(d))
		}
	}
	return cfg.String()
}

// Files returns the files of the bundle of n generated stacks in namespace, by path.
func Files(namespace string, n int) map[string]string {
	files := map[string]string{"cairn.yaml": Config(namespace, Stacks(n))}
	for i := range 4 {
		files[fmt.Sprintf("templates/t%d.yaml", i)] = Template + fmt.Sprintf("Description: template %d\n", i)
	}
	return files
}

// DoublingNested returns the files of the hostile bundle of issue 26: one stack app in
// namespace whose template (templates/app.yaml) nests t1.yaml twice, each ti.yaml nesting
// t(i+1).yaml twice, down to a queue at depth levels: 2^(levels+1)-2 nested stacks from
// levels+1 tiny templates.
func DoublingNested(namespace string, levels int) map[string]string {
	name := func(i int) string {
		if i == 0 {
			return "app.yaml"
		}
		return fmt.Sprintf("t%d.yaml", i)
	}
	files := map[string]string{"cairn.yaml": "namespace: " + namespace + "\nstacks:\n  - name: app\n    template_path: templates/app.yaml\n",
		"templates/" + name(levels): "Resources:\n  Q: {Type: AWS::SQS::Queue}\n"}
	for i := range levels {
		files["templates/"+name(i)] = fmt.Sprintf("Resources:\n  A: {Type: AWS::CloudFormation::Stack, Properties: {TemplateURL: %s}}\n  B: {Type: AWS::CloudFormation::Stack, Properties: {TemplateURL: %s}}\n", name(i+1), name(i+1))
	}
	return files
}

// Write writes the bundle of n generated stacks in namespace into dir.
func Write(dir, namespace string, n int) error {
	return WriteFiles(dir, Files(namespace, n))
}

// WriteFiles writes files (by slash-separated path) into dir.
func WriteFiles(dir string, files map[string]string) error {
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Zip returns the zipped bundle of n generated stacks in namespace, and how many
// dependencies they have.
func Zip(namespace string, n int) (data []byte, edges int, err error) {
	for _, s := range Stacks(n) {
		edges += len(s.Requires) + len(s.Lookups)
	}
	files := Files(namespace, n)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		w, err := zw.Create(name)
		if err != nil {
			return nil, 0, err
		}
		if _, err := w.Write([]byte(files[name])); err != nil {
			return nil, 0, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), edges, nil
}
