"""gpudiag.record"""
