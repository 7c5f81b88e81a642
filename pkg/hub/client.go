package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Harbor's hosted registry (auth/constants.py); both values are public.
const (
	DefaultURL            = "https://ofhuhcpkvzjlejydnvyd.supabase.co"
	DefaultPublishableKey = "sb_publishable_Z-vuQbpvpG-PStjbh4yE0Q_e-d3MTIH"
)

// Paths under the registry URL, as supabase-py builds them.
const (
	restPath     = "/rest/v1/"
	storagePath  = "/storage/v1/object/"
	exchangePath = "/functions/v1/api-key-exchange"
	// bucket is Harbor's storage bucket (storage/supabase.py).
	bucket = "packages"
	// pageSize is PostgREST's row cap Harbor pages past (db/client.py).
	pageSize = 1000
	// maxJSON bounds one JSON answer.
	maxJSON = 32 << 20
	// expirySkew re-exchanges the key this long before the token expires.
	expirySkew = 20 * time.Second
)

// Errors the client wraps.
var (
	// ErrUnreachable: the registry could not be reached or answered with a
	// server error.
	ErrUnreachable = errors.New("package registry unreachable")
	// ErrUnauthorized: the registry refused the API key (or a request made
	// with it).
	ErrUnauthorized = errors.New("package registry refused the credentials")
	// ErrNotFound: no such package, version or task version visible to the
	// caller (a private package is invisible without a key that may read it).
	ErrNotFound = errors.New("not found in the package registry")
	// ErrProtocol: the registry answered something Harbor's client would
	// not accept.
	ErrProtocol = errors.New("package registry answered unexpectedly")
)

// Options configure a Client.
type Options struct {
	// URL is the registry's base URL (Harbor's HARBOR_SUPABASE_URL);
	// default DefaultURL.
	URL string
	// PublishableKey is the registry's public client key (Harbor's
	// HARBOR_SUPABASE_PUBLISHABLE_KEY); default DefaultPublishableKey.
	PublishableKey string
	// APIKey is a Harbor personal API key ("sk-harbor-…") for private
	// packages; "" reads anonymously, as Harbor does when logged out. It is
	// a secret: it is sent only to the key exchange, over https (or http
	// to loopback, as Harbor allows for local development), and never
	// logged.
	APIKey string
	// HTTPClient makes every request; default http.DefaultClient. Callers
	// that must not reach private networks pass a guarded client.
	HTTPClient *http.Client
	// Logger receives debug lines (never a key or token).
	Logger *slog.Logger
}

// Client talks to one package registry. It is safe for concurrent use.
type Client struct {
	base        *url.URL
	publishable string
	apiKey      secretValue
	http        *http.Client
	log         *slog.Logger

	mu      sync.Mutex
	token   secretValue
	expires time.Time
}

// secretValue keeps a key or token out of logs and formatted errors.
type secretValue string

// LogValue implements slog.LogValuer.
func (secretValue) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// String implements fmt.Stringer.
func (secretValue) String() string { return "[redacted]" }

// New returns a Client; it checks the URL and nothing else (no request).
func New(o Options) (*Client, error) {
	raw := o.URL
	if raw == "" {
		raw = DefaultURL
	}
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("package registry URL %q: want https://host[:port][/path] (or http:// for a registry on this machine's loopback)", raw)
	}
	c := &Client{base: u, publishable: o.PublishableKey, apiKey: secretValue(o.APIKey), http: o.HTTPClient, log: o.Logger}
	if c.publishable == "" {
		c.publishable = DefaultPublishableKey
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.apiKey != "" && !secureForCredentials(u) {
		return nil, fmt.Errorf("package registry URL %q: an API key is sent only over https:// (http:// only to localhost), as Harbor refuses too", raw)
	}
	return c, nil
}

// URL returns the registry's base URL.
func (c *Client) URL() string { return c.base.String() }

