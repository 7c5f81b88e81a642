// Package prices prices model calls from a pinned, dated price table: the
// one npm @pydantic/genai-prices carries (43 providers, 1,694 models),
// turned into genai-prices.json at build time by tools/prices (make prices),
// never typed by hand. Its lookup follows the package's own calcPrice — the
// same provider and model matching, start-date and time-of-day prices,
// tiered prices and the way nested usage (cache reads inside input tokens,
// reasoning inside output tokens) is priced — and the package's test checks
// it against that function.
package prices

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

//go:embed genai-prices.json
var tableJSON []byte

// Usage is the token count of one call or a sum of calls. Input includes
// the cache reads and writes; Output includes the reasoning tokens (the
// package's convention, and OpenAI's).
type Usage struct {
	Input      int64
	CacheRead  int64
	CacheWrite int64
	Output     int64
	Reasoning  int64
	// Requests is the number of calls, for the few models priced per request.
	Requests int64
}

// usageKeys maps Usage onto the package's usage keys.
func (u Usage) usageKeys() map[string]float64 {
	return map[string]float64{
		"input_tokens":            float64(u.Input),
		"cache_read_tokens":       float64(u.CacheRead),
		"cache_write_tokens":      float64(u.CacheWrite),
		"output_tokens":           float64(u.Output),
		"output_reasoning_tokens": float64(u.Reasoning),
	}
}

// Source says where the table came from: package, version, publication date.
type Source struct {
	Package   string
	Version   string
	Published string // YYYY-MM-DD
}

// TableSource is the source of the embedded table.
func TableSource() Source {
	t := load()
	return Source{Package: t.Source, Version: t.Version, Published: t.Published}
}

// Price returns the cost in USD of usage on model of provider, priced now.
// provider is the table's provider id ("openai", "anthropic", "google",
// "openrouter", "together", …); "" picks the provider from the model name as
// the package does. ok is false when the table has no price for the model
// (endpoint and hosted models usually): then there are tokens and no cost.
//
// estimated is true when the price was found by a looser match than the
// provider's own entry for that exact model id: through a fallback
// provider's table (azure → openai), a date-normalised id
// (claude-x-20250101 → claude-x-2025-01-01), or a provider inferred from the
// model name. Every table price is a list price, computed rather than billed;
// callers say so themselves.
func Price(provider, model string, usage Usage) (usd float64, estimated bool, ok bool) {
	return PriceAt(provider, model, usage, time.Now())
}

// PriceAt is Price at time at, for prices that change by date or time of day.
func PriceAt(provider, model string, usage Usage, at time.Time) (usd float64, estimated bool, ok bool) {
	t := load()
	m, est, found := t.find(provider, model)
	if !found {
		return 0, false, false
	}
	p := m.priceAt(at)
	usd, err := t.calc(p, usage)
	if err != nil {
		return 0, false, false
	}
	return usd, est, true
}

// Lookup returns the table's model id for provider and model, and whether
// one matched, for showing which entry priced a call.
func Lookup(provider, model string) (string, bool) {
	m, _, ok := load().find(provider, model)
	if !ok {
		return "", false
	}
	return m.ID, true
}

var (
	loadOnce sync.Once
	loaded   *table
)

func load() *table {
	loadOnce.Do(func() {
		t, err := parseTable(tableJSON)
		if err != nil {
			// The embedded table is generated and tested; failing to read it is
			// a build defect, not a runtime condition.
			panic(fmt.Sprintf("prices: embedded genai-prices.json: %v", err))
		}
		loaded = t
	})
	return loaded
}

func (t *table) provider(id string) *provider {
	for i := range t.Providers {
		if t.Providers[i].ID == id {
			return &t.Providers[i]
		}
	}
	return nil
}

// find follows the package's calcPrice: the provider by id (or by its
// provider_match), else by the model name; the model by its match, then
// through the provider's fallback providers, then with a dated suffix
// -YYYYMMDD written -YYYY-MM-DD.
func (t *table) find(providerID, model string) (*modelInfo, bool, bool) {
	id := strings.ToLower(strings.TrimSpace(model))
	var p *provider
	inferred := false
	if providerID != "" {
		pid := strings.ToLower(strings.TrimSpace(providerID))
		p = t.provider(pid)
		if p == nil {
			for i := range t.Providers {
				if pm := t.Providers[i].ProviderMatch; pm != nil && pm.matches(pid) {
					p = &t.Providers[i]
					break
				}
			}
		}
	} else {
		inferred = true
		for i := range t.Providers {
			if mm := t.Providers[i].ModelMatch; mm != nil && mm.matches(id) {
				p = &t.Providers[i]
				break
			}
		}
	}
	if p == nil {
		return nil, false, false
	}
	if m, fb := t.findModel(p, id, true); m != nil {
		return m, inferred || fb, true
	}
	if norm := normaliseDate(id); norm != id {
		if m, _ := t.findModel(p, norm, true); m != nil {
			return m, true, true
		}
	}
	return nil, false, false
}

