package prices

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// table is genai-prices.json.
type table struct {
	Source    string          `json:"source"`
	Version   string          `json:"version"`
	Published string          `json:"published"`
	Units     map[string]unit `json:"units"`
	Providers []provider      `json:"providers"`

	byPriceKey map[string]string // price key → usage key
}

// unit is one metered quantity: its dimensions place it inside the units
// it is more specific than (cache_read_tokens inside input_tokens).
type unit struct {
	Dimensions map[string]string `json:"dimensions"`
	Per        float64           `json:"per"`
	PriceKey   string            `json:"price_key"`
}

type provider struct {
	ID            string      `json:"id"`
	Name          string      `json:"name"`
	APIPattern    string      `json:"api_pattern"`
	ProviderMatch *match      `json:"provider_match"`
	ModelMatch    *match      `json:"model_match"`
	Fallback      []string    `json:"fallback_model_providers"`
	Models        []modelInfo `json:"models"`
}

type modelInfo struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Match         match           `json:"match"`
	ContextWindow int64           `json:"context_window"`
	Deprecated    bool            `json:"deprecated"`
	Prices        json.RawMessage `json:"prices"`

	flat        map[string]priceValue
	conditional []conditionalPrice
}

type conditionalPrice struct {
	Constraint *constraint           `json:"constraint"`
	Prices     map[string]priceValue `json:"prices"`
}

type constraint struct {
	Type      string `json:"type"`
	StartDate string `json:"start_date"`
	StartTime string `json:"start_time"`
	EndTime   string `json:"end_time"`

	start, end float64 // seconds after midnight UTC
}

// priceValue is a flat price or a tiered one.
type priceValue struct {
	Base  float64
	Tiers []tier
}

type tier struct {
	Start int64   `json:"start"`
	Price float64 `json:"price"`
}

func (p *priceValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var t struct {
			Base  float64 `json:"base"`
			Tiers []tier  `json:"tiers"`
		}
		if err := json.Unmarshal(b, &t); err != nil {
			return err
		}
		p.Base, p.Tiers = t.Base, t.Tiers
		if p.Tiers == nil {
			p.Tiers = []tier{}
		}
		// Tiers apply in ascending order of start, as the package sorts them.
		for i := 1; i < len(p.Tiers); i++ {
			for j := i; j > 0 && p.Tiers[j].Start < p.Tiers[j-1].Start; j-- {
				p.Tiers[j], p.Tiers[j-1] = p.Tiers[j-1], p.Tiers[j]
			}
		}
		return nil
	}
	return json.Unmarshal(b, &p.Base)
}

// match is the package's MatchLogic. Strings compare case-insensitively;
// the model id is lower-cased before matching; a regex is unanchored.
type match struct {
	Or         []match `json:"or"`
	And        []match `json:"and"`
	Equals     *string `json:"equals"`
	StartsWith *string `json:"starts_with"`
	EndsWith   *string `json:"ends_with"`
	Contains   *string `json:"contains"`
	Regex      *string `json:"regex"`

	re *jsRegexp
}

func (m *match) matches(s string) bool {
	l := strings.ToLower(s)
	switch {
	case m.Or != nil:
		for i := range m.Or {
			if m.Or[i].matches(s) {
				return true
			}
		}
		return false
	case m.And != nil:
		for i := range m.And {
			if !m.And[i].matches(s) {
				return false
			}
		}
		return true
	case m.Equals != nil:
		return l == strings.ToLower(*m.Equals)
	case m.StartsWith != nil:
		return strings.HasPrefix(l, strings.ToLower(*m.StartsWith))
	case m.EndsWith != nil:
		return strings.HasSuffix(l, strings.ToLower(*m.EndsWith))
	case m.Contains != nil:
		return strings.Contains(l, strings.ToLower(*m.Contains))
	case m.re != nil:
		return m.re.MatchString(s)
	}
	return false
}

func (m *match) compile() error {
	for i := range m.Or {
		if err := m.Or[i].compile(); err != nil {
			return err
		}
	}
	for i := range m.And {
		if err := m.And[i].compile(); err != nil {
			return err
		}
	}
	if m.Regex != nil {
		re, err := compileJS(*m.Regex)
		if err != nil {
			return err
		}
		m.re = re
	}
	return nil
}

