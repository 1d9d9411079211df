"""gpudiag.trace"""
