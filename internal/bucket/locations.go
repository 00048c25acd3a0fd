package bucket

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// What a template may name of cairn's bucket. Every S3 location a template gives
// CloudFormation (a nested stack's TemplateURL, a function's Code, AWS::Include's
// Location, a definition's S3 location, ...) is fetched with the rights of the deployer,
// whose role reads every object of cairn's bucket: graphs, runs, plans, other
// deployments' bundles. One rule, here, says which of its keys a template may name: the
// templates cairn uploads for TemplateURL (templates/SHA256.json) and the artifacts it
// packages (assets/SHA256.EXT), both addressed by content. Anything else (deployments/,
// state/, runs/, approvals/, plans/, locks/, ports/, drift/, any other key) is refused,
// whether the template spells the location out or computes it.

// TemplateMayName reports whether a template may name key of cairn's bucket: a template
// cairn uploaded (templates/SHA256.json) or an artifact it packaged (assets/SHA256.EXT).
func TemplateMayName(key string) bool {
	if sha, ok := leaf(key, TemplatesPrefix, jsonExt); ok && isSHA256(sha) {
		return true
	}
	_, _, ok := ParseAssetKey(key)
	return ok
}

func isSHA256(s string) bool { return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == "" }

// Part is a piece of a location a template gives: literal Text, or, with Unknown set, a
// value cairn cannot know before CloudFormation computes it (Unknown says what it is:
// "Fn::ImportValue shared-bucket", "parameter Bucket").
type Part struct {
	Text    string
	Unknown string
	// Own says the unknown value is the name or domain name of a bucket the template
	// itself creates (a Ref or Fn::GetAtt of its AWS::S3::Bucket): a new bucket, never
	// cairn's, which exists already.
	Own bool
}

// Location is one S3 object a template names: an s3:// or https:// URL (URL), or the
// object form's bucket and key (Bucket and Key, e.g. Code's S3Bucket and S3Key). Each is a
// sequence of parts, literal or unknown.
type Location struct {
	URL         []Part
	Bucket, Key []Part
	// Object says the location is in the object form (Bucket and Key).
	Object bool
}

// URLLocation is the location of a literal URL.
func URLLocation(raw string) Location { return Location{URL: []Part{{Text: raw}}} }

// LocationError is why CheckLocation refuses a location.
type LocationError struct {
	// Object is the object of cairn's bucket the location names (s3://BUCKET/KEY), when
	// it is known; Unsure says it may name one, through Unknown.
	Object  string
	Unsure  bool
	Unknown string
}

func (e *LocationError) Error() string {
	if e.Unsure {
		return fmt.Sprintf("its bucket or key is computed from %s, which cairn cannot know before CloudFormation does, so it could name an object of cairn's own bucket (whose role reads graphs, runs and other deployments' bundles): give the bucket and key literally, or from a parameter whose value the config sets", e.Unknown)
	}
	return fmt.Sprintf("names %s, an object of cairn's own bucket: a template may name cairn's bucket only at the templates and artifacts cairn uploads itself (%sSHA256.json, %sSHA256.EXT); name a file of the bundle (cairn packages it) or an object of a bucket of your own", e.Object, TemplatesPrefix, AssetsPrefix)
}

// CheckLocation refuses a location that names, or could name, an object of cairn's bucket
// name other than those TemplateMayName allows. A URL is read the way S3 and its
// endpoints read it: s3://BUCKET/KEY, a host BUCKET.s3... (virtual-hosted style, any
// region or dual-stack endpoint), a host that is the bucket's name, or any other host
// with /BUCKET/KEY as its path (path style, also an endpoint such as the emulator's). A
// key that leaves an allowed folder again (dot segments, escapes, //) is refused too.
// A location whose bucket is unknown and could be cairn's, or whose bucket is cairn's and
// key unknown, is refused as unsure (the error is a *LocationError with Unsure set):
// cairn checks it again once it knows more (a parameter's value), and refuses what it
// still cannot tell. name "" (cairn's bucket not known) refuses nothing.
func CheckLocation(loc Location, name string) error {
	if name == "" {
		return nil
	}
	if loc.Object {
		return checkObject(loc.Bucket, loc.Key, name)
	}
	return checkURL(loc.URL, name)
}

// CheckTemplateURL refuses a literal template URL (a stack's template_url) that names an
// object of cairn's bucket name a template may not name (CheckLocation).
func CheckTemplateURL(raw, name string) error {
	err := CheckLocation(URLLocation(raw), name)
	if err != nil {
		return fmt.Errorf("%q %w", raw, err)
	}
	return nil
}

// IsUnsure reports whether err is CheckLocation's refusal of a location it cannot tell.
func IsUnsure(err error) bool {
	var le *LocationError
	return errors.As(err, &le) && le.Unsure
}

