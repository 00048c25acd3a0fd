package awslocal_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/apimodel"
)

// commonErrors are the codes any operation may answer: AWS's common errors (the "Common
// Errors" page of every API reference: AccessDeniedException, IncompleteSignature,
// InternalFailure, InvalidAction, InvalidClientTokenId, InvalidParameterCombination,
// InvalidParameterValue, InvalidQueryParameter, MalformedQueryString, MissingAction,
// MissingAuthenticationToken, MissingParameter, NotAuthorized, OptInRequired,
// RequestExpired, ServiceUnavailable, ThrottlingException, ValidationError), their AWS JSON
// forms (ValidationException, UnknownOperationException, SerializationException,
// ExpiredTokenException) and the throttling codes of the query services.
var commonErrors = map[string]bool{
	"AccessDeniedException": true, "IncompleteSignature": true, "InternalFailure": true, "InvalidAction": true,
	"InvalidClientTokenId": true, "InvalidParameterCombination": true, "InvalidParameterValue": true,
	"InvalidQueryParameter": true, "MalformedQueryString": true, "MissingAction": true, "MissingAuthenticationToken": true,
	"MissingParameter": true, "NotAuthorized": true, "OptInRequired": true, "RequestExpired": true, "ServiceUnavailable": true,
	"ThrottlingException": true, "ValidationError": true, "ValidationException": true, "UnknownOperationException": true,
	"SerializationException": true, "ExpiredTokenException": true, "Throttling": true, "RequestThrottled": true,
	"AccessDenied": true, "ExpiredToken": true, "InternalError": true, "InternalServerError": true,
}

// undeclaredErrors are the codes the scan finds for operations whose models do not declare
// them, by "service/operation/code", each with the reason it is no wrong answer: a code
// that travels in an entry of the answer rather than as its error, a code the scan reaches
// only because one function serves two operations (it follows every branch), or an answer
// of AWS's that its model leaves out.
var undeclaredErrors = map[string]string{
	"ecr/BatchGetImage/ImageNotFound":                                      "a failure entry's code (ImageFailure.failureCode) in the answer's failures, not the call's error",
	"sqs/ChangeMessageVisibilityBatch/MessageNotInflight":                  "a batch entry's code (BatchResultErrorEntry.Code) in the answer's Failed list, not the call's error",
	"sqs/ChangeMessageVisibilityBatch/ReceiptHandleIsInvalid":              "a batch entry's code (BatchResultErrorEntry.Code) in the answer's Failed list, not the call's error",
	"sqs/DeleteMessageBatch/ReceiptHandleIsInvalid":                        "a batch entry's code (BatchResultErrorEntry.Code) in the answer's Failed list, not the call's error",
	"sqs/SendMessageBatch/InvalidMessageContents":                          "a batch entry's code (BatchResultErrorEntry.Code) in the answer's Failed list, not the call's error",
	"ssm/GetParameters/ParameterNotFound":                                  "GetMany turns the shared lookup's not-found errors into InvalidParameters entries; they are never the call's error",
	"ssm/GetParameters/ParameterVersionNotFound":                           "GetMany turns the shared lookup's not-found errors into InvalidParameters entries; they are never the call's error",
	"ssm/GetParameters/ParameterVersionLabelNotFound":                      "GetMany turns the shared lookup's not-found errors into InvalidParameters entries; they are never the call's error",
	"ssm/GetParametersByPath/ParameterNotFound":                            "ByPath looks up only the names it found under the path, in the same lock: the lookup cannot miss",
	"ssm/GetParametersByPath/ParameterVersionNotFound":                     "ByPath looks up only the names it found under the path, in the same lock: the lookup cannot miss",
	"ssm/GetParametersByPath/ParameterVersionLabelNotFound":                "ByPath looks up only the names it found under the path, in the same lock: the lookup cannot miss",
	"ssm/UnlabelParameterVersion/ParameterVersionLabelLimitExceeded":       "the clause serves LabelParameterVersion too; the ten-label limit is checked only when labelling",
	"sns/ListSubscriptions/NotFound":                                       "the clause serves ListSubscriptionsByTopic too; NotFound is for a TopicArn, which ListSubscriptions has none of",
	"secretsmanager/DeleteResourcePolicy/MalformedPolicyDocumentException": "the clause serves PutResourcePolicy too and checks the document only for it",
	"kms/CreateAlias/NotAuthorizedException": "KMS's answer to an alias under the reserved prefix alias/aws/ (\"Cannot create alias with prefix 'alias/aws/'\"), " +
		"which AWS reserves for AWS managed keys (CreateAlias's reference: \"The AliasName value cannot begin with alias/aws/\"); the model declares no code for it, and moto answers the same",
	"ssm/GetParameter/ParameterVersionLabelNotFound": "a NAME:LABEL selector whose label no version carries; the model declares it for label operations only. " +
		"AWS's answer to it is not confirmed here (open: it may be ParameterNotFound)",
}