func (t *table) findModel(p *provider, id string, fallbacks bool) (*modelInfo, bool) {
	for i := range p.Models {
		if p.Models[i].Match.matches(id) {
			return &p.Models[i], false
		}
	}
	if !fallbacks {
		return nil, false
	}
	for _, fid := range p.Fallback {
		if fp := t.provider(fid); fp != nil {
			if m, _ := t.findModel(fp, id, false); m != nil {
				return m, true
			}
		}
	}
	return nil, false
}

// normaliseDate rewrites each -YYYYMMDD that is a real date (followed by
// "-", ":" or the end) as -YYYY-MM-DD.
func normaliseDate(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); {
		if id[i] == '-' && i+9 <= len(id) && digits(id[i+1:i+9]) && (i+9 == len(id) || id[i+9] == '-' || id[i+9] == ':') {
			d := id[i+1 : i+9]
			if _, err := time.Parse("20060102", d); err == nil && d[:2] == "20" {
				b.WriteString("-" + d[:4] + "-" + d[4:6] + "-" + d[6:])
				i += 9
				continue
			}
		}
		b.WriteByte(id[i])
		i++
	}
	return b.String()
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// priceAt picks the model's prices in force at at: the last conditional
// price whose constraint holds, else the first.
func (m *modelInfo) priceAt(at time.Time) map[string]priceValue {
	if m.flat != nil {
		return m.flat
	}
	at = at.UTC()
	for i := len(m.conditional) - 1; i >= 0; i-- {
		c := m.conditional[i]
		switch {
		case c.Constraint == nil:
			return c.Prices
		case c.Constraint.Type == "start_date":
			start, _ := time.Parse("2006-01-02", c.Constraint.StartDate)
			if !at.Before(start) {
				return c.Prices
			}
		case c.Constraint.Type == "time_of_date":
			now := float64(at.Hour()*3600+at.Minute()*60+at.Second()) + float64(at.Nanosecond())/1e9
			s, e := c.Constraint.start, c.Constraint.end
			if e < s && (now >= s || now < e) || e >= s && now >= s && now < e {
				return c.Prices
			}
		}
	}
	return m.conditional[0].Prices
}

// calc prices usage the way the package does: each priced unit is charged
// for its own tokens only — its usage minus that of the more specific priced
// units inside it (input_mtok pays for input tokens that are not cache reads
// or writes when those have prices of their own) — at a flat price or at the
// tier the call's input tokens reach.
func (t *table) calc(price map[string]priceValue, usage Usage) (float64, error) {
	type priced struct {
		key  string // usage key
		u    unit
		p    priceValue
		leaf float64
	}
	var units []*priced
	for pk, p := range price {
		key, ok := t.byPriceKey[pk]
		if !ok {
			continue // priced units this platform never meters (audio, images, searches)
		}
		units = append(units, &priced{key: key, u: t.Units[key], p: p})
	}
	// Most specific first, then by key: a unit's descendants are computed
	// before it.
	slices.SortFunc(units, func(a, b *priced) int {
		if c := cmp.Compare(len(b.u.Dimensions), len(a.u.Dimensions)); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	values := usage.usageKeys()
	inputTokens := values["input_tokens"]
	total := 0.0
	for _, n := range units {
		v := values[n.key]
		if n.key == "requests" {
			v = float64(max(usage.Requests, 1))
		}
		sub := 0.0
		for _, d := range units {
			if d != n && n.u.contains(d.u) {
				sub += d.leaf
			}
		}
		n.leaf = v - sub
		if n.leaf < 0 {
			return 0, fmt.Errorf("usage for units inside %s exceeds it", n.key)
		}
		total += n.p.at(inputTokens) * n.leaf / n.u.Per
	}
	return total, nil
}

// contains reports whether every dimension of u is one of d's: d is u or
// more specific than it.
func (u unit) contains(d unit) bool {
	for k, v := range u.Dimensions {
		if d.Dimensions[k] != v {
			return false
		}
	}
	return true
}

// at is the price per unit for a call with inputTokens input tokens: the
// base, or the last tier whose start the input exceeds.
func (p priceValue) at(inputTokens float64) float64 {
	if p.Tiers == nil {
		return p.Base
	}
	v := p.Base
	for _, t := range p.Tiers {
		if inputTokens > float64(t.Start) {
			v = t.Price
		}
	}
	return v
}

// String renders a price table entry for messages.
func (s Source) String() string {
	return fmt.Sprintf("%s %s (%s)", s.Package, s.Version, s.Published)
}

var _ json.Unmarshaler = (*priceValue)(nil)
