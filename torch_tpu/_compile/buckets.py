"""Bounded dynamic shapes: a symbolic inference graph run at bucketed sizes.

A graph Dynamo traced with symbolic sizes (`dynamic=True`, `mark_dynamic`,
automatic dynamic) would otherwise get one static executable per concrete
size. Here every size symbol that is a dimension of an input tensor is
rounded up to a bucket (the next power of two, capped by the symbol's upper
bound from `mark_dynamic(..., max=)`, or the next entry of a user list), the
inputs are zero-padded to those sizes, the graph runs at the bucket sizes
(one executable per bucket), and each result is narrowed back to its real
size. 100 sequence lengths up to 128 run as 8 executables.

Padding must never change a real result. This module proves it per graph,
op by op, before using it, and refuses (the graph then runs at exact sizes,
as before) when it cannot:

- Every dimension of every value is tracked as a list of *atoms*: exact
  sizes and padded symbols. A padded dimension holds its real values first
  and padding after; a merged one (a view that flattens [b, s] into b*s)
  interleaves them, which only row-wise ops may see.
- Ops that treat positions independently keep padding where it is:
  pointwise ops (PyTorch's `pointwise` tag), views, transposes, expands,
  splits along exact dimensions, row-wise matmuls, layer norm over exact
  dimensions, tril/triu, creation ops, embeddings (padded indices are set
  to 0 so they stay in range).
- Ops that mix positions along a padded dimension see neutral values there:
  the graph is rewritten to fill the padding first (0 for sums and for both
  operands of a contraction, -inf for softmax/amax/logsumexp, +inf for
  amin); `mean` over a padded dimension becomes a sum divided by the real
  count. The real lengths enter as 0-d device tensors (runtime values), so
  the executable does not depend on them.
- `x[:, -1]` on a padded dimension selects position length - 1 (an
  index_select by a device scalar); a non-negative index must be below the
  real length, checked per call (a call that would fail runs at exact
  sizes, and raises CPU's error).
- Anything else that touches a padded dimension (cat, gather, cumsum,
  sort, convolution along it, a symbol used as a value, an input mutation,
  a merged dimension reaching a reduction or a result) refuses the graph.

Only inference graphs (no gradients) are bucketed: in a training graph the
backward would need the same proof for every gradient.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

import torch
import torch.fx

aten = torch.ops.aten

_INT_MAX = 2 ** 62


class Refused(Exception):
    """The graph cannot run padded (the message says which op and why)."""


# An atom is ("e", n) for an exact size n or ("p", sym) for a padded symbol.
# A dimension is a tuple of atoms (a merged dimension has several).

def _expr(v):
    if isinstance(v, torch.SymInt):
        return v.node.expr
    return v


def _is_pad(dim) -> bool:
    return len(dim) == 1 and dim[0][0] == "p"


def _is_exact(dim) -> bool:
    return all(a[0] == "e" for a in dim)


def _exact(n) -> tuple:
    return (("e", int(n)),)


def _size_of(atoms):
    import sympy
    r = sympy.Integer(1)
    for kind, v in atoms:
        r = r * (sympy.Integer(v) if kind == "e" else v)
    return r


def _dim_from_size(size, syms, op) -> tuple:
    """The atoms of a fresh dimension of `size` (a creation op, an expand)."""
    e = _expr(size)
    if isinstance(e, int):
        return _exact(e)
    if e.is_number:
        return _exact(int(e))
    if e in syms:
        return (("p", e),)
    raise Refused(f"{op}: a dimension of size {e}")


@dataclass
class Plan:
    """What `BucketedGraph` needs at run time (built by `plan`)."""
    gm: torch.fx.GraphModule                 # the rewritten graph (extra inputs: one length per symbol)
    symbols: list                            # padded symbols, in the order of the length inputs
    int_args: dict                           # placeholder position -> symbol (a SymInt argument)
    tensor_dims: dict                        # placeholder position -> [(dim, symbol)] padded dims
    outputs: list                            # per result: [(dim, symbol)] to narrow, or None
    minimum: dict = field(default_factory=dict)  # symbol -> least real length the rewrite assumes
    upper: dict = field(default_factory=dict)    # symbol -> upper bound from the shape environment
    device: torch.device | None = None


class _Rewriter:
    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self.g = torch.fx.Graph()
        self.env: dict = {}      # old node -> new node
        self.state: dict = {}    # old node -> list of dims (tensor), list of states (tuple/list), or None
        self.syms: set = set()
        self.sym_nodes: dict = {}  # symbol -> a new-graph node giving its physical (bucket) size
        self.len_nodes: dict = {}  # symbol -> new placeholder: its real length (0-d int64 tensor)
        self.minimum: dict = {}
        self.maximum: dict = {}  # symbol -> the largest bucket the graph can take (a slice's room)
        self.device = None

    # -- helpers ---------------------------------------------------------
    def fail(self, node, why):
        raise Refused(f"{node.target if node.op == 'call_function' else node.op}: {why}")

    def call(self, target, *args, **kwargs):
        return self.g.call_function(target, args, kwargs)

    def length(self, sym):
        return self.len_nodes[sym]

    def outside(self, sym):
        """A [bucket] bool node: True at the padding positions of `sym`."""
        positions = self.call(aten.arange.default, self.sym_nodes[sym], dtype=torch.int64, device=self.device)
        return self.call(aten.ge.Tensor, positions, self.length(sym))

    def pad_mask(self, x_new, dims, d, fill):
        """x with the padding along its dimension d set to `fill`."""
        sym = dims[d][0][1]
        outside = self.outside(sym)
        shape = [1] * len(dims)
        shape[d] = self.sym_nodes[sym]
        outside = self.call(aten.view.default, outside, shape)
        return self.call(aten.masked_fill.Scalar, x_new, outside, fill)

    def neutral(self, node, x_old, dims_to_fill, fill):
        """The new node of x_old with every padded dimension in dims_to_fill filled."""
        dims = self.state[x_old]
        x = self.env[x_old]
        for d in dims_to_fill:
            d = d % len(dims)
            if _is_exact(dims[d]):
                continue
            if not _is_pad(dims[d]):
                self.fail(node, "reduces over a merged padded dimension")
            x = self.pad_mask(x, dims, d, fill)
        return x

    # -- the pass --------------------------------------------------------
    def run(self):
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        # the padded symbols: every symbol that is an input tensor's dimension
        for n in placeholders:
            v = n.meta.get("val")
            if isinstance(v, torch.Tensor):
                for s in v.shape:
                    e = _expr(s)
                    if not isinstance(e, int) and not e.is_number:
                        if not e.is_Symbol:
                            raise Refused(f"input {n.name} has a dimension of size {e}")
                        self.syms.add(e)
        if not self.syms:
            raise Refused("no symbolic input dimension")
        int_args, tensor_dims = {}, {}
        for i, n in enumerate(placeholders):
            new = self.g.placeholder(n.name)
            new.meta = dict(n.meta)
            self.env[n] = new
            v = n.meta.get("val")
            if isinstance(v, torch.SymInt):
                e = _expr(v)
                if e.is_Symbol and e in self.syms:
                    int_args[i] = e
                    self.sym_nodes.setdefault(e, new)
                    self.state[n] = ("sym", e)
                elif not e.is_number:
                    raise Refused(f"input {n.name} is the size expression {e}")
                continue
            if isinstance(v, torch.Tensor):
                if self.device is None and v.device.type == "tpu":
                    self.device = v.device
                dims = [_dim_from_size(s, self.syms, "input") for s in v.shape]
                self.state[n] = dims
                padded = [(d, dim[0][1]) for d, dim in enumerate(dims) if _is_pad(dim)]
                if padded:
                    tensor_dims[i] = padded
            else:
                self.state[n] = None
        if self.device is None:
            raise Refused("no 'tpu' input")
        symbols = sorted(self.syms, key=str)
        for sym in symbols:
            self.len_nodes[sym] = self.g.placeholder(f"_real_length_{sym}")
        # the padded size of a symbol without an int argument: an input's size
        for i, padded in tensor_dims.items():
            for d, sym in padded:
                if sym not in self.sym_nodes:
                    self.sym_nodes[sym] = self.g.call_function(aten.sym_size.int, (self.env[placeholders[i]], d))
        outputs = None
        # nodes that are views of a padded input: the graph runs on a padded copy of that
        # input, so such a view cannot be returned (AOTAutograd rebuilds a returned view of
        # an input from the real input with the copy's strides)
        self.input_views = {placeholders[i] for i in tensor_dims}
        for n in self.gm.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                outputs = self.output(n)
                continue
            if n.op == "call_function" and _is_view_of(n, self.input_views):
                self.input_views.add(n)
            if n.op == "get_attr":  # a constant tensor of the graph: exact
                self.copy(n)
                v = getattr(self.gm, n.target, None)
                self.state[n] = [_exact(d) for d in v.shape] if isinstance(v, torch.Tensor) else None
                continue
            if n.op != "call_function":
                self.fail(n, "not a function call")
            self.node(n)
        self.check_symbol_uses()
        gm = torch.fx.GraphModule(self.gm, self.g)
        upper = self.upper_bounds()
        for sym, room in self.maximum.items():
            upper[sym] = min(upper.get(sym, room), room)
        return Plan(gm=gm, symbols=symbols, int_args=int_args, tensor_dims=tensor_dims, outputs=outputs,
                    minimum=dict(self.minimum), upper=upper, device=self.device)

    def upper_bounds(self):
        bounds = {}
        for n in self.gm.graph.nodes:
            v = n.meta.get("val")
            if isinstance(v, torch.Tensor):
                env = getattr(getattr(v, "fake_mode", None), "shape_env", None)
                if env is None:
                    continue
                for sym in self.syms:
                    r = env.var_to_range.get(sym)
                    try:
                        if r is not None and bool(r.upper.is_finite) and int(r.upper) < _INT_MAX:
                            bounds[sym] = int(r.upper)
                    except (TypeError, ValueError, AttributeError):
                        pass
                break
        return bounds

    def check_symbol_uses(self):
        # a size symbol may only size things: a value use (x * s, a mean's
        # divisor written by hand) would see the bucket
        for n in self.gm.graph.nodes:
            if not isinstance(self.state.get(n), tuple):
                continue
            for user in n.users:
                if user.op == "output":
                    raise Refused(f"the graph returns the size {n.name}")
                if self._is_size_use(user, n):
                    continue
                raise Refused(f"{user.target}: uses the size {n.name} as a value")

    _SIZE_OPS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.expand.default,
                 aten.ones.default, aten.zeros.default, aten.full.default, aten.empty.memory_format,
                 aten.new_ones.default, aten.new_zeros.default, aten.new_full.default, aten.new_empty.default,
                 aten.arange.default, aten.arange.start, aten.slice.Tensor}  # slice: _slice checks its bounds
    _SYM_ARITH = {operator.mul, operator.add, operator.sub, operator.floordiv}

    def _is_size_use(self, user, n):
        if user.target in self._SYM_ARITH:
            return isinstance(self.state.get(user), tuple)
        if user.target not in self._SIZE_OPS:
            return False
        if user.target is aten.arange.start:
            return user.args[0] == 0 and n is user.args[1]
        return True

    def output(self, n):
        specs = []
        for v in n.args[0]:
            if v is None or not isinstance(v, torch.fx.Node):
                specs.append(None)
                continue
            s = self.state.get(v)
            if isinstance(s, tuple):
                raise Refused(f"the graph returns the size {v.name}")
            if v in self.input_views:
                raise Refused(f"result {v.name} is a view of a padded input")
            if not isinstance(s, list):
                specs.append(None)
                continue
            narrow = []
            for d, dim in enumerate(s):
                if _is_exact(dim):
                    continue
                if not _is_pad(dim):
                    raise Refused(f"result {v.name} has a merged padded dimension")
                narrow.append((d, dim[0][1]))
            specs.append(narrow or None)
        self.g.output(torch.fx.node.map_arg(n.args[0], lambda x: self.env[x]))
        return specs

    # -- ops -------------------------------------------------------------
    def copy(self, n):
        new = self.g.node_copy(n, lambda x: self.env[x])
        self.env[n] = new
        return new

    def dims_of(self, n, v):
        s = self.state.get(v) if isinstance(v, torch.fx.Node) else None
        if not isinstance(s, list):
            self.fail(n, f"argument {v} is not a tracked tensor")
        return s

    def meta_dims(self, n):
        v = n.meta.get("val")
        if not isinstance(v, torch.Tensor):
            self.fail(n, "no tensor metadata")
        return list(v.shape)

    def node(self, n):
        t = n.target
        args = n.args
        # sizes computed from sizes
        if t in self._SYM_ARITH:
            ins = [self.state.get(a) if isinstance(a, torch.fx.Node) else a for a in args]
            if any(isinstance(i, tuple) for i in ins):
                self.copy(n)
                self.state[n] = ("sym", None)
                return
        if t is aten.sym_size.int:
            self.copy(n)
            dims = self.dims_of(n, args[0])
            dim = dims[args[1] % len(dims)]
            self.state[n] = ("sym", None) if not _is_exact(dim) else None
            return
        if t is operator.getitem:
            self.copy(n)
            s = self.state.get(args[0])
            self.state[n] = s.items[args[1]] if isinstance(s, _Multi) else None
            return
        # an op that touches no padded tensor runs as it is
        touched = [a for a in n.all_input_nodes if self._padded(a)]
        if not touched and not self._creates_padded(n):
            self.copy(n)
            self.state[n] = self._plain_state(n)
            return
        if isinstance(t, torch._ops.OpOverload) and (t._schema.is_mutable or (
                torch.Tag.nondeterministic_seeded in t.tags and not _draws_nothing(n))):
            # an input mutation would write the padding into the input; a
            # random op would draw more numbers than the unpadded run
            self.fail(n, "mutates an input or draws random numbers on a padded tensor")
        handler = _HANDLERS.get(t)
        if handler is None and isinstance(t, torch._ops.OpOverload) and torch.Tag.pointwise in t.tags:
            handler = _pointwise
        if handler is None:
            self.fail(n, "no padding rule for this op on a padded dimension")
        handler(self, n)

    def _padded(self, a):
        s = self.state.get(a)
        if isinstance(s, tuple):
            return s[0] == "sym"
        if isinstance(s, _Multi):
            return any(self._dims_padded(i) for i in s.items)
        return self._dims_padded(s)

    @staticmethod
    def _dims_padded(s):
        return isinstance(s, list) and any(not _is_exact(d) for d in s)

    def _creates_padded(self, n):
        v = n.meta.get("val")
        vs = v if isinstance(v, (list, tuple)) else [v]
        for x in vs:
            if isinstance(x, torch.Tensor):
                for s in x.shape:
                    e = _expr(s)
                    if not isinstance(e, int) and not e.is_number:
                        return True
            elif isinstance(x, torch.SymInt):
                return True
        return False

    def _plain_state(self, n):
        v = n.meta.get("val")
        if isinstance(v, torch.Tensor):
            return [_exact(s) for s in v.shape]
        if isinstance(v, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in v):
            return _Multi([[_exact(s) for s in x.shape] if isinstance(x, torch.Tensor) else None for x in v])
        return None


def _is_view_of(n, bases) -> bool:
    """n returns a view (no copy) of one of the nodes in `bases`."""
    args = [a for a in n.args if isinstance(a, torch.fx.Node)]
    if not any(a in bases for a in args):
        return False
    if n.target is operator.getitem:  # an element of split/unbind/chunk
        return True
    schema = getattr(n.target, "_schema", None)
    if schema is None or not schema.returns:
        return True  # unknown: assume it may alias
    info = schema.returns[0].alias_info
    return info is not None and not info.is_write


def _draws_nothing(n) -> bool:
    """A seeded op called without randomness (fused attention without dropout)."""
    if n.target is aten._scaled_dot_product_fused_attention_overrideable.default:
        p = n.args[4] if len(n.args) > 4 else n.kwargs.get("dropout_p", 0.0)
        return p == 0
    return False


class _Multi:
    """The states of an op's several results (getitem picks one)."""

    def __init__(self, items):
        self.items = items


