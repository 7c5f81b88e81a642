package localsandbox

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

func TestTailStartsAtAWordAndSaysItWasCut(t *testing.T) {
	tests := []struct {
		name, text string
		n          int64
		want       string
	}{
		{"short stays whole", "runner: exit 70\n", 600, "runner: exit 70"},
		{"cut starts at a whole word", "write result.json: no space left on device", 20, "…space left on device"},
		{"a word the cut went through is dropped", "write result.json: no space left on device", 18, "…left on device"},
		{"never inside a rune", "éééé", 5, "…éé"}, // the last 5 bytes start inside an é
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "out.log")
			if err := os.WriteFile(file, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			got := tail(file, tt.n)
			if got != tt.want || !utf8.ValidString(got) {
				t.Errorf("tail(%q, %d) = %q, want %q", tt.text, tt.n, got, tt.want)
			}
		})
	}
}
