package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/fielderr"
	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/tomldoc"
	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"

	"github.com/gauntlet-bench/gauntlet/pkg/prices"
)

// Route is where a model's calls go: the upstream base URL, the model name
// it knows the model by, the wire APIs it serves and the headers it needs.
// A route comes from a run config's model through a Resolver.
type Route struct {
	// BaseURLs holds, for each wire API the upstream serves, the URL the
	// API's path is appended to ("https://api.openai.com/v1" + "/responses").
	BaseURLs map[wireapi.API]string
	// Model is the upstream's name for the model; the gateway puts it in
	// every request, whatever model the harness asked for.
	Model string
	// Headers are sent with every upstream request (an endpoint's
	// extra_headers); never Authorization.
	Headers map[string]string
	// PriceProvider is the provider id in the price table ("openai"); ""
	// for endpoint and hosted models, which get tokens and no cost.
	PriceProvider string
	// Label is the model as the run config names it, for messages.
	Label string
	// Key is the operator's key for a hosted route, sent upstream in place
	// of any user secret (hosted models name none); "" for other routes,
	// whose key is the agent's api_key_secret. Never logged.
	Key string
}

// Speaks reports whether the route's upstream serves api.
func (r Route) Speaks(api wireapi.API) bool { return r.BaseURLs[api] != "" }

// APIs lists the wire APIs the upstream serves, in WireAPIs order.
func (r Route) APIs() []wireapi.API {
	var out []wireapi.API
	for _, a := range wireapi.All {
		if r.Speaks(a) {
			out = append(out, a)
		}
	}
	return out
}

func sameBase(apis []wireapi.API, base string) map[wireapi.API]string {
	m := map[wireapi.API]string{}
	for _, a := range apis {
		m[a] = strings.TrimSuffix(base, "/")
	}
	return m
}

// upstreamAPI is the wire API a harness's api call goes upstream over: api
// itself, or Chat Completions for a Responses call to an upstream that
// serves Chat only (the gateway translates, translate.go).
func (r Route) upstreamAPI(api wireapi.API) (wireapi.API, bool) {
	switch {
	case r.Speaks(api):
		return api, true
	case api == wireapi.Responses && r.Speaks(wireapi.Chat):
		return wireapi.Chat, true
	}
	return "", false
}

// Translates reports whether a harness speaking api reaches this route only
// through the gateway's translation (Responses to Chat Completions).
func (r Route) Translates(api wireapi.API) bool {
	up, ok := r.upstreamAPI(api)
	return ok && up != api
}

// CheckHarness says whether a harness speaking api can use the route: the
// upstream must serve the harness's API, or the gateway must translate it
// (it translates OpenAI Responses to Chat Completions, nothing else).
func (r Route) CheckHarness(api wireapi.API) error {
	if _, ok := r.upstreamAPI(api); ok {
		return nil
	}
	var served []string
	for _, a := range r.APIs() {
		served = append(served, a.Title())
	}
	return fmt.Errorf("the harness speaks %s, but model %q is served over %s only; the model gateway translates only OpenAI Responses to Chat Completions: choose a harness that speaks %s, or a model served over %s",
		api.Title(), r.Label, strings.Join(served, " and "), strings.Join(served, " or "), api.Title())
}

// Provider is one row of the provider table: where a provider's API lives
// and which wire APIs it serves there.
type Provider struct {
	// BaseURLs is the base of the provider's API for each wire API it serves.
	BaseURLs map[wireapi.API]string `toml:"base_urls"`
	// Headers are sent with every request to the provider (an operator's own
	// LLM gateway may want some); never Authorization.
	Headers map[string]string `toml:"headers"`
	// Prices is the provider's id in the price table; "" when it has none.
	Prices string `toml:"prices"`
}

