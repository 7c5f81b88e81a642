package pipeline

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
)

// PlatformWorkspace holds the records of managed benchmarks, which every
// workspace sees. A benchmark key is looked up in the caller's workspace
// first, then here.
const PlatformWorkspace = "platform"

// SubmitRequest is a run submission.
type SubmitRequest struct {
	Workspace string
	// User is the submitter; personal secret records resolve against it.
	User string
	// Config is the parsed run config. When Document is set instead, Submit
	// parses it (Format "json", else TOML) and reports its parse problems
	// together with every other problem of the submission.
	Config   runconfig.Config
	Document []byte
	Format   string
	// IdempotencyKey, when set, makes the submission idempotent: the same
	// key with the same request returns the run it created; with another
	// request it is a conflict.
	IdempotencyKey string
	// Name overrides the generated run name.
	Name string
}

// Problem codes of a rejected submission.
const (
	CodeInvalidConfig      = "invalid_config"
	CodeUnknownBenchmark   = "unknown_benchmark"
	CodeBenchmarkNotReady  = "benchmark_not_ready"
	CodeMissingSecret      = "missing_secret"
	CodeBillingRequired    = "billing_required"
	CodeInvalidIdempotency = "invalid_idempotency_key"
)

// Problem is one reason a submission was rejected.
type Problem struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// ErrRejected is wrapped by every *RejectedError.
var ErrRejected = errors.New("submission rejected")

// ErrBillingRequired matches a RejectedError with a billing problem.
var ErrBillingRequired = records.ErrBillingRequired

// ErrUnknownBenchmark matches a RejectedError whose benchmark does not exist.
var ErrUnknownBenchmark = errors.New("unknown benchmark")

// RejectedError lists every problem of a rejected submission; nothing was
// written.
type RejectedError struct {
	Problems []Problem
}

// Error implements error.
func (e *RejectedError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Message
		if p.Field != "" {
			parts[i] = p.Field + ": " + p.Message
		}
	}
	return fmt.Sprintf("submission rejected (%s): %s", runconfig.CountProblems(len(e.Problems)), strings.Join(parts, "; "))
}

// Has reports whether any problem has the code.
func (e *RejectedError) Has(code string) bool {
	return slices.ContainsFunc(e.Problems, func(p Problem) bool { return p.Code == code })
}

// Is matches ErrRejected, and ErrBillingRequired / ErrUnknownBenchmark when
// the submission has that problem.
func (e *RejectedError) Is(target error) bool {
	switch target {
	case ErrRejected:
		return true
	case ErrBillingRequired:
		return e.Has(CodeBillingRequired)
	case ErrUnknownBenchmark:
		return e.Has(CodeUnknownBenchmark)
	}
	return false
}

// Validation is what a submission would create, without creating it.
type Validation struct {
	Benchmark      records.Benchmark
	Resolved       runconfig.Resolved
	TaskCount      int
	SlotCount      int
	MissingSecrets []string
	// Unavailable are selected tasks that get no slots (see splitUnavailable).
	Unavailable []run.UnavailableTask
	// Preparing names the Unavailable tasks whose image the benchmark's
	// sync is still preparing (a run of a benchmark whose images are not
	// all ready yet selects the ready ones).
	Preparing       []string
	BillingProblem  string
	ManifestVersion string

	manifest benchmark.Manifest
}

// SubmitResult is the outcome of an accepted submission.
type SubmitResult struct {
	Run    run.Run
	Agents []run.Agent
	// Replayed is true when an earlier submission with the same
	// Idempotency-Key created the run.
	Replayed bool
	Warnings []string
}

// Validate checks a submission exactly as Submit does and reports what it
// would create; a rejected submission returns a *RejectedError.
func (s *Submitter) Validate(ctx context.Context, req SubmitRequest) (Validation, error) {
	v, problems, err := s.check(ctx, &req, parseDocument(&req))
	if err != nil {
		return Validation{}, err
	}
	if len(problems) > 0 {
		return v, &RejectedError{Problems: problems}
	}
	return v, nil
}