# ---------------------------------------------------------------------------
# padding rules, one per op family

def _broadcast(rw, n, inputs, out_shape=None):
    """The dims of `inputs` broadcast together to `out_shape` (default: n's result)."""
    out_shape = rw.meta_dims(n) if out_shape is None else out_shape
    rank = len(out_shape)
    dims = [None] * rank
    for v in inputs:
        if not isinstance(v, torch.fx.Node) or not isinstance(rw.state.get(v), list):
            continue
        s = rw.state[v]
        meta = v.meta.get("val")
        for k in range(1, len(s) + 1):
            dim = s[-k]
            if _is_exact(dim) and meta is not None and _expr(meta.shape[-k]) == 1:
                continue  # broadcast
            have = dims[rank - k]
            if have is None or _is_exact(have):
                if have is not None and not _is_exact(dim):
                    rw.fail(n, "broadcasts an exact dimension against a padded one")
                dims[rank - k] = dim if have is None or not _is_exact(dim) else have
            elif dim != have:
                rw.fail(n, f"combines differently padded dimensions {have} and {dim}")
    for d in range(rank):
        if dims[d] is None:
            dims[d] = _dim_from_size(out_shape[d], rw.syms, n.target)
    return dims


def _pointwise(rw, n):
    dims = _broadcast(rw, n, n.all_input_nodes)
    rw.copy(n)
    rw.state[n] = dims


