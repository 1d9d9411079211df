"""Allow ``python -m gpudiag``."""
from gpudiag.cli import main

raise SystemExit(main())