// Submit validates the config, resolves its tasks against the benchmark's
// ready manifest (pinning version and digest), checks that every named
// secret record exists and that billing is valid, then writes the run
// (pending), its agents and a log line in one transaction — on condition
// that the benchmark still exists — and sends a plan message. Every problem
// is reported at once in a *RejectedError, and a rejected submission writes
// nothing. A request whose Idempotency-Key was seen before answers with the
// run it created, whatever changed since (billing included).
func (s *Submitter) Submit(ctx context.Context, req SubmitRequest) (SubmitResult, error) {
	parseProblems := parseDocument(&req)
	if len(parseProblems) == 0 && records.ValidIdempotencyKey(req.IdempotencyKey) {
		res, found, err := s.replay(ctx, req)
		if found || err != nil {
			return res, err
		}
	}
	v, problems, err := s.check(ctx, &req, parseProblems)
	if err != nil {
		return SubmitResult{}, err
	}
	if len(problems) > 0 {
		return SubmitResult{}, &RejectedError{Problems: problems}
	}
	r, agents, err := s.newRun(req, v)
	if err != nil {
		return SubmitResult{}, err
	}
	if err := s.createRun(ctx, req, v.Benchmark, r, agents); err != nil {
		if records.IsConditionFailed(err) {
			return s.afterConflict(ctx, req, v.Benchmark, err)
		}
		return SubmitResult{}, err
	}
	if err := sendPlan(ctx, s.ports.Plan, r.ID); err != nil {
		// The run exists; the watchdog re-sends the plan message of a run left pending.
		s.log.ErrorContext(ctx, "send plan message", "run_id", r.ID, "err", err)
	}
	s.log.InfoContext(ctx, "run submitted", "run_id", r.ID, "workspace", r.Workspace, "slots", r.TotalSlots())
	return SubmitResult{Run: r, Agents: agents, Warnings: v.Resolved.Warnings}, nil
}

// afterConflict explains a run creation whose condition failed: the
// benchmark was deleted meanwhile (rejected), or the Idempotency-Key was
// used by a concurrent submission (replayed).
func (s *Submitter) afterConflict(ctx context.Context, req SubmitRequest, b records.Benchmark, cause error) (SubmitResult, error) {
	if _, err := s.recs.Benchmarks.Benchmark(ctx, b.Workspace, b.Key); errors.Is(err, records.ErrNotFound) {
		return SubmitResult{}, &RejectedError{Problems: []Problem{{Code: CodeUnknownBenchmark, Field: "experiment.benchmark",
			Message: fmt.Sprintf("benchmark %q was deleted while the run was being submitted", b.Key)}}}
	} else if err != nil {
		return SubmitResult{}, err
	}
	if req.IdempotencyKey != "" {
		res, found, err := s.replay(ctx, req)
		if found || err != nil {
			return res, err
		}
	}
	return SubmitResult{}, cause
}

