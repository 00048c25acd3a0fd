package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/scaffold"
	"github.com/cairn-dev/cairn/internal/template"
)

func init() { commands = append(commands, newInitCmd) }

func newInitCmd() *cobra.Command {
	var from []string
	var namespace string
	var force bool
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a first cairn.yaml for CloudFormation templates: a stack each, parameters, guessed dependencies to review",
		Long: `Init writes DIR/cairn.yaml (DIR defaults to the current folder) for the CloudFormation
templates named with --from (each inside DIR: a bundle holds its templates), or for every
template found in DIR and its folders but those another template nests (a nested stack's
TemplateURL or a SAM application's Location naming the file: they deploy with their
parent, and init lists them). Each template becomes a stack named after its file;
its parameters are written with their defaults and descriptions; a parameter named as
another template's output reads it (${output STACK::NAME}), and a template importing
another's export requires it. Every guess, and each parameter that needs a value, is
marked "review:" in a comment: the file is a draft to read. A samconfig.toml in a
template's folder (or one above it, up to DIR) gives its stack the values of its
parameter_overrides, as sam deploy takes them. Init never overwrites a cairn.yaml unless
--force.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) > 0 {
				dir = args[0]
			}
			if info, err := os.Stat(dir); err != nil || !info.IsDir() {
				return refuse("init: %s is not a folder: name the bundle's folder (it holds the templates)", dir)
			}
			target := filepath.Join(dir, bundle.ConfigName)
			if _, err := os.Stat(target); err == nil && !force {
				return refuse("init: %s exists: edit it, or write a new one over it with --force", target)
			}
			paths := from
			var nested []string
			if len(paths) == 0 {
				found, inner, err := findTemplates(dir)
				if err != nil {
					return err
				}
				if len(found) == 0 {
					return refuse("init: no CloudFormation templates in %s: name them with --from TEMPLATE", dir)
				}
				paths, nested = found, inner
			}
			var ts []scaffold.Template
			var samconfigs []string
			for _, p := range paths {
				rel, err := inside(dir, p)
				if err != nil {
					return refuse("init: %v", err)
				}
				body, err := os.ReadFile(p)
				if err != nil {
					return refuse("init: %v", err)
				}
				tp := scaffold.Template{Path: filepath.ToSlash(rel), Body: body}
				cfgPath, values, where, err := samOverrides(dir, rel)
				if err != nil {
					return refuse("init: %v", err)
				}
				if len(values) > 0 {
					tp.Overrides, tp.From = values, filepath.ToSlash(cfgPath)
					if !slices.Contains(samconfigs, tp.From+" ("+where+")") {
						samconfigs = append(samconfigs, tp.From+" ("+where+")")
					}
				}
				ts = append(ts, tp)
			}
			if namespace == "" {
				namespace = namespaceOf(dir)
			}
			r, err := scaffold.Write(namespace, ts)
			if err != nil {
				return refuse("init: %v", err)
			}
			if err := os.WriteFile(target, r.Config, 0o644); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			printer.Fprintf(w, "wrote %s: %d %s (%s) in namespace %s\n", target, len(r.Stacks), plural(len(r.Stacks), "stack"), strings.Join(r.Stacks, ", "), namespace)
			if len(nested) > 0 {
				printer.Fprintf(w, "left out %d nested %s, deployed with the template nesting %s: %s\n", len(nested), plural(len(nested), "template"), map[bool]string{true: "it", false: "each"}[len(nested) == 1], strings.Join(nested, ", "))
			}
			if len(r.Overridden) > 0 {
				printer.Fprintf(w, "took %d parameter %s from %s: %s\n", len(r.Overridden), plural(len(r.Overridden), "value"), strings.Join(samconfigs, ", "), strings.Join(r.Overridden, ", "))
			}
			printer.Fprintf(w, "read the %d %s marked \"review:\"", r.Review, plural(r.Review, "line"))
			if len(r.Missing) > 0 {
				need := "parameters need"
				if len(r.Missing) == 1 {
					need = "parameter needs"
				}
				printer.Fprintf(w, "; %d %s a value: %s", len(r.Missing), need, strings.Join(r.Missing, ", "))
			}
			printer.Fprintf(w, "\nthen check it with `cairn validate %s` and see the order with `cairn graph %s`\n", dir, dir)
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&from, "from", nil, "templates to write stacks for, inside DIR (default: every template in DIR)")
	cmd.Flags().StringVar(&namespace, "namespace", "", "the namespace: stack names are NAMESPACE-<name> (default: DIR's name)")
	cmd.Flags().BoolVar(&force, "force", false, "write over an existing cairn.yaml")
	return cmd
}

// samOverrides reads the parameter overrides `sam deploy` would take for the template at
// rel (relative to dir) from the samconfig.toml nearest it: in its folder, or one above it
// up to dir (sam build's template is in .aws-sam/build, the app's samconfig.toml two
// folders up). It returns the file's path relative to dir, and which table gave them.
func samOverrides(dir, rel string) (string, map[string]string, string, error) {
	for d := filepath.Dir(rel); ; d = filepath.Dir(d) {
		p := filepath.Join(d, scaffold.SAMConfigName)
		body, err := os.ReadFile(filepath.Join(dir, p))
		if err == nil {
			values, where, err := scaffold.SAMOverrides(body)
			if err != nil {
				return "", nil, "", fmt.Errorf("%s: %w", filepath.Join(dir, d), err)
			}
			return p, values, where, nil
		}
		if d == "." || d == string(filepath.Separator) {
			return "", nil, "", nil
		}
	}
}

// inside returns p relative to dir, refusing a path outside it.
func inside(dir, p string) (string, error) {
	ad, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	ap, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(ad, ap)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("template %s is outside %s: a bundle holds its templates: copy it into %s, or run init in a folder holding it (cairn init DIR --from DIR/...)", p, dir, dir)
	}
	return rel, nil
}

// templateExts are the extensions of files init looks into for templates.
var templateExts = []string{".yaml", ".yml", ".json", ".template"}

// findTemplates lists the CloudFormation templates in dir and its folders (not hidden
// ones, nor node_modules or a CDK app's cdk.out), in path order, but for those another
// of them nests (a nested stack's TemplateURL, a SAM application's Location naming a
// file): those deploy with their parent, not as stacks, and are listed, relative to dir,
// in nested.
func findTemplates(dir string) (stacks, nested []string, err error) {
	var out []string
	inner := map[string]bool{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "cdk.out") {
				return filepath.SkipDir
			}
			return nil
		}
		if name == bundle.ConfigName || name == bundle.VarsName || !slices.Contains(templateExts, strings.ToLower(filepath.Ext(name))) {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > template.MaxBodySize {
			return nil
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if t, err := template.Parse(body); err == nil && t.Resources > 0 {
			out = append(out, p)
			for _, ns := range t.NestedStacks() {
				inner[filepath.Join(filepath.Dir(p), filepath.FromSlash(ns.Path))] = true
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	for _, p := range out {
		if !inner[filepath.Clean(p)] {
			stacks = append(stacks, p)
		} else if rel, rerr := filepath.Rel(dir, p); rerr == nil {
			nested = append(nested, filepath.ToSlash(rel))
		}
	}
	return stacks, nested, err
}

// namespaceOf is the namespace a bundle's folder suggests: its name as a stack name.
func namespaceOf(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return scaffold.StackName(filepath.Base(abs) + ".x")
}
