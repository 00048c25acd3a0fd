package stslocal

import (
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

const xmlns = "https://sts.amazonaws.com/doc/2011-06-15/"

// ServeHTTP answers the query protocol (form-encoded POST or GET) the SDKs and the AWS CLI
// speak. The caller comes from the request's context (WithCaller); without one, the
// request is the home account's, which the router always sets.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rand.Uint32(), rand.Uint32()&0xffff, rand.Uint32()&0xffff, rand.Uint32()&0xffff, rand.Uint64()&0xffffffffffff)
	if err := r.ParseForm(); err != nil {
		writeError(w, id, &Error{Code: "InvalidQueryParameter", Status: 400, Message: err.Error()})
		return
	}
	caller, ok := CallerFrom(r.Context())
	if !ok {
		writeError(w, id, &Error{Code: "InvalidClientTokenId", Status: 403, Message: ErrInvalid.Error()})
		return
	}
	switch action := r.Form.Get("Action"); action {
	case "GetCallerIdentity":
		res := identityResult{Account: caller.Account, Arn: caller.ARN(), UserID: caller.Account}
		if caller.Session != nil {
			res.UserID = caller.Session.RoleID + ":" + caller.Session.Name
		}
		writeXML(w, identityResponse{Result: res, RequestID: id})
	case "AssumeRole":
		in := AssumeInput{RoleARN: r.Form.Get("RoleArn"), SessionName: r.Form.Get("RoleSessionName"), ExternalID: r.Form.Get("ExternalId")}
		if v := r.Form.Get("DurationSeconds"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				writeError(w, id, validation("1 validation error detected: Value '%s' at 'durationSeconds' failed to satisfy constraint: Member must be a number", v))
				return
			}
			in.Duration = time.Duration(n) * time.Second
		}
		ss, err := s.AssumeRole(caller, in)
		if err != nil {
			writeError(w, id, err)
			return
		}
		writeXML(w, assumeResponse{RequestID: id, Result: assumeResult{
			User:        assumedUser{Arn: ss.ARN(), ID: ss.RoleID + ":" + ss.Name},
			Credentials: credentials{AccessKeyID: ss.AccessKeyID, SecretAccessKey: ss.SecretAccessKey, SessionToken: ss.Token, Expiration: ss.Expires.UTC().Format(time.RFC3339)},
		}})
	default:
		writeError(w, id, &Error{Code: "InvalidAction", Status: 400, Message: fmt.Sprintf("Could not find operation %s for version 2011-06-15", action)})
	}
}

type identityResponse struct {
	XMLName   xml.Name       `xml:"GetCallerIdentityResponse"`
	Xmlns     string         `xml:"xmlns,attr"`
	Result    identityResult `xml:"GetCallerIdentityResult"`
	RequestID string         `xml:"ResponseMetadata>RequestId"`
}

type identityResult struct {
	Arn     string `xml:"Arn"`
	UserID  string `xml:"UserId"`
	Account string `xml:"Account"`
}

type assumeResponse struct {
	XMLName   xml.Name     `xml:"AssumeRoleResponse"`
	Xmlns     string       `xml:"xmlns,attr"`
	Result    assumeResult `xml:"AssumeRoleResult"`
	RequestID string       `xml:"ResponseMetadata>RequestId"`
}

type assumeResult struct {
	User        assumedUser `xml:"AssumedRoleUser"`
	Credentials credentials `xml:"Credentials"`
}

type assumedUser struct {
	Arn string `xml:"Arn"`
	ID  string `xml:"AssumedRoleId"`
}

type credentials struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

func writeXML(w http.ResponseWriter, v any) {
	switch r := v.(type) {
	case identityResponse:
		r.Xmlns = xmlns
		v = r
	case assumeResponse:
		r.Xmlns = xmlns
		v = r
	}
	b, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Write(append([]byte(xml.Header), b...))
}

type errorResponse struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	Type      string   `xml:"Error>Type"`
	Code      string   `xml:"Error>Code"`
	Message   string   `xml:"Error>Message"`
	RequestID string   `xml:"RequestId"`
}

func writeError(w http.ResponseWriter, id string, err error) {
	e, ok := err.(*Error)
	if !ok {
		e = &Error{Code: "InternalFailure", Status: 500, Message: err.Error()}
	}
	typ := "Sender"
	if e.Status >= 500 {
		typ = "Receiver"
	}
	b, _ := xml.Marshal(errorResponse{Xmlns: xmlns, Type: typ, Code: e.Code, Message: e.Message, RequestID: id})
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-RequestId", id)
	w.WriteHeader(e.Status)
	w.Write(b)
}

// Actions lists the actions this emulator serves, sorted.
func Actions() []string { return []string{"AssumeRole", "GetCallerIdentity"} }
