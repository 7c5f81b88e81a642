package runconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse mutates the example run configs (TOML and their JSON
// renderings): no input panics, and any config Parse accepts renders to a
// document Parse accepts again.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../examples/runs/*.toml")
	if len(files) == 0 {
		f.Fatal("no example run configs")
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, false)
		if cfg, err := Parse(data); err == nil {
			if j, err := json.Marshal(cfg); err == nil {
				f.Add(j, true)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		parse := Parse
		if asJSON {
			parse = ParseJSON
		}
		cfg, err := parse(data)
		if err != nil {
			return
		}
		out, err := Render(cfg)
		if err != nil {
			t.Fatalf("Render of an accepted config: %v\n%s", err, data)
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("Parse(Render(cfg)) = %v\ninput:\n%s\nrendered:\n%s", err, data, out)
		}
	})
}
