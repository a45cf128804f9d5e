package capmox

import "strings"

// TalosTag is the template tag that names the Talos release a template
// boots: talos-<version>, such as talos-v1.13.6. A template carries it, and
// so do the templateTags of every pool that selects the template.
func TalosTag(version string) string { return "talos-" + version }

// MismatchedTalosTag returns the index of the first of tags that names a
// Talos release (talos-v and a digit) other than version, and false when
// none does. It is the one rule for both ends: a template built for
// version may not carry another release's tag (template print, template
// create), and a pool that installs version may not select a template by
// another release's tag (render nodes), since the template would boot a
// different Talos from the one the installer writes.
func MismatchedTalosTag(tags []string, version string) (int, bool) {
	want := TalosTag(version)
	for i, t := range tags {
		if rest, ok := strings.CutPrefix(t, "talos-v"); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' && t != want {
			return i, true
		}
	}
	return 0, false
}
