package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/harness"
)

// netInstallTable is the harness table with a row that installs from the
// network: its recipe records whether it had a network (slirp4netns's
// tap0 in /proc/net/dev), the agent whether it has one (the task denies it).
func netInstallTable(t *testing.T) []harness.Harness {
	t.Helper()
	row, ok := harness.Lookup("command")
	if !ok {
		t.Fatal("no command harness")
	}
	row.Name = "net-installer"
	row.NetworkInstall = `{ echo installed; grep -q tap0 /proc/net/dev && echo install_net=public || echo install_net=none; } > /logs/agent/install.txt`
	return append(harness.All(), row)
}

// TestNetworkInstallRunsWithNetworkWhereAllowed: where the operator allows
// network installs, the harness's pinned recipe runs as its install step
// with public network, and the agent then runs with the task's (none).
func TestNetworkInstallRunsWithNetworkWhereAllowed(t *testing.T) {
	spec := baseSpec(t, "net-installer")
	spec.NetworkInstalls = true
	spec.Command = `{ grep -q tap0 /proc/net/dev && echo agent_net=public || echo agent_net=none; } > /logs/agent/agent.txt`
	r := runTrialWith(t, spec, Options{}, netInstallTable(t))
	if e := r.result.ExceptionInfo; e != nil {
		t.Fatalf("exception %s: %s", e.ExceptionType, e.ExceptionMessage)
	}
	if got := r.artifact(t, "agent/install.txt"); got != "installed\ninstall_net=public\n" {
		t.Errorf("install step wrote %q, want it run with public network", got)
	}
	if got := r.artifact(t, "agent/agent.txt"); got != "agent_net=none\n" {
		t.Errorf("agent wrote %q, want the task's no-network", got)
	}
}

// TestNetworkInstallWhereNotAllowedIsThePlatformsError: a spec for such a
// harness without NetworkInstalls (submit refuses it; a stale or forged
// spec) runs nothing and is the runner's error, never the agent's failure.
func TestNetworkInstallWhereNotAllowedIsThePlatformsError(t *testing.T) {
	requireBwrap(t)
	spec := baseSpec(t, "net-installer")
	spec.Command = "true"
	dir := t.TempDir()
	opts := Options{WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out"), Isolation: IsolationHostBwrap, SelfPath: runnerBinary}
	_, err := run(context.Background(), spec, opts, netInstallTable(t))
	if err == nil || !strings.Contains(err.Error(), "installs from the network") || !strings.Contains(err.Error(), "does not allow") {
		t.Fatalf("Run = %v, want the runner's error naming the network install", err)
	}
}
