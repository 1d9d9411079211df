"""The fit's own clock (record/fit_clock.py): other callbacks' epoch hooks timed and put back
as they were, gpudiag's own hook time written apart, and the callbacks found where Keras
lists them; the tf.data facts of what refills at each epoch's start (record/run_facts.py)."""

from __future__ import annotations

import time

import pytest

from gpudiag.record.fit_clock import FitClock, callback_facts, find_callback_list
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.model.timeline import Metadata
from gpudiag.trace.native.events import SPAN_CALLBACK, SPAN_OWN


class Base:
    def on_epoch_begin(self, epoch, logs=None):
        pass

    on_epoch_begin._is_default = True  # type: ignore[attr-defined]

    def on_epoch_end(self, epoch, logs=None):
        pass

    on_epoch_end._is_default = True  # type: ignore[attr-defined]


class Slow(Base):
    def __init__(self):
        self.calls = []

    def on_epoch_end(self, epoch, logs=None):
        time.sleep(0.02)
        self.calls.append(epoch)
        return "result"


class Failing(Base):
    def on_epoch_end(self, epoch, logs=None):
        raise ValueError("the user's own error")


class Checkpoint(Base):
    save_weights_only = True
    save_freq = "epoch"
    filepath = "/somewhere"  # not a setting the remedies read


def clock(tmp_path):
    w = TraceWriter(str(tmp_path / "t.json"), Metadata(producer="gpudiag"))
    return w, FitClock(w)


def test_a_callbacks_epoch_hook_is_timed_and_put_back(tmp_path):
    w, c = clock(tmp_path)
    slow, plain, me = Slow(), Base(), object()
    facts = c.attach([slow, plain, me], me=me)
    assert facts == [{"class": "Slow", "timed": True}, {"class": "Base"}]
    assert slow.on_epoch_end(3) == "result" and slow.calls == [3]
    c.own("epoch_end", 0.0, 1000.0)
    c.detach()
    assert "on_epoch_end" not in slow.__dict__  # the class's own method again
    assert slow.on_epoch_end.__func__ is Slow.on_epoch_end
    tl = w.summary(w.path)
    ((s, e),) = tl.spans[SPAN_CALLBACK + "Slow"]
    assert e - s >= 0.02e6
    assert tl.spans[SPAN_OWN] == [(0.0, 1000.0)]


def test_the_users_exception_passes_through_unchanged_and_is_still_timed(tmp_path):
    w, c = clock(tmp_path)
    bad = Failing()
    c.attach([bad], me=None)
    with pytest.raises(ValueError, match="the user's own error"):
        bad.on_epoch_end(0)
    c.detach()
    assert SPAN_CALLBACK + "Failing" in w.summary(w.path).spans


def test_an_instance_hook_of_the_users_is_put_back_as_it_was(tmp_path):
    _, c = clock(tmp_path)
    cb = Slow()
    own = lambda epoch, logs=None: "mine"  # noqa: E731
    cb.on_epoch_end = own
    c.attach([cb], me=None)
    assert cb.on_epoch_end(0) == "mine"
    c.detach()
    assert cb.on_epoch_end is own
    c.detach()  # idempotent


def test_settings_the_remedies_read():
    assert callback_facts(Checkpoint()) == {
        "class": "Checkpoint",
        "save_weights_only": True,
        "save_freq": "epoch",
    }


def test_found_where_keras_lists_them():
    class CallbackList:
        def __init__(self, cbs):
            self.callbacks = cbs

        def on_train_begin(self):
            for cb in self.callbacks:
                cb.on_train_begin()

    found = []

    class Me:
        def on_train_begin(self):
            found.append(find_callback_list(self))

    me = Me()
    cbs = [me]
    CallbackList(cbs).on_train_begin()
    assert found == [(cbs, True)]  # no _async_train: batch-end hooks on this thread
    assert find_callback_list(me) is None  # not called from a callback list


def test_what_refills_at_each_epochs_start():
    tf = pytest.importorskip("tensorflow")
    from gpudiag.record.run_facts import describe_tf_dataset

    src = tf.data.Dataset.range(1000)
    f = describe_tf_dataset(src.map(lambda x: x * 2).shuffle(1000).batch(10))
    assert (f.shuffle_buffer, f.map_before_shuffle, f.repeat_before_shuffle) == (1000, True, False)
    f = describe_tf_dataset(src.map(lambda x: x * 2).cache().shuffle(500).batch(10))
    assert (f.shuffle_buffer, f.map_before_shuffle) == (500, False)  # refilled from the cache
    f = describe_tf_dataset(src.shuffle(100).map(lambda x: x * 2).repeat().batch(10))
    assert (f.shuffle_buffer, f.map_before_shuffle, f.repeat_before_shuffle) == (100, False, False)
    f = describe_tf_dataset(src.repeat().shuffle(100).batch(10))
    assert f.repeat_before_shuffle
