package s3local

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"regexp"
	"strings"

	"github.com/rclone/gofakes3"

	"github.com/cairn-dev/cairn/internal/awslocal/stslocal"
)

// The emulator evaluates the explicit Deny statements of a bucket's policy, as S3 does
// before anything else: a Deny that matches the request's caller, action, resource and
// conditions refuses it with 403 AccessDenied, whatever allows it. It does not evaluate
// Allow statements nor identity policies (every caller the emulator accepts may do what
// its account may), so it never refuses what AWS would allow, and refuses what a bucket
// policy's Deny refuses, within what it can evaluate:
//
//   - Principal "*", {"AWS": "*"}, {"AWS": [ACCOUNT | ARN ...]} and NotPrincipal;
//   - Action and NotAction, with * and ? (case-insensitive);
//   - Resource and NotResource, with * and ?;
//   - conditions on aws:PrincipalArn and aws:PrincipalAccount with the String and Arn
//     operators (Equals, NotEquals, Like, NotLike, each also ...IfExists).
//
// A Deny with a condition on any other key (aws:SecureTransport, s3:TlsVersion: the
// emulator serves plain HTTP on loopback) does not apply: the emulator cannot tell, and
// refusing every request would make it useless. The principal of a request is its
// caller's: the assumed role's ARN for a session AssumeRole issued, the account's root
// for plain credentials (stslocal.Caller). As in S3, the bucket owner's root may always
// read, change and delete the bucket policy.
//
// See https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html
// and the S3 user guide's "Troubleshoot access denied (403 Forbidden) errors" for the
// message's form.

// request is what a bucket policy is evaluated on.
type request struct {
	principalARN, account, callerARN string
	root                             bool
	action, resource                 string
}

// denial answers a request the bucket's policy denies, in S3's form.
func denial(w http.ResponseWriter, q request) {
	writeError(w, http.StatusForbidden, "AccessDenied", deniedMessage(q), "")
}

func deniedMessage(q request) string {
	return "User: " + q.callerARN + " is not authorized to perform: " + q.action + ` on resource: "` + q.resource + `" with an explicit deny in a resource-based policy`
}

// requestOf is the request r makes as a bucket policy names it; ok is false when r has no
// caller (an in-process request of the emulator's own services, such as CloudFormation
// writing a bucket policy) or is an action the emulator does not evaluate.
func requestOf(r *http.Request, bucket, key string) (request, bool) {
	q, ok := callerOf(r, bucket)
	if !ok {
		return request{}, false
	}
	q.action = actionOf(r, key)
	if q.action == "" {
		return request{}, false
	}
	q.resource = "arn:aws:s3:::" + bucket
	if key != "" {
		q.resource += "/" + key
	}
	return q, true
}

// callerOf is the caller of r as a bucket policy names it, with no action yet.
func callerOf(r *http.Request, bucket string) (request, bool) {
	caller, ok := stslocal.CallerFrom(r.Context())
	if !ok || bucket == "" {
		return request{}, false
	}
	q := request{account: caller.Account, callerARN: caller.ARN(), principalARN: "arn:aws:iam::" + caller.Account + ":root", root: caller.Session == nil}
	if caller.Session != nil {
		q.principalARN = caller.Session.RoleARN
	}
	return q, true
}