def _int_divide(rw, n):
    """Integer division, remainder and fmod check every divisor on the device (CPU raises
    ZeroDivisionError): a padded integer divisor gets 1 in its padding, not 0 (fuzz seed 237:
    remainder of a masked selection raised on the padding)."""
    dims = _broadcast(rw, n, n.all_input_nodes)
    d = n.args[1]
    val = d.meta.get("val") if isinstance(d, torch.fx.Node) else None
    state = rw.state.get(d) if isinstance(d, torch.fx.Node) else None
    padded = [i for i, dim in enumerate(state) if not _is_exact(dim)] if isinstance(state, list) else []
    if val is None or val.dtype.is_floating_point or val.dtype.is_complex or not padded:
        _pointwise(rw, n)
        return
    filled = rw.neutral(n, d, padded, 1)
    rw.env[n] = rw.g.node_copy(n, lambda x: filled if x is d else rw.env[x])
    rw.state[n] = dims


def _same(rw, n):
    rw.copy(n)
    rw.state[n] = list(rw.dims_of(n, n.args[0]))


def _transpose(rw, n):
    dims = list(rw.dims_of(n, n.args[0]))
    if n.target is aten.t.default:
        dims = dims[::-1]
    else:
        a, b = n.args[1] % len(dims), n.args[2] % len(dims)
        dims[a], dims[b] = dims[b], dims[a]
    rw.copy(n)
    rw.state[n] = dims


