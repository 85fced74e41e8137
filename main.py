"""Troupe: the one entry point.

python main.py                    the director window (GUI)
python main.py render SCRIPT -o mix.wav|.flac|.mp3|.m4b [--stems DIR] [--cluster ADDRESS|auto]
python main.py play SCRIPT [--device NAME] [--in-process-audio]
python main.py cast SCRIPT [--json]   how each role is cast, and why
python main.py voices [design]    list voices; design the voice library
python main.py desktop-install | desktop-uninstall
python main.py devices
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.cast import Cast

from assets import DEMO


def _import_options(args: argparse.Namespace, saved=None):  # type: ignore[no-untyped-def]
    """`--encoding`/`--styles` over what a project saved."""
    from engine.script.options import ImportOptions, parse_styles

    encoding = getattr(args, "encoding", None) or (saved.encoding if saved else None)
    styles = getattr(args, "styles", None)
    chosen = parse_styles(styles) if styles is not None else (saved.styles if saved else None)
    return ImportOptions(encoding, chosen)


def _tell_guess(script) -> None:  # type: ignore[no-untyped-def]
    """A guessed encoding is said before anything is voiced (the window shows its report)."""
    facts = script.facts
    if facts.how == "guessed":
        print(f"troupe: {script.path}: not UTF-8; read as {facts.encoding} (a guess, confidence "
              f"{facts.confidence:.0%}): {facts.first_line[:70]!r}; --encoding to choose another",
              file=sys.stderr)  # fmt: skip


def _load(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from engine.cast import Cast
    from engine.project import read_project, use_voicing
    from engine.script import load_script

    edits: dict[int, str] = {}
    keep = None
    script_path = args.script or DEMO
    saved = None
    if args.project:
        project = read_project(args.project)
        use_voicing(project)
        keep, saved = project.cast.voices, project.import_options
        script_path = args.script or project.script
    script = load_script(script_path, _import_options(args, saved))
    _tell_guess(script)
    if args.project:
        edits, lost = project.edits_on(script)
        for what in lost:
            print(f"troupe: an edit could not be placed: {what}", file=sys.stderr)
    natural = _natural_voices() if getattr(args, "voices", "auto") == "auto" else []
    return script, Cast.auto(script, keep, natural=natural), edits


def _natural_voices() -> list:  # type: ignore[type-arg]
    """The installed natural voices (Kokoro's voice library, Piper) that auto-casting gives
    the roles; [] without any."""
    from engine.synthesis.kokoro import kokoro_voice_list
    from engine.synthesis.piper import make_piper

    piper = make_piper()
    return kokoro_voice_list() + (piper.voices() if piper is not None else [])


def _synth(processes: int, rate_hz: int = 48_000):  # type: ignore[no-untyped-def]
    """espeak-ng (in this process or a pool, started now: its workers start while the script
    loads) for the offline render, so the workers run at normal priority (no live stream to
    yield to). Lines come out at `rate_hz` (espeak-ng's workers resample, or not at all at its
    own 22,050 Hz). The natural backends the cast names join it once the cast is known.

    NB: worker processes, not threads with private library copies: on a busy machine the
    threads used less CPU but took longer (bench_render.py, same run)."""
    from engine.synthesis.build import SynthSpec, build_synthesizers
    from engine.synthesis.router import Router

    spec = SynthSpec(processes, offline=True, natural=None, rate_hz=rate_hz)
    return Router(build_synthesizers(spec), sample_rate_hz=rate_hz)


def _with_natural(synth, cast: Cast):  # type: ignore[no-untyped-def]
    """`synth` (a router over espeak-ng) with the natural backends `cast` names beside it
    (the espeak-ng already started stands in for them)."""
    from engine.synthesis.build import NATURAL, build_natural
    from engine.synthesis.router import Router

    named = {v.backend for v in cast.voices.values()} & set(NATURAL)
    if not named:
        return synth
    return Router({**synth.synths, **build_natural(named)}, sample_rate_hz=synth.sample_rate_hz)


def _cluster(address: str, processes: int, rate_hz: int = 48_000):  # type: ignore[no-untyped-def]
    """The Ray cluster at `address` (or `auto`) as one synthesizer over every backend its workers
    voice (started on its nodes, each with as many espeak-ng processes as it has CPUs, or
    `processes` where more than 1 is asked), standing in as on one machine."""
    from engine.cluster import open_voices
    from engine.synthesis.router import Router

    return Router(open_voices(address, processes), sample_rate_hz=rate_hz)


def _render_progress():  # type: ignore[no-untyped-def]
    """A rich progress bar on a terminal (lines voiced, audio written, time left); else nothing."""
    if not sys.stderr.isatty():
        return None
    try:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
    except ImportError:
        return None
    return Progress(TextColumn("rendering"), BarColumn(), TextColumn("{task.description}"),
                    TimeRemainingColumn(), console=Console(stderr=True), transient=True)  # fmt: skip


def _stop_resource_tracker() -> None:
    """multiprocessing's resource tracker (started with the worker pool) would outlive the
    render by a moment in its process group; stop and reap it now."""
    from multiprocessing import resource_tracker

    stop = getattr(resource_tracker._resource_tracker, "_stop", None)
    if stop is not None:
        stop()


def _listening(args: argparse.Namespace, script, rate_hz: int):  # type: ignore[no-untyped-def]
    """Fit-to-slot for a timed script (unless --no-fit) and the line check (--check, --retake);
    the recogniser loads now, so a missing asr extra is said before anything is voiced."""
    from engine.render.fitting import FitOptions
    from engine.render.listening import Listening

    timed = any(c.start_s is not None and c.end_s is not None for c in script.cues)
    fit = FitOptions(max_overrun_s=args.max_overrun) if timed and not args.no_fit else None
    check = None
    if args.check or args.retake:
        from engine.asr import line_checker, shared_transcriber

        shared_transcriber().load()
        check = line_checker(shared_transcriber(), rate_hz)
    if fit is None and check is None:
        return None
    return Listening(check=check, fit=fit, retake=args.retake)


def cmd_render(args: argparse.Namespace) -> int:
    from engine.mixer import Pacing
    from engine.render import StemOptions, render_script

    _stop_on_signals()  # SIGTERM and SIGHUP end a render as Ctrl+C does: its partial files go
    rate = args.sample_rate
    synth = _cluster(args.cluster, args.processes, rate) if args.cluster else _synth(args.processes, rate)
    try:
        script, cast, edits = _load(args)
        if not args.cluster:
            synth = _with_natural(synth, cast)
        stems = StemOptions(args.stem_mode, args.stem_format, args.sample_format)
        loudness = None
        if args.loudness:
            from engine.export.loudness import parse_target

            loudness = parse_target(args.loudness)
        if args.stems and args.stem_mode == "roles" and len(script.roles) > 16:
            hint = "each stem is as long as the show; --stem-mode clips writes one file per line"
            print(f"troupe: {len(script.roles)} roles: {hint}", file=sys.stderr)
        from engine.export.tags import book_info

        given = {"title": args.title or "", "author": args.author or ""}
        book = book_info(script.metadata, script.title, given, args.cover)
        bar = _render_progress()
        t0 = time.perf_counter()
        with bar or contextlib.nullcontext():
            task = bar.add_task("", total=1.0) if bar is not None else None
            on_progress = (lambda f, msg: bar.update(task, completed=f, description=msg)) if bar else None
            pacing = Pacing(gap_s=args.gap)
            listening = _listening(args, script, synth.sample_rate_hz)
            result = render_script(script, cast, args.output, synth, args.stems, pacing, edits,
                                   on_progress, stems=stems, sample_format=args.sample_format,
                                   loudness=loudness, listening=listening, sample_rate_hz=rate,
                                   channels=args.channels, book=book,
                                   chapter_min_s=args.chapter_minutes * 60,
                                   levelling=not args.no_levelling,
                                   one_model_at_a_time=True)  # fmt: skip
    finally:
        synth.close()
        _stop_resource_tracker()
    wall = time.perf_counter() - t0
    speed = result.duration_s / wall
    print(
        f"{result.path}: {result.duration_s:.1f} s of audio, {len(result.lines)} lines, "
        f"{len(script.roles)} roles, rendered in {wall:.2f} s ({speed:.0f}x real time), "
        f"{result.bytes_written / 1e6:.1f} MB written"
    )
    if len(result.stems) <= 64:
        for role, path in result.stems.items():
            print(f"  stem {role}: {path}")
    else:
        print(f"  {len(result.stems)} files in {args.stems}")
    if result.timeline is not None:
        print(
            f"  timeline: {result.timeline} (OpenTimelineIO), {result.timeline.with_suffix('.rpp')} (REAPER)"
        )
    if result.loudness_gain_db is not None:
        gain = result.loudness_gain_db
        print(f"  loudness: measured {result.loudness_measured_lufs:.1f} LUFS, gain {gain:+.1f} dB")
    if result.compliance is not None:
        c = result.compliance
        verdict = "passes" if c.passed else "FAILS"
        print(f"  the encoded file: {c.integrated_lufs:.1f} LUFS, RMS {c.rms_db:.1f} dB, true peak "
              f"{c.true_peak_db:.1f} dBTP, range {c.loudness_range_lu:.1f} LU ({c.target}: {verdict}; "
              f"encoded {c.encodes}x); report: {result.compliance_report}")  # fmt: skip
        for check in c.checks:
            if not check.passed:
                print(f"  CHECK {check.name}: {check.measured}, wanted {check.wanted}", file=sys.stderr)
    if result.chapters:
        names = ", ".join(repr(c.title) for c in result.chapters[:3])
        more = f" and {len(result.chapters) - 3} more" if len(result.chapters) > 3 else ""
        print(f"  {len(result.chapters)} chapter(s): {names}{more}")
    print(f"  cue sheet: {result.cue_sheet}")
    for stale in result.stale_removed:
        print(f"troupe: removed {stale}, left by an earlier render that was stopped", file=sys.stderr)
    if result.captions:
        print(f"  word captions: {', '.join(p.name for p in result.captions)}")
    from engine.render.report import summary_lines

    for row in summary_lines(result.report):
        print(f"  {row}", file=sys.stderr if row.startswith("CHECK") else sys.stdout)
    for line in result.fell_back:
        print(f"  cue {line.cue_index} ({line.role}): espeak-ng stood in ({line.fallback})", file=sys.stderr)
    for line in result.failed:
        print(f"  FAILED cue {line.cue_index} ({line.role}): {line.error}", file=sys.stderr)
    return 0


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _stop_on_signals() -> None:
    """SIGTERM and SIGHUP (a closed terminal, a service manager) end a show as Ctrl+C does:
    the engine closes, its children go with it and the summary is printed."""
    from engine.core.process import start_resource_tracker

    start_resource_tracker()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)


def _print_messages(monitor) -> None:  # type: ignore[no-untyped-def]
    """The banner's messages (a lost device and its return, failed lines) on stderr; a run
    of the same message (numbers aside) once, with how many more there were."""
    import queue

    from engine.core.errors import message_shape

    runs: list[list] = []  # [message, shape, how many]
    while True:
        try:
            text = monitor.messages.get_nowait()
        except queue.Empty:
            break
        shape = message_shape(text)
        if runs and runs[-1][1] == shape:
            runs[-1][2] += 1
        else:
            runs.append([text, shape, 1])
    for text, _, n in runs:
        more = f" ({n - 1:,} more like it)" if n > 1 else ""
        print(f"troupe: {text}{more}", file=sys.stderr, flush=True)


def cmd_play(args: argparse.Namespace) -> int:
    from engine.audio_io.output import OutputSettings, terminate_portaudio
    from engine.control import EngineSettings, Troupe, wait
    from engine.control.console import KEYS_HELP, command_for, keys, status_line

    _stop_on_signals()

    settings = EngineSettings(
        processes=args.processes,
        output=OutputSettings(args.device, args.block),
        audio_process=not args.in_process_audio,
        policy=args.policy,
        cluster=args.cluster or "",
    )
    troupe = Troupe(settings)
    try:
        chosen = _import_options(args)
        script = wait(troupe.projects.load(args.script or DEMO, options=chosen))
        if args.project:  # --encoding/--styles over what the project saved
            script = wait(troupe.projects.open(args.project, chosen if chosen.to_dict() else None))
        _tell_guess(script)
        wait(troupe.output.open(), 30)
        troupe.transport.play()
        print(f"playing {script.title!r}: {len(script.cues)} lines, {len(script.roles)} roles")
        live = sys.stderr.isatty()  # a terminal: a live status line, and keys for the commands
        if live and sys.stdin.isatty():
            print(KEYS_HELP, file=sys.stderr)
        limit = time.monotonic() + args.seconds if args.seconds else None
        with keys() as pressed:
            while limit is None or time.monotonic() < limit:
                if live:
                    sys.stderr.write("\r\x1b[K")  # the status line gives way to a message
                _print_messages(troupe.monitor)
                snap = troupe.monitor.snapshot()
                if live:
                    width = shutil.get_terminal_size((100, 20)).columns - 1
                    sys.stderr.write(status_line(snap, width))
                    sys.stderr.flush()
                typed = pressed()
                if "q" in typed.lower():
                    break
                for key in typed:
                    command = command_for(key, troupe.transport)
                    if command is not None:
                        command()
                voiced = snap.cues and all(c.state in ("played", "failed") for c in snap.cues)
                if snap.status == "ended" or voiced:
                    break
                time.sleep(0.1 if live else 0.05)
        if live:
            sys.stderr.write("\n")
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # NB: closing is not interrupted twice
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        snap = troupe.monitor.snapshot()
        losses, false_losses, held_s = troupe.output.losses
        troupe.close()
        _print_messages(troupe.monitor)
        terminate_portaudio()
    f = snap.figures
    played = sum(c.state == "played" for c in snap.cues)
    failed = [c for c in snap.cues if c.state == "failed"]
    print(f"played {played} of {len(snap.cues)} lines; late {f.deadline_misses}, failed {len(failed)}, "
          f"stand-in {f.fallbacks}, underruns {f.underruns}, xruns {f.xruns}; output lost {losses} times "
          f"({false_losses} passed by themselves), held {held_s:.1f} s")  # fmt: skip
    for c in failed:
        print(f"  FAILED cue {c.index + 1} ({c.role}): {c.error}", file=sys.stderr)
    fitted = [c for c in snap.cues if c.fit]
    if fitted:
        over = [c for c in fitted if c.fit.startswith("over ")]
        print(f"timed lines fitted to their slots: {len(fitted)}, past slot and overrun {len(over)}")
        for c in over:
            print(f"  OVER cue {c.index + 1} ({c.role}): {c.fit}", file=sys.stderr)
    return 0


def cmd_voices(args: argparse.Namespace) -> int:
    from engine.synthesis.espeak import espeak_variants, espeak_voices
    from engine.synthesis.kokoro import make_kokoro
    from engine.synthesis.piper import make_piper

    piper = make_piper()
    if piper is not None and not args.variants:
        for v in piper.voices():
            print(
                f"piper:{v.voice_id:<25} {v.gender or '-':<6} {v.language or '-':<10} (pitch, rate per role)"
            )
    neural = make_kokoro()
    if neural is not None and not args.variants:
        for v in neural.voices():
            print(
                f"kokoro:{v.voice_id:<24} {v.gender or '-':<6} {v.language or '-':<10} (blend: 0.7*a+0.3*b)"
            )
    rows = espeak_variants() if args.variants else espeak_voices()
    for v in rows:
        print(f"{v.backend}:{v.voice_id:<24} {v.gender or '-':<2} {v.language:<16} {v.name}")
    if not args.variants:
        print("\ncombine a language with a variant, e.g. en-gb-x-rp+f2 (see: voices --variants)")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    import json

    from engine.script import load_script
    from engine.script.report import report_dict, report_text

    script = load_script(args.script, _import_options(args))
    print(json.dumps(report_dict(script), indent=1, ensure_ascii=False) if args.json else report_text(script))
    return 0


def cmd_cast(args: argparse.Namespace) -> int:
    import json

    from engine.cast_report import cast_report, format_report

    script, cast, _edits = _load(args)
    natural = _natural_voices() if args.voices == "auto" else []
    rows = cast_report(script, cast, natural)
    print(json.dumps(rows, indent=1, ensure_ascii=False) if args.json else format_report(rows))
    return 0


def _encoding(value: str) -> str:
    from engine.core.errors import CastError
    from engine.script.options import check_encoding

    try:
        return check_encoding(value)
    except CastError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _voice_name(value: str) -> str:
    import re

    if not re.fullmatch(r"[a-z][a-z0-9_-]{0,31}", value):
        raise argparse.ArgumentTypeError(
            f"{value!r}: a voice name is 1-32 of a-z, 0-9, _ and -, from a letter"
        )
    return value


def cmd_voices_fit(args: argparse.Namespace) -> int:
    import os

    from engine.voicelib.fit import fit, read_clips, save

    folder = args.out or Path(
        os.environ.get("TROUPE_KOKORO_VOICES") or Path.home() / ".local/share/troupe/voices"
    )
    result = fit(args.name, read_clips(args.clips), budget_s=args.minutes * 60)
    path = save(result, folder)
    print(f"{path}: similarity {result.similarity:.3f} to the clips "
          f"(started at {result.similarity_start:.3f}, "
          f"{result.start}); F0 {result.f0_median_hz:.0f} Hz, WER {result.wer:.3f}; "
          f"{result.evaluations} candidates in {result.seconds:.0f} s")  # fmt: skip
    if os.environ.get("TROUPE_KOKORO_VOICES") != str(folder):
        print(f"cast it as kokoro:{args.name} with TROUPE_KOKORO_VOICES={folder}")
    return 0


def cmd_voices_design(args: argparse.Namespace) -> int:
    from engine.voicelib.design import design
    from engine.voicelib.gates import Targets
    from engine.voicelib.lines import JUDGE_LINES

    if args.base == "piper":
        if args.resume:
            from engine.core.errors import TroupeError

            raise TroupeError(
                "voices design: --resume goes on with a Kokoro search; the Piper grid is one pass"
            )
        return _design_piper(args)
    if args.base == "moved":
        return _design_moved(args)
    data = design(args.out, females=args.female, males=args.male, seed=args.seed,
                  budget_s=args.minutes * 60, lines=JUDGE_LINES[: args.lines],
                  targets=Targets(max_cosine=args.max_cosine), resume=args.resume)  # fmt: skip
    genders = [v["gender"] for v in data["voices"]]
    print(f"{len(genders)} voices ({genders.count('female')} female, {genders.count('male')} male) "
          f"in {args.out} after {data['search']['tried']} tries")  # fmt: skip
    return 0


def _design_piper(args: argparse.Namespace) -> int:
    """`voices design --base piper`: the shipped Piper voice's sizes that pass the gates apart
    from the installed Kokoro library, into `--out`/designs.json."""
    from engine.synthesis.kokoro.library import shipped_library
    from engine.voicelib.design import FEMALE_NAMES, MALE_NAMES
    from engine.voicelib.design_piper import (
        default_out,
        design_piper,
        kokoro_library_embeddings,
        piper_voicer,
    )
    from engine.voicelib.gates import Targets
    from engine.voicelib.lines import JUDGE_LINES

    lines = JUDGE_LINES[: args.lines]
    voicer = piper_voicer(seed=args.seed)
    library = shipped_library()
    taken = {v.id for v in library.voices} if library is not None else set()
    names = [n for n in (MALE_NAMES if voicer[2] == "male" else FEMALE_NAMES) if n not in taken]
    out = default_out(args.out)
    targets = Targets(max_cosine=args.max_cosine)
    data = design_piper(out, names, voicer, kokoro_library_embeddings(lines), targets, lines)
    print(f"{len(data['voices'])} voices on piper:{voicer[1]} in {out}")
    return 0


def _design_moved(args: argparse.Namespace) -> int:
    """`voices design --base moved`: the shipped library with voices of the other gender made
    from its own (the model's pitch and the speaker's size moved), into `--out`."""
    from engine.core.errors import TroupeError
    from engine.core.types import SAMPLE_RATE_HZ
    from engine.synthesis.kokoro.library import shipped_library
    from engine.synthesis.piper.library import shipped_designs
    from engine.voicelib.design import FEMALE_NAMES, MALE_NAMES, kokoro_voicer
    from engine.voicelib.design_moved import design_moved
    from engine.voicelib.design_piper import piper_voicer
    from engine.voicelib.gates import Targets, measure, speaker_embedding
    from engine.voicelib.lines import JUDGE_LINES

    library = shipped_library()
    if library is None:
        raise TroupeError(
            "voices design --base moved: the Kokoro library is not installed (the neural extra)"
        )
    lines = JUDGE_LINES[: args.lines]
    joe, base, _gender = piper_voicer(seed=args.seed)
    reference = measure(joe(0.0, lines), SAMPLE_RATE_HZ, lines)
    others = {f"piper:{base}": reference.embedding}
    for d in shipped_designs().values():
        others[d.id] = speaker_embedding(joe(d.resample_st, lines), SAMPLE_RATE_HZ)
    from engine.synthesis.kokoro.onnx_model import shipped_model_file
    from engine.synthesis.kokoro.pitch_graph import pitched_model

    shipped = shipped_model_file()
    if not isinstance(shipped, Path) or pitched_model(shipped) is None:
        raise TroupeError("voices design --base moved: the model's pitch cannot be moved here (the onnx "
                          "package and a writable models folder are needed); see the log")  # fmt: skip
    voice, _packs = kokoro_voicer()
    names = {"female": FEMALE_NAMES, "male": MALE_NAMES}
    targets = Targets(max_cosine=args.max_cosine)
    counts = {"female": args.female, "male": args.male}
    data = design_moved(args.out, library, voice, names, others, reference, targets, lines, counts)
    kept = data["moved"]["kept"]
    print(f"{len(kept)} moved voices ({', '.join(f'{k} from {v}' for k, v in kept.items()) or 'none'}) "
          f"with the library in {args.out}")  # fmt: skip
    return 0


def cmd_desktop(args: argparse.Namespace) -> int:
    from engine import desktop

    report = desktop.install() if args.command == "desktop-install" else desktop.uninstall()
    for path in report.written:
        print(f"wrote {path}")
    for path in report.removed:
        print(f"removed {path}")
    for note in report.notes:
        print(f"note: {note}")
    if args.command == "desktop-install":
        print("Troupe is in the applications menu; scripts open in it with a double-click")
    return 0


def cmd_devices(_args: argparse.Namespace) -> int:
    from engine.audio_io.output import list_output_devices

    for d in list_output_devices():
        print(f"{d['index']:>3}  {d['name']:<40} {d['hostapi']:<28} {d['channels']} ch  "
              f"{d['default_rate_hz']:.0f} Hz")  # fmt: skip
    return 0


def cmd_gui(args: argparse.Namespace) -> int:
    try:
        from app.launch import run_gui
    except ImportError as exc:
        print(f"troupe: the director window is not available ({exc}); "
              "try 'python main.py render' or 'python main.py play'", file=sys.stderr)  # fmt: skip
        return 2
    return run_gui(args)


def cmd_serve(args: argparse.Namespace) -> int:
    import os

    import uvicorn

    from engine.server import SpeechService, SpeechSettings
    from engine.server.http import create_app, metrics_app
    from engine.server.limits import (
        ServerLimits,
        host_allow_list,
        is_loopback,
        serve_in_thread,
        uvicorn_config,
    )

    token = args.token or os.environ.get("TROUPE_TOKEN") or None
    for host in (args.host, args.metrics_host):
        if not is_loopback(host) and not token:
            print(f"troupe serve: binding {host} (beyond loopback) needs --token (or TROUPE_TOKEN)",
                  file=sys.stderr)  # fmt: skip
            return 2
    limits = ServerLimits(max_body_bytes=args.max_body, header_timeout_s=args.header_timeout,
                          keep_alive_s=args.keep_alive, max_connections=args.max_connections,
                          allowed_hosts=tuple(args.allowed_host), body_timeout_s=args.body_timeout,
                          min_body_rate=args.min_body_rate, health_reserve=args.health_reserve,
                          per_client_connections=args.per_client_connections,
                          client_rate=args.client_rate, evict_idle=args.evict_idle,
                          send_timeout_s=args.send_timeout)  # fmt: skip
    settings = SpeechSettings(processes=args.processes, policy=args.policy, scripts_dir=args.scripts_dir,
                              voice_aliases=dict(args.voice_alias), max_client_roles=args.max_client_roles,
                              client_role_idle_s=args.client_role_idle, fifo_tolerance=args.fifo_tolerance,
                              lead_fifo_share=args.lead_share, stream_ahead=args.stream_ahead,
                              cluster=args.cluster or "")  # fmt: skip
    service = SpeechService(settings)
    try:
        if args.script:
            service.load_script(args.script)
        if args.metrics_port:
            hosts = host_allow_list(args.metrics_host, limits.allowed_hosts)
            serve_in_thread(metrics_app(service, token, hosts), args.metrics_host, args.metrics_port, limits)
        app = create_app(service, token, limits, host_allow_list(args.host, limits.allowed_hosts))
        # SIGTERM: requests still waiting get at most 3 s, so the server is gone within 5 s
        uvicorn.Server(uvicorn_config(app, args.host, args.port, limits, log_level="warning",
                                      timeout_graceful_shutdown=3)).run()  # fmt: skip
    finally:
        service.close()
    return 0


def _alias(text: str) -> tuple[str, str]:
    name, eq, voice = text.partition("=")
    if not eq or not name.strip() or not voice.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VOICE (e.g. alloy=en-gb+f3), got {text!r}")
    return name.strip(), voice.strip()


def cmd_probe(args: argparse.Namespace) -> int:
    import os

    from engine.server import probe

    token = args.token or os.environ.get("TROUPE_TOKEN") or None
    interval = probe.parse_interval(args.interval)
    if args.mode == "once":
        data = probe.once(args.url, interval, token)
        if args.json:
            print(probe.dumps(data))
        else:
            for k, v in data.items():
                print(f"{k:>16}: {v}")
        return 0
    probe.live(args.url, interval, token, args.duration)
    return 0


def _ranged(kind: type[int] | type[float], lo: float, hi: float, unit: str) -> Callable[[str], float]:
    """An argparse type: a number of `kind` from `lo` to `hi`, else one clear message."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            number = ("a whole number" if kind is int else "a number") + (f" of {unit}" if unit else "")
            raise argparse.ArgumentTypeError(f"expected {number}, got {text!r}") from None
        if not lo <= value <= hi:
            span = f"{lo:g} to {hi:g}" + (f" {unit}" if unit else "")
            raise argparse.ArgumentTypeError(f"expected {span}, got {text}")
        return value

    return parse


WORKERS = _ranged(int, 1, 64, "processes")
SECONDS = _ranged(float, 0, 86_400, "seconds")


def cmd_build_engine(args: argparse.Namespace) -> int:
    from engine.synthesis.kokoro.export import build_engine

    result = build_engine(args.weights, args.out, args.max_batch)
    print(f"{result.message} (export {result.export_s:.1f} s)")
    print(f"use it with: TROUPE_KOKORO_ONNX={result.onnx_path} python main.py ...")
    return 0


CLUSTER_HELP = (
    "voice on the Ray cluster at ADDRESS (HOST:6379, from 'ray start --head'), one worker per node "
    "voicing every backend the cast uses, with as many espeak-ng processes as the node has CPUs "
    "(or --processes); 'auto': this machine's cluster, or a local one"
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="troupe", description="Live multi-role AI voice drama.")
    p.add_argument("--smoke", action="store_true", help="GUI self-test: open, play 2 s, exit")
    p.add_argument("--open", dest="gui_script", type=Path, help="script to open in the window")
    p.add_argument("--device", help="window's output device: name, host API (e.g. JACK) or index")
    p.add_argument(
        "--in-process-audio",
        action="store_true",
        help="run the output stream in this process (debugging; default: its own process)",
    )
    p.add_argument("--audio-process", action="store_true", help=argparse.SUPPRESS)  # the default now
    p.add_argument("--processes", type=WORKERS, default=1, help="espeak-ng worker processes (1..64)")
    sub = p.add_subparsers(dest="command")

    def script_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("script", nargs="?", type=Path, help="script file (default: the demo)")
        sp.add_argument("--project", type=Path, help="project file with a saved cast")
        sp.add_argument("--processes", type=WORKERS, default=1, help="espeak-ng worker processes (1..64)")
        sp.add_argument("--voices", choices=["auto", "espeak"], default="auto",
                        help="roles the project does not cast: auto: every role a natural voice "
                        "(Kokoro's voice library, Piper) of its guessed gender; espeak: every role "
                        "espeak-ng (a fast draft)")  # fmt: skip
        import_args(sp)

    def import_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--encoding", type=_encoding,
                        help="the file's encoding (e.g. cp1252, latin-1, shift_jis); default: a BOM, "
                        "UTF-8, else a guess the import report shows")  # fmt: skip
        sp.add_argument("--styles", metavar="NAMES",
                        help="ASS/SSA: the comma-separated styles spoken as dialogue (default: "
                        "classified by name and use; `import --report` lists them)")  # fmt: skip

    r = sub.add_parser("render", help="render a script offline (WAV, FLAC, MP3, Opus, M4B)")
    script_args(r)
    r.add_argument("-o", "--output", type=Path, required=True,
                   help="the mix: .wav .flac .mp3 .opus .ogg .m4a .m4b .aac (M4B, AAC: ffmpeg)")  # fmt: skip
    r.add_argument("--stems", type=Path, help="also write stems into this folder (off by default)")
    r.add_argument("--cluster", metavar="ADDRESS", help=CLUSTER_HELP)
    r.add_argument("--stem-mode", choices=["roles", "clips"], default="roles",
                   help="roles: a file per role (mono unless panned); clips: a file per line")  # fmt: skip
    r.add_argument("--stem-format", choices=["flac", "wav"], default="flac", help="stems' format (flac)")
    r.add_argument("--loudness", metavar="TARGET",
                   help="normalise the mix: acx (-20 LUFS, -3 dBTP), ebu (-23, -1), podcast (-16, -1) "
                        "or a level such as -18")  # fmt: skip
    r.add_argument("--sample-rate", type=int, choices=[22_050, 24_000, 44_100, 48_000], default=48_000,
                   help="the files' sample rate in Hz (48000; 44100 for ACX audiobooks; 22050 is "
                   "espeak-ng's own: no resampling)")  # fmt: skip
    r.add_argument(
        "--channels",
        type=int,
        choices=[1, 2],
        default=2,
        help="the mix's channels (2; 1: mono, pan ignored, stems mono)",
    )
    r.add_argument("--sample-format", choices=["s16", "s24", "f32"], default="s24",
                   help="WAV/FLAC samples: 16-bit, 24-bit (default) or 32-bit float (WAV only)")  # fmt: skip
    r.add_argument("--gap", type=_ranged(float, 0, 10, "seconds"), default=0.35,
                   help="pause between lines, 0..10 seconds")  # fmt: skip
    r.add_argument("--check", action="store_true",
                   help="listen to every line (speech recognition, the asr extra): mark lines whose "
                        "words were not all heard, write word-timed captions and a report")  # fmt: skip
    r.add_argument(
        "--retake", action="store_true", help="voice a line marked check once more (implies --check)"
    )
    r.add_argument("--no-fit", action="store_true",
                   help="timed scripts (SRT, VTT, ASS): lines as voiced, not fitted to slots")  # fmt: skip
    r.add_argument("--max-overrun", type=_ranged(float, 0, 5, "seconds"), default=0.5,
                   help="how far a fitted line may run past its slot, 0..5 s (default 0.5)")  # fmt: skip
    r.add_argument("--no-levelling", action="store_true",
                   help="leave each voice at its backend's own level (by default every role's speech is "
                        "brought to one level before the mix, its gain on top)")  # fmt: skip
    r.add_argument("--title", help="the mix's title tag (default: the script's title page, or its name)")
    r.add_argument("--author", help="the mix's author/artist tag (default: the title page's Author)")
    r.add_argument("--cover", type=Path, help="cover art for the mix's tags: a JPEG or PNG image")
    r.add_argument("--chapter-minutes", type=_ranged(float, 0, 600, "minutes"), default=3,
                   help="without Fountain sections (# Act One), scenes are grouped into chapters of "
                        "at least this length, 0..600 minutes (default 3; 0: a chapter a scene)")  # fmt: skip
    r.set_defaults(func=cmd_render)

    im = sub.add_parser("import", help="read a script and report what would be voiced (lines, roles, "
                        "skipped events, guesses, warnings) without voicing it")  # fmt: skip
    im.add_argument("script", type=Path, help="script file")
    im.add_argument("--report", action="store_true", help="print the import report (the default)")
    im.add_argument("--json", action="store_true", help="the report as JSON")
    import_args(im)
    im.set_defaults(func=cmd_import)

    ca = sub.add_parser("cast", help="show how a script is cast (voices, genders and why) without voicing it")
    script_args(ca)
    ca.add_argument("--json", action="store_true", help="one JSON list, a role an entry")
    ca.set_defaults(func=cmd_cast)

    pl = sub.add_parser("play", help="play a script in real time")
    script_args(pl)
    pl.add_argument("--device", help="output device name, host API (e.g. JACK) or index")
    pl.add_argument("--block", type=_ranged(int, 16, 8192, "frames"), default=256,
                    help="frames per callback, 16..8192")  # fmt: skip
    pl.add_argument(
        "--in-process-audio",
        action="store_true",
        help="run the output stream in this process (debugging; default: its own process)",
    )
    pl.add_argument("--audio-process", action="store_true", help=argparse.SUPPRESS)  # the default now
    pl.add_argument("--seconds", type=SECONDS, default=0.0, help="stop after this long (0: at the end)")
    pl.add_argument("--policy", default="role_aware", choices=["role_aware", "fifo"])
    pl.add_argument("--cluster", metavar="ADDRESS", help=CLUSTER_HELP + " (the mix and the output stay here)")
    pl.set_defaults(func=cmd_play)

    vo = sub.add_parser("voices", help="list voices; design the voice library")
    vo.add_argument("--variants", action="store_true", help="espeak-ng's voice variants")
    vo.set_defaults(func=cmd_voices)
    vsub = vo.add_subparsers(dest="voices_command")
    vd = vsub.add_parser("design", help="search Kokoro's style space for voices that pass the gates "
                         "(needs the asr and design extras; about a minute a voice on 2 cores)")  # fmt: skip
    vd.add_argument("--out", type=Path, required=True,
                    help="folder for library.json and library.npz (--base piper: designs.json)")  # fmt: skip
    vd.add_argument("--female", type=_ranged(int, 0, 18, "voices"), default=12, help="female voices (12)")
    vd.add_argument("--male", type=_ranged(int, 0, 18, "voices"), default=12, help="male voices (12)")
    vd.add_argument("--seed", type=int, default=2026, help="the search's seed (2026: the shipped library)")
    vd.add_argument("--minutes", type=_ranged(float, 0.1, 24 * 60, "minutes"), default=90.0,
                    help="stop searching after this long, keeping what passed (90)")  # fmt: skip
    vd.add_argument("--lines", type=_ranged(int, 5, 20, "lines"), default=20,
                    help="lines of the fixed set each voice is judged on (20)")  # fmt: skip
    vd.add_argument("--max-cosine", type=_ranged(float, 0.5, 0.99, ""), default=0.80,
                    help="a voice's speaker-embedding cosine to every other, at most (0.80)")  # fmt: skip
    vd.add_argument("--resume", action="store_true", help="go on from the library already in --out")
    vd.add_argument("--base", choices=("kokoro", "piper", "moved"), default="kokoro",
                    help="kokoro: search the style space (library.json, library.npz); piper: the shipped "
                         "Piper voice's sizes, apart from the installed library (designs.json; only --out, "
                         "--seed, --lines and --max-cosine apply); moved: the installed library with voices "
                         "of the other gender made from its own, the model's pitch and the size moved "
                         "(library.json, library.npz; --female/--male: the most to add)")  # fmt: skip
    vd.set_defaults(func=cmd_voices_design)
    vf = vsub.add_parser("fit", help="fit a Kokoro voice to 10-60 s of a speaker's recordings")
    vf.add_argument("name", type=_voice_name, help="the new voice's name (then cast it as kokoro:NAME)")
    vf.add_argument("clips", type=Path, nargs="+", help="WAV/FLAC recordings of one speaker")
    vf.add_argument("--out", type=Path, help="voices folder (default: $TROUPE_KOKORO_VOICES, "
                    "else ~/.local/share/troupe/voices; cast from it with TROUPE_KOKORO_VOICES)")  # fmt: skip
    vf.add_argument("--minutes", type=_ranged(float, 0.2, 60, "minutes"), default=10.0,
                    help="time the search may take (10)")  # fmt: skip
    vf.set_defaults(func=cmd_voices_fit)
    sub.add_parser("devices", help="list audio output devices").set_defaults(func=cmd_devices)
    di = sub.add_parser("desktop-install", help="add Troupe to this user's applications menu and make "
                        "it open .fountain/.fdx/.srt/.vtt/.ass scripts and projects")  # fmt: skip
    di.set_defaults(func=cmd_desktop)
    sub.add_parser("desktop-uninstall", help="remove what desktop-install added").set_defaults(
        func=cmd_desktop
    )

    sv = sub.add_parser("serve", help="HTTP speech server (OpenAI-compatible) with /metrics")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=_ranged(int, 1, 65_535, ""), default=8080)
    sv.add_argument("--metrics-port", type=_ranged(int, 0, 65_535, ""), default=9090,
                    help="0: only /metrics on --port")  # fmt: skip
    sv.add_argument("--metrics-host", default="127.0.0.1",
                    help="the metrics port's address (beyond loopback: needs --token)")  # fmt: skip
    sv.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                    help="on loopback, also answer requests whose Host is NAME (repeatable)")  # fmt: skip
    sv.add_argument("--voice-alias", action="append", type=_alias, default=[], metavar="NAME=VOICE",
                    help="an OpenAI voice name for a voice, e.g. alloy=en-gb+f3 (repeatable)")  # fmt: skip
    sv.add_argument("--max-client-roles", type=_ranged(int, 0, 100_000, "roles"), default=64,
                    help="roles clients may add with PUT /v1/roles (default 64)")  # fmt: skip
    sv.add_argument("--client-role-idle", type=_ranged(float, 1, 30 * 86_400, "seconds"), default=3600.0,
                    help="a client-added role unused this long is dropped (default 3600 s)")  # fmt: skip
    sv.add_argument("--max-body", type=_ranged(int, 1024, 64 << 20, "bytes"), default=64 * 1024,
                    help="largest request body, chunked or not (default 65536)")  # fmt: skip
    sv.add_argument("--header-timeout", type=_ranged(float, 0.5, 600, "seconds"), default=10.0,
                    help="a connection must send its request head within this (default 10 s)")  # fmt: skip
    sv.add_argument("--keep-alive", type=_ranged(int, 1, 600, "seconds"), default=5,
                    help="idle keep-alive connections close after this long (default 5 s)")  # fmt: skip
    sv.add_argument("--max-connections", type=_ranged(int, 1, 100_000, "connections"), default=512,
                    help="open connections beyond this (and the health reserve) are closed at once "
                    "(default 512)")  # fmt: skip
    sv.add_argument("--per-client-connections", type=_ranged(int, 1, 100_000, "connections"), default=256,
                    help="connections one client address may hold (default 256: half the cap)")  # fmt: skip
    sv.add_argument("--health-reserve", type=_ranged(int, 0, 1000, "connections"), default=16,
                    help="connections past the cap that answer only /healthz and /readyz "
                    "(default 16)")  # fmt: skip
    sv.add_argument("--body-timeout", type=_ranged(float, 0.5, 600, "seconds"), default=10.0,
                    help="a request body must arrive within this after its head, plus its length at "
                    "--min-body-rate (default 10 s)")  # fmt: skip
    sv.add_argument("--min-body-rate", type=_ranged(int, 1, 1 << 30, "bytes a second"), default=16384,
                    help="the slowest a body may arrive past --body-timeout "
                    "(default 16384 bytes/s)")  # fmt: skip
    sv.add_argument("--evict-idle", action=argparse.BooleanOptionalAction, default=True,
                    help="at the cap, a new connection closes the one that waited longest without "
                    "sending work (idle, or a body trickling in) instead of being refused "
                    "(default on)")  # fmt: skip
    sv.add_argument("--client-rate", type=_ranged(float, 0, 100_000, "requests a second"), default=0.0,
                    help="requests a second one client address may make (bursts of twice that; "
                    "429 past it); 0: no quota (default)")  # fmt: skip
    sv.add_argument("--send-timeout", type=_ranged(float, 0.5, 3600, "seconds"), default=30.0,
                    help="a client that takes none of its answer for this long is cut off and the "
                    "rest of its answer withdrawn (default 30 s)")  # fmt: skip
    sv.add_argument("--stream-ahead", type=_ranged(int, 0, 10_000, "chunks"), default=2,
                    help="a streamed answer queues at most this many sentences beyond the one being "
                    "sent, so a slow reader holds little here (0: all at once; default 2)")  # fmt: skip
    sv.add_argument("--token", help="bearer token clients must send (or TROUPE_TOKEN)")
    sv.add_argument("--script", type=Path, help="script whose roles are cast at start")
    sv.add_argument("--scripts-dir", type=Path, default=Path("."), help="POST /v1/script reads only here")
    sv.add_argument("--processes", type=WORKERS, default=1, help="espeak-ng worker processes (1..64)")
    sv.add_argument("--policy", default="role_aware", choices=["role_aware", "fifo"])
    sv.add_argument("--fifo-tolerance", type=_ranged(float, 0, 10, ""), default=0.35,
                    help="role-aware: a client's request waits at most this much longer than "
                         "arrival order would make it (0.35: 35%%), so higher weights go first")  # fmt: skip
    sv.add_argument("--lead-share", type=_ranged(float, 0, 10, ""), default=0.3,
                    help="role-aware: the lead's (highest weight's) requests are due at this share "
                         "of the wait arrival order would give them (0.3: 30%%)")  # fmt: skip
    sv.add_argument("--cluster", metavar="ADDRESS", help=CLUSTER_HELP)
    sv.set_defaults(func=cmd_serve)

    be = sub.add_parser("build-engine", help="export Kokoro to ONNX and build a TensorRT engine")
    be.add_argument("--weights", type=Path, required=True, help="folder with config.json and .pth weights")
    be.add_argument("--out", type=Path, default=Path("kokoro-engine"), help="output folder")
    be.add_argument("--max-batch", type=_ranged(int, 1, 256, "lines"), default=16,
                    help="lines the ONNX backend voices in one call, 1..256 (default 16)")  # fmt: skip
    be.set_defaults(func=cmd_build_engine)

    pr = sub.add_parser("probe", help="live view of a running server's scheduler")
    pr.add_argument("--mode", choices=["live", "once"], default="live")
    pr.add_argument("--interval", default="100ms", help="e.g. 100ms, 1s")
    pr.add_argument("--url", default="http://127.0.0.1:9090")
    pr.add_argument("--json", action="store_true", help="with --mode once: one JSON snapshot")
    pr.add_argument("--duration", type=SECONDS, default=0.0, help="live mode: stop after this long")
    pr.add_argument("--token", help="bearer token (or TROUPE_TOKEN)")
    pr.set_defaults(func=cmd_probe)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from engine.core.errors import TroupeError
    from engine.core.memory import bound_render_heap, keep_large_blocks_mapped

    if args.command != "render":
        # freed audio goes back to the system (a show, a server). NB: not for a render: it
        # frees nothing it keeps, and a fresh mapping per block cost it 2.5 million page
        # faults (5 s of system time per hour of show, against 1 s; peak memory the same)
        keep_large_blocks_mapped()
    else:
        bound_render_heap()

    try:
        if args.command is None:
            return cmd_gui(args)
        return int(args.func(args))
    except TroupeError as exc:
        print(f"troupe: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
