package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/bundle"
)

// variables reads the config's variables: mapping and the var file (LoadOptions.Vars, or
// the bundle's cairn.vars.yaml), whose values win.
func (l *loader) variables(n *yaml.Node, o LoadOptions) {
	l.vars = map[string]string{}
	if n != nil {
		for _, f := range l.fields(n, "variables", nil) {
			if v, ok := l.scalar(f.v, f.key); ok {
				l.vars[f.name] = v
			}
		}
	}
	data, file := o.Vars, o.VarsFile
	if data == nil {
		body, err := fs.ReadFile(l.b.FS, bundle.VarsName)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				l.errorf(nil, "", "var file %s cannot be read: %v", bundle.VarsName, err)
			}
			return
		}
		data, file = body, filepath.Join(filepath.Dir(l.file), bundle.VarsName)
	}
	if file == "" {
		file = bundle.VarsName
	}
	saved := l.file
	l.file = file // errors of the var file point into it
	defer func() { l.file = saved }()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := 1, strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			fmt.Sscan(m[1], &line)
			msg = m[2]
		}
		l.errs = append(l.errs, &Error{File: file, Line: line, Col: 1, Msg: "invalid YAML: " + msg})
		return
	}
	if len(doc.Content) == 0 {
		return // an empty var file
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		l.errorf(root, "", "a var file must be a mapping of variable names to values, got %s", describe(root))
		return
	}
	for _, f := range l.fields(root, "", nil) {
		if v, ok := l.scalar(f.v, f.key); ok {
			l.vars[f.name] = v
		}
	}
}

// scalar reads a variable's value: a string, number or boolean, as written.
func (l *loader) scalar(n *yaml.Node, key string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		l.errorf(n, key, "must be a string, number or boolean (a variable holds text), got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

// lookups parses and evaluates the value v of node n: var and file lookups are read now,
// the others are returned for the deployer to resolve. static is the value when it holds
// no deploy-time lookup (known). found is valid until the next call (the loader's one
// evaluator is reused): callers copy what they keep.
func (l *loader) lookups(v string, n *yaml.Node, key string) (found []Lookup, static string, known, ok bool) {
	if !strings.Contains(v, "${") {
		return nil, v, true, true // no lookup: most values of a large config
	}
	parts, err := parseValue(v)
	if err != nil {
		var se *SyntaxError
		errors.As(err, &se)
		l.errorAt(n, key, v, se.Offset, "%v", err)
		return nil, "", false, false
	}
	e := l.eval
	if e == nil {
		e = &evaluator{load: true, vars: func(name string) (string, bool) {
			val, ok := l.vars[name]
			return val, ok
		}, readFile: l.readData}
		l.eval = e
	}
	e.found = e.found[:0]
	val, err := e.eval(parts)
	if err != nil {
		offset := 0
		var le *lookupError
		if errors.As(err, &le) {
			offset = max(strings.Index(v, le.raw), 0)
		}
		l.errorAt(n, key, v, offset, "%v", err)
		return nil, "", false, false
	}
	return e.found, val.String(), !val.unknown, true
}

// errorAt reports an error at offset of the value of node n, when the value is a plain
// one-line scalar whose columns are its characters; at the node otherwise.
func (l *loader) errorAt(n *yaml.Node, key, v string, offset int, format string, args ...any) {
	l.errorf(n, key, format, args...)
	if e := l.errs[len(l.errs)-1]; n != nil && n.Style == 0 && !strings.Contains(v, "\n") && offset > 0 {
		e.Col += utf8.RuneCountInString(v[:offset])
	}
}

// dataResult is a file read by ${file}, once per codec and path.
type dataResult struct {
	v   string
	err error
}

// readData reads ${file CODEC:PATH}: plain text, base64 of the bytes, or a JSON or YAML
// document as compact JSON (CloudFormation parameters are strings).
func (l *loader) readData(codecPath string) (string, error) {
	if r, ok := l.data[codecPath]; ok {
		return r.v, r.err
	}
	v, err := l.decodeData(codecPath)
	if l.data == nil {
		l.data = map[string]dataResult{}
	}
	l.data[codecPath] = dataResult{v, err}
	return v, err
}

func (l *loader) decodeData(codecPath string) (string, error) {
	codec, p, _ := strings.Cut(codecPath, ":")
	body, err := l.bundleFile("file", "data/user-data.sh", "bundle a directory", p)
	if err != nil {
		return "", err
	}
	switch codec {
	case "base64":
		return base64.StdEncoding.EncodeToString(body), nil
	case "json":
		var buf bytes.Buffer
		if err := json.Unmarshal(body, new(any)); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line, col := position(body, int(se.Offset)-1) // Offset is past the bad byte
				return "", fmt.Errorf("file %s:%d:%d: invalid JSON: %v", p, line, col, err)
			}
			return "", fmt.Errorf("file %s: invalid JSON: %v", p, err)
		}
		_ = json.Compact(&buf, body) // valid, so it compacts
		return buf.String(), nil
	case "yaml":
		var doc any
		if err := yaml.Unmarshal(body, &doc); err != nil {
			return "", fmt.Errorf("file %s: invalid YAML: %s", p, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		out, err := json.Marshal(jsonable(doc))
		if err != nil {
			return "", fmt.Errorf("file %s: cannot be passed as JSON: %v", p, err)
		}
		return string(out), nil
	}
	if !utf8.Valid(body) {
		return "", fmt.Errorf("file %s is not UTF-8 text: use ${file base64:%s}", p, p)
	}
	return string(body), nil
}

// jsonable turns YAML's maps with non-string keys into JSON objects.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonable(e)
		}
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = jsonable(e)
		}
	}
	return v
}

