package runner

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sealed"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// maxSealedSize bounds the sealed secrets object a runner downloads.
const maxSealedSize = 1 << 20

// openSealedSecrets fetches and opens the sealed secrets a cloud driver
// stored for this launch (sealed.URLEnv, sealed.KeyEnv) and adds them to the
// spec. The URL is presigned and short-lived; neither it nor any value
// appears in an error.
func openSealedSecrets(ctx context.Context, spec *sandbox.Spec, url, key string, client *http.Client) error {
	if url == "" && key == "" {
		return nil
	}
	if url == "" || key == "" {
		return fmt.Errorf("sealed secrets: %s and %s must be set together", sealed.URLEnv, sealed.KeyEnv)
	}
	if client == nil {
		client = &http.Client{Timeout: time.Minute}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("sealed secrets: bad URL in %s", sealed.URLEnv)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("sealed secrets: download failed")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sealed secrets: download answered HTTP %d", resp.StatusCode)
	}
	ct, err := io.ReadAll(io.LimitReader(resp.Body, maxSealedSize+1))
	if err != nil || len(ct) > maxSealedSize {
		return fmt.Errorf("sealed secrets: download failed or over %d bytes", maxSealedSize)
	}
	s, err := sealed.Open(ct, key, spec.LaunchID)
	if err != nil {
		return err
	}
	add := func(dst *map[string]secret.Value, src map[string]string) {
		if len(src) > 0 && *dst == nil {
			*dst = map[string]secret.Value{}
		}
		for name, v := range src {
			(*dst)[name] = secret.Value(v)
		}
	}
	add(&spec.Secrets, s.Agent)
	add(&spec.VerifierSecrets, s.Verifier)
	return nil
}

// Install copies the running sandbox-runner binary to dst (mode 0755): the
// cloud task definition's init container uses it to place the runner in a
// volume shared with the task's own image.
func Install(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("install: find own binary: %w", err)
	}
	in, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("install: copy to %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	return nil
}
