"""What each epoch's first-batch wait is, from what the run's input pipeline is, and the
remedies for it, each bounded by the wait it removes. Pure.

    kind, what = cause(config)              # "shuffle-map", "a shuffle buffer of 60000 ..."
    remedies(account, config, batch=256)    # [Suggestion], gains of the whole fit

Keras starts the input again at every epoch: a new tf.data iterator (a ``Shuffle`` stage
fills its whole buffer before the first ``GetNext`` returns, through every stage under it), a
PyDataset's worker pool started and stopped (``OrderedEnqueuer.start``/``stop``; the stop
drains its queue with a 0.1 s timeout), files opened again. Compilation stays in the first
epoch's share (analyze/fit_account.py); the wait counted here recurs every epoch.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Suggestion
from gpudiag.analyze.fit_account import FitAccount
from gpudiag.analyze.fit_gain import fit_gain
from gpudiag.trace.model.runconfig import RunConfig

ID = "epoch-start-wait"
# a shuffle after the map may hold a few batches: the "small buffer" proposed
SMALL_BUFFER_BATCHES = 4
# share of the wait a fix leaves, calibrated by benchmarks/fix_gains.py (docs/remedies.md):
# a vectorised map after batching still costs that much beside the steps (measured 7% and
# 21% of the wait on the 2-core CPU, where it shares the cores with them), a cache's refill
# that much of the map's (measured 1.63× for 1.65× predicted at 10%)
VECTORISED_KEPT = 0.15
CACHED_KEPT = 0.1


def cause(cfg: RunConfig) -> tuple[str, str]:
    """The kind of epoch start this pipeline makes, and the words for it."""
    if cfg.input_kind == "tf.data" and cfg.shuffle_buffer and not cfg.repeat_before_shuffle:
        buf = f"a shuffle buffer of {cfg.shuffle_buffer} elements"
        if cfg.map_before_shuffle:
            return "shuffle-map", f"{buf} filled through a per-element map"
        return "shuffle", f"{buf} filled from its source"
    if cfg.input_kind == "pydataset" and (cfg.workers or 1) > 1:
        what = "processes" if cfg.use_multiprocessing else "threads"
        return "worker-pool", (
            f"a PyDataset pool of {cfg.workers} worker {what} started and stopped every epoch"
        )
    if cfg.input_kind == "tf.data" and (cfg.file_source or cfg.interleave) and not cfg.cache:
        return "source", f"{cfg.file_source or 'the files'} opened and read again every epoch"
    if cfg.input_kind == "array":
        return "array", "Keras's array input sliced and shuffled again every epoch"
    return "unknown", "the input pipeline started again every epoch"


def remedies(acc: FitAccount, cfg: RunConfig, batch: int | None) -> list[Suggestion]:
    kind, _ = cause(cfg)
    wait = acc.parts["epoch_start"]
    epochs = max(1, acc.epochs)
    later = wait * (epochs - 1) / epochs  # what recurs after the first epoch
    base = f"the epochs' first-batch wait {wait:.2f} s of a {acc.wall_s:.1f} s fit"
    out: list[Suggestion] = []
    if kind == "shuffle-map":
        g = fit_gain(acc, wait / 2, wait * (1 - VECTORISED_KEPT), wait, base)
        out.append(
            g.suggestion(
                "Shuffle before the map, map after batching",
                "ds.shuffle(n).batch(b).map(fn_on_a_batch, num_parallel_calls=AUTOTUNE): the "
                "buffer then holds raw elements, filled in a moment, and the map runs "
                "vectorised on whole batches alongside the steps (prefetch).",
                ID,
            )
        )
        if not cfg.cache:
            g = fit_gain(acc, later / 2, later * (1 - CACHED_KEPT), later, base)
            out.append(
                g.suggestion(
                    "Cache after the map",
                    "ds.map(fn).cache().shuffle(n): from the second epoch the buffer refills "
                    "from cached elements, not through the map" + _memory(cfg) + ".",
                    ID,
                )
            )
    if kind in ("shuffle-map", "shuffle"):
        small = SMALL_BUFFER_BATCHES * (batch or 256)
        buf = cfg.shuffle_buffer or 0
        if buf >= 4 * small:
            cut = _overlapped(acc, cfg, epochs)
            g = fit_gain(acc, cut / 2, cut, cut, f"{base}; {_overlap_basis(cfg)}")
            out.append(
                g.suggestion(
                    "A smaller shuffle buffer over a shuffled source",
                    f"Shuffle what is cheap (file names: list_files(shuffle=True); arrays: "
                    f"indices or raw elements before the map) and keep shuffle({small}) "
                    "after the expensive stages: the fill is a few batches, not the data.",
                    ID,
                )
            )
        out.append(_repeat(acc, cfg, base))
    elif kind == "worker-pool":
        g = fit_gain(acc, later / 2, later, later, base + "; the pool started once")
        out.append(
            g.suggestion(
                "Fewer, longer epochs",
                "Keras starts the PyDataset's worker pool again every epoch: return None "
                f"from num_batches (an endless PyDataset) and fit(steps_per_epoch="
                f"{epochs}×N, epochs=1) — or as few epochs as your callbacks allow.",
                ID,
            )
        )
    elif kind == "source":
        if not cfg.cache:
            g = fit_gain(acc, later / 2, later * (1 - CACHED_KEPT), later, base)
            out.append(
                g.suggestion(
                    "Cache what is read",
                    "ds.cache() (in memory, or cache(filename) on local disk) after reading "
                    "and decoding: later epochs start from the cache" + _memory(cfg) + ".",
                    ID,
                )
            )
        g = fit_gain(acc, later / 2, later, later, f"{base}; the files open once per fit")
        out.append(
            g.suggestion(
                "Keep one input iterator across epochs",
                "ds.repeat() and fit(steps_per_epoch=N): Keras then keeps one iterator for "
                "the whole fit, and the files are not opened again every epoch.",
                ID,
            )
        )
    else:
        g = fit_gain(acc, 0.0, 0.0, later, base + "; not estimated")
        how = (
            "tf.data.Dataset.from_tensor_slices((x, y)).shuffle(n).batch(b).repeat()"
            if kind == "array"
            else "ds.repeat()"
        )
        out.append(
            g.suggestion(
                "Keep one input iterator across epochs",
                f"{how} and fit(steps_per_epoch=N): Keras then keeps one iterator for the "
                "whole fit instead of starting the input again every epoch.",
                ID,
            )
        )
    return out


def _repeat(acc: FitAccount, cfg: RunConfig, base: str) -> Suggestion:
    cut = _overlapped(acc, cfg, acc.epochs - 1)  # the first epoch still fills it
    g = fit_gain(acc, cut / 2, cut, cut, f"{base}; filled once; {_overlap_basis(cfg)}")
    return g.suggestion(
        "Repeat before the shuffle",
        "ds.repeat().shuffle(n) (repeat under the shuffle) and fit(steps_per_epoch=N): one "
        "iterator for the whole fit, whose buffer never drains between epochs.",
        ID,
    )


def _overlapped(acc: FitAccount, cfg: RunConfig, epochs: int) -> float:
    """Seconds removed over ``epochs`` by a remedy that keeps the work under the shuffle but
    takes it off the epoch's start (a small buffer, a repeat under the shuffle): that work —
    the fill *F* per epoch, for every element of the epoch — then runs beside the steps *S*,
    so an epoch takes ``max(S, work)`` instead of ``S + F``. On a CPU-only run both share
    the cores: nothing overlaps, and only a fill larger than an epoch's elements is saved."""
    fill = acc.parts["epoch_start"] / max(1, acc.epochs)
    steps = acc.steady_epoch_s
    per_element = fill / cfg.shuffle_buffer if cfg.shuffle_buffer else 0.0
    work = per_element * cfg.samples if cfg.samples and per_element else fill
    if cfg.device_type == "CPU":
        return max(0.0, fill - work) * max(0, epochs)
    return max(0.0, steps + fill - max(steps, work)) * max(0, epochs)


def _overlap_basis(cfg: RunConfig) -> str:
    if cfg.device_type == "CPU":
        return "the work under the shuffle then shares the CPU with the steps: no overlap"
    return "the work under the shuffle then runs beside the steps"


def _memory(cfg: RunConfig) -> str:
    if cfg.samples and cfg.sample_bytes:
        return f" ({cfg.samples * cfg.sample_bytes / 2**20:.0f} MiB of memory for this data)"
    return " (the mapped data must fit in memory, or cache(filename) on local disk)"
