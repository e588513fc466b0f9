"""Shell completion: `draplan completion bash|zsh|fish` prints click's script, and
`kubectl_complete-draplan` answers kubectl's plugin completion (kubectl ≥ 1.26 runs
`kubectl_complete-<plugin> ARGS… WORD` for `kubectl <plugin> <TAB>` and reads Cobra's `__complete`
protocol: one candidate a line, then `:<directive>`)."""

from __future__ import annotations

import sys

import click
from click.shell_completion import ShellComplete, get_completion_class

COMPLETE_VAR = "_DRAPLAN_COMPLETE"
# Cobra's ShellCompDirective values.
DEFAULT = 0
NO_FILE_COMPLETION = 4


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion_cmd(shell: str) -> None:
    """Print the shell completion script, e.g. `source <(draplan completion bash)`."""
    from draplan.cli.main import cli

    cls = get_completion_class(shell)
    assert cls is not None
    click.echo(cls(cli, {}, "draplan", COMPLETE_VAR).source())


def kubectl_complete(argv: list[str] | None = None) -> None:
    """Entry point of `kubectl_complete-draplan`: the candidates for the last word."""
    from draplan.cli.main import cli

    args = list(sys.argv[1:] if argv is None else argv)
    incomplete = args.pop() if args else ""
    completer = ShellComplete(cli, {}, "kubectl draplan", COMPLETE_VAR)
    candidates = completer.get_completions(args, incomplete)
    for item in candidates:
        if item.type == "plain":
            click.echo(item.value)
    # No candidate (e.g. a file argument): let the shell complete file names.
    names = [c for c in candidates if c.type == "plain"]
    click.echo(f":{NO_FILE_COMPLETION if names else DEFAULT}")


COMMANDS = [completion_cmd]
