package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A separate verifier under container isolation (a Fargate task): the
// verifier is a container of the attempt's own task definition, over the
// verifier's image, started with the task container and waiting; the two
// share a task volume, the hand-over directory, which the task container
// mounts at a root-only path. After the agent phase the task container's
// runner kills every process of the agent, puts /logs/artifacts and the
// declared artifacts (at their original paths) under the hand-over's root/
// and, when the verifier phase starts, the phase's command and environment
// in request.json, then marks it ready. The verifier container's runner
// (VerifierContainerCommand) copies root/ into its own filesystem, runs the
// command against its image's own /tests/test.sh, and hands back its
// /logs/verifier, its output and its exit code. The task container's runner
// reads the reward from them as from any verifier, and uploads the result.
// The verifier sees its image and the hand-over only: never the agent's
// /app, /tmp or logs.

// Runner subcommands of the hand-over.
const (
	// VerifierContainerCommand is the verifier container's entry point:
	// `sandbox-runner verifier-container --handoff DIR`.
	VerifierContainerCommand = "verifier-container"
	// handoffWaitCommand runs in the task container as the verifier
	// phase's process: it marks the request ready, waits for the
	// verifier container's answer and relays it.
	handoffWaitCommand = "handoff-wait"
)

// Files of the hand-over directory.
const (
	handoffRoot    = "root"         // copied over the verifier's filesystem
	handoffRequest = "request.json" // the verifier phase's command
	handoffReady   = "ready"        // request written: start
	handoffOut     = "out"          // stdout.txt, stderr.txt, logs/ (its /logs/verifier)
	handoffDone    = "done"         // the exit code, or handoffNoTests
	handoffNoTests = "no-test-script"
)

// handoffRequestFile is what the verifier container runs.
type handoffRequestFile struct {
	Script string   `json:"script"`
	Env    []string `json:"env"`
	// User is [verifier].user ("" = root, the container's user).
	User string `json:"user,omitempty"`
}

// prepareHandoffVerifier is prepareSeparateVerifier under container
// isolation: it ends the agent's processes, fills the hand-over's root/
// and makes the verifier phase a hand-over (handoffIsolation).
func (vf verification) prepareHandoffVerifier() (bool, error) {
	t := vf.t
	dir := t.opts.VerifierHandoff
	if dir == "" {
		return false, fmt.Errorf("task %s has a separate verifier: under container isolation it runs in the task's verifier container, through a hand-over directory (--verifier-handoff), and none was given", t.task.Name)
	}
	if err := t.container.endAgent(); err != nil {
		return false, fmt.Errorf("separate verifier: %w", err)
	}
	t.log.Info("agent's processes ended for the separate verifier")
	if err := t.verification().collectDeclared(); err != nil {
		return false, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return false, fmt.Errorf("separate verifier: hand-over %s: %w", dir, err)
	}
	root := filepath.Join(dir, handoffRoot)
	if err := os.RemoveAll(root); err != nil {
		return false, fmt.Errorf("separate verifier: %w", err)
	}
	arts := filepath.Join(root, strings.TrimPrefix(ArtifactsMount, "/"))
	if err := os.MkdirAll(arts, 0o755); err != nil {
		return false, fmt.Errorf("separate verifier: %w", err)
	}
	skipped, err := copyTree(t.host.Artifacts, arts, copyOptions{budget: maxArtifactBytes})
	if err != nil {
		return false, fmt.Errorf("separate verifier: hand over %s: %w", ArtifactsMount, err)
	}
	for _, s := range skipped {
		t.log.Warn("artifact not handed to the verifier", "file", ArtifactsMount+"/"+s)
	}
	if t.declared != "" {
		if err := placeArtifacts(root, t.verification().declaredArtifacts(), t.declaredEntries, t.declared); err != nil {
			return false, fmt.Errorf("separate verifier: %w", err)
		}
	}
	// Its logs are new: nothing of the agent's may leave a reward.
	if err := os.RemoveAll(t.host.VerifierLogs); err != nil {
		return false, fmt.Errorf("clear verifier logs: %w", err)
	}
	if err := os.MkdirAll(t.host.VerifierLogs, 0o755); err != nil {
		return false, fmt.Errorf("create verifier logs: %w", err)
	}
	ve := t.task.Config.VerifierEnvironment()
	t.spec.Network = ve.NetworkMode
	t.task.Config.Environment.Env = ve.Env
	t.iso = &handoffIsolation{containerIsolation: t.container, dir: dir, logs: t.host.VerifierLogs, user: t.task.Config.Verifier.User}
	return true, nil
}

