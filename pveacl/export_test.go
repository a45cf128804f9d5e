package pveacl

// What the tests of package pveacl_test reach inside the package.
var (
	UserIDRe            = userIDRe
	Privileges          = privileges
	ValidRealm          = validRealm
	ErrInvalidID        = errInvalidID
	ErrInvalidPath      = errInvalidPath
	ErrInvalidPrivilege = errInvalidPrivilege
)

// Roles is roleNames: the roles of an auth id on a path, as
// PVE::AccessControl::roles computes them.
func (e *Evaluator) Roles(authID, path string) map[string]bool { return e.roleNames(authID, path) }

// With returns s with one more privilege and its propagate flag, for the
// reference evaluator of the tests.
func (s PrivSet) With(name string, propagate bool) PrivSet { return s.with(name, propagate) }

// BuiltinPrivs returns the privileges of a built-in role of version v.
func BuiltinPrivs(v Version, role string) (PrivSet, bool) {
	s, ok := table(v).builtins[role]
	return s, ok
}

// Intersect is intersect, for the reference evaluator of the tests.
func (s PrivSet) Intersect(o PrivSet) PrivSet { return s.intersect(o) }