// check gathers every problem of a submission (parseProblems are those of
// its document). An error is a failure to check (storage), not a problem of
// the submission.
func (s *Submitter) check(ctx context.Context, req *SubmitRequest, parseProblems []Problem) (Validation, []Problem, error) {
	var problems []Problem
	var v Validation
	if req.IdempotencyKey != "" && !records.ValidIdempotencyKey(req.IdempotencyKey) {
		problems = append(problems, Problem{Code: CodeInvalidIdempotency, Field: "Idempotency-Key",
			Message: "must be 1 to 128 printable ASCII characters without spaces"})
	}
	billing, err := s.recs.Workspaces.Billing(ctx, req.Workspace)
	if err != nil {
		return v, nil, fmt.Errorf("check billing of workspace %s: %w", req.Workspace, err)
	}
	if err := billing.Check(); err != nil {
		v.BillingProblem = err.Error()
		problems = append(problems, Problem{Code: CodeBillingRequired, Message: err.Error()})
	}
	if len(parseProblems) > 0 {
		return v, append(problems, parseProblems...), nil
	}
	b, manifest, benchProblem, err := s.readyBenchmark(ctx, req.Workspace, req.Config.Experiment.Benchmark)
	if err != nil {
		return v, nil, err
	}
	if benchProblem != nil {
		return v, append(problems, *benchProblem), nil
	}
	v.Benchmark, v.ManifestVersion, v.manifest = b, manifest.Version, manifest
	resolved, rerr := runconfig.Resolve(req.Config, manifest)
	if rerr != nil {
		return v, append(problems, configProblems(rerr)...), nil
	}
	resolved.Tasks, v.Unavailable = splitUnavailable(manifest, resolved.Tasks)
	v.Preparing = preparingTasks(manifest, v.Unavailable)
	switch {
	case len(resolved.Tasks) == 0 && len(v.Unavailable) > 0:
		problems = append(problems, unavailableProblem(v.Unavailable, v.Preparing))
	case len(v.Unavailable) > 0:
		resolved.Warnings = append(resolved.Warnings, unavailableWarning(v.Unavailable, v.Preparing))
	}
	resolved.Warnings = append(resolved.Warnings, budgetWarnings(resolved.Config, resolved.Harnesses)...)
	replaces, err := s.replacementWarnings(ctx, req.Workspace, b.Key, resolved, manifest)
	if err != nil {
		return v, nil, err
	}
	resolved.Warnings = append(resolved.Warnings, replaces...)
	resolved.Warnings = append(resolved.Warnings, memoryWarnings(resolved.Harnesses, resolved.Tasks, manifest)...)
	v.Resolved = resolved
	problems = append(problems, harnessProblems(resolved.Harnesses, s.opts.Platform)...)
	problems = append(problems, modelProblems(resolved.Config.Agents, resolved.Harnesses, s.opts.CheckModel)...)
	problems = append(problems, budgetProblems(resolved.Config, resolved.Harnesses, s.opts.CheckModel, s.opts.CheckPriced)...)
	problems = append(problems, envCollisions(resolved.Config, resolved.Harnesses, manifest.RequiredSecrets, harnessKeyEnv)...)
	v.TaskCount = len(resolved.Tasks)
	v.SlotCount = len(resolved.Tasks) * len(resolved.Config.Agents) * resolved.Config.Execution.AttemptsPerTask
	for _, name := range append(slices.Clone(resolved.SecretNames), manifest.RequiredSecrets...) {
		if slices.Contains(v.MissingSecrets, name) {
			continue
		}
		_, err := s.recs.Workspaces.ResolveSecret(ctx, req.Workspace, req.User, name)
		switch {
		case errors.Is(err, records.ErrNotFound):
			v.MissingSecrets = append(v.MissingSecrets, name)
			problems = append(problems, Problem{Code: CodeMissingSecret, Field: secretField(req.Config, name),
				Message: fmt.Sprintf("secret record %q does not exist in the workspace or among your personal records; create it with `gauntlet secret set %s`", name, name)})
		case err != nil:
			return v, nil, err
		}
	}
	return v, problems, nil
}

// parseDocument parses req.Document into req.Config when it is set and
// returns its problems.
func parseDocument(req *SubmitRequest) []Problem {
	if req.Document == nil {
		return nil
	}
	parse := runconfig.Parse
	if req.Format == "json" {
		parse = runconfig.ParseJSON
	}
	cfg, err := parse(req.Document)
	if err != nil {
		return configProblems(err)
	}
	req.Config = cfg
	return nil
}

// configProblems turns a config parse or resolution error into problems.
func configProblems(rerr error) []Problem {
	var ve *runconfig.ValidationError
	if errors.As(rerr, &ve) {
		out := make([]Problem, len(ve.Errors))
		for i, fe := range ve.Errors {
			out[i] = Problem{Code: CodeInvalidConfig, Field: fe.Field, Message: fe.Message}
		}
		return out
	}
	return []Problem{{Code: CodeInvalidConfig, Message: rerr.Error()}}
}

