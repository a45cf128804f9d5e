package sim

import "time"

// SetProgressEvery changes how often progress lines are printed, for tests.
func SetProgressEvery(d time.Duration) func() {
	old := progressEvery
	progressEvery = d
	return func() { progressEvery = old }
}
