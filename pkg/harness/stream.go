package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
)

// OutputParser reads a program's captured output incrementally, the way
// test2json's converter reads `go test`'s: the runner writes each stream's
// bytes to Stdout and Stderr in chunks of any size as they arrive, then
// calls Close; the parser keeps only its state (the line being read and
// what the lines said), never the output itself.
type OutputParser interface {
	// Stdout takes the bytes of /logs/agent/stdout.txt, in order.
	Stdout() io.Writer
	// Stderr takes the bytes of /logs/agent/stderr.txt, in order; nil
	// when the parser does not read stderr.
	Stderr() io.Writer
	// Close ends both streams (a last line without a newline is read) and
	// returns the first error a stream met (a line past maxLineBytes).
	Close() error
	// Usage is the model usage the program reported; ok is false when it
	// reported none.
	Usage() (u Usage, ok bool)
	// ModelError says whether a program that exited with exitCode failed
	// because of its model: class is "" when nothing says so, detail is
	// the program's own words.
	ModelError(exitCode int) (class, detail string)
}

// SessionParser reads a program's native session log incrementally (see
// OutputParser): the runner writes the log's bytes, then calls Close.
type SessionParser interface {
	io.WriteCloser
	// Trajectory is the trajectory's steps and session id read so far;
	// the caller fills in the agent and the totals.
	Trajectory() atif.Trajectory
}

// SessionLog returns the native session log a row's Session parser reads:
// the newest file matching the row's first NativeLogs glob under the
// agent's home (home). ErrNoLog when nothing matches.
func (h Harness) SessionLog(home string) (string, error) {
	if len(h.NativeLogs) == 0 {
		return "", fmt.Errorf("%w: harness %s declares no native log", ErrNoLog, h.Name)
	}
	return findLog(home, h.NativeLogs[0])
}

// feedChunk is how much of a log FeedFile hands a parser at once.
const feedChunk = 32 << 10

// FeedFile writes a file that code inside a sandbox wrote to w, in chunks,
// from outside the sandbox: as ReadAgentFile, it follows no symlink, reads
// only a regular file and at most maxLogBytes. A missing file is
// fs.ErrNotExist; w is not closed.
func FeedFile(w io.Writer, path string) error {
	f, err := openAgentFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.CopyBuffer(w, io.LimitReader(f, maxLogBytes+1), make([]byte, feedChunk))
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	if n > maxLogBytes {
		return fmt.Errorf("%s is larger than %d bytes", filepath.Base(path), maxLogBytes)
	}
	return nil
}

// maxLineBytes bounds one line of a log a parser keeps while it waits for
// the line's end.
const maxLineBytes = maxLogBytes

// jsonLines is the writer of a line-oriented log: it splits what is written
// into lines and hands each line that is a JSON object to object; other
// lines (a program's plain-text notes on stdout) are skipped, the way
// test2json passes through what it does not recognise. The line handed on
// is only valid during the call.
type jsonLines struct {
	object func(line []byte)
	buf    []byte
	err    error
}

// decodeLines is the jsonLines of a log whose lines decode as T; a line
// that does not is skipped.
func decodeLines[T any](fn func(T)) jsonLines {
	return jsonLines{object: func(line []byte) {
		var v T
		if json.Unmarshal(line, &v) == nil {
			fn(v)
		}
	}}
}

// lines gives a parser's jsonLines to lineParser.
func (w *jsonLines) lines() *jsonLines { return w }

// lineParser returns the constructor of a parser PP (an I: OutputParser
// or SessionParser) of a line-oriented log whose lines decode as T and
// go to PP's method handle: `lineParser[OutputParser]((*codexOutput).event)`.
func lineParser[I any, P any, T any, PP interface {
	*P
	lines() *jsonLines
}](handle func(PP, T)) func() I {
	return func() I {
		p := PP(new(P))
		*p.lines() = decodeLines(func(v T) { handle(p, v) })
		return any(p).(I)
	}
}

