"""gpudiag.record: what runs beside training. Imports nothing from ``show/``.

session.py      one fit's recording: writer, samplers, profiler windows, step clock
call_timer.py   times each call of the model's train function
completion.py   when each step's device work completed (asynchronous backends)
writer.py       the streamed trace (claim.py: a new file; trace_events.py and
                window_events.py: the events it writes)
samplers.py     NVML, host and GIL counters (sampler_thread.py: the sampler thread; nvml.py,
                gpu_snapshot.py, nvml_replay.py; host.py; gil.py, gil_threads.py)
profiler.py     the profiler window and its schedule; decode.py decodes windows
window_facts.py what the windows measured beyond intervals (kernel time, copied bytes)
backends/       what differs per Keras backend (profiler, markers, replicas, ranks)
run_facts.py    the input pipeline and model facts of the run's configuration
ranks.py        which worker of which run this process is
watchdog.py     notices a fit left without on_train_end
"""
