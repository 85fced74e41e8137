"""Subtitles for the deaf and hard of hearing: is a bracketed or labelled piece a sound, a
sign on screen, or a speaker? Word lists for English, Spanish, French and German, and the
word-form rules that catch what the lists miss ('[GLASS SHATTERS]', '[TIRES SCREECHING]').

Every reading here is a guess from evidence; the subtitle importer puts each one that is
not certain in the import report ("guess"), with the words that decided it.
"""

from __future__ import annotations

from dataclasses import dataclass


def word_set(words: str) -> frozenset[str]:
    """The words of a space-separated list, as a set."""
    return frozenset(words.split())


SOUND_WORDS = word_set(
    # English: sounds, their sources, how something is said
    "LAUGHS LAUGHING LAUGHTER SIGHS SIGHING GASPS GASPING SCREAMS SCREAMING CRIES CRYING SOBS "
    "SOBBING CHUCKLES CHUCKLING GIGGLES GIGGLING GROANS GROANING GRUNTS GRUNTING COUGHS COUGHING "
    "SNIFFS SNIFFLES WHISPERS WHISPERING SHOUTS SHOUTING YELLS YELLING SCOFFS EXHALES INHALES "
    "MUSIC APPLAUSE CHEERING CHEERS SILENCE THUNDER SLAMS SLAM SLAMMING KNOCKING KNOCKS KNOCK "
    "RINGS RINGING BEEPS BEEPING BEEP BLEEP BARKS BARKING GUNSHOT GUNSHOTS GUNFIRE EXPLOSION "
    "EXPLOSIONS FOOTSTEPS DOOR DOORBELL PHONE TELEPHONE SIREN SIRENS CRASH CRASHING INAUDIBLE "
    "INDISTINCT CHATTER CHATTERING MUTTERS MUTTERING MUMBLES MUMBLING HUMS HUMMING PANTING "
    "BREATHING SNORES SNORING WIND RAIN ENGINE ENGINES HORN HONKING BELL BELLS STATIC NOISE "
    "GLASS SHATTERS SHATTERING SCREECH SCREECHING TIRES BRAKES CLATTER CLATTERING THUD THUDS "
    "BANG BANGS BANGING BOOM CLICK CLICKS CLICKING BUZZ BUZZES BUZZING WHISTLE WHISTLES "
    "WHISTLING ALARM HELICOPTER TRAFFIC CROWD BIRDS CHIRPING TICKING CLOCK SPLASH SPLASHING "
    "CRACKLING ECHOING MUFFLED DISTANT SOFTLY QUIETLY LOUDLY CONTINUES STOPS PLAYS PLAYING "
    "FADES SCREAM LAUGH SIGH GASP SNEEZES SNEEZING WAILS WAILING HOWLS HOWLING GROWLS GROWLING "
    "RUMBLING RUSTLING SQUEAKS SQUEAKING CREAKS CREAKING THUNDERCLAP APPLAUDING SINGING "
    "VOCALIZING GRUNTS WHIMPERS WHIMPERING STAMMERS STUTTERS CLEARS THROAT KISSES VOMITS "
    # Spanish
    "RISAS RÍE RÍEN SUSPIRA SUSPIRAN GRITA GRITAN GRITOS MÚSICA PORTAZO DISPARO DISPAROS "
    "APLAUSOS LLORA LLORAN SOLLOZA TOSE SUSURRA SUSURRAN TRUENO TELÉFONO SUENA SUENAN TIMBRE "
    "PASOS EXPLOSIÓN SILENCIO LADRA LADRIDOS RUIDO RUIDOS GOLPE GOLPES CRISTAL ROMPE JADEA "
    "GIME GRUÑE ALARMA SIRENA BOCINA MURMULLO MURMULLOS CANTA CANTAN "
    # French
    "RIRES RIT RIENT SOUPIRE SOUPIRS CRIE CRIENT CRIS MUSIQUE CLAQUE CLAQUEMENT APPLAUDISSEMENTS "
    "PLEURE PLEURS SANGLOTE TOUSSE CHUCHOTE CHUCHOTEMENTS TONNERRE SONNE SONNERIE COUP COUPS "
    "DÉTONATION BRUIT BRUITS VERRE BRISE HALÈTE GÉMIT GROGNE KLAXON MURMURES CHANTE CHANTENT "
    "SIFFLE PORTE "
    # German
    "LACHT LACHEN SEUFZT SCHREIT SCHREIE SCHREIEN MUSIK TÜR KNALLT SCHUSS SCHÜSSE APPLAUS "
    "WEINT SCHLUCHZT HUSTET FLÜSTERT DONNER TELEFON KLINGELT KLINGELN SCHRITTE STILLE BELLT "
    "LÄRM GERÄUSCH GERÄUSCHE GLAS ZERBRICHT KLIRRT KEUCHT STÖHNT KNURRT HUPE MURMELN SINGT "
    "PFEIFT"
)
"""Words that make a bracketed or labelled piece a sound description, never a speaker."""

