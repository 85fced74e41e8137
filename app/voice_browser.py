"""The voice browser: every castable voice grouped by language and gender, with search,
favourites (kept between runs), a Preview of a sample or the role's next line, and Cast."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.control import VoiceInfo

FAVOURITES_KEY = "voices/favourites"
FAVOURITES = "★ Favourites"
VOICE_ID = Qt.ItemDataRole.UserRole


def language_names(catalog: Sequence[VoiceInfo]) -> dict[str, str]:
    """Language code -> a readable name (the language voice's own name where there is one)."""
    names = {v.language: v.name for v in catalog if v.backend == "espeak" and "+" not in v.voice_id}
    for v in catalog:
        names.setdefault(v.language, v.language)
    return names


def matches(v: VoiceInfo, language: str, words: Sequence[str]) -> bool:
    """Every word of the search appears in the voice's name, id, language or gender."""
    hay = f"{v.name} {v.voice_id} {v.language} {language} {v.gender}".casefold()
    return all(w in hay for w in words)


class VoiceBrowser(QDialog):
    """Emits `cast_chosen(role, voice_id)` and `preview_asked(voice_id, text)`."""

    cast_chosen = Signal(str, str)
    preview_asked = Signal(str, str)

    def __init__(self, catalog: Sequence[VoiceInfo], settings: QSettings, role: str, sample: str,
                 parent: QWidget | None = None) -> None:  # fmt: skip
        super().__init__(parent)
        self.setWindowTitle(f"Voices for {role}")
        self.resize(640, 620)
        self.catalog, self.settings, self.role = list(catalog), settings, role
        self.languages = language_names(self.catalog)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search voices (name, language, gender…)")
        self.search.textChanged.connect(lambda _t: self.refill())
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Voice", "Id", "Gender"])
        self.tree.setColumnWidth(0, 300)
        self.tree.itemDoubleClicked.connect(lambda _i, _c: self._cast())
        self.sample = QLineEdit(sample)
        self.favourite = QPushButton("☆ Favourite")
        self.favourite.clicked.connect(self._toggle_favourite)
        self.preview = QPushButton("▶ Preview")
        self.preview.clicked.connect(self._preview)
        self.cast = QPushButton(f"Cast to {role}")
        self.cast.clicked.connect(self._cast)
        self.tree.currentItemChanged.connect(lambda _c, _p: self._selection_changed())
        self._build()
        self.refill()

    def _build(self) -> None:
        buttons = QHBoxLayout()
        for b in (self.favourite, self.preview, self.cast):
            buttons.addWidget(b)
        layout = QVBoxLayout(self)
        layout.addWidget(self.search)
        layout.addWidget(self.tree, 1)
        layout.addWidget(QLabel("Preview line:"))
        layout.addWidget(self.sample)
        layout.addLayout(buttons)

    def favourites(self) -> list[str]:
        raw = self.settings.value(FAVOURITES_KEY, [])
        return [raw] if isinstance(raw, str) else [str(v) for v in (raw or [])]  # type: ignore[union-attr]

    def refill(self) -> None:
        """Rebuild the tree for the current search: favourites first, then language >
        gender > voice; groups open while searching."""
        words = self.search.text().casefold().split()
        favs = set(self.favourites())
        self.tree.clear()
        groups: dict[str, dict[str, list[VoiceInfo]]] = {}
        fav_items: list[VoiceInfo] = []
        for v in self.catalog:
            language = self.languages.get(v.language, v.language)
            if not matches(v, language, words):
                continue
            if v.voice_id in favs:
                fav_items.append(v)
            groups.setdefault(language, {}).setdefault(v.gender or "any", []).append(v)
        if fav_items:
            top = QTreeWidgetItem([FAVOURITES])
            self.tree.addTopLevelItem(top)
            top.addChildren([self._leaf(v) for v in fav_items])
            top.setExpanded(True)
        for language in sorted(groups):
            top = QTreeWidgetItem([f"{language}  ({sum(len(vs) for vs in groups[language].values())})"])
            self.tree.addTopLevelItem(top)
            for gender in sorted(groups[language]):
                sub = QTreeWidgetItem([gender])
                top.addChild(sub)
                sub.addChildren([self._leaf(v) for v in groups[language][gender]])
                sub.setExpanded(bool(words))
            top.setExpanded(bool(words))
        self._selection_changed()

    def _leaf(self, v: VoiceInfo) -> QTreeWidgetItem:
        item = QTreeWidgetItem([v.name, v.voice_id, v.gender])
        item.setData(0, VOICE_ID, v.voice_id)
        return item

    def voice_items(self) -> list[QTreeWidgetItem]:
        """Every voice row shown (favourites included)."""
        out: list[QTreeWidgetItem] = []
        stack = [self.tree.topLevelItem(k) for k in range(self.tree.topLevelItemCount())]
        while stack:
            item = stack.pop(0)
            if item.data(0, VOICE_ID):
                out.append(item)
            stack.extend(item.child(k) for k in range(item.childCount()))
        return out

    def selected_voice(self) -> str:
        item = self.tree.currentItem()
        return str(item.data(0, VOICE_ID) or "") if item is not None else ""

    def select(self, voice_id: str) -> bool:
        item = next((i for i in self.voice_items() if i.data(0, VOICE_ID) == voice_id), None)
        if item is not None:
            self.tree.setCurrentItem(item)
        return item is not None

    def _selection_changed(self) -> None:
        voice = self.selected_voice()
        for b in (self.favourite, self.preview, self.cast):
            b.setEnabled(bool(voice))
        self.favourite.setText("★ Favourite" if voice in self.favourites() else "☆ Favourite")

    def _toggle_favourite(self) -> None:
        voice = self.selected_voice()
        favs = self.favourites()
        favs = [f for f in favs if f != voice] if voice in favs else [*favs, voice]
        self.settings.setValue(FAVOURITES_KEY, favs)
        self.refill()
        self.select(voice)

    def _preview(self) -> None:
        self.preview_asked.emit(self.selected_voice(), self.sample.text())

    def _cast(self) -> None:
        voice = self.selected_voice()
        if voice:
            self.cast_chosen.emit(self.role, voice)