// scanned are the packages (and, in this one, files) that serve each service, whose
// error-writing calls TestErrorCodesAreDeclared reads. Not scanned: S3 (it routes by
// method and path, not by operation name), Lambda and IAM (a handful of codes, written in
// apis_lambda_iam.go and checked by TestLambdaAndIAMAnswerAsAWS).
var scanned = map[string]struct {
	dir   string
	files string // a pattern of the files to read; "" for all of dir's non-test files
}{
	"cloudformation": {"cfnlocal", ""}, "ecr": {"ecrlocal", ""}, "kms": {"kmslocal", ""}, "monitoring": {"cloudwatchlocal", ""},
	"secretsmanager": {"secretslocal", ""}, "sns": {"snslocal", ""}, "sqs": {"sqslocal", ""}, "ssm": {"ssmlocal", ""},
	"sts": {"stslocal", ""}, "events": {".", `^events_.*\.go$`},
}

// TestErrorCodesAreDeclared: every error code a served operation can answer is one AWS's
// model declares for that operation, a common error, or listed in undeclaredErrors with
// the reason. The codes are found in the source: from where each operation is dispatched
// (a case of its name, an entry of a map keyed by it), every function it can reach in its
// package (by name: an over-approximation) and every code written there (a Code field, the
// code of an error literal, a code passed to an error-writing function).
func TestErrorCodesAreDeclared(t *testing.T) {
	tab, err := apimodel.Load()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, s := range awslocal.ServedOperations() {
		where, ok := scanned[s.Service]
		if !ok {
			continue
		}
		model := tab.Service(s.Service)
		codes := scanCodes(t, where.dir, where.files, s.Operations)
		for _, op := range s.Operations {
			if len(codes[op]) == 0 {
				t.Errorf("%s %s: no dispatch of it found in %s: the scan would check nothing", s.Name, op, where.dir)
			}
			for code, fns := range codes[op] {
				if code == "" || commonErrors[code] || model.Operation(op).Declares(code) {
					continue
				}
				if _, ok := undeclaredErrors[s.Service+"/"+op+"/"+code]; ok {
					listed[s.Service+"/"+op+"/"+code] = true
					continue
				}
				t.Errorf("%s %s can answer %s, which its model does not declare (botocore %s) and is no common error (written in %s)", s.Name, op, code, tab.Botocore, strings.Join(fns, ", "))
			}
		}
	}
	for k := range undeclaredErrors {
		if !listed[k] {
			t.Errorf("undeclaredErrors lists %s, which the scan no longer finds: remove it", k)
		}
	}
}

// codeArgs are the error-writing functions of the emulator's packages that take a code,
// by name, and which of their arguments are codes.
var codeArgs = map[string][]int{
	"senderError": {0}, "eventsErr": {0}, "WriteCBORError": {2}, "writeServiceError": {3}, "writeRESTError": {2},
}

var codeLike = regexp.MustCompile(`^[A-Z][A-Za-z0-9]+(\.[A-Z][A-Za-z0-9]+)*$`)

