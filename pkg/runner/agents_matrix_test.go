package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
	"github.com/gauntlet-bench/gauntlet/pkg/agentbundle"
	"github.com/gauntlet-bench/gauntlet/pkg/atif"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
)

// matrixImages are the task images every bundled harness must run in: the
// bundles read nothing of the image's (no loader, no library, no bash).
var matrixImages = []struct {
	name, tarball string
	bash          bool // the image has bash: the fixture task's verifier (bash test.sh) can run
}{
	{"python3 stand-in", testrootfs.Python3Tar, true},
	{"Debian minbase", testrootfs.MinbaseTar, true},
	{"Ubuntu-like (Debian 13, glibc 2.41)", testrootfs.TrixieTar, true},
	{"musl + busybox only", testrootfs.MuslTar, false},
	{"/bin/sh only (no bash, no /usr/bin/env)", testrootfs.NoBashTar, false},
}

// matrixProbe solves the fixture task with nothing but shell builtins and
// what it is given: no cat, no env binary (the /bin/sh-only image has no
// env, the musl one only busybox).
const matrixProbe = `echo gauntlet > /app/answer.txt && echo gauntlet > /logs/agent/answer-copy.txt && ` +
	`readlink /proc/self/exe > /logs/agent/tool-shell.txt 2>/dev/null; true`

// TestAgentMatrix runs every bundled harness in every matrix image
// against the mock model on a two-turn task (a shell call, then an answer):
// the agent starts, completes the task, leaves a valid trajectory, and the
// tokens in result.json are the gateway's. Set GAUNTLET_AGENT_MATRIX_OUT
// to write the matrix as the Markdown table docs/AGENTS.md shows.
func TestAgentMatrix(t *testing.T) {
	var mu sync.Mutex
	rows := map[string]map[string]string{}
	// The cells run in parallel: the table is written once they all ended.
	t.Cleanup(func() { writeMatrix(t, rows) })
	for _, name := range e2eHarnesses() {
		for _, img := range matrixImages {
			t.Run(name+"/"+img.tarball, func(t *testing.T) {
				t.Parallel() // independent attempts: own mock, work dir, cgroups and network
				cell := runMatrixCell(t, name, img.tarball, img.bash)
				mu.Lock()
				defer mu.Unlock()
				if rows[name] == nil {
					rows[name] = map[string]string{}
				}
				rows[name][img.name] = cell
			})
		}
	}
}

