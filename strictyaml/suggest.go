package strictyaml

import (
	"reflect"
	"strconv"
	"strings"
)

// suggest returns the field declared next to the unknown key at path that
// the key probably means: the one spelt the same in another case, or else
// the only one at the smallest edit distance of at most two. It returns ""
// when the path cannot be followed through v's type or nothing is close.
func suggest(v any, path string) string {
	t := reflect.TypeOf(v)
	segs := splitPath(path)
	if t == nil || len(segs) == 0 {
		return ""
	}
	for _, s := range segs[:len(segs)-1] {
		if t = step(t, s); t == nil {
			return ""
		}
	}
	t = deref(t)
	if t.Kind() != reflect.Struct {
		return ""
	}
	return closest(segs[len(segs)-1], fieldNames(t, nil))
}

// splitPath splits "a.b[2].c" into "a", "b", "[2]", "c".
func splitPath(path string) []string {
	var out []string
	for part := range strings.SplitSeq(path, ".") {
		for {
			i := strings.IndexByte(part, '[')
			if i < 0 || !strings.HasSuffix(part, "]") {
				out = append(out, part)
				break
			}
			if i > 0 {
				out = append(out, part[:i])
			}
			j := strings.IndexByte(part[i:], ']') + i
			out = append(out, part[i:j+1])
			part = part[j+1:]
			if part == "" {
				break
			}
		}
	}
	return out
}

// step follows one path segment from t: an index into a list, a key into a
// map, or a field of a struct. It returns nil where the path leaves what
// the type declares.
func step(t reflect.Type, seg string) reflect.Type {
	t = deref(t)
	if strings.HasPrefix(seg, "[") {
		if _, err := strconv.Atoi(strings.Trim(seg, "[]")); err == nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			return t.Elem()
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem()
	case reflect.Struct:
		return fieldType(t, seg)
	}
	return nil
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonName is the key a struct field is read from, "" for an embedded
// struct whose fields are promoted, and "-" for a field never read.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch {
	case name != "":
		return name
	case f.Anonymous && deref(f.Type).Kind() == reflect.Struct:
		return ""
	case !f.IsExported():
		return "-"
	}
	return f.Name
}

// fieldNames appends the keys struct type t reads, promoted ones included.
func fieldNames(t reflect.Type, into []string) []string {
	for i := range t.NumField() {
		f := t.Field(i)
		switch name := jsonName(f); name {
		case "-":
		case "":
			into = fieldNames(deref(f.Type), into)
		default:
			into = append(into, name)
		}
	}
	return into
}

// fieldType is the type of the field read from key, promoted ones
// included; nil when there is none.
func fieldType(t reflect.Type, key string) reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		switch name := jsonName(f); name {
		case "-":
		case "":
			if ft := fieldType(deref(f.Type), key); ft != nil {
				return ft
			}
		case key:
			return f.Type
		}
	}
	return nil
}

// closest picks the declared name key most probably means: a short name
// takes no guess beyond its case, a long one at most two edits.
func closest(key string, names []string) string {
	for _, n := range names {
		if strings.EqualFold(n, key) {
			return n
		}
	}
	best, bestDist, tie := "", 3, false
	for _, n := range names {
		d := distance(strings.ToLower(key), strings.ToLower(n))
		switch {
		case d > min(2, len(n)/3):
			// Too far off for a name this long.
		case d < bestDist:
			best, bestDist, tie = n, d, false
		case d == bestDist:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
