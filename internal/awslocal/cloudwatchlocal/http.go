package cloudwatchlocal

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"
)

const (
	// targetPrefix is CloudWatch's service name in its wire protocols: the X-Amz-Target
	// prefix of AWS JSON 1.0 and the service of RPC v2 CBOR paths.
	targetPrefix = "GraniteServiceVersion20100801"
	shapePrefix  = "com.amazonaws.cloudwatch#"
	xmlns        = "http://monitoring.amazonaws.com/doc/2010-08-01/"
	maxBody      = 1 << 20
)

// Protocol names the protocol of a request to CloudWatch: "cbor" (Smithy RPC v2 CBOR, the
// Go SDK's), "json" (AWS JSON 1.0, the AWS CLI v1's) or "query".
func Protocol(r *http.Request) string {
	switch {
	case r.Header.Get("Smithy-Protocol") != "" || strings.HasPrefix(r.URL.Path, "/service/"+targetPrefix+"/operation/"):
		return "cbor"
	case strings.HasPrefix(r.Header.Get("X-Amz-Target"), targetPrefix+"."):
		return "json"
	}
	return "query"
}

// Operation returns the operation of an RPC v2 CBOR request, which only its path names;
// "" for other requests.
func Operation(r *http.Request) string {
	if Protocol(r) != "cbor" {
		return ""
	}
	return path.Base(r.URL.Path)
}

// operation decodes a request into a fresh input and calls the Service with it.
type operation struct {
	input func() any
	call  func(s *Service, in any) (any, error)
}

func op[I any](call func(s *Service, in *I) (any, error)) operation {
	return operation{input: func() any { return new(I) }, call: func(s *Service, in any) (any, error) { return call(s, in.(*I)) }}
}

type describeAlarmsOutput struct {
	MetricAlarms    []Alarm    `json:"MetricAlarms" xml:"MetricAlarms>member"`
	CompositeAlarms []struct{} `json:"CompositeAlarms" xml:"-"`
	NextToken       string     `json:"NextToken,omitempty" xml:"NextToken,omitempty"`
}

var operations = map[string]operation{
	"PutMetricAlarm": op(func(s *Service, in *MetricAlarmInput) (any, error) { return nil, s.PutMetricAlarm(*in) }),
	"DescribeAlarms": op(func(s *Service, in *Filter) (any, error) {
		alarms, next, err := s.DescribeAlarms(*in)
		if err != nil {
			return nil, err
		}
		return describeAlarmsOutput{MetricAlarms: alarms, CompositeAlarms: []struct{}{}, NextToken: next}, nil
	}),
	"SetAlarmState": op(func(s *Service, in *struct{ AlarmName, StateValue, StateReason, StateReasonData string }) (any, error) {
		return nil, s.SetAlarmState(in.AlarmName, in.StateValue, in.StateReason, in.StateReasonData)
	}),
	"DeleteAlarms": op(func(s *Service, in *struct{ AlarmNames []string }) (any, error) {
		return nil, s.DeleteAlarms(in.AlarmNames...)
	}),
}

