package crdtest_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesAreFresh fails when the deep copies or CRD manifests
// differ from what hack/generate.sh produces from the current types.
func TestGeneratedFilesAreFresh(t *testing.T) {
	// Read every input and output here, so that go test's result cache is
	// invalidated whenever one of them changes.
	for _, dir := range []string{"..", "../../config/crd/bases"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			_, err = os.ReadFile(path)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("bash", "../../hack/generate.sh", "--check").CombinedOutput()
	if err != nil {
		t.Fatalf("generated files are stale or cannot be checked: %v\n%s", err, out)
	}
}
