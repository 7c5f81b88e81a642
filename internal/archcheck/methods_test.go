package archcheck

import (
	"fmt"
	"go/types"
	"slices"
	"testing"

	"golang.org/x/tools/go/packages"
)

// maxMethods is the most methods a type of the module may have, counting
// its whole method set as go/types sees it: the methods of *T, promoted
// ones included, so embedding a type is no way under it.
const maxMethods = 40

// typeSize is one named type of the module and the size of its method set.
type typeSize struct {
	pkg, name string // pkg as the document writes it
	methods   int
}

// methodCounts is every named type of the module's non-test code with the
// size of its method set (the pointer's, for a non-interface type). The
// packages are type-checked from source: export data would leave out the
// unexported types no exported one mentions (runner's trial).
func methodCounts(t *testing.T) []typeSize {
	t.Helper()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo, Dir: "../.."}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatalf("load packages: %v", err)
	}
	var out []typeSize
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatalf("load %s: %v", p.PkgPath, e)
		}
		pkg, ok := short(p.PkgPath)
		if !ok {
			continue
		}
		scope := p.Types.Scope()
		for _, n := range scope.Names() {
			tn, ok := scope.Lookup(n).(*types.TypeName)
			if !ok || tn.IsAlias() {
				continue
			}
			typ := tn.Type()
			if !types.IsInterface(typ) {
				typ = types.NewPointer(typ)
			}
			out = append(out, typeSize{pkg: pkg, name: n, methods: types.NewMethodSet(typ).Len()})
		}
	}
	return out
}

// TestNoTypeHasTooManyMethods keeps every type of the module at most
// maxMethods methods.
func TestNoTypeHasTooManyMethods(t *testing.T) {
	var over []string
	for _, ts := range methodCounts(t) {
		if ts.methods <= maxMethods {
			continue
		}
		over = append(over, fmt.Sprintf("%s.%s has %d methods (at most %d): split it by concern", ts.pkg, ts.name, ts.methods, maxMethods))
	}
	slices.Sort(over)
	for _, o := range over {
		t.Error(o)
	}
}
