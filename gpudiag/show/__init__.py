"""gpudiag.show"""
