package harness

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
)

// feed writes data to w chunk bytes at a time (all at once for 0) from
// one buffer it overwrites after every write, as test2json's tests do: a
// parser that kept a slice of what it was given would read the garbage.
func feed(w io.Writer, data []byte, chunk int) {
	if chunk <= 0 {
		chunk = max(len(data), 1)
	}
	buf := make([]byte, chunk)
	for len(data) > 0 {
		n := copy(buf, data)
		w.Write(buf[:n])
		for i := range buf {
			buf[i] = '#'
		}
		data = data[n:]
	}
}

// feedFile feeds a file as the runner does, in chunks of chunk bytes.
func feedFile(w io.Writer, path string, chunk int) error {
	if chunk <= 0 {
		return FeedFile(w, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	feed(w, data, chunk)
	return nil
}

// readOutput feeds the agent's captured output in src to h's Output
// parser the way the runner does (a missing file is an empty stream).
func readOutput(h Harness, src LogSource, chunk int) (OutputParser, error) {
	p := h.Output()
	streams := []struct {
		w    io.Writer
		file string
	}{{p.Stdout(), StdoutFile}, {p.Stderr(), "stderr.txt"}}
	var errs []error
	for _, s := range streams {
		if s.w == nil {
			continue
		}
		if err := feedFile(s.w, filepath.Join(src.AgentLogDir, s.file), chunk); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return p, errors.Join(append(errs, p.Close())...)
}

// programUsage is the program's usage report as the runner reads it.
func programUsage(h Harness, src LogSource, chunk int) (Usage, bool, error) {
	if h.Output == nil {
		return h.Usage(src.AgentLogDir)
	}
	p, err := readOutput(h, src, chunk)
	if err != nil {
		return Usage{}, false, err
	}
	u, ok := p.Usage()
	return u, ok, nil
}

// programModelError is the program's model error as the runner reads it.
func programModelError(h Harness, src LogSource, exitCode, chunk int) (string, string) {
	if h.Output == nil {
		return h.ModelError(src.AgentLogDir, exitCode)
	}
	p, _ := readOutput(h, src, chunk)
	return p.ModelError(exitCode)
}

// programTrajectory is the trajectory as the runner builds it.
func programTrajectory(h Harness, src LogSource, chunk int) (atif.Trajectory, error) {
	if h.Session == nil {
		return h.Trajectory(src)
	}
	path, err := h.SessionLog(src.HomeDir)
	if err != nil {
		return atif.Trajectory{}, err
	}
	p := h.Session()
	if err := feedFile(p, path, chunk); err != nil {
		return atif.Trajectory{}, err
	}
	if err := p.Close(); err != nil {
		return atif.Trajectory{}, err
	}
	return p.Trajectory(), nil
}

// TestParsersReadInChunks replays each recorded log of the streaming
// parsers whole, then 1, 7 and 64 bytes at a time, and with CRLF line
// ends: the usage, the model error and (Session) the trajectory are the
// same.
func TestParsersReadInChunks(t *testing.T) {
	outputs := map[string][]map[string]string{
		"codex":       {{"stdout.txt": StdoutFile}, {"stdout-401.txt": StdoutFile}, {"stdout-429.txt": StdoutFile}},
		"claude-code": {{"stdout.txt": StdoutFile}, {"stdout-401.txt": StdoutFile}},
		"gemini-cli":  {{"stdout.txt": StdoutFile}, {"stderr-401.txt": "stderr.txt"}},
		"qwen-code":   {{"stdout.txt": StdoutFile}, {"stdout-401.txt": StdoutFile}},
		"cline":       {{"stdout.txt": StdoutFile}, {"stdout-401.txt": StdoutFile}},
		"opencode":    {{"stdout.txt": StdoutFile}, {"stdout-401.txt": StdoutFile}},
	}
	type read struct {
		Usage         Usage
		Reported      bool
		Class, Detail string
		Trajectory    atif.Trajectory
	}
	for name, sets := range outputs {
		h, _ := Lookup(name)
		if h.Output == nil {
			t.Fatalf("%s: no streaming output parser", name)
		}
		for _, files := range sets {
			files = withSession(name, files)
			src := agentDir(t, name, files)
			readAll := func(src LogSource, chunk int) read {
				var r read
				var err error
				r.Usage, r.Reported, err = programUsage(h, src, chunk)
				if err != nil {
					t.Fatalf("%s %v: usage in %d-byte chunks: %v", name, files, chunk, err)
				}
				r.Class, r.Detail = programModelError(h, src, 145, chunk)
				if h.Session == nil {
					return r // the trajectory is read whole (Trajectory)
				}
				if r.Trajectory, err = programTrajectory(h, src, chunk); err != nil {
					t.Fatalf("%s %v: trajectory in %d-byte chunks: %v", name, files, chunk, err)
				}
				return r
			}
			whole := readAll(src, 0)
			if !whole.Reported && whole.Class == "" {
				t.Errorf("%s %v: the recorded logs read as nothing", name, files)
			}
			if h.Session != nil && len(whole.Trajectory.Steps) == 0 {
				t.Errorf("%s %v: the recorded session reads as no step", name, files)
			}
			for _, chunk := range []int{1, 7, 64} {
				if diff := cmp.Diff(whole, readAll(src, chunk)); diff != "" {
					t.Errorf("%s %v in %d-byte chunks (-whole +chunked):\n%s", name, files, chunk, diff)
				}
			}
			crlf := crlfCopy(t, src)
			if diff := cmp.Diff(whole, readAll(crlf, 7)); diff != "" {
				t.Errorf("%s %v with CRLF line ends (-whole +crlf):\n%s", name, files, diff)
			}
		}
	}
}

// withSession adds the harness's recorded session log to files.
func withSession(name string, files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[k] = v
	}
	for k, v := range nativeFixtures[name] {
		if k != "stdout.txt" {
			out[k] = v
		}
	}
	return out
}

// crlfCopy copies the logs of src with every "\n" made "\r\n".
func crlfCopy(t *testing.T, src LogSource) LogSource {
	t.Helper()
	dst := LogSource{AgentLogDir: t.TempDir(), HomeDir: t.TempDir()}
	for _, pair := range [][2]string{{src.AgentLogDir, dst.AgentLogDir}, {src.HomeDir, dst.HomeDir}} {
		err := filepath.WalkDir(pair[0], func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(pair[0], path)
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out := filepath.Join(pair[1], rel)
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			return os.WriteFile(out, bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n")), 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestJSONLinesBoundsALine: a line longer than the bound is skipped and
// reported, and the lines after it are read.
func TestJSONLinesBoundsALine(t *testing.T) {
	var got []string
	w := &jsonLines{object: func(line []byte) { got = append(got, string(line)) }}
	feed(w, []byte("{\"a\":1}\n{\"b\":\""), 0)
	feed(w, bytes.Repeat([]byte("x"), maxLineBytes), 1<<20)
	feed(w, []byte("\"}\nnote\n{\"c\":3}"), 3)
	err := w.Close()
	if diff := cmp.Diff([]string{`{"a":1}`, `{"c":3}`}, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if err == nil {
		t.Error("Close = nil, want the over-long line reported")
	}
}

// TestLastJSONKeepsTheLastDocument: notes before the document, a
// pretty-printed document, and text after it, in any chunking.
func TestLastJSONKeepsTheLastDocument(t *testing.T) {
	tests := []struct {
		name, in string
		want     int // the value of "n"; 0 for no document
	}{
		{"notes then a document", "Loaded cached credentials.\n{\n  \"n\": 1\n}\n", 1},
		{"two documents, the last wins", "{\"n\": 1}\nnote\n{\n  \"n\": 2\n}", 2},
		{"a broken last one falls back", "{\"n\": 3}\n{\"n\": ", 3},
		{"a document inside a line", "error: {\"n\": 4}\n", 4},
		{"no document", "just notes\nand more\n", 0},
	}
	for _, tc := range tests {
		for _, chunk := range []int{0, 1, 2, 7} {
			var w lastJSON
			feed(&w, []byte(tc.in), chunk)
			var v struct{ N int }
			ok := w.Decode(&v)
			if ok != (tc.want != 0) || v.N != tc.want {
				t.Errorf("%s in %d-byte chunks: Decode = %v, n %d; want n %d", tc.name, chunk, ok, v.N, tc.want)
			}
		}
	}
}
