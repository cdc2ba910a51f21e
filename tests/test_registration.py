"""The lowering table registers every name it lists (issue #15): a typo in
an overload name, or an overload this torch does not have, used to be
skipped silently at registration; it is collected and this test names it."""
import torch

from _helpers import tpu_only

pytestmark = tpu_only


def test_every_lowering_name_resolves_to_an_aten_overload():
    import torch_tpu
    assert torch_tpu._C._unresolved_lowerings() == []


def test_registered_names_have_tpu_kernels():
    # a sample from several op families: the table really registered them
    for name in ["aten::add.Tensor", "aten::mm", "aten::_amp_update_scale_", "aten::_thnn_fused_lstm_cell",
                 "aten::tril_indices", "aten::multinomial"]:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1"), name


def test_each_overload_is_served_by_one_lowering():
    import collections
    import torch_tpu
    counts = collections.Counter(op for op, _ in torch_tpu._C._registered_lowerings())
    assert [op for op, n in counts.items() if n > 1] == []


def test_variants_are_derived_from_the_functional_name():
    # "name.overload+" in the table stands for the in-place overload and the
    # out= overload whose schema is the functional one plus `out`, whatever
    # PyTorch called it (add.out, eq.Scalar_out, div.out_mode)
    import torch_tpu
    served = dict(torch_tpu._C._registered_lowerings())
    for op, lowering in [("add.out", "add"), ("add_.Tensor", "add"), ("eq.Scalar_out", "eq"), ("eq_.Scalar", "eq"),
                         ("div.out_mode", "div"), ("div_.Tensor_mode", "div"), ("pow.Tensor_Scalar_out", "pow_scalar"),
                         ("maximum.out", "maximum"), ("logical_not_", "logical_not")]:
        assert served.get(op) == lowering, (op, served.get(op))
    # and nothing the functional does not have: add.Scalar is not add.Tensor's variant
    assert served.get("add.Scalar_out") != "add"


def test_variant_kernels_compute_like_cpu():
    a, b = torch.randn(5), torch.randn(5)
    out = torch.empty(5, device="tpu")
    torch.div(a.to("tpu"), b.to("tpu"), rounding_mode="floor", out=out)
    torch.testing.assert_close(out.cpu(), torch.div(a, b, rounding_mode="floor"))
    x = a.to("tpu")
    x.eq_(0.5)
    torch.testing.assert_close(x.cpu(), a.clone().eq_(0.5))
