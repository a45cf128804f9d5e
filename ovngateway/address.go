package ovngateway

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ParseAddress splits a comma-separated list of OVSDB endpoints, such as
// "ssl:10.0.0.1:6641,ssl:10.0.0.2:6641", into its entries, in order. Each
// entry is tcp:<host>:<port>, ssl:<host>:<port> (IPv6 hosts in brackets) or
// unix:<path>. Spaces around entries are dropped.
func ParseAddress(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("OVN NB address is empty: %w: give one or more of tcp:<host>:<port>, ssl:<host>:<port> or unix:<path>, separated by commas", ErrInvalid)
	}
	var out []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if err := validEndpoint(e); err != nil {
			return nil, fmt.Errorf("OVN NB address %q: %w", s, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func validEndpoint(e string) error {
	scheme, rest, _ := strings.Cut(e, ":")
	switch scheme {
	case "tcp", "ssl":
		host, port, err := net.SplitHostPort(rest)
		if err != nil || host == "" || strings.ContainsAny(host, " /\t") {
			return fmt.Errorf("endpoint %q: %w: want %s:<host>:<port>", e, ErrInvalid, scheme)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return fmt.Errorf("endpoint %q: %w: port %q is not a number from 1 to 65535", e, ErrInvalid, port)
		}
		return nil
	case "unix":
		// libovsdb reads the path of a parsed URL, so it must be absolute
		// and survive URL parsing unchanged.
		u, err := url.Parse(e)
		if err != nil || !strings.HasPrefix(rest, "/") || u.Path != rest || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("endpoint %q: %w: want unix:<absolute path> without '?', '#' or '%%'", e, ErrInvalid)
		}
		return nil
	case "":
		return fmt.Errorf("endpoint %q: %w: it is empty or has no scheme; use tcp:, ssl: or unix:", e, ErrInvalid)
	}
	return fmt.Errorf("endpoint %q: %w: unknown scheme %q; use tcp:, ssl: or unix:", e, ErrInvalid, scheme)
}

// needsTLS reports whether any endpoint is ssl:.
func needsTLS(endpoints []string) bool {
	for _, e := range endpoints {
		if strings.HasPrefix(e, "ssl:") {
			return true
		}
	}
	return false
}
