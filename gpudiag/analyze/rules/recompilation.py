"""``recompilation``: the step compiled again and again during the fit.

Why it costs time: ``jax.jit`` and XLA (``jit_compile=True``) compile one program per input
shape. Batches padded to their own length (variable sequence lengths), a short last batch,
changing image sizes or Python scalars passed as arguments make a new shape, and the step
stops to compile again — often for far longer than the step itself takes.

Example: "54 compilations took 97% of the fit (recompiled 53 times after warm-up)". Fixes,
each bounded by the compile time it removes (``analyze/compile_time.py`` counts it; gains in
docs/method.md, "Compilation"): pad to one length, or bucket to a few lengths (where a
sequence dimension changed); ``drop_remainder=True`` (where only the batch size changed);
``jit_compile=False`` (TensorFlow, on a CPU where XLA buys nothing); a persistent
compilation cache (JAX, where the shapes are few: it saves the next runs, not this one).
"""

from __future__ import annotations

from gpudiag.analyze.compile_time import compile_facts
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.trace.model.runconfig import RunConfig

ID = "recompilation"
# jit_compile is a Keras option on TensorFlow; the persistent cache a JAX one
NEEDS = {
    "drop-ragged-batch": Needs(),
    "bucket-lengths": Needs(),
    "pad-to-one-length": Needs(),
    "jit-compile-off": Needs(requires={"keras": OneOf(True), "framework": OneOf("tensorflow")}),
    "compilation-cache": Needs(requires={"framework": OneOf("jax")}),
}
# Past warm-up, a run that compiles its step a few times for good reasons (evaluation, one
# short last batch) loses little; three recompilations costing a twentieth of the fit are a
# pattern, and worth the change of input code the remedies ask for.
MIN_RECOMPILES = 3
MODERATE_SHARE = 0.05  # recompilation time / fit time
HIGH_SHARE = 0.25  # a quarter of the fit compiling: the headline (analyze/headline.py)
# Bucketing: a few lengths compile a few programs and pad each batch to at most the next
# bucket (average padding half a bucket's width)
BUCKETS = 4
# Persistent cache: offered where the step compiled for at most this many shapes (a cache
# of hundreds of programs per run is no longer "few shapes, many runs")
FEW_SHAPES = 8
# A cache hit still reads and loads the program: its cost as a share of compiling it
# (measured: benchmarks/fix_gains.py, compile_cache scenario)
CACHE_LOAD_SHARE = 0.25


def detect(ev: RankEvidence) -> Finding | None:
    f = compile_facts(ev.timeline)
    if f is None or f.recompiles < MIN_RECOMPILES or f.recompile_share < MODERATE_SHARE:
        return None
    severity = "high" if f.recompile_share >= HIGH_SHARE else "moderate"
    evidence: dict[str, object] = {
        "compilations": f.compilations,
        "recompilations": f.recompiles,
        "compile_s": round(f.seconds, 3),
        "recompile_s": round(f.recompile_s, 3),
        "fit_s": round(f.fit_s, 3),
        "compile_share_pct": pct(min(1.0, f.share)),
        "recompile_share_pct": pct(min(1.0, f.recompile_share)),
        "distinct_shapes": f.distinct_shapes,
        "first_compile_s": round(f.first_compile_s, 3),
        "counted_by": ", ".join(f.sources),
    }
    if f.steady_step_s is not None:
        evidence["steady_step_ms"] = round(1000 * f.steady_step_s, 3)
    evidence["steady_busy_s"] = round(f.steady_busy_s, 3)
    if f.varying:
        evidence["shapes_changed"] = "; ".join(d.describe for d in f.varying)
        evidence["batch_size_only"] = f.batch_only
    lengths = [v for d in f.length_dims for v in d.values]
    if f.length_dims:
        evidence["length_dims"] = len(f.length_dims)
    if lengths:
        dim = f.length_dims[0]
        evidence["length_mean"] = round(sum(dim.values) / len(dim.values), 1)
        evidence["length_max"] = max(dim.values)
    title = (
        f"{f.compilations} compilations took {pct(min(1.0, f.share)):.0f}% of the fit "
        f"(recompiled {f.recompiles} times after warm-up"
        + (f": {f.varying[0].describe}" if f.varying else "")
        + ")"
    )
    return Finding(ID, severity, title, evidence)


def summary(f: Finding) -> str:
    """The headline's words for this finding."""
    e = f.evidence
    changed = f" ({e['shapes_changed']})" if e.get("shapes_changed") else ""
    return (
        f"recompilation: the step compiled {e['compilations']} times, "
        f"{e['compile_share_pct']:.0f}% of the fit ({e['compile_s']:.1f} s of "
        f"{e['fit_s']:.1f} s), {e['recompilations']} times after warm-up{changed}"
    )


def _num(f: Finding, key: str, default: float = 0.0) -> float:
    v = f.evidence.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else default


