package runner

// hookOf binds a test hook told of each attempt (testHookGatewayToken) to
// the attempt's work dir, which tells parallel tests' attempts apart; nil
// when no test set it.
func hookOf(hook func(work, token string), work string) func(string) {
	if hook == nil {
		return nil
	}
	return func(token string) { hook(work, token) }
}
