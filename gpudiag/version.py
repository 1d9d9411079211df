"""gpudiag's version, in a module of its own: whoever shows it (``--version``, the HTML
report, the MCP server) reads it here, never from the package root, which only re-exports."""

__version__ = "0.1.0"
