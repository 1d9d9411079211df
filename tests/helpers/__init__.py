"""What the tests share: trace builders, the scripts that train real models in a process of
their own and the one way to run them, optional-dependency guards, the repository's paths."""
