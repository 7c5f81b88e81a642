package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
)

// runsArtifacts lists the stored files of one attempt (its declared
// artifacts under artifacts/declared/ with their manifest.json, the
// agent's and verifier's logs, /logs/artifacts) or downloads one of them.
func runsArtifacts(ctx context.Context, e env, args []string) error {
	const usage = "runs artifacts RUN RESULT [PATH] [-o FILE|-] [--json]"
	cmd := newAPICommand(e, "runs artifacts", usage)
	out := cmd.fs.String("o", "", "file to write the artifact to (default: its name in the current directory; - for stdout)")
	pos, err := parseArgs(cmd.fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 || len(pos) > 3 {
		return usageError("want a run id, a result id and optionally an artifact path: %s", usage)
	}
	c, err := cmd.flags.client()
	if err != nil {
		return err
	}
	runID, resultID := pos[0], pos[1]
	if len(pos) == 2 {
		d, err := c.Result(ctx, runID, resultID)
		if err != nil {
			return err
		}
		if cmd.flags.json {
			return printJSON(e.stdout, d.Artifacts)
		}
		t := newTable(e.stdout, "PATH", "BYTES")
		for _, a := range d.Artifacts {
			t.row(a.Path, strconv.FormatInt(a.Size, 10))
		}
		return t.flush()
	}
	body, err := c.Artifact(ctx, runID, resultID, pos[2])
	if err != nil {
		return err
	}
	defer body.Close()
	dst := *out
	if dst == "" {
		dst = path.Base(pos[2])
	}
	if dst == "-" {
		_, err := io.Copy(e.stdout, body)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dst), err)
	}
	n, err := writeDownload(e, body, dst, true)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, map[string]any{"path": dst, "bytes": n})
	}
	fmt.Fprintf(e.stdout, "wrote %s (%d bytes)\n", dst, n)
	return nil
}
