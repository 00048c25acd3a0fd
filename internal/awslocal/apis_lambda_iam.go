package awslocal

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/apimodel"
	"github.com/cairn-dev/cairn/internal/awslocal/stslocal"
)

// lambdaPath matches Lambda's REST paths that name a function:
// /VERSION/functions/NAME[/SUBRESOURCE...].
var lambdaPath = regexp.MustCompile(`^/\d{4}-\d{2}-\d{2}/functions/([^/]+)(/.*)?$`)

// lambdaActions and iamActions are what the emulator serves of Lambda's and IAM's APIs.
var (
	lambdaActions = []string{"GetFunction", "GetFunctionConfiguration", "Invoke"}

	// iamActions: GetRole of the roles stacks made, and the Gets iamEntityMessages answers
	// (the emulator holds no users, groups, policies or instance profiles: NoSuchEntity).
	iamActions = []string{"DeleteRole", "GetGroup", "GetInstanceProfile", "GetPolicy", "GetRole", "GetRolePolicy", "GetUser"}
)

// serveLambda answers Lambda's REST JSON API for the functions the emulator holds:
// GetFunction, GetFunctionConfiguration and Invoke (RequestResponse, or Event: 202). A
// request naming a function that does not exist is 404 ResourceNotFoundException, as
// Lambda answers it; any other request is answered by lambdaNotServed.
func (e *Emulator) serveLambda(w http.ResponseWriter, r *http.Request) {
	m := lambdaPath.FindStringSubmatch(r.URL.EscapedPath())
	if m == nil {
		lambdaNotServed(w, r)
		return
	}
	raw, _ := url.PathUnescape(m[1])
	name, sub := functionName(raw), m[2]
	f, ok := e.Function(name)
	if !ok {
		arn := raw
		if !strings.HasPrefix(arn, "arn:") {
			arn = e.functionARN(name)
		}
		writeRESTError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+arn)
		return
	}
	config := map[string]any{"FunctionName": f.Name, "FunctionArn": f.ARN, "Timeout": int(f.Timeout.Seconds()), "State": "Active",
		"LastUpdateStatus": "Successful", "PackageType": "Zip", "Environment": map[string]any{"Variables": f.Environment}}
	switch {
	case r.Method == http.MethodGet && sub == "":
		writeRESTJSON(w, http.StatusOK, map[string]any{"Configuration": config})
	case r.Method == http.MethodGet && sub == "/configuration":
		writeRESTJSON(w, http.StatusOK, config)
	case r.Method == http.MethodPost && sub == "/invocations":
		e.serveInvoke(w, r, f)
	default:
		lambdaNotServed(w, r)
	}
}

// lambdaNotServed answers a Lambda request the emulator does not serve as a REST service
// answers a request no operation of it serves: 404 UnknownOperationException. The message
// names the operation of Lambda's API model the request is for, when the model has one.
func lambdaNotServed(w http.ResponseWriter, r *http.Request) {
	msg := fmt.Sprintf("%s %s is no operation of Lambda's API", r.Method, r.URL.Path)
	if tab, err := apimodel.Load(); err == nil {
		if op := tab.Service("lambda").Match(r.Method, r.URL.Path, r.URL.Query()); op != nil {
			msg = fmt.Sprintf("%s (%s %s) is an operation of Lambda that the local emulator does not serve (it serves %s)",
				op.Name, r.Method, r.URL.Path, strings.Join(lambdaActions, ", "))
		}
	}
	writeRESTError(w, http.StatusNotFound, "UnknownOperationException", msg)
}

