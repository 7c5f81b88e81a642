package client

import (
	"context"
	"io"
	"net/http"
	"net/url"

	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// StartCheck starts the environment check of the benchmark's ready
// manifest version (or returns the one already started or done).
func (c *Client) StartCheck(ctx context.Context, key string) (v1.EnvCheckView, error) {
	var out v1.EnvCheckView
	return out, c.call(ctx, request{method: http.MethodPost, path: path("v1", "benchmarks", key, "check")}, &out)
}

// Check returns the environment check of the benchmark's ready version.
func (c *Client) Check(ctx context.Context, key string) (v1.EnvCheckView, error) {
	var out v1.EnvCheckView
	return out, c.call(ctx, request{method: http.MethodGet, path: path("v1", "benchmarks", key, "check")}, &out)
}

// FollowBuildLog copies the log of a Dockerfile task's image build to w as
// the build writes it, returning once the task's image is ready or failed
// (a build that already ended: its whole log at once) or ctx ends.
func (c *Client) FollowBuildLog(ctx context.Context, key, task string, w io.Writer) error {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path("v1", "benchmarks", key, "tasks", task, "build-log"),
		query: url.Values{"follow": {"true"}}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// BuildLog returns the log of a Dockerfile task's image build: of the
// version a sync is preparing (while it builds, or after it failed), else
// of the ready version.
func (c *Client) BuildLog(ctx context.Context, key, task string) (string, error) {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path("v1", "benchmarks", key, "tasks", task, "build-log")})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
