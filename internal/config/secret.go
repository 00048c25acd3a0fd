package config

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/seal"
)

// What cairn stores of a secret is a hash. CloudFormation shows a NoEcho parameter as
// ****, and cairn keeps it the same way in every document it writes (run and plan
// documents, reports, logs): a sealed reference ({{cairn:...@HASH}}, see sealedRE) stands
// for the value, and the deployer reads the value again from where it comes from just
// before the CloudFormation call that needs it (Unseal), checking its hash:
//
//   - a SecureString from SSM (${ssm}): {{cairn:ssm-secure:NAME@HASH}}, read from SSM;
//   - a NoEcho value the bundle gives (written in cairn.yaml, or read by ${var} or
//     ${file}): {{cairn:bundle@HASH}}, read from the bundle the run deploys;
//   - a NoEcho value once resolved, whatever it read (an output, say):
//     {{cairn:noecho@HASH}}, which only identifies it; the call gets the value resolved.
//
// A changed secret changes its hash, so the stack's inputs change and it is updated. A
// NoEcho value that reads deploy-time lookups keeps the lookups as written (their
// arguments are names, not secrets).
//
// The hash is a MAC under the deployer's seal key (package seal), so a reader of the
// bucket cannot test a guessed secret against it; seals made before the key (plain
// sha256) are still recognised.

// The domains of the seals: what a sealed value is.
const (
	bundleDomain = "cairn bundle"
	noEchoDomain = "cairn noecho"
	secureDomain = "cairn ssm-secure"
)

// bundleHash identifies a NoEcho value the bundle of stack gives.
func bundleHash(k seal.Key, stack, value string) string { return k.Sum(bundleDomain, stack, value) }

// noEchoHash identifies a resolved NoEcho value of stack's parameter.
func noEchoHash(k seal.Key, stack, param, value string) string {
	return k.Sum(noEchoDomain, stack, param, value)
}