// handoffIsolation runs the verifier phase in the verifier container.
type handoffIsolation struct {
	*containerIsolation
	dir  string // the hand-over directory
	logs string // where the verifier's /logs/verifier is handed back
	user string // [verifier].user, resolved in the verifier container
}

// command writes the request and returns the process that hands it over
// and relays the answer.
func (h *handoffIsolation) command(pc phaseCommand) (*exec.Cmd, error) {
	if pc.role != roleVerifier {
		return h.containerIsolation.command(pc)
	}
	data, err := json.Marshal(handoffRequestFile{Script: pc.script, Env: pc.env, User: h.user})
	if err != nil {
		return nil, err
	}
	for _, name := range []string{handoffOut, handoffDone, handoffReady} {
		if err := os.RemoveAll(filepath.Join(h.dir, name)); err != nil {
			return nil, err
		}
	}
	if err := writeFileAtomic(filepath.Join(h.dir, handoffRequest), data, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(h.self, handoffWaitCommand, h.dir, h.logs)
	cmd.Env = []string{}
	return cmd, nil
}

// launch: the hand-over's process is the runner's own helper, started as
// any phase's (no lingering: the verifier container is not this one).
func (h *handoffIsolation) launch(pc phaseCommand, cg *cgroup, stdout, stderr io.Writer) (launched, error) {
	if pc.role != roleVerifier {
		// Only the verifier's phases are handed over; a later step's
		// agent runs in the task container as before.
		return h.containerIsolation.launch(pc, cg, stdout, stderr)
	}
	cmd, err := h.command(pc)
	if err != nil {
		return launched{}, err
	}
	prepareProcess(cmd)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		return launched{}, fmt.Errorf("start: %w", err)
	}
	return launched{cmd: cmd, release: func() {}}, nil
}

// handoffPoll is how often either side looks at the hand-over.
const handoffPoll = 100 * time.Millisecond

// handoffWait is the task container's side of the verifier phase: ready,
// then wait for done, hand /logs/verifier back into logs, relay the
// output, exit with the verifier's code (127 when its image provides no
// /tests/test.sh). The phase's timeout kills it.
func handoffWait(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, handoffWaitCommand+": want DIR LOGS")
		return 2
	}
	dir, logs := args[0], args[1]
	round := strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := writeFileAtomic(filepath.Join(dir, handoffReady), []byte(round), 0o600); err != nil {
		fmt.Fprintln(stderr, handoffWaitCommand+":", err)
		return 2
	}
	done := waitForFile(filepath.Join(dir, handoffDone))
	out := filepath.Join(dir, handoffOut)
	for name, w := range map[string]io.Writer{"stdout.txt": stdout, "stderr.txt": stderr} {
		if f, err := os.Open(filepath.Join(out, name)); err == nil {
			_, _ = io.Copy(w, f)
			f.Close()
		}
	}
	if _, err := copyTree(filepath.Join(out, "logs"), logs, copyOptions{budget: maxArtifactBytes}); err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(stderr, handoffWaitCommand+": hand back /logs/verifier:", err)
	}
	if done == handoffNoTests {
		fmt.Fprintf(stderr, "the separate verifier's image provides no %s/test.sh (Harbor uploads no tests into a separate verifier)\n", TestsMount)
		return 127
	}
	code, err := strconv.Atoi(done)
	if err != nil {
		fmt.Fprintf(stderr, "%s: the verifier container answered %q\n", handoffWaitCommand, done)
		return 2
	}
	return code
}

// verifierContainer is the verifier container's runner: wait for the
// request, take the hand-over's root into its filesystem, run the command,
// hand back /logs/verifier, the output and the exit code; again for the
// next request, until the task ends (ECS stops it with the task
// container).
func verifierContainer(args []string, stderr io.Writer) int {
	if len(args) != 2 || args[0] != "--handoff" {
		fmt.Fprintln(stderr, VerifierContainerCommand+": want --handoff DIR")
		return 2
	}
	dir := args[1]
	// One round per verifier phase (a multi-step task's steps each hand
	// over); the task's end stops the container.
	last := ""
	for {
		last = waitForRound(filepath.Join(dir, handoffReady), last)
		answer := verifyOnce(dir, stderr)
		if err := writeFileAtomic(filepath.Join(dir, handoffDone), []byte(answer), 0o600); err != nil {
			fmt.Fprintln(stderr, VerifierContainerCommand+":", err)
			return 1
		}
	}
}

