package client

import (
	"context"
	"io"
	"net/http"

	v1 "github.com/gauntlet-bench/gauntlet/pkg/api/v1"
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

// BuildLog returns the log of a Dockerfile task's image build.
func (c *Client) BuildLog(ctx context.Context, key, task string) (string, error) {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path("v1", "benchmarks", key, "tasks", task, "build-log")})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
