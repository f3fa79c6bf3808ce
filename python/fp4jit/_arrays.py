"""Arrays of any framework as fp4jit tensors, and allocation of outputs beside them.

Inputs: NumPy arrays (and anything NumPy can view without a copy through __array_interface__),
PyTorch tensors, and any object with __dlpack__ or __cuda_array_interface__ (CuPy, JAX, ...).
Outputs are allocated with the framework of the input: NumPy for host memory, PyTorch or CuPy
for device memory.
"""

import ctypes
import sys

import numpy as np

from . import _lib

_DTYPE_OF_NUMPY = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16"}
_TYPESTR = {"<f4": "float32", "<f2": "float16"}


def _is_torch(obj):
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr")


def _is_cupy(obj):
    return type(obj).__module__.startswith("cupy")


_INT64_ARRAYS = {}


def _int64_array(n):
    t = _INT64_ARRAYS.get(n)
    if t is None:
        t = _INT64_ARRAYS[n] = ctypes.c_int64 * n
    return t


class View:
    """An fp4jit_tensor over an array, keeping alive what it points into."""

    def __init__(self, data, dtype, shape, strides, device, device_id, keep):
        # Called several times per library call: plain tuples of ints in (NumPy, PyTorch and the
        # DLPack path give them), array types cached per rank.
        self.shape = shape = tuple(shape)
        array = _int64_array(len(shape))
        self._shape = array(*shape)
        self._strides = None if strides is None else array(*strides)
        self.dtype = dtype
        self.device = device
        self.device_id = device_id
        self.keep = keep
        self.struct = _lib.Tensor(data, _lib.DTYPES[dtype], len(shape), self._shape, self._strides, device, device_id)

    @property
    def rows(self):
        r = 1
        for s in self.shape[:-1]:
            r *= s
        return r

    @property
    def cols(self):
        return self.shape[-1]

    def ref(self):
        return ctypes.byref(self.struct)

    def template(self):
        """This view without its data pointer and without what it keeps alive: its shape and
        stride arrays, for later views of arrays laid out alike (with_data)."""
        return self.with_data(None, None)

    def with_data(self, data, keep):
        """A view like this one (a template) over `data`, keeping `keep` alive."""
        v = View.__new__(View)
        v.__dict__.update(self.__dict__)
        v.keep = keep
        v.struct = _lib.Tensor.from_buffer_copy(self.struct)
        v.struct.data = data
        return v


def _dtype_error(what, name):
    return _lib.Error(
        "INVALID_ARGUMENT",
        "%s: dtype %s is not supported (fp4jit takes float32, float16 or bfloat16)" % (what, name),
    )