def _permute(rw, n):
    dims = rw.dims_of(n, n.args[0])
    rw.copy(n)
    rw.state[n] = [dims[p % len(dims)] for p in n.args[1]]


def _unsqueeze(rw, n):
    dims = list(rw.dims_of(n, n.args[0]))
    d = n.args[1] % (len(dims) + 1)
    dims.insert(d, _exact(1))
    rw.copy(n)
    rw.state[n] = dims


def _squeeze(rw, n):
    dims = list(rw.dims_of(n, n.args[0]))
    if len(n.args) > 1:
        which = n.args[1] if isinstance(n.args[1], (list, tuple)) else [n.args[1]]
        which = {w % max(len(dims), 1) for w in which}
    else:
        which = set(range(len(dims)))
    meta = n.args[0].meta["val"].shape
    keep = [dim for d, dim in enumerate(dims) if not (d in which and _expr(meta[d]) == 1)]
    rw.copy(n)
    rw.state[n] = keep


def _expand(rw, n):
    dims = rw.dims_of(n, n.args[0])
    out = rw.meta_dims(n)
    meta = n.args[0].meta["val"].shape
    new = len(out) - len(dims)
    result = []
    for d in range(len(out)):
        if d < new or _expr(meta[d - new]) == 1:
            result.append(_dim_from_size(out[d], rw.syms, n.target))  # uniform along it
        else:
            result.append(dims[d - new])
    rw.copy(n)
    rw.state[n] = result


