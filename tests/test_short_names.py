"""Kernel names cut to a table's width: different kernels never read alike."""
from suites.traces.short_names import short_names

ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>,"
       " std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>)")
MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, "
       "float, at::native::binary_internal::MulFunctor<float> > >(int)")
TENSILE = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_SN_LDSB{}_AFC{}"


def test_names_that_share_their_start_show_where_they_differ():
    names = [ADD, MUL, TENSILE.format(1, 1), TENSILE.format(0, 0), "short", ADD]
    shown = short_names(names, 60)
    assert all(len(s) <= 60 for s in shown)
    assert len(set(shown)) == 5 and shown[0] == shown[5]  # the same kernel twice reads alike
    assert "CUDAFunctor_add" in shown[0] and "BinaryFunctor" in shown[1]
    assert shown[2].endswith("LDSB1_AFC1") and shown[3].endswith("LDSB0_AFC0")
    assert shown[4] == "short"


def test_a_long_name_alone_is_cut_at_the_width():
    [shown] = short_names([MUL], 40)
    assert shown == MUL[:37] + "..."
