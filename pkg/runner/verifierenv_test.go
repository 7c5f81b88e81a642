package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// sepVerifierScript is the separate verifier's tests/test.sh: it reports
// what it sees of the agent's environment and passes only on the artifacts.
const sepVerifierScript = `#!/usr/bin/env bash
set -u
reward=1
[[ "$(cat /data/out/result.txt 2>/dev/null)" == 42 ]] && echo "seen: declared directory artifact" || { echo "missing: /data/out/result.txt"; reward=0; }
[[ "$(cat /logs/artifacts/answer.txt 2>/dev/null)" == 42 ]] && echo "seen: /logs/artifacts/answer.txt" || { echo "missing: /logs/artifacts/answer.txt"; reward=0; }
[[ -e /data/out/skip.pyc ]] && { echo "leak: excluded /data/out/skip.pyc"; reward=0; }
for leak in /app/agent-only.txt /tmp/agent-only.txt /logs/agent/stdout.txt /solution /tests/agent-wrote-this; do
  [[ -e "$leak" ]] && { echo "leak: $leak"; reward=0; } || echo "absent: $leak"
done
echo "image: $(cat /verifier-image-mark)"
echo "$reward" > /logs/verifier/reward.txt
`

// verifierImage is the test image with /tests/test.sh (script, unless
// empty) and /verifier-image-mark added: a hard-linked copy of the
// rootfs beside it (the overlay's lower is never written), made once per
// script.
func verifierImage(t testing.TB, script string) Image {
	t.Helper()
	img := testImage(t)
	sum := sha256.Sum256([]byte(script))
	dir := img.Rootfs + "-verifier-" + hex.EncodeToString(sum[:6])
	if _, err := os.Stat(dir); err != nil {
		tmp := dir + ".tmp-" + uniqueMarker()
		if out, err := exec.Command("cp", "-al", img.Rootfs, tmp).CombinedOutput(); err != nil {
			t.Fatalf("copy the rootfs: %v: %s", err, out)
		}
		files := map[string]string{"verifier-image-mark": "the verifier's own\n"}
		if script != "" {
			files["tests/test.sh"] = script
		}
		for name, body := range files {
			p := filepath.Join(tmp, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
			_ = os.RemoveAll(tmp)
			if _, serr := os.Stat(dir); serr != nil {
				t.Fatal(err)
			}
		}
	}
	img.Rootfs, img.Ref = dir, "test/verifier"
	return img
}

// separateTask is the fixture task with a separate verifier, a declared
// directory artifact (with an exclude) and the given solution.
func separateTask(t testing.TB, solve string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "task")
	if out, err := exec.Command("cp", "-r", fixtureDir(t), dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the fixture task: %v: %s", err, out)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "task.toml"))
	if err != nil {
		t.Fatal(err)
	}
	toml := `artifacts = [{source = "/data/out", exclude = ["*.pyc"]}, "/data/missing.txt"]` + "\n" +
		strings.Replace(string(cfg), "[verifier]\n", "[verifier]\nenvironment_mode = \"separate\"\n", 1) +
		"\n[verifier.environment]\nmemory_mb = 256\nnetwork_mode = \"no-network\"\n"
	files := map[string]string{"task.toml": toml, "solution/solve.sh": "#!/usr/bin/env bash\n" + solve,
		// The shared-mode tests: never uploaded into a separate verifier.
		"tests/test.sh": "#!/usr/bin/env bash\necho 1 > /logs/verifier/reward.txt\n"}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// plainTask is the fixture task with solve as its solution and its
// shared verifier.
func plainTask(t testing.TB, solve string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "task")
	if out, err := exec.Command("cp", "-r", fixtureDir(t), dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the fixture task: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "solution/solve.sh"), []byte("#!/usr/bin/env bash\n"+solve), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

const sepSolve = `set -e
mkdir -p /data/out /logs/artifacts /app /tests
echo 42 > /data/out/result.txt
echo junk > /data/out/skip.pyc
echo 42 > /logs/artifacts/answer.txt
echo mine > /app/agent-only.txt
echo mine > /tmp/agent-only.txt
echo mine > /tests/agent-wrote-this
`

func runSeparate(t *testing.T, harness, taskDir string, vimg Image) trialRun {
	t.Helper()
	spec := baseSpec(t, harness)
	spec.Task = sandbox.TaskRef{Name: "task", Dir: taskDir}
	img := testImage(t)
	r := runTrial(t, spec, Options{Image: &img, VerifierImage: &vimg, Isolation: IsolationBwrap})
	assertNoMountsUnder(t, filepath.Dir(r.out))
	return r
}

// The separate verifier runs in its own image with only the artifacts:
// the oracle passes, the declared directory (minus its excludes) and
// /logs/artifacts are there at their paths, the agent's /app, /tmp,
// /logs/agent and the task's /solution are not; nop fails. The
// artifacts are kept with the attempt beside manifest.json.
func TestSeparateVerifierSeesOnlyTheArtifacts(t *testing.T) {
	vimg := verifierImage(t, sepVerifierScript)
	task := separateTask(t, sepSolve)
	r := runSeparate(t, "oracle", task, vimg)
	stdout := readFile(t, filepath.Join(r.out, ArtifactsDir, "verifier", verifierStdout))
	if r.result.VerifierResult == nil || r.result.VerifierResult.Rewards["reward"] != 1 {
		t.Fatalf("oracle: %+v %+v\n%s", r.result.VerifierResult, r.result.ExceptionInfo, stdout)
	}
	for _, want := range []string{"seen: declared directory artifact", "seen: /logs/artifacts/answer.txt", "absent: /app/agent-only.txt",
		"absent: /tmp/agent-only.txt", "absent: /logs/agent/stdout.txt", "absent: /solution", "absent: /tests/agent-wrote-this", "image: the verifier's own"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("verifier output lacks %q:\n%s", want, stdout)
		}
	}
	kept := filepath.Join(r.out, ArtifactsDir, DeclaredArtifactsDir)
	if got := readFile(t, filepath.Join(kept, "data/out/result.txt")); got != "42\n" {
		t.Errorf("kept artifact = %q", got)
	}
	if _, err := os.Stat(filepath.Join(kept, "data/out/skip.pyc")); err == nil {
		t.Error("an excluded file was collected")
	}
	var manifest []ArtifactEntry
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(kept, harbor.ArtifactsManifestFile))), &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 2 || manifest[0].Status != artifactOK || manifest[0].Type != "directory" || manifest[0].Destination != "artifacts/declared/data/out" ||
		manifest[1].Status != artifactFailed || !strings.Contains(manifest[1].Error, "/data/missing.txt does not exist") {
		t.Errorf("manifest = %+v", manifest)
	}
	// The agent's own logs are kept with the attempt as ever.
	if _, err := os.Stat(filepath.Join(r.out, ArtifactsDir, "agent", agentStdout)); err != nil {
		t.Errorf("agent logs not kept: %v", err)
	}

	nop := runSeparate(t, "nop", task, vimg)
	if nop.result.VerifierResult == nil || nop.result.VerifierResult.Rewards["reward"] != 0 {
		t.Errorf("nop: %+v %+v, want reward 0", nop.result.VerifierResult, nop.result.ExceptionInfo)
	}
}

