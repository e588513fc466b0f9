"""The `draplan` command (also `kubectl draplan`)."""
