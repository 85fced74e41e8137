"""Troupe's director window (PySide6 + pyqtgraph): the only package that imports Qt."""
