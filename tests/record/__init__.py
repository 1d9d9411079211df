"""Recording inside a fit: the callback's hooks, samplers, profiler windows, run facts, faults
while recording."""
