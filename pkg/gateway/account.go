package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/prices"
)

// finish records a call once: usage, cost, classification, totals, the
// JSONL line. cut is an error that ended the answer early.
func (g *Gateway) finish(st *callState, cut error) {
	st.once.Do(func() { g.record(st, cut) })
}

func (g *Gateway) record(st *callState, cut error) {
	c := &st.call
	c.DurationMS = time.Since(st.start).Milliseconds()
	c.Attempts = st.attemptsDone()
	if cut != nil && c.Error == "" {
		c.Error = "answer cut short: " + g.redactor.string(cut.Error())
	}
	if m := st.meter; m != nil {
		m.finish()
		c.Metered = m.found
		c.Usage = m.usage
		c.UpstreamModel = m.model
		switch {
		case m.costFound:
			c.CostUSD, c.CostKnown = m.cost, true
		case g.cfg.Route.PriceProvider != "":
			c.CostUSD, c.CostEstimated, c.CostKnown = g.price(c)
		}
	}
	if c.Fault == "" {
		switch s := c.Status; {
		case s == http.StatusUnauthorized || s == http.StatusForbidden:
			c.Fault = FaultAuth
		case s == http.StatusTooManyRequests || s >= 500 && c.Error == "":
			c.Fault = FaultModelUnavailable
		}
	}

	g.mu.Lock()
	g.seq++
	c.Seq = g.seq
	g.calls = append(g.calls, *c)
	t := &g.totals
	t.Calls++
	t.Usage = t.Usage.Add(c.Usage)
	if st.op.metered && c.Status/100 == 2 {
		if !c.Metered {
			t.Unmetered++
		}
		g.generating++
		if c.CostKnown {
			g.priced++
			t.CostUSD += c.CostUSD
			t.CostEstimated = t.CostEstimated || c.CostEstimated
		}
		t.CostKnown = g.priced == g.generating
	}
	switch {
	case c.Fault == FaultBudget:
		g.sticky = &Fault{Kind: c.Fault, Status: c.Status, Message: c.Error}
	case c.Fault != "":
		g.last = &Fault{Kind: c.Fault, Status: c.Status, Message: faultMessage(c, st)}
	case c.Status/100 == 2 && st.op.metered:
		g.last = nil
	}
	if g.recorder != nil {
		g.recorder.push(st) // under g.mu: lines keep the calls' order
	}
	g.mu.Unlock()
	g.log.Info("model call", "seq", c.Seq, "api", c.API, "status", c.Status, "ms", c.DurationMS,
		"input", c.Usage.Input, "cached", c.Usage.Cached, "output", c.Usage.Output, "fault", c.Fault)
}

func faultMessage(c *Call, st *callState) string {
	if c.Error != "" {
		return c.Error
	}
	msg := fmt.Sprintf("the upstream answered %d %s", c.Status, http.StatusText(c.Status))
	if c.Attempts > 1 {
		msg += fmt.Sprintf(" (after %d tries)", c.Attempts)
	}
	if b := strings.TrimSpace(st.respB.String()); b != "" && len(b) < 500 {
		msg += ": " + b
	}
	return msg
}

func (g *Gateway) price(c *Call) (float64, bool, bool) {
	u := prices.Usage{Input: c.Usage.Input, CacheRead: c.Usage.Cached, CacheWrite: c.Usage.CacheWrite,
		Output: c.Usage.Output, Reasoning: c.Usage.Reasoning, Requests: 1}
	for _, m := range []string{g.cfg.Route.Model, c.UpstreamModel} {
		if m == "" {
			continue
		}
		if usd, _, ok := prices.PriceAt(g.cfg.Route.PriceProvider, m, u, c.Start); ok {
			return usd, true, true
		}
	}
	return 0, false, false
}

// refusal says whether a new call is refused: past the deadline, or the
// budget spent.
func (g *Gateway) refusal() (msg string, status int, kind string) {
	if g.pastDeadline() {
		return "the attempt's deadline has passed", http.StatusGatewayTimeout, ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	l, t := g.cfg.Limits, g.totals
	switch {
	case l.MaxTokens > 0 && t.Usage.Total() >= l.MaxTokens:
		return fmt.Sprintf("the attempt's token budget is spent (%d of %d tokens)", t.Usage.Total(), l.MaxTokens), http.StatusBadRequest, FaultBudget
	case l.MaxCostUSD > 0 && t.CostUSD >= l.MaxCostUSD:
		return fmt.Sprintf("the attempt's cost budget is spent ($%.4f of $%.4f)", t.CostUSD, l.MaxCostUSD), http.StatusBadRequest, FaultBudget
	}
	return "", 0, ""
}

func (g *Gateway) pastDeadline() bool {
	d := g.cfg.Limits.Deadline
	return !d.IsZero() && !time.Now().Before(d)
}

func (g *Gateway) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

func (g *Gateway) gatewayFault(err error) {
	g.log.Error("model gateway fault", "err", err)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sticky == nil || g.sticky.Kind != FaultGateway {
		g.sticky = &Fault{Kind: FaultGateway, Message: err.Error()}
	}
}
