package strictyaml

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// size takes a number or a string, as a quantity does.
type size string

func (s *size) UnmarshalJSON(b []byte) error {
	switch b[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		*s = size(b)
		return nil
	}
	return fmt.Errorf("want a number or a string, got %c", b[0])
}

type sized struct {
	ref   `json:",inline"`
	Disk  *size           `json:"disk,omitempty"`
	Pools []sizedPool     `json:"pools,omitempty"`
	ByNam map[string]size `json:"byName,omitempty"`
}

type sizedPool struct {
	Name   string `json:"name"`
	Memory size   `json:"memory"`
}

// TestValueErrorNamesPath: a value that its type's UnmarshalJSON refuses
// is named by its path, in a struct field, a list and a map, whatever the
// YAML kind of the value; a good value next to it is read.
func TestValueErrorNamesPath(t *testing.T) {
	var good sized
	if err := Unmarshal([]byte("kind: K\ndisk: 4Gi\npools: [{name: a, memory: 2}]\nbyName: {x: 1}\n"), &good); err != nil || *good.Disk != `"4Gi"` || good.Pools[0].Memory != "2" {
		t.Fatalf("control: %+v, %v", good, err)
	}
	cases := map[string]struct{ in, path, got string }{
		"Bool":      {"disk: true\n", "disk", "t"},
		"List":      {"disk: [1, 2]\n", "disk", "["},
		"Map":       {"disk: {a: 1}\n", "disk", "{"},
		"InList":    {"pools: [{name: a, memory: 2}, {name: b, memory: [4]}]\n", "pools[1].memory", "["},
		"InMap":     {"byName: {x: 1, k: false}\n", "byName.k", "f"},
		"FirstOnly": {"disk: 1\npools: [{name: a, memory: {b: 1}}, {name: b, memory: [1]}]\n", "pools[0].memory", "{"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Unmarshal([]byte(tc.in), &sized{})
			var ve *ValueError
			if !errors.As(err, &ve) || ve.Path != tc.path || !strings.HasSuffix(err.Error(), "got "+tc.got) || !strings.HasPrefix(err.Error(), tc.path+": ") {
				t.Errorf("Unmarshal(%q) = %v, want the refusal of %s", tc.in, err, tc.path)
			}
		})
	}
	if err := Unmarshal([]byte("pools: x\n"), &sized{}); errors.As(err, new(*ValueError)) {
		t.Errorf("a decoder type error is no ValueError: %v", err)
	}
}
