"""Timestamps as subtitle and chapter files write them."""

from __future__ import annotations


def format_srt_time(t: float) -> str:
    """Seconds as an SRT timestamp, HH:MM:SS,mmm."""
    ms = round(t * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def format_vtt_time(t: float) -> str:
    """Seconds as a WebVTT timestamp, HH:MM:SS.mmm (Vorbis chapter marks are written alike)."""
    return format_srt_time(t).replace(",", ".")
