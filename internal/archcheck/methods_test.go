package archcheck

import (
	"fmt"
	"go/types"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// maxMethods is the most methods a type of the module may have, counting
// its whole method set as go/types sees it: the methods of *T, promoted
// ones included, so embedding a type is no way under it.
const maxMethods = 40

// methodExceptions are types still over maxMethods, with the count each
// may have at most: a count may only shrink, and a type that gets under
// maxMethods must leave the list (the test says so).
var methodExceptions = map[string]int{
	"pipeline.Service": 89,
	"stacks.Stateless": 49,
	"stacks.Stateful":  44,
}

// beingSplit are packages whose large types are being split on other
// branches while this check lands (issue 22, items 1 and 2): their types
// are reported in the log, not failed, until those splits are merged and
// the package leaves this list.
var beingSplit = []string{"records", "benchsync", "runner"}

// methodCounts is every named type of the module's non-test code with the
// size of its method set (the pointer's, for a non-interface type).
func methodCounts(t *testing.T) map[string]int {
	t.Helper()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes, Dir: "../.."}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatalf("load packages: %v", err)
	}
	counts := map[string]int{}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatalf("load %s: %v", p.PkgPath, e)
		}
		name, ok := short(p.PkgPath)
		if !ok {
			continue
		}
		scope := p.Types.Scope()
		for _, n := range scope.Names() {
			tn, ok := scope.Lookup(n).(*types.TypeName)
			if !ok || tn.IsAlias() {
				continue
			}
			var typ types.Type = tn.Type()
			if !types.IsInterface(typ) {
				typ = types.NewPointer(typ)
			}
			counts[name[strings.LastIndex(name, "/")+1:]+"."+n+" ("+name+")"] = types.NewMethodSet(typ).Len()
		}
	}
	return counts
}

// TestNoTypeHasTooManyMethods keeps every type of the module at most
// maxMethods methods, but for methodExceptions, which may only shrink.
func TestNoTypeHasTooManyMethods(t *testing.T) {
	counts := methodCounts(t)
	seen := map[string]bool{}
	var over []string
	for full, n := range counts {
		key, _, _ := strings.Cut(full, " ")
		if path := strings.TrimSuffix(strings.TrimPrefix(full[len(key):], " ("), ")"); slices.Contains(beingSplit, path) {
			if n > maxMethods {
				t.Logf("%s has %d methods (at most %d once its split lands)", full, n, maxMethods)
			}
			continue
		}
		if max, ok := methodExceptions[key]; ok {
			seen[key] = true
			switch {
			case n > max:
				over = append(over, fmt.Sprintf("%s has %d methods, more than the %d it is allowed while it is split", full, n, max))
			case n <= maxMethods:
				over = append(over, fmt.Sprintf("%s has %d methods now: drop it from methodExceptions", full, n))
			}
			continue
		}
		if n > maxMethods {
			over = append(over, fmt.Sprintf("%s has %d methods (at most %d): split it by concern", full, n, maxMethods))
		}
	}
	for key := range methodExceptions {
		if !seen[key] {
			over = append(over, fmt.Sprintf("%s is in methodExceptions but no longer exists: drop it", key))
		}
	}
	slices.Sort(over)
	for _, o := range over {
		t.Error(o)
	}
}