// writeMatrix writes the matrix's table to $GAUNTLET_AGENT_MATRIX_OUT, if set.
func writeMatrix(t *testing.T, rows map[string]map[string]string) {
	if out := os.Getenv("GAUNTLET_AGENT_MATRIX_OUT"); out != "" {
		var sb strings.Builder
		sb.WriteString("| harness |")
		for _, img := range matrixImages {
			sb.WriteString(" " + img.name + " |")
		}
		sb.WriteString("\n|---|" + strings.Repeat("---|", len(matrixImages)) + "\n")
		names := make([]string, 0, len(rows))
		for n := range rows {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			sb.WriteString("| `" + n + "` |")
			for _, img := range matrixImages {
				c := rows[n][img.name]
				if c == "" {
					c = "not run"
				}
				sb.WriteString(" " + c + " |")
			}
			sb.WriteString("\n")
		}
		if err := os.WriteFile(out, []byte(sb.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// runMatrixCell runs one harness in one image and returns the cell: what
// held, or the test fails saying what did not.
func runMatrixCell(t *testing.T, name, tarball string, bash bool) string {
	mock := modelmock.NewServer(modelmock.Script{
		APIKey: modelKey, Usage: mockUsage, NoToolsText: "Mock title",
		Turns: []modelmock.Turn{{Shell: &modelmock.ShellCall{Command: matrixProbe, Description: "solve"}}, {Text: "Done: the task is solved."}},
	})
	defer mock.Close()
	requireBwrap(t)
	requireBundle(t, name)
	img := Image{Ref: "test/" + strings.TrimSuffix(tarball, ".tar"), Rootfs: testrootfs.Of(t, tarball),
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, WorkingDir: "/app"}
	dir := t.TempDir()
	opts := Options{WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out"), Models: mockProvider(t, mock.URL),
		Forwarder: runnerBinary, SelfPath: runnerBinary, Isolation: IsolationBwrap, Image: &img}
	spec := agentSpec(t, name)
	h, _ := harness.Lookup(name)
	var lacks []string
	for _, p := range h.ImageNeeds {
		if _, err := os.Lstat(filepath.Join(img.Rootfs, p)); err != nil {
			lacks = append(lacks, p)
		}
	}
	tr, err := run(context.Background(), spec, opts, harness.All())
	if len(lacks) > 0 {
		// The program starts something of the image's own that this image
		// lacks: the runner refuses the attempt before the agent starts.
		if !errors.Is(err, agentbundle.ErrUnrunnable) || !strings.Contains(err.Error(), lacks[0]) {
			t.Fatalf("Run(%s in %s, which lacks %v) = %v, want ErrUnrunnable naming it", name, tarball, lacks, err)
		}
		if n := len(mock.Handler.Requests()); n != 0 {
			t.Errorf("the model was called %d times although the attempt was refused", n)
		}
		return "✗ refused before start: needs " + strings.Join(lacks, ", ") + " in the image"
	}
	if err != nil {
		t.Fatalf("Run(%s in %s) = %v: the bundle did not start", name, tarball, err)
	}
	assertNoMountsUnder(t, dir)
	r := trialRun{result: tr, out: opts.OutDir}
	if e := tr.ExceptionInfo; e != nil && (bash || !strings.Contains(e.ExceptionType, "Reward") && !strings.Contains(e.ExceptionType, "Verifier")) {
		t.Fatalf("exception %+v\nstdout:\n%s\nstderr:\n%s\nrunner log:\n%s", e, r.artifact(t, "agent/stdout.txt"), r.artifact(t, "agent/stderr.txt"), r.artifact(t, RunnerLogFile))
	}
	if got := strings.TrimSpace(r.artifact(t, "agent/answer-copy.txt")); got != "gauntlet" {
		t.Fatalf("the agent's tool did not run (answer copy %q)\nstdout:\n%s\nstderr:\n%s", got, r.artifact(t, "agent/stdout.txt"), r.artifact(t, "agent/stderr.txt"))
	}
	if bash && rewardOf(t, tr) != 1 {
		t.Errorf("reward = %v, want 1", rewardOf(t, tr))
	}
	answered := 0
	for _, req := range mock.Handler.Requests() {
		if req.Status == 200 {
			answered++
		}
	}
	if answered < 2 {
		t.Errorf("the mock answered %d calls, want both turns", answered)
	}
	checkTokensAndCost(t, tr, mock)
	var traj atif.Trajectory
	if err := json.Unmarshal([]byte(r.artifact(t, "agent/"+atif.FileName)), &traj); err != nil {
		t.Fatalf("trajectory: %v", err)
	}
	if err := atif.Validate(traj); err != nil {
		t.Errorf("trajectory does not validate: %v", err)
	}
	trajTokens := "—"
	if fm := traj.FinalMetrics; fm != nil && tr.AgentResult != nil && tr.AgentResult.NInputTokens != nil {
		if fm.TotalPromptTokens == int64(*tr.AgentResult.NInputTokens) && fm.TotalCompletionTokens == int64(*tr.AgentResult.NOutputTokens) {
			trajTokens = "="
		} else {
			trajTokens = fmt.Sprintf("%d/%d in trajectory", fm.TotalPromptTokens, *tr.AgentResult.NInputTokens)
		}
	}
	if t.Failed() {
		return "FAIL"
	}
	cell := "✓ starts, 2 turns, ATIF valid, result = gateway"
	if trajTokens == "=" {
		cell += " = trajectory"
	} else {
		cell += " (trajectory: " + trajTokens + ")"
	}
	if !bash {
		cell += "; no bash for the verifier"
	}
	t.Logf("%s in %s: %s (agent %s %s)", name, tarball, cell, h.Name, h.Version)
	return cell
}
