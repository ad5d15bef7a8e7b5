"""Tensors to and from the raw files the workers read and write: little-
endian bytes, C order, described by a JSON manifest (docs/evaluation.md)."""
import json
import os
import stat
from concurrent.futures import ThreadPoolExecutor

import torch

# Files of GPU-sized sets and outputs are read and written by several
# threads at once (os.preadv/os.pwrite release the GIL): one thread moves a
# few GB/s through the page cache, several the memory's bandwidth.
IO_THREADS = 8
IO_CHUNK = 16 << 20
_pool = None


def _chunks(n):
    return [(o, min(IO_CHUNK, n - o)) for o in range(0, n, IO_CHUNK)]


def parallel(fn, items):
    """fn(item) for every item, on the shared pool when there are several."""
    global _pool
    if len(items) <= 1:
        return [fn(i) for i in items]
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=min(IO_THREADS, os.cpu_count() or 1))
    return list(_pool.map(fn, items))


def pread_exact(fd, mv, off):
    """Fill memoryview mv from fd at offset off; ValueError when short."""
    def one(c):
        o, n = c
        got = 0
        while got < n:
            k = os.preadv(fd, [mv[o + got:o + n]], off + o + got)
            if not k:
                raise ValueError("file ended after %d of %d bytes" % (off + o + got, off + len(mv)))
            got += k
    parallel(one, _chunks(len(mv)))


def pwrite_all(fd, mv, off):
    def one(c):
        o, n = c
        done = 0
        while done < n:
            done += os.pwrite(fd, mv[o + done:o + n], off + o + done)
    parallel(one, _chunks(len(mv)))

DTYPES = {
    torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.float64: "float64", torch.int64: "int64", torch.int32: "int32",
    torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool",
}
BY_NAME = {v: k for k, v in DTYPES.items()}


def dtype_name(t):
    if t.dtype not in DTYPES:
        raise ValueError("dtype %s is not supported by the kernel ABI" % t.dtype)
    return DTYPES[t.dtype]


def nbytes(t):
    return t.numel() * t.element_size()


class Staging:
    """One host buffer, reused, between the device and the files: pinned
    on CUDA, so copies run at full speed, and faulted in once instead of
    once per set (inputs and outputs are hundreds of MiB at GPU sizes)."""

    def __init__(self, device, pin=None):
        self.device = device
        self.pin = device.type == "cuda" if pin is None else pin
        self.buf = None

    def get(self, n):
        if self.buf is None or self.buf.numel() < n:
            self.buf = None
            self.buf = torch.empty(max(n, 1), dtype=torch.uint8, pin_memory=self.pin)
        return self.buf[:n]

    def write(self, fd, t, off):
        """Write tensor t's bytes to file descriptor fd at off through the buffer."""
        flat = t.detach().contiguous().reshape(-1)
        if flat.dtype == torch.bool:
            flat = flat.to(torch.uint8)
        b = self.get(nbytes(flat))
        b.copy_(flat.view(torch.uint8))
        pwrite_all(fd, memoryview(b.numpy()), off)

    def read(self, fd, size, dtype, shape):
        """A new tensor on the device from the first size bytes of open
        file fd (see open_untrusted: never a path a worker can redirect)."""
        b = self.get(size)
        pread_exact(fd, memoryview(b.numpy()), 0)
        t = b.view(torch.uint8 if dtype == torch.bool else dtype).reshape(shape)
        # copy=True: a tensor of its own, never a view of the reused buffer.
        t = t.to(self.device, copy=True)
        return t.to(torch.bool) if dtype == torch.bool else t


def to_array(t):
    """The tensor's bytes as a host numpy array (no copy beyond the one off
    the device): what the buffer protocol writes to a file."""
    t = t.detach().contiguous().cpu().reshape(-1)
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    # Same-size views are supported everywhere (1.13 included).
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.view(view).numpy()


def to_bytes(t):
    return b"" if t.numel() == 0 else to_array(t).tobytes()


def from_bytes(data, dtype, shape):
    dt = BY_NAME[dtype]
    n = 1
    for d in shape:
        n *= d
    if n == 0:
        return torch.empty(shape, dtype=dt)
    load = torch.uint8 if dt == torch.bool else dt
    t = torch.frombuffer(bytearray(data), dtype=load).reshape(shape)
    return t.to(torch.bool) if dt == torch.bool else t


