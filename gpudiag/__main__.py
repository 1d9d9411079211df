"""Allow ``python -m gpudiag``."""

from gpudiag.cli import main

if __name__ == "__main__":  # the rank-reading process pool imports this module again
    raise SystemExit(main())