// secureForCredentials is Harbor's assert_secure_supabase_url.
func secureForCredentials(u *url.URL) bool {
	if u.Scheme == "https" {
		return true
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *Client) endpoint(path string) string { return c.base.String() + path }

// bearer returns the Authorization bearer: the exchanged token when an API
// key is set, else the publishable key (supabase-py's anonymous default).
func (c *Client) bearer(ctx context.Context) (string, error) {
	if c.apiKey == "" {
		return c.publishable, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && time.Now().Before(c.expires.Add(-expirySkew)) {
		return string(c.token), nil
	}
	body, err := json.Marshal(map[string]string{"api_key": string(c.apiKey)})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint(exchangePath), bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("apikey", c.publishable)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", c.transportError(ctx, "API-key exchange", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", fmt.Errorf("%w: the API-key exchange rejected the key (HTTP %d): it is revoked, expired or not a Harbor API key", ErrUnauthorized, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("%w: API-key exchange failed (HTTP %d)", ErrUnreachable, resp.StatusCode)
	}
	var out struct {
		AccessToken string  `json:"access_token"`
		ExpiresIn   float64 `json:"expires_in"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJSON)).Decode(&out); err != nil || out.AccessToken == "" {
		return "", fmt.Errorf("%w: API-key exchange returned no access_token", ErrProtocol)
	}
	c.token = secretValue(out.AccessToken)
	c.expires = time.Now().Add(time.Duration(out.ExpiresIn * float64(time.Second)))
	return out.AccessToken, nil
}

func (c *Client) transportError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	return fmt.Errorf("%w: %s at %s: %w", ErrUnreachable, what, c.base.Host, err)
}

// do sends one request with the registry's headers and returns the answer
// of a 2xx; other statuses become errors carrying PostgREST's message.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any) (*http.Response, error) {
	token, err := c.bearer(ctx)
	if err != nil {
		return nil, err
	}
	u := c.endpoint(path)
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("apikey", c.publishable)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.log.DebugContext(ctx, "package registry request", "method", method, "path", path)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, method+" "+path, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	var pe struct {
		Code       string `json:"code"`
		Message    string `json:"message"`
		Error      string `json:"error"`
		StatusCode string `json:"statusCode"` // storage API errors
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&pe)
	msg := strings.TrimSpace(strings.Join([]string{pe.Code, pe.Message, pe.Error}, " "))
	if msg == "" {
		msg = resp.Status
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || strings.HasPrefix(pe.Code, "PGRST30"):
		return nil, fmt.Errorf("%w: %s %s: HTTP %d: %s", ErrUnauthorized, method, path, resp.StatusCode, msg)
	case resp.StatusCode == http.StatusNotFound || pe.StatusCode == "404":
		return nil, fmt.Errorf("%w: %s %s: %s", ErrNotFound, method, path, msg)
	case resp.StatusCode >= 500:
		return nil, fmt.Errorf("%w: %s %s: HTTP %d: %s", ErrUnreachable, method, path, resp.StatusCode, msg)
	}
	return nil, fmt.Errorf("%w: %s %s: HTTP %d: %s", ErrProtocol, method, path, resp.StatusCode, msg)
}

// getJSON decodes the JSON answer of a request into out.
func (c *Client) getJSON(ctx context.Context, method, path string, query url.Values, body, out any) error {
	resp, err := c.do(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJSON+1))
	if err != nil {
		return c.transportError(ctx, method+" "+path, err)
	}
	if len(data) > maxJSON {
		return fmt.Errorf("%w: %s %s: answer larger than %d bytes", ErrProtocol, method, path, maxJSON)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrProtocol, method, path, err)
	}
	return nil
}

// selectRows is one PostgREST select (client.table(t).select(s).eq(…)):
// filters are column → value, sent as "eq.value".
func (c *Client) selectRows(ctx context.Context, table, columns string, filters [][2]string, extra url.Values, out any) error {
	q := url.Values{"select": {columns}}
	for _, f := range filters {
		q.Add(f[0], "eq."+f[1])
	}
	for k, vs := range extra {
		q[k] = vs
	}
	return c.getJSON(ctx, http.MethodGet, restPath+table, q, nil, out)
}

// selectAllPages is Harbor's _select_all_pages: rows of table where column
// equals value, ordered, paged past PostgREST's row cap.
func selectAllPages[T any](ctx context.Context, c *Client, table, columns, column, value, order string) ([]T, error) {
	var all []T
	for start := 0; ; start += pageSize {
		var page []T
		extra := url.Values{"order": {order}, "offset": {fmt.Sprint(start)}, "limit": {fmt.Sprint(pageSize)}}
		if err := c.selectRows(ctx, table, columns, [][2]string{{column, value}}, extra, &page); err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < pageSize {
			return all, nil
		}
	}
}

// rpc calls a PostgREST function (client.rpc(fn, params)).
func (c *Client) rpc(ctx context.Context, fn string, params, out any) error {
	return c.getJSON(ctx, http.MethodPost, restPath+"rpc/"+fn, nil, params, out)
}

func urlPathEscape(s string) string { return url.PathEscape(s) }
