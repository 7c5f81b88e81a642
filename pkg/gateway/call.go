package gateway

import (
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

// Call is one model call as the gateway saw it: the per-call list of
// result.json.
type Call struct {
	Seq   int       `json:"seq"`
	Start time.Time `json:"start"`
	// DurationMS is from the request to the answer's end;
	// FirstByteMS to the upstream's response headers.
	DurationMS  int64       `json:"duration_ms"`
	FirstByteMS int64       `json:"first_byte_ms,omitempty"`
	API         wireapi.API `json:"api"`
	// UpstreamAPI is set when the call was translated to another wire API.
	UpstreamAPI wireapi.API `json:"upstream_api,omitempty"`
	// Path is the harness's request path; Upstream the URL it went to.
	Path     string `json:"path"`
	Upstream string `json:"upstream,omitempty"`
	// Model is the model the harness asked for; UpstreamModel the model
	// the answer names.
	Model         string `json:"model,omitempty"`
	UpstreamModel string `json:"upstream_model,omitempty"`
	Status        int    `json:"status"`
	// Attempts counts upstream tries (retries included).
	Attempts int `json:"attempts,omitempty"`
	// Metered says the answer carried usage.
	Metered bool  `json:"metered"`
	Usage   Usage `json:"usage"`
	// CostUSD is set when CostKnown; CostEstimated when it was computed
	// from list prices rather than reported by the provider.
	CostUSD       float64 `json:"cost_usd,omitempty"`
	CostKnown     bool    `json:"cost_known"`
	CostEstimated bool    `json:"cost_estimated,omitempty"`
	Fault         string  `json:"fault,omitempty"`
	Error         string  `json:"error,omitempty"`
}

// Totals sum an attempt's calls.
type Totals struct {
	Calls int   `json:"calls"`
	Usage Usage `json:"usage"`
	// CostUSD sums the calls with a known cost; CostKnown says every
	// metered call had one (false for unpriced endpoint and hosted models).
	CostUSD       float64 `json:"cost_usd"`
	CostKnown     bool    `json:"cost_known"`
	CostEstimated bool    `json:"cost_estimated"`
	// Unmetered counts successful generating calls whose answer carried no
	// usage.
	Unmetered int `json:"unmetered,omitempty"`
}
