// Package archcheck checks docs/ARCHITECTURE.md against the import graph:
// its ```imports table is `go list`'s, every package of the module is in it
// and named in the prose, and no import runs up the ```layers order.
package archcheck

import (
	"bufio"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/gauntlet-bench/gauntlet/"

// rootDirs are the first path elements of packages outside pkg/; every
// other name in the document is a pkg/ package with "pkg/" dropped.
var rootDirs = []string{"agents", "cmd", "console", "examples", "functions", "infra", "internal"}

// short is a module package's name as the document writes it.
func short(importPath string) (string, bool) {
	rest, ok := strings.CutPrefix(importPath, module)
	if !ok {
		return "", false
	}
	if p, ok := strings.CutPrefix(rest, "pkg/"); ok {
		return p, true
	}
	return rest, true
}

// prosePath is how the prose names a package: its path in the tree.
func prosePath(name string) string {
	first, _, _ := strings.Cut(name, "/")
	if slices.Contains(rootDirs, first) {
		return name
	}
	return "pkg/" + name
}

// graph is every package of the module with its internal imports, as
// `go list` reports them.
func graph(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := short(fields[0])
		if !ok {
			continue
		}
		deps := []string{}
		for _, imp := range fields[1:] {
			if dep, ok := short(imp); ok {
				deps = append(deps, dep)
			}
		}
		slices.Sort(deps)
		got[pkg] = deps
	}
	return got
}

// document is docs/ARCHITECTURE.md read once: its fenced blocks by info
// string, and its prose (everything outside them).
type document struct {
	blocks map[string][]string
	prose  string
}

func readDocument(t *testing.T) document {
	t.Helper()
	f, err := os.Open("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc := document{blocks: map[string][]string{}}
	var prose strings.Builder
	block, in := "", false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```"):
			block, in = strings.TrimPrefix(line, "```"), true
		case in && line == "```":
			in = false
		case in && (block == "imports" || block == "layers" || block == "forbidden"):
			doc.blocks[block] = append(doc.blocks[block], line)
		case !in:
			prose.WriteString(line + "\n")
		}
	}
	doc.prose = prose.String()
	return doc
}

// table parses a block of "<name>: <names>" lines.
func table(t *testing.T, lines []string, what string) (map[string][]string, []string) {
	t.Helper()
	m := map[string][]string{}
	var order []string
	for _, line := range lines {
		key, vals, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("%s line %q: want <name>: <names>", what, line)
		}
		if _, dup := m[key]; dup {
			t.Fatalf("%s: %q appears twice", what, key)
		}
		list := strings.Fields(vals)
		slices.Sort(list)
		m[key] = list
		order = append(order, key)
	}
	if len(m) == 0 {
		t.Fatalf("docs/ARCHITECTURE.md has no ```%s block", what)
	}
	return m, order
}

// TestImportsMatchTheDocument compares the ```imports block of
// docs/ARCHITECTURE.md with the internal imports `go list` reports for
// every package of the module: a package missing from the table fails too.
func TestImportsMatchTheDocument(t *testing.T) {
	doc := readDocument(t)
	want, _ := table(t, doc.blocks["imports"], "imports")
	if diff := cmp.Diff(want, graph(t)); diff != "" {
		t.Errorf("docs/ARCHITECTURE.md imports vs go list (-document +go list):\n%s", diff)
	}
}

// TestProseNamesEveryPackage: the map's prose says what each package is
// for, so each one's path appears in it (in backticks) at least once.
func TestProseNamesEveryPackage(t *testing.T) {
	doc := readDocument(t)
	for pkg := range graph(t) {
		path := prosePath(pkg)
		named := regexp.MustCompile("`" + regexp.QuoteMeta(path) + "`")
		if !named.MatchString(doc.prose) {
			t.Errorf("docs/ARCHITECTURE.md: the prose never names `%s`", path)
		}
	}
}

// TestNoImportRunsUp: every package sits in one layer of the ```layers
// block (top first) and imports only packages of its own layer or below.
func TestNoImportRunsUp(t *testing.T) {
	doc := readDocument(t)
	layers, order := table(t, doc.blocks["layers"], "layers")
	rank := map[string]int{}
	for i, name := range order {
		for _, pkg := range layers[name] {
			if prev, dup := rank[pkg]; dup {
				t.Errorf("layers: %s is in %s and %s", pkg, order[prev], name)
			}
			rank[pkg] = i
		}
	}
	for pkg, deps := range graph(t) {
		r, ok := rank[pkg]
		if !ok {
			t.Errorf("layers: %s is in no layer", pkg)
			continue
		}
		for _, dep := range deps {
			if d, ok := rank[dep]; ok && d < r {
				t.Errorf("%s (layer %s) imports %s of the higher layer %s", pkg, order[r], dep, order[d])
			}
		}
	}
}

// TestForbiddenImports: the ```forbidden block names, for a package, the
// packages it must not depend on, directly or through another: the sandbox
// drivers carry no runner or gateway, the gateway (which ships inside the
// sandbox) no run config.
func TestForbiddenImports(t *testing.T) {
	doc := readDocument(t)
	forbidden, _ := table(t, doc.blocks["forbidden"], "forbidden")
	for pkg, banned := range forbidden {
		out, err := exec.Command("go", "list", "-f", `{{join .Deps "\n"}}`, module+prosePath(pkg)).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			if s, ok := short(d); ok {
				deps[s] = true
			}
		}
		for _, b := range banned {
			if deps[b] {
				t.Errorf("%s depends on %s, which docs/ARCHITECTURE.md forbids", prosePath(pkg), prosePath(b))
			}
		}
	}
}

// TestRoomsFormNoCycle: a package nested in another package's directory
// belongs to that package's room (pkg/image/localreg to pkg/image's), and
// the rooms' imports form no cycle — no import runs back up the house into
// a room that imports the importer.
func TestRoomsFormNoCycle(t *testing.T) {
	g := graph(t)
	room := func(pkg string) string {
		parts := strings.Split(pkg, "/")
		for i := 1; i <= len(parts); i++ {
			if p := strings.Join(parts[:i], "/"); g[p] != nil {
				return p
			}
		}
		return pkg
	}
	edges := map[string]map[string]bool{}
	for pkg, deps := range g {
		from := room(pkg)
		for _, dep := range deps {
			if to := room(dep); to != from {
				if edges[from] == nil {
					edges[from] = map[string]bool{}
				}
				edges[from][to] = true
			}
		}
	}
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(r string)
	visit = func(r string) {
		switch state[r] {
		case open:
			t.Errorf("rooms import each other in a cycle: %s → %s", strings.Join(path, " → "), r)
			return
		case done:
			return
		}
		state[r] = open
		path = append(path, r)
		for _, next := range slices.Sorted(maps.Keys(edges[r])) {
			visit(next)
		}
		path = path[:len(path)-1]
		state[r] = done
	}
	for _, r := range slices.Sorted(maps.Keys(edges)) {
		visit(r)
	}
}
