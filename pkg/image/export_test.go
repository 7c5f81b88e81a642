package image

// SetTestHook makes s call f at named points of its operations (see
// Store.hook), so a test can order the steps of concurrent operations.
func SetTestHook(s *Store, f func(point string)) { s.testHook = f }
