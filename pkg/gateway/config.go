package gateway

import (
	"log/slog"
	"net/http"
	"time"
)

// Config configures one attempt's gateway.
type Config struct {
	// Route is where calls go (Resolver.Resolve).
	Route Route
	// Key is the real API key; "" sends none (an endpoint without auth).
	Key string
	// SocketPath is the unix socket to listen on; "" makes one in a new
	// temporary directory (removed by Close).
	SocketPath string
	// TCPAddr, when set (e.g. "127.0.0.1:0"), also listens there: for
	// container isolation, where the agent shares the runner's network
	// namespace, and for tests.
	TCPAddr string
	// Limits are the attempt's budget and deadline.
	Limits Limits
	// RecordPath is the JSONL file each call is appended to, redacted; ""
	// keeps calls in memory only.
	RecordPath string
	// Redact lists further secret values no record may hold (the run's
	// [secrets] values, a judge key); the key and token always are.
	Redact []string
	// Retries is how often a call the upstream answers 429 or 5xx (or that
	// cannot reach it) is retried before the harness gets the failure: 0
	// means DefaultRetries, a negative value none.
	Retries int
	// RetryBackoff is the wait before the first retry, doubling after each;
	// a Retry-After of up to MaxRetryAfter is honoured instead. 0 means
	// DefaultRetryBackoff.
	RetryBackoff time.Duration
	// Transport reaches the upstream; nil uses a clone of
	// http.DefaultTransport (which honours HTTPS_PROXY).
	Transport http.RoundTripper
	// Logger gets one line per call; nil discards.
	Logger *slog.Logger
}

// Limits bound an attempt's model use. Zero values are no limit.
type Limits struct {
	// MaxTokens bounds input plus output tokens over the attempt.
	MaxTokens int64
	// MaxCostUSD bounds the attempt's cost (only where calls have a price).
	MaxCostUSD float64
	// Deadline ends every call in flight and refuses new ones.
	Deadline time.Time
}

// Defaults for Config.
const (
	DefaultRetries      = 2
	DefaultRetryBackoff = 500 * time.Millisecond
	MaxRetryAfter       = 20 * time.Second
	// maxRequestBody bounds one harness request.
	maxRequestBody = 32 << 20
	// maxRecordedBody bounds each body kept in the record.
	maxRecordedBody = 8 << 20
)