func served() string {
	names := make([]string, 0, len(operations))
	for n := range operations {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// ServeHTTP answers CloudWatch requests in the protocol they came in.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	proto := Protocol(r)
	reqID := newRequestID()
	w.Header().Set("x-amzn-RequestId", reqID)
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err == nil && len(body) > maxBody {
		err = fmt.Errorf("the request is larger than %d bytes", maxBody)
	}
	if err != nil {
		writeError(w, proto, reqID, &Error{Shape: "SerializationException", Code: "MalformedInput", Message: "could not read the request: " + err.Error(), Status: 400})
		return
	}
	var action string
	var form url.Values
	switch proto {
	case "cbor":
		action = path.Base(r.URL.Path)
	case "json":
		_, action, _ = strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	default:
		form, err = url.ParseQuery(string(body))
		if err != nil {
			writeError(w, proto, reqID, &Error{Code: "MalformedQueryString", Message: err.Error(), Status: 400})
			return
		}
		for k, v := range r.URL.Query() {
			form[k] = append(form[k], v...)
		}
		action = form.Get("Action")
	}
	o, ok := operations[action]
	if !ok {
		code := "InvalidAction"
		if proto != "query" {
			code = "UnknownOperationException"
		}
		writeError(w, proto, reqID, &Error{Shape: code, Code: code, Status: 400,
			Message: fmt.Sprintf("The action %q is not valid for this endpoint (the local emulator's CloudWatch serves %s)", action, served())})
		return
	}
	in := o.input()
	if err := decode(proto, body, form, in); err != nil {
		writeError(w, proto, reqID, err)
		return
	}
	out, err := o.call(s, in)
	if err != nil {
		writeError(w, proto, reqID, err)
		return
	}
	writeResult(w, proto, reqID, action, out)
}

func decode(proto string, body []byte, form url.Values, in any) error {
	var err error
	switch proto {
	case "cbor":
		if len(body) > 0 {
			err = cbor.Unmarshal(body, in)
		}
	case "json":
		if len(body) > 0 {
			err = json.Unmarshal(body, in)
		}
	default:
		err = decodeForm(form, "", reflect.ValueOf(in).Elem())
	}
	var e *Error
	if err != nil && !errors.As(err, &e) {
		err = &Error{Shape: "SerializationException", Code: "MalformedInput", Message: "could not read the request: " + err.Error(), Status: 400}
	}
	return err
}

func writeResult(w http.ResponseWriter, proto, reqID, action string, out any) {
	switch proto {
	case "cbor":
		w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
		if out == nil {
			w.WriteHeader(http.StatusOK)
			return
		}
		b, err := cbor.Marshal(out)
		if err != nil {
			writeError(w, proto, reqID, err)
			return
		}
		w.Header().Set("Content-Type", "application/cbor")
		_, _ = w.Write(b)
	case "json":
		if out == nil {
			out = struct{}{}
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_ = json.NewEncoder(w).Encode(out)
	default:
		type envelope struct {
			XMLName  xml.Name
			Xmlns    string `xml:"xmlns,attr"`
			Result   any    `xml:",omitempty"`
			Metadata struct {
				RequestID string `xml:"RequestId"`
			} `xml:"ResponseMetadata"`
		}
		env := envelope{XMLName: xml.Name{Local: action + "Response"}, Xmlns: xmlns}
		env.Metadata.RequestID = reqID
		if out != nil {
			env.Result = wrapped{name: action + "Result", v: out}
		}
		b, err := xml.Marshal(env)
		if err != nil {
			writeError(w, proto, reqID, err)
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		_, _ = w.Write([]byte(xml.Header))
		_, _ = w.Write(b)
	}
}

// wrapped renders v under the element <ActionResult>.
type wrapped struct {
	name string
	v    any
}

func (r wrapped) MarshalXML(e *xml.Encoder, _ xml.StartElement) error {
	return e.EncodeElement(r.v, xml.StartElement{Name: xml.Name{Local: r.name}})
}

func writeError(w http.ResponseWriter, proto, reqID string, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Shape: "InternalServiceFault", Code: "InternalServiceError", Message: err.Error(), Status: 500}
	}
	fault := "Sender"
	if e.Status >= 500 {
		fault = "Receiver"
	}
	shape := e.Shape
	if shape == "" {
		shape = e.Code
	}
	switch proto {
	case "cbor", "json":
		w.Header().Set("X-Amzn-Query-Error", e.Code+";"+fault)
		body := map[string]string{"__type": shapePrefix + shape, "message": e.Message}
		if proto == "cbor" {
			b, _ := cbor.Marshal(body)
			w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
			w.Header().Set("Content-Type", "application/cbor")
			w.WriteHeader(e.Status)
			_, _ = w.Write(b)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(e.Status)
		_ = json.NewEncoder(w).Encode(body)
	default:
		type xerr struct{ Type, Code, Message string }
		type envelope struct {
			XMLName   xml.Name `xml:"ErrorResponse"`
			Xmlns     string   `xml:"xmlns,attr"`
			Error     xerr
			RequestID string `xml:"RequestId"`
		}
		b, _ := xml.Marshal(envelope{Xmlns: xmlns, Error: xerr{fault, e.Code, e.Message}, RequestID: reqID})
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(e.Status)
		_, _ = w.Write([]byte(xml.Header))
		_, _ = w.Write(b)
	}
}

// WriteCBORError answers an RPC v2 CBOR request with an error the emulator's router makes
// (throttling injected by a test, a request before the emulator is ready).
func WriteCBORError(w http.ResponseWriter, status int, code, message string) {
	writeError(w, "cbor", newRequestID(), &Error{Code: code, Message: message, Status: status})
}

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// decodeForm fills the struct v from query protocol parameters: Name, List.member.N,
// Struct.Field, and List.member.N.Field for lists of structures, named as v's json tags.
func decodeForm(form url.Values, prefix string, v reflect.Value) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if err := decodeValue(form, prefix+name, v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

func present(form url.Values, key string) bool {
	if _, ok := form[key]; ok {
		return true
	}
	for k := range form {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

func decodeValue(form url.Values, key string, v reflect.Value) error {
	if !present(form, key) {
		return nil
	}
	bad := func(err error) error {
		return invalidValue("The value %q of the parameter %s is not valid: %v", form.Get(key), key, err)
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := decodeValue(form, key, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
	case reflect.String:
		v.SetString(form.Get(key))
	case reflect.Bool:
		b, err := strconv.ParseBool(form.Get(key))
		if err != nil {
			return bad(err)
		}
		v.SetBool(b)
	case reflect.Int32, reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(form.Get(key), 10, v.Type().Bits())
		if err != nil {
			return bad(err)
		}
		v.SetInt(n)
	case reflect.Float64:
		f, err := strconv.ParseFloat(form.Get(key), 64)
		if err != nil {
			return bad(err)
		}
		v.SetFloat(f)
	case reflect.Slice:
		l := reflect.MakeSlice(v.Type(), 0, 0)
		for n := 1; ; n++ {
			k := key + ".member." + strconv.Itoa(n)
			if !present(form, k) {
				break
			}
			e := reflect.New(v.Type().Elem()).Elem()
			if err := decodeValue(form, k, e); err != nil {
				return err
			}
			l = reflect.Append(l, e)
		}
		v.Set(l)
	case reflect.Struct:
		return decodeForm(form, key+".", v)
	case reflect.Interface:
		v.Set(reflect.ValueOf(map[string]any{})) // present: refused by the operation
	}
	return nil
}

// Timestamp is a time as each protocol writes it: epoch seconds in JSON and CBOR (tag 1),
// ISO 8601 in XML.
type Timestamp time.Time

func (t Timestamp) seconds() float64 { return float64(time.Time(t).UnixMilli()) / 1000 }

func (t Timestamp) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(t.seconds(), 'f', -1, 64)), nil
}

func (t *Timestamp) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("timestamp %s: %w", b, err)
	}
	*t = Timestamp(time.UnixMilli(int64(math.Round(f * 1000))).UTC())
	return nil
}

func (t Timestamp) MarshalCBOR() ([]byte, error) {
	return cbor.Marshal(cbor.Tag{Number: 1, Content: t.seconds()})
}

func (t Timestamp) MarshalText() ([]byte, error) {
	return []byte(time.Time(t).UTC().Format("2006-01-02T15:04:05.000Z")), nil
}

// Double is a number of the model's double type, which JSON and XML write with a decimal
// point (5.0, not 5) as AWS does.
type Double float64

func (d Double) MarshalText() ([]byte, error) {
	f := float64(d)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("%v cannot be written as a number", f)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return []byte(s), nil
}

func (d Double) MarshalJSON() ([]byte, error) { return d.MarshalText() }

func (d Double) MarshalCBOR() ([]byte, error) { return cbor.Marshal(float64(d)) }

func encodeToken(i int) string { return strconv.FormatInt(int64(i), 36) }

func decodeToken(s string) (int, bool) {
	n, err := strconv.ParseInt(s, 36, 32)
	return int(n), err == nil && n >= 0
}

// Actions lists the actions this emulator serves, sorted.
func Actions() []string { return strings.Split(served(), ", ") }
