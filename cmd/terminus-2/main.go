// Command terminus-2 is Terminal-Bench 2's reference agent, Terminus-2,
// reimplemented in Go: it works on a task through a real terminal (bash on
// a pty, drawn by a terminal emulator) by asking a model for keystrokes,
// and writes trajectory.json (ATIF) and usage.json to the agent log
// directory. The platform builds it static (CGO_ENABLED=0) and mounts it
// read-only into the agent sandbox. See docs/TERMINUS2.md.
//
// Usage:
//
//	TERMINUS_BASE_URL=… TERMINUS_API_KEY=… terminus-2 [--wire-api chat-completions|anthropic-messages] [--model M]
//	    [--instruction-file F] [--logs-dir D] [--max-episodes N] [--context-tokens N] [--terminal pty|tmux]
//
// Exit codes: 0 task completed (confirmed twice), 1 terminus-2 failed,
// 2 bad configuration, 3 model auth error (401/403), 4 model unavailable
// (429/5xx/no answer after retries), 5 episode limit, 6 the model endpoint
// rejected a request, 143 terminated.
package main

import (
	"os"

	"github.com/gauntlet-bench/gauntlet/pkg/terminus"
)

func main() {
	os.Exit(terminus.Main(os.Args[1:], os.Environ(), os.Stderr))
}
