package localsandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// runnerOutputFile is the runner's own stdout/stderr in the sandbox dir; it
// is stored as artifacts/runner-output.log.
const runnerOutputFile = "runner-output.log"

// collect copies the runner's out/ dir (result.json, artifacts/…) and its
// output into the blob store under the spec's Output.Prefix. result.json goes
// last, so whoever sees it also finds the artifacts.
func (d *Driver) collect(ctx context.Context, p *proc) error {
	// Keys are joined by concatenation, never path.Join: cleaning would turn
	// a prefix with ".." segments into another, valid key outside the
	// slot's prefix, where the blob store's key check must refuse it.
	prefix := strings.Trim(p.spec.Output.Prefix, "/")
	if prefix == "" {
		prefix = "sandboxes/" + p.handle.ID
	}
	outDir := filepath.Join(p.dir, "out")
	var files []string
	err := filepath.WalkDir(outDir, func(file string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && file == outDir {
			return filepath.SkipAll // the runner wrote nothing
		}
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			files = append(files, file)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list outputs: %w", err)
	}
	var errs []error
	if err := d.put(ctx, prefix+"/"+sandbox.ArtifactsDir+"/"+runnerOutputFile, filepath.Join(p.dir, runnerOutputFile)); err != nil {
		errs = append(errs, err)
	}
	result := ""
	for _, file := range files {
		rel, err := filepath.Rel(outDir, file)
		if err != nil {
			return err
		}
		if rel == harbor.TrialResultFile {
			result = file
			continue
		}
		if err := d.put(ctx, prefix+"/"+filepath.ToSlash(rel), file); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && result != "" {
		errs = append(errs, d.put(ctx, prefix+"/"+harbor.TrialResultFile, result))
	}
	return errors.Join(errs...)
}

func (d *Driver) put(ctx context.Context, key, file string) error {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := d.cfg.Blobs.Put(ctx, key, f); err != nil {
		return fmt.Errorf("store %s: %w", key, err)
	}
	return nil
}

// exitStatus turns the runner's wait error into an exit code and message:
// 128+N for a runner killed by signal N, as a shell reports it.
func exitStatus(err error) (int, string) {
	if err == nil {
		return 0, ""
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), "sandbox-runner killed by " + ws.Signal().String()
		}
		return exitErr.ExitCode(), fmt.Sprintf("sandbox-runner exited with code %d", exitErr.ExitCode())
	}
	return -1, "sandbox-runner: " + err.Error()
}

// tail returns up to n bytes from the end of a file. When the file is
// longer it starts at a word (after the first whitespace of those bytes,
// never inside a UTF-8 sequence) and says it was cut with a leading "…".
func tail(file string, n int64) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return ""
	}
	cut := info.Size() > n
	if cut {
		// One byte more: the one before the cut says whether the first
		// word is whole.
		if _, err := f.Seek(info.Size()-n-1, io.SeekStart); err != nil {
			return ""
		}
	}
	data, _ := io.ReadAll(io.LimitReader(f, n+1))
	if !cut {
		return strings.TrimSpace(string(data))
	}
	return "…" + strings.TrimSpace(wordStart(string(data)))
}

// wordStart drops what precedes the first whole word of s, a text cut at
// its front whose first byte is the one before the cut: the rest of a word
// (or a UTF-8 sequence) the cut went through. A text without whitespace
// keeps every whole rune after that first byte.
func wordStart(s string) string {
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return s[i:]
	}
	s = s[1:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return strings.ToValidUTF8(s, "")
}

func joinMessage(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ": " + b
}