// DefaultProviders is the provider table operators start from. Each base URL
// is what an OpenAI- or Anthropic-style client puts before the API's path.
func DefaultProviders() map[string]Provider {
	chat := func(base, prices string) Provider {
		return Provider{BaseURLs: map[wireapi.API]string{wireapi.Chat: base}, Prices: prices}
	}
	return map[string]Provider{
		"openai":    {BaseURLs: map[wireapi.API]string{wireapi.Responses: "https://api.openai.com/v1", wireapi.Chat: "https://api.openai.com/v1"}, Prices: "openai"},
		"anthropic": {BaseURLs: map[wireapi.API]string{wireapi.Messages: "https://api.anthropic.com/v1"}, Prices: "anthropic"},
		"google": {BaseURLs: map[wireapi.API]string{
			wireapi.Gemini: "https://generativelanguage.googleapis.com/v1beta",
			wireapi.Chat:   "https://generativelanguage.googleapis.com/v1beta/openai",
		}, Prices: "google"},
		"openrouter": chat("https://openrouter.ai/api/v1", "openrouter"),
		"together":   chat("https://api.together.xyz/v1", "together"),
		"deepseek":   chat("https://api.deepseek.com/v1", "deepseek"),
		"mistral":    chat("https://api.mistral.ai/v1", "mistral"),
		"groq":       chat("https://api.groq.com/openai/v1", "groq"),
		"fireworks":  chat("https://api.fireworks.ai/inference/v1", "fireworks"),
		"x-ai":       {BaseURLs: map[wireapi.API]string{wireapi.Responses: "https://api.x.ai/v1", wireapi.Chat: "https://api.x.ai/v1"}, Prices: "x-ai"},
		"moonshotai": chat("https://api.moonshot.ai/v1", "moonshotai"),
		"cerebras":   chat("https://api.cerebras.ai/v1", "cerebras"),
	}
}

// Hosted is the operator's endpoint for hosted models (a base model with a
// LoRA adapter, served by e.g. vLLM, which serves an adapter under its
// lora_model_name), invisible to users: a run config names only
// base_model and lora_model_name, never the URL or the key.
type Hosted struct {
	BaseURL string            `toml:"base_url"`
	APIs    []wireapi.API     `toml:"apis"`
	Headers map[string]string `toml:"headers"`
	// APIKeyFile is the path of a file holding the endpoint's key (one
	// line); "" sends none. A file, because neither the runner nor the
	// sandbox inherits the server's environment (gauntlet local).
	APIKeyFile string `toml:"api_key_file"`
	// APIKeyEnv names the runner's environment variable holding the key
	// instead, where the runner has no files of the operator's (a Fargate
	// task, whose container `secrets` inject it from Secrets Manager). The
	// name starts with sandbox.GatewayKeyEnvPrefix, so the runner takes and scrubs it
	// before any phase starts whatever the config says. At most one of
	// APIKeyFile and APIKeyEnv is set.
	APIKeyEnv string `toml:"api_key_env"`
	// key is the content of APIKeyFile or APIKeyEnv, read by
	// ParseOperatorConfig.
	key string
}

// keyEnvPattern is the shape of an api_key_env name.
var keyEnvPattern = regexp.MustCompile(`^` + sandbox.GatewayKeyEnvPrefix + `[A-Z0-9_]+$`)

// Resolver turns a run config's model into a Route.
type Resolver struct {
	Providers map[string]Provider
	// Hosted is nil when the platform hosts no models.
	Hosted *Hosted
}

// HostsModels reports that the operator configured a hosted-model endpoint.
func (r *Resolver) HostsModels() bool { return r.Hosted != nil }

// NewResolver returns a resolver with the default provider table and no
// hosted endpoint.
func NewResolver() *Resolver { return &Resolver{Providers: DefaultProviders()} }

// EndpointAPIs are the wire APIs an `endpoint` model is assumed to serve:
// "OpenAI-compatible" servers (vLLM, SGLang) serve Chat Completions, and
// both of those serve Responses too.
var EndpointAPIs = []wireapi.API{wireapi.Chat, wireapi.Responses}

// operatorFile is the operator's override file.
type operatorFile struct {
	Providers map[string]Provider `toml:"providers"`
	Hosted    *Hosted             `toml:"hosted"`
}

// ParseOperatorConfig reads an operator's TOML overrides onto the default
// table: a [providers.NAME] replaces (or adds) that provider, e.g. to route
// it through the operator's own LLM gateway; [hosted] configures the hosted
// models' endpoint.
//
//	[providers.openai]
//	base_urls = { openai-responses = "https://llm.example.com/openai/v1" }
//	prices = "openai"
//
//	[hosted]
//	base_url = "http://vllm.internal:8000/v1"
//	apis = ["openai-chat", "openai-responses"]
//	api_key_file = "/etc/gauntlet/hosted-key"
//
// The hosted key is read from api_key_file, or from the environment
// variable api_key_env names (os.LookupEnv; see ParseOperatorConfigWith).
func ParseOperatorConfig(data []byte) (*Resolver, error) {
	return ParseOperatorConfigWith(data, ParseOptions{})
}

