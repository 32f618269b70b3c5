"""What the examples share: their --help formatter, their progress bar, their curve picture
(tqdm and matplotlib when installed; each example still runs without them) and the BLAS
thread setting of those whose matrices are small."""
import argparse
import os
import sys

SMALL_MATRICES_NOTE = ("BLAS runs on one thread (OPENBLAS_NUM_THREADS=1, OMP_NUM_THREADS=1) "
                       "unless you set those variables: its matrices are small.")


def one_blas_thread():
    """For an example whose matrices are small: BLAS (and OpenMP) on one thread, set before NumPy
    loads, so call it before importing tensorgrad. A second thread only adds synchronisation
    there, and on a busy 2-core machine its waiting made a run up to ten times slower
    (docs/examples.md). A value the user set is kept. Returns whether it could still apply."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    return "numpy" not in sys.modules


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter,
                    argparse.RawDescriptionHelpFormatter):
    """--help prints the whole docstring as written, and every option's default."""


class Progress:
    """A tqdm bar when tqdm is installed; otherwise a plain line every 5% of the run.

    update(step, **stats) shows each stat by its name, so a label means one thing everywhere:
    `loss` (training), `val_loss`, `val_acc`; None shows as "-" (not measured yet)."""

    def __init__(self, start, total, quiet=False):
        self.total, self.every, self.quiet = total, max(1, total // 20), quiet
        self.bar = None
        try:
            from tqdm import tqdm
            self.tqdm = None if quiet else tqdm
        except ImportError:
            self.tqdm = None

    def update(self, step, **stats):
        shown = {name: "-" if value is None else f"{value:,.0f}" if abs(value) >= 1000
                 else f"{value:.3f}" for name, value in stats.items()}
        if self.bar is None and self.tqdm is not None:
            # started after the first step, which may wait for kernels to compile or load:
            # its time would make the bar's rate and estimate wrong for the whole run
            self.bar = self.tqdm(total=self.total, initial=step, unit="step", dynamic_ncols=True)
        if self.bar is not None:
            self.bar.update(step - self.bar.n)
            self.bar.set_postfix(shown, refresh=False)
        elif not self.quiet and (step % self.every == 0 or step == self.total):
            print(f"step {step}/{self.total} | " + " | ".join(f"{k} {v}" for k, v in shown.items()),
                  flush=True)

    def write(self, line):
        """Print a line (an epoch's summary, say) without breaking the bar."""
        if self.bar is not None:
            self.bar.write(line)
        else:
            print(line, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def plot_curves(path, title, xlabel, left, right=None):
    """One PNG at `path`: left = (ylabel, {label: (xs, ys)}) on the left axis and, if given,
    right = (ylabel, {label: (xs, ys)}) on a second axis (an accuracy beside a loss); says so
    when matplotlib is missing instead."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: no {path} (pip install matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    axes = [(ax, left)] + ([(ax.twinx(), right)] if right is not None else [])
    color = 0  # one colour per curve across both axes, so the legend tells them apart
    for axis, (ylabel, curves) in axes:
        for label, (xs, ys) in curves.items():
            axis.plot(xs, ys, "o-" if len(xs) <= 40 else "-", ms=3, color=f"C{color}",
                      label=label)
            color += 1
        axis.set_ylabel(ylabel)
    ax.set(xlabel=xlabel, title=title)
    ax.grid(alpha=0.3)
    fig.legend(loc="upper center", bbox_to_anchor=(0.5, 0.88))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"curves: {path}")