// readyBenchmark finds the benchmark by key or exact name (see
// findBenchmark) and loads its ready manifest.
func (s *Submitter) readyBenchmark(ctx context.Context, ws, ref string) (records.Benchmark, benchmark.Manifest, *Problem, error) {
	field := "experiment.benchmark"
	if ref == "" {
		return records.Benchmark{}, benchmark.Manifest{}, &Problem{Code: CodeUnknownBenchmark, Field: field, Message: "is empty; name a benchmark key or name"}, nil
	}
	b, err := s.findBenchmark(ctx, ws, ref)
	if errors.Is(err, records.ErrNotFound) {
		return records.Benchmark{}, benchmark.Manifest{}, &Problem{Code: CodeUnknownBenchmark, Field: field,
			Message: fmt.Sprintf("no benchmark has key, name or registry spec %q; list them with `gauntlet benchmark list`", ref)}, nil
	}
	if err != nil {
		return b, benchmark.Manifest{}, nil, err
	}
	version := b.ReadyVersion
	if b.Status == records.SyncSyncing && b.PreparingVersion != "" {
		// Its images are being prepared: the tasks whose image is ready
		// can run already; the others are left out as still preparing.
		version = b.PreparingVersion
	} else if b.Status != records.SyncReady || b.ReadyVersion == "" {
		msg := fmt.Sprintf("benchmark %q is %s, not ready; wait for its task list to sync (or retry a failed sync) and submit again", b.Key, b.Status)
		return b, benchmark.Manifest{}, &Problem{Code: CodeBenchmarkNotReady, Field: field, Message: msg}, nil
	}
	m, _, err := s.recs.Benchmarks.Manifest(ctx, b.Workspace, b.Key, version)
	if err != nil {
		return b, m, nil, fmt.Errorf("load manifest %s of benchmark %s: %w", version, b.Key, err)
	}
	return b, m, nil, nil
}

// findBenchmark resolves a benchmark reference: an exact key in the
// workspace, then an exact key among the managed benchmarks, then an exact
// name in the workspace, then among the managed ones, then a registry spec
// name@version the same way. A key always wins over
// a name, so a workspace benchmark named like a managed key never shadows it.
func (s *Submitter) findBenchmark(ctx context.Context, ws, ref string) (records.Benchmark, error) {
	spaces := []string{ws, PlatformWorkspace}
	for _, space := range spaces {
		b, err := s.recs.Benchmarks.Benchmark(ctx, space, ref)
		if !errors.Is(err, records.ErrNotFound) {
			b.Workspace = space
			return b, err
		}
	}
	for _, space := range spaces {
		all, err := s.recs.Benchmarks.Benchmarks(ctx, space)
		if err != nil {
			return records.Benchmark{}, err
		}
		for _, b := range all {
			if b.Name == ref {
				b.Workspace = space
				return b, nil
			}
		}
	}
	// Last, a registry dataset's spec name@version, the way Osmosis's
	// configs name a benchmark ("acme/custom@1.0").
	if strings.Contains(ref, "@") {
		for _, space := range spaces {
			all, err := s.recs.Benchmarks.Benchmarks(ctx, space)
			if err != nil {
				return records.Benchmark{}, err
			}
			for _, b := range all {
				if b.Source.Type == benchmark.Harbor && b.Source.Ref == ref {
					b.Workspace = space
					return b, nil
				}
			}
		}
	}
	return records.Benchmark{}, fmt.Errorf("benchmark %q: %w", ref, records.ErrNotFound)
}

// secretField names the config key that references a secret record.
func secretField(cfg runconfig.Config, name string) string {
	for i, a := range cfg.Agents {
		switch {
		case a.Model != nil && a.Model.APIKeySecret == name:
			return fmt.Sprintf("agents[%d].model.api_key_secret", i)
		case a.HarnessAPIKeySecret == name:
			return fmt.Sprintf("agents[%d].harness_api_key_secret", i)
		case slices.Contains(a.Secrets, name):
			return fmt.Sprintf("agents[%d].secrets", i)
		}
	}
	switch {
	case slices.Contains(cfg.Secrets.Required, name):
		return "secrets.required"
	case slices.Contains(cfg.Verifier.Required, name):
		return "verifier.required"
	case cfg.Execution.JudgeAPIKeySecret == name:
		return "execution.judge_api_key_secret"
	}
	return "benchmark.required_secrets"
}

