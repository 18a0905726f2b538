"""The ``nasx`` command line: list, show, export, plot, resume and serve experiments; run pipelines;
write a kept trial's trained model to a file (``nasx model``).

No command writes to an experiment's database: they read it with SQLite's read-only mode
(``plot`` writes pictures, into ``EXP/plots`` by default; ``resume`` starts the experiment's own
script again, which does write), except ``run``, which runs the experiments of a pipeline file.
Problems with a directory are one line on stderr and exit code 1; usage errors exit with 2, as
argparse does.

    >>> main(['list', '/nonexistent'])
    1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TypeAlias

from ._errors import NasxError

PROG = "nasx"


class CliError(NasxError):
    """A problem worth one line to the user (exit code 1)."""


# ----------------------------------------------------------------------------- helpers
def _read(path: str):
    from nasx.experiment.storage.readonly import ExperimentReadError, read_experiment

    try:
        return read_experiment(path)
    except ExperimentReadError as e:
        raise CliError(str(e)) from None


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def _output_width(asked: int | None) -> int | None:
    """Characters per line for tables of archs: ``--width N`` (0: no limit); by default the
    terminal's width when the output is a terminal, else no limit (a file gets whole archs)."""
    if asked is not None:
        if asked < 0:
            raise CliError(f"--width must be 0 (no limit) or a number of columns, got {asked}")
        return asked or None
    if not sys.stdout.isatty():
        return None
    return max(60, shutil.get_terminal_size().columns)


def _ago(ts: float | None) -> str:
    if not ts:
        return "-"
    s = max(0.0, time.time() - ts)
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n:
            return f"{s / n:.0f}{unit} ago"
    return f"{s:.0f}s ago"


# ----------------------------------------------------------------------------- commands
def cmd_list(args: argparse.Namespace) -> int:
    from nasx.experiment.storage.readonly import (
        ExperimentReadError,
        list_experiments,
        read_experiment,
    )

    root = Path(args.dir)
    try:
        dirs = list_experiments(root, max_depth=args.depth)
    except ExperimentReadError as e:
        raise CliError(str(e)) from None
    if not dirs:
        print(f"no nasx experiments in {root}")
        return 0
    rows = [
        [
            "experiment",
            "kind",
            "strategy",
            "trials",
            "succeeded",
            "failed",
            "running",
            "best",
            "updated",
        ]
    ]
    for d in dirs:
        try:
            exp = read_experiment(d)
        except ExperimentReadError as e:
            rows.append([str(d), "unreadable", str(e)[:40], "", "", "", "", "", ""])
            continue
        counts = exp.counts()
        best = exp.best(1)
        last = max(
            (t.end_time or t.start_time or 0 for t in exp.trials), default=exp.meta.get("created")
        )
        rows.append(
            [
                str(d),
                exp.kind,
                str(exp.meta.get("strategy", "-")),
                str(len(exp.trials)),
                str(counts["succeeded"]),
                str(counts["failed"]),
                str(counts["running"]),
                _fmt(best[0].metric) if best else "-",
                _ago(last),
            ]
        )
    print(_table(rows))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from nasx.experiment.results.table import TrialTable, _clip

    exp = _read(args.exp)
    meta = exp.meta
    width = _output_width(args.width)
    print(f"experiment  {exp.directory}")
    print(f"kind        {exp.kind}")
    print(f"space       {meta.get('space', '-')} ({len(meta.get('search_space', {}))} labels)")
    print(f"strategy    {meta.get('strategy', '-')} (seed {meta.get('strategy_seed')})")
    print(f"direction   {exp.direction}")
    counts = exp.counts()
    print(
        "trials      " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        if exp.trials
        else "trials      none yet"
    )
    if meta.get("keep_weights", "none") != "none":
        from nasx.experiment.storage.weights import describe_kept

        print(
            describe_kept(exp.directory, meta["keep_weights"]).replace(
                "weights kept", "weights    "
            )
        )
    best = exp.best(args.top)
    if best:
        print(f"\nbest {len(best)}:")
        # The evaluator's choices (hyperparameters) get their own column, after the arch's.
        hparams = any(t.hparams for t in best)
        rows = [["id", "metric", "arch", *(["hparams"] if hparams else [])]] + [
            [
                str(t.id),
                _fmt(t.metric),
                json.dumps(t.arch)
                if width is None
                else _clip(json.dumps(t.arch), max(30, width - 20)),
                *([json.dumps(t.hparams)] if hparams else []),
            ]
            for t in best
        ]
        print(_table(rows))
    if exp.trials and not args.brief:
        print()
        text, cut = TrialTable(exp.trials).fitted(width)  # archs stay undecoded: 100k trials
        print(text)
        if cut:
            print(f"(archs cut to {width} columns: --width 0 or `nasx export` prints them whole)")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    exp = _read(args.exp)
    if args.top < 1:
        raise CliError(f"--top must be at least 1, got {args.top}")
    best = exp.best(args.top)
    if not best:
        raise CliError(f"{exp.directory} has no succeeded trial to export yet")
    if args.format == "json":  # the shape of NasExperiment.export_top_trials, plus metrics
        out = json.dumps([_exported(t) for t in best], indent=2)
    else:  # a trial's hyperparameters go on a line of their own, so arch lines stay as they were
        out = "\n".join(
            f"#{t.id}  {_fmt(t.metric)}  {json.dumps(t.arch)}"
            + (f"\n    hparams {json.dumps(t.hparams)}" if t.hparams else "")
            for t in best
        )
    if args.output:
        Path(args.output).write_text(out + "\n")
        print(f"wrote {len(best)} arch(s) to {args.output}")
    else:
        print(out)
    return 0


