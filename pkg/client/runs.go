package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// Benchmarks lists the workspace's benchmarks.
func (c *Client) Benchmarks(ctx context.Context) ([]v1.BenchmarkView, error) {
	var out v1.BenchmarkList
	err := c.call(ctx, request{method: http.MethodGet, path: path("v1", "benchmarks")}, &out)
	return out.Benchmarks, err
}

// Benchmark returns one benchmark with its manifest.
func (c *Client) Benchmark(ctx context.Context, key string) (v1.BenchmarkDetail, error) {
	var out v1.BenchmarkDetail
	return out, c.call(ctx, request{method: http.MethodGet, path: path("v1", "benchmarks", key)}, &out)
}

// AddBenchmark adds a registry dataset ("name[@version]"); creds name the
// workspace secret records its sync logs in to registries with.
func (c *Client) AddBenchmark(ctx context.Context, source string, creds ...v1.RegistryCredential) (v1.BenchmarkView, error) {
	var out v1.BenchmarkView
	body, err := jsonBody(v1.AddBenchmarkRequest{Source: source, RegistryCredentials: creds})
	if err != nil {
		return out, err
	}
	return out, c.call(ctx, request{method: http.MethodPost, path: path("v1", "benchmarks"), body: body, contentType: "application/json"}, &out)
}

// AddBenchmarkFrom adds a dataset from any source the API takes: a
// registry.json dataset, a package dataset (org/name[@ref], with an API
// key secret for private ones) or a git repository (Repo, Path).
func (c *Client) AddBenchmarkFrom(ctx context.Context, req v1.AddBenchmarkRequest) (v1.BenchmarkView, error) {
	var out v1.BenchmarkView
	body, err := jsonBody(req)
	if err != nil {
		return out, err
	}
	return out, c.call(ctx, request{method: http.MethodPost, path: path("v1", "benchmarks"), body: body, contentType: "application/json"}, &out)
}

// SyncBenchmark retries a benchmark's sync.
func (c *Client) SyncBenchmark(ctx context.Context, key string) (v1.BenchmarkView, error) {
	var out v1.BenchmarkView
	return out, c.call(ctx, request{method: http.MethodPost, path: path("v1", "benchmarks", key, "sync")}, &out)
}

// DeleteBenchmark removes a benchmark added from the registry.
func (c *Client) DeleteBenchmark(ctx context.Context, key string) error {
	return c.call(ctx, request{method: http.MethodDelete, path: path("v1", "benchmarks", key)}, nil)
}

// Leaderboard returns the benchmark's leaderboard ranked by metric ("" =
// pass@1).
func (c *Client) Leaderboard(ctx context.Context, key, metric string) (v1.LeaderboardView, error) {
	var out v1.LeaderboardView
	q := url.Values{}
	if metric != "" {
		q.Set("metric", metric)
	}
	return out, c.call(ctx, request{method: http.MethodGet, path: path("v1", "benchmarks", key, "leaderboard"), query: q}, &out)
}

// Submission is a run config to submit or validate.
type Submission struct {
	Config []byte
	// JSON says Config is the JSON form (default TOML).
	JSON bool
	// IdempotencyKey makes a submission safe to retry.
	IdempotencyKey string
	// Name overrides the generated run name.
	Name string
}

func (s Submission) request(p string) request {
	rq := request{method: http.MethodPost, path: p, body: bytes.NewReader(s.Config), contentType: "application/toml", header: http.Header{}}
	if s.JSON {
		rq.contentType = "application/json"
	}
	if s.IdempotencyKey != "" {
		rq.header.Set("Idempotency-Key", s.IdempotencyKey)
	}
	if s.Name != "" {
		rq.query = url.Values{"name": {s.Name}}
	}
	return rq
}

// SubmitRun submits a run.
func (c *Client) SubmitRun(ctx context.Context, s Submission) (v1.CreatedRun, error) {
	var out v1.CreatedRun
	return out, c.call(ctx, s.request(path("v1", "runs")), &out)
}

// ValidateRun checks a submission without creating anything.
func (c *Client) ValidateRun(ctx context.Context, s Submission) (v1.ValidationReport, error) {
	var out v1.ValidationReport
	return out, c.call(ctx, s.request(path("v1", "runs", "validate")), &out)
}