// verifyOnce runs one handed-over verifier phase and returns the answer:
// its exit code, or handoffNoTests.
func verifyOnce(dir string, stderr io.Writer) string {
	fail := func(what string, err error) string {
		fmt.Fprintf(stderr, "%s: %s: %v\n", VerifierContainerCommand, what, err)
		return "2"
	}
	if !hasRegularFile("/", TestsMount+"/test.sh") {
		return handoffNoTests
	}
	data, err := os.ReadFile(filepath.Join(dir, handoffRequest))
	var req handoffRequestFile
	if err == nil {
		err = json.Unmarshal(data, &req)
	}
	if err != nil {
		return fail("request", err)
	}
	if err := takeHandoffRoot(filepath.Join(dir, handoffRoot)); err != nil {
		return fail("take the artifacts", err)
	}
	out := filepath.Join(dir, handoffOut)
	if err := os.MkdirAll(out, 0o700); err != nil {
		return fail("output", err)
	}
	if err := os.RemoveAll(VerifierLogMount); err != nil {
		return fail("clear "+VerifierLogMount, err)
	}
	if err := os.MkdirAll(VerifierLogMount, 0o755); err != nil {
		return fail("create "+VerifierLogMount, err)
	}
	so, err1 := os.Create(filepath.Join(out, "stdout.txt"))
	se, err2 := os.Create(filepath.Join(out, "stderr.txt"))
	if err := errors.Join(err1, err2); err != nil {
		return fail("output", err)
	}
	cmd := exec.Command("bash", "-c", req.Script)
	cmd.Env, cmd.Stdout, cmd.Stderr = req.Env, so, se
	if req.User != "" {
		// [verifier].user, from the verifier image's own passwd; it owns
		// /logs/verifier, where it writes the reward.
		u, err := resolveUser("/", req.User)
		if err != nil {
			so.Close()
			se.Close()
			return fail("[verifier].user", err)
		}
		if err := os.Chown(VerifierLogMount, int(u.uid), int(u.gid)); err != nil {
			so.Close()
			se.Close()
			return fail("[verifier].user", err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid, Groups: u.groups}}
	}
	err = cmd.Run()
	so.Close()
	se.Close()
	code := exitCode(err)
	if _, err := copyTree(VerifierLogMount, filepath.Join(out, "logs"), copyOptions{budget: maxArtifactBytes}); err != nil {
		fmt.Fprintln(stderr, VerifierContainerCommand+": hand back "+VerifierLogMount+":", err)
	}
	return strconv.Itoa(code)
}

// takeHandoffRoot copies the hand-over's root over the container's
// filesystem. Directories the image already has keep their own modes (a
// world-writable /tmp stays so): only what the hand-over adds takes the
// hand-over's.
func takeHandoffRoot(src string) error {
	prior := map[string]fs.FileMode{}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join("/", rel)
		if info, err := os.Lstat(target); err == nil && info.IsDir() {
			prior[target] = info.Mode() & (fs.ModePerm | fs.ModeSticky | fs.ModeSetuid | fs.ModeSetgid)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := copyTree(src, "/", copyOptions{}); err != nil {
		return err
	}
	for path, mode := range prior {
		if err := os.Chmod(path, mode); err != nil {
			return err
		}
	}
	return nil
}

// waitForRound waits until the ready file names a round other than last
// and returns it.
func waitForRound(path, last string) string {
	tick := time.NewTicker(handoffPoll)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(data)) != last {
			return strings.TrimSpace(string(data))
		}
		<-tick.C
	}
}

// waitForFile waits until the file exists and returns its content
// (trimmed). The other side ends the wait: the phase's timeout kills the
// task container's helper; the task's end stops the verifier container.
func waitForFile(path string) string {
	tick := time.NewTicker(handoffPoll)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(path); err == nil {
			return strings.TrimSpace(string(data))
		}
		<-tick.C
	}
}

// writeFileAtomic writes the file whole (a temporary file renamed), so the
// other side never reads half of it.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