// actionOf names the S3 action of r (key is "" for a bucket's sub-resources); "" for those
// the emulator does not evaluate. DeleteObjects is evaluated per key (deleteObjects).
func actionOf(r *http.Request, key string) string {
	q := r.URL.Query()
	version := q.Get("versionId") != ""
	pick := func(plain, versioned string) string {
		if version {
			return versioned
		}
		return plain
	}
	if key == "" {
		switch {
		case q.Has("policy"):
			switch r.Method {
			case http.MethodGet:
				return "s3:GetBucketPolicy"
			case http.MethodPut:
				return "s3:PutBucketPolicy"
			case http.MethodDelete:
				return "s3:DeleteBucketPolicy"
			}
		case q.Has("versions") && r.Method == http.MethodGet:
			return "s3:ListBucketVersions"
		case r.Method == http.MethodGet && !q.Has("uploads") && !q.Has("notification") && !q.Has("versioning") && !q.Has("location") &&
			!q.Has("cors") && !q.Has("object-lock") && !q.Has("tagging") && !q.Has("acl"):
			return "s3:ListBucket"
		}
		return ""
	}
	switch r.Method {
	case http.MethodPut:
		switch {
		case q.Has("acl"):
			return pick("s3:PutObjectAcl", "s3:PutObjectVersionAcl")
		case q.Has("tagging"):
			return pick("s3:PutObjectTagging", "s3:PutObjectVersionTagging")
		case q.Has("retention"):
			return "s3:PutObjectRetention"
		case q.Has("legal-hold"):
			return "s3:PutObjectLegalHold"
		}
		return "s3:PutObject" // a put, a copy, a part of a multipart upload
	case http.MethodPost:
		switch {
		case q.Has("restore"):
			return "s3:RestoreObject"
		case q.Has("uploads"), q.Has("uploadId"):
			return "s3:PutObject"
		}
	case http.MethodDelete:
		switch {
		case q.Has("tagging"):
			return pick("s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging")
		case q.Has("uploadId"):
			return "s3:AbortMultipartUpload"
		}
		return pick("s3:DeleteObject", "s3:DeleteObjectVersion")
	case http.MethodGet, http.MethodHead:
		switch {
		case q.Has("tagging"):
			return pick("s3:GetObjectTagging", "s3:GetObjectVersionTagging")
		case q.Has("acl"):
			return pick("s3:GetObjectAcl", "s3:GetObjectVersionAcl")
		case q.Has("uploadId"):
			return "s3:ListMultipartUploadParts"
		case q.Has("attributes"):
			return pick("s3:GetObjectAttributes", "s3:GetObjectVersionAttributes")
		}
		return pick("s3:GetObject", "s3:GetObjectVersion")
	}
	return ""
}

// deniedBy reports whether the bucket policy (JSON) explicitly denies q.
func deniedBy(policy string, q request) bool {
	if policy == "" {
		return false
	}
	if q.root && strings.HasSuffix(q.action, "BucketPolicy") {
		return false // the bucket owner's root cannot lock itself out of the policy
	}
	var doc struct{ Statement json.RawMessage }
	if json.Unmarshal([]byte(policy), &doc) != nil {
		return false
	}
	var sts []policyStatement
	if json.Unmarshal(doc.Statement, &sts) != nil {
		var one policyStatement
		if json.Unmarshal(doc.Statement, &one) != nil {
			return false
		}
		sts = []policyStatement{one}
	}
	for _, st := range sts {
		if st.Effect == "Deny" && st.applies(q) {
			return true
		}
	}
	return false
}

type policyStatement struct {
	Effect                  string
	Principal, NotPrincipal json.RawMessage
	Action, NotAction       json.RawMessage
	Resource, NotResource   json.RawMessage
	Condition               map[string]map[string]json.RawMessage
}

func (st policyStatement) applies(q request) bool {
	switch {
	case st.Principal != nil && !principalNames(st.Principal, q):
		return false
	case st.NotPrincipal != nil && principalNames(st.NotPrincipal, q):
		return false
	case st.Principal == nil && st.NotPrincipal == nil:
		return false
	}
	if !listMatches(st.Action, st.NotAction, q.action, true) || !listMatches(st.Resource, st.NotResource, q.resource, false) {
		return false
	}
	for op, keys := range st.Condition {
		for key, raw := range keys {
			if !conditionHolds(op, strings.ToLower(key), values(raw), q) {
				return false
			}
		}
	}
	return true
}

// principalNames: "*", or {"AWS": ...} with "*", the caller's account (its id or root), or
// the caller's principal ARN.
func principalNames(raw json.RawMessage, q request) bool {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s == "*"
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	for _, p := range values(m["AWS"]) {
		if p == "*" || p == q.account || p == "arn:aws:iam::"+q.account+":root" || p == q.principalARN {
			return true
		}
	}
	return false
}

