package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
)

// StaticBinDir is where the runner mounts the platform's own static
// binaries read-only in the agent phase (terminus-2 among them).
const StaticBinDir = "/opt/gauntlet/bin"

// StaticBinary is the platform static binary (under StaticBinDir) the
// harness's Run command starts, such as /opt/gauntlet/bin/terminus-2; ""
// when it runs none. The runner checks it is there before the agent starts.
func (h Harness) StaticBinary() string {
	rest, ok := strings.CutPrefix(h.Run, StaticBinDir+"/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, " ")
	return StaticBinDir + "/" + name
}

// TerminusVersion is the version of cmd/terminus-2 (terminus.Version; a
// test in pkg/terminus keeps the two equal).
const TerminusVersion = "2.0.0-gauntlet.1"

// terminus-2's exit codes (cmd/terminus-2).
const (
	terminusExitAuth        = 3
	terminusExitUnavailable = 4
)

// terminusTrajectory reads the trajectory.json terminus-2 writes itself.
func terminusTrajectory(src LogSource) (atif.Trajectory, error) {
	data, err := readLog(filepath.Join(src.AgentLogDir, atif.FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return atif.Trajectory{}, fmt.Errorf("%w: terminus-2 wrote no %s", ErrNoLog, atif.FileName)
	}
	if err != nil {
		return atif.Trajectory{}, err
	}
	if err := atif.ValidateJSON(data); err != nil {
		return atif.Trajectory{}, fmt.Errorf("terminus-2's %s: %w", atif.FileName, err)
	}
	var t atif.Trajectory
	if err := json.Unmarshal(data, &t); err != nil {
		return atif.Trajectory{}, fmt.Errorf("terminus-2's %s: %w", atif.FileName, err)
	}
	return t, nil
}

// terminusModelError reads the model error class from terminus-2's exit
// code and the error its usage report carries.
func terminusModelError(agentLogDir string, exitCode int) (string, string) {
	var class string
	switch exitCode {
	case terminusExitAuth:
		class = ModelErrorAuth
	case terminusExitUnavailable:
		class = ModelErrorUnavailable
	default:
		return "", ""
	}
	var report struct {
		Error string `json:"error"`
	}
	if data, err := ReadAgentFile(filepath.Join(agentLogDir, UsageFile), maxUsageBytes); err == nil {
		_ = json.Unmarshal(data, &report)
	}
	return class, report.Error
}
