"""The numbers that decide for the run as a whole, each named once.

Where a number lives: the verdict's numbers, and any number two or more modules decide with
(the verdict and a rule, several rules, an analyzer and a rule, the analysis and the
recorder), live here; a number only one rule decides with lives in that rule's module, beside
the code it gates, with its reason. No number is defined twice: a module that needs another's
number imports it. docs/thresholds.md gives the reason for each; tests pin the behaviour on
both sides of each threshold.
"""

from __future__ import annotations

# --- verdict: shares of profiled step time -------------------------------------------------
# TensorFlow's profiler calls a run "highly input-bound" at >= 20% input time and
# "moderately" at >= 5%; TraceML uses 10% / 20%. We follow both anchors.
INPUT_HIGH = 0.20
INPUT_MODERATE = 0.05
INPUT_DOMINANT = 0.10  # data-starved below HIGH only if input is also the largest stall
# xprof flags collectives and kernel launch at 3% (note) / 15% (bottleneck).
SYNC_HIGH = 0.15
SYNC_NOTE = 0.05
# copies exposed on at least this share and more than compute: the step moves data more than
# it computes (xprof's smart suggestions flag H2D at >= 30%); none of the verdicts names that
COPY_DOMINANT = 0.30
# device idle with nothing on the timeline to explain it: not a confident verdict
UNEXPLAINED_IDLE = 0.50
COMPUTE_BOUND_STRONG = 0.90  # TraceML's compute-bound anchor: confidence saturates here
# a compute remedy (bigger batch, XLA, lower precision) pays only where the device is the
# bottleneck: below this compute share the input/sync remedies come first
COMPUTE_DOMINANT = 0.6
# leading steps this much slower than the steady step are warm-up (tracing, compilation,
# first batches): the whole run's phases and the fit's account both cut them off
WARMUP_FACTOR = 3.0

# --- the advice list (analyze/ranking.py) -----------------------------------------------------
MIN_GAIN = 1.02  # a change worth less than 2% is not worth the reader's time
UNESTIMATED_MIN_HIGH = 1.10  # an unestimated remedy is shown only if it could be worth 10%

# --- gaps -----------------------------------------------------------------------------------
GAP_MIN_US = 100.0  # shorter idle is launch latency between kernels, not a gap
GAP_MIN_FRACTION_OF_STEP = 0.02
GAP_BOUNDARY_WINDOW = 0.05  # a gap within 5% of a step of a boundary "lines up" with it

# --- kernel launch bound --------------------------------------------------------------------
LAUNCH_IDLE_SHARE = 0.15
LAUNCH_MEDIAN_KERNEL_US = 20.0

# --- multi-rank ------------------------------------------------------------------------------
STRAGGLER_MARGIN = 0.10  # 10% slower than the median of the others...
STRAGGLER_CONSISTENCY = 0.60  # ...in at least 60% of the common steps
STRAGGLER_MIN_STEPS = 3  # host step timing: one step of it is noise (profiled: 1 is enough)
# the others lose >= 15% of their step waiting for the last rank to arrive: xprof's level
# for collectives as a bottleneck, above the <= 11% asymmetry measured between two identical
# CPU workers; >= 30% is high
STRAGGLER_WAIT_SHARE = 0.15
STRAGGLER_WAIT_SHARE_HIGH = 0.30
# below that, down to xprof's 5% note level for collectives, a rank is still named (info)
# when it is last in more steps than chance allows: the binomial chance that any rank is
# last that often must be <= 1% (a rank last in 5 of 8 steps of 8 ranks: 0.98%; every one
# of 4 steps of 3 ranks: 3.7%, not enough)
STRAGGLER_WAIT_NOTE = 0.05
STRAGGLER_CHANCE = 0.01

# --- host signals (recorded by DiagnoseCallback) ---------------------------------------------
# The GIL probe runs in bursts this long (a probe waking every 5 ms for the whole run costs
# several % of step time on 2 cores); a GIL sample stands for the burst that ended at it
GIL_BURST_S = 0.5
CPU_SATURATED = 90.0  # % of all cores, median over the run