def _exported(t: Any) -> dict[str, Any]:
    """One trial in ``nasx export --format json``: ``arch`` in NNI's format (the model's labels)
    and ``hparams`` beside it (the evaluator's labels; ``{}`` when it has no choices), as in
    :meth:`nasx.experiment.NasExperiment.export_top_trials`."""
    return {
        "id": t.id,
        "metric": t.metric,
        "metrics": t.metrics,
        "arch": t.arch,
        "hparams": t.hparams,
    }


def cmd_model(args: argparse.Namespace) -> int:
    import torch

    from nasx.experiment.results.loading import model_file
    from nasx.experiment.storage.weights import WeightsError

    exp = _read(args.exp)
    trial: int | str = args.trial
    if trial != "best":
        try:
            trial = int(trial)
        except ValueError:
            raise CliError(f"--trial must be a trial id or 'best', got {trial!r}") from None
    arch = None
    if args.arch is not None:
        try:
            arch = json.loads(args.arch)
        except ValueError as e:
            raise CliError(f"--arch must be a JSON object: {e}") from None
    try:
        content = model_file(exp.directory, trial, arch=arch)
    except (WeightsError, ValueError, KeyError, TypeError) as e:
        raise CliError(str(e)) from None
    if content["trial"] is not None and not content.get("hparams"):
        # weights written before the files carried the evaluator's choices: from the trial's row
        record = next((t for t in exp.trials if t.id == content["trial"]), None)
        content["hparams"] = dict(record.hparams) if record is not None else {}
    out = Path(args.output)
    torch.save(content, out)
    what = "the subnet" if args.arch is not None else f"trial {content['trial']}"
    print(f"wrote the trained model of {what} to {out} ({out.stat().st_size / 2**20:.2f} MiB)")
    print(f"arch     {json.dumps(content['arch'])}")
    if content.get("hparams"):
        print(f"hparams  {json.dumps(content['hparams'])}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from nasx._optional import optional_import

    matplotlib = optional_import("matplotlib", "plot", "nasx plot")
    matplotlib.use("Agg")
    from nasx.plot import charts

    exp = _read(args.exp)
    out = Path(args.output or (exp.directory / "plots"))
    written: list[Path] = []

    def save(fig, name: str) -> None:
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{name}.{args.format}"
        fig.savefig(path, dpi=args.dpi, bbox_inches="tight")
        written.append(path)

    # Each chart is drawn when the experiment has its data: trials with metrics (a multi-trial
    # run), architecture weights logged while a supernet trained (a one-shot run), cells in the
    # best arch (either).
    if charts.has_arch_weights(exp.directory):
        try:
            save(charts.plot_arch_weights(exp.directory), "arch_weights")
        except FileNotFoundError as e:  # TensorBoard logs without arch/ scalars
            print(f"(no architecture weights drawn: {e})", file=sys.stderr)
    _plot_trials(exp, save)
    _plot_best_cells(exp, save, args)
    if not written:
        raise CliError(f"{exp.directory} has no trials yet: nothing to plot")
    for path in written:
        print(path)
    return 0


def _plot_trials(exp: Any, save: Any) -> None:
    """The metric history, learning curves and a Pareto chart per extra metric."""
    from nasx.plot import charts

    if not any(t.metric is not None for t in exp.trials):
        return
    save(charts.plot_metric_history(exp.trials, direction=exp.direction), "metric_history")
    if any(t.intermediates for t in exp.trials):
        save(charts.plot_learning_curves(exp.trials, direction=exp.direction), "learning_curves")
    for name in charts.metric_names(exp.trials):
        if name != "default":
            directions = ("minimize", exp.direction)
            save(
                charts.plot_pareto(exp.trials, name, "default", directions),
                f"pareto_{_safe(name)}",
            )


def _plot_best_cells(exp: Any, save: Any, args: argparse.Namespace) -> None:
    """The cells of the best arch (a DARTS-like space's normal and reduction cells)."""
    from nasx.plot.cells import plot_cell, plot_double_cells
    from nasx.plot.graph import cell_names

    best = exp.best(1)
    cells = cell_names(best[0].arch) if best else []
    merge_op = "loose_end" if args.loose_end else "all"
    if {"normal", "reduce"} <= set(cells):
        save(plot_double_cells(best[0].arch, merge_op=merge_op, backend=args.backend), "best_cells")
        return
    for cell in cells:
        fig = plot_cell(best[0].arch, cell, merge_op=merge_op, backend="matplotlib")
        save(fig, f"best_cell_{_safe(cell)}")


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def cmd_resume(args: argparse.Namespace) -> int:
    exp = _read(args.exp)
    launch = exp.meta.get("launch")
    if not launch or not launch.get("argv"):
        raise CliError(
            f"{exp.directory} does not record how it was started (made by an older nasx): re-run "
            "your script with NasExperiment(..., resume=True)"
        )
    argv, cwd = list(launch["argv"]), launch.get("cwd") or "."
    script = argv[0]
    if not script.endswith(".py") or not (Path(cwd) / script).is_file():
        raise CliError(
            f"{exp.directory} was started from {script!r} (in {cwd}), not a script file that can be "
            "run again: re-run it with NasExperiment(..., resume=True)"
        )
    command = [args.python or sys.executable, *argv]
    counts = exp.counts()
    print(
        f"resuming {exp.directory}: {counts['succeeded']} succeeded, {counts['failed']} failed, "
        f"{counts['running']} interrupted; running {' '.join(command)} in {cwd}",
        flush=True,
    )
    if args.dry_run:
        return 0
    return subprocess.call(command, cwd=cwd)


def cmd_tensorboard(args: argparse.Namespace) -> int:
    from nasx.experiment.display.tensorboard import TB_DIR, write_trials

    exp = _read(args.exp)
    try:
        n = write_trials(exp.directory, exp.trials, overwrite=args.overwrite)
    except ImportError as e:
        raise CliError(str(e)) from None
    print(
        f"logged {n} trial(s) to {exp.directory / TB_DIR}; view with: tensorboard --logdir {exp.directory}"
    )
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    experiments = [_read(p).directory for p in args.exp]
    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.allow_remote:
        raise CliError(
            f"--host {args.host} would let other machines read these experiments; add --allow-remote "
            "if that is what you want (anyone who can reach the port can read every trial)"
        )
    from nasx.dashboard.server import ServeError, serve

    try:
        return serve(experiments, host=args.host, port=args.port, open_browser=args.open)
    except ServeError as e:  # port in use, an address this machine does not have
        raise CliError(str(e)) from None


def cmd_run(args: argparse.Namespace) -> int:
    from nasx.experiment import ExperimentDirError
    from nasx.pipeline import (
        PipelineError,
        check_arguments,
        load,
        no_success_message,
        run_pipeline,
    )

    try:
        cfg = load(args.file)
        steps = args.steps.split(",") if args.steps else None
        unknown = [s for s in steps or [] if s not in cfg["pipeline"]]
        if unknown:
            raise CliError(
                f"--steps {unknown[0]!r} is not a step of {args.file}: {cfg['pipeline']}"
            )
        try:  # before anything runs: the space and strategy the file's arguments build
            check_arguments(cfg)
        except PipelineError as e:
            raise CliError(f"{args.file}: {e}") from None
        if args.check:
            print(f"{args.file}: valid; steps {', '.join(steps or cfg['pipeline'])}")
            return 0
        results = run_pipeline(cfg, steps=steps, progress=not args.quiet)
    except (PipelineError, FileNotFoundError, ExperimentDirError) as e:
        raise CliError(str(e)) from None
    for step, exp in results.items():
        failed = no_success_message(step, exp)
        if failed is not None:
            raise CliError(failed + f"; `nasx show {exp.workdir}` has the full errors")
        best = exp.export_top_models(1)
        print(
            f"{step}: {len(exp.trials())} trials in {exp.workdir}; best arch {json.dumps(best[0])}"
        )
    return 0


# ----------------------------------------------------------------------------- parser
# What add_subparsers returns; each _add_<command> below adds one command's parser to it.
_Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _add_list(sub: _Commands) -> None:
    p = sub.add_parser(
        "list", help="list the experiments under a directory", description="List experiments."
    )
    p.add_argument(
        "dir",
        nargs="?",
        default="nasx_experiments",
        help="where to look (default: nasx_experiments)",
    )
    p.add_argument(
        "--depth", type=int, default=2, help="directory levels searched below DIR (default 2)"
    )
    p.set_defaults(func=cmd_list)


def _add_show(sub: _Commands) -> None:
    p = sub.add_parser(
        "show", help="status, best trials and the trial table", description="Show one experiment."
    )
    p.add_argument("exp", help="experiment directory")
    p.add_argument("--top", type=int, default=5, help="best trials listed (default 5)")
    p.add_argument("--brief", action="store_true", help="leave out the full trial table")
    p.add_argument(
        "--width",
        type=int,
        default=None,
        help="cut archs so that lines fit N columns (0: never cut; default: the terminal's "
        "width, and whole archs when the output is not a terminal)",
    )
    p.set_defaults(func=cmd_show)


def _add_export(sub: _Commands) -> None:
    p = sub.add_parser(
        "export",
        help="print the best archs (and their hyperparameters)",
        description="Export the best archs. json: a list of {id, metric, metrics, arch, hparams} "
        "('arch' in NNI's format, 'hparams' the evaluator's choices, {} when none). text: one "
        "'#ID  METRIC  ARCH-JSON' line per trial, followed by an indented 'hparams JSON' line when "
        "the trial has hyperparameters.",
    )
    p.add_argument("exp", help="experiment directory")
    p.add_argument("--top", type=int, default=1, help="how many archs (default 1)")
    p.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default text)"
    )
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.set_defaults(func=cmd_export)


