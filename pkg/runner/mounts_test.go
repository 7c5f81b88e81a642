package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/harness"
)

// One list of the trial's mounts, rendered per isolation: a host-rootfs or
// process phase binds its role's; the pod binds the union, writable where
// a role writes, without what its image's overlay holds.
func TestTrialMountsAreOneListRenderedPerIsolation(t *testing.T) {
	tr := &trial{harness: harness.Harness{MountsSolution: true}, opts: Options{StaticBinDir: "/h/bin"},
		host: layout{App: "/h/app", AgentLogs: "/h/agent-logs", VerifierLogs: "/h/verifier-logs", Artifacts: "/h/artifacts",
			Tests: "/h/tests", Solution: "/h/solution", Agents: "/h/agents"}}
	ro := func(host, target string) mount { return mount{host: host, target: target} }
	rw := func(host, target string) mount { return mount{host: host, target: target, writable: true} }
	cases := []struct {
		name string
		got  func() ([]mount, error)
		want []mount
	}{
		{"agent phase", func() ([]mount, error) { return tr.agentMounts(), nil }, []mount{
			rw("/h/app", AppMount), rw("/h/agent-logs", AgentLogMount), ro("/h/solution", SolutionMount),
			ro("/h/agents", AgentsMount), ro("/h/bin", StaticBinMount)}},
		{"verifier phase", func() ([]mount, error) { return tr.verifierMounts(), nil }, []mount{
			rw("/h/app", AppMount), ro("/h/agent-logs", AgentLogMount), rw("/h/verifier-logs", VerifierLogMount),
			ro("/h/tests", TestsMount), ro("/h/bin", StaticBinMount)}},
		{"pod", func() ([]mount, error) { return tr.imageSandbox().podMounts(nil) }, []mount{
			rw("/h/agent-logs", AgentLogMount), ro("/h/agents", AgentsMount), ro("/h/bin", StaticBinMount),
			rw("/h/verifier-logs", VerifierLogMount), rw("/h/artifacts", ArtifactsMount)}},
	}
	for _, c := range cases {
		got, err := c.got()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if diff := cmp.Diff(c.want, got, cmp.AllowUnexported(mount{})); diff != "" {
			t.Errorf("%s mounts (-want +got):\n%s", c.name, diff)
		}
	}
}
