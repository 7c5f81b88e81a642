package pipeline_test

import (
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
)

// TestStageConstructorsNameMissingPorts checks that a stage built without
// a port it uses is refused at construction (a cold start), naming every
// missing port, instead of failing at the first message that needs it.
func TestStageConstructorsNameMissingPorts(t *testing.T) {
	for name, build := range map[string]func() error{
		"submitter": func() error {
			_, err := pipeline.NewSubmitter(pipeline.SubmitterPorts{}, pipeline.Options{})
			return err
		},
		"planner": func() error { _, err := pipeline.NewPlanner(pipeline.PlannerPorts{}, pipeline.Options{}); return err },
		"stopper": func() error { _, err := pipeline.NewStopper(pipeline.StopperPorts{}, pipeline.Options{}); return err },
		"dispatcher": func() error {
			_, err := pipeline.NewDispatcher(pipeline.DispatcherPorts{}, pipeline.Options{})
			return err
		},
		"grader":   func() error { _, err := pipeline.NewGrader(pipeline.GraderPorts{}, pipeline.Options{}); return err },
		"ingester": func() error { _, err := pipeline.NewIngester(pipeline.IngesterPorts{}, pipeline.Options{}); return err },
		"recompute": func() error {
			_, err := pipeline.NewRecomputer(pipeline.RecomputerPorts{}, pipeline.Options{})
			return err
		},
		"watchdog": func() error { _, err := pipeline.NewWatchdog(pipeline.WatchdogPorts{}, pipeline.Options{}); return err },
		"reconciler": func() error {
			_, err := pipeline.NewReconciler(pipeline.ReconcilerPorts{}, pipeline.Options{})
			return err
		},
	} {
		err := build()
		if err == nil || !strings.Contains(err.Error(), "the "+name+" needs port Table") {
			t.Errorf("%s without ports: err = %v, want one naming the missing Table port", name, err)
		}
	}
	_, err := pipeline.NewDispatcher(pipeline.DispatcherPorts{}, pipeline.Options{})
	if want := "Table, Slots, Completions, Results, Secrets, Sandboxes"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("dispatcher without ports: err = %v, want every missing port (%s)", err, want)
	}
}
