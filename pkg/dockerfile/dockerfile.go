// Package dockerfile reads and rewrites the images a Dockerfile names —
// its FROM instructions and the images of COPY/ADD --from= — which a build
// needs before it starts, and the same Dockerfile with those images pinned
// to digests. It knows nothing else of the format (the builder interprets
// the rest).
package dockerfile

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// From is one FROM instruction that names an image (not an earlier stage).
type From struct {
	// Line is the 1-based line number of the instruction.
	Line int
	// Image is the reference as written ("python:3.13-slim-bookworm").
	Image string
}

// Bases returns the images the Dockerfile's FROM instructions name, in
// order, skipping FROM lines that name an earlier stage ("FROM build") or
// scratch. A FROM that uses a build argument (${X}) is an error: the image
// could not be pinned before the build.
func Bases(dockerfile []byte) ([]From, error) {
	var out []From
	err := walk(dockerfile, func(line int, image string) error {
		out = append(out, From{Line: line, Image: image})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Pin returns the Dockerfile with the image of every FROM replaced by
// pinned[image] (a digest reference); every base must be in pinned.
func Pin(dockerfile []byte, pinned map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	lines := strings.SplitAfter(string(dockerfile), "\n")
	replace := map[int]string{}
	err := walk(dockerfile, func(line int, image string) error {
		p, ok := pinned[image]
		if !ok {
			return fmt.Errorf("line %d: %s has no pinned digest", line, image)
		}
		replace[line] = rewrite(lines[line-1], image, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, l := range lines {
		if r, ok := replace[i+1]; ok {
			l = r
		}
		buf.WriteString(l)
	}
	return buf.Bytes(), nil
}

// rewrite replaces the first whole-word occurrence of image after FROM,
// or the image of a --from=.
func rewrite(line, image, pinned string) string {
	if idx := strings.Index(line, "--from="+image); idx >= 0 {
		at := idx + len("--from=")
		return line[:at] + pinned + line[at+len(image):]
	}
	fields := strings.Fields(line)
	for i, f := range fields {
		if i > 0 && f == image {
			idx := strings.Index(line, " "+image)
			if idx < 0 {
				idx = strings.Index(line, "\t"+image)
			}
			return line[:idx+1] + pinned + line[idx+1+len(image):]
		}
	}
	return line
}

// walk calls fn for every FROM, and every COPY or ADD --from=, that names
// an image (not an earlier stage). Continuation lines are not supported in
// these (no published Dockerfile seen uses one).
func walk(dockerfile []byte, fn func(line int, image string) error) error {
	stages := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(dockerfile))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	continued := false
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		wasContinued := continued
		continued = strings.HasSuffix(text, "\\")
		if wasContinued || text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if strings.EqualFold(fields[0], "COPY") || strings.EqualFold(fields[0], "ADD") {
			if err := copyFrom(n, fields[1:], stages, fn); err != nil {
				return err
			}
			continue
		}
		if !strings.EqualFold(fields[0], "FROM") {
			continue
		}
		args := fields[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "--") {
			args = args[1:] // --platform=…
		}
		if len(args) == 0 {
			return fmt.Errorf("line %d: FROM names no image", n)
		}
		image := args[0]
		switch {
		case strings.Contains(image, "$"):
			return fmt.Errorf("line %d: FROM %s uses a build argument; the base image must be known before the build", n, image)
		case strings.EqualFold(image, "scratch"), stages[strings.ToLower(image)]:
		default:
			if err := fn(n, image); err != nil {
				return err
			}
		}
		if len(args) >= 3 && strings.EqualFold(args[1], "AS") {
			stages[strings.ToLower(args[2])] = true
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read Dockerfile: %w", err)
	}
	return nil
}

// copyFrom calls fn for a COPY or ADD whose --from= names an image: a
// reference that is neither an earlier stage's name nor a stage index.
func copyFrom(line int, args []string, stages map[string]bool, fn func(line int, image string) error) error {
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			return nil // flags come first
		}
		v, ok := strings.CutPrefix(a, "--from=")
		if !ok {
			continue
		}
		if strings.Contains(v, "$") {
			return fmt.Errorf("line %d: COPY --from=%s uses a build argument; the image must be known before the build", line, v)
		}
		if _, err := strconv.Atoi(v); err == nil || stages[strings.ToLower(v)] {
			return nil
		}
		return fn(line, v)
	}
	return nil
}