def _view(rw, n):
    dims = rw.dims_of(n, n.args[0])
    out = rw.meta_dims(n)
    atoms = [a for dim in dims for a in dim if a != ("e", 1)]
    result = []
    i = 0
    for size in out:
        e = _expr(size)
        if e == 1:
            result.append(_exact(1))
            continue
        taken = []
        while True:
            have = _size_of(taken)
            if have == e:
                break
            if i >= len(atoms):
                rw.fail(n, f"cannot map {dims} onto {out}")
            kind, v = atoms[i]
            need = e / have
            if kind == "e" and need.is_Integer and v % int(need) == 0 and int(need) != v:
                taken.append(("e", int(need)))  # split an exact size
                atoms[i] = ("e", v // int(need))
                continue
            taken.append(atoms[i])
            i += 1
            if not (_size_of(taken) == e or (e / _size_of(taken)).is_Integer or
                    not (e / _size_of(taken)).is_number):
                rw.fail(n, f"cannot map {dims} onto {out}")
        result.append(tuple(taken))
    if i != len(atoms):
        rw.fail(n, f"cannot map {dims} onto {out}")
    rw.copy(n)
    rw.state[n] = result


def _slice(rw, n):
    dims = rw.dims_of(n, n.args[0])
    d = (n.args[1] if len(n.args) > 1 else 0) % len(dims)
    start = n.args[2] if len(n.args) > 2 else 0
    end = n.args[3] if len(n.args) > 3 else None
    step = n.args[4] if len(n.args) > 4 else 1
    if not _is_exact(dims[d]):
        full_end = end is None or (isinstance(end, int) and end >= _INT_MAX) or \
            (isinstance(end, torch.fx.Node) and rw.state.get(end) == ("sym", dims[d][0][1]))
        if start not in (0, None) or step != 1 or not full_end or not _is_pad(dims[d]):
            rw.fail(n, "slices a padded dimension")
        _same(rw, n)
        return
    out = rw.meta_dims(n)
    e = _expr(out[d])
    if not isinstance(e, int) and not e.is_number:
        # an exact dimension sliced to a padded length (HF's position_ids[:, :s]):
        # the bucket must fit in what the slice can take
        if e not in rw.syms or not isinstance(start, (int, type(None))) or step != 1:
            rw.fail(n, f"slices an exact dimension to the size {e}")
        room = int(_size_of(dims[d])) - (start or 0)
        rw.maximum[e] = min(rw.maximum.get(e, room), room)
        rw.copy(n)
        rw.state[n] = [dim if k != d else (("p", e),) for k, dim in enumerate(dims)]
        return
    rw.copy(n)
    rw.state[n] = [dim if k != d else _exact(e) for k, dim in enumerate(dims)]


def _select(rw, n):
    dims = rw.dims_of(n, n.args[0])
    d = n.args[1] % len(dims)
    index = n.args[2]
    rest = [dim for k, dim in enumerate(dims) if k != d]
    if _is_exact(dims[d]):
        rw.copy(n)
        rw.state[n] = rest
        return
    if not _is_pad(dims[d]) or not isinstance(index, int):
        rw.fail(n, "selects along a merged dimension or by a size")
    sym = dims[d][0][1]
    x = rw.env[n.args[0]]
    if index >= 0:
        rw.minimum[sym] = max(rw.minimum.get(sym, 0), index + 1)
        rw.copy(n)
    else:
        rw.minimum[sym] = max(rw.minimum.get(sym, 0), -index)
        position = rw.call(aten.add.Scalar, rw.length(sym), index)
        position = rw.call(aten.view.default, position, [1])
        picked = rw.call(aten.index_select.default, x, d, position)
        rw.env[n] = rw.call(aten.squeeze.dim, picked, d)
    rw.state[n] = rest


def _split(rw, n):
    dims = rw.dims_of(n, n.args[0])
    d = (n.args[2] if len(n.args) > 2 else n.kwargs.get("dim", 0)) % len(dims)
    if not _is_exact(dims[d]):
        rw.fail(n, "splits a padded dimension")
    rw.copy(n)
    items = []
    for v in n.meta["val"]:
        s = list(dims)
        s[d] = _exact(_expr(v.shape[d]))
        items.append(s)
    rw.state[n] = _Multi(items)


def _unbind(rw, n):
    dims = rw.dims_of(n, n.args[0])
    d = (n.args[1] if len(n.args) > 1 else 0) % len(dims)
    if not _is_exact(dims[d]):
        rw.fail(n, "unbinds a padded dimension")
    rw.copy(n)
    rw.state[n] = _Multi([[dim for k, dim in enumerate(dims) if k != d] for _ in n.meta["val"]])


def _creation(rw, n):
    rw.copy(n)
    rw.state[n] = [_dim_from_size(s, rw.syms, n.target) for s in rw.meta_dims(n)]


def _uniform_creation(rw, n):
    # a constant-filled tensor: merged padded sizes are fine (any order is the same)
    out = []
    for s in rw.meta_dims(n):
        e = _expr(s)
        if isinstance(e, int) or e.is_number or e in rw.syms:
            out.append(_dim_from_size(s, rw.syms, n.target))
            continue
        atoms = []
        for f in e.as_ordered_factors():
            if f.is_Integer:
                atoms.append(("e", int(f)))
            elif f in rw.syms:
                atoms.append(("p", f))
            else:
                rw.fail(n, f"a dimension of size {e}")
        out.append(tuple(atoms))
    rw.copy(n)
    rw.state[n] = out


def _triangle(rw, n):
    dims = rw.dims_of(n, n.args[0])
    if any(not _is_exact(d) and not _is_pad(d) for d in dims[-2:]):
        rw.fail(n, "a merged padded dimension")
    _same(rw, n)  # position-wise: the real block keeps its values


def _mm(rw, n):
    a, b = n.args[-2], n.args[-1]
    da, db = rw.dims_of(n, a), rw.dims_of(n, b)
    ka, kb = da[-1], db[-2]
    if not _is_exact(ka) or not _is_exact(kb):
        if ka != kb or not _is_pad(ka):
            rw.fail(n, "contracts differently padded dimensions")
        new_a = rw.neutral(n, a, [len(da) - 1], 0)
        new_b = rw.neutral(n, b, [len(db) - 2], 0)
        new_args = list(torch.fx.node.map_arg(n.args, lambda x: rw.env[x]))
        new_args[-2], new_args[-1] = new_a, new_b
        rw.env[n] = rw.g.call_function(n.target, tuple(new_args), dict(n.kwargs))
    else:
        rw.copy(n)
    batch = []
    for k in range(len(da) - 2):
        x, y = da[k], db[k]
        if not _is_exact(x) and not _is_exact(y) and x != y:
            rw.fail(n, "batches differently padded dimensions")
        batch.append(y if _is_exact(x) else x)
    out = batch + [da[-2], db[-1]]
    if n.target is aten.addmm.default:
        bias = n.args[0]
        if rw._padded(bias):
            bd = rw.state[bias]
            for k in range(1, len(bd) + 1):
                if not _is_exact(bd[-k]) and bd[-k] != out[-k]:
                    rw.fail(n, "a bias padded unlike the product")
    rw.state[n] = out


def _reduce_dims(n, rank):
    dims = n.args[1] if len(n.args) > 1 else n.kwargs.get("dim")
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return [d % max(rank, 1) for d in dims]


def _keepdim(n, index=2):
    if len(n.args) > index:
        return bool(n.args[index])
    return bool(n.kwargs.get("keepdim", False))


def _reduction(fill):
    def rule(rw, n):
        x = n.args[0]
        dims = rw.dims_of(n, x)
        reduced = _reduce_dims(n, len(dims))
        if fill is None:
            rw.fail(n, "reduces over a padded dimension")
        dtype = x.meta["val"].dtype
        value = fill
        if not dtype.is_floating_point and not dtype.is_complex and math.isinf(fill):
            info = torch.iinfo(dtype) if dtype != torch.bool else None
            if info is None:
                rw.fail(n, "a boolean reduction")
            value = info.min if fill < 0 else info.max
        new_x = rw.neutral(n, x, reduced, value)
        new_args = list(torch.fx.node.map_arg(n.args, lambda v: rw.env[v]))
        new_args[0] = new_x
        rw.env[n] = rw.g.call_function(n.target, tuple(new_args),
                                       torch.fx.node.map_arg(dict(n.kwargs), lambda v: rw.env[v]))
        keep = _keepdim(n)
        rw.state[n] = [(_exact(1) if keep else None) if d in reduced else dim for d, dim in enumerate(dims)]
        rw.state[n] = [d for d in rw.state[n] if d is not None]
    return rule


def _softmax(fill):
    def rule(rw, n):
        x = n.args[0]
        dims = rw.dims_of(n, x)
        d = n.args[1] % len(dims)
        new_x = rw.neutral(n, x, [d], fill)
        new_args = list(torch.fx.node.map_arg(n.args, lambda v: rw.env[v]))
        new_args[0] = new_x
        rw.env[n] = rw.g.call_function(n.target, tuple(new_args), dict(n.kwargs))
        rw.state[n] = list(dims)
    return rule


def _mean(rw, n):
    x = n.args[0]
    dims = rw.dims_of(n, x)
    reduced = _reduce_dims(n, len(dims))
    if all(_is_exact(dims[d]) for d in reduced):
        rw.copy(n)
    else:
        keep = _keepdim(n)
        dtype = n.kwargs.get("dtype") or n.meta["val"].dtype
        acc = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
        summed = rw.call(aten.sum.dim_IntList, rw.neutral(n, x, reduced, 0), reduced, keep, dtype=acc)
        count = None
        exact = 1
        for d in reduced:
            if _is_exact(dims[d]):
                exact *= int(_size_of(dims[d]))
            else:
                length = rw.length(dims[d][0][1])
                count = length if count is None else rw.call(aten.mul.Tensor, count, length)
        if exact != 1:
            count = rw.call(aten.mul.Scalar, count, exact)
        result = rw.call(aten.div.Tensor, summed, count)
        if acc != dtype:
            result = rw.call(aten._to_copy.default, result, dtype=dtype)
        rw.env[n] = result
    keep = _keepdim(n)
    out = [(_exact(1) if keep else None) if d in reduced else dim for d, dim in enumerate(dims)]
    rw.state[n] = [d for d in out if d is not None]


def _layer_norm(rw, n):
    x = n.args[0]
    dims = rw.dims_of(n, x)
    k = len(n.args[1])
    if any(not _is_exact(d) for d in dims[len(dims) - k:]):
        rw.fail(n, "normalises over a padded dimension")
    for w in n.args[2:4]:
        if isinstance(w, torch.fx.Node) and rw._padded(w):
            rw.fail(n, "a padded weight")
    rw.copy(n)
    stats = list(dims[:len(dims) - k]) + [_exact(1)] * k
    rw.state[n] = _Multi([list(dims), stats, stats])


def _embedding(rw, n):
    weight, indices = n.args[0], n.args[1]
    if rw._padded(weight):
        rw.fail(n, "a padded table")
    idims = rw.dims_of(n, indices)
    padded = [d for d, dim in enumerate(idims) if not _is_exact(dim)]
    if any(not _is_pad(idims[d]) for d in padded):
        rw.fail(n, "merged padded indices")
    safe = rw.neutral(n, indices, padded, 0)  # padding indices stay in range
    new_args = list(torch.fx.node.map_arg(n.args, lambda v: rw.env[v]))
    new_args[1] = safe
    rw.env[n] = rw.g.call_function(n.target, tuple(new_args), dict(n.kwargs))
    rw.state[n] = list(idims) + [_exact(_expr(rw.meta_dims(n)[-1]))]


def _gather(rw, n):
    # gather(x, d, index): x read along an exact dimension; the padding of the
    # index is set to 0 so every index stays in range; the result is the index's shape
    x, d, index = n.args[0], n.args[1], n.args[2]
    xd, idims = rw.dims_of(n, x), rw.dims_of(n, index)
    d = d % len(xd)
    if not _is_exact(xd[d]) or any(not _is_exact(dim) and dim != idims[k] for k, dim in enumerate(xd) if k != d):
        rw.fail(n, "gathers along a padded dimension")
    padded = [k for k, dim in enumerate(idims) if not _is_exact(dim)]
    if any(not _is_pad(idims[k]) for k in padded):
        rw.fail(n, "merged padded indices")
    new_args = list(torch.fx.node.map_arg(n.args, lambda v: rw.env[v]))
    new_args[2] = rw.neutral(n, index, padded, 0)
    rw.env[n] = rw.g.call_function(n.target, tuple(new_args), dict(n.kwargs))
    rw.state[n] = list(idims)


def _index(rw, n):
    # x[i0, i1, ...] with index tensors for the leading dimensions: real index
    # entries are below the real sizes (the unpadded program is valid), padded
    # entries are set to 0, so every read is in range; the result is the
    # indices' broadcast shape followed by x's remaining dimensions
    x, indices = n.args[0], n.args[1]
    xd = rw.dims_of(n, x)
    if any(i is None for i in indices) or len(indices) > len(xd):
        rw.fail(n, "indexing with None or non-leading indices")
    safe, states = [], []
    for d, i in enumerate(indices):
        idims = rw.dims_of(n, i)
        if rw.state[i] and i.meta["val"].dtype == torch.bool:
            rw.fail(n, "a boolean mask index")
        padded = [k for k, dim in enumerate(idims) if not _is_exact(dim)]
        if any(not _is_pad(idims[k]) for k in padded):
            rw.fail(n, "merged padded indices")
        s = rw.neutral(n, i, padded, 0)
        if not _is_exact(xd[d]):  # a negative index counts from the real end, not the bucket's
            if not _is_pad(xd[d]):
                rw.fail(n, "indexes a merged padded dimension")
            wrapped = rw.call(aten.add.Tensor, s, rw.length(xd[d][0][1]))
            s = rw.call(aten.where.self, rw.call(aten.lt.Scalar, s, 0), wrapped, s)
        safe.append(s)
        states.append(i)
    out = rw.meta_dims(n)
    rest = list(xd[len(indices):])
    if len(out) < len(rest):
        rw.fail(n, "an index result of unexpected rank")
    lead = _broadcast(rw, n, states, out[:len(out) - len(rest)])
    rw.env[n] = rw.g.call_function(n.target, (rw.env[x], safe), dict(n.kwargs))
    rw.state[n] = lead + rest


def _attention(rw, n):
    """The fused SDPA (overrideable) op: padded keys and values are zeroed
    (padding may hold anything, NaN included, and 0 * NaN would reach a real
    row), padded keys get a -inf bias (a key mask, written over whatever the
    bias's padding holds), padded queries are independent rows, narrowed
    away after. With a causal mask over one padded length shared by queries
    and keys, a real query never sees a padded key, so no bias is needed."""
    names = ["query", "key", "value", "attn_bias", "dropout_p", "is_causal", "return_debug_mask"]
    a = dict(zip(names, n.args))
    a.update(n.kwargs)
    q, k, v, bias = a["query"], a["key"], a["value"], a.get("attn_bias")
    dq, dk, dv = rw.dims_of(n, q), rw.dims_of(n, k), rw.dims_of(n, v)
    if any(not _is_exact(d[-1]) for d in (dq, dk, dv)):
        rw.fail(n, "a padded head dimension")
    for d in range(len(dq) - 2):
        ds = [x[d] for x in (dq, dk, dv) if not _is_exact(x[d])]
        if ds and (len(ds) != 3 or len(set(ds)) != 1):
            rw.fail(n, "batches differently padded dimensions")
    lq, lk = dq[-2], dk[-2]
    if dv[-2] != lk:
        rw.fail(n, "keys and values padded differently")
    new_args = list(torch.fx.node.map_arg(n.args, lambda x: rw.env[x]))
    new_kwargs = dict(torch.fx.node.map_arg(n.kwargs, lambda x: rw.env[x]))
    if not _is_exact(lk):
        if not _is_pad(lk):
            rw.fail(n, "merged padded keys")
        new_args[1] = rw.neutral(n, k, [len(dk) - 2], 0)
        new_args[2] = rw.neutral(n, v, [len(dv) - 2], 0)
    if bias is not None and rw._padded(bias):
        bd = rw.state[bias]
        out = list(dq[:-1]) + [lk]
        for i in range(1, len(bd) + 1):
            if not _is_exact(bd[-i]) and bd[-i] != out[-i]:
                rw.fail(n, "a bias padded unlike the scores")
    if not _is_exact(lk) and not (a.get("is_causal") and lq == lk):
        sym = lk[0][1]
        dtype = n.args[0].meta["val"].dtype
        if bias is None:
            b_new = rw.call(aten.zeros.default, [rw.sym_nodes[sym]], dtype=dtype, device=rw.device)
        else:
            b_new = rw.env[bias]
            if bias.meta["val"].dtype == torch.bool:
                b_new = rw.call(aten.masked_fill.Scalar, rw.call(aten.zeros_like.default, b_new, dtype=dtype),
                                rw.call(aten.logical_not.default, b_new), -math.inf)
        # -inf at a padded key, over whatever the bias holds there (broadcasts a [.., 1] bias too)
        combined = rw.call(aten.where.ScalarSelf, rw.outside(sym), -math.inf, b_new)
        if len(n.args) > 3:
            new_args[3] = combined
        else:
            new_kwargs["attn_bias"] = combined
    rw.env[n] = rw.g.call_function(n.target, tuple(new_args), new_kwargs)
    out = list(dq[:-1]) + [dv[-1]]
    lse = list(dq[:-1]) if len(dq) == 4 else [_exact(1)] + list(dq[:-1])  # 3-D: [1, H, L]
    size = ("sym", None)
    rw.state[n] = _Multi([out, lse, None, None, size if not _is_exact(lq) else None,
                          size if not _is_exact(lk) else None, [], [], None])


_HANDLERS = {
    aten._to_copy.default: _same,
    aten.clone.default: _same,
    aten.alias.default: _same,
    aten.detach.default: _same,
    aten.contiguous.default: _same,
    aten.lift_fresh_copy.default: _same,
    aten.masked_fill.Tensor: _pointwise,  # the value is a 0-d tensor
    aten.remainder.Tensor: _int_divide,
    aten.remainder.Scalar_Tensor: _int_divide,
    aten.fmod.Tensor: _int_divide,
    aten.div.Tensor_mode: _int_divide,
    aten.floor_divide.default: _int_divide,
    aten.t.default: _transpose,
    aten.transpose.int: _transpose,
    aten.permute.default: _permute,
    aten.unsqueeze.default: _unsqueeze,
    aten.squeeze.dim: _squeeze,
    aten.squeeze.dims: _squeeze,
    aten.squeeze.default: _squeeze,
    aten.expand.default: _expand,
    aten.view.default: _view,
    aten._unsafe_view.default: _view,
    aten.reshape.default: _view,
    aten.slice.Tensor: _slice,
    aten.select.int: _select,
    aten.split.Tensor: _split,
    aten.split_with_sizes.default: _split,
    aten.unbind.int: _unbind,
    aten.arange.default: _creation,
    aten.arange.start: _creation,
    aten.ones.default: _uniform_creation,
    aten.zeros.default: _uniform_creation,
    aten.full.default: _uniform_creation,
    aten.empty.memory_format: _uniform_creation,
    aten.new_ones.default: _uniform_creation,
    aten.new_zeros.default: _uniform_creation,
    aten.new_full.default: _uniform_creation,
    aten.new_empty.default: _uniform_creation,
    aten.tril.default: _triangle,
    aten.triu.default: _triangle,
    aten.mm.default: _mm,
    aten.addmm.default: _mm,
    aten.bmm.default: _mm,
    aten.sum.dim_IntList: _reduction(0),
    aten.sum.default: _reduction(0),
    aten.amax.default: _reduction(-math.inf),
    aten.amin.default: _reduction(math.inf),
    aten.logsumexp.default: _reduction(-math.inf),
    aten.mean.dim: _mean,
    aten._softmax.default: _softmax(-math.inf),
    aten._safe_softmax.default: _softmax(-math.inf),
    aten._log_softmax.default: _softmax(-math.inf),
    aten.native_layer_norm.default: _layer_norm,
    aten.embedding.default: _embedding,
    aten.gather.default: _gather,
    aten.index.Tensor: _index,
    aten._scaled_dot_product_fused_attention_overrideable.default: _attention,
}


def plan(gm: torch.fx.GraphModule) -> Plan:
    """The padded form of an inference graph, or Refused (with the reason)."""
    return _Rewriter(gm).run()


# ---------------------------------------------------------------------------
# run time

def bucket(n: int, upper: int | None, sizes) -> int:
    """The padded size of a real size n: the next entry of `sizes` (a sorted
    list), or the next power of two, never above the upper bound."""
    if sizes is not None:
        b = next((s for s in sizes if s >= n), n)
    else:
        b = 1 << max(0, (n - 1).bit_length())
    if upper is not None and upper >= n:
        b = min(b, upper)
    return b


_HOST_PAD_BYTES = 4 << 20


def _pad_tensor(t: torch.Tensor, shape) -> torch.Tensor:
    """t zero-padded at the end of each dimension to `shape`. Small inputs
    (token ids, masks) are padded on the host: no device executable depends
    on their real size."""
    if tuple(t.shape) == tuple(shape):
        return t
    index = tuple(slice(0, s) for s in t.shape)
    if t.numel() * t.element_size() <= _HOST_PAD_BYTES:
        host = torch.zeros(shape, dtype=t.dtype)
        host[index] = t.cpu()
        return host.to(t.device)
    out = torch.zeros(shape, dtype=t.dtype, device=t.device)
    out[index] = t
    return out


class BucketedGraph:
    """Runs `padded` (the rewritten graph) at bucket sizes and narrows its
    results; `exact` (the original graph) runs a call whose real sizes are
    below what the rewrite assumes. Boxed calling convention, as AOTAutograd
    calls compiled graphs."""

    def __init__(self, plan: Plan, padded, exact, sizes=None, on_run=None):
        self._boxed_call = True
        self.plan = plan
        self.padded = padded
        self.exact = exact
        self.sizes = sorted(sizes) if sizes is not None else None
        self.on_run = on_run

    def __call__(self, args):
        args = list(args) if not isinstance(args, list) else args
        call_args = list(args)
        args.clear()
        p = self.plan
        real = {}
        for i, sym in p.int_args.items():
            real[sym] = int(call_args[i])
        for i, padded in p.tensor_dims.items():
            for d, sym in padded:
                n = int(call_args[i].shape[d])
                if real.setdefault(sym, n) != n:
                    return self.exact(call_args)
        if any(real[s] < p.minimum.get(s, 0) for s in real):
            return self.exact(call_args)  # CPU's error for an index past the real length
        sizes = {s: bucket(real[s], p.upper.get(s), self.sizes) for s in p.symbols}
        new_args = []
        for i, a in enumerate(call_args):
            if i in p.int_args:
                new_args.append(sizes[p.int_args[i]])
            elif i in p.tensor_dims:
                shape = list(a.shape)
                for d, sym in p.tensor_dims[i]:
                    shape[d] = sizes[sym]
                new_args.append(_pad_tensor(a, shape))
            else:
                new_args.append(a)
        del call_args
        for s in p.symbols:
            new_args.append(torch.tensor(real[s], dtype=torch.int64, device=p.device))
        key = tuple(sizes[s] for s in p.symbols)
        if self.on_run is not None:
            self.on_run(key)
        out = self.padded(new_args)
        results = list(out) if isinstance(out, (list, tuple)) else [out]
        for k, spec in enumerate(p.outputs or []):
            if spec and isinstance(results[k], torch.Tensor):
                for d, sym in spec:
                    results[k] = results[k].narrow(d, 0, real[sym])
        return type(out)(results) if isinstance(out, (list, tuple)) else results[0]

    def __repr__(self):
        return "<torch_tpu bucketed inference graph>"
