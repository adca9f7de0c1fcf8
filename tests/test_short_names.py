"""Kernel names cut to a table's width: different kernels never read alike."""
from suites.traces.short_names import plain, short_names

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


def test_a_long_name_alone_is_cut_at_the_width_without_atens_namespaces():
    [shown] = short_names([MUL], 40)
    assert plain(MUL).startswith("vectorized_elementwise_kernel<4, BinaryFunctor<float,")
    assert shown == plain(MUL)[:37] + "..."


def test_names_alike_past_any_cut_are_numbered():
    a = "k" * 80 + "A" + "k" * 80
    b = "k" * 80 + "B" + "k" * 80
    c = "k" * 80 + "A" + "k" * 79 + "C"  # differs from a only at its very end
    shown = short_names([a, b, c, a], 40)
    assert len(set(shown[:3])) == 3 and shown[0] == shown[3]
    assert all(len(s) <= 43 for s in shown)


def test_a_sfinae_return_type_is_left_out():
    name = ("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
            "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, int)")
    assert plain(name) == "vllm::fused_add_rms_norm_kernel<BFloat16, 8>(BFloat16*, int)"
