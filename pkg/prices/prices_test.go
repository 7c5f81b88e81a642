package prices_test

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/prices"
)

type sample struct {
	Version string               `json:"version"`
	Usages  []map[string]float64 `json:"usages"`
	Times   []string             `json:"times"`
	Cases   []struct {
		Provider string   `json:"provider"`
		Model    string   `json:"model"`
		Usage    int      `json:"usage"`
		Time     int      `json:"time"`
		ModelID  *string  `json:"model_id"`
		USD      *float64 `json:"usd"`
	} `json:"cases"`
}

// calcPriceSample returns the package's own prices for the sample: freshly
// computed by node when tools/prices/node_modules is installed (make prices),
// else the copy make prices last recorded in testdata.
func calcPriceSample(t *testing.T) sample {
	t.Helper()
	file := filepath.Join("testdata", "calcprice.json")
	tools := filepath.Join("..", "..", "tools", "prices")
	if _, err := os.Stat(filepath.Join(tools, "node_modules", "@pydantic", "genai-prices")); err == nil {
		if node, err := exec.LookPath("node"); err == nil {
			file = filepath.Join(t.TempDir(), "calcprice.json")
			if out, err := exec.Command(node, filepath.Join(tools, "sample.cjs"), file).CombinedOutput(); err != nil {
				t.Fatalf("node sample.cjs: %v\n%s", err, out)
			}
			t.Logf("comparing with calcPrice run by node now")
		}
	} else {
		t.Logf("tools/prices/node_modules absent (make prices installs it): comparing with the recorded %s", file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var s sample
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMatchesCalcPrice prices every model of the table (and lookups by
// model name alone, dated ids, fallback providers, misses) in Go and
// compares with the package's calcPrice.
func TestMatchesCalcPrice(t *testing.T) {
	s := calcPriceSample(t)
	if src := prices.TableSource(); s.Version != src.Version {
		t.Fatalf("sample from version %s, table is %s", s.Version, src)
	}
	if len(s.Cases) < 1694 {
		t.Fatalf("only %d cases", len(s.Cases))
	}
	mismatches := 0
	for _, c := range s.Cases {
		u := s.Usages[c.Usage]
		usage := prices.Usage{
			Input: int64(u["input_tokens"]), CacheRead: int64(u["cache_read_tokens"]), CacheWrite: int64(u["cache_write_tokens"]),
			Output: int64(u["output_tokens"]), Reasoning: int64(u["output_reasoning_tokens"]),
		}
		at, err := time.Parse(time.RFC3339, s.Times[c.Time])
		if err != nil {
			t.Fatal(err)
		}
		got, _, ok := prices.PriceAt(c.Provider, c.Model, usage, at)
		switch {
		case c.USD == nil && ok:
			t.Errorf("PriceAt(%q, %q, usage %d, %s) = %v, want no price", c.Provider, c.Model, c.Usage, at, got)
		case c.USD != nil && !ok:
			t.Errorf("PriceAt(%q, %q, usage %d, %s) = no price, want %v (%s)", c.Provider, c.Model, c.Usage, at, *c.USD, *c.ModelID)
		case c.USD != nil && math.Abs(got-*c.USD) > 1e-9*math.Max(1, *c.USD):
			t.Errorf("PriceAt(%q, %q, usage %d, %s) = %v, want %v", c.Provider, c.Model, c.Usage, at, got, *c.USD)
		default:
			continue
		}
		if mismatches++; mismatches > 20 {
			t.Fatal("too many mismatches")
		}
	}
}

func TestPrice(t *testing.T) {
	// HARNESSES.md: claude-sonnet-4-5 3 / 15 / 0.30, gpt-5 1.25 / 10 / 0.125 per million.
	u := prices.Usage{Input: 100_000, CacheRead: 20_000, Output: 10_000} // under the 200k long-context tier
	for _, c := range []struct {
		provider, model string
		want            float64
		estimated       bool
	}{
		{"anthropic", "claude-sonnet-4-5", 0.08*3 + 0.02*0.30 + 0.01*15, false},
		{"openai", "gpt-5", 0.08*1.25 + 0.02*0.125 + 0.01*10, false},
		{"", "gpt-5", 0.08*1.25 + 0.02*0.125 + 0.01*10, true},
		{"anthropic", "claude-sonnet-4-5-20250929", 0.08*3 + 0.02*0.30 + 0.01*15, false},
	} {
		got, est, ok := prices.Price(c.provider, c.model, u)
		if !ok || math.Abs(got-c.want) > 1e-9 || est != c.estimated {
			t.Errorf("Price(%q, %q) = %v, %v, %v; want %v, %v, true", c.provider, c.model, got, est, ok, c.want, c.estimated)
		}
	}
	long := prices.Usage{Input: 300_000, Output: 10_000} // Anthropic's long-context tier: 6 / 22.5
	if got, _, _ := prices.Price("anthropic", "claude-sonnet-4-5", long); math.Abs(got-(0.3*6+0.01*22.5)) > 1e-9 {
		t.Errorf("long-context price = %v, want %v", got, 0.3*6+0.01*22.5)
	}
	if _, _, ok := prices.Price("openai", "my-lora-on-vllm", u); ok {
		t.Error("an unknown model got a price")
	}
	src := prices.TableSource()
	if src.Version != "0.1.8" || src.Published != "2026-09-23" || src.Package != "npm @pydantic/genai-prices" {
		t.Errorf("TableSource() = %+v", src)
	}
}