// position is the 1-based line and column of byte offset in body.
func position(body []byte, offset int) (line, col int) {
	offset = min(max(offset, 0), len(body))
	before := body[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	return line, offset - bytes.LastIndexByte(before, '\n')
}

// bundleFile reads a file of the bundle named by a lookup or an option (what: "file",
// "template", ...), refusing paths that leave it; example is a path to suggest, and
// inline says what to do instead in a single-file bundle.
func (l *loader) bundleFile(what, example, inline, p string) ([]byte, error) {
	clean := path.Clean(p)
	if p == "" || path.IsAbs(p) || strings.HasPrefix(p, `\`) || (len(p) > 1 && p[1] == ':') ||
		clean == ".." || strings.HasPrefix(clean, "../") {
		return nil, fmt.Errorf("%s path %q leaves the bundle: give a path relative to the bundle root, such as %s", what, p, example)
	}
	if !fs.ValidPath(clean) {
		return nil, fmt.Errorf("%s path %q is not a valid bundle path: use / between directories", what, p)
	}
	noun := what + " file"
	if what == "file" {
		noun = what
	}
	if bundle.Excluded(clean) {
		return nil, fmt.Errorf("%s %q is in a folder no bundle holds (cairn leaves .git, .hg, .svn and .cairn out of every bundle it pushes, so the deployer would not find it): move it into the bundle", noun, p)
	}
	body, err := bundle.ReadFile(l.b.FS, clean)
	switch {
	case err == nil:
		return body, nil
	case errors.Is(err, fs.ErrNotExist) && l.b.SingleFile:
		return nil, fmt.Errorf("%s %q: a single-file bundle holds no files: %s", noun, p, inline)
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s %q not found in the bundle", noun, p)
	}
	return nil, fmt.Errorf("%s %q cannot be read: %v", noun, p, err)
}

// policiesDir checks that p, the bundle's policy directory, is a folder of the bundle.
func (l *loader) policiesDir(p string) error {
	clean := path.Clean(p)
	if p == "" || path.IsAbs(p) || strings.HasPrefix(p, `\`) || clean == ".." || strings.HasPrefix(clean, "../") || !fs.ValidPath(clean) {
		return fmt.Errorf("policies directory %q leaves the bundle: give a folder relative to the bundle root, such as policies", p)
	}
	if l.b.SingleFile {
		return fmt.Errorf("policies directory %q: a single-file bundle holds no folders: bundle a directory", p)
	}
	st, err := fs.Stat(l.b.FS, clean)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("policies directory %q not found in the bundle", p)
	case err != nil:
		return fmt.Errorf("policies directory %q cannot be read: %v", p, err)
	case !st.IsDir():
		return fmt.Errorf("policies %q is a file: name the folder holding the bundle's .rego and .json policies", p)
	}
	return nil
}
