#!/usr/bin/env python3
"""A golden TensorBoard event file written by TensorBoard's own protos and record writer.

tests/report/test_tb_events.cpp encodes the same events with kgtrain's writer and compares the bytes,
and checks the TFRecord framing and masked CRC-32C of every record. Needs the PyPI `tensorboard`:
  .venv-torch/bin/python scripts/golden/gen_tb_events.py   -> tests/golden/tb_events.tfevents
"""
import io
import os

from google.protobuf import struct_pb2
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.hparams import plugin_data_pb2
from tensorboard.summary.writer.record_writer import RecordWriter

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "tb_events.tfevents")
T0 = 1700000000.5


def hparams_value(tag, **data):
    content = plugin_data_pb2.HParamsPluginData(version=0, **data).SerializeToString()
    meta = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="hparams", content=content))
    return summary_pb2.Summary.Value(tag=tag, metadata=meta)


def events():
    yield event_pb2.Event(wall_time=T0, file_version="brain.Event:2")
    yield event_pb2.Event(wall_time=T0 + 1, step=0,
                          summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="train/loss", simple_value=2.25)]))
    yield event_pb2.Event(wall_time=T0 + 2, step=300,
                          summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="valid/accuracy", simple_value=0.875)]))
    img = summary_pb2.Summary.Image(height=2, width=3, colorspace=3, encoded_image_string=b"\x89PNG not really")
    yield event_pb2.Event(wall_time=T0 + 3, step=3,
                          summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="samples", image=img)]))
    yield event_pb2.Event(wall_time=T0 + 4, step=5, session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START))
    ssi = plugin_data_pb2.SessionStartInfo(start_time_secs=T0)
    ssi.hparams["optim.lr"].CopyFrom(struct_pb2.Value(number_value=0.001))
    yield event_pb2.Event(wall_time=T0 + 5, summary=summary_pb2.Summary(
        value=[hparams_value("_hparams_/session_start_info", session_start_info=ssi)]))
    ssi2 = plugin_data_pb2.SessionStartInfo(group_name="g")
    ssi2.hparams["model"].CopyFrom(struct_pb2.Value(string_value="resnet9"))
    yield event_pb2.Event(wall_time=T0 + 6, summary=summary_pb2.Summary(
        value=[hparams_value("_hparams_/session_start_info", session_start_info=ssi2)]))
    ssi3 = plugin_data_pb2.SessionStartInfo()
    ssi3.hparams["tta"].CopyFrom(struct_pb2.Value(bool_value=False))
    yield event_pb2.Event(wall_time=T0 + 7, summary=summary_pb2.Summary(
        value=[hparams_value("_hparams_/session_start_info", session_start_info=ssi3)]))
    sei = plugin_data_pb2.SessionEndInfo(status=1, end_time_secs=T0 + 8)
    yield event_pb2.Event(wall_time=T0 + 8, summary=summary_pb2.Summary(
        value=[hparams_value("_hparams_/session_end_info", session_end_info=sei)]))


def main():
    buf = io.BytesIO()
    w = RecordWriter(buf)
    for e in events():
        w.write(e.SerializeToString())
    with open(OUT, "wb") as f:
        f.write(buf.getvalue())
    print(OUT, len(buf.getvalue()), "bytes")


if __name__ == "__main__":
    main()
