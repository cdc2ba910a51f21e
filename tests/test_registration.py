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
