package benchsync

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/dockerfile"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// ImageResolver pins an image reference to a digest reference
// ("host/repo@sha256:…"), honouring the operator's registry mirrors and
// pull credentials, and creds (the benchmark's registry credentials; each
// goes to its own registry only, before the operator's). Its errors say
// what went wrong (unknown image, registry unreachable, auth refused,
// another architecture) and never carry a credential.
type ImageResolver interface {
	Resolve(ctx context.Context, ref string, creds []PullCredential) (string, error)
}

// ImageBuilder builds one task's environment/Dockerfile into an image the
// sandboxes can run and returns its digest reference. It writes the build's
// output to req.Log.
//
// A builder whose builds run elsewhere (a cloud build job) may return a
// *BuildRunning instead of waiting: the sync then parks (the benchmark stays
// syncing, "Preparing images · k / n") and a later delivery of the same
// sync asks again with req.Running set to the handle, so a build outlives
// any one invocation of the sync (a Lambda's 15 minutes) and is started once.
type ImageBuilder interface {
	Build(ctx context.Context, req BuildRequest) (string, error)
}

// BuildRunning says the build of a request goes on after Build returned;
// Handle names it for the next Build of the same key (BuildRequest.Running).
type BuildRunning struct {
	Handle string
}

func (e *BuildRunning) Error() string { return "image build " + e.Handle + " is still running" }

// ErrBuildTimedOut is wrapped by a builder's error for a build stopped at
// its BuildRequest.Timeout by the build service itself.
var ErrBuildTimedOut = errors.New("image build timed out")

// BuildRequest is one Dockerfile build.
type BuildRequest struct {
	// Key is the build key (sha256 hex of the context and the pinned bases).
	Key string
	// Task names the task, for messages.
	Task string
	// ContextDir is the build context (the task's environment/ directory).
	ContextDir string
	// Dockerfile is the task's Dockerfile with every FROM pinned to the
	// digest reference sync resolved.
	Dockerfile []byte
	// Log receives the builder's output.
	Log io.Writer
	// Running is the handle of this key's build that an earlier delivery
	// of the same sync started (BuildRunning.Handle), or "": the builder
	// looks that build up instead of starting another.
	Running string
	// Credentials are the benchmark's registry credentials, for pulling
	// the Dockerfile's bases (each sent to its own registry only).
	Credentials []PullCredential
	// Timeout is the build's limit (build_timeout_sec capped by
	// MaxBuildTimeout; zero: none). The sync also bounds each Build call by
	// it; a builder whose build outlives the call enforces it where the
	// build runs, and reports reaching it wrapping ErrBuildTimedOut.
	Timeout time.Duration
}

// Environments configures how a sync prepares task images. With it a sync
// decides each task's image by Harbor's rules, pins every reference to a
// digest, builds Dockerfile tasks (once per build key), and records a task
// whose image cannot be had as unavailable with the reason.
type Environments struct {
	Resolver ImageResolver
	// Builder builds Dockerfile tasks; nil makes them unavailable.
	Builder ImageBuilder
	// DefaultImage runs tasks that name no image and ship no Dockerfile.
	DefaultImage string
	// ForceBuild builds tasks that have a Dockerfile even when they name a
	// docker_image.
	ForceBuild bool
	// NoPublicNetwork is the operator's network policy: tasks whose agent
	// or verifier needs network_mode "public" are unavailable.
	NoPublicNetwork bool
	// MaxBuildTimeout caps a task's build_timeout_sec; zero means no cap.
	MaxBuildTimeout time.Duration
	// ParallelBuilds is how many tasks' images are prepared (built,
	// resolved, warmed) at once; 0 means one per core.
	ParallelBuilds int
	// ResumeAfter is how long a sync parked on running builds waits before
	// it is delivered again (default DefaultResumeAfter; at most SQS's 15
	// minutes of delay).
	ResumeAfter time.Duration
	// Warm, when set, brings a pinned image into the platform's local cache
	// (the local platform unpacks its rootfs) so that a sandbox launch finds
	// it there; a failure makes the task unavailable (a corrupt layer, a
	// blob that went missing). Nil where sandboxes pull by digest
	// themselves (Fargate). creds are the benchmark's registry credentials.
	Warm func(ctx context.Context, pinned string, creds []PullCredential) error
	// HasFile, when set, reports whether a warmed image holds the regular
	// file at path (following symlinks only inside the image): a separate
	// verifier's image must provide /tests/test.sh. Nil where images are
	// not unpacked at sync (Fargate): the runner then says so at run time.
	HasFile func(ctx context.Context, pinned, path string) (bool, error)
	// NoSeparateVerifier, when set, is why the platform's sandboxes cannot
	// run a separate verifier: such tasks are unavailable with it.
	NoSeparateVerifier string
	// Services: the platform's sandboxes run a task's sidecar services
	// (environment/docker-compose.yaml), whose images are then pinned
	// too; otherwise such a task is unavailable, saying so.
	Services bool
	// Volumes: the platform's sandboxes mount a compose file's volumes;
	// otherwise a task whose compose file has any is unavailable, saying
	// so (never run without them).
	Volumes bool
	// CheckServices, when set, says why the platform's sandboxes cannot
	// run a task's services as its compose file and task.toml ask ("" when
	// they can), naming the key; it sees the environment with the
	// services' images pinned and their run keys recorded. Such a task is
	// unavailable with the reason.
	CheckServices func(task harbor.Task, env benchmark.Environment) string
}

