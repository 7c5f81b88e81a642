// Package modelref is the vocabulary of how an agent names its model — a
// provider's model, an OpenAI-compatible endpoint, or a model the platform
// hosts — shared by the run config that declares it and the model gateway
// that routes it. It imports nothing of the platform, so the gateway, which
// ships inside the sandbox, need not carry the run config's decoder.
package modelref

// Type says how an agent reaches its model.
type Type string

// Model types.
const (
	Provider Type = "provider" // a provider's API, "openai/gpt-5.2"
	Endpoint Type = "endpoint" // an OpenAI-compatible endpoint at BaseURL
	Hosted   Type = "hosted"   // a model the platform hosts
)

// Types lists the model types in documentation order.
var Types = []Type{Provider, Endpoint, Hosted}

// Model is an agent's model.
type Model struct {
	Type Type `json:"type"`
	// Model is the model id of a provider or endpoint model.
	Model string `json:"model,omitempty"`
	// APIKeySecret is the NAME of the secret record holding the API key.
	APIKeySecret string            `json:"api_key_secret,omitempty"`
	BaseURL      string            `json:"base_url,omitempty"`
	ExtraHeaders map[string]string `json:"extra_headers,omitempty"`
	// BaseModel and LoraModelName name a hosted model: the LoRA adapter
	// LoraModelName trained from BaseModel.
	BaseModel     string `json:"base_model,omitempty"`
	LoraModelName string `json:"lora_model_name,omitempty"`
}

// Label is the model's display id: Model, else "BaseModel:LoraModelName"
// (or BaseModel alone).
func (m Model) Label() string {
	switch {
	case m.Model != "":
		return m.Model
	case m.LoraModelName != "":
		return m.BaseModel + ":" + m.LoraModelName
	default:
		return m.BaseModel
	}
}
