"""The XSpace schema declared in gpudiag reads real profiles and round-trips built ones."""

from __future__ import annotations

from gpudiag.trace.tf.xspace.schema import XSpace
from tests.helpers.paths import SAMPLES

SAMPLE = SAMPLES / "tf_gpu_multi_worker.xplane.pb"


def test_reads_a_real_tensorflow_profile() -> None:
    space = XSpace()
    space.ParseFromString(SAMPLE.read_bytes())
    names = [p.name for p in space.planes]
    assert "/host:CPU" in names and "/device:GPU:4" in names
    gpu = next(p for p in space.planes if p.name == "/device:GPU:4")
    stat_names = {k: v.name for k, v in gpu.stat_metadata.items()}
    stats = {stat_names[s.metadata_id]: s for s in gpu.stats}
    assert stats["compute_cap_major"].int64_value == 7
    assert sum(len(line.events) for line in gpu.lines) > 1000


def test_round_trips_a_built_profile_without_tensorflow() -> None:
    space = XSpace()
    plane = space.planes.add(id=1, name="/device:GPU:0")
    plane.event_metadata[1].name = "volta_sgemm_128x64_nn"
    line = plane.lines.add(id=1, name="Stream #13(Compute)", timestamp_ns=1_000)
    line.events.add(metadata_id=1, offset_ps=5_000, duration_ps=-1)
    again = XSpace()
    again.ParseFromString(space.SerializeToString())
    event = again.planes[0].lines[0].events[0]
    assert again.planes[0].event_metadata[1].name == "volta_sgemm_128x64_nn"
    assert event.duration_ps == -1  # int64 on the wire: a reader must reject it, not wrap it
