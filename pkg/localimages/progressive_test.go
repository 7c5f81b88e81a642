package localimages_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/client"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/localimages"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"

	"github.com/gauntlet-bench/gauntlet/internal/syncbuf"
)

// TestProgressiveAvailability runs `gauntlet local` (the real server,
// SQLite, image store, buildah and bubblewrap) on a dataset of three
// Dockerfile tasks, one of whose builds waits on a file the test creates
// (a RUN step polling the build context, bound with RUN --mount): while
// that build waits,
//
//   - the task whose image is built (FROM the python stand-in, its RUN
//     calling `python` and `pip`) is ready and the failed one unavailable;
//     the benchmark says "preparing images 2 / 3" with each task's state;
//   - a run of the oracle on every task is accepted with the ready task
//     only (the others listed, the waiting one as still preparing) and
//     passes it, in the stand-in image, with `python` and `pip`;
//   - the failed build's log is readable, and the waiting build's log is
//     streamed (followed) while it runs;
//   - a second benchmark's sync runs beside it (it does not wait), and
//     removing that benchmark while its own build waits kills the build at
//     once and leaves nothing of it behind.
//
// Releasing the gate then makes the first benchmark ready, and the
// followed log ends with the build's last line.
func TestProgressiveAvailability(t *testing.T) {
	if testing.Short() {
		t.Skip("heavy (buildah builds FROM the stand-ins and an attempt in an image); run without -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("buildah builds and image sandboxes need root here; run the tests as root")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bubblewrap is not installed; run `make deps`")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	_, mirrors := imagetest.BaseImages(t)
	dir := t.TempDir()
	// A nonce in every Dockerfile: buildah's layer cache (kept between
	// test runs) must not skip the waiting steps.
	nonce := randomHex(t)
	gate1, gate2 := "release-"+nonce+"-1", "release-"+nonce+"-2"
	location := progressiveDatasets(t, filepath.Join(dir, "datasets"), nonce, gate1, gate2)

	p := startImagePlatform(t, ctx, dir, location, platformConfig{mirrors: mirrors, policy: localimages.Policy{ParallelBuilds: 3}, level: slog.LevelInfo})
	srv, logs, dataDir := p.srv, p.logs, p.dataDir
	c, err := client.New(srv.URL(), srv.Tenant().Token, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}

	b, err := c.AddBenchmark(ctx, "prog@1.0")
	if err != nil {
		t.Fatal(err)
	}
	// The gated build waits; the other two end.
	d := waitBenchmark(t, ctx, c, b.Key, "python task ready, broken task unavailable", func(d v1.BenchmarkDetail) bool {
		return d.Images != nil && d.Images.Ready == 1 && d.Images.Unavailable == 1
	})
	if d.Status != "syncing" || d.Images.Preparing != 1 || d.Images.Label != "preparing images 2 / 3" {
		t.Fatalf("while gated builds: %s %+v; want syncing, preparing images 2 / 3", d.Status, d.Images)
	}
	states := map[string]string{}
	for _, task := range d.Images.Tasks {
		states[task.Name] = task.State
	}
	if want := map[string]string{"quick": "ready", "gated": "preparing", "broken": "unavailable"}; !mapsEqual(states, want) {
		t.Errorf("task states = %v, want %v", states, want)
	}
	if list, err := c.Benchmarks(ctx); err != nil || len(list) != 1 || list[0].Images == nil || len(list[0].Images.Tasks) != 3 {
		t.Fatalf("benchmark list = %+v, %v; want the image states there too", list, err)
	}

	// The failed build's log is readable while the sync goes on.
	if text, err := c.BuildLog(ctx, b.Key, "broken"); err != nil || !strings.Contains(text, "about-to-fail-"+nonce) ||
		!strings.Contains(text, "uid=1000(ubuntu) gid=1000(ubuntu)") {
		t.Errorf("build log of the failed build = %q, %v; want its output, the ubuntu stand-in's ubuntu user first", text, err)
	}
	// The waiting build's log is streamed while it runs.
	followed := &syncbuf.Buffer{}
	followDone := make(chan error, 1)
	go func() { followDone <- c.FollowBuildLog(ctx, b.Key, "gated", followed) }()
	waitText(t, ctx, followed, "waiting-"+nonce+"-1")

	// A run selects the ready task; the others are listed, the waiting
	// one as still preparing.
	created, err := c.SubmitRun(ctx, client.Submission{Config: []byte(`
[experiment]
benchmark = "` + b.Key + `"
[[agents]]
harness = "oracle"
`)})
	if err != nil {
		t.Fatalf("submit while images are prepared: %v", err)
	}
	if created.TaskCount != 1 {
		t.Errorf("run tasks = %d, want 1 (the ready one)", created.TaskCount)
	}
	warned := strings.Join(created.Warnings, "\n")
	if !strings.Contains(warned, "still preparing") || !strings.Contains(warned, `"gated"`) || !strings.Contains(warned, `"broken"`) {
		t.Errorf("submission warnings = %q; want gated named as still preparing and broken as unavailable", warned)
	}
	r := waitRun(t, ctx, c, created.ID)
	results, err := c.Results(ctx, r.ID, client.ResultFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "finished" || len(results.Results) != 1 || results.Results[0].Task != "quick" || results.Results[0].Outcome != "passed" {
		t.Errorf("oracle run %s: %+v; want quick passed (python and pip in the stand-in)", r.Status, results.Results)
	}

	// The environment check starts on the ready task.
	check, err := c.StartCheck(ctx, b.Key)
	if err != nil {
		t.Fatalf("check while images are prepared: %v", err)
	}
	check = waitCheck(t, ctx, c, b.Key, check.Run)
	if check.Checked != 3 || slices.Contains(check.Broken, "quick") || slices.Contains(check.Trivial, "quick") || slices.Contains(check.Broken, "gated") {
		t.Errorf("first check: %+v; want quick ok, gated and broken left unavailable", check)
	}

	// A second benchmark syncs beside the first (whose build still waits),
	// and removing it kills its waiting build at once.
	b2, err := c.AddBenchmark(ctx, "prog2@1.0")
	if err != nil {
		t.Fatal(err)
	}
	waitBenchmark(t, ctx, c, b2.Key, "its images being prepared", func(d v1.BenchmarkDetail) bool {
		return d.Images != nil && d.Images.Preparing == 1
	})
	waitFor(t, ctx, "the second benchmark's build waiting", func() bool { return len(processesWith(t, gate2)) > 0 })
	if err := c.DeleteBenchmark(ctx, b2.Key); err != nil {
		t.Fatal(err)
	}
	// Delete returns once the sync has stopped; the builder kills the
	// build's process group, so nothing waiting on the gate is left.
	if left := processesWith(t, gate2); len(left) > 0 {
		t.Errorf("processes of the removed benchmark's build still running after the delete: %v", left)
	}
	var ae *client.Error
	if _, err := c.Benchmark(ctx, b2.Key); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("removed benchmark = %v, want 404", err)
	}
	if versions, err := srv.Records().Benchmarks.ManifestVersions(ctx, srv.Tenant().Workspace, b2.Key); err != nil || len(versions) != 0 {
		t.Errorf("manifest versions of the removed benchmark = %v, %v; want none", versions, err)
	}
	if d, err := c.Benchmark(ctx, b.Key); err != nil || d.Status != "syncing" || d.Images == nil || d.Images.Preparing != 1 {
		t.Fatalf("first benchmark after the removal: %+v, %v; want still syncing, its build waiting", d, err)
	}

	// Release the first gate: the build ends, the benchmark is ready and
	// the followed log ends with the build's last words.
	releaseGate(t, dataDir, gate1)
	d = waitBenchmark(t, ctx, c, b.Key, "ready", func(d v1.BenchmarkDetail) bool { return d.Status == "ready" })
	if d.Images != nil || d.Manifest == nil || len(d.Manifest.UnavailableTasks) != 1 || d.Manifest.UnavailableTasks[0].Name != "broken" {
		t.Errorf("ready benchmark: images %+v, manifest %+v; want no image progress and only broken unavailable", d.Images, d.Manifest)
	}
	// A second check judges the task ready since, in a run of its own;
	// the first verdicts stay.
	check2, err := c.StartCheck(ctx, b.Key)
	if err != nil {
		t.Fatal(err)
	}
	if check2.Run == check.Run || check2.Status != "running" {
		t.Fatalf("check after the gated task got ready: %+v; want a new run (the first was %s)", check2, check.Run)
	}
	check2 = waitCheck(t, ctx, c, b.Key, check2.Run)
	run2, err := c.Run(ctx, check2.Run)
	if err != nil {
		t.Fatal(err)
	}
	if run2.TaskCount != 1 {
		t.Errorf("second check run has %d tasks, want 1 (gated)", run2.TaskCount)
	}
	// gated's image has no python: the oracle fails, the check says broken.
	if !slices.Contains(check2.Broken, "gated") || slices.Contains(check2.Broken, "quick") {
		t.Errorf("second check: broken %v; want gated (no python in its image) and not quick", check2.Broken)
	}
	select {
	case err := <-followDone:
		if err != nil {
			t.Errorf("follow: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the followed build log did not end with the build")
	}
	if text := followed.String(); !strings.Contains(text, "gate-open-"+nonce) {
		t.Errorf("followed log = %q; want the build's output after the gate opened", text)
	}
	if !strings.Contains(logs.String(), "in-flight sync of a removed benchmark cancelled") {
		t.Error("the server log does not say the removed benchmark's sync was cancelled")
	}
}

// progressiveDatasets writes prog@1.0 (quick, gated, broken) and prog2@1.0
// (gated on gate2) and returns the registry.json location.
func progressiveDatasets(t *testing.T, root, nonce, gate1, gate2 string) string {
	t.Helper()
	task := func(name, dockerfile string) {
		d := filepath.Join(root, "tasks", name)
		writeFile(t, filepath.Join(d, "task.toml"), "schema_version = \"1.4\"\n[verifier]\ntimeout_sec = 60.0\n[agent]\ntimeout_sec = 60.0\n"+
			"[environment]\nbuild_timeout_sec = 900.0\nnetwork_mode = \"no-network\"\n")
		writeFile(t, filepath.Join(d, "instruction.md"), "Write /app/out.txt with what python and pip say.\n")
		writeFile(t, filepath.Join(d, "environment", "Dockerfile"), dockerfile)
		writeFile(t, filepath.Join(d, "solution", "solve.sh"), "#!/bin/bash\nset -eu\nmkdir -p /app\n"+
			"python -c 'print(\"hi from python\")' > /app/out.txt\npip --version >> /app/out.txt\n")
		writeFile(t, filepath.Join(d, "tests", "test.sh"), "#!/bin/bash\nmkdir -p /logs/verifier\n"+
			"if grep -q 'hi from python' /app/out.txt && grep -q '^pip ' /app/out.txt && command -v python && command -v pip; "+
			"then echo 1 > /logs/verifier/reward.txt; else cat /app/out.txt; echo 0 > /logs/verifier/reward.txt; fi\n")
	}
	gated := func(gate string) string {
		return "FROM debian:bookworm-slim\n" +
			"RUN --mount=type=bind,target=/ctx echo waiting-" + strings.TrimPrefix(gate, "release-") +
			" && while [ ! -e /ctx/" + gate + " ]; do sleep 0.2; done && echo gate-open-" + nonce + "\n"
	}
	task("quick", "FROM python:3.13-slim-bookworm\n"+
		"RUN python --version && pip --version && python -m venv /opt/venv && echo built-"+nonce+"\nWORKDIR /app\n")
	task("gated", gated(gate1))
	// FROM the ubuntu:24.04 stand-in: its log shows the image's own user.
	task("broken", "FROM ubuntu:24.04\nRUN id ubuntu && echo about-to-fail-"+nonce+" && false\n")
	task("gated2", gated(gate2))
	type entry struct {
		Name string `json:"name"`
		Path string `json:"path"`
	}
	datasets := []map[string]any{
		{"name": "prog", "version": "1.0", "description": "progressive availability", "tasks": []entry{
			{"quick", "tasks/quick"}, {"gated", "tasks/gated"}, {"broken", "tasks/broken"}}},
		{"name": "prog2", "version": "1.0", "description": "removed while it builds", "tasks": []entry{{"gated2", "tasks/gated2"}}},
	}
	data, err := json.Marshal(datasets)
	if err != nil {
		t.Fatal(err)
	}
	location := filepath.Join(root, "registry.json")
	writeFile(t, location, string(data))
	return location
}

// releaseGate creates the file a waiting build polls for, in the build
// context the sync fetched under the data dir (the one holding its
// Dockerfile naming the gate).
func releaseGate(t *testing.T, dataDir, gate string) {
	t.Helper()
	dfs, err := filepath.Glob(filepath.Join(dataDir, "sync", "sync-*", "task-*", "environment", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, df := range dfs {
		b, err := os.ReadFile(df)
		if err == nil && bytes.Contains(b, []byte(gate)) {
			writeFile(t, filepath.Join(filepath.Dir(df), gate), "open\n")
			return
		}
	}
	t.Fatalf("no build context under %s names %s (%d Dockerfiles)", dataDir, gate, len(dfs))
}

// processesWith lists the pids whose command line contains s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	self := []byte("-test.")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte(s)) && !bytes.Contains(cmd, self) {
			pids = append(pids, e.Name()+": "+string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
		}
	}
	return pids
}

// waitBenchmark polls the benchmark until ok says so.
func waitBenchmark(t *testing.T, ctx context.Context, c *client.Client, key, what string, ok func(v1.BenchmarkDetail) bool) v1.BenchmarkDetail {
	t.Helper()
	var last v1.BenchmarkDetail
	waitFor(t, ctx, "benchmark "+key+": "+what, func() bool {
		d, err := c.Benchmark(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		last = d
		if d.Status == "failed" {
			t.Fatalf("benchmark %s failed: %s", key, d.SyncError)
		}
		return ok(d)
	})
	return last
}

// waitCheck waits until the check of run is done.
func waitCheck(t *testing.T, ctx context.Context, c *client.Client, key, run string) v1.EnvCheckView {
	t.Helper()
	var last v1.EnvCheckView
	waitFor(t, ctx, "the environment check "+run, func() bool {
		v, err := c.Check(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		last = v
		return v.Run == run && v.Status == "done"
	})
	return last
}

// waitText waits until buf holds s.
func waitText(t *testing.T, ctx context.Context, buf *syncbuf.Buffer, s string) {
	t.Helper()
	waitFor(t, ctx, "the followed log to show "+s, func() bool { return strings.Contains(buf.String(), s) })
}

// waitFor polls cond on a ticker until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

func randomHex(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	return !slices.ContainsFunc(keys, func(k string) bool { return a[k] != b[k] })
}
