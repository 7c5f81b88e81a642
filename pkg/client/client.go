// Package client is the Go client of gauntlet's HTTP API, used by the CLI:
// one method per route, typed answers (the api package's views), and API
// errors as *Error with the server's code, message and details.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// Client talks to one API endpoint with one token.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// New returns a client of the API at baseURL (e.g. http://127.0.0.1:8080)
// authenticating with token. A nil httpClient uses one without a total
// timeout (downloads stream), relying on contexts.
func New(baseURL, token string, httpClient *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("API URL %q: want http(s)://host[:port]", baseURL)
	}
	if httpClient == nil {
		httpClient = &http.Client{Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, ResponseHeaderTimeout: 60 * time.Second, MaxIdleConnsPerHost: 4,
		}}
	}
	return &Client{base: u, token: token, http: httpClient}, nil
}

// URL returns the API base URL.
func (c *Client) URL() string { return c.base.String() }

// Error is an API error answer: the wire error shape with the HTTP status,
// worded for a terminal.
type Error struct {
	answer
}

// answer names the embedded wire shape, whose own Error method Error's shadows.
type answer = v1.Error

// Error implements error; a rejected submission lists its problems.
func (e *Error) Error() string {
	msg := e.Message
	if rej, ok := e.Problems(); ok && len(rej) > 0 && e.Code == v1.CodeValidation {
		parts := make([]string, len(rej))
		for i, p := range rej {
			parts[i] = "  - " + p.Message
			if p.Field != "" {
				parts[i] = "  - " + p.Field + ": " + p.Message
			}
		}
		count := fmt.Sprintf("%d problems", len(rej))
		if len(rej) == 1 {
			count = "1 problem"
		}
		msg = fmt.Sprintf("the request has %s:\n%s", count, strings.Join(parts, "\n"))
	}
	return fmt.Sprintf("%s (%d %s)", msg, e.Status, e.Code)
}

// IsStatus reports whether err is an API error with the status code.
func IsStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

// request is one API call.
type request struct {
	method, path string
	query        url.Values
	body         io.Reader
	contentType  string
	header       http.Header
}

// do sends the request and returns the response of a 2xx answer; any
// other answer becomes an *Error.
func (c *Client) do(ctx context.Context, rq request) (*http.Response, error) {
	target := c.base.String() + rq.path
	if len(rq.query) > 0 {
		target += "?" + rq.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, target, rq.body)
	if err != nil {
		return nil, fmt.Errorf("build %s %s: %w", rq.method, rq.path, err)
	}
	for k, v := range rq.header {
		req.Header[k] = v
	}
	if rq.contentType != "" {
		req.Header.Set("Content-Type", rq.contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", rq.method, c.base.String()+rq.path, err)
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	apiErr := &Error{answer{Status: resp.StatusCode}}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(data, &apiErr.answer) != nil || apiErr.Code == "" {
		apiErr.Code, apiErr.Message = "HTTP_"+strconv.Itoa(resp.StatusCode), strings.TrimSpace(string(data))
	}
	return nil, apiErr
}

// path joins escaped segments into an API path: path("v1", "runs", id)
// is "/v1/runs/<escaped id>" (ids may hold any byte).
func path(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// call sends rq and decodes a JSON answer into out (when out is not nil).
func (c *Client) call(ctx context.Context, rq request, out any) error {
	resp, err := c.do(ctx, rq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode answer of %s %s: %w", rq.method, rq.path, err)
	}
	return nil
}

func jsonBody(v any) (io.Reader, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}

// Health checks that the server answers.
func (c *Client) Health(ctx context.Context) error {
	return c.call(ctx, request{method: http.MethodGet, path: path("healthz")}, nil)
}

// Workspace returns the caller's workspace.
func (c *Client) Workspace(ctx context.Context) (v1.WorkspaceView, error) {
	var out v1.WorkspaceView
	return out, c.call(ctx, request{method: http.MethodGet, path: path("v1", "workspace")}, &out)
}

// Secrets lists the secret records the caller sees.
func (c *Client) Secrets(ctx context.Context) ([]v1.SecretView, error) {
	var out v1.SecretList
	err := c.call(ctx, request{method: http.MethodGet, path: path("v1", "secrets")}, &out)
	return out.Secrets, err
}

// PutSecret sets a secret value in scope (workspace or personal).
func (c *Client) PutSecret(ctx context.Context, name, scope string, value []byte) (v1.SecretView, error) {
	var out v1.SecretView
	err := c.call(ctx, request{method: http.MethodPut, path: path("v1", "secrets", name), query: scopeQuery(scope),
		body: bytes.NewReader(value), contentType: "application/octet-stream"}, &out)
	return out, err
}

// DeleteSecret deletes a secret record.
func (c *Client) DeleteSecret(ctx context.Context, name, scope string) error {
	return c.call(ctx, request{method: http.MethodDelete, path: path("v1", "secrets", name), query: scopeQuery(scope)}, nil)
}

func scopeQuery(scope string) url.Values {
	if scope == "" {
		return nil
	}
	return url.Values{"scope": {scope}}
}