// NoEcho lists the parameters of s's template that are NoEcho, sorted (none for a
// template_url stack, whose template cairn does not read).
func (s *Stack) NoEcho() []string {
	if s.Template == nil {
		return nil
	}
	var names []string
	for name, p := range s.Template.Parameters {
		if p.NoEcho {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// bundleSecrets returns, by parameter, the NoEcho values of s that the bundle alone gives:
// written out, or read by ${var} and ${file} only.
func (s *Stack) bundleSecrets() map[string]string {
	out := map[string]string{}
	for _, name := range s.NoEcho() {
		raw, ok := s.Parameters[name]
		if !ok {
			continue
		}
		v, err := ResolveParameters(&Stack{Name: s.Name, Parameters: map[string]string{name: raw}, Lookups: s.Lookups}, Values{})
		if err != nil {
			continue // it reads a deploy-time lookup
		}
		out[name] = v[name]
	}
	return out
}

// BundleSecrets lists the NoEcho values of s that the bundle alone gives: what the
// deployer unseals {{cairn:bundle@HASH}} references from.
func (s *Stack) BundleSecrets() []string {
	return slices.Sorted(maps.Values(s.bundleSecrets()))
}

// StoredParameters returns s's raw parameters as a run stores them: a NoEcho value the
// bundle alone gives is sealed with k ({{cairn:bundle@HASH}}), the others are as written.
func (s *Stack) StoredParameters(k seal.Key) map[string]string {
	out := maps.Clone(s.Parameters)
	for name, v := range s.bundleSecrets() {
		out[name] = "{{cairn:bundle@" + bundleHash(k, s.Name, v) + "}}"
	}
	return out
}

// StoredLookups returns s's lookups as a run stores them: without those of the NoEcho
// values StoredParameters seals, whose ${var} and ${file} values they hold.
func (s *Stack) StoredLookups() []Lookup {
	sealed := s.bundleSecrets()
	var out []Lookup
	for _, l := range s.Lookups {
		if _, ok := sealed[l.Param]; ok && l.Param != "" {
			continue
		}
		out = append(out, l)
	}
	return out
}

// HoldsSealed reports whether a stored value holds a sealed reference.
func HoldsSealed(v string) bool { return sealedRE.MatchString(v) }

// SealNoEcho returns a resolved value of stack's NoEcho parameter param as a run stores
// it: a value that is a sealed reference already stays one, any other is replaced by its
// seal under k ({{cairn:noecho@HASH}}).
func SealNoEcho(k seal.Key, stack, param, value string) string {
	if loc := sealedRE.FindStringIndex(value); loc != nil && loc[0] == 0 && loc[1] == len(value) {
		return value
	}
	return "{{cairn:noecho@" + noEchoHash(k, stack, param, value) + "}}"
}

// RecoverNoEcho returns stored, a stack's parameters as a run stores them, with each
// {{cairn:noecho@HASH}} of a parameter replaced by the candidate value for that parameter
// (candidates, by parameter: its raw value resolved again, say) whose seal under k, as
// SealNoEcho made it for stack, is HASH: a reader who must know what the run deployed
// (to mask it) gets it back only when it is the very value. A recovered value may hold
// sealed references (a SecureString read by a NoEcho parameter with text around it):
// Unseal reads them. lost names the parameters, sorted, whose seal no candidate matches;
// their values stay sealed.
func RecoverNoEcho(k seal.Key, stack string, stored map[string]string, candidates map[string][]string) (out map[string]string, lost []string) {
	out = make(map[string]string, len(stored))
	for param, v := range stored {
		out[param] = sealedRE.ReplaceAllStringFunc(v, func(m string) string {
			sm := sealedRE.FindStringSubmatch(m)
			if sm[sealKind] != "noecho" {
				return m
			}
			for _, c := range candidates[param] {
				if k.Verify(sm[sealHash], noEchoDomain, stack, param, c) {
					return c
				}
			}
			if !slices.Contains(lost, param) {
				lost = append(lost, param)
			}
			return m
		})
	}
	slices.Sort(lost)
	return out, lost
}

// HoldsUnkeyedSeal reports whether a stored value holds a seal made without a key (by a
// cairn older than keyed seals).
func HoldsUnkeyedSeal(v string) bool {
	for _, m := range sealedRE.FindAllStringSubmatch(v, -1) {
		if !seal.IsKeyed(m[sealHash]) {
			return true
		}
	}
	return false
}

// SealOutput returns output of stack (a config name) as a run stores it when it is secret
// (an output of a NoEcho parameter, say): {{cairn:output:STACK.OUTPUT@HASH}}, HASH its
// seal under k. A stack consuming it gets the reference; the deployer reads the output
// again from CloudFormation just before the CreateChangeSet that needs its value, and
// checks it against the seal (Unseal).
func SealOutput(k seal.Key, stack, output, value string) string {
	if loc := sealedRE.FindStringIndex(value); loc != nil && loc[0] == 0 && loc[1] == len(value) {
		return value
	}
	return "{{cairn:output:" + url.QueryEscape(stack) + "." + output + "@" + k.Sum(outputDomain, stack, output, value) + "}}"
}

// outputRE is an ${output STACK::OUTPUT} lookup as written.
var outputRE = regexp.MustCompile(`\$\{output\s+([^\s:{}]+)::([^\s{}]+)\}`)

// OutputsRead lists the (config name of the stack, output) pairs a parameter value as
// written reads with ${output STACK::OUTPUT}, in order.
func OutputsRead(value string) [][2]string {
	var out [][2]string
	for _, m := range outputRE.FindAllStringSubmatch(value, -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}

// SealedOutputs lists the outputs (config name of the stack, output) sealed references
// in params stand for: what the deployer reads again to unseal them.
func SealedOutputs(params map[string]string) [][2]string {
	var out [][2]string
	for _, v := range params {
		for _, m := range sealedRE.FindAllStringSubmatch(v, -1) {
			if ref := [2]string{unescapeName(m[sealStack]), m[sealOutput]}; m[sealStack] != "" && !slices.Contains(out, ref) {
				out = append(out, ref)
			}
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	return out
}

func unescapeName(s string) string {
	n, err := url.QueryUnescape(s)
	if err != nil {
		return s
	}
	return n
}
