package localimages_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/client"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/localimages"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestSeparateVerifierEndToEnd runs examples' demo-envs/separate-grader on
// `gauntlet local` (the real server, SQLite, image store, buildah and
// bubblewrap; issue 23 items 2 and 3): sync builds its verifier image from
// tests/Dockerfile and pins it by digest; the oracle passes and nop fails;
// the separate verifier sees the declared artifact and /logs/artifacts
// and not the agent's /app, /tmp or /logs/agent; the artifacts are kept
// with the attempt, listed and downloadable through the API. A variant
// whose verifier image does not provide /tests/test.sh is unavailable
// with a reason naming the task and the file.
func TestSeparateVerifierEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("heavy (a buildah build, rootfs unpacks and attempts in images); run without -short")
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
	registry := sepVerifierDataset(t, filepath.Join(dir, "datasets"))

	p := startImagePlatform(t, ctx, dir, registry, platformConfig{mirrors: mirrors, level: slog.LevelInfo})
	srv := p.srv
	c, err := client.New(srv.URL(), srv.Tenant().Token, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}

	d := addAndSync(t, ctx, c, "sepverify@1.0")
	if d.Status != "ready" || d.Manifest == nil {
		t.Fatalf("sync: %s %q", d.Status, d.SyncError)
	}
	// The verifier image is pinned at sync; the broken variant is unavailable.
	if len(d.Manifest.UnavailableTasks) != 1 || d.Manifest.UnavailableTasks[0].Name != "no-test-script" {
		t.Fatalf("unavailable tasks %+v, want only no-test-script", d.Manifest.UnavailableTasks)
	}
	reason := d.Manifest.UnavailableTasks[0].Reason
	for _, want := range []string{"task no-test-script", "tests/Dockerfile", "/tests/test.sh"} {
		if !strings.Contains(reason, want) {
			t.Errorf("unavailable reason %q, want it to name %q", reason, want)
		}
	}
	for _, task := range d.Manifest.Tasks {
		if task.Name != "separate-grader" {
			continue
		}
		v := task.Environment.Verifier
		if v == nil || v.Source != "build" || !strings.HasPrefix(v.Pinned, localimages.BuildRepository+"@sha256:") {
			t.Fatalf("separate-grader verifier image %+v, want built and pinned by digest", v)
		}
		if task.Environment.Pinned == v.Pinned {
			t.Errorf("the verifier runs the task's own image %s", v.Pinned)
		}
	}

	created, err := c.SubmitRun(ctx, client.Submission{Config: []byte(`
[experiment]
benchmark = "sepverify-1-0"
[tasks]
task_names = ["separate-grader"]
[execution]
max_concurrent_attempts = 2
max_retries = 0
[[agents]]
harness = "oracle"
[[agents]]
harness = "nop"
`)})
	if err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, ctx, c, created.ID)
	results, err := c.Results(ctx, r.ID, client.ResultFilter{})
	if err != nil {
		t.Fatal(err)
	}
	byAgent := map[int]v1.ResultView{}
	for _, res := range results.Results {
		byAgent[res.Agent] = res
	}
	oracle, nop := byAgent[0], byAgent[1]
	if oracle.Outcome != "passed" || nop.Outcome != "failed" {
		d, _ := c.Result(ctx, r.ID, oracle.ID)
		runnerLog := download(t, ctx, c, r.ID, oracle.ID, "artifacts/runner.log")
		t.Fatalf("oracle %s %q, nop %s %q; want passed and failed\noracle verifier:\n%s\n%s\nrunner log:\n%s", oracle.Outcome, oracle.Message, nop.Outcome, nop.Message,
			d.Output.Stdout, d.Output.Stderr, runnerLog)
	}

	detail, err := c.Result(ctx, r.ID, oracle.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"seen: declared artifact /tmp/report/summary.txt", "seen: /logs/artifacts/answer.txt",
		"absent: /tmp/report/agent-only.txt", "absent: /app/agent-only.txt", "absent: /logs/agent/agent-note.txt"} {
		if !strings.Contains(detail.Output.Stdout, want) {
			t.Errorf("verifier output lacks %q:\n%s", want, detail.Output.Stdout)
		}
	}
	listed := map[string]string{}
	for _, a := range detail.Artifacts {
		listed[a.Path] = a.URL
	}
	for _, want := range []string{"artifacts/declared/tmp/report/summary.txt", "artifacts/declared/manifest.json", "artifacts/artifacts/answer.txt"} {
		if listed[want] == "" {
			t.Errorf("artifact %s not listed; listed: %v", want, listed)
		}
	}
	body := download(t, ctx, c, r.ID, oracle.ID, "artifacts/declared/tmp/report/summary.txt")
	if body != "words=9\n" {
		t.Errorf("downloaded summary.txt = %q, want words=9", body)
	}
	var manifest []struct{ Source, Destination, Type, Status string }
	if err := json.Unmarshal([]byte(download(t, ctx, c, r.ID, oracle.ID, "artifacts/declared/manifest.json")), &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || manifest[0].Source != "/tmp/report/summary.txt" || manifest[0].Status != "ok" ||
		manifest[0].Destination != "artifacts/declared/tmp/report/summary.txt" || manifest[0].Type != "file" {
		t.Errorf("manifest %+v", manifest)
	}
	// nop declared nothing it could collect: the entry says so.
	if err := json.Unmarshal([]byte(download(t, ctx, c, r.ID, nop.ID, "artifacts/declared/manifest.json")), &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || manifest[0].Status != "failed" {
		t.Errorf("nop manifest %+v, want the artifact failed (missing)", manifest)
	}
}

func download(t *testing.T, ctx context.Context, c *client.Client, run, result, path string) string {
	t.Helper()
	rc, err := c.Artifact(ctx, run, result, path)
	if err != nil {
		t.Fatalf("download %s: %v", path, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// sepVerifierDataset lists examples' separate-grader, and a copy of it
// whose verifier image does not provide /tests/test.sh, as sepverify@1.0.
func sepVerifierDataset(t *testing.T, root string) string {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"separate-grader", "no-test-script"} {
		if out, err := exec.Command("cp", "-r", "../../examples/demo-envs/separate-grader", filepath.Join(root, name)).CombinedOutput(); err != nil {
			t.Fatalf("copy separate-grader: %v\n%s", err, out)
		}
	}
	edit(t, filepath.Join(root, "no-test-script", "tests", "Dockerfile"), "COPY test.sh /tests/test.sh\nRUN chmod 755 /tests/test.sh && ", "RUN ")
	data, err := json.Marshal([]map[string]any{{"name": "sepverify", "version": "1.0", "description": "separate verifiers",
		"tasks": []map[string]string{{"name": "separate-grader", "path": "separate-grader"}, {"name": "no-test-script", "path": "no-test-script"}}}})
	if err != nil {
		t.Fatal(err)
	}
	location := filepath.Join(root, "registry.json")
	writeFile(t, location, string(data))
	return location
}