// RunFilter selects runs.
type RunFilter struct {
	Benchmark, Status, Cursor string
	Limit                     int
}

// Runs returns one page of runs, newest first.
func (c *Client) Runs(ctx context.Context, f RunFilter) (v1.RunList, error) {
	q := url.Values{}
	setNonEmpty(q, "benchmark", f.Benchmark)
	setNonEmpty(q, "status", f.Status)
	setNonEmpty(q, "cursor", f.Cursor)
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out v1.RunList
	return out, c.call(ctx, request{method: http.MethodGet, path: path("v1", "runs"), query: q}, &out)
}

func setNonEmpty(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

// Run returns one run with its agents and metrics.
func (c *Client) Run(ctx context.Context, id string) (v1.RunDetail, error) {
	var out v1.RunDetail
	return out, c.call(ctx, request{method: http.MethodGet, path: path("v1", "runs", id)}, &out)
}

// RunConfig returns the run's resolved config as TOML.
func (c *Client) RunConfig(ctx context.Context, id string) (string, error) {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path("v1", "runs", id, "config")})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// RunLogs returns one page of the run's log lines.
func (c *Client) RunLogs(ctx context.Context, id, cursor string, limit int) (v1.LogList, error) {
	q := url.Values{}
	setNonEmpty(q, "cursor", cursor)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out v1.LogList
	return out, c.call(ctx, request{method: http.MethodGet, path: path("v1", "runs", id, "logs"), query: q}, &out)
}

// StopRun asks the run to stop.
func (c *Client) StopRun(ctx context.Context, id string) (v1.RunView, error) {
	var out v1.RunView
	return out, c.call(ctx, request{method: http.MethodPost, path: path("v1", "runs", id, "stop")}, &out)
}

// ResultFilter selects results.
type ResultFilter struct {
	// Agent is an agent index; nil means every agent.
	Agent                    *int
	Task, Outcome, Q, Cursor string
	Limit                    int
}

// Results returns one page of the run's results.
func (c *Client) Results(ctx context.Context, id string, f ResultFilter) (v1.ResultList, error) {
	q := url.Values{}
	if f.Agent != nil {
		q.Set("agent", strconv.Itoa(*f.Agent))
	}
	setNonEmpty(q, "task", f.Task)
	setNonEmpty(q, "outcome", f.Outcome)
	setNonEmpty(q, "q", f.Q)
	setNonEmpty(q, "cursor", f.Cursor)
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out v1.ResultList
	return out, c.call(ctx, request{method: http.MethodGet, path: path("v1", "runs", id, "results"), query: q}, &out)
}

// Result returns one result in detail.
func (c *Client) Result(ctx context.Context, runID, resultID string) (v1.ResultDetail, error) {
	var out v1.ResultDetail
	return out, c.call(ctx, request{method: http.MethodGet, path: path("v1", "runs", runID, "results", resultID)}, &out)
}

// Download opens the run's zip export of kind (summary, results,
// artifacts, logs or all) in format (gauntlet, the default when empty, or
// harbor: a Harbor job directory, kind all); the caller closes it.
func (c *Client) Download(ctx context.Context, runID, kind, format string) (io.ReadCloser, error) {
	q := url.Values{}
	setNonEmpty(q, "type", kind)
	setNonEmpty(q, "format", format)
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path("v1", "runs", runID, "download"), query: q})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Artifact opens one artifact of a result; the caller closes it.
func (c *Client) Artifact(ctx context.Context, runID, resultID, artifact string) (io.ReadCloser, error) {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path("v1", "runs", runID, "results", resultID, "artifacts") + artifactPath(artifact)})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// artifactPath escapes an artifact path segment by segment, keeping its
// slashes.
func artifactPath(p string) string {
	return path(strings.Split(p, "/")...)
}

// Compare contrasts two finished run agents of one benchmark on their
// common tasks; a and b are "RUN" or "RUN/AGENT" (the agent's index).
func (c *Client) Compare(ctx context.Context, a, b string) (v1.CompareView, error) {
	var out v1.CompareView
	q := url.Values{"a": {a}, "b": {b}}
	return out, c.call(ctx, request{method: http.MethodGet, path: path("v1", "compare"), query: q}, &out)
}
