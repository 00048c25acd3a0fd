package apimodel

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "regenerate operations.json.gz from the pinned models (make apimodels)")

const modelsDir = "../testdata/apimodels"

// botocore's service-2.json, the parts the table keeps.
type model struct {
	Metadata struct {
		APIVersion         string          `json:"apiVersion"`
		EndpointPrefix     string          `json:"endpointPrefix"`
		SigningName        string          `json:"signingName"`
		ServiceID          string          `json:"serviceId"`
		Protocol           string          `json:"protocol"`
		Protocols          []string        `json:"protocols"`
		TargetPrefix       string          `json:"targetPrefix"`
		AWSQueryCompatible json.RawMessage `json:"awsQueryCompatible"`
	} `json:"metadata"`
	Operations map[string]struct {
		HTTP struct {
			Method     string `json:"method"`
			RequestURI string `json:"requestUri"`
		} `json:"http"`
		Input  *struct{ Shape string }  `json:"input"`
		Errors []struct{ Shape string } `json:"errors"`
	} `json:"operations"`
	Shapes map[string]shape `json:"shapes"`
}

type shape struct {
	Type     string   `json:"type"`
	Required []string `json:"required"`
	Members  map[string]struct {
		Shape        string `json:"shape"`
		Location     string `json:"location"`
		LocationName string `json:"locationName"`
	} `json:"members"`
	Min       *float64 `json:"min"`
	Max       *float64 `json:"max"`
	Enum      []string `json:"enum"`
	Pattern   string   `json:"pattern"`
	Sensitive bool     `json:"sensitive"`
	Error     *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// generate builds the table from the models under dir (<service>/<version>/service-2.json.gz).
func generate(dir string) (*Table, error) {
	pinned, err := os.ReadFile(filepath.Join(dir, "PINNED"))
	if err != nil {
		return nil, err
	}
	version := regexp.MustCompile(`(?m)^botocore: (\S+)$`).FindSubmatch(pinned)
	if version == nil {
		return nil, fmt.Errorf("%s/PINNED names no botocore version", dir)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "*", "service-2.json.gz"))
	if err != nil {
		return nil, err
	}
	t := &Table{Botocore: string(version[1])}
	for _, f := range files {
		s, err := compact(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		t.Services = append(t.Services, s)
	}
	sort.Slice(t.Services, func(i, j int) bool { return t.Services[i].Signing < t.Services[j].Signing })
	return t, nil
}

func compact(file string) (*Service, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var m model
	if err := json.NewDecoder(zr).Decode(&m); err != nil {
		return nil, err
	}
	md := m.Metadata
	s := &Service{Signing: md.SigningName, ID: md.ServiceID, Version: md.APIVersion, Protocols: md.Protocols,
		Target: md.TargetPrefix, QueryCompatible: len(md.AWSQueryCompatible) > 0}
	if s.Signing == "" {
		s.Signing = md.EndpointPrefix
	}
	if len(s.Protocols) == 0 {
		s.Protocols = []string{md.Protocol}
	}
	for name, o := range m.Operations {
		op := &Operation{Name: name}
		if !strings.HasPrefix(md.Protocol, "rest") {
			// RPC protocols all POST to /: the binding says nothing
		} else {
			op.Method, op.URI = o.HTTP.Method, o.HTTP.RequestURI
		}
		codes := map[string]bool{}
		for _, e := range o.Errors {
			codes[e.Shape] = true
			if sh := m.Shapes[e.Shape]; sh.Error != nil && sh.Error.Code != "" {
				codes[sh.Error.Code] = true
			}
		}
		for c := range codes {
			op.Errors = append(op.Errors, c)
		}
		sort.Strings(op.Errors)
		if o.Input != nil {
			in := m.Shapes[o.Input.Shape]
			required := map[string]bool{}
			for _, r := range in.Required {
				required[r] = true
			}
			for mname, mem := range in.Members {
				target := m.Shapes[mem.Shape]
				x := &Member{Name: mname, Location: mem.Location, Type: target.Type, Required: required[mname],
					Min: target.Min, Max: target.Max, Enum: target.Enum, Pattern: target.Pattern, Sensitive: target.Sensitive}
				if mem.LocationName != "" && mem.LocationName != mname {
					x.Wire = mem.LocationName
				}
				op.Input = append(op.Input, x)
			}
			sort.Slice(op.Input, func(i, j int) bool { return op.Input[i].Name < op.Input[j].Name })
		}
		s.Operations = append(s.Operations, op)
	}
	sort.Slice(s.Operations, func(i, j int) bool { return s.Operations[i].Name < s.Operations[j].Name })
	return s, nil
}

func encode(t *Table) ([]byte, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// TestTableCurrent: the embedded table is what the pinned models give (make apimodels
// regenerates it: -update writes it).
func TestTableCurrent(t *testing.T) {
	want, err := generate(modelsDir)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		b, err := encode(want)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("operations.json.gz", b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Services) == 0 {
		t.Fatalf("no models under %s: run make apimodels", modelsDir)
	}
	// compare as JSON: the lookup maps are not part of the table
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if !bytes.Equal(a, b) {
		t.Fatalf("operations.json.gz is not what the models of %s give (botocore %s, embedded %s): run make apimodels",
			modelsDir, want.Botocore, got.Botocore)
	}
}

// TestTableReadsTheModels: spot checks of what the table says against facts of AWS's API
// references, so a generator that drops or mislabels a part of the models fails.
func TestTableReadsTheModels(t *testing.T) {
	tab, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	member := func(service, op, name string) *Member {
		s := tab.Service(service)
		if s == nil {
			t.Fatalf("no model for %s", service)
		}
		o := s.Operation(op)
		if o == nil {
			t.Fatalf("%s has no operation %s", service, op)
		}
		for _, m := range o.Input {
			if m.Name == name {
				return m
			}
		}
		t.Fatalf("%s %s has no input member %s", service, op, name)
		return nil
	}
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		service, op, member string
		want                Member
	}{
		// SSM PutParameter: Name 1..2048 characters, required; Type one of three
		{"ssm", "PutParameter", "Name", Member{Name: "Name", Type: "string", Required: true, Min: f(1), Max: f(2048)}},
		{"ssm", "PutParameter", "Type", Member{Name: "Type", Type: "string", Enum: []string{"String", "StringList", "SecureString"}}},
		// Secrets Manager CreateSecret: Name 1..512, required
		{"secretsmanager", "CreateSecret", "Name", Member{Name: "Name", Type: "string", Required: true, Min: f(1), Max: f(512)}},
		// Lambda GetFunction: FunctionName in the path, 1..256, a name or an ARN
		{"lambda", "GetFunction", "FunctionName", Member{Name: "FunctionName", Location: "uri", Wire: "FunctionName", Type: "string", Required: true, Min: f(1), Max: f(256),
			Pattern: `(arn:(aws[a-zA-Z-]*)?:lambda:)?([a-z]{2}((-gov)|(-iso([a-z]?)))?-[a-z]+-\d{1}:)?(\d{12}:)?(function:)?([a-zA-Z0-9-_\.]+)(:(\$LATEST(\.PUBLISHED)?|[a-zA-Z0-9-_]+))?`}},
	} {
		got := member(tc.service, tc.op, tc.member)
		if tc.want.Wire == tc.member {
			tc.want.Wire = ""
		}
		if !reflect.DeepEqual(*got, tc.want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			t.Errorf("%s %s %s: got %s, want %s", tc.service, tc.op, tc.member, g, w)
		}
	}
	// declared errors: CloudFormation's CreateChangeSet declares AlreadyExistsException,
	// SSM's GetParameter ParameterNotFound
	for _, tc := range []struct{ service, op, code string }{
		{"cloudformation", "CreateChangeSet", "AlreadyExistsException"},
		{"ssm", "GetParameter", "ParameterNotFound"},
		{"sqs", "GetQueueUrl", "QueueDoesNotExist"},
	} {
		if !tab.Service(tc.service).Operation(tc.op).Declares(tc.code) {
			t.Errorf("%s %s: %s is not declared", tc.service, tc.op, tc.code)
		}
	}
	// every service the emulator serves has a model, with its protocol
	for signing, protocol := range map[string]string{"cloudformation": "query", "iam": "query", "sns": "query", "sts": "query",
		"sqs": "json", "ssm": "json", "kms": "json", "secretsmanager": "json", "events": "json", "ecr": "json",
		"monitoring": "smithy-rpc-v2-cbor", "lambda": "rest-json", "s3": "rest-xml"} {
		s := tab.Service(signing)
		if s == nil {
			t.Errorf("no model for %s", signing)
			continue
		}
		if s.Protocols[0] != protocol {
			t.Errorf("%s: protocol %v, want %s first", signing, s.Protocols, protocol)
		}
	}
}

// TestPatternsGoReads: the models' patterns are Java regular expressions; the validator
// reads them as Go's, with \uXXXX escapes and UTF-16 surrogate pairs made code points. A
// pattern Go cannot read is not checked (never a false refusal); this lists how many.
func TestPatternsGoReads(t *testing.T) {
	tab, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	total, unread := 0, map[string]bool{}
	for _, s := range tab.Services {
		for _, op := range s.Operations {
			for _, m := range op.Input {
				if m.Pattern == "" {
					continue
				}
				total++
				if pattern(m.Pattern) == nil {
					unread[s.Signing+" "+m.Pattern] = true
				}
			}
		}
	}
	t.Logf("%d top-level patterns, %d distinct ones Go cannot read: %v", total, len(unread), unread)
	// a pattern with a surrogate pair, as the models write characters beyond the BMP
	re := pattern(`[\u0009\u000A\u000D\u0020-\uD7FF\uE000-\uFFFD\uD800\uDC00-\uDBFF\uDFFF]+`)
	if re == nil || !re.MatchString("emoji \U0001F600 ok") || re.MatchString("bell \a") {
		t.Errorf("the surrogate-pair pattern reads wrong: %v", re)
	}
}
