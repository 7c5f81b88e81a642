package terminus

import (
	"context"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/terminus/llm"
	"github.com/gauntlet-bench/gauntlet/pkg/terminus/terminal"
)

// BenchmarkEpisode measures one terminus-2 turn with the model answering
// at once: the model call over loopback, typing a command into the real
// terminal, the wait until the shell is back at its prompt (the settle time
// dominates), the observation and the trajectory written to disk. The
// command asks for a 10 s duration: the early end at the prompt is what
// keeps a turn well under it.
func BenchmarkEpisode(b *testing.B) {
	mock := modelmock.NewServer(modelmock.Script{Usage: modelmock.Usage{Input: 1000, Output: 50},
		Turns: []modelmock.Turn{{Text: `{"analysis":"a","plan":"p","commands":[{"keystrokes":"ls /\n","duration":10}],"task_complete":false}`}}})
	defer mock.Close()
	client, err := llm.New(llm.Config{API: llm.ChatCompletions, BaseURL: mock.URL + "/v1", Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	work, logs := b.TempDir(), b.TempDir()
	b.ResetTimer()
	res := Run(context.Background(), Config{Instruction: "x", Model: "m", MaxEpisodes: b.N, LogDir: logs}, client,
		func() (Term, error) {
			return terminal.Start(terminal.Options{Shell: []string{"bash", "--norc", "--noprofile", "-i"}, Dir: work,
				Env: []string{"PATH=/usr/bin:/bin", "PS1=$ ", "HOME=" + work}})
		})
	b.StopTimer()
	if res.Outcome != EpisodeLimit || res.Episodes != b.N {
		b.Fatalf("Run = %s after %d episodes (%v)", res.Outcome, res.Episodes, res.Err)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/episode")
}
