"""Per-thread state with defaults, for the backend's settings that each thread keeps."""
import threading


def per_thread(**defaults):
    """A threading.local whose attributes read `defaults` on a thread that has not set them.

    The default is a class attribute, so reading it is an ordinary attribute hit. The usual
    getattr(local, name, default) raises and catches an AttributeError on such a thread, several
    times slower, and MKL's products and the threaded kernels ask at every call
    (benchmarks/README.md: generate_nocache).
    """
    return type("PerThread", (threading.local,), dict(defaults))()