// DefaultResumeAfter is Environments.ResumeAfter's default: a sync parked
// on builds looks at them again a minute later.
const DefaultResumeAfter = time.Minute

// maxBuildLog bounds the stored build log; the tail is kept.
const maxBuildLog = 4 << 20

// BuildLogKey is the blob key of the log of build key (hex).
func BuildLogKey(key string) string { return "builds/" + key + ".log" }

// imageWork is a task whose image was decided (its Environment set and
// marked Preparing) and still has to be built or warmed.
type imageWork struct {
	name string
	// build is the Dockerfile build the task needs; nil: a warm only.
	build *buildJob
}

// buildJob is what a Dockerfile task's build needs beyond its Environment.
type buildJob struct {
	envDir     string
	label      string  // the Dockerfile as messages name it
	timeoutSec float64 // the task's build_timeout_sec (0: the platform's)
	df         []byte  // every FROM pinned
}

// decideImages gives every task its Environment: the image's source, its
// pinned reference (pulls) or build key (builds), or why it is
// unavailable. That is all the manifest digest depends on, so the manifest
// version can be stored before any image is built; a task that still needs
// a build or a warm is marked Preparing and listed in the returned work,
// which finishImages does. Only cancellation and store trouble are errors.
// Without configured environments it does nothing.
func (s *fetcher) decideImages(ctx context.Context, tasks []benchmark.Task, dirs []string, write progressWriter, running map[string]string, creds []PullCredential) (*imagePrep, []imageWork, error) {
	if s.envs == nil {
		separateWithoutImages(tasks, dirs)
		return nil, nil, nil
	}
	prep := &imagePrep{s: s, cfg: s.envs, running: running, creds: creds}
	// The benchmark says "Preparing images · k / n" from here on; k counts
	// the tasks that are ready or unavailable.
	p := &progress{now: s.now, write: write, phase: records.SyncPhaseImages, total: len(tasks)}
	if err := p.record(ctx, 0, true); err != nil {
		return nil, nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.parallel())
	var mu sync.Mutex // guards work, done and the progress record
	var work []imageWork
	done := 0
	for i := range tasks {
		if dirs[i] == "" {
			// Unavailable at fetch (a package archive that failed its
			// hash): nothing to prepare, its reason stays.
			mu.Lock()
			done++
			mu.Unlock()
			continue
		}
		g.Go(func() error {
			start := s.now()
			env, job, err := prep.decide(gctx, tasks[i].Name, dirs[i])
			if err != nil {
				return err
			}
			if env.Unavailable != "" {
				s.log.WarnContext(ctx, "task unavailable", "task", tasks[i].Name, "reason", env.Unavailable)
			}
			tasks[i].Environment = &env
			needsWarm := prep.cfg.Warm != nil && env.Pinned != "" && env.Unavailable == ""
			mu.Lock()
			defer mu.Unlock()
			if env.Unavailable == "" && (job != nil || needsWarm) {
				env.Preparing = true
				work = append(work, imageWork{name: tasks[i].Name, build: job})
				return nil
			}
			done++
			s.log.InfoContext(ctx, "task image prepared", "task", tasks[i].Name, "n", done, "of", len(tasks),
				"source", string(env.Source), "seconds", roundSeconds(s.now().Sub(start)), "unavailable", env.Unavailable != "")
			return p.record(gctx, done, true)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(work, func(a, b imageWork) int { return strings.Compare(a.name, b.name) })
	return prep, work, nil
}

// parallel is how many images are built or warmed at once.
func (s *fetcher) parallel() int {
	if s.envs != nil && s.envs.ParallelBuilds > 0 {
		return s.envs.ParallelBuilds
	}
	return runtime.NumCPU()
}

// finishImages builds and warms the images decideImages left preparing,
// side by side, recording progress in the images phase (done counts every
// task that is ready or unavailable). As each task's image is ready or has
// failed, its Environment in tasks is replaced (Preparing cleared) and save
// is called with the task, so a sync can store it at once and runs may
// select it while the others build; save may be nil. When builds still run
// elsewhere (a builder answered BuildRunning) every other task is finished
// all the same and the error is an *imagesPending naming them.
func (s *fetcher) finishImages(ctx context.Context, prep *imagePrep, tasks []benchmark.Task, work []imageWork, write progressWriter, save func(context.Context, benchmark.Task) error) error {
	if prep == nil {
		return nil
	}
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		index[t.Name] = i
	}
	p := &progress{now: s.now, write: write, phase: records.SyncPhaseImages, total: len(tasks)}
	var mu sync.Mutex // guards pending, done and the progress record
	done := len(tasks) - len(work)
	if err := p.record(ctx, done, true); err != nil {
		return err
	}
	pending := map[string]string{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.parallel())
	for _, w := range work {
		i := index[w.name]
		env := *tasks[i].Environment
		g.Go(func() error {
			start := s.now()
			if w.build != nil {
				err := prep.finishBuild(gctx, w, &env)
				var br *BuildRunning
				if errors.As(err, &br) {
					s.log.InfoContext(ctx, "task image still building", "task", w.name, "build_key", env.BuildKey, "build", br.Handle)
					mu.Lock()
					pending[env.BuildKey] = br.Handle
					mu.Unlock()
					return nil
				}
				if err != nil {
					return err
				}
			}
			if err := prep.warm(gctx, w.name, &env); err != nil {
				return err
			}
			env.Preparing = false
			env.Failed = env.Unavailable != ""
			if env.Failed {
				s.log.WarnContext(ctx, "task unavailable", "task", w.name, "reason", env.Unavailable)
			}
			mu.Lock()
			tasks[i].Environment = &env
			t := tasks[i]
			mu.Unlock()
			if save != nil {
				if err := save(gctx, t); err != nil {
					return err
				}
			}
			// Every task is recorded: each one is a resolve or a build, so a
			// write per task costs nothing beside it and the views can say
			// "Preparing images · 3 / 15".
			mu.Lock()
			defer mu.Unlock()
			done++
			// One line per task as it is prepared, so whoever follows the
			// log (make run's demo, an operator) sees which image, how
			// and how long, rather than minutes of silence.
			s.log.InfoContext(ctx, "task image prepared", "task", tasks[i].Name, "n", done, "of", len(tasks),
				"source", string(env.Source), "seconds", roundSeconds(s.now().Sub(start)), "unavailable", env.Unavailable != "")
			return p.record(gctx, done, true)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if len(pending) > 0 {
		return &imagesPending{builds: pending, done: done, total: len(tasks)}
	}
	return nil
}

// imagesPending ends a sync or refresh whose builds run on: it parks, and
// its next delivery carries builds (build key → handle).
type imagesPending struct {
	builds      map[string]string
	done, total int
}

func (e *imagesPending) Error() string {
	return fmt.Sprintf("%d task images still building (%d / %d tasks prepared)", len(e.builds), e.done, e.total)
}

type resolution struct {
	pinned string
	err    error
}

// built is the outcome of one build key's preparation (see runBuild).
type built struct {
	pinned, cause string
	err           error
}

// imagePrep prepares the images of one sync, its tasks side by side; each
// reference is resolved, each image warmed and each build key built once
// per sync (a task that needs one in progress waits for it).
type imagePrep struct {
	s        *fetcher
	cfg      *Environments
	resolved onceMap[resolution]
	warmed   onceMap[error]
	builds   onceMap[built]
	// running maps build keys to builds an earlier delivery started.
	running map[string]string
	// creds are the benchmark's registry credentials.
	creds []PullCredential
	// workDir holds the fetched task directories (the build contexts)
	// until close.
	workDir string
}

// close removes the fetched task directories; a nil prep has none.
func (p *imagePrep) close() {
	if p != nil && p.workDir != "" {
		os.RemoveAll(p.workDir)
	}
}

// warm brings a pinned image into the local cache, once per image per sync.
func (p *imagePrep) warm(ctx context.Context, name string, env *benchmark.Environment) error {
	if p.cfg.Warm == nil || env.Pinned == "" || env.Unavailable != "" {
		return nil
	}
	err := p.warmed.do(env.Pinned, func() error { return p.cfg.Warm(ctx, env.Pinned, p.creds) })
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		ref := env.Image
		if ref == "" {
			ref = env.Pinned
		}
		env.Unavailable = fmt.Sprintf("task %s: image %s: pulling and unpacking %s: %v", name, ref, env.Pinned, err)
	}
	return nil
}

func (p *imagePrep) resolve(ctx context.Context, ref string) (string, error) {
	r := p.resolved.do(ref, func() resolution {
		pinned, err := p.cfg.Resolver.Resolve(ctx, ref, p.creds)
		if err == nil && !strings.Contains(pinned, "@sha256:") {
			err = fmt.Errorf("resolver returned %q, not a digest reference", pinned)
		}
		return resolution{pinned, err}
	})
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return r.pinned, r.err
}

// onceMap runs a function once per key and hands every caller of that key
// its result, the later ones waiting for the first.
type onceMap[T any] struct {
	mu sync.Mutex
	m  map[string]*onceEntry[T]
}

type onceEntry[T any] struct {
	once sync.Once
	v    T
}

func (o *onceMap[T]) do(key string, f func() T) T {
	o.mu.Lock()
	if o.m == nil {
		o.m = map[string]*onceEntry[T]{}
	}
	e, ok := o.m[key]
	if !ok {
		e = &onceEntry[T]{}
		o.m[key] = e
	}
	o.mu.Unlock()
	e.once.Do(func() { e.v = f() })
	return e.v
}

// decide decides one task's image: its Environment, and for a Dockerfile
// task that can be built, the build it needs. A separate verifier's image
// and the sidecar services' images are decided and prepared here, whole:
// the manifest digest pins them, so the version cannot be stored before.
func (p *imagePrep) decide(ctx context.Context, name, dir string) (benchmark.Environment, *buildJob, error) {
	loaded, err := harbor.LoadTask(dir)
	if err != nil {
		return benchmark.Environment{}, nil, failf("task %s: %v", name, err) // loaded once already; a change here is a broken checkout
	}
	if reason := unsupportedReason(name, loaded); reason != "" {
		return benchmark.Environment{Unavailable: reason}, nil, nil
	}
	if reason := p.s.sidecarReason(name, loaded); reason != "" {
		return benchmark.Environment{Unavailable: reason}, nil, nil
	}
	cfg := loaded.Config
	env, job, err := p.mainImage(ctx, name, dir, cfg)
	if err != nil || env.Unavailable != "" {
		return env, job, err
	}
	if cfg.Verifier.Separate() {
		if env, err = p.verifier(ctx, name, dir, cfg, env); err != nil || env.Unavailable != "" {
			return env, job, err
		}
	}
	if loaded.Compose != nil {
		env, err = p.services(ctx, name, dir, loaded, env)
		if err == nil && env.Unavailable == "" && len(env.Services) > 0 && p.cfg.CheckServices != nil {
			if why := p.cfg.CheckServices(loaded, env); why != "" {
				env.Unavailable = fmt.Sprintf("task %s: %s", name, why)
			}
		}
	}
	return env, job, err
}

// mainImage decides the task's own image: pinned when pulled, its build
// decided when built (finishBuild runs it).
func (p *imagePrep) mainImage(ctx context.Context, name, dir string, cfg harbor.TaskConfig) (benchmark.Environment, *buildJob, error) {
	hasDockerfile := isFile(filepath.Join(dir, "environment", "Dockerfile"))
	source, ref, err := benchmark.ChooseImage(cfg.Environment.DockerImage, hasDockerfile, p.cfg.ForceBuild, p.cfg.DefaultImage)
	if err != nil {
		return benchmark.Environment{Unavailable: fmt.Sprintf("task %s: %v", name, err)}, nil, nil
	}
	env := benchmark.Environment{Source: source, Image: ref}
	if reason := p.policy(name, cfg); reason != "" {
		env.Unavailable = reason
		return env, nil, nil
	}
	if source == benchmark.ImageBuild {
		envDir := filepath.Join(dir, "environment")
		return p.decideBuild(ctx, name, envDir, filepath.Join(envDir, "Dockerfile"), "environment/Dockerfile", cfg.Environment.BuildTimeoutSec, env)
	}
	env, err = p.pull(ctx, name, ref, env)
	return env, nil, err
}

// pull pins a pulled image's reference.
func (p *imagePrep) pull(ctx context.Context, name, ref string, env benchmark.Environment) (benchmark.Environment, error) {
	pinned, err := p.resolve(ctx, ref)
	if err != nil {
		if ctx.Err() != nil {
			return env, ctx.Err()
		}
		env.Unavailable = fmt.Sprintf("task %s: image %s: %v", name, ref, err)
		return env, nil
	}
	env.Pinned, env.Digest = pinned, digestOf(pinned)
	return env, nil
}

// policy returns why the operator's policy forbids the task, or "".
func (p *imagePrep) policy(name string, cfg harbor.TaskConfig) string {
	if !p.cfg.NoPublicNetwork {
		return ""
	}
	phases := []struct{ phase, mode string }{
		{"agent", orElse(cfg.Agent.NetworkMode, cfg.Environment.NetworkMode)},
		{"verifier", orElse(cfg.Verifier.NetworkMode, cfg.Environment.NetworkMode)},
	}
	for _, ph := range phases {
		if ph.mode == harbor.NetworkPublic {
			return fmt.Sprintf("task %s: its %s needs network_mode %q, and the platform's network policy allows no public network", name, ph.phase, harbor.NetworkPublic)
		}
	}
	return ""
}

func orElse(override, base string) string {
	if override != "" {
		return override
	}
	return base
}

// decideBuild decides a Dockerfile build of the Dockerfile at dfPath in
// the context envDir (the task's environment/, tests/ for a separate
// verifier, a sidecar's build context; label names the Dockerfile in
// messages): pins its bases and derives the build key (and so the build
// log's key); the build itself is finishBuild's.
func (p *imagePrep) decideBuild(ctx context.Context, name, envDir, dfPath, label string, buildTimeoutSec float64, env benchmark.Environment) (benchmark.Environment, *buildJob, error) {
	unavailable := func(format string, args ...any) (benchmark.Environment, *buildJob, error) {
		env.Unavailable = fmt.Sprintf("task %s: %s: ", name, label) + fmt.Sprintf(format, args...)
		return env, nil, nil
	}
	df, err := os.ReadFile(dfPath)
	if err != nil {
		return env, nil, fmt.Errorf("task %s: read %s: %w", name, label, err)
	}
	bases, err := dockerfile.Bases(df)
	if err != nil {
		return unavailable("%v", err)
	}
	env.Bases = map[string]string{}
	for _, b := range bases {
		pinned, err := p.resolve(ctx, b.Image)
		if err != nil {
			if ctx.Err() != nil {
				return env, nil, ctx.Err()
			}
			return unavailable("base image %s (line %d): %v", b.Image, b.Line, err)
		}
		env.Bases[b.Image] = pinned
	}
	pinnedDF, err := dockerfile.Pin(df, env.Bases)
	if err != nil {
		return unavailable("%v", err)
	}
	ctxDigest, err := harbor.TaskDigest(envDir)
	if err != nil {
		return unavailable("build context: %v", err)
	}
	env.BuildKey = buildKey(ctxDigest, env.Bases)
	env.BuildLog = BuildLogKey(env.BuildKey)
	if p.cfg.Builder == nil {
		return unavailable("this platform builds no images (no builder configured); name a docker_image in task.toml or configure the builder")
	}
	return env, &buildJob{envDir: envDir, label: label, timeoutSec: buildTimeoutSec, df: pinnedDF}, nil
}

// finishBuild reuses the image of an earlier build of the task's build key
// or builds it, and sets env's pinned image or the reason it failed.
func (p *imagePrep) finishBuild(ctx context.Context, w imageWork, env *benchmark.Environment) error {
	// Tasks of one sync that share a build key (the same context FROM the
	// same bases) share its one build; the others wait for it.
	b := p.builds.do(env.BuildKey, func() built {
		pinned, cause, err := p.buildOnce(ctx, w.name, w.build.envDir, w.build.timeoutSec, env.BuildKey, w.build.df)
		return built{pinned, cause, err}
	})
	if b.err != nil {
		return b.err
	}
	if b.cause != "" {
		env.Unavailable = fmt.Sprintf("task %s: %s: %s", w.name, w.build.label, b.cause)
		return nil
	}
	env.Pinned, env.Digest = b.pinned, digestOf(b.pinned)
	return nil
}

// build decides and runs a Dockerfile build at once (a separate
// verifier's image, which the manifest digest pins).
func (p *imagePrep) build(ctx context.Context, name, envDir, label string, buildTimeoutSec float64, env benchmark.Environment) (benchmark.Environment, error) {
	return p.buildAt(ctx, name, label, envDir, filepath.Join(envDir, "Dockerfile"), buildTimeoutSec, env)
}

// buildAt decides and runs the build of the Dockerfile at dfPath in the
// context ctxDir at once (a sidecar's image, or a separate verifier's).
func (p *imagePrep) buildAt(ctx context.Context, name, label, ctxDir, dfPath string, buildTimeoutSec float64, env benchmark.Environment) (benchmark.Environment, error) {
	env, job, err := p.decideBuild(ctx, name, ctxDir, dfPath, label, buildTimeoutSec, env)
	if err != nil || job == nil {
		return env, err
	}
	err = p.finishBuild(ctx, imageWork{name: name, build: job}, &env)
	return env, err
}

// buildOnce reuses the image of an earlier build of key or builds it; its
// results are runBuild's.
func (p *imagePrep) buildOnce(ctx context.Context, name, envDir string, buildTimeoutSec float64, key string, df []byte) (pinned, cause string, err error) {
	if pinned, ok, err := p.built(ctx, key); err != nil || ok {
		return pinned, "", err
	}
	timeout := time.Duration(buildTimeoutSec * float64(time.Second))
	if max := p.cfg.MaxBuildTimeout; max > 0 && (timeout <= 0 || timeout > max) {
		timeout = max
	}
	return p.runBuild(ctx, name, envDir, key, df, timeout)
}

// built returns the image of an earlier build of key, if the image can
// still be had (a store may have evicted it; then it is built again).
func (p *imagePrep) built(ctx context.Context, key string) (string, bool, error) {
	rec, err := p.s.benchmarks.ImageBuild(ctx, key)
	if errors.Is(err, records.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if _, err := p.cfg.Resolver.Resolve(ctx, rec.Pinned, p.creds); err != nil {
		if ctx.Err() != nil {
			return "", false, ctx.Err()
		}
		p.s.log.InfoContext(ctx, "built image gone; building again", "build_key", key, "image", rec.Pinned, "err", err)
		return "", false, nil
	}
	return rec.Pinned, true, nil
}

// runBuild runs the builder under the build timeout, stores the log and the
// build record. cause is set when the build failed for a reason the task's
// author must fix (it names the image and the cause); err is reserved for
// cancellation and store trouble, and for a *BuildRunning (the build goes
// on; nothing is stored until a later delivery sees it end).
func (p *imagePrep) runBuild(ctx context.Context, name, envDir, key string, df []byte, timeout time.Duration) (pinned, cause string, err error) {
	bctx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		bctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	log := &tailBuffer{max: maxBuildLog}
	start := p.s.now()
	p.s.log.InfoContext(ctx, "building task image", "task", name, "build_key", key, "timeout", timeout)
	stopStreaming := p.s.streamLog(ctx, BuildLogKey(key), log)
	pinned, berr := p.cfg.Builder.Build(bctx, BuildRequest{Key: key, Task: name, ContextDir: envDir, Dockerfile: df, Log: log,
		Running: p.running[key], Timeout: timeout, Credentials: p.creds})
	stopStreaming()
	if ctx.Err() != nil {
		return "", "", ctx.Err()
	}
	var br *BuildRunning
	if errors.As(berr, &br) && bctx.Err() == nil {
		return "", "", br
	}
	logKey := BuildLogKey(key)
	if perr := p.s.blobs.Put(context.WithoutCancel(ctx), logKey, bytes.NewReader(log.Bytes())); perr != nil {
		return "", "", fmt.Errorf("store build log of task %s: %w", name, perr)
	}
	switch {
	case berr != nil && (errors.Is(bctx.Err(), context.DeadlineExceeded) || errors.Is(berr, ErrBuildTimedOut)):
		limit := "the build service's limit"
		if timeout > 0 {
			limit = timeout.String() + " (build_timeout_sec)"
		}
		return "", fmt.Sprintf("build timed out after %s; log %s:\n%s", limit, logKey, log.Tail(20)), nil
	case berr != nil:
		return "", fmt.Sprintf("build failed (build key %s): %v; log %s:\n%s", key[:12], berr, logKey, log.Tail(20)), nil
	case !strings.Contains(pinned, "@sha256:"):
		return "", fmt.Sprintf("builder returned %q, not a digest reference", pinned), nil
	}
	rec := records.ImageBuild{Key: key, Pinned: pinned, Log: logKey, BuiltAt: p.s.now().UTC(), Seconds: p.s.now().Sub(start).Seconds()}
	if err := p.s.benchmarks.PutImageBuild(ctx, rec); err != nil {
		return "", "", err
	}
	p.s.log.InfoContext(ctx, "task image built", "task", name, "build_key", key, "image", pinned, "seconds", rec.Seconds)
	return pinned, "", nil
}

// buildKey is the sha256 hex of the context digest and the pinned bases.
func buildKey(ctxDigest string, bases map[string]string) string {
	h := sha256.New()
	fmt.Fprintf(h, "context %s\n", ctxDigest)
	names := make([]string, 0, len(bases))
	for n := range bases {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(h, "from %d:%s %s\n", len(n), n, bases[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func digestOf(pinned string) string {
	if i := strings.LastIndex(pinned, "@"); i >= 0 {
		return pinned[i+1:]
	}
	return ""
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// tailBuffer keeps the last max bytes written to it; a builder writes it
// while streamLog reads it.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	written int64 // bytes ever written: tells a streamer something changed
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	t.written += int64(len(b))
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// Bytes returns a copy of what is kept.
func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.buf)
}

// snapshot returns a copy of what is kept and how much was ever written.
func (t *tailBuffer) snapshot() ([]byte, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.buf), t.written
}

// Tail returns the last n lines, at most 2 KiB.
func (t *tailBuffer) Tail(n int) string {
	s := strings.TrimRight(string(t.Bytes()), "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "\n")
	if len(out) > 2048 {
		out = "…" + out[len(out)-2048:]
	}
	return out
}

// roundSeconds is d in seconds to a tenth, for log lines people read.
func roundSeconds(d time.Duration) float64 { return d.Round(100 * time.Millisecond).Seconds() }
