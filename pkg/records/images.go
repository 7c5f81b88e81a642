package records

import (
	"context"
	"fmt"
	"time"
)

// Items of task environments (added to the key scheme above):
//
//	IMGBUILD#<build key hex>    | BUILD                    a built task image: build key → pinned digest ref
//	BENCH#<ws>#<key>            | CHECK#<version>          environment check of a manifest version (broken / trivial tasks)

func buildPK(key string) string { return "IMGBUILD#" + key }

// ImageBuild is a Dockerfile build that succeeded: its build key (sha256
// of the context and the pinned base digests) and the image it produced.
// Builds are platform-wide: equal keys in any workspace share the image, so
// a task is built once and a re-sync does not rebuild it.
type ImageBuild struct {
	Key string `json:"key"`
	// Pinned is the digest reference of the built image.
	Pinned string `json:"pinned"`
	// Log is the blob key of the build log.
	Log     string    `json:"log,omitempty"`
	BuiltAt time.Time `json:"built_at"`
	// Seconds is how long the build took.
	Seconds float64 `json:"seconds"`
}

// PutImageBuild records a build, replacing an earlier record of the key (a
// rebuild after the image was evicted).
func (s *Benchmarks) PutImageBuild(ctx context.Context, b ImageBuild) error {
	if b.Key == "" || b.Pinned == "" {
		return fmt.Errorf("image build record needs a key and a pinned image (got %+v)", b)
	}
	return s.putJSON(ctx, buildPK(b.Key), "BUILD", b)
}

// ImageBuild returns the build record of the key; ErrNotFound when the key
// was never built.
func (s *Benchmarks) ImageBuild(ctx context.Context, key string) (ImageBuild, error) {
	var b ImageBuild
	if err := s.getJSON(ctx, buildPK(key), "BUILD", &b); err != nil {
		return ImageBuild{}, fmt.Errorf("image build %s: %w", key, err)
	}
	return b, nil
}

// CheckVerdict is what an environment check found for one task.
type CheckVerdict string

// Verdicts of an environment check.
const (
	// CheckOK: the oracle passes and nop fails.
	CheckOK CheckVerdict = "ok"
	// CheckBroken: the oracle fails — a bad image, a verifier that needs
	// network it cannot have — so a failure there says nothing of an agent.
	CheckBroken CheckVerdict = "broken"
	// CheckTrivial: nop passes, so a pass there says nothing of an agent.
	CheckTrivial CheckVerdict = "trivial"
	// CheckUnavailable: the task's image could not be had at sync.
	CheckUnavailable CheckVerdict = "unavailable"
)

// TaskCheck is the environment check of one task.
type TaskCheck struct {
	Task    string       `json:"task"`
	Verdict CheckVerdict `json:"verdict"`
	// Oracle and Nop are the outcomes of the two attempts ("passed",
	// "failed", "errored: …"); empty when not attempted.
	Oracle string `json:"oracle,omitempty"`
	Nop    string `json:"nop,omitempty"`
	// Detail explains the verdict (an errored attempt's message, an
	// unavailable task's reason).
	Detail string `json:"detail,omitempty"`
}

// EnvCheck is the environment check of one manifest version: which tasks
// are broken (the oracle fails) and which trivial (nop passes).
type EnvCheck struct {
	Workspace string `json:"workspace"`
	Key       string `json:"key"`
	Version   string `json:"version"`
	// Status is running while the check's runs are going, then done.
	Status string `json:"status"`
	// Run is the run of the oracle (agent 0) and nop (agent 1).
	Run       string      `json:"run,omitempty"`
	Tasks     []TaskCheck `json:"tasks,omitempty"`
	StartedAt time.Time   `json:"started_at"`
	EndedAt   time.Time   `json:"ended_at,omitzero"`
}

// Env check statuses.
const (
	CheckRunning = "running"
	CheckDone    = "done"
)

// Broken returns the names of the broken tasks.
func (c EnvCheck) Broken() []string { return c.with(CheckBroken) }

// Trivial returns the names of the trivial tasks.
func (c EnvCheck) Trivial() []string { return c.with(CheckTrivial) }

func (c EnvCheck) with(v CheckVerdict) []string {
	var out []string
	for _, t := range c.Tasks {
		if t.Verdict == v {
			out = append(out, t.Task)
		}
	}
	return out
}

func checkSK(version string) string { return "CHECK#" + version }

// PutEnvCheck stores the environment check of a manifest version,
// replacing an earlier one.
func (s *Benchmarks) PutEnvCheck(ctx context.Context, c EnvCheck) error {
	if c.Workspace == "" || c.Key == "" || c.Version == "" {
		return fmt.Errorf("environment check needs a workspace, key and version (got %q, %q, %q)", c.Workspace, c.Key, c.Version)
	}
	return s.putJSON(ctx, benchPK(c.Workspace, c.Key), checkSK(c.Version), c)
}

// EnvCheck returns the environment check of a manifest version;
// ErrNotFound when none was made.
func (s *Benchmarks) EnvCheck(ctx context.Context, ws, key, version string) (EnvCheck, error) {
	var c EnvCheck
	if err := s.getJSON(ctx, benchPK(ws, key), checkSK(version), &c); err != nil {
		return EnvCheck{}, fmt.Errorf("environment check of %s@%s: %w", key, version, err)
	}
	return c, nil
}