def write_set(path, named, staging=None):
    """Write [(name, tensor)] to one file; the manifest entries for them."""
    entries, off = [], 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        for name, t in named:
            n = nbytes(t)
            if n and staging is not None:
                staging.write(fd, t, off)
            elif n:
                pwrite_all(fd, memoryview(to_array(t)).cast("B"), off)
            entries.append({"name": name, "dtype": dtype_name(t), "shape": list(t.shape),
                            "offset": off, "nbytes": n})
            off += n
    finally:
        os.close(fd)
    return entries


def out_specs(outs):
    return [{"name": "out%d" % i, "dtype": dtype_name(t), "shape": list(t.shape),
             "nbytes": nbytes(t)} for i, t in enumerate(outs)]


def write_manifest(dirpath, manifest):
    tmp = os.path.join(dirpath, ".manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f)
    os.rename(tmp, os.path.join(dirpath, "manifest.json"))


def discard_output(path, scratch):
    """Remove an output file already read, if it lies in the scratch."""
    real = os.path.realpath(path)
    if os.path.dirname(real) == os.path.realpath(scratch):
        try:
            os.unlink(real)
        except OSError:
            pass


def plain_name(name):
    """name when it is one plain file name (no "/", not "." or ".."),
    else ValueError: the only kind of name the judge opens in a directory
    an untrusted process writes."""
    if (not isinstance(name, str) or not name or "/" in name or "\0" in name
            or name in (".", "..")):
        raise ValueError("%r is not a plain file name" % (name,))
    return name


def open_untrusted(dirpath, name, size=None):
    """Open file name of directory dirpath, which a sandboxed process can
    write (its scratch), for reading; the open fd (the caller closes it).

    The process may swap the file for a symlink, a hard link, a FIFO or a
    directory between any two calls of ours, so nothing is looked up twice:
    the directory is opened once (O_DIRECTORY|O_NOFOLLOW), the file
    relative to it (O_NOFOLLOW, O_NONBLOCK so a FIFO cannot block us), and
    only what fstat says of that fd counts: a regular file with one link
    and, when size is given, exactly size bytes. Everything is read through
    the fd. ValueError (refused) or OSError (could not open)."""
    plain_name(name)
    dfd = os.open(dirpath, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
                     | os.O_NOCTTY, dir_fd=dfd)
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("%s is not a regular file" % name)
        if st.st_nlink != 1:
            raise ValueError("%s has %d links (a hard link to another file?)"
                             % (name, st.st_nlink))
        if size is not None and st.st_size != size:
            raise ValueError("output file %s holds %d bytes, expected %d"
                             % (name, st.st_size, size))
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_tail(dirpath, name, n):
    """The last n characters (about) of text file name of untrusted
    directory dirpath (open_untrusted), "" when it cannot be read."""
    try:
        fd = open_untrusted(dirpath, name)
    except (OSError, ValueError):
        return ""
    try:
        size = os.fstat(fd).st_size
        want = min(size, 4 * n)
        data = os.pread(fd, want, size - want)
        return data.decode("utf-8", "replace")[-n:]
    except OSError:
        return ""
    finally:
        os.close(fd)


def _split_in(path, scratch):
    """The plain name of path when it names a file directly in scratch
    (compared as strings: nothing on the way is resolved), else ValueError."""
    d, name = os.path.split(os.path.normpath(path) if isinstance(path, str) else "")
    if not name or os.path.normpath(d) != os.path.normpath(scratch):
        raise ValueError("output file %r is outside the worker's scratch (or not a plain file name in it)" % (path,))
    return plain_name(name)


def discard_output(path, scratch):
    """Remove an output file already read, if it lies in the scratch."""
    try:
        name = _split_in(path, scratch)
    except ValueError:
        return
    try:
        dfd = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.unlink(name, dir_fd=dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def read_output(path, spec, scratch, staging=None):
    """Read one output file a worker wrote. The worker is untrusted: the
    path must name a file directly in its scratch, opened as open_untrusted
    says (no links followed, a regular file of exactly the expected size).
    Through staging: straight onto its device."""
    name = _split_in(path, scratch)
    size = spec["nbytes"]
    dt = BY_NAME[spec["dtype"]]
    fd = open_untrusted(scratch, name, size)
    try:
        if size == 0:
            return torch.empty(spec["shape"], dtype=dt)
        try:
            if staging is not None:
                return staging.read(fd, size, dt, spec["shape"])
            # Straight from the file into the tensor's memory: these are
            # the largest transfers of an evaluation.
            t = torch.empty(size, dtype=torch.uint8)
            pread_exact(fd, memoryview(t.numpy()), 0)
        except ValueError as e:
            raise ValueError("output file %s: %s" % (name, e))
    finally:
        os.close(fd)
    if dt == torch.bool:
        return t.to(torch.bool).reshape(spec["shape"])
    return t.view(dt).reshape(spec["shape"])
