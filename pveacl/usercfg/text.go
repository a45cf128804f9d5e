package usercfg

import (
	"strings"
	"unicode/utf8"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// encodeText escapes free text for user.cfg the way PVE's encode_text does:
// the UTF-8 bytes outside 0x20-0x24, 0x26-0x39 and 0x3b-0x7e (control and
// high-bit bytes, '%' and ':') become %XX. A leading or trailing space is
// escaped too, so that the line's trimming cannot eat it.
func encodeText(s string) string {
	const digits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		edgeSpace := c == ' ' && (i == 0 || i == len(s)-1)
		if c < 0x20 || c == '%' || c == ':' || c > 0x7e || edgeSpace {
			b.WriteByte('%')
			b.WriteByte(digits[c>>4])
			b.WriteByte(digits[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// decodeText reverses encodeText: %XX escapes become bytes, and the result
// is read as UTF-8 with malformed sequences replaced by U+FFFD.
func decodeText(s string) string {
	if strings.IndexByte(s, '%') < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(pveacl.Unescape(s), "\uFFFD")
}

// perlTrue is Perl's truth of a string: only "" and "0" are false.
func perlTrue(s string) bool { return s != "" && s != "0" }

// trimPerl removes leading and trailing Perl whitespace.
func trimPerl(s string) string {
	return strings.Trim(s, " \t\n\v\f\r")
}

// lineFields splits a user.cfg line on every ':' (trailing empty fields
// dropped, as Perl's split does) and trims each field.
func lineFields(line string) []string {
	parts := strings.Split(line, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	for i := range parts {
		parts[i] = trimPerl(parts[i])
	}
	return parts
}

// field returns fields[i] or "" when the line is shorter.
func field(fields []string, i int) string {
	if i < len(fields) {
		return fields[i]
	}
	return ""
}

// truthyText keeps a decoded free-text value only when Perl would write it
// back (PVE's writer drops "" and "0").
func truthyText(s string) string {
	if perlTrue(s) {
		return s
	}
	return ""
}
