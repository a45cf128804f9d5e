package liveacl

// The tests of package live_test reach these through the names below.
var (
	ApplyChanges = applyChanges
	ParseVersion = parseVersion
)

// ViewError is viewError, for errors.As in the tests.
type ViewError = viewError

// MaxManifestsBytes is the bound on the file ManifestSink reads.
const MaxManifestsBytes = maxManifestsBytes
