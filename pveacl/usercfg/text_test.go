package usercfg

import "testing"

func TestTextEncoding(t *testing.T) {
	cases := map[string]struct{ decoded, encoded string }{
		"Plain":   {"tenant alpha", "tenant alpha"},
		"Colon":   {"a:b", "a%3Ab"},
		"Percent": {"100%", "100%25"},
		"UTF8":    {"Müller", "M%C3%BCller"},
		"Control": {"a\nb\x7f", "a%0Ab%7F"},
		"Edges":   {" a ", "%20a%20"},
	}
	for name, tc := range cases {
		if got := encodeText(tc.decoded); got != tc.encoded {
			t.Errorf("%s: encodeText(%q) = %q, want %q", name, tc.decoded, got, tc.encoded)
		}
		if got := decodeText(tc.encoded); got != tc.decoded {
			t.Errorf("%s: decodeText(%q) = %q, want %q", name, tc.encoded, got, tc.decoded)
		}
	}
	if got := decodeText("%ff%zz%4"); got != "\uFFFD%zz%4" {
		t.Errorf("malformed escapes and bytes: got %q", got)
	}
}