// serveInvoke runs a function in process, synchronously or (InvocationType Event) not.
func (e *Emulator) serveInvoke(w http.ResponseWriter, r *http.Request, f FunctionConfig) {
	payload, err := io.ReadAll(r.Body)
	if err != nil {
		writeRESTError(w, http.StatusBadRequest, "InvalidRequestContentException", "could not read the payload: "+err.Error())
		return
	}
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	if !f.Bound {
		writeRESTError(w, http.StatusNotImplemented, "NotImplemented",
			fmt.Sprintf("function %s exists but runs no code in the local emulator (only cairn's in-process handlers run): test it against AWS", f.Name))
		return
	}
	if r.Header.Get("X-Amz-Invocation-Type") == "Event" {
		if err := e.invokeEvent(r.Context(), f.ARN, payload); err != nil {
			writeRESTError(w, http.StatusInternalServerError, "ServiceException", err.Error())
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out, err := e.Invoke(r.Context(), f.Name, payload)
	if err != nil {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		writeRESTJSON(w, http.StatusOK, map[string]string{"errorMessage": err.Error(), "errorType": "Error"})
		return
	}
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func writeRESTJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeRESTError answers in the REST JSON protocol's error shape (Lambda's).
func writeRESTError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("X-Amzn-Errortype", code)
	writeRESTJSON(w, status, map[string]string{"Type": "User", "Message": message})
}

// iamEntityMessages are IAM's NoSuchEntity messages for the entities a Get action names,
// by action and the parameter naming the entity. The emulator holds roles only.
var iamEntityMessages = map[string][2]string{
	"GetUser":            {"UserName", "The user with name %s cannot be found."},
	"GetGroup":           {"GroupName", "The group with name %s cannot be found."},
	"GetPolicy":          {"PolicyArn", "Policy %s was not found."},
	"GetInstanceProfile": {"InstanceProfileName", "Instance Profile %s cannot be found."},
	"GetRolePolicy":      {"RoleName", "The role with name %s cannot be found."},
	"DeleteRole":         {"RoleName", "The role with name %s cannot be found."},
}

// serveIAM answers IAM's query API: GetRole of the roles stacks made; a Get of any other
// entity (users, groups, policies, instance profiles, which the emulator never holds) or of
// a missing role is 404 NoSuchEntity, as IAM answers it. Other actions never reach it: the
// router answers them from IAM's model (InvalidAction).
func (e *Emulator) serveIAM(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeServiceError(w, "query", http.StatusBadRequest, "MalformedQueryString", "could not read the request form: "+err.Error())
		return
	}
	action := r.Form.Get("Action")
	caller, _ := stslocal.CallerFrom(r.Context())
	account := orDefault(caller.Account, e.opts.AccountID)
	if action == "GetRole" {
		name := r.Form.Get("RoleName")
		role, ok := e.role(account, name)
		if !ok {
			writeServiceError(w, "query", http.StatusNotFound, "NoSuchEntity", fmt.Sprintf("The role with name %s cannot be found.", name))
			return
		}
		type xRole struct {
			Path, RoleName, RoleId, Arn string
			AssumeRolePolicyDocument    string
			MaxSessionDuration          int
		}
		out := struct {
			XMLName  xml.Name `xml:"GetRoleResponse"`
			Xmlns    string   `xml:"xmlns,attr"`
			Role     xRole    `xml:"GetRoleResult>Role"`
			Metadata string   `xml:"ResponseMetadata>RequestId"`
		}{Xmlns: "https://iam.amazonaws.com/doc/2010-05-08/", Metadata: newID(),
			Role: xRole{Path: rolePath(role.ARN, role.Name), RoleName: role.Name, RoleId: role.ID, Arn: role.ARN,
				AssumeRolePolicyDocument: url.QueryEscape(role.Trust), MaxSessionDuration: int(role.MaxSession.Seconds())}}
		w.Header().Set("Content-Type", "text/xml")
		xml.NewEncoder(w).Encode(out)
		return
	}
	if m, ok := iamEntityMessages[action]; ok {
		name := r.Form.Get(m[0])
		if _, isRole := e.role(account, name); !isRole || m[0] != "RoleName" {
			writeServiceError(w, "query", http.StatusNotFound, "NoSuchEntity", fmt.Sprintf(m[1], name))
			return
		}
	}
	// not reached through the emulator's router, which answers from IAM's API model first
	writeServiceError(w, "query", http.StatusBadRequest, "InvalidAction",
		fmt.Sprintf("%s is an operation of IAM that the local emulator does not serve (served: %s; roles come from stacks)", action, strings.Join(iamActions, ", ")))
}

// rolePath is the path of a role's ARN: arn:aws:iam::ACCOUNT:role/PATH/NAME.
func rolePath(arn, name string) string {
	_, rest, _ := strings.Cut(arn, ":role")
	return strings.TrimSuffix(rest, name)
}
