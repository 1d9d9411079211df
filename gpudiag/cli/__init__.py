"""``gpudiag`` command line: analyze traces, watch GPUs live, run the demo.

    gpudiag analyze trace.json [--json] [--fail-on data-starved,sync-bound]
    gpudiag compare BASE NEW [--json] [--fail-on-regression PCT]
    gpudiag live [--interval 1] [--once] [--follow TRACE]
    gpudiag demo
    gpudiag mcp          (an MCP server on stdio: gpudiag/mcp_server.py)

Exit codes: 0 ok; 2 unreadable or invalid input (one line on stderr, never a traceback);
3 when ``--fail-on`` matches the verdict or NEW is more than ``--fail-on-regression`` percent
slower; 4 when ``--fail-on-regression`` cannot judge (a run stopped early, the runs are
different programs); 130 on Ctrl-C. TensorFlow is imported only by ``demo``. Whatever came
from input is printed escaped (``gpudiag.show.safe``), on any terminal encoding.

The commands live in ``analyze.py`` (analyze, compare) and ``live.py`` (live, demo); the
arguments in ``parser.py``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence

from gpudiag.cli.analyze import EXIT_OK, cmd_analyze, cmd_compare
from gpudiag.cli.live import cmd_demo, cmd_live, cmd_mcp
from gpudiag.cli.parser import build_parser

EXIT_INTERRUPTED = 130
COMMANDS = {
    "analyze": cmd_analyze,
    "compare": cmd_compare,
    "live": cmd_live,
    "demo": cmd_demo,
    "mcp": cmd_mcp,
}


def _tolerant_streams() -> None:
    """Never a UnicodeEncodeError on an ASCII or Latin-1 terminal (LANG=C,
    PYTHONIOENCODING=ascii): what the encoding cannot hold is written as a backslash escape."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            # closed or detached: nothing to protect
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    _tolerant_streams()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_OK
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