// newRun builds the run and its agents from a checked submission.
func (s *Submitter) newRun(req SubmitRequest, v Validation) (run.Run, []run.Agent, error) {
	res := v.Resolved
	cfg := res.Config
	id, err := runID(req)
	if err != nil {
		return run.Run{}, nil, err
	}
	rendered, err := runconfig.RenderResolved(res)
	if err != nil {
		return run.Run{}, nil, fmt.Errorf("render resolved config: %w", err)
	}
	m := v.manifest
	now := s.now()
	r := run.Run{
		ID: id, Workspace: req.Workspace, SubmittedBy: req.User, IdempotencyKey: req.IdempotencyKey,
		Benchmark: v.Benchmark.Key, BenchmarkName: v.Benchmark.Name, ManifestWorkspace: v.Benchmark.Workspace,
		ManifestVersion: res.ManifestVersion, ManifestDigest: res.ManifestDigest,
		TaskSet: res.TaskSet, FullTaskList: len(res.Tasks) == availableCount(m), ParitySet: isParitySet(m, res.TaskSet),
		Tasks: res.Tasks, UnavailableTasks: v.Unavailable, Agents: len(cfg.Agents), Config: string(rendered), Status: run.Pending, CreatedAt: now,
		Settings: run.Settings{
			AttemptsPerTask: cfg.Execution.AttemptsPerTask, MaxConcurrentAttempts: cfg.Execution.MaxConcurrentAttempts,
			TimeoutMultiplier: cfg.Execution.TimeoutMultiplier, MaxRetries: cfg.Execution.MaxRetries,
			MaxTokensPerAttempt: cfg.Execution.MaxTokensPerAttempt, MaxCostUSDPerAttempt: cfg.Execution.MaxCostUSDPerAttempt,
			PassThreshold: res.PassThreshold, JudgeModel: res.JudgeModel, JudgeAPIKeySecret: judgeKeySecret(res), Env: cfg.Env,
			SecretNames: cfg.Secrets.Required, VerifierSecretNames: verifierSecrets(cfg, m), VerifierEnv: cfg.Verifier.Env, Artifacts: cfg.Artifacts,
		},
	}
	r.Name = req.Name
	if r.Name == "" {
		r.Name = runName(r.Benchmark, id)
	}
	agents := make([]run.Agent, len(cfg.Agents))
	for i, a := range cfg.Agents {
		agents[i] = run.Agent{RunID: id, Index: i, Name: a.Name, Harness: res.Harnesses[i], Model: a.ModelLabel(),
			Command: a.Command, Env: a.Env, SecretNames: cfg.AgentSecretNames(i), Status: run.Pending}
		if a.Model != nil {
			agents[i].ModelType, agents[i].BaseURL, agents[i].ExtraHeaders = string(a.Model.Type), a.Model.BaseURL, a.Model.ExtraHeaders
			agents[i].APIKeySecret = a.Model.APIKeySecret
			agents[i].BaseModel, agents[i].LoraModelName = a.Model.BaseModel, a.Model.LoraModelName
		}
	}
	return r, agents, nil
}

// isParitySet reports whether the task set is a published one: named
// "parity" or marked recommended by the benchmark.
func isParitySet(m benchmark.Manifest, name string) bool {
	if name == "" {
		return false
	}
	set, ok := m.TaskSets[name]
	return ok && (name == "parity" || set.Recommended)
}

// judgeKeySecret is the secret record holding the judge's key, kept only
// when the run grades with a judge (runconfig refuses the key otherwise).
func judgeKeySecret(res runconfig.Resolved) string {
	if res.JudgeModel == "" {
		return ""
	}
	return res.Config.Execution.JudgeAPIKeySecret
}

func verifierSecrets(cfg runconfig.Config, m benchmark.Manifest) []string {
	names := slices.Concat(cfg.Verifier.Required, m.RequiredSecrets)
	slices.Sort(names)
	return slices.Compact(names)
}

