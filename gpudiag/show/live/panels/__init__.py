"""The monitor's panels, one per file: each returns a list of lines exactly ``width`` wide.

    lines = gpu_panel(state, snapshot, width=80, detail=3, end_us=None)

``detail`` (3 = everything .. 0 = one line per GPU) is how much a panel shows; the frame
lowers it until the whole frame fits the terminal's height.
"""
