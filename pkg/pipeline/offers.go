package pipeline

import "github.com/gauntlet-bench/gauntlet/pkg/harness"

// Offers is what this platform can run, as the New Run form offers it:
// the same rules submit applies, so the form offers nothing submit refuses.
type Offers struct {
	// Unavailable maps each harness of the table that cannot run on this
	// platform to why not, in words a user can act on.
	Unavailable map[string]string
	// HostsModels reports that the platform serves hosted models.
	HostsModels bool
}

// Offers reports what this platform's runs may use.
func (s *Submitter) Offers() Offers {
	o := Offers{Unavailable: map[string]string{}, HostsModels: s.opts.HostsModels}
	for _, h := range harness.All() {
		if err := h.Available(s.opts.Platform); err != nil {
			o.Unavailable[h.Name] = err.Error()
		}
	}
	return o
}