def _numpy_view(a, what):
    name = _DTYPE_OF_NUMPY.get(a.dtype.name)
    if name is None:
        raise _dtype_error(what, a.dtype.name)
    if a.ndim == 0:
        raise _lib.Error("INVALID_ARGUMENT", "%s: a 0-dimensional array" % what)
    item = a.dtype.itemsize
    if any(s % item for s in a.strides):
        raise _lib.Error(
            "INVALID_ARGUMENT",
            "%s: strides %s (bytes) are not multiples of the element size %d" % (what, a.strides, item),
        )
    strides = [s // item for s in a.strides]
    return View(a.ctypes.data, name, a.shape, strides, _lib.DEVICE_CPU, 0, a)


_TORCH_DTYPE_NAMES = {}  # torch.dtype -> name, filled as seen

# Templates of views of PyTorch tensors by (dtype, shape, strides, device): View.template() of the
# first such view, kept for good (a struct copied from a template may be in use on another
# thread, pointing into its shape and stride arrays). A model sees a handful of such keys; past the
# limit, new keys take a full view each time.
_TORCH_TEMPLATES = {}
_TORCH_TEMPLATE_LIMIT = 1024


def _torch_view_checked(t, what):
    name = _TORCH_DTYPE_NAMES.get(t.dtype)
    if name is None:
        name = str(t.dtype).replace("torch.", "")
        if name not in _DTYPE_OF_NUMPY:
            raise _dtype_error(what, name)
        _TORCH_DTYPE_NAMES[t.dtype] = name
    if t.dim() == 0:
        raise _lib.Error("INVALID_ARGUMENT", "%s: a 0-dimensional tensor" % what)
    where = t.device
    if where.type == "cuda":
        device, index = _lib.DEVICE_CUDA, where.index or 0
    elif where.type == "cpu":
        device, index = _lib.DEVICE_CPU, 0
    else:
        raise _lib.Error("INVALID_ARGUMENT", "%s: a tensor on %s (cpu or cuda only)" % (what, where))
    return View(t.data_ptr(), name, t.shape, t.stride(), device, index, t)


def _torch_template(t, what):
    """The template for t's dtype, shape, strides and device, made (and t checked) on first
    sight; None past the limit (t unchecked)."""
    key = (t.dtype, t.shape, t.stride(), t.device)
    template = _TORCH_TEMPLATES.get(key)
    if template is None and len(_TORCH_TEMPLATES) < _TORCH_TEMPLATE_LIMIT:
        # setdefault: a template, once stored, is never replaced (and so never freed) by another
        # thread's for the same key.
        template = _TORCH_TEMPLATES.setdefault(key, _torch_view_checked(t, what).template())
    return template


def _torch_view(t, what):
    template = _torch_template(t, what)
    if template is None:
        return _torch_view_checked(t, what)
    return template.with_data(t.data_ptr(), t)


def torch_struct(t, what):
    """The fp4jit_tensor struct of PyTorch tensor `t`, as view(t).struct, for a library call made
    at once (the caller keeps t alive): a copy of its template's struct with t's data pointer,
    without a View around it."""
    template = _torch_template(t, what)
    if template is None:
        v = _torch_view_checked(t, what)
        s = _lib.Tensor.from_buffer_copy(v.struct)
        s._keep = v  # its shape and stride arrays
        return s
    s = _lib.Tensor.from_buffer_copy(template.struct)
    s.data = t.data_ptr()
    return s


def _dlpack_view(obj, what, stream):
    # A CUDA producer makes the data ready on the consumer's stream (DLPack: 1 is the legacy
    # default stream, which fp4jit's stream 0 is); host producers take no stream.
    on_cuda = False
    if hasattr(obj, "__dlpack_device__"):
        on_cuda = obj.__dlpack_device__()[0] in (_lib.DEVICE_CUDA, _lib.DEVICE_CUDA_MANAGED)
    if on_cuda and stream is not None:
        try:
            capsule = obj.__dlpack__(stream=stream or 1)
        except TypeError:
            capsule = obj.__dlpack__()
    else:
        capsule = obj.__dlpack__()
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    name = get_name(capsule)
    pointer = get_pointer(capsule, name)
    if name == b"dltensor_versioned":
        # DLManagedTensorVersioned: {version (2 x uint32), manager_ctx, deleter, flags, dl_tensor}
        pointer += 8 + 2 * ctypes.sizeof(ctypes.c_void_p) + 8
    elif name != b"dltensor":
        raise _lib.Error("INVALID_ARGUMENT", "%s: __dlpack__ returned a capsule named %r" % (what, name))
    dl = _lib.DLTensor.from_address(pointer)
    t = _lib.Tensor()
    _lib.check(_lib.lib.fp4jit_tensor_from_dlpack(ctypes.byref(dl), ctypes.byref(t)))
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = None if not t.strides else [t.strides[i] for i in range(t.ndim)]
    dtype = {v: k for k, v in _lib.DTYPES.items()}[t.dtype]
    # The capsule (not consumed) keeps the producer's memory alive while the view lives.
    return View(t.data, dtype, shape, strides, t.device, t.device_id, (obj, capsule))


def _cai_view(obj, what):
    cai = obj.__cuda_array_interface__
    name = _TYPESTR.get(cai["typestr"])
    if name is None:
        raise _dtype_error(what, cai["typestr"])
    shape = cai["shape"]
    strides = cai.get("strides")
    if strides is not None:
        item = 4 if name == "float32" else 2
        strides = [s // item for s in strides]
    return View(cai["data"][0], name, shape, strides, _lib.DEVICE_UNKNOWN, 0, obj)


def view(obj, what, stream=None):
    """An fp4jit tensor over `obj` (no copy); `what` names it in errors."""
    if obj is None:
        raise _lib.Error("INVALID_ARGUMENT", "%s is None" % what)
    if isinstance(obj, np.ndarray):
        return _numpy_view(obj, what)
    if _is_torch(obj):
        return _torch_view(obj, what)
    if hasattr(obj, "__cuda_array_interface__") and not hasattr(obj, "__dlpack__"):
        return _cai_view(obj, what)
    if hasattr(obj, "__dlpack__"):
        return _dlpack_view(obj, what, stream)
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
        a = np.asarray(obj)
        return _numpy_view(a, what)
    raise _lib.Error(
        "INVALID_ARGUMENT",
        "%s: a %s is not an array (NumPy, PyTorch, or an object with __dlpack__ or "
        "__cuda_array_interface__)" % (what, type(obj).__name__),
    )


def buffer_pointer(obj, what, nbytes):
    """The address of a caller-provided byte buffer (a NumPy, PyTorch or CuPy array, contiguous)
    of at least `nbytes` bytes; its alignment is checked by the library."""
    if obj is None:
        raise _lib.Error("INVALID_ARGUMENT", "%s is None (%d bytes are needed)" % (what, nbytes))
    if isinstance(obj, np.ndarray):
        ok, size, ptr = obj.flags.c_contiguous, obj.nbytes, obj.ctypes.data
    elif _is_torch(obj):
        ok, size, ptr = obj.is_contiguous(), obj.numel() * obj.element_size(), obj.data_ptr()
    elif _is_cupy(obj):
        ok, size, ptr = obj.flags.c_contiguous, obj.nbytes, obj.data.ptr
    else:
        raise _lib.Error("INVALID_ARGUMENT", "%s: a %s is not a NumPy, PyTorch or CuPy array" % (what, type(obj).__name__))
    if not ok:
        raise _lib.Error("INVALID_ARGUMENT", "%s must be contiguous" % what)
    if size < nbytes:
        raise _lib.Error("INVALID_ARGUMENT", "%s holds %d bytes; %d are needed" % (what, size, nbytes))
    return ptr


# ---- output allocation ---------------------------------------------------------------------
#
# An allocator makes arrays in the memory of the input's framework: empty(shape, dtype), and
# part(piece, shape, dtype), the uint8 slice `piece` of a larger allocation (its start aligned by
# the caller) seen as `shape` of dtype, so one allocation can hold several outputs.


def _part(piece, shape, dtype):  # NumPy and CuPy arrays alike
    return piece.view(dtype).reshape(tuple(shape))


class NumpyAlloc:
    """Host memory."""

    device = _lib.DEVICE_CPU
    device_id = 0

    def empty(self, shape, dtype):
        if dtype == "bfloat16":
            try:
                import ml_dtypes
            except ImportError:
                raise _lib.Error(
                    "UNSUPPORTED", "bfloat16 NumPy arrays need the ml_dtypes package (pip install ml_dtypes)"
                )
            return np.empty(shape, dtype=ml_dtypes.bfloat16)
        return np.empty(shape, dtype=dtype)

    def pointer(self, a):
        return a.ctypes.data

    part = staticmethod(_part)

    def to_numpy(self, a):
        return a


class TorchAlloc:
    def __init__(self, device):
        import torch

        self.torch = torch
        self.where = device
        self.device = _lib.DEVICE_CUDA if device.type == "cuda" else _lib.DEVICE_CPU
        self.device_id = device.index or 0

    def empty(self, shape, dtype):
        return self.torch.empty(tuple(shape), dtype=getattr(self.torch, dtype), device=self.where)

    def pointer(self, t):
        return t.data_ptr()

    def part(self, piece, shape, dtype):
        return piece.view(getattr(self.torch, dtype)).view(tuple(shape))

    def to_numpy(self, t):
        return t.detach().cpu().numpy()


class CupyAlloc:
    device = _lib.DEVICE_CUDA

    def __init__(self):
        import cupy

        self.cupy = cupy
        self.device_id = cupy.cuda.Device().id

    def empty(self, shape, dtype):
        if dtype == "bfloat16":
            raise _lib.Error("UNSUPPORTED", "CuPy has no bfloat16 arrays: ask for float32 or float16")
        return self.cupy.empty(tuple(shape), dtype=dtype)

    def pointer(self, a):
        return a.data.ptr

    part = staticmethod(_part)

    def to_numpy(self, a):
        return self.cupy.asnumpy(a)


def allocator_for(obj, v):
    """The allocator for outputs that go with input `obj` (seen as view `v`)."""
    if _is_torch(obj):
        return TorchAlloc(obj.device)
    if v.device in (_lib.DEVICE_CPU, _lib.DEVICE_CUDA_HOST):
        return NumpyAlloc()
    if _is_cupy(obj) or "cupy" in sys.modules:
        try:
            return CupyAlloc()
        except ImportError:
            pass
    try:
        import torch

        return TorchAlloc(torch.device("cuda", v.device_id))
    except ImportError:
        raise _lib.Error(
            "UNSUPPORTED",
            "outputs in device memory are allocated with PyTorch or CuPy, and neither is installed",
        )


def stream_handle(stream, obj=None):
    """A CUstream as an int: from an int, a torch/CuPy stream object, or the current stream of
    the framework `obj` belongs to (0, the legacy default stream, otherwise)."""
    if stream is None:
        if obj is not None and _is_torch(obj) and obj.device.type == "cuda":
            import torch

            return torch.cuda.current_stream(obj.device).cuda_stream
        if obj is not None and _is_cupy(obj):
            import cupy

            return cupy.cuda.get_current_stream().ptr
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise _lib.Error("INVALID_ARGUMENT", "stream: %r is not a CUDA stream" % (stream,))
