"""Export: audio encoding (WAV, FLAC, MP3, Opus, AAC/M4B, raw PCM), loudness, timelines."""

from engine.export.formats import FORMATS, SAMPLE_FORMATS, AudioFormat, ExportError, available_formats
from engine.export.writers import FileWriter, encode

__all__ = [
    "FORMATS",
    "SAMPLE_FORMATS",
    "AudioFormat",
    "ExportError",
    "FileWriter",
    "available_formats",
    "encode",
]