SIGN_WORDS = word_set(
    "WARNING CAUTION DANGER NOTICE ATTENTION EXIT SIGN CLOSED OPEN NOTE TEXT CAPTION SUBTITLE "
    "HEADLINE NEWS MESSAGE EMAIL SCREEN LETTER CHAPTER EPISODE TITLE BANNER PLACARD POSTER "
    "ADVERTENCIA PELIGRO AVISO ATENCIÓN SALIDA CERRADO ABIERTO CARTEL MENSAJE TÍTULO "
    "AVERTISSEMENT SORTIE FERMÉ OUVERT PANNEAU AFFICHE TITRE "
    "ACHTUNG WARNUNG GEFAHR AUSGANG HINWEIS GESCHLOSSEN GEÖFFNET SCHILD NACHRICHT TITEL"
)
"""'WARNING: do not enter.': words that, as a label, mark text on screen, not a speaker."""

PERSON_WORDS = word_set(
    "man woman boy girl child kid baby guy lady men women boys girls children kids people "
    "announcer narrator reporter officer policeman policewoman cop doctor nurse guard soldier "
    "driver waiter waitress operator teacher priest pilot captain stranger voice voices crowd "
    "all both everyone others host presenter newsreader dispatcher customer clerk "
    "hombre mujer niño niña chico chica señor señora narrador narradora locutor locutora "
    "policía médico enfermera guardia soldado todos ambos voz voces multitud "
    "homme femme garçon fille enfant monsieur madame narrateur narratrice présentateur policier "
    "médecin infirmière garde soldat tous toutes voix foule "
    "mann frau junge mädchen kind herr erzähler erzählerin sprecher sprecherin polizist arzt "
    "ärztin krankenschwester wache soldat alle beide stimme stimmen menge"
)
"""'[man]', '[mujer]': a lower-case person word in a label names a speaker."""

QUALIFIERS = word_set(
    "young old little older younger elder teen teenage adult small big other second first "
    "joven viejo vieja pequeño pequeña mayor otro otra "
    "jeune vieux vieille petit petite autre "
    "junge jung alte alter kleine kleiner andere anderer"
)
"""'[young Alba]', '[old man]': words that qualify a speaker without changing who it is."""

_TITLES = word_set("MR MRS MS MISS DR SIR LADY LORD SR SRA SRTA DON DOÑA M MME MLLE HERR FRAU")


@dataclass(frozen=True)
class LabelReading:
    """What a label's words are: kind 'sound', 'sign' or 'speaker'; for a speaker, the
    name and a hint ('young'); `why` for the import report when it was a guess."""

    kind: str
    name: str = ""
    hint: str = ""
    why: str = ""


def _words(label: str) -> list[str]:
    return [w.strip(".,'’!?¡¿-").upper() for w in label.split() if w.strip(".,'’!?¡¿-")]


def sound_word(label: str) -> str:
    """The first word of `label` that is a sound word, or ''."""
    return next((w for w in _words(label) if w in SOUND_WORDS), "")


def read_label(label: str) -> LabelReading:
    """Read the words of a bracketed or colon label ('GLASS SHATTERS', 'young Alba', 'man',
    'WARNING', 'Victoria'). Speaker with no `why` when it is a plain name."""
    words = _words(label)
    if not words:
        return LabelReading("sound")
    found = sound_word(label)
    if found:
        return LabelReading("sound", why=f"'{found.lower()}' is a sound word")
    if len(words) <= 2 and words[0] in SIGN_WORDS and (len(words) == 1 or words[1] in SIGN_WORDS):
        return LabelReading("sign", why=f"'{words[0].lower()}' is a sign word")
    raw = [w.strip(".,'’!?¡¿-") for w in label.split()]
    raw = [w for w in raw if w]
    lowered = [w.lower() for w in raw]
    if lowered[0] in QUALIFIERS and len(raw) >= 2:
        rest = raw[1:]
        first = rest[0]
        if first[:1].isupper() and first.upper() not in SOUND_WORDS and first.lower() not in PERSON_WORDS:
            name = " ".join(rest)
            return LabelReading("speaker", name, lowered[0], f"'{lowered[0]}' read as how {name} sounds")
        if rest[-1].lower() in PERSON_WORDS:
            return LabelReading("speaker", " ".join(raw), "", f"'{rest[-1].lower()}' is a person word")
    people = all(w in QUALIFIERS or w in PERSON_WORDS for w in lowered)
    if lowered[-1] in PERSON_WORDS and len(raw) <= 3 and people:
        return LabelReading("speaker", " ".join(raw), "", f"'{lowered[-1]}' is a person word")
    if len(words) >= 2 and words[0] not in _TITLES and _verb_form(words[-1]) and not label.istitle():
        return LabelReading("sound", why=f"'{words[-1].lower()}' reads as a verb")
    if len(words) == 1 and label.strip().isupper() and words[0].endswith("ING") and len(words[0]) > 5:
        return LabelReading("sound", why=f"'{words[0].lower()}' reads as a verb")
    return LabelReading("speaker", label.strip())


def _verb_form(word: str) -> bool:
    """'SCREECHING', 'SLAMMED': a sound's verb in an upper-case description ('-S' forms are
    left to the word list: 'JONES' and 'JAMES' end so too)."""
    return len(word) > 4 and word.endswith(("ING", "ED"))