// ParseOptions says how ParseOperatorConfigWith reads the hosted
// endpoint's key.
type ParseOptions struct {
	// LookupEnv reads the variable hosted.api_key_env names; nil means
	// os.LookupEnv.
	LookupEnv func(key string) (string, bool)
	// WithoutKeys checks the config, api_key_file and api_key_env included,
	// without reading the key they name: for those that only check models
	// against the config and never call the endpoint (submit in the cloud,
	// cdk synth). Routes of the resolver it returns carry no Key.
	WithoutKeys bool
}

// ParseOperatorConfigWith is ParseOperatorConfig reading the hosted key as
// opts says.
func ParseOperatorConfigWith(data []byte, opts ParseOptions) (*Resolver, error) {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var f operatorFile
	md, err := tomldoc.Decode(data, &f)
	if err != nil {
		return nil, fmt.Errorf("model gateway config: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("model gateway config: unknown field %s", und[0])
	}
	r := NewResolver()
	var errs []error
	for name, p := range f.Providers {
		field := "providers." + name
		if len(p.BaseURLs) == 0 {
			errs = append(errs, fmt.Errorf("%s.base_urls: is required (a base URL per wire API: %s)", field, apiList()))
		}
		for api, u := range p.BaseURLs {
			if !api.Valid() {
				errs = append(errs, fmt.Errorf("%s.base_urls: unknown wire API %q (allowed: %s)", field, api, apiList()))
			}
			if err := checkBaseURL(u); err != nil {
				errs = append(errs, fmt.Errorf("%s.base_urls.%s: %w", field, api, err))
			}
		}
		if err := checkHeaders(p.Headers); err != nil {
			errs = append(errs, fmt.Errorf("%s.headers: %w", field, err))
		}
		r.Providers[name] = p
	}
	if h := f.Hosted; h != nil {
		if err := checkBaseURL(h.BaseURL); err != nil {
			errs = append(errs, fmt.Errorf("hosted.base_url: %w", err))
		}
		if len(h.APIs) == 0 {
			h.APIs = EndpointAPIs
		}
		for _, api := range h.APIs {
			if !api.Valid() {
				errs = append(errs, fmt.Errorf("hosted.apis: unknown wire API %q (allowed: %s)", api, apiList()))
			}
		}
		if err := checkHeaders(h.Headers); err != nil {
			errs = append(errs, fmt.Errorf("hosted.headers: %w", err))
		}
		switch {
		case h.APIKeyFile != "" && h.APIKeyEnv != "":
			errs = append(errs, errors.New("hosted: set one of api_key_file and api_key_env, not both"))
		case h.APIKeyEnv != "" && !keyEnvPattern.MatchString(h.APIKeyEnv):
			errs = append(errs, fmt.Errorf("hosted.api_key_env: %q is not %s followed by capitals, digits or _ (the runner scrubs only such variables)", h.APIKeyEnv, sandbox.GatewayKeyEnvPrefix))
		case opts.WithoutKeys:
		case h.APIKeyFile != "":
			key, err := os.ReadFile(h.APIKeyFile)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("hosted.api_key_file: %w", err))
			case strings.TrimSpace(string(key)) == "":
				errs = append(errs, fmt.Errorf("hosted.api_key_file: %s is empty; give the file the endpoint's key, or remove api_key_file for an endpoint without auth", h.APIKeyFile))
			}
			h.key = strings.TrimSpace(string(key))
		case h.APIKeyEnv != "":
			key, _ := lookup(h.APIKeyEnv)
			if strings.TrimSpace(key) == "" {
				errs = append(errs, fmt.Errorf("hosted.api_key_env: $%s is not set or empty; give the runner the endpoint's key in it, or remove api_key_env for an endpoint without auth", h.APIKeyEnv))
			}
			h.key = strings.TrimSpace(key)
		}
		r.Hosted = h
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("model gateway config: %w", err)
	}
	return r, nil
}

