package api

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// Download formats (?format=).
const (
	// FormatGauntlet is the default: CSVs, logs.txt and artifacts/<result>/.
	FormatGauntlet = "gauntlet"
	// FormatHarbor is a Harbor job directory (job.py's layout), which
	// Harbor's viewer and job loader read.
	FormatHarbor = "harbor"
)

// harborTrialExtras is where a trial's files that Harbor has no place for
// (the runner's output, the diff, the gateway's records) go in its trial
// directory.
const harborTrialExtras = "gauntlet"

// synthesizedTrialNamespace derives the ids of trial results the download
// writes for attempts that left no result.json.
var synthesizedTrialNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://gauntlet-bench.dev/harbor-trial"))

// harborJob writes the run as one Harbor job directory: <job>/config.json
// (JobConfig), <job>/result.json (JobResult with its stats) and a trial
// directory per final attempt result, named by its trial name, holding
// result.json (TrialResult, its config filled), config.json (its
// TrialConfig) and the stored files under Harbor's paths (agent/,
// verifier/, artifacts/, trial.log).
func (d *download) harborJob(ctx context.Context, zw *zip.Writer) error {
	job := safeFileName(d.run.Name) + "__" + safeFileName(d.run.ID)
	trials := make([]harbor.TrialResult, 0, len(d.results))
	for _, res := range d.results {
		tr, err := d.harborTrial(ctx, zw, job, res)
		if err != nil {
			return err
		}
		trials = append(trials, tr)
	}
	// A live run's slots without a final result count as pending, whether
	// queued or running: the download is a snapshot of what is stored.
	result := harbor.JobResult{
		ID:           run.HarborJobID(d.run.ID),
		StartedAt:    d.run.CreatedAt.UTC(),
		NTotalTrials: d.run.TotalSlots(),
		Stats:        harbor.NewJobStats(trials, d.run.TotalSlots(), 0, d.retries),
	}
	updated := time.Now().UTC()
	result.UpdatedAt = &updated
	if d.run.Status.Terminal() && !d.run.EndedAt.IsZero() {
		ended := d.run.EndedAt.UTC()
		result.FinishedAt, result.UpdatedAt = &ended, &ended
	}
	if err := writeZipJSON(zw, job+"/"+harbor.JobResultFile, result); err != nil {
		return err
	}
	return writeZipJSON(zw, job+"/"+harbor.JobConfigFile, d.harborJobConfig(job))
}

// harborJobConfig is the run's settings as Harbor's JobConfig.
func (d *download) harborJobConfig(job string) harbor.JobConfig {
	c := harbor.JobConfig{
		JobName: job, NAttempts: d.run.Settings.AttemptsPerTask, TimeoutMultiplier: d.multiplier(),
		NConcurrentTrials: max(d.run.Settings.MaxConcurrentAttempts, 1), Retry: harbor.JobRetry{MaxRetries: d.run.Settings.MaxRetries},
		Datasets: []harbor.JobDataset{{Name: d.source(), Version: d.run.ManifestVersion, TaskNames: d.run.Tasks}},
	}
	for _, a := range d.agents {
		c.Agents = append(c.Agents, d.harborAgent(a))
	}
	return c
}

func (d *download) multiplier() float64 {
	if m := d.run.Settings.TimeoutMultiplier; m > 0 {
		return m
	}
	return 1
}

// source is the run's dataset name, as the dispatcher gives it to the
// runner (sandbox.Trial.Source).
func (d *download) source() string { return cmp.Or(d.run.BenchmarkName, d.run.Benchmark) }

// harborAgent is a run agent as Harbor's AgentConfig: its secrets (and the
// harness's key variable) by name only.
func (d *download) harborAgent(a run.Agent) harbor.TrialAgent {
	secrets := slices.Clone(a.SecretNames)
	if h, ok := harness.Lookup(a.Harness); ok && h.KeyEnv != "" && a.APIKeySecret != "" {
		secrets = append(secrets, h.KeyEnv)
	}
	slices.Sort(secrets)
	env := map[string]string{}
	for _, layer := range []map[string]string{d.run.Settings.Env, a.Env} {
		for k, v := range layer {
			env[k] = v
		}
	}
	ta := harbor.TrialAgent{Name: a.Harness, ModelName: a.Model, Env: harbor.ConfigEnv(env, slices.Compact(secrets))}
	if a.Command != "" {
		ta.Kwargs = map[string]any{"command": a.Command}
	}
	return ta
}

