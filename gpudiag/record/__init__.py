"""gpudiag.record: what runs beside training. Imports nothing from ``show/``.

session.py      one fit's recording: writer, samplers, profiler windows, step clock
                (session_start.py opens it; session_fit.py: the fit's, epochs' and
                evaluations' spans; fit_series.py: fits in a loop as one recording)
fit_clock.py    gpudiag's own hook time, the other callbacks' hooks timed
call_timer.py   times each call of the model's train function
completion.py   when each step's device work completed (asynchronous backends)
writer.py       the streamed trace (claim.py: a new file; trace_events.py and
                window_events.py: the events it writes)
samplers.py     NVML, host and GIL counters (sampler_thread.py: the sampler thread; nvml.py,
                gpu_snapshot.py, gpm.py, nvml_replay.py + nvml_mirror.py; host.py; gil.py,
                gil_threads.py; memory.py: the framework allocator's readings)
profiler.py     the profiler window and its schedule; decode.py decodes windows
window_facts.py what the windows measured beyond intervals (kernel time, copied bytes;
                op_scopes.py: a name scope's share, the optimizer's)
compile_watch.py counts the step's compilations (compile_tf/jax/torch.py per backend)
backends/       what differs per Keras backend (profiler, markers, replicas, ranks)
generation.py   what differs between Keras 2 and Keras 3
fit_config.py   the run's configuration before the first step, from: fit_input.py (the input
                fit was given), run_facts.py (the input pipeline and model), model_facts.py
                (embeddings, optimizer, recurrent layers), runtime_facts.py (thread pools,
                determinism, visible devices), keras_distribution.py
ranks.py        which worker of which run this process is (rank_info.py)
watchdog.py     notices a fit left without on_train_end
"""
