package pvepath

import (
	"net/url"
	"strings"
	"testing"
)

// TestPath: each segment stays one segment of the path a server decodes,
// whatever it holds; names as PVE gives them are written as they are.
func TestPath(t *testing.T) {
	cases := map[string]struct {
		segs []string
		want string
	}{
		"Plain":     {[]string{"nodes", "pve1", "qemu", "9000"}, "/nodes/pve1/qemu/9000"},
		"Volume":    {[]string{"nodes", "pve1", "storage", "local", "content", "local:import/talos.raw"}, "/nodes/pve1/storage/local/content/local:import%2Ftalos.raw"},
		"UPID":      {[]string{"nodes", "pve1", "tasks", "UPID:pve1:0000A1B2:00C0FFEE:66000000:qmcreate:9000:root@pam!t:"}, "/nodes/pve1/tasks/UPID:pve1:0000A1B2:00C0FFEE:66000000:qmcreate:9000:root@pam%21t:"},
		"Slashes":   {[]string{"nodes", climb + climb + "access/users", "storage"}, "/nodes/..%2F..%2Faccess%2Fusers/storage"},
		"DotDot":    {[]string{"nodes", "..", "storage"}, "/nodes/%2E%2E/storage"},
		"Dot":       {[]string{"nodes", ".", "storage"}, "/nodes/%2E/storage"},
		"Query":     {[]string{"nodes", "a?b=c#d"}, "/nodes/a%3Fb=c%23d"},
		"Percent":   {[]string{"access", "users", "a%2Fb@pve"}, "/access/users/a%252Fb@pve"},
		"Spaces":    {[]string{"cluster", "ha", "rules", "a b"}, "/cluster/ha/rules/a%20b"},
		"Empty":     {[]string{"nodes", "", "storage"}, "/nodes//storage"},
		"NoSegment": {nil, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Path(tc.segs...)
			if got != tc.want {
				t.Fatalf("Path(%q) = %q, want %q", tc.segs, got, tc.want)
			}
			assertSegments(t, got, tc.segs)
		})
	}
}

// assertSegments checks that path, as a server decodes it segment by
// segment, yields segs, and that no raw segment is a dot segment.
func assertSegments(t *testing.T, path string, segs []string) {
	t.Helper()
	if len(segs) == 0 {
		return
	}
	raw := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(raw) != len(segs) {
		t.Fatalf("%q has %d segments, want %d", path, len(raw), len(segs))
	}
	for i, r := range raw {
		if r == "." || r == ".." {
			t.Errorf("%q has the dot segment %q", path, r)
		}
		if got, err := url.PathUnescape(r); err != nil || got != segs[i] {
			t.Errorf("segment %d of %q decodes to %q (%v), want %q", i, path, got, err, segs[i])
		}
	}
}

// climb is one level up; the hostile names climb with it.
const climb = "../"

// FuzzPath: any segments make a path of as many segments, none of them a
// dot segment, each decoding to its segment.
func FuzzPath(f *testing.F) {
	f.Add("nodes", climb+climb+"x", "..")
	f.Add("a/b", ".", "%2e%2E")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		assertSegments(t, Path(a, b, c), []string{a, b, c})
	})
}
