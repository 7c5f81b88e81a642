package atif

import (
	"encoding/json"
	"os"
	"testing"
)

// ValidateJSON accepts exactly what Harbor's own validator accepts, case
// by case: testdata/harbor-verdicts.json holds trajectories and the
// verdicts Harbor v0.22.0's TrajectoryValidator gave them
// (scripts/harbor/atif_cases.py).
func TestValidateJSONAgreesWithHarbor(t *testing.T) {
	data, err := os.ReadFile("testdata/harbor-verdicts.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name         string          `json:"name"`
		HarborValid  bool            `json:"harbor_valid"`
		HarborErrors []string        `json:"harbor_errors"`
		Trajectory   json.RawMessage `json:"trajectory"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 40 {
		t.Fatalf("%d cases, want the whole recorded set", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			err := ValidateJSON(c.Trajectory)
			switch {
			case c.HarborValid && err != nil:
				t.Errorf("Harbor accepts it, ValidateJSON refuses: %v", err)
			case !c.HarborValid && err == nil:
				t.Errorf("Harbor refuses it (%v), ValidateJSON accepts it", c.HarborErrors)
			}
		})
	}
}