// listMatches: the value is named by list (or not by notList, when list is absent).
func listMatches(list, notList json.RawMessage, v string, fold bool) bool {
	named := func(raw json.RawMessage) bool {
		for _, p := range values(raw) {
			if wildcard(p, v, fold) {
				return true
			}
		}
		return false
	}
	if list != nil {
		return named(list)
	}
	if notList != nil {
		return !named(notList)
	}
	return false
}

// conditionHolds evaluates one condition key; a key or operator the emulator cannot
// evaluate does not hold, so the statement does not apply.
func conditionHolds(op, key string, vals []string, q request) bool {
	var got string
	switch key {
	case "aws:principalarn":
		got = q.principalARN
	case "aws:principalaccount":
		got = q.account
	default:
		return false
	}
	op = strings.TrimSuffix(op, "IfExists")
	negated := strings.Contains(op, "Not")
	var like bool
	switch strings.Replace(op, "Not", "", 1) {
	case "StringEquals", "ArnEquals":
	case "StringLike", "ArnLike":
		like = true
	default:
		return false
	}
	matched := false
	for _, v := range vals {
		if (like && wildcard(v, got, false)) || (!like && v == got) {
			matched = true
		}
	}
	return matched != negated
}

// wildcard matches s against an IAM pattern: * any run of characters ('/' and ':' too),
// ? one character.
func wildcard(pattern, s string, fold bool) bool {
	if !strings.ContainsAny(pattern, "*?") {
		if fold {
			return strings.EqualFold(pattern, s)
		}
		return pattern == s
	}
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	if fold {
		re = "(?i)" + re
	}
	ok, err := regexp.MatchString(re, s)
	return err == nil && ok
}

// values reads a policy value that is a string or a list of strings.
func values(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var l []string
	_ = json.Unmarshal(raw, &l)
	return l
}

// deleteObjects evaluates a DeleteObjects request (POST ?delete) per key, as S3 does: it
// returns the request body without the keys the bucket policy denies, and the <Error>
// elements of the result for those. ok is false when body is not a delete request (it is
// left to the S3 handler to refuse).
func deleteObjects(policy string, q request, bucket string, body []byte) (kept []byte, left int, errs []byte, ok bool) {
	var in struct {
		XMLName xml.Name            `xml:"Delete"`
		Objects []gofakes3.ObjectID `xml:"Object"`
		Quiet   bool                `xml:"Quiet,omitempty"`
	}
	if xml.Unmarshal(body, &in) != nil {
		return body, 0, nil, false
	}
	var allowed []gofakes3.ObjectID
	var b bytes.Buffer
	for _, o := range in.Objects {
		k := q
		k.action, k.resource = "s3:DeleteObject", "arn:aws:s3:::"+bucket+"/"+o.Key
		if o.VersionID != "" {
			k.action = "s3:DeleteObjectVersion"
		}
		if !deniedBy(policy, k) {
			allowed = append(allowed, o)
			continue
		}
		b.WriteString("<Error><Key>")
		xmlEscape(&b, o.Key)
		b.WriteString("</Key>")
		if o.VersionID != "" {
			b.WriteString("<VersionId>")
			xmlEscape(&b, o.VersionID)
			b.WriteString("</VersionId>")
		}
		b.WriteString("<Code>AccessDenied</Code><Message>")
		xmlEscape(&b, deniedMessage(k))
		b.WriteString("</Message></Error>")
	}
	if b.Len() == 0 {
		return body, len(in.Objects), nil, true
	}
	in.Objects = allowed
	out, err := xml.Marshal(in)
	if err != nil {
		return body, 0, nil, false
	}
	return out, len(allowed), b.Bytes(), true
}

// resetDigests replaces the request's digests of its body, which deleteObjects changed.
func resetDigests(r *http.Request, body []byte) {
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum-") {
			r.Header.Del(k)
		}
	}
	r.Header.Del("X-Amz-Sdk-Checksum-Algorithm")
	sum := md5.Sum(body)
	r.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
	r.ContentLength = int64(len(body))
}

// withErrors adds the <Error> elements of denied keys to a DeleteResult document.
func withErrors(result, errs []byte) []byte {
	i := bytes.LastIndex(result, []byte("</DeleteResult>"))
	if i < 0 {
		return result
	}
	return append(result[:i:i], append(errs, result[i:]...)...)
}