def _add_model(sub: _Commands) -> None:
    p = sub.add_parser(
        "model",
        help="write a kept trial's trained model (state dict, arch, space) to a file",
        description="Write the trained model of a trial kept with keep_weights (or a one-shot "
        "subnet with its inherited weights) to a file: torch.load(FILE, weights_only=True) gives "
        "{'state_dict', 'arch', 'hparams', 'space', ...}; nasx.experiment.load_model reads the "
        "experiment itself.",
    )
    p.add_argument("exp", help="experiment directory")
    p.add_argument(
        "--trial",
        default="best",
        help="trial id (a one-shot run: an exported arch's id) or 'best' (default best)",
    )
    p.add_argument(
        "--arch", help="one-shot experiments: any subnet's arch as JSON (default: --trial's)"
    )
    p.add_argument("-o", "--output", required=True, help="the file to write (e.g. model.pt)")
    p.set_defaults(func=cmd_model)


def _add_plot(sub: _Commands) -> None:
    p = sub.add_parser(
        "plot", help="write the charts (and cells of the best arch)", description="Write charts."
    )
    p.add_argument("exp", help="experiment directory")
    p.add_argument("-o", "--output", help="folder for the pictures (default EXP/plots)")
    p.add_argument(
        "--format",
        choices=("png", "svg", "pdf"),
        default="png",
        help="picture format (default png)",
    )
    p.add_argument("--dpi", type=int, default=100, help="resolution of PNGs (default 100)")
    p.add_argument(
        "--backend",
        choices=("auto", "graphviz", "matplotlib"),
        default="auto",
        help="cell drawing backend",
    )
    p.add_argument(
        "--loose-end",
        action="store_true",
        help="cells concatenate only unused nodes (NASNet, ENAS)",
    )
    p.set_defaults(func=cmd_plot)