// A verifier image without /tests/test.sh ends the attempt with an
// exception naming the task and the file, and no reward.
func TestSeparateVerifierImageWithoutTestScript(t *testing.T) {
	r := runSeparate(t, "oracle", separateTask(t, sepSolve), verifierImage(t, ""))
	e := r.result.ExceptionInfo
	if r.result.VerifierResult != nil || e == nil || e.ExceptionType != verifierNoTestScript ||
		!strings.Contains(e.ExceptionMessage, "task task") || !strings.Contains(e.ExceptionMessage, "/tests/test.sh") {
		t.Errorf("result %+v %+v, want %s naming the task and /tests/test.sh", r.result.VerifierResult, e, verifierNoTestScript)
	}
}

// Without the verifier's image the runner refuses the trial, saying why.
func TestSeparateVerifierNeedsItsImage(t *testing.T) {
	spec := baseSpec(t, "oracle")
	spec.Task = sandbox.TaskRef{Name: "task", Dir: separateTask(t, sepSolve)}
	img := testImage(t)
	dir := t.TempDir()
	_, err := run(t.Context(), spec, Options{Image: &img, Isolation: IsolationBwrap, SelfPath: runnerBinary,
		WorkDir: filepath.Join(dir, "w"), OutDir: filepath.Join(dir, "o")}, harness.All())
	if err == nil || !strings.Contains(err.Error(), "--verifier-image") {
		t.Errorf("Run without a verifier image: %v, want an error naming --verifier-image", err)
	}
	assertNoMountsUnder(t, dir)
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// In shared mode (the default) the declared artifacts — the task's and
// the run's (trial level) — are collected after the agent all the same
// and kept with the attempt; the verifier runs in the agent's pod as ever.
func TestSharedModeKeepsDeclaredArtifacts(t *testing.T) {
	task := plainTask(t, sepSolve+"echo gauntlet > /app/answer.txt\n")
	cfg := readFile(t, filepath.Join(task, "task.toml"))
	if err := os.WriteFile(filepath.Join(task, "task.toml"), []byte(`artifacts = ["/data/out/result.txt", {source = "/app", destination = "workdir"}]`+"\n"+cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := baseSpec(t, "oracle")
	spec.Task = sandbox.TaskRef{Name: "task", Dir: task}
	spec.Artifacts = []string{"/tmp/agent-only.txt"} // the run's trial-level artifacts
	img := testImage(t)
	r := runTrial(t, spec, Options{Image: &img, Isolation: IsolationBwrap})
	if r.result.VerifierResult == nil || r.result.VerifierResult.Rewards["reward"] != 1 {
		t.Fatalf("oracle: %+v %+v", r.result.VerifierResult, r.result.ExceptionInfo)
	}
	kept := filepath.Join(r.out, ArtifactsDir, DeclaredArtifactsDir)
	if got := readFile(t, filepath.Join(kept, "data/out/result.txt")); got != "42\n" {
		t.Errorf("kept file artifact = %q", got)
	}
	if got := readFile(t, filepath.Join(kept, "tmp/agent-only.txt")); got != "mine\n" {
		t.Errorf("kept trial-level artifact = %q", got)
	}
	if got := readFile(t, filepath.Join(kept, "workdir/answer.txt")); got != "gauntlet\n" {
		t.Errorf("kept directory artifact (destination workdir) answer.txt = %q", got)
	}
}
