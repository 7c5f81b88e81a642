package score

import (
	"bytes"
	"os"
	"testing"
)

// FuzzReadJSONL mutates the CLI's real score files: no panic, and an
// accepted input only ever yields attempts within the bounds.
func FuzzReadJSONL(f *testing.F) {
	for _, file := range []string{"../../cmd/gauntlet/testdata/small.jsonl", "../../cmd/gauntlet/testdata/bad.jsonl"} {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"harness":"h","task":"a","attempt":99999999999,"reward":1}`))
	f.Add([]byte("[1]\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		inputs, err := ReadJSONL(bytes.NewReader(data), "f.jsonl", 1)
		if err != nil {
			return
		}
		for _, in := range inputs {
			for _, a := range in.Attempts {
				if a.Task == "" {
					t.Fatalf("accepted an attempt without a task: %q", data)
				}
			}
		}
	})
}
