// Package fielderr is the one shape of a problem with a user's document at a
// key path ("agents[1].model.type"): the run config's validation and the
// model gateway's routing both report it, and the API answers it field by
// field. It imports nothing of the platform.
package fielderr

// Error is one problem at a key path. Field is "" for a problem with the
// document as a whole. Messages never contain secret values.
type Error struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error implements error.
func (e Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}