// Resolve returns the route for a run config's model. Errors are
// fielderr.Error values whose Field is the model's key ("model.type",
// "model.model", …), and say what is allowed.
func (r *Resolver) Resolve(m modelref.Model) (Route, error) {
	bad := func(field, format string, args ...any) error {
		return fielderr.Error{Field: field, Message: fmt.Sprintf(format, args...)}
	}
	switch m.Type {
	case modelref.Provider:
		name, model, ok := strings.Cut(m.Model, "/")
		if !ok || name == "" || model == "" {
			return Route{}, bad("model.model", "%q is not <provider>/<model> (e.g. openai/gpt-5.2)", m.Model)
		}
		p, ok := r.Providers[name]
		if !ok {
			return Route{}, bad("model.model", "unknown provider %q (available: %s)", name, strings.Join(r.providerNames(), ", "))
		}
		bases := map[wireapi.API]string{}
		for api, u := range p.BaseURLs {
			bases[api] = strings.TrimSuffix(u, "/")
		}
		return Route{BaseURLs: bases, Model: model, PriceProvider: p.Prices, Headers: p.Headers, Label: m.Model}, nil
	case modelref.Endpoint:
		if err := checkBaseURL(m.BaseURL); err != nil {
			return Route{}, bad("model.base_url", "%v", err)
		}
		if m.Model == "" {
			return Route{}, bad("model.model", "is required for an endpoint model (the name the endpoint serves it under)")
		}
		if err := checkHeaders(m.ExtraHeaders); err != nil {
			return Route{}, bad("model.extra_headers", "%v", err)
		}
		return Route{BaseURLs: sameBase(EndpointAPIs, m.BaseURL), Model: m.Model, Headers: m.ExtraHeaders, Label: m.Model}, nil
	case modelref.Hosted:
		if r.Hosted == nil {
			return Route{}, bad("model.type", "this platform hosts no models (its operator configured no hosted-model endpoint); use provider or endpoint")
		}
		if m.BaseModel == "" || m.LoraModelName == "" {
			return Route{}, bad("model.lora_model_name", "base_model and lora_model_name are both required for a hosted model")
		}
		// The endpoint serves the adapter under its name (vLLM's
		// --lora-modules name=path); the base model only labels it.
		return Route{BaseURLs: sameBase(r.Hosted.APIs, r.Hosted.BaseURL), Model: m.LoraModelName,
			Headers: r.Hosted.Headers, Label: m.Label(), Key: r.Hosted.key}, nil
	}
	return Route{}, bad("model.type", "%q is not a model type (allowed: provider, endpoint, hosted)", m.Type)
}

// CheckModel reports whether model m can serve a harness speaking api
// through the gateway: it resolves, and its upstream serves api (or the
// gateway translates). It is submit's pipeline.Options.CheckModel, so a
// config is refused before any attempt for what an attempt would fail on;
// a hosted model on a platform that hosts none fails at "model.type".
func (r *Resolver) CheckModel(m modelref.Model, api string) error {
	route, err := r.Resolve(m)
	if err != nil {
		return err
	}
	return route.CheckHarness(wireapi.API(api))
}

// CheckPriced reports whether the gateway can price model m's calls, as a
// cost budget (max_cost_usd_per_attempt) needs: it resolves to a provider
// with a price table that holds the model. Endpoint and hosted models have
// no price, so their calls have tokens and no cost and would never spend a
// cost budget. It is submit's pipeline.Options.CheckPriced.
func (r *Resolver) CheckPriced(m modelref.Model) error {
	route, err := r.Resolve(m)
	if err != nil {
		return err
	}
	if route.PriceProvider == "" {
		return fmt.Errorf("model %q (type %s) has no price: the platform prices only provider models from its price table", route.Label, m.Type)
	}
	if _, ok := prices.Lookup(route.PriceProvider, route.Model); !ok {
		return fmt.Errorf("the platform's price table (%s) has no price for model %q of provider %s", prices.TableSource(), route.Model, route.PriceProvider)
	}
	return nil
}

func (r *Resolver) providerNames() []string {
	var names []string
	for n := range r.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func apiList() string {
	var s []string
	for _, a := range wireapi.All {
		s = append(s, string(a))
	}
	return strings.Join(s, ", ")
}

func checkBaseURL(s string) error {
	if s == "" {
		return errors.New("is required")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: give a base URL without credentials, query or fragment", s)
	}
	return nil
}

// forbiddenHeaders may not be set by users or operators: the gateway owns
// the credentials and the framing of upstream requests.
var forbiddenHeaders = []string{"Authorization", "Proxy-Authorization", "X-Api-Key", "X-Goog-Api-Key", "Host", "Content-Length",
	"Transfer-Encoding", "Connection", "Cookie"}

func checkHeaders(h map[string]string) error {
	for k := range h {
		ck := http.CanonicalHeaderKey(k)
		for _, f := range forbiddenHeaders {
			if ck == f {
				return fmt.Errorf("%q may not be set: the gateway sets the key and framing headers itself", k)
			}
		}
	}
	return nil
}