// jsRegexp is a JavaScript regular expression Go's RE2 can run: RE2 has no
// lookahead, so a leading negative lookahead "^(?!X)Y" — the only kind the
// table uses — becomes "not ^X, and ^Y".
type jsRegexp struct {
	not, re *regexp.Regexp
}

func (r *jsRegexp) MatchString(s string) bool {
	if r.not != nil && r.not.MatchString(s) {
		return false
	}
	return r.re.MatchString(s)
}

func compileJS(expr string) (*jsRegexp, error) {
	if rest, ok := strings.CutPrefix(expr, "^(?!"); ok {
		end := closingParen(rest)
		if end < 0 {
			return nil, fmt.Errorf("regex %q: unbalanced lookahead", expr)
		}
		not, err := regexp.Compile("^(?:" + rest[:end] + ")")
		if err != nil {
			return nil, fmt.Errorf("regex %q: %w", expr, err)
		}
		re, err := regexp.Compile("^" + rest[end+1:])
		if err != nil {
			return nil, fmt.Errorf("regex %q: %w", expr, err)
		}
		return &jsRegexp{not: not, re: re}, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", expr, err)
	}
	return &jsRegexp{re: re}, nil
}

// closingParen returns the index in s of the ")" closing a group opened
// just before s, skipping escapes and character classes; -1 if none.
func closingParen(s string) int {
	depth, class := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case class:
			class = c != ']'
		case c == '[':
			class = true
		case c == '(':
			depth++
		case c == ')':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return -1
}

func parseTable(data []byte) (*table, error) {
	var t table
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, err
	}
	t.byPriceKey = map[string]string{}
	for k, u := range t.Units {
		pk := u.PriceKey
		if pk == "" {
			pk = k
		}
		t.byPriceKey[pk] = k
	}
	for i := range t.Providers {
		p := &t.Providers[i]
		for _, mm := range []*match{p.ProviderMatch, p.ModelMatch} {
			if mm != nil {
				if err := mm.compile(); err != nil {
					return nil, fmt.Errorf("provider %s: %w", p.ID, err)
				}
			}
		}
		for j := range p.Models {
			m := &p.Models[j]
			if err := m.Match.compile(); err != nil {
				return nil, fmt.Errorf("provider %s model %s: %w", p.ID, m.ID, err)
			}
			if err := m.parsePrices(); err != nil {
				return nil, fmt.Errorf("provider %s model %s: prices: %w", p.ID, m.ID, err)
			}
		}
	}
	return &t, nil
}

func (m *modelInfo) parsePrices() error {
	raw := bytes.TrimSpace(m.Prices)
	if len(raw) > 0 && raw[0] == '[' {
		if err := json.Unmarshal(raw, &m.conditional); err != nil {
			return err
		}
		if len(m.conditional) == 0 {
			return fmt.Errorf("no prices")
		}
		for _, c := range m.conditional {
			if c.Constraint == nil {
				continue
			}
			switch c.Constraint.Type {
			case "start_date":
				if _, err := time.Parse("2006-01-02", c.Constraint.StartDate); err != nil {
					return fmt.Errorf("start_date: %w", err)
				}
			case "time_of_date":
				var err error
				if c.Constraint.start, err = timeOfDay(c.Constraint.StartTime); err != nil {
					return err
				}
				if c.Constraint.end, err = timeOfDay(c.Constraint.EndTime); err != nil {
					return err
				}
			default:
				return fmt.Errorf("unknown price constraint %q", c.Constraint.Type)
			}
		}
		return nil
	}
	return json.Unmarshal(raw, &m.flat)
}

// timeOfDay parses "HH:MM:SS[.f](Z|±HH:MM)" into seconds after midnight UTC.
func timeOfDay(s string) (float64, error) {
	for _, layout := range []string{"15:04:05.999999999Z07:00", "15:04:05Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			u := t.UTC()
			return float64(u.Hour()*3600+u.Minute()*60+u.Second()) + float64(u.Nanosecond())/1e9, nil
		}
	}
	return 0, fmt.Errorf("invalid time-of-day constraint %q", s)
}
