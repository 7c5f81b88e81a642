package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
)

// runMockModel serves the scripted mock model (pkg/modelmock) until
// interrupted, so a demo or a manual run can use a real agent program
// without a provider key.
func runMockModel(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mock-model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (loopback)")
	scriptArg := fs.String("script", "", "a JSON script file, or the name of a built-in script ("+strings.Join(modelmock.BuiltinScripts(), ", ")+"); default: one shell call writing /app/out.txt, then an answer")
	status := fs.Int("fail", 0, "answer every request with this HTTP status (401, 429, 500, …)")
	hang := fs.Bool("hang", false, "accept requests and never answer them")
	record := fs.String("record", "", "on exit, write the requests received to this JSONL file (key headers redacted)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gauntlet mock-model [-listen ADDR] [-script FILE|NAME] [-fail STATUS] [-hang] [-record FILE]")
		fmt.Fprintln(stderr, "Serves OpenAI Responses, Chat Completions, Anthropic Messages and Gemini generateContent, replaying a script.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	script, err := mockScript(*scriptArg)
	if err != nil {
		fmt.Fprintf(stderr, "gauntlet mock-model: %v\n", err)
		return exitUsage
	}
	switch {
	case *hang && *status != 0:
		fmt.Fprintln(stderr, "gauntlet mock-model: give -fail or -hang, not both")
		return exitUsage
	case *hang:
		script.Failure = &modelmock.Failure{Hang: true}
	case *status != 0:
		script.Failure = &modelmock.Failure{Status: *status}
	}
	if err := script.Validate(); err != nil {
		fmt.Fprintf(stderr, "gauntlet mock-model: %v\n", err)
		return exitUsage
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "gauntlet mock-model: %v\n", err)
		return exitFailure
	}
	h := modelmock.NewHandler(script)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "mock model listening on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		h.Close()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err = srv.Shutdown(shutdown)
		cancel()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "gauntlet mock-model: %v\n", err)
		return exitFailure
	}
	if *record != "" {
		if err := writeMockRecord(*record, h.Requests()); err != nil {
			fmt.Fprintf(stderr, "gauntlet mock-model: %v\n", err)
			return exitFailure
		}
	}
	return exitOK
}

// writeMockRecord writes one JSON line per request, its key headers
// replaced (even a demo key is not written down).
func writeMockRecord(path string, reqs []modelmock.Request) error {
	var buf bytes.Buffer
	for _, r := range reqs {
		h := r.Header.Clone()
		for _, k := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
			if h.Get(k) != "" {
				h.Set(k, "[redacted]")
			}
		}
		var body any = string(r.Body)
		if json.Valid(r.Body) {
			body = json.RawMessage(r.Body)
		}
		line, err := json.Marshal(map[string]any{"time": r.Time, "method": r.Method, "path": r.Path, "api": r.API,
			"turn": r.Turn, "status": r.Status, "headers": h, "body": body})
		if err != nil {
			return fmt.Errorf("record: %w", err)
		}
		buf.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

func mockScript(arg string) (modelmock.Script, error) {
	switch {
	case arg == "":
		return modelmock.DefaultScript(), nil
	case strings.ContainsAny(arg, "/."):
		return modelmock.LoadScript(arg)
	default:
		return modelmock.BuiltinScript(arg)
	}
}
