package maintainer

import (
	"testing"

	"github.com/icewal/ingestor/shared/rolestatus"
)

// TestEveryStepHasItsStatus: the outcome of each step of a pass has its
// own place in the status (last_<step>); a step without one would vanish
// from it.
func TestEveryStepHasItsStatus(t *testing.T) {
	seen := map[**rolestatus.StepOutcome]string{}
	ds := &rolestatus.MaintainerDataset{}
	for _, step := range []string{stepLoad, stepExpire, stepManifests, stepCompact, stepOrphans} {
		f := stepStatus(ds, step)
		if f == nil {
			t.Errorf("step %s has no place in the status", step)
			continue
		}
		if other, ok := seen[f]; ok {
			t.Errorf("steps %s and %s share one place in the status", other, step)
		}
		seen[f] = step
	}
}
