package terminus

import "strings"

// DefaultContextTokens is the context size assumed for a model the table
// does not know; --context-tokens overrides it.
const DefaultContextTokens = 128000

// contextSizes are models' context windows in tokens, by name prefix
// (the longest matching prefix wins). A provider prefix such as "openai/"
// is ignored. Sizes from the providers' model pages, 2026-12.
var contextSizes = []struct {
	prefix string
	tokens int
}{
	{"gpt-5", 400000},
	{"gpt-4.1", 1047576},
	{"gpt-4o", 128000},
	{"o3", 200000},
	{"o4-mini", 200000},
	{"claude", 200000},
	{"gemini", 1048576},
	{"deepseek", 128000},
	{"qwen3", 262144},
	{"kimi-k2", 262144},
	{"glm-4.6", 200000},
	{"grok-4", 256000},
}

// ContextTokens is the context window of model: the table's, else
// DefaultContextTokens.
func ContextTokens(model string) int {
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	best, size := -1, DefaultContextTokens
	for _, c := range contextSizes {
		if strings.HasPrefix(name, c.prefix) && len(c.prefix) > best {
			best, size = len(c.prefix), c.tokens
		}
	}
	return size
}
