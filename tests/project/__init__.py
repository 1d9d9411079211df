"""The project as a whole: the package's layout, the docs' claims, docstring examples that run."""
