"""GitHub: webhook payload parsing, and (elsewhere in this package) the API, poller, write-backs."""
