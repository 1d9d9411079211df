"""The command line and the calls beside it: analyze, compare, demo, mcp, the Python API,
bad input, installs."""
