package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// readHTTPRegistry GETs a registry.json, refusing non-200 answers and bodies
// over limit bytes.
func readHTTPRegistry(ctx context.Context, client *http.Client, location string, limit int64) (harbor.Registry, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, location, nil)
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", location, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("registry %s: %w", location, ctxErr)
		}
		return nil, fmt.Errorf("registry %s %w: %w", location, ErrUnreachable, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("registry %s %w: HTTP status %s", location, ErrUnreachable, resp.Status)
	}
	return parseLimited(resp.Body, location, limit)
}

// unwrapURLError drops *url.Error's "Get \"…\":" prefix: the caller already
// names the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}

// parseLimited parses a registry.json of at most limit bytes.
func parseLimited(r io.Reader, name string, limit int64) (harbor.Registry, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("registry %s: read: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("registry %s: larger than the limit of %d bytes", name, limit)
	}
	reg, err := harbor.ParseRegistry(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", name, err)
	}
	return reg, nil
}
