// Package archcheck checks docs/ARCHITECTURE.md against the import graph.
package archcheck

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/gauntlet-bench/gauntlet/"

// TestImportsMatchTheDocument compares the ```imports block of
// docs/ARCHITECTURE.md with the internal imports `go list` reports for each
// package it names.
func TestImportsMatchTheDocument(t *testing.T) {
	want := documented(t)
	args := []string{"list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}
	for pkg := range want {
		args = append(args, module+"pkg/"+pkg)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module+"pkg/")
		deps := []string{}
		for _, imp := range fields[1:] {
			if rest, ok := strings.CutPrefix(imp, module+"pkg/"); ok {
				deps = append(deps, rest)
			}
		}
		slices.Sort(deps)
		got[pkg] = deps
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/ARCHITECTURE.md imports vs go list (-document +go list):\n%s", diff)
	}
}

func documented(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string][]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "```imports":
			in = true
		case in && line == "```":
			in = false
		case in:
			pkg, deps, ok := strings.Cut(line, ":")
			if !ok {
				t.Fatalf("imports line %q: want <package>: <imports>", line)
			}
			list := strings.Fields(deps)
			slices.Sort(list)
			want[pkg] = list
		}
	}
	if len(want) == 0 {
		t.Fatal("docs/ARCHITECTURE.md has no ```imports block")
	}
	return want
}
