package console

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestModules runs the unit tests of the console's DOM-free JavaScript
// modules (console/test/units.test.mjs) with node's test runner.
func TestModules(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (%v); install it with: apt-get install -y nodejs", err)
	}
	// The modules are ES modules without a package.json "type"; node
	// detects that and would warn about it on every run.
	cmd := exec.Command(node, "--disable-warning=MODULE_TYPELESS_PACKAGE_JSON", "--test", filepath.Join("test", "units.test.mjs"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test test/units.test.mjs: %v\n%s", err, out)
	}
}