// runID derives the id from the Idempotency-Key when there is one (so a
// retried request maps to the same run), else draws a random one.
func runID(req SubmitRequest) (string, error) {
	if req.IdempotencyKey != "" {
		sum := sha256.Sum256([]byte(req.Workspace + "\x00" + req.IdempotencyKey))
		return "r-" + hex.EncodeToString(sum[:10]), nil
	}
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("draw run id: %w", err)
	}
	return "r-" + hex.EncodeToString(b[:]), nil
}

// requestDigest identifies a submission's content for idempotency checks.
func requestDigest(req SubmitRequest) (string, error) {
	b, err := json.Marshal(struct {
		User   string           `json:"user"`
		Name   string           `json:"name"`
		Config runconfig.Config `json:"config"`
	}{req.User, req.Name, req.Config})
	if err != nil {
		return "", fmt.Errorf("digest submission: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func (s *Submitter) createRun(ctx context.Context, req SubmitRequest, b records.Benchmark, r run.Run, agents []run.Agent) error {
	var ops records.Ops
	ops.Append(records.BenchmarkExistsOp(b.Workspace, b.Key))
	ops.AddAll(records.CreateRunOp(r))
	for _, a := range agents {
		ops.Add(records.CreateAgentOp(a))
	}
	ops.Add(records.LogOp(records.LogLine{RunID: r.ID, At: r.CreatedAt, Level: records.LevelInfo, Step: "submitted",
		Message: fmt.Sprintf("run submitted: %d agents × %d tasks × %d attempts = %d slots on %s@%s",
			len(agents), len(r.Tasks), r.Settings.AttemptsPerTask, r.TotalSlots(), r.Benchmark, r.ManifestVersion)}))
	for _, u := range r.UnavailableTasks {
		ops.Add(records.LogOp(records.LogLine{RunID: r.ID, At: r.CreatedAt, Level: records.LevelWarn,
			Step: "unavailable", Message: fmt.Sprintf("task %s is unavailable and gets no attempts: %s", u.Name, u.Reason)}))
	}
	if req.IdempotencyKey != "" {
		digest, err := requestDigest(req)
		if err != nil {
			return err
		}
		ops.Add(records.CreateIdempotencyOp(req.Workspace, records.Idempotency{Key: req.IdempotencyKey, RunID: r.ID, RequestDigest: digest, CreatedAt: r.CreatedAt}))
	}
	if err := ops.Transact(ctx, s.recs); err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	return nil
}

// replay answers a submission whose Idempotency-Key was seen before with
// the run it created; found is false when the key is new.
func (s *Submitter) replay(ctx context.Context, req SubmitRequest) (res SubmitResult, found bool, err error) {
	idem, err := s.recs.Workspaces.Idempotency(ctx, req.Workspace, req.IdempotencyKey)
	if errors.Is(err, records.ErrNotFound) {
		return SubmitResult{}, false, nil
	}
	if err != nil {
		return SubmitResult{}, false, fmt.Errorf("replay idempotency key: %w", err)
	}
	digest, err := requestDigest(req)
	if err != nil {
		return SubmitResult{}, true, err
	}
	if idem.RequestDigest != digest {
		return SubmitResult{}, true, fmt.Errorf("idempotency key %q was used for a different submission: %w", req.IdempotencyKey, records.ErrConflict)
	}
	r, err := s.recs.Runs.Run(ctx, idem.RunID)
	if err != nil {
		return SubmitResult{}, true, err
	}
	agents, err := s.recs.Runs.Agents(ctx, r.ID)
	if err != nil {
		return SubmitResult{}, true, err
	}
	return SubmitResult{Run: r, Agents: agents, Replayed: true}, true, nil
}

// sendPlan sends the plan message of a run to the plan queue.
func sendPlan(ctx context.Context, plan Sender, runID string) error {
	body, err := encodeMessage(PlanMessage{SchemaVersion: SchemaVersion, RunID: runID})
	if err != nil {
		return err
	}
	return plan.Send(ctx, outgoing(body, 0))
}