// eachLinePiece splits p at its newlines and hands on each piece: a
// whole line's rest with ends true (the newline cut off), the start of a
// line that goes on in the next write with ends false.
func eachLinePiece(p []byte, piece func(part []byte, ends bool)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			piece(p, false)
			return
		}
		piece(p[:i], true)
		p = p[i+1:]
	}
}

func (w *jsonLines) Write(p []byte) (int, error) {
	eachLinePiece(p, func(part []byte, ends bool) {
		w.add(part)
		if ends {
			w.endLine()
		}
	})
	return len(p), nil
}

func (w *jsonLines) add(p []byte) {
	if w.buf == nil && w.err != nil {
		return // skipping the rest of a line past the bound
	}
	if len(w.buf)+len(p) > maxLineBytes {
		if w.err == nil {
			w.err = fmt.Errorf("a line is longer than %d bytes", maxLineBytes)
		}
		w.buf = nil
		return
	}
	w.buf = append(w.buf, p...)
}

func (w *jsonLines) endLine() {
	line := bytes.TrimSpace(w.buf)
	if len(line) > 0 && line[0] == '{' && json.Valid(line) {
		w.object(line)
	}
	if w.buf == nil {
		w.buf = make([]byte, 0, 4<<10)
	}
	w.buf = w.buf[:0]
}

// Close reads a last line that has no newline.
func (w *jsonLines) Close() error {
	if len(w.buf) > 0 {
		w.endLine()
	}
	return w.err
}

// lastJSON is the writer of an output that ends with one pretty-printed
// JSON document after notes (gemini-cli's): it keeps the text from the
// last line that starts with '{' (before any, from the first '{'), and
// when a later such line begins keeps what it had as the last document if
// that is one. Decode reports the last document that decodes.
type lastJSON struct {
	current []byte
	last    []byte
	midLine bool
	err     error
}

func (w *lastJSON) Write(p []byte) (int, error) {
	eachLinePiece(p, w.add)
	return len(p), nil
}

// add takes a piece of one line; ends says it is the line's end.
func (w *lastJSON) add(p []byte, ends bool) {
	switch {
	case !w.midLine && len(p) > 0 && p[0] == '{':
		if json.Valid(firstValue(w.current)) {
			w.last = append(w.last[:0], w.current...)
		}
		w.current = append(w.current[:0], p...)
	case len(w.current) == 0:
		// Notes before any document; one may start inside a line.
		if i := bytes.IndexByte(p, '{'); i >= 0 {
			w.current = append(w.current, p[i:]...)
		}
	case len(w.current)+len(p) >= maxLogBytes:
		w.err = fmt.Errorf("a JSON document is longer than %d bytes", maxLogBytes)
		w.current = w.current[:0]
	default:
		w.current = append(w.current, p...)
	}
	w.midLine = !ends && (w.midLine || len(p) > 0)
	if ends && len(w.current) > 0 {
		w.current = append(w.current, '\n')
	}
}

func (w *lastJSON) Close() error { return w.err }

// Decode decodes the last whole JSON document into v.
func (w *lastJSON) Decode(v any) bool {
	for _, doc := range [][]byte{w.current, w.last} {
		if len(doc) > 0 && json.NewDecoder(bytes.NewReader(doc)).Decode(v) == nil {
			return true
		}
	}
	return false
}

// firstValue is the first JSON value of data with what follows it cut
// off, or nil when data does not start with one.
func firstValue(data []byte) []byte {
	if len(data) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if dec.Decode(&raw) != nil {
		return nil
	}
	return raw
}

// stdoutOnly is an OutputParser that reads stdout only, line by line.
type stdoutOnly struct {
	jsonLines
}

func (s *stdoutOnly) Stdout() io.Writer { return &s.jsonLines }
func (s *stdoutOnly) Stderr() io.Writer { return nil }
