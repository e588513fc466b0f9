"""The `draplan` command (also `kubectl draplan`)."""

from draplan.cli import interrupts

# First thing a console script runs: a Ctrl-C during the imports that follow exits cleanly.
interrupts.install_for_scripts()
