package terminus

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxOutputBytes bounds the terminal output shown in one turn; longer
// output keeps its first and last MaxOutputBytes/2 bytes.
const MaxOutputBytes = 10000

// LimitOutput cuts s to MaxOutputBytes, keeping its head and tail (cut at
// character boundaries) around a note of how much was left out.
func LimitOutput(s string) string {
	if len(s) <= MaxOutputBytes {
		return s
	}
	half := MaxOutputBytes / 2
	head := s[:half]
	for len(head) > 0 && !utf8.RuneStart(s[len(head)]) {
		head = head[:len(head)-1]
	}
	tail := s[len(s)-half:]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	omitted := len(s) - len(head) - len(tail)
	return fmt.Sprintf("%s\n[... %d bytes of output omitted: only the first and last %d bytes are shown ...]\n%s", head, omitted, half, tail)
}

// observer turns the terminal's history into what is new since the last
// look: the history is compared line by line with the previous one (the
// last, possibly unfinished line — usually the prompt — is shown again).
// When the old history is no longer a prefix (the screen was reset, a
// full-screen program took over, or the scrollback dropped old lines),
// the current screen is shown instead.
type observer struct {
	last string
}

// Headings of an observation.
const (
	newOutputHeading = "New Terminal Output:"
	screenHeading    = "Current Terminal Screen:"
)

func (o *observer) reset(history string) { o.last = history }

func (o *observer) observe(history, screen string) string {
	prev := o.last
	o.last = history
	cut := strings.LastIndexByte(prev, '\n') + 1
	if !strings.HasPrefix(history, prev[:cut]) {
		return screenHeading + "\n" + LimitOutput(screen)
	}
	return newOutputHeading + "\n" + LimitOutput(history[cut:])
}
