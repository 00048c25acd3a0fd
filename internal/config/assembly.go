package config

import (
	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/assembly"
)

// assembly loads a bundle holding a CDK cloud assembly: the assembly alone (overlay nil),
// or with the cairn.yaml naming it (overlay, its root mapping). internal/assembly makes
// the config document of the assembly's stacks and cairn.yaml's keys, which is validated
// as any config, lookups and templates included; each stack keeps the assembly's facts
// the document does not hold (Stack.Assembly).
func (l *loader) assembly(o LoadOptions, overlay *yaml.Node) *Config {
	ac, errs := assembly.Document(l.b.FS, l.file, overlay, o.Deployment)
	for _, e := range errs {
		l.errs = append(l.errs, &Error{File: e.File, Line: e.Line, Col: e.Col, Key: e.Key, Msg: e.Msg})
	}
	if ac == nil {
		return nil
	}
	c := l.loadRoot(o, ac.Doc)
	if c != nil {
		for _, s := range c.Stacks {
			s.Assembly = ac.Stacks[s.Name]
		}
	}
	return c
}