// hole stands for an unknown part in a joined string: no URL or bucket name holds it.
const (
	hole    = '\x00'
	ownHole = '\x01'
)

// joined returns parts as one string, each unknown part a hole, and the first unknown's
// description.
func joined(parts []Part) (string, string) {
	var b strings.Builder
	unknown := ""
	for _, p := range parts {
		switch {
		case p.Unknown == "":
			b.WriteString(strings.Map(func(r rune) rune {
				if r == hole || r == ownHole {
					return '_' // never a bucket name's, never a hole
				}
				return r
			}, p.Text))
		case p.Own:
			b.WriteRune(ownHole)
		default:
			b.WriteRune(hole)
		}
		if p.Unknown != "" && unknown == "" {
			unknown = p.Unknown
		}
	}
	return b.String(), unknown
}

func hasHole(s string) bool { return strings.ContainsRune(s, hole) || strings.ContainsRune(s, ownHole) }

// checkObject checks the object form.
func checkObject(bucketParts, keyParts []Part, name string) error {
	b, unknown := joined(bucketParts)
	k, keyUnknown := joined(keyParts)
	switch {
	case b == string(ownHole):
		return nil // the template's own bucket
	case hasHole(b):
		if !couldBe(b, name) {
			return nil
		}
		return &LocationError{Unsure: true, Unknown: unknown}
	case b != name:
		return nil
	}
	return checkKey(k, keyUnknown, name)
}

// checkKey checks key of cairn's bucket.
func checkKey(k, unknown, name string) error {
	if hasHole(k) {
		return &LocationError{Unsure: true, Unknown: unknown}
	}
	if TemplateMayName(k) && path.Clean(k) == k && !strings.Contains(k, "//") {
		return nil
	}
	return &LocationError{Object: URI(name, k)}
}

// checkURL checks the URL form.
func checkURL(parts []Part, name string) error {
	s, unknown := joined(parts)
	s = strings.TrimSpace(s)
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || hasHole(scheme) {
		if hasHole(s) {
			return &LocationError{Unsure: true, Unknown: unknown} // the unknown could be a whole URL
		}
		return nil // no URL: a path of the bundle, packaged by cairn
	}
	host, p, _ := strings.Cut(rest, "/")
	if hasHole(host) {
		if host == string(ownHole) || strings.HasPrefix(host, string(ownHole)+".") {
			return nil // the template's own bucket, or its domain name
		}
		return &LocationError{Unsure: true, Unknown: unknown}
	}
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	host = strings.ToLower(host)
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i] // a version id, a fragment: not the key
	}
	key := unescape(p)
	var bucketName string
	switch {
	case strings.EqualFold(scheme, "s3"):
		bucketName = host
	case host == name || strings.HasPrefix(host, name+"."):
		bucketName = name // virtual-hosted style
	case virtualHosted(host):
		return nil // another bucket's endpoint
	default:
		first, rest, _ := strings.Cut(key, "/")
		if i := strings.IndexAny(first, string([]rune{hole, ownHole})); i >= 0 {
			// The unknown may hold a '/': the bucket is the text before it and some of it.
			if !strings.HasPrefix(name, first[:i]) {
				return nil
			}
			return &LocationError{Unsure: true, Unknown: unknown}
		}
		bucketName, key = first, rest // path style, on any endpoint
	}
	if bucketName != name {
		return nil
	}
	return checkKey(key, unknown, name)
}

// virtualHosted reports whether host is S3's virtual-hosted endpoint of a bucket:
// BUCKET.s3.amazonaws.com, BUCKET.s3.REGION.amazonaws.com, BUCKET.s3-REGION...,
// BUCKET.s3.dualstack.REGION...: it names that bucket, whatever its path says.
func virtualHosted(host string) bool {
	i := strings.Index(host, ".s3.")
	if j := strings.Index(host, ".s3-"); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	return i > 0 && strings.Contains(host[i:], "amazonaws.")
}

// unescape is the path as S3 reads it: %-escapes decoded.
func unescape(p string) string {
	if u, err := url.PathUnescape(p); err == nil {
		return u
	}
	return p
}

// couldBe reports whether pattern s (holes matching any text) could be name.
func couldBe(s, name string) bool {
	s = strings.ReplaceAll(s, string(ownHole), string(hole))
	// glob matching, a hole for any run of characters
	px, nx := 0, 0
	nextPx, nextNx := -1, -1
	for px < len(s) || nx < len(name) {
		if px < len(s) {
			if s[px] == hole {
				nextPx, nextNx = px, nx+1
				px++
				continue
			}
			if nx < len(name) && s[px] == name[nx] {
				px++
				nx++
				continue
			}
		}
		if nextNx > 0 && nextNx <= len(name) {
			px, nx = nextPx, nextNx
			continue
		}
		return false
	}
	return true
}