def _faster(fit: float, removed_s: float, added_s: float = 0.0) -> float:
    """The fit's speed-up when ``removed_s`` of it goes and ``added_s`` comes."""
    return fit / max(1e-9, fit - min(removed_s, 0.95 * fit) + added_s)


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    cfg = s.config
    out: list[Suggestion] = []
    fit, late, total = _num(f, "fit_s"), _num(f, "recompile_s"), _num(f, "compile_s")
    shapes = int(_num(f, "distinct_shapes"))
    if _num(f, "length_dims"):
        measured = sum(s.shares.values()) > 0  # no step ran without compiling: unknown
        out += _pad_and_bucket(f, fit, late, cfg, s.shares["compute"] if measured else None)
    elif f.evidence.get("batch_size_only") is True and cfg.drop_remainder is not True:
        g = Gain.of(
            _faster(fit, late),
            _faster(fit, late * 0.5),
            _faster(fit, late),
            f"removes the recompilations for other batch sizes ({late:.1f} s of {fit:.1f} s)",
        )
        out.append(
            g.suggestion(
                "Keep every batch the same size",
                _drop_text(cfg),
                ID,
                "drop-ragged-batch",
            )
        )
    if cfg.framework == "tensorflow" and cfg.jit_compile and s.cpu_device:
        trace = _num(f, "first_compile_s")
        g = Gain.of(
            _faster(fit, total, trace),
            _faster(fit, late, trace),
            _faster(fit, total),
            f"removes XLA's compilations ({total:.1f} s of {fit:.1f} s) for one TensorFlow "
            f"trace (about the first compilation, {trace:.1f} s); on a CPU XLA's kernels "
            "are not faster (measured: docs/remedies.md)",
        )
        out.append(
            g.suggestion(
                "Compile without XLA",
                "model.compile(..., jit_compile=False): TensorFlow then traces the step once "
                "with the changing dimension left open and runs it for every shape, without "
                "compiling again.",
                ID,
                "jit-compile-off",
            )
        )
    if cfg.framework == "jax" and 0 < shapes <= FEW_SHAPES:
        saved = total * (1 - CACHE_LOAD_SHARE)
        # nothing on this run (its shapes compile once more, into the cache): the point is
        # this run's, the high end what the next runs gain
        g = Gain.of(
            1.0,
            1.0,
            _faster(fit, saved),
            f"on the next runs: {shapes} programs read from disk instead of "
            f"compiled ({total:.1f} s of {fit:.1f} s, a hit costing about "
            f"{CACHE_LOAD_SHARE:.0%} of the compile); nothing on this run",
        )
        out.append(
            g.suggestion(
                "Keep compiled programs across runs",
                'jax.config.update("jax_compilation_cache_dir", "/path/to/cache") and '
                'jax.config.update("jax_persistent_cache_min_compile_time_secs", 0) before '
                "training: later runs load the programs this one compiled.",
                ID,
                "compilation-cache",
            )
        )
    return out


def _pad_and_bucket(
    f: Finding, fit: float, late: float, cfg: RunConfig, compute: float | None
) -> list[Suggestion]:
    """Pad to the longest length (one program), or to the next of a few bucket lengths
    (``BUCKETS`` programs): every compilation but those goes. The padded steps compute more
    only as far as the device's work sets their pace (``compute``, the steady steps' compute
    share; unknown: half): a launch-bound step on a GPU costs the same at any length
    (measured on an H100: 1.3 ms a step at 20-200 tokens and at 195)."""
    busy = _num(f, "steady_busy_s")
    mean_len = _num(f, "length_mean") or None
    longest = int(_num(f, "length_max")) or None
    grow = (longest / mean_len - 1) if mean_len and longest else 0.0
    n = max(int(_num(f, "distinct_shapes")), 1)
    total = _num(f, "compile_s")
    per_compile = total / max(_num(f, "compilations"), 1.0)
    gone_pad = max(late, total - per_compile)
    gone_bucket = max(0.0, total - min(BUCKETS, n) * per_compile)
    scale = compute if compute is not None else 0.5
    pad_cost = busy * grow * scale
    bucket_cost = busy * grow * scale / (2 * BUCKETS)
    pad = Gain.of(
        _faster(fit, gone_pad, pad_cost),
        _faster(fit, gone_pad, busy * grow),
        _faster(fit, gone_pad),
        f"removes {gone_pad:.1f} s of {total:.1f} s of compilation in a {fit:.1f} s fit"
        + (
            f"; the steady steps pad from {mean_len:.0f} to {longest} on average, costing "
            f"{scale:.0%} of the longer step where the device sets the pace"
            if grow
            else ""
        ),
    )
    bucket = Gain.of(
        _faster(fit, gone_bucket, bucket_cost),
        _faster(fit, gone_bucket, busy * grow / (2 * BUCKETS)),
        _faster(fit, gone_bucket),
        f"removes {gone_bucket:.1f} s of {total:.1f} s of compilation ({min(BUCKETS, n)} "
        "lengths still compile once each); padding to the next bucket",
    )
    length = f" {longest}" if longest else ""
    if cfg.input_kind == "tf.data":
        pad_text = (
            f"ds.padded_batch(batch, padded_shapes=([{longest or 'MAXLEN'}], [])): every "
            "batch the same shape, one compilation."
        )
        bucket_text = (
            "ds.bucket_by_sequence_length(element_length_func, bucket_boundaries=[...], "
            f"bucket_batch_sizes=[...], pad_to_bucket_boundary=True): {BUCKETS} lengths, "
            f"{BUCKETS} compilations."
        )
    else:
        pad_text = (
            f"Pad every batch to the same length{length} where the batches are made (the "
            "PyDataset's __getitem__, the generator, the collate function): one compilation."
        )
        bucket_text = (
            f"Pad each batch up to the next of {BUCKETS} fixed lengths (e.g. the quartiles "
            f"of the lengths{', up to ' + str(longest) if longest else ''}) where the batches "
            f"are made: {BUCKETS} compilations, less padding than one length."
        )
    return [
        bucket.suggestion(
            f"Bucket the sequence lengths to {BUCKETS} sizes", bucket_text, ID, "bucket-lengths"
        ),
        pad.suggestion(f"Pad every batch to one length{length}", pad_text, ID, "pad-to-one-length"),
    ]


def _drop_text(cfg: RunConfig) -> str:
    if cfg.input_kind == "tf.data":
        return "ds.batch(batch, drop_remainder=True): the short last batch compiles no program."
    return (
        "Drop (or pad) the short last batch where the batches are made: every batch the "
        "same size compiles one program."
    )
