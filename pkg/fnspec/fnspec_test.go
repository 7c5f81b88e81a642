package fnspec

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestTable checks every row: a function directory with a main, a handler,
// a description, a timeout Lambda accepts, a source queue for a queue
// trigger, prefixes on every blob use, and each queue consumed by exactly
// one function.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	consumers := map[Port]int{}
	for _, f := range Functions {
		if seen[f.Name] {
			t.Errorf("function %s is listed twice", f.Name)
		}
		seen[f.Name] = true
		if _, err := os.Stat(filepath.Join("..", "..", "functions", f.Name, "main.go")); err != nil {
			t.Errorf("%s: no functions/%s/main.go: %v", f.Name, f.Name, err)
		}
		if f.Handler == "" || f.Description == "" {
			t.Errorf("%s: handler %q, description %q; want both", f.Name, f.Handler, f.Description)
		}
		if f.Timeout <= 0 || f.Timeout > 15*time.Minute {
			t.Errorf("%s: timeout %s outside (0, 15m]", f.Name, f.Timeout)
		}
		if (f.Trigger == Queue) != slices.Contains(Queues, f.Source) {
			t.Errorf("%s: trigger %s with source %q; a queue trigger needs a queue source and only it", f.Name, f.Trigger, f.Source)
		}
		if f.Trigger == Queue {
			consumers[f.Source]++
		}
		if f.Access(Table) == 0 {
			t.Errorf("%s uses no table", f.Name)
		}
		for _, u := range f.Uses {
			if (u.Port == Blobs) != (len(u.Prefixes) > 0) {
				t.Errorf("%s: use %+v: blob uses need prefixes, others none", f.Name, u)
			}
			if u.Access == 0 {
				t.Errorf("%s: use %+v has no access", f.Name, u)
			}
		}
		if got, ok := Lookup(f.Name); !ok || got.Name != f.Name {
			t.Errorf("Lookup(%q) = %v, %v", f.Name, got.Name, ok)
		}
	}
	for _, q := range Queues {
		if consumers[q] != 1 {
			t.Errorf("queue %s has %d consumers, want 1", q, consumers[q])
		}
		if f, ok := Consumer(q); !ok || f.Source != q {
			t.Errorf("Consumer(%s) = %s, %v", q, f.Name, ok)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error(`Lookup("nope") found a function`)
	}
}

func TestAccess(t *testing.T) {
	if a := Dispatcher.Access(Blobs); a != ReadWrite {
		t.Errorf("dispatcher blob access = %v, want read and write", a)
	}
	if a := Grader.Access(Table); a != Read {
		t.Errorf("grader table access = %v, want read only", a)
	}
	if p := APIFunction.Prefixes(Write); !slices.Equal(p, []string{"downloads/"}) {
		t.Errorf("api write prefixes = %v, want [downloads/]", p)
	}
	if !RegistrySync.Asynchronous() || !Watchdog.Asynchronous() || Planner.Asynchronous() {
		t.Error("only the scheduled functions are invoked asynchronously")
	}
}
