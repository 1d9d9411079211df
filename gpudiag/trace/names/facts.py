"""Facts about a foreign run read off its event names: precision, Tensor Cores, training or
inference, blocking host API calls, communication libraries. One accumulator for every reader.

Advice must not offer what the run already does (mixed precision on a bf16/FP8 run), nor
training remedies for an inference trace. These facts come from names alone: kernel names
carry their data type (``..._bf16_...``, ``e4m3``, ``CUDAFunctor_add<c10::Half>``) and whether
they run on Tensor Cores (``sm90_xmma``, ``hmma``, ``wgmma``, CUTLASS ``tensorop``).

    facts = RunFacts()
    facts.kernel(name, dur_us)          # for every device kernel
    facts.host_op(name)                 # for every host (CPU) op
    facts.h2d(device, args)             # for every host-to-device copy (its size)
    facts.apply(tl)                     # -> tl.meta.extra["precision"], ["workload"], ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpudiag.trace.model.timeline import Timeline
from gpudiag.trace.names.name_scan import NameCache, Scan, lowered, scanned

# kernel-name evidence of a data type; first match wins per kernel. Each pattern with the
# literals one of which its matches hold (name_scan: the pattern runs only where one occurs)
PRECISION_TABLE: tuple[tuple[str, Scan], ...] = (
    (
        "fp8",
        Scan(
            re.compile(r"fp8|e4m3|e5m2|f8f6f4|float8|Float8", re.IGNORECASE),
            ("fp8", "e4m3", "e5m2", "f8f6f4", "float8"),
        ),
    ),
    ("bf16", Scan(re.compile(r"bf16|bfloat16|BFloat16", re.IGNORECASE), ("bf16", "bfloat16"))),
    # AMD's Tensile / hipBLASLt GEMMs name their types in three letters after the
    # transposes (input, output, compute: "Cijk_Alik_Bljk_BBS_BH_..."): B bfloat16, H half
    ("bf16", Scan(re.compile(r"^Cijk_\w*?_B[BS]S_"), ("cijk_",))),
    ("fp16", Scan(re.compile(r"^Cijk_\w*?_H[HS][HS]_"), ("cijk_",))),
    (
        "fp16",
        Scan(
            re.compile(r"(?<![bt])f16|fp16|half|Half|h884|h1688|h16816|hmma"),
            ("f16", "fp16", "half", "h884", "h1688", "h16816", "hmma"),
        ),
    ),
    (
        "int8",
        Scan(re.compile(r"int8|imma|i8i8|s8s8", re.IGNORECASE), ("int8", "imma", "i8i8", "s8s8")),
    ),
    # cuBLAS/CUTLASS "s1688"/"s16816" GEMMs are float32 data on TF32 Tensor Cores (Ampere+)
    ("tf32", Scan(re.compile(r"tf32|s1688|s16816", re.IGNORECASE), ("tf32", "s1688", "s16816"))),
)
TENSOR_CORE_RE = re.compile(
    r"xmma|hmma|imma|wgmma|gmma|tensorop|h884|h1688|h16816|s1688|s16816|i8816|"
    r"_tc_|tensor_core|cutlass.*sm(?:75|8\d|9\d|1\d\d)|flash|fmha|e4m3|e5m2",
    re.IGNORECASE,
)
# the same, in two parts run on the lower-cased name: its literals (any one is a match) and
# CUTLASS's architecture tag, a pattern whose literal start lets ``re`` skip ahead quickly
TENSOR_CORE_LITERALS = (
    "xmma", "hmma", "imma", "gmma", "tensorop", "h884", "h1688", "h16816", "s1688", "s16816",
    "i8816", "_tc_", "tensor_core", "flash", "fmha", "e4m3", "e5m2",
)  # fmt: skip
CUTLASS_SM_RE = re.compile(r"cutlass.*sm(?:75|8\d|9\d|1\d\d)")


def is_tensor_core(low: str) -> bool:
    """``TENSOR_CORE_RE`` on a ``lowered`` name, at ``in`` speed."""
    return any(n in low for n in TENSOR_CORE_LITERALS) or (
        "cutlass" in low and CUTLASS_SM_RE.search(low) is not None
    )


# Layout conversions around convolutions (NHWC <-> NCHW), one table for every producer:
# TensorFlow's transpose functors (its layout optimizer and conv ops convert Keras's
# channels-last tensors for cuDNN's float32 NCHW kernels), cuBLAS's transpose in FFT and
# GEMM convolutions, cuDNN's own conversions, MIOpen's batched transposes (ROCm).
LAYOUT_TRANSPOSE_RE = re.compile(
    r"ShuffleInTensor3|SwapDimension[0-2]And[0-2]InTensor3|transpose_readWrite_alignment_kernel|"
    r"nchwToNhwcKernel|nhwcToNchwKernel|batched_transpose_\d+x\d+_(?:dword|half|byte)|"
    r"transpose_(?:NCHW2CNHW|CNHW2NCHW|NCHW2NHWC|NHWC2NCHW)|"
    # XLA's own: the kernels its layout assignment inserts around convolutions, named after
    # the HLO they run (a transpose or a layout-changing copy, fused or alone)
    r"^(?:input_|loop_)?transpose(?:_fusion)?(?:[._]\d+)*$|^(?:loop_)?copy(?:_fusion)?(?:[._]\d+)*$"
)
LAYOUT_TRANSPOSE = Scan(
    LAYOUT_TRANSPOSE_RE,
    ("shuffleintensor3", "swapdimension", "transpose", "nchwtonhwc", "nhwctonchw", "copy"),
)
# TensorFlow's transpose functors also run the user's own tf.transpose (attention heads): an
# op of these types is a layout conversion only when the layout optimizer inserted it
USER_TRANSPOSE_OPS = (":Transpose", ":ConjugateTranspose")
# kernels a compiler generated: TorchInductor's Triton kernels, XLA's fusions
COMPILED_RE = re.compile(
    r"^triton_(?:poi|red|per|tem|mm|bmm)_|^(?:loop|input)_\w*fusion|^fusion(?:[._]\d+)?$"
)
# compiled kernels taking this share of kernel time mean the step is compiled already (a
# partly compiled model still runs most of its time in the compiler's kernels)
COMPILED_MIN_SHARE = 0.20
# a data type is "in use" when its kernels take at least this share of device kernel time:
# AMP keeps many float32 element-wise kernels, so its half-precision GEMMs are a minority
# of kernels but still well above 5% of the time; a stray cast kernel is not
PRECISION_MIN_SHARE = 0.05

# training evidence: backward ops and scopes, optimizer apply ops (TF's ApplyAdam /
# ResourceApply* ops and their GPU kernels, ApplyAdamKernel), Keras 2's train_function
TRAINING_RE = re.compile(
    r"Backward|backward|autograd::engine|Optimizer\.|gradient_tape/|gradients/|Grad\b|"
    r"BackpropFilter|BackpropInput|ResourceApply|transpose\(jvp|optax|AccumulateGrad|"
    r"(?<![A-Za-z])(?:Sparse)?Apply(?:Adam|AdaMax|Adadelta|Adagrad|Ftrl|GradientDescent|"
    r"Momentum|KerasMomentum|RMSProp|CenteredRMSProp|ProximalAdagrad|"
    r"ProximalGradientDescent|AddSign|PowerSign)|(?:^|__inference_)train_function"
)
# inference evidence a TF/JAX profile names: Keras predict and SavedModel serving functions
INFERENCE_RE = re.compile(
    r"(?:^|__inference_)(?:predict_function|predict_step)|serving_default|^jit_predict"
)
TRAINING = Scan(
    TRAINING_RE,
    ("backward", "autograd::engine", "optimizer.", "grad", "backprop", "apply",
     "transpose(jvp", "optax", "train_function"),
)  # fmt: skip


INFERENCE = Scan(
    INFERENCE_RE, ("predict_function", "predict_step", "serving_default", "jit_predict")
)


def is_inference_name(name: str) -> bool:
    """Whether a TF/JAX op name says inference (Keras predict, SavedModel serving)."""
    return INFERENCE.search(scanned(name), lowered(name)) is not None


def is_training_name(text: str) -> bool:
    """Whether a host op name or scope says training (backward, optimizer, gradients)."""
    return TRAINING.search(scanned(text), lowered(text)) is not None


# inference that generates token by token: KV-cache and decode kernels and ops (vLLM,
# SGLang, FlashInfer, flash-attn's KV-cache path, Hugging Face generate)
DECODE = Scan(
    re.compile(
        r"kv_?cache|KVCache|paged_?attention|reshape_and_cache|BatchDecode|decode_attention|"
        r"forward_decode|flash_fwd_splitkv|flash_attn_with_kvcache|\bgenerate\b|"
        r"_sample\b|logits_process",
        re.IGNORECASE,
    ),
    ("kv", "cache", "paged", "decode", "splitkv", "generate", "_sample", "logits_process"),
)
# PyTorch ops whose inputs say the precision the matmuls run in (Kineto's "Input type")
MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear",
              "aten::convolution", "aten::_convolution", "aten::baddbmm")  # fmt: skip
_INPUT_DTYPES = (("BFloat16", "bf16"), ("Half", "fp16"), ("Float8", "fp8"), ("float", "fp32"))


def is_decode_name(name: str) -> bool:
    return DECODE.search(scanned(name), lowered(name)) is not None


# host ops seen before a trace without backward/optimizer events is called inference
INFERENCE_MIN_HOST_OPS = 50

# blocking host API calls: allocator (device memory handed back to / taken from the driver,
# which synchronises the device) and explicit synchronisation
HOST_CALL_TABLE: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "allocator",
        re.compile(
            r"^(?:cuda|hip)(?:Free|Malloc|MallocManaged|FreeHost|HostAlloc|"
            r"MallocHost|HostMalloc|HostFree|FreeAsync|MallocAsync|"
            r"ExtMallocWithFlags)$|^cuMem(?:Free|Alloc)(?:_v2)?$"
        ),
    ),
    (
        "sync",
        re.compile(
            r"^(?:cuda|hip)(?:StreamSynchronize|DeviceSynchronize|"
            r"EventSynchronize|Memcpy|MemcpyWithStream|Memcpy2D|MemcpyDtoH|"
            r"MemcpyHtoD)$|^cu(?:StreamSynchronize|CtxSynchronize|MemcpyDtoH_v2)$"
        ),
    ),
)


def host_call_kind(name: str) -> str | None:
    for kind, pattern in HOST_CALL_TABLE:
        if pattern.match(name):
            return kind
    return None


def config_precision(in_use: list[str]) -> str:
    """The RunConfig precision a kernel mix amounts to: the lowest float type in use, else
    float32 (TF32 Tensor Cores still keep float32 data: mixed precision would halve it)."""
    for label, policy in (("fp8", "fp8"), ("bf16", "mixed_bfloat16"), ("fp16", "mixed_float16")):
        if label in in_use:
            return policy
    return "float32"


# XLA op long names carry the output type: "%fusion.3 = bf16[8,128]{1,0} fusion(...)"
XLA_DTYPE_RE = re.compile(r"=\s*\(?(bf16|f16|f8e\w+|f32|s8)\[")
XLA_DTYPES = {"bf16": "bf16", "f16": "fp16", "s8": "int8"}


def xla_precision(long_name: str) -> str | None:
    m = XLA_DTYPE_RE.search(long_name)
    if m is None:
        return None
    t = m.group(1)
    return "fp8" if t.startswith("f8") else XLA_DTYPES.get(t, "fp32")


# TensorFlow's memcpy_details stat: "size:4096 dest:0 async:1"
MEMCPY_SIZE_RE = re.compile(r"(?:^|\s)size:(\d+)")
MAX_COPY_DEVICES = 1024  # devices whose copied bytes are kept
MAX_COPY_BYTES = float(1 << 50)  # a larger (or infinite) size is not one copy: ignored


def copy_bytes(args: object) -> int | None:
    """Bytes of one copy event: Kineto's ``bytes``, TensorFlow's ``memcpy_details``."""
    if not isinstance(args, dict):
        return None
    n = args.get("bytes")
    if isinstance(n, int | float) and not isinstance(n, bool) and 0 <= n < MAX_COPY_BYTES:
        return int(n)
    details = args.get("memcpy_details")
    m = MEMCPY_SIZE_RE.search(details) if isinstance(details, str) else None
    return int(m.group(1)) if m and len(m.group(1)) < 16 else None


def kernel_precision(name: str) -> str | None:
    head, low = scanned(name), lowered(name)
    for label, scan in PRECISION_TABLE:
        if scan.search(head, low):
            return label
    return None


def _user_transpose(op: object) -> bool:
    return isinstance(op, str) and op.endswith(USER_TRANSPOSE_OPS) and "LayoutOptimizer" not in op


@dataclass
class RunFacts:
    kernel_us: float = 0.0  # device kernels, summed (two streams at once count twice)
    precision_us: dict[str, float] = field(default_factory=dict)
    tensor_core_us: float = 0.0
    compiled_us: float = 0.0
    layout_us: float = 0.0  # in LAYOUT_TRANSPOSE_RE kernels
    host_ops: int = 0
    training_evidence: str = ""
    inference_evidence: str = ""  # a name that says the run serves or predicts
    scopes_seen: bool = False  # framework op scopes (tf_op) were present to search
    decode_evidence: str = ""  # a KV-cache or decode kernel/op: generation token by token
    matmul_inputs: dict[str, int] = field(default_factory=dict)  # dtype -> matmul ops
    comm_us: dict[str, float] = field(default_factory=dict)
    h2d_bytes: dict[str, int] = field(default_factory=dict)  # device -> host-to-device bytes
    _kernel_cache: NameCache = field(default_factory=NameCache)
    _host_cache: NameCache = field(default_factory=NameCache)
    _decode_cache: NameCache = field(default_factory=NameCache)

    def kernel(self, name: str, dur_us: float, long_name: str = "", op: object = None) -> None:
        """A device kernel; ``op`` is the framework op that launched it ("name:Type") when
        the trace says."""
        head = scanned(name)
        cached = self._kernel_cache.get(head)
        if cached is None:
            low = head.lower()
            label = kernel_precision(head) or (xla_precision(long_name) if long_name else None)
            cached = (
                label,
                is_tensor_core(low),
                COMPILED_RE.search(head) is not None,
                LAYOUT_TRANSPOSE.search(head, low) is not None,
            )
            self._kernel_cache.put(head, cached)
        self.kernel_us += dur_us
        if not (self.training_evidence or self.decode_evidence) and self._decode(head):
            self.decode_evidence = name[:80]
        if cached[0] and cached[0] != "fp32":
            self.precision_us[cached[0]] = self.precision_us.get(cached[0], 0.0) + dur_us
        if cached[1]:
            self.tensor_core_us += dur_us
        if cached[2]:
            self.compiled_us += dur_us
        if cached[3] and not _user_transpose(op):
            self.layout_us += dur_us

    def _decode(self, name: str) -> bool:
        """Whether a name is KV-cache or decode work (cached: names repeat by the thousand;
        only asked until training or decoding is known)."""
        head = scanned(name)
        hit = self._decode_cache.get(head)
        if hit is None:
            hit = is_decode_name(head)
            self._decode_cache.put(head, hit)
        return bool(hit)

    def matmul_dtype(self) -> str | None:
        """The input type most matmul/conv ops took, where the trace records it."""
        if not self.matmul_inputs:
            return None
        return max(self.matmul_inputs.items(), key=lambda kv: kv[1])[0]

    def h2d(self, device: str, args: object) -> None:
        """A host-to-device copy on ``device``; its size when the event carries one."""
        n = copy_bytes(args)
        if n is not None and (device in self.h2d_bytes or len(self.h2d_bytes) < MAX_COPY_DEVICES):
            self.h2d_bytes[device] = self.h2d_bytes.get(device, 0) + n

    def comm(self, library: str, dur_us: float) -> None:
        self.comm_us[library] = self.comm_us.get(library, 0.0) + dur_us

    def host_op(self, name: str, args: object = None) -> None:
        self.host_ops += 1
        if not (self.training_evidence or self.decode_evidence) and self._decode(name):
            self.decode_evidence = name[:80]
        if name in MATMUL_OPS and isinstance(args, dict):
            types = args.get("Input type")
            first = types[0] if isinstance(types, list) and types else types
            if isinstance(first, str):
                label = next((lab for key, lab in _INPUT_DTYPES if key in first), None)
                if label is not None:
                    self.matmul_inputs[label] = self.matmul_inputs.get(label, 0) + 1
        if self.training_evidence:
            return
        head = scanned(name)
        hit = self._host_cache.get(head)
        if hit is None:
            hit = is_training_name(head)
            self._host_cache.put(head, hit)
        if hit:
            self.training_evidence = name[:80]

    def scope(self, text: str) -> None:
        """An op scope / long name (TF, JAX): gradient scopes mean training."""
        if not self.training_evidence and is_training_name(text):
            self.training_evidence = text[:80]

    def apply(self, tl: Timeline, inference_by_absence: bool = True) -> None:
        """Write the facts into the timeline. ``inference_by_absence=False`` where the
        producer may not name backward ops at all (TF and XLA profiles): then only positive
        evidence is recorded (training ops, or a predict / serving function)."""
        extra = tl.meta.extra
        if self.kernel_us > 0:
            shares = {k: v / self.kernel_us for k, v in self.precision_us.items()}
            extra["precision_share"] = {k: round(v, 3) for k, v in sorted(shares.items())}
            extra["precision"] = sorted(k for k, v in shares.items() if v >= PRECISION_MIN_SHARE)
            extra["tensor_core_share"] = round(self.tensor_core_us / self.kernel_us, 3)
            extra["kernel_us"] = round(self.kernel_us, 1)
            extra["layout_transpose_us"] = round(self.layout_us, 1)
        if self.training_evidence:
            extra["workload"] = "training"
            extra["training_evidence"] = self.training_evidence
        elif self.inference_evidence:
            extra["workload"] = "inference"
            extra["inference_evidence"] = self.inference_evidence
        elif inference_by_absence and self.host_ops >= INFERENCE_MIN_HOST_OPS:
            extra["workload"] = "inference"
        config: dict[str, object] = {}
        if "workload" in extra:
            config["training"] = extra["workload"] == "training"
        if self.decode_evidence:
            extra["decode_evidence"] = self.decode_evidence
        if extra.get("workload") == "inference" and (self.decode_evidence or self.kernel_us > 0):
            # kernels or ops were there to show a KV cache: their absence is evidence
            config["decode_loop"] = bool(self.decode_evidence)
        if self.kernel_us > 0:
            config["precision"] = config_precision(extra["precision"])
            matmul = self.matmul_dtype()
            if config["precision"] == "float32" and matmul in ("bf16", "fp16"):
                # the kernels do not name their type (Triton, hipBLASLt) but the matmul
                # ops' inputs do (torch.compile'd bf16 models)
                config["precision"] = config_precision([matmul])
                extra["precision_evidence"] = f"{matmul} inputs of the matmul ops"
            compiled = self.compiled_us / self.kernel_us
            extra["compiled_kernel_share"] = round(compiled, 3)
            # JAX always compiles; RunConfig.jit_compile speaks of an opt-in compiler
            if compiled >= COMPILED_MIN_SHARE and tl.meta.framework != "jax":
                config["jit_compile"] = True
        tl.meta.config.update(config)
        if self.h2d_bytes:
            extra["h2d_bytes"] = dict(sorted(self.h2d_bytes.items()))
        if self.comm_us:
            extra["communication_us"] = {
                k: round(v, 1) for k, v in sorted(self.comm_us.items(), key=lambda kv: -kv[1])
            }
