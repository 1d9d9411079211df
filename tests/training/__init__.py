"""End to end on real Keras fits, each trained in a process of its own (tests/helpers/ holds the
scripts): verdicts, findings and remedies as the callback and `gpudiag analyze` give them."""
