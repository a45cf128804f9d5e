package liveacl_test

import (
	"fmt"
	"testing"
)

// exampleT satisfies testing.TB for examples, which have no *testing.T.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (t *exampleT) Helper()                        {}
func (t *exampleT) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

func (t *exampleT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
