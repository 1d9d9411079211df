"""What the run already does: the configuration the remedies are chosen against.

A remedy is never offered when the configuration shows it is in place, and the kind of input
work (Python under the GIL, native TF ops, I/O) decides which remedies can help. The callback
records a ``RunConfig`` in the trace header; foreign-trace readers fill what their trace
reveals (framework, precision, inference vs training, tf.data stages). ``None`` = unknown.

    cfg = RunConfig(framework="tensorflow", input_kind="tf.data", sequential_maps=1)
    cfg.update({"jit_compile": True})
    cfg.to_dict()       # only the known facts, JSON-ready
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

INPUT_KINDS = ("tf.data", "pydataset", "generator", "array", "dataloader", "unknown")


@dataclass
class RunConfig:
    # --- program ---------------------------------------------------------------------------
    framework: str | None = None  # tensorflow | jax | torch | pytorch
    api: str | None = None  # "keras" when a Keras model drove the run (any backend)
    keras_version: str | None = None  # "3.15.1", "2.21.0" (tf-keras): the callback's Keras
    # 2: a Keras 2 fit (tf_keras, or tf.keras up to TF 2.15): the remedies name Keras 2's API
    # (no PyDataset). Unset for Keras 3 fits and foreign traces.
    keras_generation: int | None = None
    device_type: str | None = None  # GPU | CPU | TPU ...
    vendor: str | None = None  # nvidia | amd | intel | google (TPU) | cpu
    gpu_model: str | None = None  # "Tesla V100" (from the profile's device plane)
    training: bool | None = None  # False: an inference-only trace
    decode_loop: bool | None = None  # inference that generates token by token (KV cache)
    stopped_early: bool | None = None  # crashed, interrupted or cut short: a partial run
    jit_compile: bool | None = None  # XLA compilation of the step
    run_eagerly: bool | None = None  # Keras runs the step op by op (compile(run_eagerly=True))
    steps_per_execution: int | None = None
    precision: str | None = None  # dtype policy: float32 | mixed_float16 | mixed_bfloat16 ...
    compute_capability: float | None = None  # the GPU's, e.g. 7.5 (Tensor Cores from 7.0)
    params: int | None = None
    optimizer: str | None = None  # its class name: "Adam", "SGD" (slots per parameter)
    # whether the optimizer updates only the rows of an embedding a batch touches (Keras 3:
    # SGD without momentum, Adagrad); False: every row and slot of the table, every step
    optimizer_sparse: bool | None = None
    optimizer_scope: str | None = None  # the optimizer's name, the scope of its update ops
    embedding_layer: str | None = None  # the largest Embedding layer's name
    embedding_rows: int | None = None  # its input_dim (vocabulary)
    embedding_values: int | None = None  # its rows × output_dim
    embedding_lookups: int | None = None  # rows one sample looks up (its input's length)
    rnn_without_cudnn: str | None = None  # "lstm: recurrent_dropout=0.2" (cuDNN ruled out)
    batchnorm: bool | None = None
    # --- the runtime ------------------------------------------------------------------------
    intra_op_threads: int | None = None  # TF's intra-op pool (0: TF's default, every core)
    inter_op_threads: int | None = None  # TF's inter-op pool (0: TF's default)
    op_determinism: bool | None = None  # deterministic kernels forced (TF, torch, XLA flags)
    framework_gpus: int | None = None  # GPUs the framework lists
    nvml_gpus: int | None = None  # GPUs the NVIDIA driver shows this process
    gpu_build: str | None = None  # "cuda 12.5.1, cudnn 9" | "cpu-only" (TF's build)
    os: str | None = None  # sys.platform: "linux", "win32", "darwin"
    input_float64: bool | None = None  # the input holds float64 arrays (pandas' default)
    nccl_env: str | None = None  # NCCL settings that turn a fast path off: "NCCL_P2P_DISABLE=1"
    fits: int | None = None  # fit calls recorded as one series (fit in a loop)
    # --- input -----------------------------------------------------------------------------
    input_kind: str | None = None  # one of INPUT_KINDS
    prefetch: bool | None = None  # the user's own prefetch stage
    root_prefetch: bool | None = None  # TF / Keras overlaps input with compute by itself
    sequential_maps: int | None = None
    parallel_maps: int | None = None
    cache: bool | None = None
    # where a TF profile shows the input time going: input_stage.py's kind, and the stage
    input_stage: str | None = None
    input_stage_name: str | None = None
    interleave: bool | None = None
    shuffle_buffer: int | None = None  # elements tf.data's Shuffle holds
    map_before_shuffle: bool | None = None  # a per-element map fills it, uncached, every epoch
    repeat_before_shuffle: bool | None = None  # a repeat under the shuffle: filled once per fit
    python_ops: bool | None = None  # generator / py_function / numpy_function / PyDataset
    file_source: str | None = None
    workers: int | None = None  # PyDataset / DataLoader workers
    use_multiprocessing: bool | None = None
    samples: int | None = None
    drop_remainder: bool | None = None
    # --- scale -----------------------------------------------------------------------------
    # mirrored | multi-worker-mirrored | tpu | parameter-server | keras-data-parallel |
    # keras-model-parallel | ddp | fsdp | none (one device, no strategy)
    strategy: str | None = None
    replicas: int | None = None  # ways the global batch splits (data-parallel replicas)
    mesh: str | None = None  # keras.distribution's device mesh: "batch=2 × model=2"
    sharded: str | None = None  # what a ModelParallel splits: "2 of 6 variables (...)"
    global_batch: int | None = None
    sample_bytes: int | None = None  # one input element (features and labels), from element_spec
    train_gpus: str | None = None  # GPUs the strategy trains on, NVML indices: "0,1"
    cores: int | None = None  # usable by this process (affinity and cgroup quota)

    @property
    def per_replica_batch(self) -> float | None:
        if not self.global_batch:
            return None
        return self.global_batch / max(1, self.replicas or 1)

    @property
    def compute_cores(self) -> int | None:
        """The cores the framework's ops may use: the usable cores, or fewer where its
        intra-op pool is capped (``tf.config.threading``; 0 is TF's default, every core)."""
        cap = self.intra_op_threads
        if self.cores and cap and 0 < cap < self.cores:
            return cap
        return self.cores

    @property
    def maps(self) -> int:
        return (self.sequential_maps or 0) + (self.parallel_maps or 0)

    def update(self, facts: dict[str, Any]) -> None:
        """Fill fields from a dict (a trace header); unknown keys and None are ignored."""
        for f in fields(self):
            value = facts.get(f.name)
            if value is None:
                continue
            if f.type == "bool | None":
                setattr(self, f.name, bool(value))
            elif f.type in ("int | None", "float | None"):
                try:
                    setattr(self, f.name, (int if f.type[0] == "i" else float)(value))
                except (TypeError, ValueError):
                    continue
            else:
                setattr(self, f.name, str(value))

    @property
    def capability(self) -> tuple[int, int] | None:
        """The GPU's compute capability as (major, minor) (7.5 -> (7, 5)), None when unknown:
        comparable with the thresholds of analyze/tensor_cores.py."""
        cc = self.compute_capability
        if cc is None or cc <= 0:
            return None
        major = int(cc)
        return major, round((cc - major) * 10)

    def fill(self, other: RunConfig) -> None:
        """Take ``other``'s known facts where this one has none."""
        for f in fields(self):
            if getattr(self, f.name) is None and getattr(other, f.name) is not None:
                setattr(self, f.name, getattr(other, f.name))

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }
