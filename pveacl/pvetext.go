package pveacl

import (
	"encoding/hex"
	"strings"
)

// Unescape decodes %XX escapes and leaves every other byte, '+' included, as
// Perl's URI::Escape::uri_unescape does: PVE decodes user.cfg comments and
// cookie values this way. A '%' not followed by two hex digits stays.
func Unescape(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := hex.DecodeString(s[i+1 : i+3]); err == nil {
				b.WriteByte(v[0])
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// SplitList splits a list the way PVE's split_list does: when the text holds
// a NUL byte it is the only separator (trailing empty items dropped, as
// Perl's split does); otherwise commas, semicolons and whitespace all
// separate and empty items vanish.
func SplitList(s string) []string {
	if strings.IndexByte(s, 0) >= 0 {
		items := strings.Split(s, "\x00")
		for len(items) > 0 && items[len(items)-1] == "" {
			items = items[:len(items)-1]
		}
		return items
	}
	return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(",; \t\n\v\f\r", r) })
}
