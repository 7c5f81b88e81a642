package runner

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sealed"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// maxSealedSize bounds the sealed secrets object a runner downloads.
const maxSealedSize = 1 << 20

// openSealedSecrets fetches the sealed secrets a cloud driver stored for
// this launch (sealed.URLEnv), has keys unwrap their data key
// (sealed.DataKeyEnv, standard base64; KMS in the cloud, with the launch as
// encryption context), opens them and adds them to the spec. The URL is
// presigned and short-lived; neither it nor any value or key appears in an
// error.
func openSealedSecrets(ctx context.Context, spec *sandbox.Spec, url, wrappedKey string, keys sealed.DataKeyOpener, client *http.Client) error {
	if url == "" && wrappedKey == "" {
		return nil
	}
	if url == "" || wrappedKey == "" {
		return fmt.Errorf("sealed secrets: %s and %s must be set together", sealed.URLEnv, sealed.DataKeyEnv)
	}
	if keys == nil {
		return errors.New("sealed secrets: this runner has no data-key service to open them with")
	}
	wrapped, err := base64.StdEncoding.DecodeString(wrappedKey)
	if err != nil {
		return fmt.Errorf("sealed secrets: %s is not standard base64", sealed.DataKeyEnv)
	}
	ct, err := download(ctx, client, url)
	if err != nil {
		return err
	}
	key, err := keys.OpenDataKey(ctx, wrapped, spec.LaunchID)
	if err != nil {
		return fmt.Errorf("sealed secrets: %w", err)
	}
	s, err := sealed.Open(ct, key, spec.LaunchID)
	sealed.Wipe(key)
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
	if s.Judge != "" {
		spec.JudgeKey = secret.Value(s.Judge)
	}
	return nil
}

// download fetches the sealed object from its presigned URL.
func download(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	if client == nil {
		client = &http.Client{Timeout: time.Minute}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("sealed secrets: bad URL in %s", sealed.URLEnv)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sealed secrets: download failed")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sealed secrets: download answered HTTP %d", resp.StatusCode)
	}
	ct, err := io.ReadAll(io.LimitReader(resp.Body, maxSealedSize+1))
	if err != nil || len(ct) > maxSealedSize {
		return nil, fmt.Errorf("sealed secrets: download failed or over %d bytes", maxSealedSize)
	}
	return ct, nil
}

// Install copies the running sandbox-runner binary to dst (mode 0755): the
// cloud task definition's init container uses it to place the runner in a
// volume shared with the task's own image. With staticBin set it first
// copies every regular file of that directory (the platform's static helper
// binaries the runner image ships, such as terminus-2) into StaticBinDir(dst),
// so the runner's arrival in the volume means its helpers are there too.
// Each file is written beside its destination and renamed into place, so a
// reader never sees a partial binary.
func Install(dst, staticBin string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("install: find own binary: %w", err)
	}
	if staticBin != "" {
		entries, err := os.ReadDir(staticBin)
		if err != nil {
			return fmt.Errorf("install: static binaries: %w", err)
		}
		bin := StaticBinDir(dst)
		if err := os.MkdirAll(bin, 0o755); err != nil {
			return fmt.Errorf("install: %w", err)
		}
		// Whatever the umask: the agent's uid runs these.
		if err := os.Chmod(bin, 0o755); err != nil {
			return fmt.Errorf("install: %w", err)
		}
		n := 0
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			if err := installFile(filepath.Join(staticBin, e.Name()), filepath.Join(bin, e.Name())); err != nil {
				return err
			}
			n++
		}
		if n == 0 {
			return fmt.Errorf("install: static binaries: %s holds none", staticBin)
		}
	}
	return installFile(self, dst)
}

// StaticBinDir is where Install puts the static helper binaries of a runner
// installed at dst: bin/ beside it.
func StaticBinDir(dst string) string {
	return filepath.Join(filepath.Dir(dst), "bin")
}

// installFile copies src to dst, mode 0755, by way of a temporary file
// renamed into place.
func installFile(src, dst string) error {
	in, err := os.Open(src)
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
	// The umask may have narrowed the mode; every uid must run these.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	return nil
}
