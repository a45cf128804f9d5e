package pvefake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// maxPost is pve-http-server's limit on a request body other than an
// upload ($limit_max_post in src/PVE/APIServer/AnyEvent.pm, 512 KiB since
// libpve-http-server-perl 5.2.1, "fix #6230", in PVE 8.4 and 9).
const maxPost = 512 * 1024

// params are the request parameters after decoding: the path parameters,
// the query string and, for POST and PUT, the body (form-encoded or JSON).
// JSON booleans become "1" and "0", numbers keep their digits.
type params map[string]string

func (p params) has(k string) bool { _, ok := p[k]; return ok }

// flag reads a validated boolean parameter.
func (p params) flag(k string, def bool) bool {
	v, ok := p[k]
	if !ok {
		return def
	}
	return v == "1"
}

func (p params) int(k string) int { n, _ := strconv.Atoi(strings.TrimSpace(p[k])); return n }

// lists are the values of parameters sent more than once in a form or
// query string, or as a JSON array, in order: what pve-http-server's
// decode_urlencoded and decode_json make an array of, for the parameters
// whose schema type is array. params holds the last of them (a JSON
// array's items joined with commas).
type lists map[string][]string

// readParams merges the query string and the body of r.
func readParams(r *http.Request) (params, lists, *apiError) {
	out, arrays := params{}, lists{}
	for k, v := range r.URL.Query() {
		out[k] = v[len(v)-1]
		arrays[k] = v
	}
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		return out, arrays, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPost+1))
	if err != nil {
		return nil, nil, &apiError{Status: http.StatusBadRequest, Msg: "cannot read the request body\n"}
	}
	if len(body) > maxPost {
		return nil, nil, &apiError{Status: http.StatusNotImplemented, Msg: "for data too large", Plain: true}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return out, arrays, nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		return out, arrays, decodeJSONParams(body, out, arrays)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, nil, &apiError{Status: http.StatusBadRequest, Msg: "cannot parse the form-encoded body\n"}
	}
	for k, v := range form {
		out[k] = v[len(v)-1]
		arrays[k] = v
	}
	return out, arrays, nil
}

// values returns the values of an array parameter: those of a list, else
// the one value as a list of one, as PVE's RESTHandler normalises a scalar
// sent for an array.
func (l lists) values(p params, k string) []string {
	if v, ok := l[k]; ok {
		return v
	}
	if v, ok := p[k]; ok {
		return []string{v}
	}
	return nil
}

func decodeJSONParams(body []byte, out params, arrays lists) *apiError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return &apiError{Status: http.StatusBadRequest, Msg: fmt.Sprintf("unable to parse JSON body: %v\n", err)}
	}
	for k, v := range m {
		s, ok := jsonScalar(v)
		if !ok {
			return paramErr(k, "type check ('string') failed - got %s", jsonKind(v))
		}
		if v != nil {
			out[k] = s
		}
		if a, ok := v.([]any); ok && arrays != nil {
			items := make([]string, 0, len(a))
			for _, e := range a {
				item, _ := jsonScalar(e)
				items = append(items, item)
			}
			arrays[k] = items
		}
	}
	return nil
}

func jsonScalar(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case bool:
		if x {
			return "1", true
		}
		return "0", true
	case json.Number:
		return x.String(), true
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := jsonScalar(e)
			if !ok || e == nil {
				return "", false
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), true
	}
	return "", false
}

func jsonKind(v any) string {
	if _, ok := v.(map[string]any); ok {
		return "HASH"
	}
	return "ARRAY"
}

// ptype is a JSON-schema type of a parameter.
type ptype int

const (
	tString ptype = iota
	tBool
	tInt
)

// param describes one parameter of a method, like a property of PVE's
// parameter schema.
type param struct {
	name     string
	typ      ptype
	optional bool
	enum     []string
	// format checks the value; its error becomes "invalid format - <err>".
	format  func(string) error
	pattern *regexp.Regexp
	maxLen  int
	minLen  int
	min     *int
	max     *int
	// requires names a parameter that must be set with this one.
	requires string
	// items makes the parameter an array whose every item it checks, the
	// error under "<name>[<index>]" as check_prop reports an item's.
	items func(v, path string) error
}

func opt(name string, t ptype) param { return param{name: name, typ: t, optional: true} }
func req(name string, t ptype) param { return param{name: name, typ: t} }

var integerRe = regexp.MustCompile(`^\s*[+-]?\d+\s*$`)

// validate checks p against the schema; arrays holds the items of array
// parameters. extra decides whether a key the schema does not list is
// accepted (nil: none are).
func validate(p params, arrays lists, schema []param, extra func(string) bool) *apiError {
	errs := map[string]string{}
	known := map[string]bool{}
	for _, s := range schema {
		known[s.name] = true
		v, ok := p[s.name]
		if !ok {
			if !s.optional {
				errs[s.name] = "property is missing and it is not optional"
			}
			continue
		}
		if s.items != nil {
			for i, item := range arrays.values(p, s.name) {
				path := fmt.Sprintf("%s[%d]", s.name, i)
				if err := s.items(item, path); err != nil {
					errs[path] = "invalid format - " + strings.TrimSuffix(err.Error(), "\n")
				}
			}
			continue
		}
		if msg := s.check(v); msg != "" {
			errs[s.name] = msg
			continue
		}
		if s.typ == tBool {
			p[s.name] = map[bool]string{true: "1", false: "0"}[v == "1"]
		}
		if s.requires != "" && !p.has(s.requires) {
			errs[s.name] = fmt.Sprintf("parameter '%s' requires parameter '%s'", s.name, s.requires)
		}
	}
	for k := range p {
		if !known[k] && (extra == nil || !extra(k)) {
			errs[k] = "property is not defined in schema and the schema does not allow additional properties"
		}
	}
	if len(errs) > 0 {
		return paramError(errs)
	}
	return nil
}

func (s param) check(v string) string {
	switch s.typ {
	case tBool:
		if v != "1" && v != "0" {
			return fmt.Sprintf("type check ('boolean') failed - got '%s'", v)
		}
		return ""
	case tInt:
		if !integerRe.MatchString(v) {
			return fmt.Sprintf("type check ('integer') failed - got '%s'", v)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(v))
		if s.max != nil && n > *s.max {
			return fmt.Sprintf("value must have a maximum value of %d", *s.max)
		}
		if s.min != nil && n < *s.min {
			return fmt.Sprintf("value must have a minimum value of %d", *s.min)
		}
	}
	if len(s.enum) > 0 && !containsStr(s.enum, v) {
		return fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", v, strings.Join(s.enum, ", "))
	}
	if s.format != nil {
		if err := s.format(v); err != nil {
			return "invalid format - " + strings.TrimSuffix(err.Error(), "\n")
		}
	}
	if s.pattern != nil && !s.pattern.MatchString(v) {
		return "value does not match the regex pattern"
	}
	if s.maxLen > 0 && len(v) > s.maxLen {
		return fmt.Sprintf("value may only be %d characters long", s.maxLen)
	}
	if s.minLen > 0 && len(v) < s.minLen {
		return fmt.Sprintf("value must be at least %d characters long", s.minLen)
	}
	return ""
}

func containsStr(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