// scanCodes maps each operation to the error codes its dispatch can reach in dir, each
// with the functions that write it. An operation whose dispatch is found gets at least the
// empty code, so that a dispatch with no error is told from one not found.
func scanCodes(t *testing.T, dir, pattern string, ops []string) map[string]map[string][]string {
	t.Helper()
	var only *regexp.Regexp
	if pattern != "" {
		only = regexp.MustCompile(pattern)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var all []*ast.File
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || (only != nil && !only.MatchString(name)) {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, f)
	}
	// functions by name, methods by "Type.Name"; methods also by ".Name" (every type's)
	type fn struct {
		key, recv, typ string
		body           *ast.BlockStmt
	}
	funcs := map[string][]fn{}
	for _, file := range all {
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if fd.Recv == nil || len(fd.Recv.List) == 0 {
				funcs[fd.Name.Name] = append(funcs[fd.Name.Name], fn{fd.Name.Name, "", "", fd.Body})
				continue
			}
			typ, recv := typeName(fd.Recv.List[0].Type), ""
			if len(fd.Recv.List[0].Names) > 0 {
				recv = fd.Recv.List[0].Names[0].Name
			}
			f := fn{typ + "." + fd.Name.Name, recv, typ, fd.Body}
			funcs[f.key] = append(funcs[f.key], f)
			funcs["."+fd.Name.Name] = append(funcs["."+fd.Name.Name], f)
		}
	}
	isOp := map[string]bool{}
	for _, op := range ops {
		isOp[op] = true
	}
	roots := map[string][]ast.Node{}
	for _, f := range all {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CaseClause:
				for _, e := range x.List {
					if name := literal(e); isOp[name] {
						for _, st := range x.Body {
							roots[name] = append(roots[name], st)
						}
					}
				}
			case *ast.KeyValueExpr:
				if name := literal(x.Key); isOp[name] {
					roots[name] = append(roots[name], x.Value)
				}
			}
			return true
		})
	}
	type item struct {
		fn        string // the function the node is in
		recv, typ string // its receiver, for a method
		n         ast.Node
	}
	out := map[string]map[string][]string{}
	for _, op := range ops {
		if len(roots[op]) == 0 {
			continue
		}
		codes := map[string][]string{"": nil}
		add := func(c, fn string) {
			if codeLike.MatchString(c) && !slices.Contains(codes[c], fn) {
				codes[c] = append(codes[c], fn)
			}
		}
		seen := map[string]bool{}
		var queue []item
		for _, r := range roots[op] {
			queue = append(queue, item{"the dispatch of " + op, "", "", r})
		}
		follow := func(key string) {
			if _, ok := funcs[key]; ok && !seen[key] {
				seen[key] = true
				for _, f := range funcs[key] {
					queue = append(queue, item{f.key, f.recv, f.typ, f.body})
				}
			}
		}
		// call resolves a call: a method of the receiver's own type when called on the
		// receiver, a package function by name, else every method of that name.
		call := func(it item, e ast.Expr) {
			switch x := e.(type) {
			case *ast.Ident:
				follow(x.Name)
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && it.recv != "" && id.Name == it.recv {
					follow(it.typ + "." + x.Sel.Name)
					return
				}
				follow("." + x.Sel.Name)
			case *ast.IndexExpr:
				if id, ok := x.X.(*ast.Ident); ok {
					follow(id.Name)
				}
			}
		}
		for len(queue) > 0 {
			it := queue[0]
			queue = queue[1:]
			ast.Inspect(it.n, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.CaseClause:
					// a dispatch within a function serving several operations: only the
					// clause of this one
					others := false
					for _, e := range x.List {
						if name := literal(e); name == op {
							return true
						} else if isOp[name] {
							others = true
						}
					}
					return !others
				case *ast.KeyValueExpr:
					// (SQS's QueryCode is the query-era name of the same error, sent in
					// x-amzn-query-error beside the code the model names)
					if k, ok := x.Key.(*ast.Ident); ok && k.Name == "Code" {
						add(literal(x.Value), it.fn)
					}
				case *ast.CompositeLit:
					if name := typeName(x.Type); strings.HasSuffix(name, "Error") || strings.HasSuffix(name, "error") {
						if len(x.Elts) > 0 {
							add(literal(x.Elts[0]), it.fn)
						}
					}
				case *ast.CallExpr:
					for _, i := range codeArgs[callee(x.Fun)] {
						if i < len(x.Args) {
							add(literal(x.Args[i]), it.fn)
						}
					}
					call(it, x.Fun)
				case *ast.Ident:
					follow(x.Name) // a function passed as a value (a handler in a table)
				}
				return true
			})
		}
		out[op] = codes
	}
	return out
}

func literal(e ast.Expr) string {
	if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
		s, err := strconv.Unquote(b.Value)
		if err == nil {
			return s
		}
	}
	return ""
}

func callee(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.IndexExpr:
		return callee(x.X)
	}
	return ""
}

func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.StarExpr:
		return typeName(x.X)
	}
	return ""
}