// harborTrial writes one attempt's trial directory and returns its result.
func (d *download) harborTrial(ctx context.Context, zw *zip.Writer, job string, res run.Result) (harbor.TrialResult, error) {
	name := run.TrialName(res.SlotID, res.Generation)
	dir := job + "/" + name + "/"
	tr, err := d.storedTrial(ctx, res)
	if err != nil {
		return harbor.TrialResult{}, err
	}
	if tr == nil {
		tr = d.synthesizedTrial(res)
	}
	// The directory is named by the trial: results written before trial
	// names were one path segment are renamed to it.
	tr.TrialName = name
	if len(tr.Config) == 0 {
		if tr.Config, err = d.trialConfig(res, *tr).Raw(); err != nil {
			return harbor.TrialResult{}, fmt.Errorf("trial config of %s: %w", res.SlotID, err)
		}
	}
	if tr.TaskID == nil {
		tr.TaskID = &harbor.TaskID{Path: res.Task}
	}
	if err := writeZipJSON(zw, dir+harbor.TrialResultFile, tr); err != nil {
		return harbor.TrialResult{}, err
	}
	if err := writeZipRaw(zw, dir+harbor.TrialConfigFile, tr.Config); err != nil {
		return harbor.TrialResult{}, err
	}
	// Harbor's trial directory always has these three.
	for _, sub := range []string{harbor.TrialAgentDir, harbor.TrialVerifierDir, harbor.TrialArtifactsDir} {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: dir + sub + "/", Modified: time.Now().UTC()}); err != nil {
			return harbor.TrialResult{}, err
		}
	}
	if res.ArtifactsPrefix == "" {
		return *tr, nil
	}
	infos, err := d.h.blobs.List(ctx, res.ArtifactsPrefix)
	if err != nil {
		return harbor.TrialResult{}, fmt.Errorf("list artifacts of %s: %w", res.SlotID, err)
	}
	for _, info := range infos {
		rel := strings.TrimPrefix(info.Key, res.ArtifactsPrefix)
		switch rel {
		case harbor.TrialResultFile:
			continue
		case cloudArtifactsArchive:
			if err := d.unpackArtifacts(ctx, zw, dir, info.Key); err != nil {
				return harbor.TrialResult{}, err
			}
			continue
		}
		if err := d.copyBlob(ctx, zw, info.Key, dir+harborTrialPath(rel)); err != nil {
			return harbor.TrialResult{}, err
		}
	}
	return *tr, nil
}

// harborTrialPath maps a stored file of an attempt (relative to its blob
// prefix) to its path in a Harbor trial directory: the runner keeps the
// sandbox's /logs/agent, /logs/verifier and /logs/artifacts under
// artifacts/ (a multi-step trial's per step under artifacts/steps/<name>/),
// which Harbor keeps at the trial's top level; its log is
// Harbor's trial.log; the rest is gauntlet's own.
func harborTrialPath(rel string) string {
	inner, ok := strings.CutPrefix(rel, "artifacts/")
	if !ok {
		return harborTrialExtras + "/" + rel
	}
	// Declared artifacts (and their manifest.json) are Harbor's
	// artifacts/ as collected: <source path> or <destination> there.
	if declared, ok := strings.CutPrefix(inner, declaredArtifactsDir+"/"); ok {
		return harbor.TrialArtifactsDir + "/" + declared
	}
	// A step's, under steps/<name>/declared/, are Harbor's
	// steps/<name>/artifacts/.
	if rest, ok := strings.CutPrefix(inner, harbor.TrialStepsDir+"/"); ok {
		if name, file, ok := strings.Cut(rest, "/"+declaredArtifactsDir+"/"); ok && !strings.Contains(name, "/") {
			return harbor.TrialStepsDir + "/" + name + "/" + harbor.TrialArtifactsDir + "/" + file
		}
	}
	for _, sub := range []string{harbor.TrialAgentDir, harbor.TrialVerifierDir, harbor.TrialArtifactsDir, harbor.TrialStepsDir} {
		if strings.HasPrefix(inner, sub+"/") {
			return inner
		}
	}
	if inner == runnerLogFile {
		return harbor.TrialLogFile
	}
	return harborTrialExtras + "/" + inner
}

// Names the sandbox-runner gives what it stores (pkg/runner: RunnerLogFile,
// ArtifactsArchive); the API does not import the runner.
const (
	runnerLogFile         = "runner.log"
	declaredArtifactsDir  = "declared"
	cloudArtifactsArchive = "artifacts.tar.gz"
)

// unpackArtifacts writes the regular files of an attempt's artifacts.tar.gz
// (the cloud runner's upload of its artifacts/ dir) into the trial dir.
func (d *download) unpackArtifacts(ctx context.Context, zw *zip.Writer, dir, key string) error {
	rc, err := d.h.blobs.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("open artifact %s: %w", key, err)
	}
	defer rc.Close()
	gz, err := gzip.NewReader(rc)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", key, err)
		}
		name := path.Clean(hdr.Name)
		if hdr.Typeflag != tar.TypeReg || name == "." || strings.HasPrefix(name, "../") || path.IsAbs(name) {
			continue
		}
		f, err := create(zw, dir+harborTrialPath("artifacts/"+name))
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, tr); err != nil {
			return fmt.Errorf("read %s: %w", key, err)
		}
	}
}

