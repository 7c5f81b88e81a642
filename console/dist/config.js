// Where the console finds the gauntlet API. Empty means the console's own
// origin (how `gauntlet local` serves it: the API at /v1 beside the console).
// A cloud deployment overwrites this file with the API Gateway URL, e.g.
//   window.GAUNTLET_API_URL = "https://abc123.execute-api.eu-west-1.amazonaws.com";
window.GAUNTLET_API_URL = window.GAUNTLET_API_URL || "";