def _add_resume(sub: _Commands) -> None:
    p = sub.add_parser(
        "resume",
        help="start the experiment's script again (it resumes)",
        description="Run the command that created EXP again, in its directory; the script must pass resume=True.",
    )
    p.add_argument("exp", help="experiment directory")
    p.add_argument("--dry-run", action="store_true", help="print the command, do not run it")
    p.add_argument("--python", help="interpreter to use (default: this one)")
    p.set_defaults(func=cmd_resume)


def _add_tensorboard(sub: _Commands) -> None:
    p = sub.add_parser(
        "tensorboard",
        help="write TensorBoard logs of the stored trials",
        description="Write each finished trial (curve, metrics, arch as hparams) under EXP/tensorboard.",
    )
    p.add_argument("exp", help="experiment directory")
    p.add_argument("--overwrite", action="store_true", help="rewrite trials logged before")
    p.set_defaults(func=cmd_tensorboard)


def _add_serve(sub: _Commands) -> None:
    p = sub.add_parser(
        "serve",
        help="a read-only dashboard in the browser",
        description="Serve a read-only dashboard of one or more experiments on http://127.0.0.1:PORT.",
    )
    p.add_argument("exp", nargs="+", help="experiment directories (several are shown side by side)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    p.add_argument(
        "--allow-remote", action="store_true", help="needed to bind an address other machines reach"
    )
    p.add_argument("--open", action="store_true", help="open the page in a web browser")
    p.set_defaults(func=cmd_serve)


def _add_run(sub: _Commands) -> None:
    p = sub.add_parser(
        "run",
        help="run a pipeline described in a YAML file (search, then full training)",
        description="Run the steps of a pipeline YAML file (see nasx.pipeline and tutorials/pipelines/).",
    )
    p.add_argument("file", help="the pipeline YAML file")
    p.add_argument("--steps", help="comma-separated steps to run (default: the file's pipeline)")
    p.add_argument("--check", action="store_true", help="validate the file, run nothing")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Look at and drive nasx experiments (directories with nasx.db).",
    )
    from nasx import __version__  # the one place the version is written

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # one function per command above, in the order `nasx --help` lists them
    for add_command in (
        _add_list,
        _add_show,
        _add_export,
        _add_model,
        _add_plot,
        _add_resume,
        _add_tensorboard,
        _add_serve,
        _add_run,
    ):
        add_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``nasx`` command line; returns the exit code.

    >>> import tempfile
    >>> main(['list', tempfile.mkdtemp()])  # doctest: +ELLIPSIS
    no nasx experiments in ...
    0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    from nasx.experiment.storage.stored import DamagedTrialError

    try:
        return args.func(args)
    except (CliError, DamagedTrialError) as e:
        print(f"{PROG} {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `nasx show EXP | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
