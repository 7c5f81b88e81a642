package runner

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipLineCutsAtAWordAndSaysSo(t *testing.T) {
	tests := []struct {
		name, line string
		n          int
		want       string
	}{
		{"short stays", "no space left", 300, "no space left"},
		{"exactly n stays", "abcde", 5, "abcde"},
		{"cut after the last whole word", "write /app/out: no space left on device", 20, "write /app/out: no…"},
		{"never inside a rune", "ééééé", 5, "éé…"}, // 10 bytes; byte 5 is inside the third é
		{"one long word keeps whole runes", "aaaaaaaaaa", 4, "aaaa…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clipLine(tt.line, tt.n)
			if got != tt.want || !utf8.ValidString(got) {
				t.Errorf("clipLine(%q, %d) = %q, want %q", tt.line, tt.n, got, tt.want)
			}
			if got != tt.line && !strings.HasSuffix(got, "…") {
				t.Errorf("clipLine(%q, %d) = %q cut without saying so", tt.line, tt.n, got)
			}
		})
	}
}