// storedTrial reads the attempt's result.json; nil when it left none.
func (d *download) storedTrial(ctx context.Context, res run.Result) (*harbor.TrialResult, error) {
	if res.ArtifactsPrefix == "" {
		return nil, nil
	}
	rc, err := d.h.blobs.Get(ctx, res.ArtifactsPrefix+harbor.TrialResultFile)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read result of %s: %w", res.SlotID, err)
	}
	defer rc.Close()
	tr, err := harbor.DecodeTrialResult(rc)
	if err != nil {
		// The grader recorded this attempt without it; so does the download.
		d.h.log.WarnContext(ctx, "unreadable result.json left out of a Harbor download", "run_id", d.run.ID, "slot", res.SlotID, "err", err)
		return nil, nil
	}
	return &tr, nil
}

// synthesizedTrial is the Harbor result of an attempt that left no
// result.json (its sandbox never started, was lost or was stopped): what
// gauntlet recorded, with the reason as its exception, so the job lists
// every attempt as Harbor lists every trial.
func (d *download) synthesizedTrial(res run.Result) *harbor.TrialResult {
	tr := &harbor.TrialResult{
		ID:        uuid.NewSHA1(synthesizedTrialNamespace, []byte(d.run.ID+"\x00"+res.SlotID+"\x00"+fmt.Sprint(res.Generation))).String(),
		TaskName:  res.Task,
		TaskID:    &harbor.TaskID{Path: res.Task},
		AgentInfo: harbor.AgentInfo{Name: "unknown"},
	}
	if res.Agent >= 0 && res.Agent < len(d.agents) {
		a := d.agents[res.Agent]
		tr.AgentInfo = harbor.AgentInfo{Name: a.Harness, ModelInfo: modelInfo(a.Model)}
	}
	if src := d.source(); src != "" {
		tr.Source = &src
	}
	if !res.StartedAt.IsZero() {
		started := res.StartedAt.UTC()
		tr.StartedAt = &started
	}
	if !res.EndedAt.IsZero() {
		ended := res.EndedAt.UTC()
		tr.FinishedAt = &ended
	}
	if res.Outcome == run.Cancelled || res.Outcome == run.Errored {
		kind := harbor.ExceptionPlatform
		if res.Outcome == run.Cancelled {
			kind = harbor.ExceptionCancelled
		}
		tr.ExceptionInfo = &harbor.ExceptionInfo{ExceptionType: kind, ExceptionMessage: res.Message,
			OccurredAt: cmp.Or(res.EndedAt, res.RecordedAt).UTC()}
	}
	return tr
}

// trialConfig is the Harbor config of an attempt whose result.json has
// none (written before gauntlet recorded it), from the run's records.
func (d *download) trialConfig(res run.Result, tr harbor.TrialResult) harbor.TrialConfig {
	task := harbor.TrialTask{Path: res.Task, Source: d.source()}
	switch id := tr.TaskID; {
	case id == nil:
	case id.Name != "":
		task = harbor.TrialTask{Name: id.Org + "/" + id.Name, Ref: id.Ref, Source: d.source()}
	case id.Path != "":
		task = harbor.TrialTask{Path: id.Path, GitURL: id.GitURL, GitCommitID: id.GitCommitID, Source: d.source()}
	}
	c := harbor.TrialConfig{Task: task, TrialName: tr.TrialName, TimeoutMultiplier: d.multiplier(),
		Environment: harbor.TrialEnvironment{ImportPath: run.HarborSandboxImportPath}, JobID: run.HarborJobID(d.run.ID)}
	if res.Agent >= 0 && res.Agent < len(d.agents) {
		c.Agent = d.harborAgent(d.agents[res.Agent])
	}
	return c
}

// modelInfo splits "provider/name" as the runner does for agent_info.
func modelInfo(model string) *harbor.ModelInfo {
	if model == "" {
		return nil
	}
	if provider, name, ok := strings.Cut(model, "/"); ok {
		return &harbor.ModelInfo{Name: name, Provider: provider}
	}
	return &harbor.ModelInfo{Name: model}
}

func writeZipJSON(zw *zip.Writer, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return writeZipRaw(zw, name, data)
}

// writeZipRaw writes a JSON document indented as Harbor writes its files.
func writeZipRaw(zw *zip.Writer, name string, data []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, data, "", "    "); err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	buf.WriteByte('\n')
	f, err := create(zw, name)
	if err != nil {
		return err
	}
	_, err = f.Write(buf.Bytes())
	return err
}
