package cloud_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/fnspec"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
)

// TestStagePortsMatchTable checks the function table against the stages
// the functions build, both ways: every port a stage takes is in its
// function's row with the access the port's type implies (a Sender writes
// a queue, a SandboxLauncher launches, the readers read), and every row's
// port is taken by its stage, except those the function uses outside the
// pipeline (listed here with why). So a grant the code does not need, or a
// port the code needs and the stack does not wire, fails here.
func TestStagePortsMatchTable(t *testing.T) {
	stages := map[string][]any{
		fnspec.APIFunction.Name: {pipeline.SubmitterPorts{}, pipeline.StopperPorts{}},
		fnspec.Planner.Name:     {pipeline.PlannerPorts{}},
		fnspec.Dispatcher.Name:  {pipeline.DispatcherPorts{}},
		fnspec.Grader.Name:      {pipeline.GraderPorts{}},
		fnspec.Ingester.Name:    {pipeline.IngesterPorts{}},
		fnspec.Leaderboard.Name: {pipeline.RecomputerPorts{}},
		fnspec.Watchdog.Name:    {pipeline.WatchdogPorts{}},
	}
	outside := map[string][]fnspec.Port{
		// The API's own: benchmark sync messages, the secret values it
		// stores, the artifacts and downloads it serves.
		fnspec.APIFunction.Name: {fnspec.SyncQueue, fnspec.Secrets, fnspec.Blobs},
		// The ECS driver's the dispatcher launches through: task files and
		// sealed launch secrets under presigned URLs, and their data key.
		fnspec.Dispatcher.Name: {fnspec.Blobs, fnspec.SandboxKey},
	}
	byField := map[string]fnspec.Port{
		"Table": fnspec.Table, "Plan": fnspec.PlanQueue, "Slots": fnspec.SlotsQueue, "Completions": fnspec.CompletionsQueue,
		"Results": fnspec.ResultsQueue, "Blobs": fnspec.Blobs, "Secrets": fnspec.Secrets, "Sandboxes": fnspec.Sandboxes,
	}
	// Ports of the local platform alone, with no cloud resource to grant:
	// the cloud leaves them nil.
	localOnly := map[string]bool{
		"Space": true, // the local data dir's free space
	}
	access := map[reflect.Type]fnspec.Access{
		reflect.TypeFor[pipeline.Sender]():          fnspec.Write,
		reflect.TypeFor[pipeline.BlobReader]():      fnspec.Read,
		reflect.TypeFor[pipeline.SecretReader]():    fnspec.Read,
		reflect.TypeFor[pipeline.SandboxLauncher](): fnspec.Write,
		reflect.TypeFor[pipeline.SandboxStopper]():  fnspec.Read,
		reflect.TypeFor[pipeline.SandboxLister]():   fnspec.Read,
		reflect.TypeFor[pipeline.SandboxWatcher]():  fnspec.Read,
	}
	for _, f := range fnspec.Functions {
		ports, ok := stages[f.Name]
		if !ok {
			continue // not a pipeline function (registrysync)
		}
		taken := map[fnspec.Port]bool{}
		for _, ps := range ports {
			typ := reflect.TypeOf(ps)
			for i := range typ.NumField() {
				field := typ.Field(i)
				if localOnly[field.Name] {
					continue
				}
				port, ok := byField[field.Name]
				if !ok {
					t.Fatalf("%s.%s: no function-table port for this field; add it to byField", typ.Name(), field.Name)
				}
				taken[port] = true
				want := access[field.Type]
				if got := f.Access(port); got == 0 || got&want != want {
					t.Errorf("%s: its stage takes %s.%s (%s), but its table row gives %s access %v", f.Name, typ.Name(), field.Name, field.Type, port, got)
				}
			}
		}
		for _, u := range f.Uses {
			if !taken[u.Port] && !slices.Contains(outside[f.Name], u.Port) {
				t.Errorf("%s: its table row uses %s, which its stage does not take (a grant nothing needs)", f.Name, u.Port)
			}
		}
	}
}
